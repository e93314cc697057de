"""What ``kevolve.optimize`` returns: the best kernel, how it compares, why it is as fast as it is, and the
search tree that found it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kevolve.diagnosis import Diagnosis
from kevolve.errors import KevolveError
from kevolve.harness.evaluation import retiming_note
from kevolve.harness.throughput import session_throughput, throughput_line
from kevolve.problems.problem import Problem
from kevolve.store import NodeRecord


@dataclass
class OptimizeResult:
    """What :func:`kevolve.optimize` returns: the best kernel (source, parameters, timings, diagnosis), the ways
    to use it (:meth:`as_torch_op`, :meth:`save`), and every node of the search that found it.

    :ivar problem: the problem searched
    :ivar target: the target's canonical name
    :ivar session: the session's id in the store (``kevolve show SESSION``)
    :ivar best: the fittest correct node, or the fittest node when none is correct (None before any)
    :ivar nodes: every evaluated node, in evaluation order
    :ivar stop_reason: why the search stopped, in words
    :ivar from_store: True when the store already held the solution and nothing was searched
    :ivar final: the best kernel re-timed against every requested baseline at the end (None if not run)
    :ivar elapsed_s: the session's wall time, from its start to its last write
    """

    problem: Problem
    target: str
    session: str
    best: NodeRecord | None
    nodes: list[NodeRecord] = field(default_factory=list)
    stop_reason: str = ""
    from_store: bool = False
    #: the best kernel re-timed against every requested baseline at the end of the search (None if not run)
    final: NodeRecord | None = None
    #: the session's wall time, from its start to its last write (a resumed session's gap included)
    elapsed_s: float = 0.0

    # --- what people ask first --------------------------------------------------------------------------

    @property
    def correct(self) -> bool:
        """Whether the result holds a kernel that passed every check."""
        return self.best is not None and self.best.evaluation.correct

    @property
    def _measured(self) -> NodeRecord | None:
        return self.final if self.final is not None and self.final.evaluation.correct else self.best

    @property
    def speedup(self) -> float:
        """Median eager time / median kernel time, 0 without a correct kernel."""
        node = self._measured
        if node is None or not node.evaluation.correct:
            return 0.0
        timings = node.evaluation.timings
        if "eager" not in timings:
            return 0.0
        return timings["eager"].median / timings["kernel"].median

    @property
    def source(self) -> str:
        """The best kernel's source (empty without one)."""
        return self.best.source if self.best else ""

    @property
    def language(self) -> str:
        """The best kernel's language."""
        return self.best.language if self.best else ""

    @property
    def parameters(self) -> dict[str, Any]:
        """The recipe parameters of the best kernel (empty for one written by an LLM or by hand)."""
        return dict(self.best.parameters) if self.best else {}

    @property
    def diagnosis(self) -> Diagnosis | None:
        """Why the best kernel is as fast as it is (memory-, compute-, latency-bound, ...), from its profile."""
        node = self._measured
        return node.evaluation.diagnosis if node else None

    @property
    def baselines(self) -> dict[str, float]:
        """Baseline name -> median seconds per call, as timed interleaved with the kernel."""
        node = self._measured
        if node is None:
            return {}
        return {k: v.median for k, v in node.evaluation.timings.items() if k != "kernel"}

    def to_json(self) -> dict[str, Any]:
        """The result as ``kevolve optimize --json`` prints it."""
        node = self._measured
        evaluation = node.evaluation if node else None
        return {
            "problem": self.problem.name,
            "problem_spec": self.problem.to_spec(),
            "target": self.target,
            "correct": self.correct,
            "speedup": self.speedup,
            "speedups": {k: vars(v) for k, v in evaluation.speedups.items()} if evaluation else {},
            "baselines": self.baselines,
            "kernel_seconds": evaluation.timings["kernel"].median if evaluation and "kernel" in evaluation.timings
            else None,
            "untimed": evaluation.untimed if evaluation else "",
            "timing_note": evaluation.timing_note if evaluation else "",
            "untimed_baselines": evaluation.untimed_baselines if evaluation else {},
            "estimate": evaluation.estimate if evaluation else {},
            "resources": evaluation.resources if evaluation else {},
            "best": {"node": self.best.node_id, "language": self.language, "recipe": self.best.recipe,
                     "parameters": self.parameters, "source": self.source} if self.best else None,
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
            "session": self.session,
            "from_store": self.from_store,
            "stop_reason": self.stop_reason,
            "candidates": len(self.nodes),
            "throughput": self.throughput,
            "tree": [{"node": n.node_id, "parent": n.parent_id, "memory_op": n.memory_op, "recipe": n.recipe,
                      "status": n.evaluation.status, "fitness": n.evaluation.fitness, "note": n.note}
                     for n in self.nodes],
        }

    def summary(self) -> str:
        """The result in a few lines: timings with spread against each baseline, resources, diagnosis, search."""
        lines = [f"{self.problem.describe()} on {self.target}  (session {self.session}"
                 f"{', from the store' if self.from_store else ''})"]
        if not self.correct:
            failures: dict[str, int] = {}
            for n in self.nodes:
                failures[n.evaluation.status] = failures.get(n.evaluation.status, 0) + 1
            lines.append(f"no correct kernel found in {len(self.nodes)} candidates: {failures}")
            return "\n".join(lines)
        node = self._measured
        ev = node.evaluation
        lines.append(f"best: node {self.best.node_id}, {self.language} ({self.best.recipe}) {self.parameters}")
        lines.extend(ev.timing_lines())
        if node is self.final and retiming_note(self.best.evaluation, ev):
            lines.append(retiming_note(self.best.evaluation, ev))
        if ev.resource_line():
            lines.append(ev.resource_line())
        if ev.estimate and not ev.timings:
            ranked = sorted((n.evaluation.fitness for n in self.nodes if n.evaluation.correct), reverse=True)
            lines.append(f"chosen by the static ranking among {len(ranked)} correct candidates (modeled fraction "
                         f"of the roofline: {', '.join(f'{f:.0%}' for f in ranked[:5])})")
        if self.diagnosis:
            lines.append(f"diagnosis: {self.diagnosis.summary}")
        statuses: dict[str, int] = {}
        for n in self.nodes:
            statuses[n.evaluation.status] = statuses.get(n.evaluation.status, 0) + 1
        lines.append(f"search: {len(self.nodes)} candidates {statuses}; stopped: {self.stop_reason}")
        if throughput_line(self.throughput):
            lines.append(throughput_line(self.throughput))
        lines.append(self.recipes_line())
        lines.append(self.delivery_line())
        return "\n".join(lines)

    @property
    def throughput(self) -> dict[str, Any]:
        """Candidates per hour and where the session's time went (:mod:`kevolve.harness.throughput`)."""
        return session_throughput([n.evaluation.stage_s for n in self.nodes], len(self.nodes), self.elapsed_s)

    def delivery_line(self) -> str:
        """The op a user gets (:meth:`as_torch_op`) and what can be said of it in CUDA graphs without building it."""
        from kevolve.delivery.op import graphs_without_trying, op_name
        from kevolve.plugins import get_manager
        from kevolve.synthesis.base import source_hash

        registered = get_manager().target(self.target)
        device = registered.backend.runner(registered.spec).device
        graphs = graphs_without_trying(self.problem.value_sized, device)
        name = op_name(self.problem, registered.spec.name, source_hash(self.source))
        return f"as a torch op: torch.ops.kevolve.{name} (as_torch_op(), save(DIR)); CUDA graphs: {graphs}"

    def recipes_line(self) -> str:
        """Each recipe the search tried, how often, and its fastest correct candidate: where a target builds
        several languages (Triton and CUDA C++), whether the one that lost was tried and by how much."""
        tried: dict[str, list[NodeRecord]] = {}
        for n in self.nodes:
            tried.setdefault(n.recipe or n.language, []).append(n)
        parts = []
        for recipe, nodes in tried.items():
            times = [n.evaluation.timings["kernel"].median for n in nodes
                     if n.evaluation.correct and "kernel" in n.evaluation.timings]
            parts.append(f"{recipe} x{len(nodes)}" + (f" (fastest {min(times) * 1e6:.1f} us)" if times else ""))
        # search-time medians: the best node's final re-timing above may differ (another moment, other load)
        return "recipes (times in the search): " + ", ".join(parts)

    # --- using the kernel -------------------------------------------------------------------------------

    def _require(self) -> NodeRecord:
        if self.best is None or not self.best.evaluation.correct:
            raise KevolveError("this result holds no correct kernel; run the search longer or check the failures "
                               "with `kevolve show SESSION`")
        return self.best

    def save(self, directory: str | Path) -> Path:
        """Write a package that registers this kernel's op on import, with torch and the kernel's runtime only:
        ``pip install DIR`` (or DIR's parent on ``sys.path``), then ``import DIR`` (its name) gives ``op``, the same
        ``torch.ops.kevolve.<name>`` as :meth:`as_torch_op`, and ``kernel(inputs, outputs)``, the raw launcher.
        ``kevolve.json`` in it holds the problem, the parameters and the measured speedups.

        :param directory: where to write the package (created; its last component is the package's name)
        """
        from kevolve.delivery.package import write_package

        best = self._require()
        info = {k: v for k, v in self.to_json().items() if k != "tree"}
        return write_package(self.problem, self.target, best.source, best.language, Path(directory), info)

    def report(self, path: str | Path) -> Path:
        """Write the search as one self-contained HTML page (tree, fitness, roofline, timing samples) that
        opens offline; needs ``pip install 'kevolve[report]'``.

        :param path: the HTML file to write (its folder is created); returned
        """
        from kevolve.report import report_data, write_report

        return write_report(report_data(self), path)

    def as_torch_op(self) -> Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]:
        """The kernel as a PyTorch operator, ``torch.ops.kevolve.<name>.default`` (name from the problem, target
        and source hash): usable eagerly, in ``torch.compile(fullgraph=True)`` graphs and in ``torch.export``,
        with no reference run per call; its docstring says whether it can be captured in a CUDA graph. It
        defines no gradient: backward through it raises."""
        from kevolve.delivery.op import torch_op

        best = self._require()
        return torch_op(self.problem, self.target, best.source, best.language)
