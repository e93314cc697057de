"""The conformance table for sorting/selection and data movement: sort, argsort, topk, kthvalue, cat, flip, roll,
tril.

Every integer attribute (k, descending, shifts, dims, diagonal, ...) is packed by ``prepare`` into one extra
int64 tensor input, the kernel's last, so one compiled kernel serves every combination the samples draw; the
attributes left for the kernel key are none. The host only reshapes: the selection ops see their input as
``(outer, L, inner)`` around the selected dimension (a view), ``tril`` sees ``(batch, rows, cols)``; negative
dimensions are wrapped by the kernels themselves where the host does not reshape (cat, flip, roll).

Order of ties: the kernels follow ATen's CPU algorithms step by step, so indices match PyTorch's where keys tie
(random repeats, the planted 0.0 and -0.0, NaNs, which sort greatest): libstdc++'s ``stable_sort`` or ``sort``
(its own tie order, which PyTorch 2.13's CPU build reproduces under every CPU capability, AVX512 included) for
sort/argsort, ``partial_sort`` / ``nth_element`` + ``sort`` for topk, ATen's median-of-three quickselect for
kthvalue. A PyTorch built with x86-simd-sort would order the ties of ``stable=False`` differently; PyTorch leaves
that order unspecified.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from kevolve.conformance.spec import REQUIRED, Arg, OpSpec

Prepare = Callable[[list[Any], dict[str, Any]], tuple[list[Any], dict[str, Any]]]


def _pack(*values: Any) -> torch.Tensor:
    """Integer constants (bools as 0/1) as the kernel's int64 parameter tensor."""
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


def _lines(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``x`` viewed as (outer, L, inner) around ``dim`` (wrapped; a 0-dim tensor is one line of one element)."""
    shape = list(x.shape) or [1]
    d = int(dim) % len(shape)
    return x.reshape(math.prod(shape[:d]), shape[d], math.prod(shape[d + 1:]))


def _select_prepare(names: tuple[str, ...]) -> Prepare:
    """A ``prepare`` viewing the input as lines along ``attrs["dim"]`` and packing ``names`` (in order) as the
    parameters; every attribute leaves the kernel key (keepdim only shapes the output, which the judge allocates).
    The name ``one_dim`` packs whether the input is 1-D (ATen sorts long 1-D integer inputs another way)."""

    def prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        x = tensors[0]
        values = [x.dim() == 1 if n == "one_dim" else attrs[n] for n in names]
        return [_lines(x, attrs["dim"]), _pack(*values)], {}

    return prepare


def _sort_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    """Along the long rows descending with PyTorch's default (unstable) sort, along the middle dimension stable:
    the planted 0.0/-0.0 and random repeats tie."""
    if len(shape) == 2:
        return (), {"dim": -1, "descending": True}
    return (), {"dim": 1, "stable": True}


def _topk_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    """Both of ATen's paths: k * 64 <= L (partial_sort) on the long rows, larger k (nth_element, unsorted here) on
    the middle dimension, smallest first."""
    if len(shape) == 2:
        return (7,), {}
    return (20, 1, False, False), {}


def _kthvalue_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    if len(shape) == 2:
        return (shape[-1] // 3,), {}
    return (5, 1, True), {}


def _cat_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The tensors as given (legacy empty (0,) ones included: the kernel skips them, as ATen) and ``dim``."""
    return [*tensors, _pack(attrs["dim"])], {}


def _cat_large(shape: tuple[int, ...], make: Any) -> tuple:
    """A tensor with NaN, infinity and -0.0 planted between others along the last or a middle dimension, with a
    legacy empty (0,) among them."""
    x = make(shape)
    x.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -0.0])
    if len(shape) == 2:
        return [make((shape[0], 17)), x, make((shape[0], 3))], (), {"dim": -1}
    return [x, torch.empty(0, dtype=x.dtype), make((shape[0], 5, shape[2]))], (1,), {}


def _flip_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return [tensors[0], _pack(*attrs["dims"])], {}


def _flip_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return ((0, -1),) if len(shape) == 2 else ((1,),), {}


def _roll_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Parameters: [flat, n, shifts..., dims...]; ``dims=None`` rolls the flattened tensor by its one shift."""
    shifts, dims = attrs["shifts"], attrs["dims"]
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None:
        return [tensors[0], _pack(1, len(shifts), *shifts)], {}
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [tensors[0], _pack(0, len(shifts), *shifts, *dims)], {}


def _roll_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return ((3, -700), (0, 1)) if len(shape) == 2 else (100,), {}


def _tril_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The input as (batch, rows, cols) (a view) and the diagonal."""
    x = tensors[0]
    batch = math.prod(x.shape[:-2]) if x.dim() >= 2 else 1
    view = x.reshape(batch, *x.shape[-2:]) if x.dim() >= 2 else x
    return [view, _pack(attrs["diagonal"])], {}


def _tril_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (-3,) if len(shape) == 2 else (5,), {}


_SORT_ARGS = (Arg("dim", -1), Arg("descending", False), Arg("stable", False))
_SORT_PREPARE = _select_prepare(("descending", "stable", "one_dim"))

SPECS: list[OpSpec] = [
    OpSpec("sort", None, _SORT_ARGS, layout="sort", outputs=2, prepare=_SORT_PREPARE, large=_sort_large),
    OpSpec("argsort", None, _SORT_ARGS, layout="sort", prepare=_SORT_PREPARE, large=_sort_large),
    OpSpec("topk", None, (Arg("k", REQUIRED), Arg("dim", -1), Arg("largest", True), Arg("sorted", True)),
           layout="topk", outputs=2, prepare=_select_prepare(("k", "largest", "sorted")), large=_topk_large),
    OpSpec("kthvalue", None, (Arg("k", REQUIRED), Arg("dim", -1), Arg("keepdim", False)), layout="kthvalue",
           outputs=2, prepare=_select_prepare(("k",)), large=_kthvalue_large),
    OpSpec("cat", None, (Arg("dim", 0),), layout="cat", list_input=True, prepare=_cat_prepare, large=_cat_large),
    OpSpec("flip", None, (Arg("dims", REQUIRED),), layout="flip", prepare=_flip_prepare, large=_flip_large),
    OpSpec("roll", None, (Arg("shifts", REQUIRED), Arg("dims", None)), layout="roll", prepare=_roll_prepare,
           large=_roll_large),
    OpSpec("tril", None, (Arg("diagonal", 0),), layout="tril", prepare=_tril_prepare, large=_tril_large),
]
