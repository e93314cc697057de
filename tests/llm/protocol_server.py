"""A local stand-in for an LLM service that speaks the real wire protocols, for testing the real client code.

One threaded stdlib HTTP server on 127.0.0.1 per protocol:

- ``anthropic``: ``POST /v1/messages`` (Anthropic Messages). Checks the key (``x-api-key``, or
  ``Authorization: Bearer`` as anthropic>=2 sends it), the ``anthropic-version`` header and the body's shape;
  answers a ``message`` object; errors in Anthropic's shape
  ``{"type": "error", "error": {"type": "rate_limit_error", "message": ...}}``.
- ``openai``: ``POST /v1/chat/completions`` (OpenAI chat completions). Checks ``Authorization: Bearer`` (when the
  server has a key) and the body's shape; answers a ``chat.completion``; errors as
  ``{"error": {"message", "type", "param", "code"}}``.

Behaviour is scripted: a queue of steps (:class:`Text`, :class:`Error`, :class:`Slow`, :class:`Raw`; a plain
string is a :class:`Text`), each consumed by one request; once the queue is empty the ``responder``
(``f(request_json) -> str``) answers, and without one the server answers 500 with ``x-should-retry: false`` so
that a test that ran out of script fails loudly. Every request is recorded (:class:`Recorded`).

    server = ProtocolServer("anthropic", api_key="test-key").start()
    server.script("first answer", Error(429, retry_after=0.01), Slow(5.0, "late"))
    server.responder = lambda body: "```cpp\\n...\\n```"
    ... AnthropicClient(...) with base_url=server.url ...
    server.requests[0].json["system"]
    server.stop()
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Text:
    """A good answer. ``text=None``: an answer with no text (Anthropic: empty ``content``; OpenAI: ``content``
    null). Token counts default to about a quarter of the characters; ``usage=False`` omits the usage object
    (some OpenAI-compatible servers do)."""

    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str | None = None
    usage: bool = True


@dataclass
class Error:
    """An HTTP error in the protocol's error shape, with ``retry-after`` (seconds, may be fractional; the SDKs
    parse floats) when given. ``should_retry`` sets the SDKs' ``x-should-retry`` header."""

    status: int
    retry_after: float | None = None
    message: str = ""
    type: str = ""
    should_retry: bool | None = None


@dataclass
class Slow:
    """Wait ``seconds`` (interrupted when the server stops), then answer ``text``."""

    seconds: float
    text: str = "slow answer"


@dataclass
class Raw:
    """Any status, body and headers, verbatim (e.g. a proxy's HTML error page, malformed JSON)."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


Step = Text | Error | Slow | Raw | str

#: the keys the fixtures' servers accept (tests/llm/conftest.py)
ANTHROPIC_KEY = "test-anthropic-key"
OPENAI_KEY = "test-openai-key"


@dataclass
class Recorded:
    path: str
    #: header names lower-cased
    headers: dict[str, str]
    #: the parsed body, or None when it was not JSON
    json: Any
    body: bytes
    time: float


_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                          403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                          429: "rate_limit_error", 500: "api_error", 504: "timeout_error",
                          529: "overloaded_error"}
_OPENAI_ERRORS = {400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
                  403: ("invalid_request_error", "unsupported_country_region_territory"),
                  404: ("invalid_request_error", "model_not_found"), 429: ("requests", "rate_limit_exceeded"),
                  500: ("server_error", None), 503: ("server_error", None)}


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def api_key_sent(headers: dict[str, str]) -> str | None:
    """The key a request carried, in either of Anthropic's headers (or OpenAI's bearer token)."""
    return headers.get("x-api-key") or _bearer(headers.get("authorization"))


def _bearer(value: str | None) -> str | None:
    return value[len("Bearer "):] if value and value.startswith("Bearer ") else None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


class ProtocolServer:
    PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}

    def __init__(self, protocol: str, api_key: str | None = "test-key",
                 responder: Callable[[dict], str] | None = None) -> None:
        if protocol not in self.PATHS:
            raise ValueError(f"protocol is one of {sorted(self.PATHS)}")
        self.protocol = protocol
        #: the key the server accepts; None (openai only): accept any key or none, as self-hosted servers do
        self.api_key = api_key
        self.responder = responder
        self.requests: list[Recorded] = []
        #: every answer sent (200s), in order: what the client was given and charged
        self.answers: list[dict] = []
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # ------------------------------------------------------------------ control
    def start(self) -> ProtocolServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                server._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="protocol-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ProtocolServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL as the SDK wants it: Anthropic's appends ``/v1/messages``; OpenAI's wants ``.../v1``."""
        return self.origin if self.protocol == "anthropic" else f"{self.origin}/v1"

    def script(self, *steps: Step) -> ProtocolServer:
        """Queue steps, each answering one request, in order."""
        with self._lock:
            self._steps.extend(steps)
        return self

    @property
    def pending(self) -> int:
        """Steps not consumed yet."""
        with self._lock:
            return len(self._steps)

    def bodies(self) -> list[Any]:
        return [r.json for r in self.requests]

    # ------------------------------------------------------------------ serving
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(Recorded(path, headers, parsed, body, time.time()))
            self._counter += 1
            number = self._counter
        try:
            if handler.command != "POST" or path != self.PATHS[self.protocol]:
                raise BadRequest(404, f"no route {handler.command} {path} on this {self.protocol} server")
            self._check_auth(headers)
            if not isinstance(parsed, dict):
                raise BadRequest(400, "the body must be a JSON object")
            self._check_body(headers, parsed)
        except BadRequest as exc:
            self._send_error(handler, Error(exc.status, message=exc.message))
            return
        with self._lock:
            step = self._steps.popleft() if self._steps else None
        if step is None:
            if self.responder is None:
                self._send_error(handler, Error(500, message="protocol server: script exhausted and no responder",
                                                should_retry=False))
                return
            try:
                step = Text(self.responder(parsed))
            except Exception as exc:  # a broken responder is the test's bug: say so to the client
                self._send_error(handler, Error(500, message=f"protocol server responder raised {exc!r}",
                                                should_retry=False))
                return
        if isinstance(step, str):
            step = Text(step)
        if isinstance(step, Slow):
            if self._stopping.wait(step.seconds):
                return
            step = Text(step.text)
        if isinstance(step, Error):
            self._send_error(handler, step)
        elif isinstance(step, Raw):
            self._send(handler, step.status, step.body.encode(), step.headers, step.content_type)
        else:
            answer = self._answer(parsed, step, number)
            if self.protocol == "openai" and int(parsed.get("n") or 1) > 1:  # more choices: the next steps' texts
                self._more_choices(answer, parsed, int(parsed["n"]) - 1)
            with self._lock:
                self.answers.append(answer)
            self._send_json(handler, 200, answer)

    def _more_choices(self, answer: dict, request: dict, count: int) -> None:
        """Append up to ``count`` choices to an OpenAI answer, one script step (a :class:`Text` or string) or
        responder call each, their tokens added to the usage; a script's next step of another kind stays for the
        next request (the answer then has fewer choices, as a server may give)."""
        for _ in range(count):
            with self._lock:
                step = self._steps[0] if self._steps else None
                if isinstance(step, (Text, str)):
                    self._steps.popleft()
            step = Text(step) if isinstance(step, str) else step
            if step is None and self.responder is not None:
                step = Text(self.responder(request))
            if not isinstance(step, Text):  # an error or a raw reply is the next request's: fewer choices here
                return
            more = self._answer(request, step, 0)
            answer["choices"].append({**more["choices"][0], "index": len(answer["choices"])})
            if "usage" in answer and "usage" in more:
                answer["usage"]["completion_tokens"] += more["usage"]["completion_tokens"]
                answer["usage"]["total_tokens"] += more["usage"]["completion_tokens"]

    def _check_auth(self, headers: dict[str, str]) -> None:
        if self.protocol == "anthropic":
            if "anthropic-version" not in headers:
                raise BadRequest(400, "anthropic-version: header is required")
            # SDKs before 2.x send the key as x-api-key, later ones as Authorization: Bearer; the API takes both
            if self.api_key is not None and self.api_key not in (headers.get("x-api-key"),
                                                                  _bearer(headers.get("authorization"))):
                raise BadRequest(401, "invalid x-api-key")
        elif self.api_key is not None:
            if headers.get("authorization") != f"Bearer {self.api_key}":
                raise BadRequest(401, "Incorrect API key provided.")

    def _check_body(self, headers: dict[str, str], body: dict) -> None:
        if "json" not in headers.get("content-type", ""):
            raise BadRequest(400, "content-type must be application/json")
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise BadRequest(400, "model: Field required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest(400, "messages: at least one message is required")
        if self.protocol == "anthropic":
            max_tokens = body.get("max_tokens")
            if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
                raise BadRequest(400, "max_tokens: Field required (a positive integer)")
            system = body.get("system")
            if system is not None and not isinstance(system, (str, list)):
                raise BadRequest(400, "system: Input should be a string or a list of text blocks")
            roles = ("user", "assistant")
            first = messages[0]
            if not isinstance(first, dict) or first.get("role") != "user":
                raise BadRequest(400, "messages: the first message must use the user role")
        else:
            for name in ("max_tokens", "max_completion_tokens"):
                value = body.get(name)
                if value is not None and (not isinstance(value, int) or value < 1):
                    raise BadRequest(400, f"{name}: expected a positive integer")
            roles = ("system", "developer", "user", "assistant", "tool")
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in roles:
                raise BadRequest(400, f"messages: each message needs a role among {roles}")
            if not isinstance(message.get("content"), (str, list)):
                raise BadRequest(400, "messages: content must be a string or a list of content blocks")
        temperature = body.get("temperature")
        if temperature is not None and not (isinstance(temperature, (int, float)) and 0 <= temperature <= 2):
            raise BadRequest(400, "temperature: out of range")

    def _answer(self, request: dict, step: Text, number: int) -> dict:
        prompt_chars = sum(len(_text_of(m.get("content"))) for m in request["messages"])
        prompt_chars += len(_text_of(request.get("system")))
        input_tokens = step.input_tokens if step.input_tokens is not None else max(1, prompt_chars // 4)
        output_tokens = (step.output_tokens if step.output_tokens is not None
                         else max(1, len(step.text or "") // 4))
        model = request["model"]
        if self.protocol == "anthropic":
            answer: dict[str, Any] = {
                "id": f"msg_kevolve{number:06d}", "type": "message", "role": "assistant", "model": model,
                "content": [] if step.text is None else [{"type": "text", "text": step.text}],
                "stop_reason": step.stop_reason or "end_turn", "stop_sequence": None,
            }
            if step.usage:
                answer["usage"] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
            return answer
        answer = {
            "id": f"chatcmpl-kevolve{number:06d}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": step.text},
                         "finish_reason": step.stop_reason or "stop", "logprobs": None}],
        }
        if step.usage:
            answer["usage"] = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                               "total_tokens": input_tokens + output_tokens}
        return answer

    def _send_error(self, handler: BaseHTTPRequestHandler, error: Error) -> None:
        headers: dict[str, str] = {}
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
        if error.should_retry is not None:
            headers["x-should-retry"] = "true" if error.should_retry else "false"
        message = error.message or f"scripted error {error.status}"
        if self.protocol == "anthropic":
            kind = error.type or _ANTHROPIC_ERROR_TYPES.get(error.status, "api_error")
            body = {"type": "error", "error": {"type": kind, "message": message},
                    "request_id": f"req_kevolve{len(self.requests):06d}"}
            headers["request-id"] = body["request_id"]
        else:
            kind, code = _OPENAI_ERRORS.get(error.status, ("server_error", None))
            body = {"error": {"message": message, "type": error.type or kind, "param": None, "code": code}}
        self._send_json(handler, error.status, body, headers)

    def _send_json(self, handler: BaseHTTPRequestHandler, status: int, body: dict,
                   headers: dict[str, str] | None = None) -> None:
        self._send(handler, status, json.dumps(body).encode(), headers or {}, "application/json")

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str],
              content_type: str) -> None:
        try:
            handler.send_response(status)
            handler.send_header("content-type", content_type)
            handler.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): nothing to tell it
            pass
