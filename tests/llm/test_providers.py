"""The provider plugins' real client code (the official ``anthropic`` and ``openai`` SDKs) against a local server
that speaks each wire protocol: answers, retries, timeouts, rejected keys, missing configuration, and the
synthesizer registry."""

from __future__ import annotations

import importlib
import json
import socket
import time
import urllib.error
import urllib.request
from importlib import metadata

import pytest

from protocol_server import ANTHROPIC_KEY, OPENAI_KEY, Error, Raw, Slow, Text, api_key_sent

from kevolve.llm.client import ChatRequest, LLMConfigError, LLMError, LLMSettings

pytest.importorskip("kevolve_anthropic")
pytest.importorskip("kevolve_openai")

from kevolve_anthropic.client import AnthropicClient  # noqa: E402
from kevolve_openai.client import PLACEHOLDER_KEY, OpenAIClient  # noqa: E402

CLIENTS = {"anthropic": AnthropicClient, "openai": OpenAIClient}
KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
REQUEST = ChatRequest(system="SYSTEM-PROMPT: you write kernels", user="USER-PROMPT: softmax over rows of 8192",
                      max_tokens=1234, temperature=0.3)


def client_for(server, model="test-model", **settings):
    settings.setdefault("timeout_s", 5.0)
    settings.setdefault("max_retries", 2)
    return CLIENTS[server.protocol](model, LLMSettings(**settings))


def dead_url(protocol: str) -> str:
    """A URL on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}" + ("/v1" if protocol == "openai" else "")


# ---------------------------------------------------------------------------------------------- answers
def test_good_answer_round_trips(llm_server):
    answer = "Here it is:\n```cpp\n#include \"kevolve_kernel.h\"\nKV_EXPORT int kevolve_kernel() { return 0; }\n```"
    llm_server.script(Text(answer, input_tokens=321, output_tokens=54))
    client = client_for(llm_server, model="kernel-writer-7b")
    completion = client.complete(REQUEST)

    assert completion.text == answer
    assert (completion.input_tokens, completion.output_tokens) == (321, 54)
    assert completion.attempts == 1
    assert completion.model == "kernel-writer-7b"
    assert completion.stop_reason == {"anthropic": "end_turn", "openai": "stop"}[llm_server.protocol]

    assert len(llm_server.requests) == 1
    seen = llm_server.requests[0]
    body = seen.json
    assert body["model"] == "kernel-writer-7b"
    assert body["max_tokens"] == 1234
    if llm_server.protocol == "anthropic":
        assert seen.path == "/v1/messages"
        assert api_key_sent(seen.headers) == ANTHROPIC_KEY
        assert seen.headers["anthropic-version"]
        assert body["system"] == REQUEST.system
        assert body["messages"] == [{"role": "user", "content": REQUEST.user}]
        assert body["temperature"] == 0.3  # honoured even by SDK versions whose create() no longer takes it
    else:
        assert seen.path == "/v1/chat/completions"
        assert seen.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert body["messages"] == [{"role": "system", "content": REQUEST.system},
                                    {"role": "user", "content": REQUEST.user}]
        assert body["temperature"] == 0.3


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_base_url_with_or_without_v1_reaches_the_same_endpoint(llm_server, suffix):
    llm_server.script(Text("ok"))
    client = client_for(llm_server, base_url=llm_server.origin + suffix)
    assert client.complete(REQUEST).text == "ok"
    assert llm_server.requests[0].path == {"anthropic": "/v1/messages",
                                           "openai": "/v1/chat/completions"}[llm_server.protocol]


def test_refused_temperature_is_an_error_naming_it(llm_server):
    """A server that refuses an option says so; the option is never dropped to make the request pass."""
    client = client_for(llm_server, max_retries=0)
    with pytest.raises(LLMError, match="temperature"):
        client.complete(ChatRequest(system="s", user="u", max_tokens=10, temperature=5.0))


def test_default_token_counts_come_from_the_server(llm_server):
    """Without scripted counts the server estimates them from the prompt: the client reports the server's."""
    llm_server.script("x" * 400)
    completion = client_for(llm_server).complete(REQUEST)
    prompt_chars = len(REQUEST.system) + len(REQUEST.user)
    assert completion.input_tokens == prompt_chars // 4
    assert completion.output_tokens == 100


def test_answer_without_text_is_empty_not_a_crash(llm_server):
    llm_server.script(Text(None))
    completion = client_for(llm_server).complete(REQUEST)
    assert completion.text == ""
    assert completion.attempts == 1


def test_openai_server_without_usage_counts_zero(openai_server):
    openai_server.script(Text("no usage here", usage=False))
    completion = client_for(openai_server).complete(REQUEST)
    assert completion.text == "no usage here"
    assert (completion.input_tokens, completion.output_tokens) == (0, 0)


def test_responder_answers_when_the_script_is_empty(llm_server):
    llm_server.script("scripted")
    llm_server.responder = lambda body: f"echo {body['model']}"
    client = client_for(llm_server, model="m1")
    assert [client.complete(REQUEST).text for _ in range(3)] == ["scripted", "echo m1", "echo m1"]


# ---------------------------------------------------------------------------------------------- retries
def test_rate_limit_then_success_retries_after_the_servers_delay(llm_server):
    llm_server.script(Error(429, retry_after=1), Text("after the wait"))
    completion = client_for(llm_server).complete(REQUEST)

    assert completion.text == "after the wait"
    assert completion.attempts == 2
    assert len(llm_server.requests) == 2
    first, second = llm_server.requests
    assert first.json == second.json
    # retry-after: 1 was honoured (the SDKs' own first backoff is at most 0.5 s)
    assert second.time - first.time >= 0.9


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_fail_after_max_retries(llm_server, status):
    llm_server.script(*[Error(status, retry_after=0.01, message="upstream overloaded")] * 3, Text("too late"))
    with pytest.raises(LLMError) as caught:
        client_for(llm_server, max_retries=2).complete(REQUEST)

    error = caught.value
    assert not isinstance(error, LLMConfigError)
    assert error.status == status
    assert error.attempts == 3
    assert len(llm_server.requests) == 3
    assert llm_server.pending == 1  # it stopped after max_retries + 1 requests
    assert str(status) in str(error) and "upstream overloaded" in str(error)


def test_rate_limit_that_persists_is_an_llm_error(llm_server):
    llm_server.script(*[Error(429, retry_after=0.01, message="slow down")] * 2)
    with pytest.raises(LLMError) as caught:
        client_for(llm_server, max_retries=1).complete(REQUEST)
    assert caught.value.status == 429 and caught.value.attempts == 2
    assert "rate limited" in str(caught.value) and "slow down" in str(caught.value)


def test_slow_answer_beyond_the_timeout_is_an_llm_error(llm_server):
    llm_server.script(Slow(10, "never seen"), Slow(10, "never seen"), Text("unused"))
    client = client_for(llm_server, timeout_s=0.3, max_retries=1)
    start = time.monotonic()
    with pytest.raises(LLMError) as caught:
        client.complete(REQUEST)
    elapsed = time.monotonic() - start

    assert "timed out" in str(caught.value)
    assert caught.value.attempts == 2
    assert len(llm_server.requests) == 2 and llm_server.pending == 1
    assert elapsed < 4


def test_slow_answer_within_the_timeout_arrives(llm_server):
    llm_server.script(Slow(0.2, "worth the wait"))
    assert client_for(llm_server, timeout_s=3).complete(REQUEST).text == "worth the wait"


def test_bad_request_is_not_retried(llm_server):
    llm_server.script(Error(400, message="prompt is too long: 250000 tokens > 200000 maximum"), Text("unused"))
    with pytest.raises(LLMError) as caught:
        client_for(llm_server).complete(REQUEST)
    assert not isinstance(caught.value, LLMConfigError)
    assert caught.value.status == 400 and caught.value.attempts == 1
    assert "prompt is too long" in str(caught.value)
    assert len(llm_server.requests) == 1


def test_proxy_error_page_is_an_llm_error(llm_server):
    llm_server.script(Raw(502, "<html>bad gateway</html>", content_type="text/html"))
    with pytest.raises(LLMError) as caught:
        client_for(llm_server, max_retries=0).complete(REQUEST)
    assert caught.value.status == 502


def test_unreachable_endpoint_is_an_llm_error(protocol, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLES[protocol], "some-key")
    client = CLIENTS[protocol]("m", LLMSettings(base_url=dead_url(protocol), timeout_s=2, max_retries=0))
    with pytest.raises(LLMError) as caught:
        client.complete(REQUEST)
    assert not isinstance(caught.value, LLMConfigError)
    assert str(caught.value).startswith("cannot reach http://127.0.0.1:") and "after 1 attempt(s)" in str(caught.value)
    assert caught.value.attempts == 1


@pytest.fixture(params=["anthropic", "openai"])
def protocol(request):
    return request.param


# ---------------------------------------------------------------------------------------------- configuration
def test_rejected_key_is_a_config_error(llm_server, monkeypatch):
    variable = KEY_VARIABLES[llm_server.protocol]
    monkeypatch.setenv(variable, "wrong-key")
    with pytest.raises(LLMConfigError) as caught:
        client_for(llm_server).complete(REQUEST)
    assert variable in str(caught.value) and "401" in str(caught.value)
    assert len(llm_server.requests) == 1  # never retried
    if llm_server.protocol == "anthropic":
        assert api_key_sent(llm_server.requests[0].headers) == "wrong-key"


def test_unknown_model_is_a_config_error(llm_server):
    llm_server.script(Error(404, message="model: no-such-model"))
    with pytest.raises(LLMConfigError) as caught:
        client_for(llm_server, model="no-such-model").complete(REQUEST)
    assert "'no-such-model'" in str(caught.value) and "404" in str(caught.value)


def test_forbidden_is_a_config_error(llm_server):
    llm_server.script(Error(403, message="not allowed"))
    with pytest.raises(LLMConfigError, match="403"):
        client_for(llm_server).complete(REQUEST)


def test_anthropic_without_key_names_the_variable():
    with pytest.raises(LLMConfigError) as caught:
        AnthropicClient("claude-x", LLMSettings())
    assert "ANTHROPIC_API_KEY" in str(caught.value) and "export" in str(caught.value)


def test_openai_without_endpoint_or_key_names_the_variables():
    with pytest.raises(LLMConfigError) as caught:
        OpenAIClient("qwen", LLMSettings())
    assert "OPENAI_BASE_URL" in str(caught.value) and "OPENAI_API_KEY" in str(caught.value)


@pytest.mark.parametrize("how", ["option", "KEVOLVE_OPENAI_BASE_URL", "OPENAI_BASE_URL"])
def test_openai_self_hosted_endpoint_needs_no_key(protocol_server, monkeypatch, how):
    server = protocol_server("openai", api_key=None)  # like vLLM without --api-key
    server.script("from a self-hosted model")
    settings = LLMSettings(timeout_s=5, max_retries=0)
    if how == "option":
        settings = LLMSettings(timeout_s=5, max_retries=0, base_url=server.url)
        monkeypatch.setenv("KEVOLVE_OPENAI_BASE_URL", dead_url("openai"))
        monkeypatch.setenv("OPENAI_BASE_URL", dead_url("openai"))
    elif how == "KEVOLVE_OPENAI_BASE_URL":
        monkeypatch.setenv("KEVOLVE_OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_BASE_URL", dead_url("openai"))
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    completion = OpenAIClient("local-model", settings).complete(REQUEST)
    assert completion.text == "from a self-hosted model"
    assert server.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


def test_anthropic_base_url_option_overrides_the_environment(protocol_server, monkeypatch):
    server = protocol_server("anthropic", api_key=ANTHROPIC_KEY)
    server.script("from the option's endpoint")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead_url("anthropic"))
    client = AnthropicClient("m", LLMSettings(base_url=server.url, timeout_s=5, max_retries=0))
    assert client.complete(REQUEST).text == "from the option's endpoint"


def test_settings_from_a_selector_reach_the_sdk(anthropic_server):
    model, settings = LLMSettings.parse("claude-x,timeout_s=0.3,max_retries=0")
    anthropic_server.script(Slow(5))
    with pytest.raises(LLMError) as caught:
        AnthropicClient(model, settings).complete(REQUEST)
    assert caught.value.attempts == 1 and len(anthropic_server.requests) == 1


# ---------------------------------------------------------------------------------------------- the stand-in itself
@pytest.mark.parametrize("protocol_name", ["anthropic", "openai"])
def test_stand_in_rejects_what_the_real_service_rejects(protocol_server, protocol_name):
    server = protocol_server(protocol_name, api_key="k")
    path = server.PATHS[protocol_name]

    def post(body, headers):
        request = urllib.request.Request(server.origin + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"content-type": "application/json", **headers})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    good_headers = ({"x-api-key": "k", "anthropic-version": "2023-06-01"} if protocol_name == "anthropic"
                    else {"authorization": "Bearer k"})
    good = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    status, body = post(good, {})
    assert status in (400, 401)
    status, body = post({"model": "m", "messages": []}, good_headers)
    assert status == 400
    if protocol_name == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        status, _ = post({**good, "max_tokens": None}, good_headers)
        assert status == 400
    else:
        assert body["error"]["type"] == "invalid_request_error" and body["error"]["message"]
    server.script("fine")
    status, body = post(good, good_headers)
    assert status == 200
    text = body["content"][0]["text"] if protocol_name == "anthropic" else body["choices"][0]["message"]["content"]
    assert text == "fine"
    assert len(server.requests) == 4 if protocol_name == "anthropic" else len(server.requests) == 3


# ---------------------------------------------------------------------------------------------- registry
def _installed(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("name,distribution", [("anthropic", "kevolve-anthropic"), ("openai", "kevolve-openai")])
def test_installed_distribution_registers_its_synthesizer(name, distribution):
    if not _installed(distribution):
        pytest.skip(f"{distribution} is not pip-installed")
    from kevolve.plugins import build_manager

    assert any(ep.name == name and ep.value == f"kevolve_{name}.plugin"
               for ep in metadata.entry_points(group="kevolve"))
    manager = build_manager()
    assert name in manager.synthesizers.names()
    assert not [f for f in manager.failures if name in f.plugin]


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_registry_builds_the_synthesizer_on_the_right_client(name, monkeypatch):
    plugin = importlib.import_module(f"kevolve_{name}.plugin")
    from kevolve.plugins import get_manager, reset_manager

    calls = []
    monkeypatch.setattr(plugin, "make_llm_synthesizer", lambda cls, option: calls.append((cls, option)) or "synth")
    reset_manager()
    try:
        get_manager().register(plugin, name=f"kevolve_{name}.plugin")
        assert get_manager().synthesizers.create(f"{name}:some-model,max_retries=1") == "synth"
    finally:
        reset_manager()
    assert calls == [(CLIENTS[name], "some-model,max_retries=1")]


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_registry_creates_a_working_synthesizer(name, request):
    server = request.getfixturevalue(f"{name}_server")
    from kevolve.llm.synthesizer import LLMSynthesizer
    from kevolve.plugins import build_manager

    manager = build_manager([f"kevolve_{name}.plugin"])
    synthesizer = manager.synthesizers.create(f"{name}:some-model,max_retries=0")
    assert isinstance(synthesizer, LLMSynthesizer)
    assert server.requests == []  # nothing is sent before the search asks


def test_registry_without_key_fails_before_any_search():
    from kevolve.plugins import build_manager

    manager = build_manager(["kevolve_anthropic.plugin", "kevolve_openai.plugin"])
    with pytest.raises(LLMConfigError, match="ANTHROPIC_API_KEY"):
        manager.synthesizers.create("anthropic:claude-x")
    with pytest.raises(LLMConfigError, match="OPENAI_BASE_URL"):
        manager.synthesizers.create("openai:qwen")


@pytest.mark.parametrize("name,distribution", [("anthropic", "kevolve-anthropic"), ("openai", "kevolve-openai")])
def test_missing_provider_names_its_distribution(name, distribution, monkeypatch):
    from kevolve.errors import KevolveError
    from kevolve.plugins import build_manager

    monkeypatch.setenv("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "1")
    manager = build_manager()
    assert name not in manager.synthesizers.names()
    with pytest.raises(KevolveError, match=distribution):
        manager.synthesizers.create(f"{name}:some-model")
