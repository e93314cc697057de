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
    assert "This kernel was already evaluated" in users[2]  # the repeat, fed back in the next request

    # every request's tokens are on a stored node, once: the store, `kevolve show` and the export agree
    charged = 110 * len(bodies)
    nodes = [n for n in Store(store).nodes(result["session"]) if n.memory_op != "final"]
    assert sum(n.trace["usage"]["input_tokens"] + n.trace["usage"]["output_tokens"] for n in nodes) == charged
    assert len(nodes) == len(bodies)  # one request, one recorded candidate
    assert "duplicate" in nodes[1].evaluation.reason
    out = tmp_path / "t.jsonl"
    assert main(["export", "--format", "trajectories", str(out), "--store", str(store)]) == 0
    capsys.readouterr()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    exported = sum(int(r.get("usage", {}).get("input_tokens", 0)) + int(r.get("usage", {}).get("output_tokens", 0))
                   for r in records)
    assert exported == charged, records[0].keys()


def test_a_float32_elementwise_problem_gets_no_bfloat16_or_integer_pages(openai_server, capsys, tmp_path):
    openai_server.responder = lambda body: "No kernel this time."
    code = main(["optimize", "relu", "--target", "cpu", "--synthesizer", "openai:test-model", "--budget", "1",
                 "--store", str(tmp_path / "s.sqlite"), "--quiet", "--json"])
    assert code == 1, capsys.readouterr().err  # no correct kernel: the model never wrote one
    user = openai_server.requests[0].json["messages"][-1]["content"]
    assert "## Knowledge for this target" in user
    assert "hardware/bf16.md" not in user and "integer_division.md" not in user
