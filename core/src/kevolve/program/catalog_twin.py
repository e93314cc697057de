"""A program that computes what one catalog op computes: the catalog's tuned recipes write it too.

A program lowers onto the conformance kernels, which are written for coverage: single/layer_norm as a program ran
at 0.22x eager on a lent H200, where the catalog's own Triton layer_norm runs at 2.2x
(bench/notes/programs_gpu.md, fifth batch). Where a module takes a catalog op's inputs, in its order, with its
shapes and dtypes, and its reference agrees with the op's on a corner of the module's own inputs, the template
synthesizer also offers the op's recipes (first: they are tuned for it), rendered for the catalog problem at the
module's sizes. The agreement proposes, it does not prove: the harness judges their kernels against the module
as any candidate. Finding a twin draws the module's inputs once in the search's process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kevolve.errors import ProblemError
from kevolve.harness import checks
from kevolve.problems.catalog import CatalogProblem, OpDef
from kevolve.problems.problem import Problem, dtype_name
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

#: distinct sizes given to an op's dims to find which input axis each one sizes
_PROBES = (37, 41, 43, 47, 53, 59, 61, 67)
#: the largest size of any dim where a module and its twin are compared
CORNER = 8

_twins: dict[str, CatalogProblem | None] = {}
_layouts: dict[tuple[str, torch.dtype], _Layout | None] = {}


def catalog_twin(problem: Problem, ops: list[OpDef]) -> CatalogProblem | None:
    """The catalog problem that computes what ``problem`` (a module) computes, at its sizes; None when no op
    does. Found once per process and problem: shapes first, then the two references on a corner of the module's
    own inputs (every size cut to at most :data:`CORNER`, so that a large problem costs little)."""
    key = problem.key()
    if key not in _twins:
        inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
        shaped = [twin for op in ops if (twin := _twin_by_shapes(problem, op, inputs)) is not None]
        _twins[key] = next((twin for twin in shaped if _agrees(problem, twin, inputs)), None)
    return _twins[key]



def _twin_by_shapes(problem: Problem, op: OpDef, inputs: list[torch.Tensor]) -> CatalogProblem | None:
    if op.output_specs is not None or dtype_name(problem.dtype) not in op.dtypes or len(op.inputs) != len(inputs):
        return None  # outputs sized by values: shapes alone do not pin the sizes
    layout = _layout(op, problem.dtype)
    if layout is None or tuple(t.dtype for t in inputs) != layout.dtypes:
        return None
    dims = layout.dims_of([tuple(t.shape) for t in inputs])
    if dims is None:
        return None
    try:
        return CatalogProblem(op, dims, dtype_name(problem.dtype))
    except ProblemError:
        return None


def _agrees(problem: Problem, twin: CatalogProblem, inputs: list[torch.Tensor]) -> bool:
    """The module's reference and the twin's give the same answer on the corner of the module's inputs where
    every dim is at most :data:`CORNER`."""
    layout = _layout(twin.op, problem.dtype)
    try:
        corner = CatalogProblem(twin.op, {d: min(v, CORNER) for d, v in twin.dims.items()}, dtype_name(problem.dtype))
        cut = [t[tuple(slice(0, s) for s in shape)].contiguous() for t, shape in zip(inputs, layout.shapes(corner.dims))]
        ours, theirs = problem.reference(cut), corner.reference(cut)
    except Exception:  # a module whose forward fixes its sizes (a view to a constant shape) is no twin's
        return False
    tol = problem.tolerance(problem.dtype)
    return len(ours) == len(theirs) and all(
        o.shape == t.shape and o.dtype == t.dtype and checks.compare(t, o, tol, 0) is None for o, t in zip(ours, theirs))


@dataclass(frozen=True)
class _Layout:
    """An op's inputs as shapes of its dims: each axis a dim's name or a size the op fixes."""

    axes: tuple[tuple[str | int, ...], ...]
    dtypes: tuple[torch.dtype, ...]

    def shapes(self, dims: dict[str, int]) -> list[tuple[int, ...]]:
        return [tuple(dims[a] if isinstance(a, str) else a for a in shape) for shape in self.axes]

    def dims_of(self, shapes: list[tuple[int, ...]]) -> dict[str, int] | None:
        """The dims that give these shapes, or None when none do."""
        if [len(s) for s in shapes] != [len(a) for a in self.axes]:
            return None
        dims: dict[str, int] = {}
        for shape, axes in zip(shapes, self.axes):
            for size, axis in zip(shape, axes):
                if isinstance(axis, str):
                    dims.setdefault(axis, size)
        return dims if self.shapes(dims) == [tuple(s) for s in shapes] else None


def _layout(op: OpDef, dtype: torch.dtype) -> _Layout | None:
    """The op's :class:`_Layout`, found by giving each dim a size of its own (once per op and dtype); None when
    its inputs' shapes do not follow from its dims alone."""
    key = (op.name, dtype)
    if key not in _layouts:
        _layouts[key] = _find_layout(op, dtype)
    return _layouts[key]


def _find_layout(op: OpDef, dtype: torch.dtype) -> _Layout | None:
    if len(op.dims) > len(_PROBES):
        return None
    probe = dict(zip(op.dims, _PROBES))
    try:
        inputs = CatalogProblem(op, probe, dtype_name(dtype)).make_inputs(probe, torch.Generator().manual_seed(0))
    except (ProblemError, RuntimeError, ValueError):
        return None
    names = {size: name for name, size in probe.items()}
    layout = _Layout(tuple(tuple(names.get(s, s) for s in t.shape) for t in inputs), tuple(t.dtype for t in inputs))
    return layout if set(names.values()) <= {a for axes in layout.axes for a in axes} else None


class TwinRecipe(Recipe):
    """A catalog recipe writing a module's kernel through the module's catalog twin."""

    families = ("custom",)

    def __init__(self, recipe: Recipe, twin: CatalogProblem) -> None:
        self.recipe, self.twin = recipe, twin
        self.name, self.language = recipe.name, recipe.language

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return self.recipe.space(self.twin, facts)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        return self.recipe.render(self.twin, params)


def twin_recipes(problem: Problem, recipes: list[Recipe], ops: list[OpDef]) -> list[Recipe]:
    """The catalog recipes that write ``problem``'s twin, if it has one (none for a problem that is not a
    module)."""
    if problem.family != "custom":
        return []
    twin = catalog_twin(problem, ops)
    if twin is None:
        return []
    return [TwinRecipe(r, twin) for r in recipes if r.supports(twin)]
