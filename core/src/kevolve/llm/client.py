"""The contract a provider plugin implements: one chat request in, one completion (with token counts) out.

Providers translate their SDK's failures into two errors. :class:`LLMError` is a request that failed after the
SDK's own retries (rate limits, server errors, timeouts, a refused request): the search records it as a failed
node and goes on. :class:`LLMConfigError` means no request can succeed as configured (no key, no endpoint, key
rejected): the search stops with a message that names what to set.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Any

from kevolve.errors import KevolveError


@dataclass(frozen=True)
class LLMSettings:
    """Knobs of an LLM synthesizer, given after the model in a selector: ``anthropic:MODEL,tokens=200000``."""

    #: characters of prompt the builder may assemble (about 4 characters per token)
    context_chars: int = 48_000
    #: most tokens one answer may have
    max_tokens: int = 8_192
    #: input + output tokens the whole session may spend; 0: unlimited
    tokens: int = 0
    temperature: float = 0.7
    #: seconds before one request is abandoned (then retried by the SDK)
    timeout_s: float = 120.0
    #: the SDK's retries on rate limits, server errors and timeouts, with exponential backoff
    max_retries: int = 4
    #: endpoint override (otherwise the provider's environment variable or default)
    base_url: str = ""

    @classmethod
    def parse(cls, option: str) -> tuple[str, LLMSettings]:
        """``MODEL[,name=value...]`` -> (model, settings)."""
        model, *pairs = [part.strip() for part in option.split(",")]
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, object] = {}
        for pair in pairs:
            name, sep, value = pair.partition("=")
            if not sep or name not in known:
                raise KevolveError(f"bad LLM synthesizer option {pair!r}: write NAME=VALUE with NAME one of "
                                   f"{', '.join(known)}")
            kind = {"int": int, "float": float, "str": str}[str(known[name])]
            try:
                values[name] = kind(value)
            except ValueError:
                raise KevolveError(f"LLM synthesizer option {name} wants a {kind.__name__}, got {value!r}") from None
        if not model:
            raise KevolveError("name the model after the provider, e.g. `--synthesizer anthropic:claude-sonnet-4-5` "
                               "or `--synthesizer openai:qwen2.5-coder-32b`")
        return model, cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ChatRequest:
    system: str
    user: str
    max_tokens: int = 8_192
    temperature: float = 0.7
    #: completions wanted, sampled independently for one prompt (at most the client's ``choices_per_request``)
    n: int = 1


@dataclass
class Completion:
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    stop_reason: str = ""
    #: HTTP requests it took, the SDK's retries included
    attempts: int = 1
    extra: dict[str, object] = field(default_factory=dict)
    #: (text, stop reason) of the request's other completions, when it asked for several; the token counts
    #: above cover all of them
    more: list[tuple[str, str]] = field(default_factory=list)


class LLMError(KevolveError):
    """One request failed for good (after retries). The search records a failed node with this reason."""

    def __init__(self, message: str, *, attempts: int = 1, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status


class LLMConfigError(KevolveError):
    """No request can succeed as configured; the message names the variable or option to set."""


class ChatClient(ABC):
    """One provider's chat endpoint for one model. Built from ``(model, settings)``; construction must fail
    with :class:`LLMConfigError` when a key or endpoint is missing, before any search starts."""

    provider: str = ""
    #: completions one request can return (OpenAI's ``n``): a batch of candidates pays for its prompt once
    choices_per_request: int = 1

    def __init__(self, model: str, settings: LLMSettings) -> None:
        self.model = model
        self.settings = settings

    @abstractmethod
    def complete(self, request: ChatRequest) -> Completion:
        """Send one request (for ``request.n`` completions where ``choices_per_request`` allows, the first in
        ``text``, the others in ``more``); raise :class:`LLMError` or :class:`LLMConfigError` on failure."""


# --- helpers for providers built on the official SDKs (both generated alike, with the same retry rules) ------

def retried_status(status: int) -> bool:
    """Whether the official SDKs retry a response with this status (408, 409, 429 and 5xx)."""
    return status in (408, 409, 429) or status >= 500


def attempts_of(exc: BaseException, fallback: int) -> int:
    """HTTP requests a failed SDK call made: recent SDKs stamp each request with ``x-stainless-retry-count``;
    older ones do not, and then ``fallback`` (all retries spent, or 1 for a status that is not retried) is it."""
    request = getattr(exc, "request", None)
    try:
        return int(request.headers["x-stainless-retry-count"]) + 1  # type: ignore[union-attr]
    except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
        return fallback


def error_detail(exc: BaseException) -> str:
    """The server's own words for a failed SDK call: the error object's message where the body has one (the
    Anthropic SDK also lifts it into ``api_message``; the OpenAI SDK may hand over the error object alone, or a
    bare string), else the SDK's message."""
    message = getattr(exc, "api_message", None)
    if not message:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            error = body.get("error", body)
            message = error.get("message") if isinstance(error, dict) else error
    return str(message or getattr(exc, "message", None) or exc)


def status_failure(provider: str, exc: Any, fallback: int) -> LLMError:
    """An SDK's ``APIStatusError``: 429 and 5xx come after the SDK's retries, other statuses at once."""
    status = exc.status_code
    attempts = attempts_of(exc, fallback if retried_status(status) else 1)
    kind = "rate limited" if status == 429 else "request failed"
    return LLMError(f"{provider} {kind}: HTTP {status} after {attempts} attempt(s): {error_detail(exc)}",
                    attempts=attempts, status=status)


def timeout_failure(provider: str, exc: BaseException, timeout_s: float, fallback: int) -> LLMError:
    """An SDK's ``APITimeoutError``, with the setting that raises the limit."""
    attempts = attempts_of(exc, fallback)
    return LLMError(f"{provider} request timed out ({timeout_s:g} s per attempt, {attempts} attempt(s)); raise it "
                    "with timeout_s=SECONDS", attempts=attempts)


def connection_failure(base_url: str, exc: BaseException, fallback: int) -> LLMError:
    """An SDK's ``APIConnectionError``: the cause the SDK wrapped (refused, DNS, TLS) says most."""
    attempts = attempts_of(exc, fallback)
    cause = exc.__cause__ or exc.__context__
    return LLMError(f"cannot reach {base_url} after {attempts} attempt(s): {cause or error_detail(exc)}",
                    attempts=attempts)

