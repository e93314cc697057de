"""Targets: one concrete piece of hardware, described by machine facts a plugin ships as TOML.

The facts feed the roofline floor (implausibility check), the classifier and the synthesizer's context, so
they use one vendor-neutral shape: peak FLOP/s per dtype, bandwidth per memory level (fastest first) with the
level's capacity, and a count of parallel units.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    bandwidth_bytes_per_s: float
    capacity_bytes: float


@dataclass(frozen=True)
class MachineFacts:
    peak_flops: dict[str, float]
    memory: tuple[MemoryLevel, ...]
    parallel_units: int
    unit_name: str = "core"
    extra: dict[str, Any] = field(default_factory=dict)
    #: the smallest piece the memory moves (a GPU's sector, a CPU's cache line): a read of scattered elements
    #: costs whole granules, so the minimum bytes of a gather count each granule its picks touch. 1 where the
    #: spec does not say, which counts elements alone.
    memory_granule_bytes: int = 1

    def peak_flops_for(self, dtype: str) -> float:
        """Peak for a dtype; a dtype the spec does not list falls back to the fastest listed, which keeps the
        roofline floor conservative (lower), never stricter than the hardware."""
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]
        return max(self.peak_flops.values())

    def level_for(self, working_set_bytes: float, fill: float = 1.0) -> MemoryLevel:
        """The fastest memory level that holds the working set when filled to at most ``fill`` of its
        capacity. The roofline floor uses fill 1 (lenient: never stricter than the hardware); diagnosis uses
        a realistic fill, since a level filled to the brim keeps little of the data between calls."""
        for level in self.memory:
            if working_set_bytes <= level.capacity_bytes * fill:
                return level
        return self.memory[-1]


@dataclass(frozen=True)
class TargetSpec:
    name: str
    description: str
    aliases: tuple[str, ...]
    languages: tuple[str, ...]
    facts: MachineFacts
    family: str = ""

    def with_facts(self, facts: MachineFacts) -> TargetSpec:
        return replace(self, facts=facts)


def _facts_from_table(table: dict[str, Any]) -> MachineFacts:
    memory = tuple(
        MemoryLevel(
            name=level["name"],
            bandwidth_bytes_per_s=float(level["bandwidth_gbps"]) * 1e9,
            capacity_bytes=float(level["capacity_bytes"]),
        )
        for level in table.get("memory", [])
    )
    return MachineFacts(
        peak_flops={k: float(v) * 1e9 for k, v in table.get("peak_gflops", {}).items()},
        memory=memory,
        parallel_units=int(table.get("parallel_units", 1)),
        unit_name=str(table.get("unit_name", "core")),
        extra=dict(table.get("extra", {})),
        memory_granule_bytes=int(table.get("memory_granule_bytes", 1)),
    )


def load_target_spec(path: Path | str) -> TargetSpec:
    """Read a target's TOML spec. Units in the file are human ones (GB/s, GFLOP/s); in memory they are SI."""
    path = Path(path)
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    target = data["target"]
    return TargetSpec(
        name=target["name"],
        description=target.get("description", ""),
        aliases=tuple(target.get("aliases", [])),
        languages=tuple(target.get("languages", [])),
        family=target.get("family", ""),
        facts=_facts_from_table(data.get("facts", {})),
    )
