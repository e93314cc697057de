"""One adaptive prompt builder for every target and language.

The prompt is assembled from the search's Context, section by section: the task (worded by the node's memory
operator), the problem, the kernel file contract, the last result and its diagnosis, the history the memory
operator chose, the kernels to build on, the target's facts, the retrieved docs passages and the skills of
earlier sessions. Nothing in it is written per platform: what differs between targets arrives through the
docs packs and the machine facts.

The prompt stays within a character budget. When it would not, the least important material goes first, one
item at a time: skills, then docs passages (lowest ranked first), target facts, the oldest history, and only
then, cut short with a marker, the required sections.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from kevolve.harness.evaluation import OK, SYNTHESIS_ERROR
from kevolve.llm.parse import fence
from kevolve.problems.problem import Problem, dtype_name
from kevolve.synthesis import base
from kevolve.synthesis.base import Context, HistoryItem

TRUNCATED = "\n[... cut to fit the context budget ...]\n"


@dataclass
class Section:
    title: str
    items: list[str]
    #: dropped in order of decreasing rank; required sections are never dropped, only cut short
    rank: int
    required: bool = False
    #: which items go first when the section must shrink: "end" (least relevant last) or "start" (oldest first)
    drop_from: str = "end"
    dropped: int = 0

    def render(self) -> str:
        return f"## {self.title}\n" + "\n\n".join(self.items) if self.items else ""


@dataclass
class Prompt:
    system: str
    user: str
    #: per section: title, characters, items kept and dropped (the trajectory export keeps this)
    sections: list[dict[str, object]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def build_prompt(context: Context, language: str, budget_chars: int) -> Prompt:
    system = _system(context, language)
    sections = [s for s in _sections(context, language) if s.items]
    _fit(sections, budget_chars - len(system))
    user = "\n\n".join(s.render() for s in sections if s.items)
    return Prompt(system, user, [{"title": s.title, "chars": len(s.render()), "items": len(s.items),
                                  "dropped": s.dropped} for s in sections])


def _fit(sections: list[Section], budget: int) -> None:
    def total() -> int:
        return sum(len(s.render()) + 2 for s in sections)

    while total() > budget:
        optional = [s for s in sections if not s.required and s.items]
        if not optional:
            break
        victim = max(optional, key=lambda s: s.rank)
        victim.items.pop(0 if victim.drop_from == "start" else -1)
        victim.dropped += 1
    while total() > budget:  # only required material is left: cut the longest item short
        section, index = max(((s, i) for s in sections for i in range(len(s.items))),
                             key=lambda si: len(si[0].items[si[1]]))
        item = section.items[index]
        excess = total() - budget
        keep = max(len(item) - excess - len(TRUNCATED), 200)
        if keep >= len(item):
            break
        section.items[index] = item[: keep // 2] + TRUNCATED + item[-(keep - keep // 2):]


def _shapes(problem: Problem) -> str:
    """What the checks run at, as the problem says: "the shape of the Problem section" or "3 shapes"."""
    count = len(problem.check_dims())
    return "the problem's shape" if count == 1 else f"{count} shapes (the Problem section lists them)"


def _system(context: Context, language: str) -> str:
    tag = fence(context.form(language), language)
    return (
        f"You are an expert performance engineer writing {language} compute kernels for {context.target.name} "
        f"({context.target.description}). A search harness compiles your kernel, checks it against PyTorch on "
        f"fresh random inputs at {_shapes(context.problem)}, times it against PyTorch and profiles it. "
        "Correctness comes first; then speed. Computing the result by calling PyTorch or a vendor library is rejected: write the "
        "computation yourself.\n\n"
        f"Answer with exactly one fenced ```{tag} code block holding the complete kernel file, following the "
        "kernel file contract below, then at most three sentences on what you changed and why.\n"
        "Integer constants the search should tune for you may be marked with their legal values, e.g. "
        "`BLOCK = 256  # kevolve: tune 64, 128, 256, 512` (Python) or "
        "`constexpr int TILE = 64;  // kevolve: tune 16, 32, 64, 128` (C++)."
    )


def _sections(context: Context, language: str) -> list[Section]:
    parent = context.parent
    sections = [
        Section("Task", [_task(context)], rank=0, required=True),
        Section("Problem", [_problem(context.problem)], rank=0, required=True),
        Section("Kernel file contract", [f"### {p.title}\n{p.text}" for p in context.contract], rank=0,
                required=True),
    ]
    if parent is not None:
        sections.append(Section(f"Last result (node {parent.node_id})", [_result(parent, detailed=True)], rank=1,
                                required=True))
    history = [h for h in context.history if parent is None or h.node_id != parent.node_id]
    if history:
        title, drop = {
            base.INHERIT: ("History: the trajectory to the parent, oldest first", "start"),
            base.SIBLINGS: ("History: siblings compared, best first", "end"),
            base.COMBINE: ("History: the parent's trajectory and its children", "start"),
            base.RESTART: ("History: kernels tried so far, best first", "end"),
        }.get(context.memory_op, ("History", "start"))
        if context.memory_op in (base.SIBLINGS, base.RESTART):
            history = sorted(history, key=lambda h: -h.fitness)
        sections.append(Section(title, [_result(h) for h in history], rank=3, drop_from=drop))
    sections.append(Section("Kernels to build on", _kernels_to_show(context), rank=2))
    if parent is None:
        sections.append(Section("A starting kernel: the program lowered onto this target's ATen kernels",
                                _lowered_program(context, language), rank=2))
    sections.append(Section("Target", [_facts(context)], rank=4))
    sections.append(Section("Knowledge for this target, language and bottleneck",
                            [f"### {p.title} ({p.pack}/{p.path})\n{p.text}" for p in context.knowledge], rank=5))
    sections.append(Section("Lessons from earlier searches on similar problems",
                            [_skill(s) for s in context.skills], rank=6))
    return sections


def _task(context: Context) -> str:
    parent = context.parent
    if context.memory_op == base.INHERIT and parent is not None:
        if parent.status != OK:
            return (f"The kernel of node {parent.node_id} failed ({parent.status}). Fix what the failure "
                    "describes and keep the kernel fast.")
        kind = context.diagnosis.kind if context.diagnosis else "undiagnosed"
        return (f"Improve the kernel of node {parent.node_id}, diagnosed {kind}. Change what the diagnosis points "
                "at and keep what works.")
    if context.memory_op == base.SIBLINGS:
        return ("Several kernels were tried from the same starting point. Compare their results and write one "
                "that beats all of them.")
    if context.memory_op == base.COMBINE and parent is not None and context.best is not None:
        return (f"Combine the strengths of node {parent.node_id} and the best kernel so far (node "
                f"{context.best.node_id}) into one kernel faster than both.")
    if context.memory_op == base.RESTART:
        return ("The search has stalled. Start over with a different approach (another parallelisation, "
                "tiling or algorithm) rather than another variant of the kernels tried.")
    return "Write a correct and fast kernel for this problem."


def _problem(problem: Problem) -> str:
    dims = problem.dims
    lines = [f"{problem.describe()} (family {problem.family})",
             f"- timing shape (the speedup is measured here): {json.dumps(dims)}",
             f"- correctness shapes (the kernel must be right at every one): "
             f"{'; '.join(json.dumps(d) for d in problem.check_dims())}",
             f"- dtype: {dtype_name(problem.dtype)}; attributes: {json.dumps(problem.attrs) or '{}'}"]
    tolerance = problem.tolerance(problem.dtype)
    lines.append(f"- tolerance: |out - ref| <= {tolerance.atol:g} * max(1, max|ref|) + {tolerance.rtol:g} * |ref|; "
                 "NaN and Inf positions must match")
    flops = problem.flops(dims)
    if flops:
        lines.append(f"- useful work at the timing shape: {flops:.3g} FLOP")
    reference = problem.reference_source().strip()
    if reference:
        lines.append(f"- the PyTorch reference (the truth):\n```python\n{reference}\n```")
    return "\n".join(lines)


def _result(item: HistoryItem, detailed: bool = False) -> str:
    what = item.recipe + (f" {json.dumps(item.parameters)}" if item.parameters else "") if item.recipe else \
        f"free-form {item.language}"
    head = f"node {item.node_id} [{item.synthesizer or '?'}: {what}]"
    if item.status != OK:
        if detailed:
            return f"{head}: {item.status}: {item.reason}" + (f"\n```\n{item.detail}\n```" if item.detail else "")
        return f"{head}: {item.status}: {item.reason[:400]}"
    timed = f", {item.seconds * 1e6:.1f} us per call" if item.seconds else ""
    kind = "speedup over eager" if item.seconds else "modeled fraction of the roofline"
    line = f"{head}: correct, fitness {item.fitness:.3f} ({kind}){timed}"
    if item.diagnosis is not None:
        summary = item.diagnosis.summary  # classifiers' summaries mostly open with the label: print it once
        line += f"; {summary}" if summary.startswith(item.diagnosis.kind) else f"; {item.diagnosis.kind}: {summary}"
        if detailed and item.diagnosis.metrics:
            line += "\nmetrics: " + ", ".join(f"{k}={_number(v)}" for k, v in item.diagnosis.metrics.items())
    if item.note:
        line += f"\n(proposed as: {item.note[:200]})"
    return line


def _number(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _kernels_to_show(context: Context) -> list[str]:
    shown: list[HistoryItem] = []
    if context.memory_op in (base.INHERIT, base.COMBINE) and context.parent is not None:
        shown.append(context.parent)
    if context.memory_op in (base.SIBLINGS, base.COMBINE):
        ranked = sorted((h for h in context.history if h.status == OK), key=lambda h: -h.fitness)
        best = context.best if context.memory_op == base.COMBINE else (ranked[0] if ranked else None)
        if best is not None and all(best.node_id != s.node_id for s in shown):
            shown.append(best)
    return [f"### node {item.node_id} ({item.language})\n```{fence(context.form(item.language), item.language)}\n"
            f"{item.source.rstrip()}\n```"
            for item in shown if item.source and item.status != SYNTHESIS_ERROR]


def _lowered_program(context: Context, language: str) -> list[str]:
    """For a PyTorch program: the template synthesizer's kernel file for it (every kernel from the target's
    conformance-checked recipes, intermediates in scratch), so a first proposal improves a working kernel."""
    from kevolve.program.recipe import starting_kernel

    source = starting_kernel(context.problem, context.recipes, language, context.facts, context.forms)
    if not source:
        return []
    return ["It computes the program correctly, one kernel per unfused node; make it faster (fuse further, "
            f"tile, vectorize) and keep it correct.\n```{fence(context.form(language), language)}\n"
            f"{source.rstrip()}\n```"]


def _facts(context: Context) -> str:
    facts = context.facts
    lines = [f"{context.target.name}: {context.target.description}",
             f"- {facts.parallel_units} {facts.unit_name}s",
             "- peak compute: " + ", ".join(f"{k} {v / 1e12:.3g} TFLOP/s" for k, v in facts.peak_flops.items()),
             "- memory, fastest first: " + "; ".join(
                 f"{m.name} {m.bandwidth_bytes_per_s / 1e9:.4g} GB/s, {m.capacity_bytes / 2**20:.4g} MiB"
                 for m in facts.memory)]
    if context.hints:
        lines.append(f"- tuning hints from the docs packs: {json.dumps(context.hints)}")
    return "\n".join(lines)


def _skill(skill) -> str:
    text = skill.lesson
    if not skill.recipe and skill.source:
        text += f"\n```\n{skill.source.rstrip()[:3000]}\n```"
    return text
