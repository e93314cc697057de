"""The conformance table for reductions and scans: how each OpInfo name's arguments bind, and how the host brings
the dimensions the kernel works on into place.

Reductions (layout ``reduce``): ``prepare`` moves the reduced dimensions last (a permuted contiguous copy) and
views the input as ``(outer, R)``; the kernel reduces each of the ``outer`` rows of ``R`` elements into one output
element, so the output's shape (keepdim or not) never reaches the kernel and one kernel serves every ``dim`` and
``keepdim``. Scans (layout ``scan``) keep the input's shape: the input is viewed as ``(outer, L, inner)`` around
the scanned dimension. What stays in the attributes is what changes the computation (a norm's ``ord``, a
variance's ``correction``, whether ``max`` returns indices, an output ``dtype``), so the kernel key, and with it
the number of compiles, follows those only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from kevolve.conformance.ops.pointwise import _nan_max, _nan_min
from kevolve.conformance.spec import REQUIRED, Arg, OpSpec
from kevolve.problems.problem import dtype_name

Prepare = Callable[[list[Any], dict[str, Any]], tuple[list[Any], dict[str, Any]]]


def _reduced_dims(x: torch.Tensor, dim: Any, empty_means_all: bool) -> list[int]:
    """The dimensions ``dim`` names, wrapped and sorted: None (and, for most ops, ``()``) means every one."""
    if dim is None or (isinstance(dim, (list, tuple)) and not dim and empty_means_all):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(x.dim(), 1) for d in dims}) if x.dim() else []


def _rows(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """``x`` as (outer, R): the kept dimensions first (in order), the reduced ones last, then flattened."""
    kept = [d for d in range(x.dim()) if d not in dims]
    outer = math.prod(x.shape[d] for d in kept)
    reduced = math.prod(x.shape[d] for d in dims)
    return x.permute([*kept, *dims]).contiguous().reshape(outer, reduced)


#: the most groups a strided reduction view may have: GPU grids hold 65535 along their second axis
MAX_GROUPS = 65535


def rows_in_place(source: torch.Tensor, rows: torch.Tensor) -> torch.Tensor | None:
    """``rows`` (outer, R) is a copy of ``source`` (the kept dimensions, then the reduced ones, as :func:`_rows`
    permuted them): the same lines as a view (A, R, I) of ``source``'s memory, where output ``a * I + i`` reduces
    ``view[a, :, i]`` (the kept dimensions split into those merged into A and those merged into I), or None where
    no split of them merges in memory (then the copy stays)."""
    outer, reduced = rows.shape
    shape = list(source.shape)
    kept = next((m for m in range(len(shape) + 1) if math.prod(shape[:m]) == outer
                 and math.prod(shape[m:]) == reduced), None)
    if kept is None:
        return None
    for split in range(kept, -1, -1):  # I = 1 first: rows along A
        order = [*range(split), *range(kept, len(shape)), *range(split, kept)]
        a, i = math.prod(shape[:split]), math.prod(shape[split:kept])
        try:
            view = source.permute(order).view(a, reduced, i)
        except RuntimeError:
            continue
        if i == 1 or a <= MAX_GROUPS:
            return view
    return None


def _out_dtype(x: torch.Tensor, dtype: Any) -> str | None:
    """The ``dtype=`` argument by name, None when absent or the input's own (one kernel for both)."""
    if dtype is None or dtype == x.dtype:
        return None
    return dtype_name(dtype)


def _reduce_prepare(empty_means_all: bool = True, extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                    ) -> Prepare:
    """A ``prepare`` viewing the input as (outer, R) for ``attrs["dim"]``; ``extra`` maps the remaining
    attributes to the ones the kernel keeps (default: only the output dtype)."""

    def prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        x = tensors[0]
        rows = _rows(x, _reduced_dims(x, attrs.get("dim"), empty_means_all))
        kept = {"dtype": _out_dtype(x, attrs.get("dtype"))} if "dtype" in attrs else {}
        if extra is not None:
            kept.update(extra(attrs))
        return [rows], kept

    return prepare


def _scan_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The input as (outer, L, inner) around the scanned dimension (a view: the scan keeps the input's shape)."""
    x = tensors[0]
    d = int(attrs["dim"]) % max(x.dim(), 1)
    shape = list(x.shape) or [1]
    outer, inner = math.prod(shape[:d]), math.prod(shape[d + 1:])
    kept = {"dtype": _out_dtype(x, attrs.get("dtype"))} if "dtype" in attrs else {}
    return [x.reshape(outer, shape[d], inner)], kept


def _correction(attrs: dict[str, Any]) -> dict[str, Any]:
    """std/var: ``unbiased`` and ``correction`` as one number (PyTorch's default: Bessel's correction, 1)."""
    if attrs.get("correction") is not None:
        return {"correction": float(attrs["correction"])}
    return {"correction": 0.0 if attrs.get("unbiased") is False else 1.0}


def _with_indices(attrs: dict[str, Any]) -> dict[str, Any]:
    """max/min: a reduction along a dim also returns the indices."""
    return {"indices": attrs.get("dim") is not None}


def _norm_order(attrs: dict[str, Any]) -> dict[str, Any]:
    """vector_norm: the order as a float in the key (2 and 2.0 are one kernel)."""
    return {"ord": float(attrs["ord"])}


def _large_dim(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    """Larger samples reduce (or scan) a middle dimension: the planted specials land in several rows, and the
    2-D shape's reduced dimension is not the contiguous one (a permuted copy on the host)."""
    return (), {"dim": max(0, len(shape) - 2)}


_DIM = Arg("dim", None)
_KEEPDIM = Arg("keepdim", False)
_DTYPE = Arg("dtype", None)


def _reduction(name: str, *args: Arg, empty_means_all: bool = True,
               extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None, **kw: Any) -> OpSpec:
    return OpSpec(name, None, args, layout="reduce", prepare=_reduce_prepare(empty_means_all, extra),
                  large=_large_dim, in_place=rows_in_place, **kw)


def _extremum(name: str, pick: Callable[..., Any]) -> OpSpec:
    """max/min: the reductions (values and, with ``dim``, indices) and the binary variant (NaN-propagating
    elementwise maximum/minimum, the pointwise recipe's broadcast layout)."""
    binary = OpSpec(name, lambda x, y, a: pick(x, y), (Arg("other", tensor=True),), layout="broadcast")
    return _reduction(name, _DIM, _KEEPDIM, extra=_with_indices,
                      outputs=(1, 2), variants={"binary": binary})


def _moment(name: str) -> OpSpec:
    """std/var: ``std(x, dim, unbiased, keepdim, correction=)``; the ``unbiased`` variant binds
    ``std(x, unbiased)``."""
    unbiased = _reduction(name, Arg("unbiased", True), extra=_correction)
    return _reduction(name, _DIM, Arg("unbiased", None), _KEEPDIM, Arg("correction", None), extra=_correction,
                      variants={"unbiased": unbiased})


SPECS: list[OpSpec] = [
    _reduction("sum", _DIM, _KEEPDIM, _DTYPE),
    _reduction("mean", _DIM, _KEEPDIM, _DTYPE),
    _reduction("prod", _DIM, _KEEPDIM, _DTYPE),
    _reduction("amax", Arg("dim", ()), _KEEPDIM),
    _reduction("amin", Arg("dim", ()), _KEEPDIM),
    _extremum("max", _nan_max),
    _extremum("min", _nan_min),
    _reduction("argmax", _DIM, _KEEPDIM),
    _reduction("argmin", _DIM, _KEEPDIM),
    _moment("std"),
    _moment("var"),
    _reduction("logsumexp", Arg("dim"), _KEEPDIM),
    _reduction("linalg.vector_norm", Arg("ord", 2), _DIM, _KEEPDIM, _DTYPE, extra=_norm_order),
    _reduction("all", _DIM, _KEEPDIM, empty_means_all=False),
    _reduction("any", _DIM, _KEEPDIM, empty_means_all=False),
    _reduction("count_nonzero", _DIM),
    *(OpSpec(name, None, (Arg("dim", REQUIRED), *extra), layout="scan", prepare=_scan_prepare, large=_large_dim,
             outputs=outputs)
      for name, extra, outputs in (("cumsum", (_DTYPE,), 1), ("cumprod", (_DTYPE,), 1), ("logcumsumexp", (), 1),
                                   ("cummax", (), 2))),
]
