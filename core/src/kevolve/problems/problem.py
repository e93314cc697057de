"""Problems: what to optimize, with everything the harness needs to judge a kernel for it.

A problem knows its reference, how to draw fresh inputs at several shapes, its tolerance policy and its FLOP
and byte counts (the roofline floor). It also serialises to a small spec so an isolated worker process can
rebuild it: problems cross process boundaries by description, never by pickled closures.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

Dims = dict[str, int]

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
}
DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16",
                 "fp64": "float64", "double": "float64", "float": "float32"}


def dtype_name(dtype: torch.dtype) -> str:
    for name, value in DTYPES.items():
        if value == dtype:
            return name
    return str(dtype).removeprefix("torch.")


def canonical_dtype(name: str) -> str:
    name = DTYPE_ALIASES.get(name.lower(), name.lower())
    if name not in DTYPES:
        from kevolve.errors import ProblemError

        raise ProblemError(f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}")
    return name


@dataclass(frozen=True)
class Tolerance:
    """Tolerance policy: |out - ref| <= atol + rtol * |ref|, where atol is scaled by the reference's magnitude
    (max |ref| over finite values, at least 1) so large-valued outputs are not judged by a tiny absolute bound
    and tiny ones not by a loose one."""

    rtol: float
    atol: float

    @staticmethod
    def for_dtype(dtype: torch.dtype, scale: float = 1.0) -> Tolerance:
        base = {
            torch.float64: (1e-9, 1e-9),
            torch.float32: (1e-4, 1e-5),
            torch.float16: (2e-3, 1e-3),
            torch.bfloat16: (1.6e-2, 8e-3),
        }.get(dtype, (0.0, 0.0))
        return Tolerance(rtol=base[0] * scale, atol=base[1] * scale)


class Problem(ABC):
    """What the harness and synthesizers need to know about one problem instance."""

    #: op family, used to pick recipes and retrieve knowledge ("pointwise", "row_norm", ..., "custom")
    family: str = "custom"
    #: short name for display and store keys
    name: str = "problem"
    # set by subclasses; exposed read-only (as copies) below
    _dims: Dims = {}
    _dtype: torch.dtype = torch.float32
    _attrs: dict[str, Any] = {}

    @property
    def dims(self) -> Dims:
        """The timing shape: the production-like size the speedup is measured at."""
        return dict(self._dims)

    @property
    def dtype(self) -> torch.dtype:
        """The data type of the problem's floating-point (or, for integer ops, integer) tensors."""
        return self._dtype

    @property
    def attrs(self) -> dict[str, Any]:
        """The op's attributes (``dim``, ``eps``, ...): constants of the kernel, part of the store key."""
        return dict(self._attrs)

    def check_dims(self) -> list[Dims]:
        """Shapes for correctness checks: at least two, including awkward sizes and the timing shape."""
        return [self.dims]

    @abstractmethod
    def make_inputs(self, dims: Dims, gen: torch.Generator) -> list[torch.Tensor]:
        """Fresh random inputs; every call draws new values from ``gen``.

        :param dims: the sizes to draw at (:attr:`dims` or one of :meth:`check_dims`)
        :param gen: the generator the values come from (the harness seeds it)
        """

    @abstractmethod
    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The PyTorch reference: the truth a kernel is judged by, and the eager baseline it is timed against.

        :param inputs: tensors as :meth:`make_inputs` draws them (meta tensors when only shapes are wanted)
        """

    def extra_inputs(self) -> list[torch.Tensor]:
        """Constant tensors appended to the caller's inputs (e.g. a module's weights), already part of what
        ``make_inputs`` returns."""
        return []

    def output_specs(self, inputs: list[torch.Tensor], read: Callable[[torch.Tensor], Any] = int
                     ) -> list[tuple[tuple[int, ...], torch.dtype]]:
        """Shapes and dtypes of the outputs for these inputs, computed on the host without running the op:
        by default the reference is traced on meta tensors. Ops whose output size depends on input values
        override this and :meth:`sizing_source`.

        :param inputs: the call's inputs (only shapes and dtypes are read, unless sizes depend on values)
        :param read: turns a 0-d tensor a value-dependent op computes into a size (``int``; a symbolic size when
            traced)
        """
        meta = [torch.empty(t.shape, dtype=t.dtype, device="meta") for t in inputs]
        return [(tuple(o.shape), o.dtype) for o in self.reference(meta)]

    def sizing_source(self) -> str | None:
        """For outputs whose sizes depend on input values: the source of a module, needing torch only, that
        defines ``VALUE_DEPENDENT = True`` and ``output_specs(inputs, read=int)``. Delivered ops run it on every
        call (and saved packages carry it). None: sizes follow from the inputs' sizes and are derived from the
        reference (:mod:`kevolve.delivery.shapes`)."""
        return None

    @property
    def value_sized(self) -> bool:
        """Whether an output's size depends on input values: a call then reads the device to size it (so its op
        cannot be captured in a CUDA graph, is never replayed, and is timed by the host's clock)."""
        return self.sizing_source() is not None

    def varied_inputs(self, inputs: list[torch.Tensor]) -> list[int]:
        """Which of the caller's inputs hold independent values, so that copying one of their elements over
        another leaves the inputs valid: the harness does so between timed calls, so that no call sees an input
        it has seen before (:mod:`kevolve.harness.variation`). By default the floating-point ones; a problem
        whose floating-point input has a structure (sorted boundaries) or whose integer input has none (ids,
        indices into a table) says so here.

        :param inputs: the caller's inputs, as :meth:`make_inputs` draws them (less :meth:`extra_inputs`)
        """
        return [i for i, t in enumerate(inputs) if t.is_floating_point()]

    def input_names(self, count: int) -> list[str]:
        """Names of the caller's inputs, for a delivered op's schema.

        :param count: how many inputs the caller passes
        """
        return [f"x{i}" for i in range(count)]

    def flops(self, dims: Dims) -> float:
        """Floating-point operations one call performs, for the roofline (0: the op moves data only).

        :param dims: the sizes of the call
        """
        return 0.0

    def bytes_moved(self, dims: Dims, inputs: list[torch.Tensor], outputs: list[torch.Tensor],
                    granule: int = 1) -> float:
        """Minimum bytes a kernel must move: by default every input read once and every output written once.
        ``granule`` is the target's ``memory_granule_bytes``: ops that read scattered elements count the
        granules they touch, since the memory moves nothing smaller.

        :param dims: the sizes of the call
        :param inputs: its inputs
        :param outputs: its outputs
        :param granule: the target's smallest memory transaction, in bytes
        """
        return float(sum(t.numel() * t.element_size() for t in [*inputs, *outputs]))

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        """How far a kernel's outputs may be from the reference's.

        :param dtype: the problem's element type
        """
        return Tolerance.for_dtype(dtype)

    def reference_source(self) -> str:
        """Source of the reference, shown to synthesizers that write free-form code."""
        return ""

    @abstractmethod
    def to_spec(self) -> dict[str, Any]:
        """A JSON-serialisable description from which :func:`kevolve.problems.rebuild.problem_from_spec`
        rebuilds this problem."""

    def key(self) -> str:
        """Store key: op signature + shapes + dtypes. Two problems with the same key are the same work."""
        spec = json.dumps(self.to_spec(), sort_keys=True, default=str)
        digest = hashlib.sha256(spec.encode()).hexdigest()[:16]
        return f"{self.name}:{dtype_name(self.dtype)}:{_dims_text(self.dims)}:{digest}"

    def describe(self) -> str:
        """The problem in one line: name, sizes, dtype."""
        return f"{self.name} {_dims_text(self.dims)} {dtype_name(self.dtype)}"


def _dims_text(dims: Dims) -> str:
    return "x".join(f"{k}={v}" for k, v in dims.items())
