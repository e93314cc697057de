"""What a report shows, read from a session's result: plain records, no drawing."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kevolve import diagnosis as dg

if TYPE_CHECKING:
    from kevolve.result import OptimizeResult
    from kevolve.store import NodeRecord
    from kevolve.target import MachineFacts


@dataclass
class NodeView:
    node_id: int
    parent_id: int | None
    memory_op: str
    status: str
    fitness: float
    hover: str
    source: str
    diff: str


@dataclass
class RooflinePoint:
    """A timed contender at (FLOP per byte, FLOP/s)."""

    label: str
    intensity: float
    flops_per_s: float
    kind: str  # "best", "baseline" or "candidate"


@dataclass
class ReportData:
    title: str
    problem: str
    target: str
    session: str
    stop_reason: str
    nodes: list[NodeView]
    best_id: int | None
    #: the fitness the search ranked by: "speedup over eager" or "modeled fraction of the roofline"
    fitness_meaning: str
    peak_flops: dict[str, float]
    bandwidths: dict[str, float]
    roofline: list[RooflinePoint]
    #: contender -> every timing sample of the best kernel's final (or search) timing, seconds
    samples: dict[str, list[float]] = field(default_factory=dict)
    summary: str = ""


def report_data(result: OptimizeResult, facts: MachineFacts | None = None) -> ReportData:
    """Everything the report draws. ``facts`` are the target's (peak FLOP/s, memory levels); None looks the
    target up among the installed plugins."""
    if facts is None:
        from kevolve.plugins import get_manager

        facts = get_manager().target(result.target).spec.facts
    stored = result.nodes + ([result.final] if result.final is not None else [])  # the tree holds every node
    by_id = {n.node_id: n for n in stored}
    best = result.best
    timed = any("eager" in n.evaluation.speedups for n in result.nodes)
    return ReportData(
        title=f"{result.problem.describe()} on {result.target}", problem=result.problem.name,
        target=result.target, session=result.session, stop_reason=result.stop_reason,
        nodes=[_node_view(n, by_id.get(n.parent_id) if n.parent_id is not None else None) for n in stored],
        best_id=best.node_id if best else None,
        fitness_meaning="speedup over eager" if timed else "modeled fraction of the roofline",
        peak_flops=dict(facts.peak_flops), bandwidths={m.name: m.bandwidth_bytes_per_s for m in facts.memory},
        roofline=_roofline_points(result), samples=_samples(result), summary=result.summary())


def _node_view(node: NodeRecord, parent: NodeRecord | None) -> NodeView:
    ev = node.evaluation
    lines = [f"node {node.node_id} ({node.memory_op} of {node.parent_id})", f"recipe: {node.recipe}",
             f"parameters: {json.dumps(node.parameters, default=str)}", f"status: {ev.status}",
             f"fitness: {ev.fitness:.3g}"]
    lines.append(f"diagnosis: {ev.diagnosis.summary}" if ev.diagnosis else f"reason: {ev.reason[:200]}")
    lines += ev.timing_lines()
    lines.append(f"evaluated in {ev.wall_s:.2f} s")
    diff = "".join(difflib.unified_diff(parent.source.splitlines(True), node.source.splitlines(True),
                                        f"node {parent.node_id}", f"node {node.node_id}")) if parent else ""
    if parent and not diff:
        diff = f"(the same source as node {parent.node_id})"
    return NodeView(node.node_id, node.parent_id, node.memory_op, ev.status, ev.fitness, "<br>".join(
        _escape(line) for line in lines), node.source, diff)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _roofline_points(result: OptimizeResult) -> list[RooflinePoint]:
    """Each correct candidate, the best kernel and every baseline at its arithmetic intensity and achieved
    FLOP/s. The work (FLOP, bytes) is the problem's, so the baselines sit at the same intensity as the kernel."""
    points: list[RooflinePoint] = []
    best = result.final if result.final is not None and result.final.evaluation.correct else result.best
    for node in result.nodes:
        point = _point(node, "kernel", f"node {node.node_id}", "candidate")
        if point and node.evaluation.correct and (best is None or node.node_id != best.node_id):
            points.append(point)
    if best is not None and best.evaluation.correct:
        for name in best.evaluation.timings:
            point = _point(best, name, f"best kernel (node {best.node_id})" if name == "kernel" else name,
                           "best" if name == "kernel" else "baseline")
            if point:
                points.append(point)
    return points


def _point(node: NodeRecord, contender: str, label: str, kind: str) -> RooflinePoint | None:
    ev = node.evaluation
    metrics = ev.diagnosis.metrics if ev.diagnosis else {}
    flops, moved = float(metrics.get(dg.FLOPS, 0) or 0), float(metrics.get(dg.BYTES, 0) or 0)
    timing = ev.timings.get(contender)
    seconds = timing.median if timing else float(metrics.get(dg.TIME_S, 0) or 0)
    if flops <= 0 or moved <= 0 or seconds <= 0:
        return None
    return RooflinePoint(label, flops / moved, flops / seconds, kind)


def _samples(result: OptimizeResult) -> dict[str, list[float]]:
    node = result.final if result.final is not None and result.final.evaluation.correct else result.best
    if node is None:
        return {}
    return {name: list(t.values) for name, t in node.evaluation.timings.items() if t.values}
