"""The vendor-neutral diagnosis schema: one class of bottleneck plus the numbers behind it.

Profilers fill :data:`Metrics` with the keys below (any subset; a backend may add its own); classifiers turn
metrics into a :class:`Diagnosis`. The search and the synthesizers act on ``kind``; people read ``summary``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"
OCCUPANCY_LIMITED = "occupancy-limited"
LATENCY_BOUND = "latency-bound"
SPILL_BOUND = "spill-bound"
UNKNOWN = "unknown"
KINDS = (MEMORY_BOUND, COMPUTE_BOUND, OCCUPANCY_LIMITED, LATENCY_BOUND, SPILL_BOUND)

Metrics = dict[str, float | str]

# Metric keys every profiler may report (vendor-neutral).
TIME_S = "time_s"                          # median seconds per call
FLOPS = "flops"                            # useful floating-point operations per call
BYTES = "bytes"                            # minimum bytes moved per call
ACHIEVED_FLOPS = "achieved_flops_per_s"
ACHIEVED_BANDWIDTH = "achieved_bytes_per_s"
FLOPS_FRACTION = "flops_fraction"          # of the target's peak for the dtype
BANDWIDTH_FRACTION = "bandwidth_fraction"  # of the memory level that holds the working set
MEMORY_LEVEL = "memory_level"
FLOOR_S = "roofline_floor_s"
PARALLEL_UNITS_USED = "parallel_units_used"
PARALLEL_UNITS = "parallel_units"
OCCUPANCY = "occupancy"                    # achieved or theoretical, 0..1
SPILL_BYTES = "spill_bytes"
REGISTERS = "registers_per_thread"


@dataclass
class Diagnosis:
    kind: str
    summary: str
    metrics: Metrics = field(default_factory=dict)
    source: str = ""  # which profiler produced the metrics ("roofline", "perf", "ncu", ...)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Diagnosis | None:
        return cls(**data) if data else None
