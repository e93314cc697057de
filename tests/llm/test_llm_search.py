"""End to end: `kevolve optimize softmax --target cpu --synthesizer PROVIDER:MODEL` against a local server that
speaks the provider's real protocol, through the real client code. Every failure mode of an LLM (good kernel,
malformed answer, rate limit, compile error, wrong result, slow answer, rejected key) is scripted and none
crashes the search."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from protocol_server import Error, Slow, Text

from kevolve.cli import main
from kevolve.store import Store
from kevolve.trajectories import schema

KERNELS = Path(__file__).parents[2] / "backends/cpu/tests/kernels"  # the cpu target's C++ test kernels
GOOD = (KERNELS / "softmax_ok.cpp").read_text()
WRONG = (KERNELS / "zeros.cpp").read_text()
BROKEN = GOOD.replace("return 0;", "return 0")  # a syntax error g++ reports
SHAPE = ["--shape", "rows=64", "cols=256"]


def answer(source: str, words: str = "A plain three-pass softmax.") -> str:
    return f"Here is the kernel.\n\n```cpp\n{source}```\n\n{words}"


def optimize(capsys, store: Path, synthesizer: str, budget: int, *extra: str) -> tuple[int, dict | str]:
    code = main(["optimize", "softmax", "--target", "cpu", "--synthesizer", synthesizer, "--budget", str(budget),
                 "--store", str(store), "--quiet", "--json", *SHAPE, *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else captured.err)


def test_every_llm_failure_mode_is_a_node_and_the_search_goes_on(llm_server, capsys, tmp_path):
    server = llm_server
    server.script(
        Text(answer(GOOD)),                                  # 1: a good kernel
        Text("I would use a three-pass algorithm."),         # 2: no code
        Error(429, retry_after=0.01), Text(answer(BROKEN)),  # 3: rate limited, retried, then a compile error
        Text(answer(WRONG, "Zeros are fast.")),              # 4: wrong result
        Slow(5.0, answer(GOOD)), Slow(5.0, answer(GOOD)),    # 5: slower than the timeout, twice
        Text(answer("// second try\n" + GOOD)),              # 6: good again
    )
    store = tmp_path / "store.sqlite"
    code, result = optimize(capsys, store, f"{server.protocol}:test-model,timeout_s=1.5,max_retries=1", 6)
    assert code == 0, result
    assert result["correct"] and "kevolve_kernel" in result["best"]["source"]

    st = Store(store)
    nodes = st.nodes(result["session"])
    searched = [n for n in nodes if n.memory_op != "final"]
    statuses = [n.evaluation.status for n in searched]
    assert statuses == ["ok", "synthesis_error", "compile_error", "wrong_result", "synthesis_error", "ok"], statuses
    assert "no fenced code block" in searched[1].evaluation.reason
    assert "compile" in searched[2].evaluation.reason.lower()
    assert "timed out" in searched[4].evaluation.reason and searched[4].trace["usage"]["attempts"] == 2
    assert searched[2].trace["usage"]["attempts"] == 2  # the 429 was retried by the SDK
    assert all(n.synthesizer == f"{server.protocol}:test-model" for n in searched)
    assert searched[0].trace["usage"]["input_tokens"] > 0 and searched[0].trace["response"].startswith("Here is")

    # what the model was shown: the contract, retrieved docs, the last diagnosis and the memory-operator history
    prompts = [_prompt(server.protocol, r.json) for r in server.requests if r.json]
    first_user = prompts[0][1]
    assert "## Kernel file contract" in first_user and "kevolve_kernel" in first_user
    assert "## Knowledge for this target, language and bottleneck" in first_user
    assert "Row kernels on the CPU" in first_user  # a cpu docs-pack passage for row_softmax
    assert "_softmax_ref" in first_user  # the reference code
    diagnosis = searched[0].evaluation.diagnosis
    later = [user for _, user in prompts[1:]]
    assert any("## Last result (node 1)" in u and diagnosis.kind in u and diagnosis.summary[:40] in u for u in later)
    # each node's prompt (kept in its trace) is what went over the wire, with the history its memory operator chose
    sent = {user for _, user in prompts}
    by_id = {n.node_id: n for n in searched}
    for n in searched:
        user, op = n.trace["prompt"]["user"], n.trace["memory_op"]
        assert user in sent
        parent = by_id.get(n.parent_id)
        if op in ("siblings", "combine") or (op == "inherit" and parent is not None and parent.parent_id):
            assert "## History" in user, (n.node_id, op)
            if parent is not None and parent.evaluation.status == "compile_error":  # with the compiler's own words
                assert f"## Last result (node {parent.node_id})" in user and "error: expected" in user

    # trajectories of this session validate against the schema, LLM nodes with prompt and response
    out = tmp_path / "t.jsonl"
    assert main(["export", "--format", "trajectories", str(out), "--store", str(store)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 6
    for rec in records:
        jsonschema.validate(rec, schema())
    assert records[0]["prompt"]["user"] == first_user and records[0]["reward"]["correct"]
    assert records[3]["reward"]["status"] == "wrong_result" and records[3]["reward"]["fitness"] == 0


def test_prompts_carry_the_memory_operators_history(llm_server, capsys, tmp_path):
    """With every answer a good kernel the tree grows deep enough for each memory operator to have a history."""
    answers = iter(range(1000))
    llm_server.responder = lambda body: answer(f"// variant {next(answers)}\n" + GOOD)
    code, result = optimize(capsys, tmp_path / "s.sqlite", f"{llm_server.protocol}:test-model", 8)
    assert code == 0, result
    nodes = [n for n in Store(tmp_path / "s.sqlite").nodes(result["session"]) if n.memory_op != "final"]
    with_history = [n for n in nodes if "## History" in n.trace["prompt"]["user"]]
    assert with_history, [(n.node_id, n.parent_id, n.trace["memory_op"]) for n in nodes]
    for n in with_history:
        user = n.trace["prompt"]["user"]
        history = user[user.index("## History"):]
        earlier = [m.node_id for m in nodes if m.node_id < n.node_id and m.node_id != n.parent_id]
        assert any(f"node {i} [" in history for i in earlier)  # an earlier node, with its result
        assert "fitness" in history


def test_a_rejected_key_stops_the_search_and_keeps_what_was_found(llm_server, capsys, tmp_path):
    server = llm_server
    server.script(Text(answer(GOOD)), Error(401, message="invalid x-api-key"))
    store = tmp_path / "store.sqlite"
    code, err = optimize(capsys, store, f"{server.protocol}:test-model,max_retries=0", 4)
    assert code == 2 and "key" in err.lower()
    st = Store(store)
    (session,) = st.sessions()
    assert session.status == "failed"
    assert [n.evaluation.status for n in st.nodes(session.id)] == ["ok"]


@pytest.mark.parametrize("provider,variable", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_BASE_URL")])
def test_no_key_or_endpoint_names_what_to_set_before_any_session(provider, variable, capsys, tmp_path):
    store = tmp_path / "store.sqlite"
    code, err = optimize(capsys, store, f"{provider}:some-model", 2)
    assert code == 2 and variable in err
    assert Store(store).sessions() == []


def test_llm_and_template_share_one_search(anthropic_server, capsys, tmp_path):
    """A problem no recipe covers (a KernelBench file using an op no ATen kernel covers, ``i0``, so it is not
    lowered onto the ATen kernels either; on a vector, so the catalog's softmax over a matrix's rows, which its
    values equal, is no twin of it): the LLM writes a kernel with a tunable knob, and the template synthesizer tunes that knob in
    the same tree."""
    problem = tmp_path / "row_softmax.py"
    problem.write_text("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                       "        return torch.softmax(x, dim=-1) + 0.0 * torch.special.i0(x)\n\n"
                       "def get_inputs():\n    return [torch.randn(4096)]\n\n"
                       "def get_init_inputs():\n    return []\n")
    tunable = GOOD.replace("for (int64_t r = 0; r < rows; ++r) {",
                           "constexpr int UNROLL = 1;  // kevolve: tune 1, 2, 4\n"
                           "    for (int64_t r = 0; r < rows; r += 1) {")
    anthropic_server.responder = lambda body: answer(tunable)
    code = main(["optimize", str(problem), "--target", "cpu", "--synthesizer", "anthropic:test-model+template",
                 "--budget", "4", "--store", str(tmp_path / "s.sqlite"), "--quiet", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    nodes = [n for n in Store(tmp_path / "s.sqlite").nodes(result["session"]) if n.memory_op != "final"]
    assert nodes[0].synthesizer == "anthropic:test-model" and nodes[0].parameters == {"UNROLL": 1}
    tuned = [n for n in nodes if n.synthesizer == "template"]
    assert tuned and all(n.recipe == "tunable" and n.evaluation.correct for n in tuned), \
        [(n.synthesizer, n.recipe, n.memory_op, n.evaluation.status) for n in nodes]
    assert {n.parameters["UNROLL"] for n in tuned} <= {2, 4}
    assert all(f"constexpr int UNROLL = {n.parameters['UNROLL']};" in n.source for n in tuned)


def _prompt(protocol: str, body: dict) -> tuple[str, str]:
    if protocol == "anthropic":
        system = body["system"] if isinstance(body["system"], str) else " ".join(b["text"] for b in body["system"])
        content = body["messages"][0]["content"]
        user = content if isinstance(content, str) else " ".join(b["text"] for b in content)
        return system, user
    messages = {m["role"]: m["content"] for m in body["messages"]}
    return messages["system"], messages["user"]
