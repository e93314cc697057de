"""Issue 39: an LLM search pays for nothing twice and counts every token it paid for, against a local server
speaking OpenAI's real protocol."""

from __future__ import annotations

import json

from protocol_server import Text
from test_llm_search import GOOD, answer, optimize

from kevolve.cli import main
from kevolve.store import Store


def test_a_repeated_answer_is_fed_back_and_no_request_is_sent_twice(openai_server, capsys, tmp_path):
    other = "// a second kernel\n" + GOOD
    openai_server.script(*(Text(answer(source), input_tokens=100, output_tokens=10)
                           for source in (GOOD, GOOD, other, other, other)))
    store = tmp_path / "s.sqlite"
    code, result = optimize(capsys, store, "openai:test-model", 3)
    assert code == 0, result

    bodies = [json.dumps(r.json, sort_keys=True) for r in openai_server.requests if r.json]
    assert len(bodies) == len(set(bodies)), "a byte-identical request was sent"
    users = [r.json["messages"][-1]["content"] for r in openai_server.requests if r.json]
    # a batch of two asks for two completions of one prompt; its second repeats the first, said in the next request
    assert openai_server.requests[0].json["n"] == 2 and len(openai_server.answers[0]["choices"]) == 2
    assert "This kernel was already evaluated" in users[1]

    # every token the server charged is on a stored node, once: the store, `kevolve show` and the export agree
    charged = sum(a["usage"]["total_tokens"] for a in openai_server.answers)
    assert charged == sum(100 + 10 * len(a["choices"]) for a in openai_server.answers)  # the prompt paid once
    nodes = [n for n in Store(store).nodes(result["session"]) if n.memory_op != "final"]
    assert sum(n.trace["usage"]["input_tokens"] + n.trace["usage"]["output_tokens"] for n in nodes) == charged
    assert len(nodes) == sum(len(a["choices"]) for a in openai_server.answers)  # one candidate per completion
    assert "duplicate" in nodes[1].evaluation.reason
    out = tmp_path / "t.jsonl"
    assert main(["export", "--format", "trajectories", str(out), "--store", str(store)]) == 0
    capsys.readouterr()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    exported = sum(int(r.get("usage", {}).get("input_tokens", 0)) + int(r.get("usage", {}).get("output_tokens", 0))
                   for r in records)
    assert exported == charged, records[0].keys()


def test_an_api_without_several_completions_gets_one_request_per_candidate(anthropic_server, capsys, tmp_path):
    other = "// a second kernel\n" + GOOD
    anthropic_server.script(*(Text(answer(source)) for source in (GOOD, other, "// third\n" + GOOD)))
    code, result = optimize(capsys, tmp_path / "s.sqlite", "anthropic:test-model", 2)
    assert code == 0, result
    assert all("n" not in r.json for r in anthropic_server.requests if r.json)
    assert len(anthropic_server.requests) == 2  # a batch of two: two requests of one completion each


def test_a_float32_elementwise_problem_gets_no_bfloat16_or_integer_pages(openai_server, capsys, tmp_path):
    openai_server.responder = lambda body: "No kernel this time."
    code = main(["optimize", "relu", "--target", "cpu", "--synthesizer", "openai:test-model", "--budget", "1",
                 "--store", str(tmp_path / "s.sqlite"), "--quiet", "--json"])
    assert code == 1, capsys.readouterr().err  # no correct kernel: the model never wrote one
    user = openai_server.requests[0].json["messages"][-1]["content"]
    assert "## Knowledge for this target" in user
    assert "hardware/bf16.md" not in user and "integer_division.md" not in user
