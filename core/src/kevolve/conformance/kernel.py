"""What a backend's recipe is asked to write for one conformance kernel: a :class:`KernelSpec`, carried by a
:class:`ConformanceProblem` (family ``aten_pointwise``) so that it goes through the same recipe interface as the
catalog's problems."""

from __future__ import annotations

import json
import os
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kevolve.conformance.spec import EXPRESSION_LAYOUTS
from kevolve.problems.problem import DTYPES, Dims, Problem, dtype_name
from kevolve.synthesis.expr import Expr

#: the family recipes register for to write conformance kernels
FAMILY = "aten_pointwise"


@dataclass(frozen=True)
class KernelSpec:
    """One kernel for one set of (dtypes, attributes) of an operator.

    ``inputs``: (variable name, dtype name) in the order the kernel receives them; ``outputs``: the dtype name of
    each output, in the op's order. ``layout`` is the kind of kernel (:class:`~kevolve.conformance.spec.OpSpec`).
    The expression layouts compute ``out = expr(inputs...)`` elementwise: ``same`` (each input has the output's
    number of elements, flat loop), ``broadcast`` (each input has the output's rank and broadcasts to it, NumPy
    rules), ``halves`` (one input split along ``dim`` into ``a`` = first half and ``b`` = second half; the output
    has the half size along ``dim``). Other layouts are written from ``op`` and ``attrs``; ``expr`` is then the
    table's optional element expression (None when it has none)."""

    op: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[str, ...]
    expr: Expr | None
    layout: str = "same"
    dim: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def out_dtype(self) -> str:
        return self.outputs[0]

    def all_dtypes_in(self, dtypes: Container[str]) -> bool:
        """Whether every input and output is of one of ``dtypes`` (the element types a recipe has code for)."""
        return all(d in dtypes for _, d in self.inputs) and all(d in dtypes for d in self.outputs)

    def describe(self) -> str:
        args = ", ".join(f"{n}: {d}" for n, d in self.inputs)
        attrs = json.dumps(self.attrs, sort_keys=True, default=str)
        return f"{self.op}({args}) -> {', '.join(self.outputs)}, layout {self.layout}, attrs {attrs}"


def kernel_spec(case: Any) -> KernelSpec:
    """The kernel a bound sample (a :class:`kevolve.conformance.samples.Case`) asks for: its table entry's layout
    and expression, its tensors' dtypes, its attributes."""
    spec = case.spec
    assert spec is not None, "a bound sample carries its table entry"
    in_dtypes = [dtype_name(t.dtype) for t in case.inputs]
    if spec.layout == "halves":
        inputs = tuple((n, in_dtypes[0]) for n in spec.tensor_names(case.attrs))
    elif spec.layout in EXPRESSION_LAYOUTS:
        inputs = tuple(zip(spec.tensor_names(case.attrs), in_dtypes))
    else:  # positional: in0, in1, ... in the order the sample bound them
        inputs = tuple((f"in{i}", d) for i, d in enumerate(in_dtypes))
    outputs = tuple(dtype_name(t.dtype) for t in case.expected)
    dim = int(case.attrs["dim"]) if spec.layout == "halves" else 0
    return KernelSpec(spec.name, inputs, outputs, spec.expression(case.attrs), spec.layout, dim, dict(case.attrs))


def conformance_kernel(problem: Problem, layouts: Container[str]) -> KernelSpec | None:
    """The kernel a conformance problem asks for, when it is of one of ``layouts``; None for any other problem.
    Every conformance recipe's ``supports`` starts here and adds the element types it has code for."""
    kernel = getattr(problem, "kernel", None)
    if problem.family != FAMILY or kernel is None or kernel.layout not in layouts:
        return None
    return kernel


class ConformanceProblem(Problem):
    """A conformance kernel as a problem: recipes read :attr:`kernel`; inputs come from OpInfo samples.

    With an ``example`` (a file holding the kernel spec, one sample's inputs and its outputs' shapes and dtypes,
    written by :meth:`save_example`) the problem stands for that call: a toolchain that compiles ahead of time
    captures the kernel's launches on it, in a process of its own (:meth:`from_spec` reads the file back).
    Without one, :meth:`make_inputs` draws a small random case so the generic tools still work."""

    family = FAMILY

    def __init__(self, kernel: KernelSpec, example: str | None = None) -> None:
        self.kernel = kernel
        self.name = kernel.op
        self.example = example
        self._dtype = DTYPES.get(kernel.inputs[0][1], torch.float32) if kernel.inputs else torch.float32
        self._dims = {"n": 1024}
        self._attrs = dict(kernel.attrs)

    @classmethod
    def save_example(cls, kernel: KernelSpec, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                     path: Path) -> ConformanceProblem:
        partial = path.with_name(f".{path.name}.{os.getpid()}")  # concurrent runs never read a half-written file
        torch.save({"kernel": kernel, "inputs": inputs,
                    "outputs": [(tuple(o.shape), o.dtype) for o in outputs]}, partial)
        os.replace(partial, path)
        return cls(kernel, str(path))

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ConformanceProblem:
        if not spec.get("example"):
            raise ValueError("a conformance problem is rebuilt only from its saved example")
        return cls(torch.load(spec["example"], weights_only=False)["kernel"], spec["example"])

    def _saved(self) -> dict[str, Any]:
        return torch.load(self.example, weights_only=False)

    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        if self.example:
            return [t.clone() for t in self._saved()["inputs"]]
        return [torch.randn(dims["n"], generator=gen).to(DTYPES.get(d, torch.float32)) for _, d in self.kernel.inputs]

    def output_specs(self, inputs: list[torch.Tensor], read: Any = int) -> list[tuple[tuple[int, ...], torch.dtype]]:
        if self.example:
            return [tuple(o) for o in self._saved()["outputs"]]
        return super().output_specs(inputs)

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        raise NotImplementedError("conformance kernels are judged against OpInfo samples (kevolve.conformance)")

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "conformance", "op": self.kernel.op, "kernel": self.kernel.describe(),
                "example": self.example}

    def describe(self) -> str:
        return f"conformance {self.kernel.describe()}"
