"""Anthropic's Messages API through the official ``anthropic`` package.

Key from ``ANTHROPIC_API_KEY``; endpoint from the ``base_url=`` option, else the SDK's own ``ANTHROPIC_BASE_URL``,
else Anthropic's. Timeouts and retries are the SDK's (exponential backoff that honours ``retry-after``), set
from :class:`~kevolve.llm.client.LLMSettings`. SDK failures become :class:`LLMConfigError` (nothing can
succeed as configured: key rejected, model unknown) or :class:`LLMError` (this request failed for good).
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import anthropic

from kevolve.llm.client import (ChatClient, ChatRequest, Completion, LLMConfigError, LLMError, LLMSettings,
                                connection_failure, error_detail, status_failure, timeout_failure)

KEY_VARIABLE = "ANTHROPIC_API_KEY"
URL_VARIABLE = "ANTHROPIC_BASE_URL"


def _accepts(function: Any, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class AnthropicClient(ChatClient):
    provider = "anthropic"

    def __init__(self, model: str, settings: LLMSettings) -> None:
        super().__init__(model, settings)
        key = os.environ.get(KEY_VARIABLE, "").strip()
        if not key:
            raise LLMConfigError(
                f"the anthropic synthesizer needs an API key: set {KEY_VARIABLE} "
                f"(`export {KEY_VARIABLE}=sk-ant-...`, from console.anthropic.com), or use the default "
                "`--synthesizer template`, which needs none")
        base_url = settings.base_url or os.environ.get(URL_VARIABLE, "").strip() or None
        self.base_url = base_url or "https://api.anthropic.com"
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=settings.timeout_s,
                                           max_retries=settings.max_retries)
        # Some SDK versions dropped ``temperature`` from ``messages.create``; send it only where it is accepted.
        self._send_temperature = _accepts(self._client.messages.create, "temperature")

    def complete(self, request: ChatRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": request.user}],
        }
        if request.system:
            kwargs["system"] = request.system
        if self._send_temperature:
            kwargs["temperature"] = request.temperature
        fallback = self.settings.max_retries + 1
        try:
            raw = self._client.messages.with_raw_response.create(**kwargs)
            message = raw.parse()
        except anthropic.AuthenticationError as exc:
            raise LLMConfigError(
                f"Anthropic rejected the API key (HTTP 401 from {self.base_url}): {error_detail(exc)}. "
                f"Check {KEY_VARIABLE}.") from None
        except anthropic.PermissionDeniedError as exc:
            raise LLMConfigError(
                f"the API key in {KEY_VARIABLE} may not use model {self.model!r} (HTTP 403 from {self.base_url}): "
                f"{error_detail(exc)}. Use a key with access to it, or another model.") from None
        except anthropic.NotFoundError as exc:
            raise LLMConfigError(
                f"model {self.model!r} not found at {self.base_url} (HTTP 404): {error_detail(exc)}. Name a model the "
                "endpoint serves, e.g. `--synthesizer anthropic:claude-sonnet-4-5`, or fix base_url / "
                f"{URL_VARIABLE}.") from None
        except anthropic.APIStatusError as exc:  # 429, 5xx/529 after retries; 400, 413, 422 at once
            raise status_failure(self.provider, exc, fallback) from None
        except anthropic.APITimeoutError as exc:
            raise timeout_failure(self.provider, exc, self.settings.timeout_s, fallback) from None
        except anthropic.APIConnectionError as exc:
            raise connection_failure(self.base_url, exc, fallback) from None
        except anthropic.AnthropicError as exc:  # malformed response, credentials helper, ...
            raise LLMError(f"anthropic request failed: {type(exc).__name__}: {exc}") from None
        text = "".join(getattr(block, "text", "") or "" for block in (message.content or [])
                       if getattr(block, "type", None) == "text")
        usage = getattr(message, "usage", None)
        return Completion(
            text=text,
            model=getattr(message, "model", None) or self.model,
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            stop_reason=str(getattr(message, "stop_reason", "") or ""),
            attempts=int(getattr(raw, "retries_taken", 0) or 0) + 1,
            extra={"id": getattr(message, "id", ""), "request_id": getattr(raw, "request_id", None) or ""},
        )
