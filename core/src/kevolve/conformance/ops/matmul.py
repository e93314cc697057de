"""The conformance table for matrix products and attention: every product is one batched GEMM, every attention
one scaled-dot-product kernel.

Layout ``gemm``: the kernel gets ``A`` (batch..., M, K), ``B`` (batch..., K, N), or (batch..., N, K) when
``attrs["trans_b"]``, and optionally ``C`` at the same rank; the batch dimensions broadcast (size 1), ``C``
broadcasts to (batch..., M, N); it writes ``alpha * A @ B + beta * C`` into the output's elements in that order
(PyTorch's output shape may drop the 1-D operands' dimensions: same elements). ``prepare`` only views: 1-D
operands become a row or a column, batch ranks padded with size-1 dimensions, ``input``/``bias`` viewed at the
output's rank. ``beta == 0`` drops ``C`` (ATen's rule: NaN in the ignored input does not propagate).

Layout ``attention``: the kernel gets ``q`` (batch..., L, E), ``k`` (batch..., S, E), ``v`` (batch..., S, Ev)
and an optional bool or float mask (batch..., L, S), all at one rank, batch dimensions broadcasting (and, with
``enable_gqa``, the head dimension of ``k``/``v`` shared by groups of query heads).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kevolve.conformance.samples import Declined
from kevolve.conformance.spec import Arg, OpSpec, same_call

_Prepared = tuple[list[Any], dict[str, Any]]
#: the seed OpInfo's ``wrapper_set_seed`` gives the default generator before calling attention: dropout's
#: keep-mask is drawn from it, so the kernel draws the same stream (a generator state, not a result)
OPINFO_SEED = 42


def _declined(why: str) -> Exception:
    return Declined(why)


def _at_rank(t: torch.Tensor, rank: int) -> torch.Tensor:
    """``t`` viewed at ``rank`` dimensions (leading size-1 dimensions), for broadcasting in the kernel."""
    if t.dim() > rank:
        raise _declined(f"a tensor of shape {tuple(t.shape)} does not broadcast to rank {rank}")
    return t.reshape([1] * (rank - t.dim()) + list(t.shape))


def _gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None, *, alpha: Any = 1.0, beta: Any = 1.0,
          trans_b: bool = False) -> _Prepared:
    """The kernel's operands: ``a`` and ``b`` at one rank (batch padded), ``c`` at that rank or dropped."""
    rank = max(a.dim(), b.dim(), 2)
    if rank > 8:
        raise _declined(f"rank {rank} (the kernel ABI holds 8 dimensions)")
    tensors = [_at_rank(a, rank), _at_rank(b, rank)]
    if c is not None and float(beta) != 0.0:
        tensors.append(_at_rank(c, rank))
    return tensors, {"alpha": float(alpha), "beta": float(beta), "trans_b": trans_b}


def _row(v: torch.Tensor) -> torch.Tensor:
    return v.reshape(1, v.numel())


def _column(v: torch.Tensor) -> torch.Tensor:
    return v.reshape(v.numel(), 1)


def _prep_mm(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """mm, bmm: the two operands as given."""
    a, b = tensors
    return _gemm(a, b, None)


def _prep_addmm(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """addmm, baddbmm: ``input`` becomes C."""
    c, a, b = tensors
    tensors, options = _gemm(a, b, c, alpha=attrs["alpha"], beta=attrs["beta"])
    return tensors, _blas_alpha(options, a.dim() == 2)


def _blas_alpha(options: dict[str, Any], blas: bool) -> dict[str, Any]:
    """addmm and addmv follow BLAS at ``alpha == 0``: the product is not computed (NaN in it does not show);
    baddbmm multiplies it by 0 (NaN shows)."""
    if blas and options["alpha"] == 0.0:
        options["product"] = False
    return options


def _prep_matmul(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """torch.matmul: a 1-D left operand is a row, a 1-D right operand a column (their dimension is dropped from
    the output, which keeps the same elements); batch dimensions broadcast in the kernel."""
    a, b = tensors
    if a.dim() == 0 or b.dim() == 0:
        raise _declined("matmul of a 0-dim tensor")
    return _gemm(_row(a) if a.dim() == 1 else a, _column(b) if b.dim() == 1 else b, None)


def _prep_mv(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    a, v = tensors
    return _gemm(a, _column(v), None)


def _prep_addmv(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """addmv: the (M,) output is an (M, 1) column, so ``input`` is viewed as a column too."""
    c, a, v = tensors
    tensors, options = _gemm(a, _column(v), _at_rank(c, 1).unsqueeze(-1), alpha=attrs["alpha"], beta=attrs["beta"])
    return tensors, _blas_alpha(options, True)


def _prep_outer(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """outer: a column times a row (K = 1: one product per element, as ATen's broadcast multiply)."""
    a, b = tensors
    return _gemm(_column(a), _row(b), None)


def _prep_linear(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """linear: the input's leading dimensions fold into M; the weight is read transposed (N, K) by the kernel."""
    x, w = tensors[:2]
    bias = tensors[2] if len(tensors) > 2 else None
    if x.dim() == 0 or w.dim() != 2:
        raise _declined(f"linear of input {tuple(x.shape)} with weight {tuple(w.shape)}")
    a = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    return _gemm(a, w, None if bias is None else _at_rank(bias, 2), trans_b=True)


def _prep_sdpa(tensors: list[Any], attrs: dict[str, Any]) -> _Prepared:
    """scaled_dot_product_attention: q, k, v (and the mask) viewed at one rank; the options are attributes."""
    q, k, v = tensors[:3]
    rank = max(q.dim(), k.dim(), v.dim())
    if min(q.dim(), k.dim(), v.dim()) < 2 or rank > 8:
        raise _declined(f"attention of q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    out = [_at_rank(t, rank) for t in tensors]
    scale, dropout = attrs["scale"], float(attrs["dropout_p"])
    options = {"is_causal": bool(attrs["is_causal"]), "scale": None if scale is None else float(scale),
               "dropout_p": dropout, "enable_gqa": bool(attrs["enable_gqa"])}
    if dropout > 0.0:
        options["seed"] = OPINFO_SEED
    return out, options


# the larger random samples: odd sizes, K over many blocks, NaN/inf planted in the drawn input
def _large_right(n: int) -> Any:
    """mm/matmul/mv-like: a right operand (K, n) for the drawn left operand (batch..., M, K), with a size-1
    batch that broadcasts when the left one is batched; n = 0: a vector (K,)."""
    def large(shape: tuple[int, ...], make: Any) -> tuple:
        if n == 0:
            return (make((shape[-1],)),), {}
        return (make(((1,) * (len(shape) - 2)) + (shape[-1], n)),), {}
    return large


def _large_bmm(shape: tuple[int, ...], make: Any) -> tuple:
    return (make((shape[0], shape[-1], 37)),), {}


def _large_addmm(shape: tuple[int, ...], make: Any) -> tuple:
    """The drawn input is C (NaN/inf planted); the second (smaller) sample has beta=0, where C's NaN must not
    show."""
    first = shape[-2] > 100
    k = 1031 if first else 129
    kwargs = {"beta": 1.0, "alpha": 1.0} if first else {"beta": 0.0, "alpha": 0.5}
    return (make((*shape[:-2], shape[-2], k)), make((*shape[:-2], k, shape[-1]))), kwargs


def _large_addmv(shape: tuple[int, ...], make: Any) -> tuple:
    """As addmm's: the second sample has beta=0 over the NaN planted in the input."""
    first = shape[0] > 100
    k = 1031 if first else 129
    kwargs = {"beta": 1.0, "alpha": 1.0} if first else {"beta": 0.0, "alpha": 0.5}
    return (make((shape[0], k)), make((k,))), kwargs


def _large_linear(shape: tuple[int, ...], make: Any) -> tuple:
    if len(shape) == 2:
        return (make((67, shape[-1])), make((67,))), {}
    return (make((19, shape[-1])),), {}


def _large_sdpa(shape: tuple[int, ...], make: Any) -> tuple:
    """A bool mask with an explicit scale and dropout on one, causal grouped-query attention on the other."""
    b, h, length, e = shape
    if h == 3:
        kv = (b, h, 47, e)
        mask = make((length, 47), torch.bool)
        return (make(kv), make((*kv[:-1], 24))), {"attn_mask": mask, "scale": 0.3, "dropout_p": 0.3}
    kv = (b, h // 2, 52, e)
    return (make(kv), make((*kv[:-1], 8))), {"is_causal": True, "enable_gqa": True}


_LARGE_MM = ((514, 1031), (33, 129))


def _tensor(name: str) -> Arg:
    return Arg(name, tensor=True)


_BETA_ALPHA = (Arg("beta", 1), Arg("alpha", 1))
#: an attention mask: bool, or of the query's float dtype (PyTorch rejects any other pairing itself)
_MASK = Arg("attn_mask", None, tensor=True, scalar_ok=True, dtypes=("float32", "bfloat16", "float64", "bool"))

SPECS: list[OpSpec] = [
    OpSpec("mm", args=(_tensor("mat2"),), layout="gemm", prepare=_prep_mm, large=_large_right(67),
           large_shapes=_LARGE_MM),
    OpSpec("bmm", args=(_tensor("mat2"),), layout="gemm", prepare=_prep_mm, large=_large_bmm,
           large_shapes=((6, 33, 129), (3, 65, 257))),
    OpSpec("addmm", args=(_tensor("mat1"), _tensor("mat2"), *_BETA_ALPHA), layout="gemm", prepare=_prep_addmm,
           large=_large_addmm, large_shapes=((514, 67), (33, 70))),
    OpSpec("baddbmm", args=(_tensor("batch1"), _tensor("batch2"), *_BETA_ALPHA), layout="gemm",
           prepare=_prep_addmm, large=_large_addmm, large_shapes=((6, 514, 37), (3, 33, 17))),
    OpSpec("matmul", args=(_tensor("other"),), layout="gemm", prepare=_prep_matmul, large=_large_right(17),
           aten={"aten.dot.default": same_call}),
    OpSpec("mv", args=(_tensor("vec"),), layout="gemm", prepare=_prep_mv, large=_large_right(0),
           large_shapes=_LARGE_MM),
    OpSpec("addmv", args=(_tensor("mat"), _tensor("vec"), *_BETA_ALPHA), layout="gemm", prepare=_prep_addmv,
           large=_large_addmv, large_shapes=((514,), (33,))),
    OpSpec("outer", args=(_tensor("vec2"),), layout="gemm", prepare=_prep_outer,
           large=lambda shape, make: ((make((67,)),), {}), large_shapes=((514,), (1031,))),
    OpSpec("nn.functional.linear", args=(_tensor("weight"), Arg("bias", None, tensor=True, scalar_ok=True)),
           layout="gemm", prepare=_prep_linear, large=_large_linear),
    OpSpec("nn.functional.scaled_dot_product_attention",
           args=(_tensor("key"), _tensor("value"), _MASK, Arg("dropout_p", 0.0), Arg("is_causal", False),
                 Arg("scale", None), Arg("enable_gqa", False)),
           layout="attention", prepare=_prep_sdpa, large=_large_sdpa, large_shapes=((2, 3, 33, 16), (2, 4, 40, 24))),
]
