"""Classifier: metrics -> one bottleneck class, always with the numbers that justify it."""

from __future__ import annotations

from abc import ABC, abstractmethod

from kevolve import diagnosis as d
from kevolve.target import MachineFacts


class Classifier(ABC):
    @abstractmethod
    def classify(self, metrics: d.Metrics, facts: MachineFacts, source: str) -> d.Diagnosis:
        """Name the bottleneck of a kernel from its metrics."""


def metric(metrics: d.Metrics, key: str, default: float = 0.0) -> float:
    """A numeric metric, or ``default`` when a profiler did not report it (or reported text, e.g. a reason)."""
    value = metrics.get(key, default)
    return float(value) if isinstance(value, (int, float)) else default


class RooflineClassifier(Classifier):
    """Thresholds over the vendor-neutral metrics. Backends with richer counters subclass it and refine.

    Order matters: a spilling kernel is diagnosed as such whatever else it shows, because that is the cause to
    fix first. Then a kernel at ``roof_at`` or more of a roof is bound by that roof, even with low occupancy or
    few busy units: it already runs near what the hardware gives, and more resident work cannot lift it far
    past the roof (a bf16 matmul at 70% of peak FLOPs on one 8-warp program per SM was called occupancy-limited,
    which sent its search toward smaller tiles). Below that, a kernel that leaves most units idle is
    diagnosed as such even when it also looks memory-bound.
    """

    roof_at = 0.6
    memory_bound_at = 0.5
    compute_bound_at = 0.5
    starved_below = 0.15
    latency_s = 50e-6

    def classify(self, metrics: d.Metrics, facts: MachineFacts, source: str) -> d.Diagnosis:
        bw = metric(metrics, d.BANDWIDTH_FRACTION)
        fl = metric(metrics, d.FLOPS_FRACTION)
        t = metric(metrics, d.TIME_S)
        level = metrics.get(d.MEMORY_LEVEL, "memory")
        numbers = (f"{metric(metrics, d.ACHIEVED_BANDWIDTH) / 1e9:.1f} GB/s = {bw:.0%} of {level} bandwidth, "
                   f"{metric(metrics, d.ACHIEVED_FLOPS) / 1e9:.1f} GFLOP/s = {fl:.0%} of peak, {t * 1e6:.1f} us")
        spills = metric(metrics, d.SPILL_BYTES)
        used = metric(metrics, d.PARALLEL_UNITS_USED, facts.parallel_units)
        occupancy = metric(metrics, d.OCCUPANCY, 1.0)
        if spills > 0:
            return d.Diagnosis(d.SPILL_BOUND, f"spill-bound: {spills:.0f} bytes spilled; {numbers}", metrics, source)
        if max(bw, fl) >= self.roof_at:
            kind = d.MEMORY_BOUND if bw >= fl else d.COMPUTE_BOUND
            return d.Diagnosis(kind, f"{kind}: at {max(bw, fl):.0%} of its roof; {numbers}", metrics, source)
        if used < facts.parallel_units / 2 or occupancy < 0.25:
            what = (f"{used:.0f} of {facts.parallel_units} {facts.unit_name}s busy" if used < facts.parallel_units / 2
                    else f"occupancy {occupancy:.0%}")
            return d.Diagnosis(d.OCCUPANCY_LIMITED, f"occupancy-limited: {what}; {numbers}", metrics, source)
        if t < self.latency_s:
            return d.Diagnosis(d.LATENCY_BOUND, f"latency-bound: too short for either roof to matter; {numbers}",
                               metrics, source)
        if bw >= self.memory_bound_at and bw >= fl:
            return d.Diagnosis(d.MEMORY_BOUND, f"memory-bound: {numbers}", metrics, source)
        if fl >= self.compute_bound_at:
            return d.Diagnosis(d.COMPUTE_BOUND, f"compute-bound: {numbers}", metrics, source)
        if max(bw, fl) < self.starved_below:
            return d.Diagnosis(d.COMPUTE_BOUND, "compute-bound (instruction-bound: far below both roofs, typical of "
                               f"scalar or unvectorized code); {numbers}", metrics, source)
        kind = d.MEMORY_BOUND if bw >= fl else d.COMPUTE_BOUND
        return d.Diagnosis(kind, f"{kind} (below roofline): {numbers}", metrics, source)
