"""Anthropic's Messages API through the official ``anthropic`` package.

Key from ``ANTHROPIC_API_KEY``; endpoint from the ``base_url=`` option, else the SDK's own ``ANTHROPIC_BASE_URL``,
else Anthropic's; with or without a trailing ``/v1`` (the SDK appends ``/v1/messages`` itself). Timeouts and
retries are the SDK's (exponential backoff that honours ``retry-after``), set from
:class:`~kevolve.llm.client.LLMSettings`. SDK failures become :class:`LLMConfigError` (nothing can
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


def without_version(base_url: str) -> str:
    """``http://host`` and ``http://host/v1`` name the same endpoint: the SDK adds ``/v1/messages``."""
    base_url = base_url.rstrip("/")
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


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
        base_url = without_version(settings.base_url or os.environ.get(URL_VARIABLE, "").strip()) or None
        self.base_url = base_url or "https://api.anthropic.com"
        self._client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=settings.timeout_s,
                                           max_retries=settings.max_retries)
        # Some SDK versions dropped ``temperature`` from ``messages.create`` while the Messages API still takes it:
        # there it goes in the body directly, so the option is never silently lost (a model that refuses it
        # answers HTTP 400, which surfaces as an error naming it).
        self._temperature_in_body = not _accepts(self._client.messages.create, "temperature")

    def complete(self, request: ChatRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": request.user}],
        }
        if request.system:
            kwargs["system"] = request.system
        if self._temperature_in_body:
            kwargs["extra_body"] = {"temperature": request.temperature}
        else:
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
