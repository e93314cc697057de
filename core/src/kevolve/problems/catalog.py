"""The problem catalog: named ops with a reference, an input generator, shapes, and a roofline model.

Ops are registered through the same hook as third-party ones (``kevolve_register_ops``, into a
:class:`kevolve.registry.OpRegistry`); core's own ops live in :mod:`kevolve.problems.ops` and are registered by
core's built-in plugin.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kevolve.errors import ProblemError
from kevolve.problems.attrs import AttrRule, check_attrs
from kevolve.problems.problem import DTYPES, Dims, Problem, Tolerance, canonical_dtype, dtype_name

InputMaker = Callable[[Dims, torch.dtype, torch.Generator, dict[str, Any]], list[torch.Tensor]]
Reference = Callable[[list[torch.Tensor], dict[str, Any]], list[torch.Tensor]]


@dataclass(frozen=True)
class OpDef:
    """A catalog op. ``dims`` is the default timing shape; ``check_dims`` are small, awkward shapes that catch
    off-by-one and tail handling, checked in addition to the timing shape."""

    name: str
    family: str
    description: str
    inputs: tuple[str, ...]
    dims: Dims
    check_dims: tuple[Dims, ...]
    make_inputs: InputMaker
    reference: Reference
    dtypes: tuple[str, ...] = ("float32", "bfloat16")
    #: attribute defaults; each default's type is the attribute's type
    attrs: dict[str, Any] = field(default_factory=dict)
    #: ranges or choices of attributes whose type alone admits wrong values (a table size of 0, a k of -1)
    attr_rules: dict[str, AttrRule] = field(default_factory=dict)
    flops: Callable[[Dims, dict[str, Any]], float] = lambda dims, attrs: 0.0
    #: ``(dims, inputs, outputs, granule) -> bytes``, see Problem.bytes_moved
    bytes_moved: Callable[[Dims, list[torch.Tensor], list[torch.Tensor], int], float] | None = None
    #: multiplies the dtype's base tolerance (e.g. long reductions accumulate more rounding)
    tolerance_scale: Callable[[Dims], float] = lambda dims: 1.0
    aliases: tuple[str, ...] = ()
    #: output shapes for ops whose output size depends on input values (default: derived from the reference):
    #: ``(inputs, attrs, read) -> [(shape, dtype), ...]`` where ``read`` turns a 0-d tensor into a size. Its source
    #: is copied into saved packages, so it may use torch and its arguments only.
    output_specs: Callable[[list[torch.Tensor], dict[str, Any], Callable[[torch.Tensor], Any]],
                           list[tuple[tuple[int, ...], torch.dtype]]] | None = None
    #: inputs holding independent values (see Problem.varied_inputs); None: the floating-point ones
    varied: tuple[str, ...] | None = None


#: an op by name or alias, e.g. the plugin manager's ``ops.get`` (:class:`kevolve.registry.OpRegistry`)
OpLookup = Callable[[str], OpDef]


class CatalogProblem(Problem):
    def __init__(self, op: OpDef, dims: Dims | None = None, dtype: str | None = None,
                 attrs: dict[str, Any] | None = None) -> None:
        self.op = op
        self.name = op.name
        self.family = op.family
        unknown = set(dims or {}) - set(op.dims)
        if unknown:
            raise ProblemError(f"{op.name} has dims {sorted(op.dims)}; got unknown {sorted(unknown)}")
        self._dims = {**op.dims, **(dims or {})}
        bad = {k: v for k, v in self._dims.items() if not isinstance(v, int) or v <= 0}
        if bad:
            raise ProblemError(f"{op.name}: dims must be positive integers, got {bad}")
        dtype = canonical_dtype(dtype or op.dtypes[0])
        if dtype not in op.dtypes:
            raise ProblemError(f"{op.name} supports dtypes {', '.join(op.dtypes)}; got {dtype}")
        self._dtype = DTYPES[dtype]
        self._attrs = check_attrs(op.name, op.attrs, op.attr_rules, attrs or {})

    def check_dims(self) -> list[Dims]:
        checks = [{**self._dims, **d} for d in self.op.check_dims]
        return checks + [self.dims]

    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        return self.op.make_inputs(dims, self._dtype, gen, self._attrs)

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return self.op.reference(inputs, self._attrs)

    def output_specs(self, inputs: list[torch.Tensor], read: Callable[[torch.Tensor], Any] = int
                     ) -> list[tuple[tuple[int, ...], torch.dtype]]:
        if self.op.output_specs is not None:
            return self.op.output_specs(inputs, self._attrs, read)
        return super().output_specs(inputs)

    def sizing_source(self) -> str | None:
        if self.op.output_specs is None:
            return None
        function = self.op.output_specs
        return "\n".join(["import torch", "", "VALUE_DEPENDENT = True", f"ATTRS = {self._attrs!r}", "", "",
                          textwrap.dedent(inspect.getsource(function)).rstrip(), "", "",
                          "def output_specs(inputs, read=int):", f"    return {function.__name__}(inputs, ATTRS, read)",
                          ""])

    def varied_inputs(self, inputs: list[torch.Tensor]) -> list[int]:
        if self.op.varied is None:
            return super().varied_inputs(inputs)
        return [self.op.inputs.index(name) for name in self.op.varied]

    def input_names(self, count: int) -> list[str]:
        return list(self.op.inputs) if len(self.op.inputs) == count else super().input_names(count)

    def flops(self, dims: Dims) -> float:
        return float(self.op.flops(dims, self._attrs))

    def bytes_moved(self, dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                    granule: int = 1) -> float:
        if self.op.bytes_moved is not None:
            return float(self.op.bytes_moved(dims, inputs, outputs, granule))
        return super().bytes_moved(dims, inputs, outputs, granule)

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        return Tolerance.for_dtype(dtype, self.op.tolerance_scale(self._dims))

    def reference_source(self) -> str:
        try:
            return inspect.getsource(self.op.reference)
        except (OSError, TypeError):
            return ""

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "catalog", "op": self.op.name, "dims": self.dims, "dtype": dtype_name(self._dtype),
                "attrs": self.attrs}

    @classmethod
    def from_spec(cls, spec: dict[str, Any], ops: OpLookup) -> CatalogProblem:
        """The problem :meth:`to_spec` described, its op found by ``ops`` (the problem knows no plugin manager)."""
        return cls(ops(spec["op"]), spec.get("dims"), spec.get("dtype"), spec.get("attrs"))


def parse_dims(items: Sequence[str]) -> Dims:
    """``["rows=4096", "cols=1024"]`` -> dims, with an error that shows the expected form."""
    dims: Dims = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise ProblemError(f"bad shape {item!r}: write NAME=INT, e.g. rows=4096")
        dims[name.strip()] = int(value)
    return dims
