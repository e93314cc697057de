"""Any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp server, SGLang, Ollama, ...) through
the official ``openai`` package.

Endpoint from the ``base_url=`` option, else ``KEVOLVE_OPENAI_BASE_URL``, else ``OPENAI_BASE_URL``, with or
without the trailing ``/v1`` (``http://localhost:8000`` and ``http://localhost:8000/v1`` both reach vLLM); key
from ``OPENAI_API_KEY``. A self-hosted server needs no key: with an endpoint and no key, a placeholder is sent.
Timeouts and retries are the SDK's (exponential backoff that honours ``retry-after``), set from
:class:`~kevolve.llm.client.LLMSettings`.
"""

from __future__ import annotations

import os
import re
from typing import Any

import openai

from kevolve.llm.client import (ChatClient, ChatRequest, Completion, LLMConfigError, LLMError, LLMSettings,
                                connection_failure, error_detail, status_failure, timeout_failure)

KEY_VARIABLE = "OPENAI_API_KEY"
URL_VARIABLES = ("KEVOLVE_OPENAI_BASE_URL", "OPENAI_BASE_URL")
#: sent when an endpoint is set but no key: self-hosted servers accept anything (or nothing)
PLACEHOLDER_KEY = "kevolve-no-key"


def with_version(base_url: str) -> str:
    """The SDK appends ``/chat/completions`` to the base URL; OpenAI-compatible servers serve it under ``/v1``.
    A URL naming a version already (``/v1``, ``/v1beta``, ``/openai/v2``...) is kept as given."""
    base_url = base_url.rstrip("/")
    if not base_url or re.search(r"/v\d+[a-z0-9]*$", base_url):
        return base_url
    return f"{base_url}/v1"


class OpenAIClient(ChatClient):
    provider = "openai"
    #: chat completions return ``n`` choices for one prompt (the prompt's tokens paid once)
    choices_per_request = 8

    def __init__(self, model: str, settings: LLMSettings) -> None:
        super().__init__(model, settings)
        base_url = settings.base_url.strip()
        for variable in URL_VARIABLES:
            base_url = base_url or os.environ.get(variable, "").strip()
        base_url = with_version(base_url)
        key = os.environ.get(KEY_VARIABLE, "").strip()
        if not base_url and not key:
            raise LLMConfigError(
                "the openai synthesizer needs an endpoint or a key: set OPENAI_BASE_URL (or "
                "KEVOLVE_OPENAI_BASE_URL, or the base_url= option) to your OpenAI-compatible server, e.g. "
                "`export OPENAI_BASE_URL=http://localhost:8000/v1` for vLLM, and/or OPENAI_API_KEY "
                "(`export OPENAI_API_KEY=sk-...`) for api.openai.com; or use the default `--synthesizer template`")
        self.base_url = base_url or "https://api.openai.com/v1"
        self.keyless = not key
        kwargs: dict[str, Any] = {"api_key": key or PLACEHOLDER_KEY, "timeout": settings.timeout_s,
                                  "max_retries": settings.max_retries}
        if base_url:
            kwargs["base_url"] = base_url
        try:
            self._client = openai.OpenAI(**kwargs)
        except openai.OpenAIError as exc:
            raise LLMConfigError(f"cannot set up the OpenAI client for {self.base_url}: {exc}") from None

    def complete(self, request: ChatRequest) -> Completion:
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user})
        fallback = self.settings.max_retries + 1
        try:
            several = {"n": request.n} if request.n > 1 else {}  # some compatible servers know no n
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.model, messages=messages, max_tokens=request.max_tokens,
                temperature=request.temperature, **several)
            completion = raw.parse()
        except openai.AuthenticationError as exc:
            where = ("the server wants a key: set OPENAI_API_KEY" if self.keyless
                     else "check OPENAI_API_KEY")
            raise LLMConfigError(
                f"{self.base_url} rejected the API key (HTTP 401): {error_detail(exc)}; {where}.") from None
        except openai.PermissionDeniedError as exc:
            raise LLMConfigError(
                f"the key in OPENAI_API_KEY may not use model {self.model!r} (HTTP 403 from {self.base_url}): "
                f"{error_detail(exc)}") from None
        except openai.NotFoundError as exc:
            raise LLMConfigError(
                f"model {self.model!r} not found at {self.base_url} (HTTP 404): {error_detail(exc)}. Name a model the "
                "server serves (`curl $OPENAI_BASE_URL/models` lists them), and check the endpoint's path.") from None
        except openai.APIStatusError as exc:  # 429, 5xx after retries; 400, 413, 422 at once
            raise status_failure(self.provider, exc, fallback) from None
        except openai.APITimeoutError as exc:
            raise timeout_failure(self.provider, exc, self.settings.timeout_s, fallback) from None
        except openai.APIConnectionError as exc:
            raise connection_failure(self.base_url, exc, fallback) from None
        except openai.OpenAIError as exc:  # malformed response, ...
            raise LLMError(f"openai request failed: {type(exc).__name__}: {exc}") from None
        choices = getattr(completion, "choices", None) or []
        choice = choices[0] if choices else None
        message = getattr(choice, "message", None)
        usage = getattr(completion, "usage", None)
        return Completion(
            text=str(getattr(message, "content", None) or ""),
            model=getattr(completion, "model", None) or self.model,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            stop_reason=str(getattr(choice, "finish_reason", "") or ""),
            attempts=int(getattr(raw, "retries_taken", 0) or 0) + 1,
            extra={"id": getattr(completion, "id", "") or ""},
            more=[(str(getattr(getattr(c, "message", None), "content", None) or ""),
                   str(getattr(c, "finish_reason", "") or "")) for c in choices[1:]],
        )
