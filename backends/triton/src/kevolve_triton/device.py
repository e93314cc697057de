"""What a backend tells the Triton layer about its hardware: where to compile for, and how to read what the
compiled kernel uses. Everything else (recipes, toolchain, runners, cost model) is shared."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from kevolve.target import MachineFacts, TargetSpec


class TritonDevice(ABC):
    """Mixed into a :class:`kevolve.backend.Backend` whose targets run Triton kernels on a GPU."""

    #: resource counts where the smallest value over a kernel file's launches is the one that binds
    #: (occupancy and the per-unit limits behind it); the worst launch is reported on every count
    lowest_is_worst: tuple[str, ...] = ("occupancy", "programs_per_unit")

    @abstractmethod
    def gpu_target(self, target: TargetSpec) -> Any:
        """The ``triton.backends.compiler.GPUTarget`` to compile for, with or without the device present."""

    @abstractmethod
    def read_resources(self, compiled: Any, facts: MachineFacts) -> dict[str, float]:
        """Resource usage of one compiled kernel (``triton.compiler.CompiledKernel``): registers, spills,
        shared/local memory, and the theoretical occupancy that follows on this target, under the metric keys
        of :mod:`kevolve.diagnosis` where one exists. Also ``programs_per_unit``: how many programs (blocks,
        workgroups) one compute unit holds at once."""


def triton_facts(facts: MachineFacts) -> dict[str, Any]:
    """The ``[facts.extra.triton]`` table of a target spec (warp size, launch knobs and their choices)."""
    return dict(facts.extra.get("triton", {}))
