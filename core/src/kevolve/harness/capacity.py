"""Whether a problem's tensors fit where they will live, checked before any worker starts.

A shape like ``rows=10**12`` would otherwise start a session whose every candidate fails to allocate (or is
killed at the worker's memory cap) and blame the kernels. The inputs and outputs at the timing shape are drawn
on the meta device (sizes without memory) and compared with the memory the target has (its spec's largest
memory level), the host's (inputs are drawn there first) and the cap a worker may use.
"""

from __future__ import annotations

import os

import torch

from kevolve.errors import ProblemError
from kevolve.harness.pipeline import HarnessConfig
from kevolve.problems.problem import Problem
from kevolve.registry import RegisteredTarget


def tensor_bytes(problem: Problem) -> int | None:
    """Bytes of the inputs and outputs at the timing shape; None where sizes depend on drawn values (offsets
    whose total decides a length), which meta tensors cannot tell."""
    try:
        with torch.device("meta"):
            inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
        outputs = problem.output_specs(inputs)
    except Exception:  # whatever a problem's own code does on meta tensors: the worker's memory cap still guards
        return None
    return (sum(t.numel() * t.element_size() for t in inputs)
            + sum(torch.Size(shape).numel() * dtype.itemsize for shape, dtype in outputs))


def memory_limits(registered: RegisteredTarget, harness: HarnessConfig) -> list[tuple[float, str]]:
    """(bytes, where) for each memory the tensors must fit in."""
    limits = [(float(harness.memory_limit_bytes), "a worker may use {} (HarnessConfig.memory_limit_bytes)")]
    try:
        limits.append((float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")), "this host has {}"))
    except (ValueError, OSError):
        pass
    levels = registered.spec.facts.memory
    if levels:
        limits.append((levels[-1].capacity_bytes, f"{registered.spec.name}'s {levels[-1].name} holds {{}}"))
    return limits


def check_fits(problem: Problem, registered: RegisteredTarget, harness: HarnessConfig) -> None:
    needed = tensor_bytes(problem)
    if needed is None:
        return
    limit, where = min(memory_limits(registered, harness))
    if needed > limit:
        raise ProblemError(f"{problem.describe()} needs {needed / 2**30:,.1f} GiB of memory for its inputs and "
                           f"outputs, but {where.format(f'{limit / 2**30:,.1f} GiB')}; choose smaller dims "
                           "(--shape NAME=INT, dims=)")
