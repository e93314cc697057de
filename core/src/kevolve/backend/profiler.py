"""Profiler adapter: turns a timed kernel into vendor-neutral metrics (:mod:`kevolve.diagnosis`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kevolve import diagnosis as d
from kevolve.target import MachineFacts, MemoryLevel


@dataclass
class ProfileRequest:
    """What a profiler gets: the kernel as a thunk on fixed inputs, its measured median, and the problem's
    roofline counts at the timing shape."""

    run: Callable[[], object]
    time_s: float
    flops: float
    bytes: float
    dtype: str
    facts: MachineFacts
    #: schedule parameters of the candidate (e.g. threads), for profilers that report parallelism from them
    parameters: dict
    #: resource usage reported by the toolchain (registers, spills, stack bytes, ...)
    resources: dict
    #: for profilers that run the kernel in a process of their own (e.g. under Nsight Compute): the built
    #: artifact, the problem's spec and the plugin bootstrap that rebuild the same call there
    #: the runner evicted the caches before each timed call: judge bandwidth against the outermost memory
    cold_cache: bool = False
    artifact: str = ""
    #: the artifact's language (one target may build several, each loaded its own way)
    language: str = ""
    problem_spec: dict[str, Any] = field(default_factory=dict)
    bootstrap: dict[str, Any] = field(default_factory=dict)


class Profiler(ABC):
    name: str = ""
    #: a profile holds the device for seconds beyond the kernel's own runs (a profiling process, replayed
    #: passes): a search asks for it only on kernels that reach its best (HarnessConfig.counters_from) and
    #: diagnoses the rest from the roofline
    costly: bool = False

    def available(self) -> tuple[bool, str]:
        return True, ""

    @abstractmethod
    def profile(self, request: ProfileRequest) -> d.Metrics:
        """Metrics for one kernel."""


def serving_level(facts: MachineFacts, level: MemoryLevel, achieved_bytes_per_s: float) -> MemoryLevel:
    """The memory level a kernel's traffic came from: ``level`` (from the working set's size), unless the kernel
    moved bytes faster than ``level`` can serve them. Then a faster level served it (the working set stayed in a
    cache), and it is judged against the slowest level fast enough: a roof is never exceeded, so "257% of DRAM"
    cannot be printed."""
    if achieved_bytes_per_s <= level.bandwidth_bytes_per_s:
        return level
    fast_enough = [m for m in facts.memory if m.bandwidth_bytes_per_s >= achieved_bytes_per_s]
    if fast_enough:
        return min(fast_enough, key=lambda m: m.bandwidth_bytes_per_s)
    return max(facts.memory, key=lambda m: m.bandwidth_bytes_per_s)


def roofline_metrics(request: ProfileRequest) -> d.Metrics:
    """Where the kernel sits against the target's roofline, from its time and the problem's counts alone."""
    facts = request.facts
    level = facts.memory[-1] if request.cold_cache else facts.level_for(request.bytes, fill=0.5)
    peak = facts.peak_flops_for(request.dtype)
    time_s = max(request.time_s, 1e-12)
    level = serving_level(facts, level, request.bytes / time_s)
    metrics: d.Metrics = {
        d.TIME_S: request.time_s,
        d.FLOPS: request.flops,
        d.BYTES: request.bytes,
        d.ACHIEVED_FLOPS: request.flops / time_s,
        d.ACHIEVED_BANDWIDTH: request.bytes / time_s,
        d.FLOPS_FRACTION: request.flops / time_s / peak,
        d.BANDWIDTH_FRACTION: min(1.0, request.bytes / time_s / level.bandwidth_bytes_per_s),
        d.MEMORY_LEVEL: level.name,
        d.FLOOR_S: roofline_floor(request.flops, request.bytes, request.dtype, facts),
        d.PARALLEL_UNITS: facts.parallel_units,
    }
    # what the compiler reported (registers, spills, occupancy and the vendor's own counts) goes to the
    # classifier too; measured metrics above keep their keys
    for key, value in request.resources.items():
        if isinstance(value, (int, float)) and key not in metrics:
            metrics[key] = value
    return metrics


def roofline_floor(flops: float, nbytes: float, dtype: str, facts: MachineFacts) -> float:
    """The least time any kernel could take: all FLOPs at peak, or all bytes moved, whichever is slower. For
    the bytes the assumption is the most lenient one: as much of the working set as the largest cache holds
    stays there between calls (served at the fastest level that holds that much), only the rest streams from
    the outermost level. A floor must never be stricter than the hardware."""
    outer = facts.memory[-1]
    cached = min(nbytes, facts.memory[-2].capacity_bytes) if len(facts.memory) > 1 else 0.0
    memory_s = (nbytes - cached) / outer.bandwidth_bytes_per_s
    if cached:
        memory_s += cached / facts.level_for(cached).bandwidth_bytes_per_s
    return max(memory_s, flops / facts.peak_flops_for(dtype))


class RooflineProfiler(Profiler):
    """Works everywhere: no counters, only time against the roofline."""

    name = "roofline"

    def profile(self, request: ProfileRequest) -> d.Metrics:
        return roofline_metrics(request)
