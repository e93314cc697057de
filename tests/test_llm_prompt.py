"""The LLM synthesizer's parts that need no server: the adaptive prompt, answer parsing, tunable knobs, the
token budget, skills, retrieval ranking and the trajectory schema."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from kevolve.diagnosis import Diagnosis
from kevolve.errors import KevolveError
from kevolve.harness import evaluation as ev
from kevolve.harness.evaluation import Evaluation, Speedup, Timing
from kevolve.knowledge import KnowledgeBase, Signals, parse_passage
from kevolve.llm.client import ChatClient, Completion, LLMSettings
from kevolve.llm.parse import MalformedAnswer, extract_kernel
from kevolve.llm.prompt import TRUNCATED, build_prompt
from kevolve.llm.synthesizer import LLMSynthesizer
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.search.config import SearchConfig
from kevolve.search.tree import Tree
from kevolve.skills import distill
from kevolve.store import NodeRecord, Store
from kevolve.synthesis import base
from kevolve.synthesis.base import Candidate, Context
from kevolve.synthesis.template import TemplateSynthesizer
from kevolve.synthesis.tunable import TunableRecipe, knobs
from kevolve.target import MachineFacts, MemoryLevel, TargetSpec
from kevolve.trajectories import record, schema

FACTS = MachineFacts(peak_flops={"float32": 1e12}, memory=(MemoryLevel("DRAM", 1e11, 1e10),), parallel_units=4)
TARGET = TargetSpec("toy", "a toy machine", (), ("cpp",), FACTS)
#: how C++ and Triton kernel files look, as the CPU and GPU backends' toolchains say
CPP = get_manager().target("cpu").language_forms()["cpp"]
TRITON = get_manager().target("nvidia_h100").language_forms()["triton"]
KERNEL = '#include "kevolve_kernel.h"\nKV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, ' \
         'kv_tensor* out, int64_t n_out) { return 0; }\n'


def problem():
    return CatalogProblem(get_manager().ops.get("softmax"), {"rows": 64, "cols": 256}, None, None)


def ok(fitness: float, kind: str = "memory-bound") -> Evaluation:
    return Evaluation(ev.OK, "diagnose", timings={"kernel": Timing(1e-5, 1e-5, 1e-5, 5)},
                      speedups={"eager": Speedup(fitness, fitness, fitness)},
                      diagnosis=Diagnosis(kind, f"{kind}: DRAM 87% of peak", {"bandwidth_fraction": 0.87}))


def failed(status: str, reason: str, log: str = "") -> Evaluation:
    return Evaluation(status, "compile", reason, {"log": log} if log else {})


def tree_of(*evaluations: tuple[int, Evaluation]) -> Tree:
    tree = Tree()
    for i, (parent, evaluation) in enumerate(evaluations, 1):
        tree.add(parent, Candidate(KERNEL + f"// {i}\n", "cpp", synthesizer="llm", note=f"try {i}"), evaluation,
                 "inherit")
    return tree


def context(tree: Tree, parent: int, op: str, **extra) -> Context:
    history = {
        base.INHERIT: lambda: [n.history_item() for n in tree.trajectory(parent)],
        base.SIBLINGS: lambda: [tree.nodes[c].history_item() for c in tree.nodes[parent].children],
    }.get(op, lambda: [])()
    node = tree.nodes[parent] if parent else None
    return Context(problem=problem(), target=TARGET, facts=FACTS, memory_op=op, rng=random.Random(0),
                   history=history, parent=node.history_item() if node else None,
                   diagnosis=node.evaluation.diagnosis if node else None, forms={"cpp": CPP}, **extra)


def passage(title: str, text: str, **meta) -> object:
    front = "\n".join(f"{k} = {json.dumps(v)}" for k, v in meta.items())
    return parse_passage("test", f"{title}.md", f"+++\ntitle = \"{title}\"\n{front}\n+++\n{text}")


# --- the prompt -------------------------------------------------------------------------------------------

def test_inherit_prompt_carries_diagnosis_history_parent_source_and_knowledge():
    tree = tree_of((0, ok(1.1)), (1, ok(1.3, "compute-bound")), (2, failed(ev.WRONG, "12 of 64 outputs differ")))
    ctx = context(tree, 2, base.INHERIT, knowledge=[passage("Vector width", "Use 16-byte loads.")],
                  contract=[passage("The ABI", "export kevolve_kernel", contract=True)])
    user = build_prompt(ctx, "cpp", 100_000).user
    assert "## Last result (node 2)" in user and "compute-bound: DRAM 87% of peak" in user
    assert "bandwidth_fraction=0.87" in user  # the numbers behind the verdict
    assert "## History: the trajectory to the parent, oldest first" in user and "node 1 [llm" in user
    assert "node 3" not in user  # a sibling is not part of the inherit memory
    assert "### node 2 (cpp)\n```cpp\n" + KERNEL + "// 2" in user
    assert "### Vector width" in user and "### The ABI" in user and "_softmax_ref" in user


def test_siblings_prompt_compares_them_best_first_with_their_failures():
    tree = tree_of((0, ok(1.0)), (1, ok(1.2)), (1, failed(ev.COMPILE_ERROR, "C++ compile failed (exit 1)",
                                                           "kernel.cpp:3: error: expected ';'")), (1, ok(1.5)))
    user = build_prompt(context(tree, 1, base.SIBLINGS), "cpp", 100_000).user
    section = user[user.index("## History: siblings compared, best first"):]
    assert section.index("node 4") < section.index("node 2") < section.index("node 3")
    assert "compile_error: C++ compile failed" in section
    assert "### node 4 (cpp)" in user  # the best sibling's source is shown to build on


def test_a_failed_parent_comes_back_with_its_evidence():
    tree = tree_of((0, failed(ev.COMPILE_ERROR, "C++ compile failed (exit 1)", "kernel.cpp:3: error: expected ';'")))
    user = build_prompt(context(tree, 1, base.INHERIT), "cpp", 100_000).user
    assert "failed (compile_error). Fix what the failure describes" in user
    assert "kernel.cpp:3: error: expected ';'" in user


def test_the_system_prompt_says_how_many_shapes_the_checks_run_at(monkeypatch):
    ctx = context(tree_of(), 0, base.SEED)
    assert f"at {len(ctx.problem.check_dims())} shapes (the Problem section lists them)" in build_prompt(
        ctx, "cpp", 100_000).system
    monkeypatch.setattr(type(ctx.problem), "check_dims", lambda self: [self.dims])  # a problem with one shape
    system = build_prompt(ctx, "cpp", 100_000).system
    assert "at the problem's shape," in system and "several" not in system


def test_restart_prompt_has_no_parent_and_asks_for_a_new_approach():
    tree = tree_of((0, ok(1.0)))
    user = build_prompt(context(tree, 0, base.RESTART), "cpp", 100_000).user
    assert "different approach" in user and "## Last result" not in user


def test_prompt_fits_its_budget_dropping_the_least_important_first():
    tree = tree_of(*[(i, ok(1 + i / 10)) for i in range(12)])
    knowledge = [passage(f"Passage {i}", "words " * 400) for i in range(6)]
    ctx = context(tree, 12, base.INHERIT, knowledge=knowledge,
                  contract=[passage("The ABI", "export kevolve_kernel " * 50, contract=True)])
    full = build_prompt(ctx, "cpp", 1_000_000)
    small = build_prompt(ctx, "cpp", 9_000)
    assert len(full.system) + len(full.user) > 9_000 >= len(small.system) + len(small.user)
    sections = {s["title"]: s for s in small.sections}
    assert sections["Knowledge for this target, language and bottleneck"]["dropped"] >= 1
    assert "### Passage 0" in small.user or sections["Knowledge for this target, language and bottleneck"]["items"] == 0
    assert "### Passage 5" not in small.user  # the lowest-ranked passage went first
    assert "## Task" in small.user and "### The ABI" in small.user  # required sections stay
    tiny = build_prompt(ctx, "cpp", 2_500)
    assert TRUNCATED.strip() in tiny.user and "## Task" in tiny.user
    assert len(tiny.system) + len(tiny.user) <= 2_500


# --- answers ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("answer,why", [
    ("", "empty"),
    ("I would vectorize it.", "no fenced code block"),
    ("```python\ndef kernel(x): pass\n```", "tagged python, not cpp"),
    ("```cpp\nint main() { return 0; }\n```", "no entry point"),
])
def test_malformed_cpp_answers_say_why(answer, why):
    with pytest.raises(MalformedAnswer, match=why):
        extract_kernel(answer, "cpp", CPP)


def test_python_answers_are_syntax_checked_and_the_longest_block_is_the_file():
    with pytest.raises(MalformedAnswer, match="not valid Python: .* line 2"):
        extract_kernel("```python\ndef kernel(inputs, outputs):\n    return (\n```", "triton", TRITON)
    source, prose = extract_kernel("Use it as `kernel(a, b)`:\n```python\nkernel(a, b)\n```\nFile:\n```python\n"
                                   "import triton\n\ndef kernel(inputs, outputs):\n    pass\n```\nDone.", "triton",
                                   TRITON)
    assert source.startswith("import triton") and "Done." in prose


class Scripted(ChatClient):
    provider = "scripted"

    def __init__(self, answers: list[str]) -> None:
        super().__init__("m", LLMSettings())
        self.answers = answers

    def complete(self, request):
        return Completion(self.answers.pop(0), self.model, 600, 400)


def test_token_budget_stops_the_synthesizer_and_counts_resumed_nodes():
    synth = LLMSynthesizer(Scripted([f"```cpp\n{KERNEL}// {i}\n```" for i in range(5)]), LLMSettings(tokens=2500))
    ctx = context(tree_of(), 0, base.SEED)
    ctx.n = 2
    assert len(synth.propose(ctx)) == 2 and synth.stop_reason() == ""
    assert len(synth.propose(ctx)) == 1  # 2000 tokens used: one more request, then the budget is spent
    assert "token budget spent: 3000 of 2500" in synth.stop_reason()
    resumed = LLMSynthesizer(Scripted([]), LLMSettings(tokens=2500))
    resumed.replay(Candidate("x", "cpp", synthesizer="scripted:m", trace={"usage": {"input_tokens": 2000,
                                                                                     "output_tokens": 600}}))
    assert resumed.stop_reason()


def test_settings_parse_and_reject_unknown_options():
    model, settings = LLMSettings.parse("claude-x,tokens=5000,timeout_s=2.5,base_url=http://h:1")
    assert (model, settings.tokens, settings.timeout_s, settings.base_url) == ("claude-x", 5000, 2.5, "http://h:1")
    with pytest.raises(KevolveError, match="bad LLM synthesizer option 'colour=red'"):
        LLMSettings.parse("m,colour=red")
    with pytest.raises(KevolveError, match="wants a int"):
        LLMSettings.parse("m,tokens=many")


# --- tunable knobs ----------------------------------------------------------------------------------------

def test_tunable_knobs_are_a_schedule_space_the_template_synthesizer_moves():
    source = ("BLOCK = 256  # kevolve: tune 64, 128, 256, 512\nWARPS: tl.constexpr = 4  # kevolve: tune 2, 4, 8\n"
              "OTHER = 3  # kevolve: tune 1, 2\nconstexpr int TILE = 64;  // kevolve: tune 16, 32, 64\n")
    assert knobs(source) == {"BLOCK": (256, (64, 128, 256, 512)), "WARPS": (4, (2, 4, 8)), "TILE": (64, (16, 32, 64))}
    recipe = TunableRecipe(source, "triton")
    rendered = recipe.render(problem(), {"BLOCK": 128, "WARPS": 8, "TILE": 16})
    assert knobs(rendered) == {"BLOCK": (128, (64, 128, 256, 512)), "WARPS": (8, (2, 4, 8)), "TILE": (16, (16, 32, 64))}
    assert "OTHER = 3" in rendered  # a value outside its choices is left alone
    tree = Tree()
    tree.add(0, Candidate(source, "cpp", knobs_values := {"BLOCK": 256, "WARPS": 4, "TILE": 64}, "tunable",
                          "llm"), ok(1.0), "seed")
    ctx = context(tree, 1, base.INHERIT)
    ctx.n = 3
    proposed = TemplateSynthesizer().propose(ctx)
    assert proposed and all(c.recipe == "tunable" and c.parameters != knobs_values for c in proposed)
    assert all(knobs(c.source)[k][0] == v for c in proposed for k, v in c.parameters.items())


# --- skills -----------------------------------------------------------------------------------------------

def test_a_skill_names_the_change_its_effect_and_the_diagnosis_it_answered(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    sid = store.create_session(problem_key="k", problem_name="softmax", family="row_softmax", problem_spec={},
                               target="toy", toolchain="t1", seed=0, config=SearchConfig())
    rows = [(1, 0, {"ROWS": 1, "VEC": 4}, ok(1.0, "latency-bound")), (2, 1, {"ROWS": 8, "VEC": 4}, ok(1.6)),
            (3, 1, {"ROWS": 2, "VEC": 4}, failed(ev.WRONG, "bad"))]
    for node_id, parent, params, evaluation in rows:
        store.add_node(sid, NodeRecord(node_id, parent, "inherit", "template", "cpp.rows", "cpp", params, "src",
                                       f"h{node_id}", "", evaluation))
    skill = distill(store.session(sid), store.nodes(sid))
    assert skill.changed == {"ROWS": [1, 8]} and skill.effect == pytest.approx(1.6) and skill.fixed == "latency-bound"
    assert "ROWS 1 -> 8 (answering latency-bound)" in skill.lesson and "speedup over eager" in skill.lesson


# --- retrieval --------------------------------------------------------------------------------------------

def test_bm25_ranks_by_the_signals_words_and_never_crosses_targets():
    docs = KnowledgeBase()
    docs.passages = [passage("Shared memory bank conflicts", "pad the tile to avoid bank conflicts"),
                     passage("Vector loads", "use 16 byte vector loads for bandwidth"),
                     passage("Other chip", "bank conflicts on another chip", targets=["other"]),
                     passage("The ABI", "bank conflicts", contract=True)]
    hits = docs.search(Signals(target="toy", query="bank conflicts"))
    assert [h.passage.title for h in hits] == ["Shared memory bank conflicts", "Vector loads"]
    assert hits[0].bm25 == 1.0 and "bank" in hits[0].matched_words and hits[1].bm25 == 0.0
    docs.embedder = lambda texts: [[1.0, 0.0] if "vector" in t.lower() else [0.0, 1.0] for t in texts]
    docs._vectors = None
    hits = docs.search(Signals(target="toy", query="vector"))
    assert hits[0].passage.title == "Vector loads" and hits[0].similarity == pytest.approx(1.0)


# --- trajectories -----------------------------------------------------------------------------------------

def test_trajectory_records_validate_and_the_schema_rejects_a_broken_one(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    sid = store.create_session(problem_key="k", problem_name="softmax", family="row_softmax", problem_spec={},
                               target="toy", toolchain="t1", seed=0, config=SearchConfig())
    trace = {"prompt": {"system": "s", "user": "u", "sections": [{"title": "Task", "chars": 1, "items": 1,
                                                                  "dropped": 0}]},
             "response": "```cpp\n...```", "usage": {"input_tokens": 10, "output_tokens": 5, "attempts": 2}}
    store.add_node(sid, NodeRecord(1, 0, "seed", "anthropic:m", "", "cpp", {}, KERNEL, "h", "", ok(1.2), trace))
    store.add_node(sid, NodeRecord(2, 1, "inherit", "template", "cpp.rows", "cpp", {"ROWS": 2}, KERNEL, "h2", "",
                                   failed(ev.COMPILE_ERROR, "no", log="kernel.cpp:3: error: expected ';'")))
    records = [record(store.session(sid), n) for n in store.nodes(sid)]
    for rec in records:
        jsonschema.validate(rec, schema())
    assert records[0]["usage"]["attempts"] == 2 and records[1]["prompt"] is None
    # each node's reward carries its own failure evidence: the compile log of the node that did not compile
    assert records[0]["reward"]["evidence"] == "" and "expected ';'" in records[1]["reward"]["evidence"]
    broken = dict(records[0], reward={**records[0]["reward"], "status": "great"})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema())


@pytest.mark.parametrize("strategy", ["mcts", "evolution"])
def test_a_failed_node_is_built_on_only_to_repair_it(strategy):
    """Issue 39: "combine the strengths of node 1 and the best kernel" named a node that did not compile."""
    from kevolve.search.strategy import STRATEGIES

    tree = tree_of((0, failed(ev.COMPILE_ERROR, "compile error")), (0, ok(1.5)), (1, failed(ev.COMPILE_ERROR, "x")))
    for node in tree.nodes.values():  # the broken kernels share the good one's recipe: crossover would be offered
        node.visits = 3
    picks = {STRATEGIES[strategy]().select(tree, random.Random(seed), False) for seed in range(200)}
    for node_id, op in picks:
        if node_id != 0 and tree.nodes[node_id].fitness <= 0:
            assert op == base.INHERIT, (node_id, op)
