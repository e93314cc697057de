"""Helpers for the mtia_sim tests (a module of its own, not conftest, so its name is unique on sys.path)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from kevolve.backend.runner import load_kernel_module
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve_mtia_sim import engine
from kevolve_mtia_sim.chip import Chip
from kevolve_mtia_sim.engine import PROGRAM_FIELDS
from kevolve_mtia_sim.simulate import trace_kernel

TARGET = "mtia_sim"


def chip(target: str = TARGET) -> Chip:
    return Chip.from_facts(get_manager().target(target).spec.facts)


def program(**counts: int) -> list[int]:
    unknown = set(counts) - set(PROGRAM_FIELDS)
    assert not unknown, unknown
    return [int(counts.get(name, 0)) for name in PROGRAM_FIELDS]


def account(programs: list[list[int]], field: str) -> int:
    return sum(p[PROGRAM_FIELDS.index(field)] for p in programs)


def load_source(source: str):
    """``kernel(inputs, outputs)`` of a Triton kernel file's text (jit functions need a file for their source)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(source)
    try:
        _, kernel = load_kernel_module(fh.name)
    finally:
        Path(fh.name).unlink()
    return kernel


def catalog_problem(op: str, dims: dict[str, int] | None = None, dtype: str | None = None) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=dims, dtype=dtype)


def trace(source: str, inputs: list[torch.Tensor], outputs: list[torch.Tensor], target: str = TARGET):
    """Run a kernel file through the simulator's tracer: (launches, grids, engine totals)."""
    c = chip(target)
    launches, grids = trace_kernel(load_source(source), inputs, outputs, c)
    return launches, grids, engine.simulate(c.params, launches)
