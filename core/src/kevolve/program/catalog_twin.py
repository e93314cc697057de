"""A program that computes what one catalog op computes: the catalog's tuned recipes write it too.

A program lowers onto the conformance kernels, which are written for coverage: single/layer_norm as a program ran
at 0.22x eager on a lent H200, where the catalog's own Triton layer_norm runs at 2.2x
(bench/notes/programs_gpu.md, fifth batch). Where a module takes a catalog op's inputs, in its order, with its
shapes and dtypes, and its reference agrees with the op's on a corner of the module's own inputs, the template
synthesizer also offers the op's recipes (first: they are tuned for it), rendered for the catalog problem at the
module's sizes. A module's tensor may have more leading axes than the op's (a layer norm over (batch, seq,
hidden), a ReLU over a matrix): they fold into the op's first axis where that axis is one of its dims, and the
kernel file is then a one-step program whose launcher views the module's tensors at the op's shapes (the
language's program form, as a lowered program's). The agreement proposes, it does not prove: the harness judges
their kernels against the module as any candidate. Finding a twin draws the module's inputs once in the search's
process.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kevolve.backend.toolchain import LanguageForm
from kevolve.conformance.kernel import KernelSpec
from kevolve.errors import ProblemError
from kevolve.harness import checks
from kevolve.problems.catalog import CatalogProblem, OpDef
from kevolve.problems.problem import Problem, dtype_name
from kevolve.program.lower import INPUT, OUTPUT, Buffer, Program, Step, View
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

#: distinct sizes given to an op's dims to find which input axis each one sizes
_PROBES = (37, 41, 43, 47, 53, 59, 61, 67)
#: the largest size of any dim where a module and its twin are compared
CORNER = 8

_twins: dict[str, Twin | None] = {}
_layouts: dict[tuple[str, torch.dtype], _Layout | None] = {}

Specs = tuple[tuple[tuple[int, ...], str], ...]


@dataclass(frozen=True)
class Twin:
    """A module's catalog twin: the op at the module's sizes, and the module's tensors beside the op's."""

    problem: CatalogProblem
    #: (shape, dtype name) of the module's inputs and outputs, and of the op's
    inputs: Specs
    outputs: Specs
    op_inputs: Specs
    op_outputs: Specs

    @property
    def reshaped(self) -> bool:
        """Whether a tensor of the module has another shape than the op's (the kernel then needs a view)."""
        return (self.inputs, self.outputs) != (self.op_inputs, self.op_outputs)

    def program(self, name: str) -> Program:
        """The op's kernel as a one-step program over the module's tensors, viewed at the op's shapes."""
        buffers = {f"in{i}": Buffer(INPUT, dt, math.prod(shape), i) for i, (shape, dt) in enumerate(self.inputs)}
        buffers |= {f"out{i}": Buffer(OUTPUT, dt, math.prod(shape), i) for i, (shape, dt) in enumerate(self.outputs)}
        op = self.problem.op
        kernel = KernelSpec(op.name, tuple(zip(op.inputs, (dt for _, dt in self.op_inputs))),
                            tuple(dt for _, dt in self.op_outputs), None, "catalog", attrs=dict(self.problem.dims))
        step = Step(op.name, kernel, [_view(f"in{i}", spec) for i, spec in enumerate(self.op_inputs)],
                    [_view(f"out{i}", spec) for i, spec in enumerate(self.op_outputs)])
        return Program(name, [(s, dt) for s, dt in self.inputs], [(s, dt) for s, dt in self.outputs], buffers, [step])


def _view(buffer: str, spec: tuple[tuple[int, ...], str]) -> View:
    shape, dt = spec
    strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    return View(buffer, dt, shape, strides)


def catalog_twin(problem: Problem, ops: list[OpDef]) -> Twin | None:
    """The catalog op that computes what ``problem`` (a module) computes, at its sizes; None when no op does.
    Found once per process and problem: shapes first, then the two references on a corner of the module's own
    inputs (every size cut to at most :data:`CORNER`, so that a large problem costs little)."""
    key = problem.key()
    if key not in _twins:
        inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
        shaped = [twin for op in ops if (twin := _twin_by_shapes(problem, op, inputs)) is not None]
        found = next((twin for twin in shaped if _agrees(problem, twin, inputs)), None)
        _twins[key] = None if found is None else _described(problem, found, inputs)
    return _twins[key]


def _specs(specs: list[tuple[tuple[int, ...], torch.dtype]]) -> Specs:
    return tuple((tuple(shape), dtype_name(dtype)) for shape, dtype in specs)


def _described(problem: Problem, twin: CatalogProblem, inputs: list[torch.Tensor]) -> Twin:
    shapes = _layout(twin.op, problem.dtype).shapes(twin.dims)
    op_inputs = [torch.empty(shape, dtype=t.dtype, device="meta") for shape, t in zip(shapes, inputs)]
    return Twin(twin, _specs([(t.shape, t.dtype) for t in inputs]), _specs(problem.output_specs(inputs)),
                _specs([(t.shape, t.dtype) for t in op_inputs]), _specs(twin.output_specs(op_inputs)))


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
    """The module's reference and the twin's give the same answer on a corner of the module's inputs: every axis
    that sizes a dim at most :data:`CORNER` long or, where the module fixes some sizes (a layer norm's
    ``normalized_shape``), only the axes of the first input's first dim (the op's tensors viewing the module's)."""
    layout = _layout(twin.op, problem.dtype)
    first = layout.axes[0][0] if layout.axes[0] and isinstance(layout.axes[0][0], str) else None
    for cut_dims in (set(twin.dims), {first} if first else set()):
        cut = [t[tuple(slice(0, n) for n in layout.corner(i, tuple(t.shape), cut_dims))].contiguous()
               for i, t in enumerate(inputs)]
        dims = layout.dims_of([tuple(t.shape) for t in cut])
        if dims is None:
            return False
        try:
            corner = CatalogProblem(twin.op, dims, dtype_name(problem.dtype))
            ours = problem.reference(cut)
            theirs = corner.reference([t.reshape(shape) for t, shape in zip(cut, layout.shapes(dims))])
        except Exception:  # a module whose forward fixes its sizes: the next corner cuts fewer of them
            continue
        tol = problem.tolerance(problem.dtype)
        return len(ours) == len(theirs) and all(
            o.numel() == t.numel() and o.dtype == t.dtype and checks.compare(t.reshape(o.shape), o, tol, 0) is None
            for o, t in zip(ours, theirs))
    return False


@dataclass(frozen=True)
class _Layout:
    """An op's inputs as shapes of its dims: each axis a dim's name or a size the op fixes."""

    axes: tuple[tuple[str | int, ...], ...]
    dtypes: tuple[torch.dtype, ...]

    def shapes(self, dims: dict[str, int]) -> list[tuple[int, ...]]:
        return [tuple(dims[a] if isinstance(a, str) else a for a in shape) for shape in self.axes]

    def dims_of(self, shapes: list[tuple[int, ...]]) -> dict[str, int] | None:
        """The dims that give these shapes, each one's extra leading axes folded into the first, or None when
        none do."""
        if len(shapes) != len(self.axes):
            return None
        dims: dict[str, int] = {}
        folded = []
        for shape, axes in zip(shapes, self.axes):
            extra = len(shape) - len(axes)
            if extra < 0 or (extra and not isinstance(axes[0], str)):
                return None
            folded.append((math.prod(shape[: extra + 1]), *shape[extra + 1:]))
            for size, axis in zip(folded[-1], axes):
                if isinstance(axis, str):
                    dims.setdefault(axis, size)
        return dims if self.shapes(dims) == folded else None

    def corner(self, index: int, shape: tuple[int, ...], dims: set[str]) -> tuple[int, ...]:
        """Input ``index``'s ``shape`` with every axis that sizes one of ``dims`` (a folded one too) cut to
        :data:`CORNER`."""
        axes = self.axes[index]
        kinds = [axes[0]] * max(0, len(shape) - len(axes)) + list(axes)
        return tuple(min(n, CORNER) if kind in dims else n for n, kind in zip(shape, kinds))


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
    """A catalog recipe writing a module's kernel through the module's catalog twin; where the module's tensors
    have other shapes than the op's, inside a one-step program that views them (``assemble``: the language's)."""

    families = ("custom",)

    def __init__(self, recipe: Recipe, twin: Twin, assemble: Callable[[Program, list[str]], str] | None) -> None:
        self.recipe, self.twin, self.assemble = recipe, twin, assemble
        self.name, self.language = recipe.name, recipe.language

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return self.recipe.space(self.twin.problem, facts)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        source = self.recipe.render(self.twin.problem, params)
        if not self.twin.reshaped:
            return source
        assert self.assemble is not None  # twin_recipes offers a reshaped twin only where a program is assembled
        return self.assemble(self.twin.program(problem.name), [source])


def twin_recipes(problem: Problem, recipes: list[Recipe], ops: list[OpDef],
                 forms: dict[str, LanguageForm]) -> list[Recipe]:
    """The catalog recipes that write ``problem``'s twin, if it has one (none for a problem that is not a
    module), in the languages that can view the module's tensors where they need it."""
    if problem.family != "custom":
        return []
    twin = catalog_twin(problem, ops)
    if twin is None:
        return []
    found = []
    for recipe in recipes:
        assemble = forms[recipe.language].assemble_program if recipe.language in forms else None
        if recipe.supports(twin.problem) and (assemble is not None or not twin.reshaped):
            found.append(TwinRecipe(recipe, twin, assemble))
    return found
