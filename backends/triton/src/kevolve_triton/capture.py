"""Capture the Triton launches a kernel file makes, without running them.

A Triton kernel file's ``kernel(inputs, outputs)`` computes grids and launches ``@triton.jit`` functions.
Compiling ahead of time needs each launch's argument types, constexpr values and options; running the file's
own launcher with launches intercepted gives exactly those, for whatever launcher the file has (a recipe's or
one written by hand or by an LLM).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

#: torch dtype -> Triton pointer element type
TRITON_TYPES = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "i1",
}


@dataclass
class Launch:
    """One intercepted launch: the jit function, its compile signature and options, and the grid size."""

    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict[tuple[int, ...], list[list[Any]]]
    options: dict[str, Any]
    programs: int
    grid: tuple[int, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.fn.__name__


def _scalar_type(value: Any) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(1 << 31) <= value < (1 << 31) else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"cannot pass {type(value).__name__} to a Triton kernel")


def describe_launch(fn: Any, args: tuple, kwargs: dict, grid: Any) -> Launch:
    """Bind a launch's arguments to the jit function's parameters, the way Triton's own launcher does: tensors
    become typed pointers, TMA tensor descriptors their descriptor type, ints specialise on divisibility by 16,
    constexprs are fixed, other keywords are compile options (num_warps, num_stages, ...)."""
    names = list(fn.arg_names)
    bound = dict(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    for param in fn.params:
        if param.name not in bound and param.default is not inspect.Parameter.empty:
            bound[param.name] = param.default
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError(f"{fn.__name__}() missing arguments: {', '.join(missing)}")
    signature, constexprs, attrs = {}, {}, {}
    for index, param in enumerate(fn.params):
        value = bound[param.name]
        if param.is_constexpr or value is None:
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
        elif hasattr(value, "block_shape") and hasattr(value, "base"):  # a host-side TMA tensor descriptor
            from triton.runtime.jit import mangle_type

            signature[param.name] = mangle_type(value)  # Triton's own spelling, e.g. tensordesc<bf16[64, 64]>
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            signature[param.name] = "*" + TRITON_TYPES[value.dtype]
            attrs[(index,)] = [["tt.divisibility", 16]]  # fresh torch allocations are 16-byte aligned
        else:
            signature[param.name] = _scalar_type(value)
            if isinstance(value, int) and not isinstance(value, bool) and value % 16 == 0:
                attrs[(index,)] = [["tt.divisibility", 16]]
    options = {k: v for k, v in kwargs.items() if k not in names}
    meta = {**bound, **options}
    shape = tuple(grid(meta) if callable(grid) else grid)
    return Launch(fn, signature, constexprs, attrs, options, math.prod(int(g) for g in shape),
                  tuple(int(g) for g in shape))


def capture_launches(kernel: Callable, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> list[Launch]:
    """Run ``kernel(inputs, outputs)`` with every jit launch recorded instead of executed. A call whose outputs
    are all empty may launch nothing (there is nothing to write); any other call must launch something."""
    from triton.runtime.jit import JITFunction

    launches: list[Launch] = []
    original = JITFunction.run

    def record(self, *args, grid, warmup, **kwargs):
        launches.append(describe_launch(self, args, kwargs, grid))

    JITFunction.run = record
    try:
        kernel(inputs, outputs)
    finally:
        JITFunction.run = original
    require_launch(launches, outputs)
    return launches


def require_launch(launches: list, outputs: list[torch.Tensor]) -> None:
    """A kernel file that computed nothing is broken, unless its outputs are all empty (nothing to write: e.g.
    batch_norm on an empty batch)."""
    if not launches and any(t.numel() for t in outputs):
        raise ValueError("the kernel file's `kernel(inputs, outputs)` launched no @triton.jit function")
