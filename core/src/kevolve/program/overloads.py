"""ATen overloads onto the conformance table: the one map from what ``torch.export`` produces to the kernels every
backend already writes (:data:`kevolve.conformance.table.OPS`), for lowering programs and for the export.

Each entry turns a node's arguments into an OpInfo-shaped sample (input, args, kwargs) of a table entry, the same
sample the conformance suite binds, so the table's ``prepare`` and every backend's recipe serve both. ``outputs``
says which of the node's results the kernel writes (``native_layer_norm`` returns its statistics too; the kernel
writes only the normalised tensor).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

aten = torch.ops.aten

#: (OpInfo name, input, args, kwargs) of the table entry that computes a node, and optionally how the kernel sees
#: each of the node's results (a view at the shape the entry writes, e.g. a 1-D transposed convolution's output
#: as the 2-D one of height 1 that computes it)
Sample = tuple  # (str, Any, tuple, dict) or (str, Any, tuple, dict, Callable[[Tensor], Tensor])


@dataclass(frozen=True)
class Overload:
    """How one ATen overload binds to the conformance table."""

    adapt: Callable[..., Sample]
    #: the node's results the kernel writes, in the kernel's output order
    outputs: tuple[int, ...] = (0,)


def _same(name: str) -> Overload:
    """An overload whose arguments are the OpInfo entry's: input first, the rest as given."""
    return Overload(lambda x, *args, **kwargs: (name, x, args, kwargs))


def _elu(x: Any, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Sample:
    if scale == 1.0 and input_scale == 1.0:
        return "nn.functional.elu", x, (alpha,), {}
    if input_scale == 1.0 and abs(alpha - 1.6732632423543772) < 1e-12 and abs(scale - 1.0507009873554805) < 1e-12:
        return "nn.functional.selu", x, (), {}
    if scale == 1.0 and abs(input_scale * alpha - 1.0) < 1e-12:
        return "nn.functional.celu", x, (alpha,), {}
    raise NotImplementedError(f"elu with scale={scale}, input_scale={input_scale}")


def _where(condition: Any, x: Any, other: Any) -> Sample:
    return "where", x, (condition, other), {}


def _reduce(name: str) -> Overload:
    def adapt(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Sample:
        kwargs = {"dtype": dtype} if dtype is not None else {}
        return name, x, (dim, keepdim), kwargs
    return Overload(adapt)


def _var(name: str) -> Overload:
    def adapt(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Sample:
        return name, x, (), {"dim": dim, "correction": correction, "keepdim": keepdim}
    return Overload(adapt)


def _softmax(name: str) -> Overload:
    def adapt(x: Any, dim: int, half_to_float: bool = False) -> Sample:
        if half_to_float:
            raise NotImplementedError("softmax with half_to_float=True")
        return name, x, (dim,), {}
    return Overload(adapt)


def _layer_norm(x: Any, normalized_shape: Any, weight: Any, bias: Any, eps: float) -> Sample:
    return "nn.functional.layer_norm", x, (list(normalized_shape), weight, bias, eps), {}


def _group_norm(x: Any, weight: Any, bias: Any, n: int, c: int, hw: int, groups: int, eps: float) -> Sample:
    return "nn.functional.group_norm", x, (groups, weight, bias, eps), {}


def _batch_norm_eval(x: Any, weight: Any, bias: Any, mean: Any, var: Any, momentum: float, eps: float) -> Sample:
    return "nn.functional.batch_norm", x, (mean, var, weight, bias, False, momentum, eps), {}


def _native_batch_norm(x: Any, weight: Any, bias: Any, mean: Any, var: Any, training: bool, momentum: float,
                       eps: float) -> Sample:
    if training:
        raise NotImplementedError("batch_norm in training mode (call model.eval() first)")
    return _batch_norm_eval(x, weight, bias, mean, var, momentum, eps)


def _convolution(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
                 output_padding: Any, groups: int) -> Sample:
    spatial = weight.dim() - 2
    if transposed and spatial == 1:  # as conv_transpose2d of height 1
        return ("nn.functional.conv_transpose2d", x.unsqueeze(-2),
                (weight.unsqueeze(-2), bias, [1, *stride], [0, *padding], [0, *output_padding], groups,
                 [1, *dilation]), {}, lambda out: out.unsqueeze(-2))
    if transposed:
        if spatial != 2:
            raise NotImplementedError(f"transposed convolution over {spatial} spatial dimensions")
        return ("nn.functional.conv_transpose2d", x,
                (weight, bias, list(stride), list(padding), list(output_padding), groups, list(dilation)), {})
    if spatial not in (1, 2):
        raise NotImplementedError(f"convolution over {spatial} spatial dimensions")
    name = "nn.functional.conv1d" if spatial == 1 else "nn.functional.conv2d"
    return name, x, (weight, bias, list(stride), list(padding), list(dilation), groups), {}


def _max_pool2d(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
                ceil_mode: bool = False) -> Sample:
    return "nn.functional.max_pool2d", x, (list(kernel_size), list(stride) or None, padding, dilation, ceil_mode,
                                           True), {}


def _avg_pool2d(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
                count_include_pad: bool = True, divisor_override: Any = None) -> Sample:
    return "nn.functional.avg_pool2d", x, (list(kernel_size), list(stride) or None, padding, ceil_mode,
                                           count_include_pad, divisor_override), {}


def _transposed(b: Any) -> bool:
    """``b`` is the transpose of a contiguous matrix (``linear``'s weight after export's ``permute``): the gemm
    reads it as (N, K) rows instead of a copy."""
    return isinstance(b, torch.Tensor) and b.dim() == 2 and b.stride() == (1, b.shape[0])


def _addmm(c: Any, a: Any, b: Any, *, beta: float = 1, alpha: float = 1) -> Sample:
    if _transposed(b) and beta == 1 and alpha == 1 and isinstance(c, torch.Tensor) and c.dim() == 1:
        return "nn.functional.linear", a, (b.t(), c), {}
    return "addmm", c, (a, b), {"beta": beta, "alpha": alpha}


def _mm(a: Any, b: Any) -> Sample:
    if _transposed(b):
        return "nn.functional.linear", a, (b.t(),), {}
    return "mm", a, (b,), {}


def _baddbmm(c: Any, a: Any, b: Any, *, beta: float = 1, alpha: float = 1) -> Sample:
    return "baddbmm", c, (a, b), {"beta": beta, "alpha": alpha}


def _swapped(name: str) -> Callable[..., Sample]:
    """``gt(x, y)`` as ``lt(y, x)`` (and ``le`` as ``ge``): the table has one of each mirrored pair."""
    def adapt(x: Any, other: Any) -> Sample:
        return name, other, (x,), {}  # a number on the right becomes the input: a constant (graph.scalar)
    return adapt


def _embedding(weight: Any, indices: Any, padding_idx: int = -1, scale_grad_by_freq: bool = False,
               sparse: bool = False) -> Sample:
    return "nn.functional.embedding", weight, (indices,), {"padding_idx": None if padding_idx == -1 else padding_idx}


def _embedding_bag(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: bool = False, mode: int = 0,
                   sparse: bool = False, per_sample_weights: Any = None, include_last_offset: bool = False,
                   padding_idx: int = -1) -> Sample:
    """ATen's ``_embedding_bag`` (what ``F.embedding_bag`` exports to): its first result, the pooled bags."""
    kwargs = {"offsets": offsets, "mode": ("sum", "mean", "max")[mode], "include_last_offset": include_last_offset,
              "padding_idx": None if padding_idx == -1 else padding_idx}
    if per_sample_weights is not None:
        kwargs["per_sample_weights"] = per_sample_weights
    return "nn.functional.embedding_bag", weight, (indices,), kwargs


def _searchsorted(sequence: Any, values: Any, *, out_int32: bool = False, right: bool = False, side: Any = None,
                  sorter: Any = None) -> Sample:
    return "searchsorted", sequence, (values,), {"out_int32": out_int32, "right": right, "side": side,
                                                 "sorter": sorter}


def _bucketize(values: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Sample:
    return "bucketize", values, (boundaries,), {"out_int32": out_int32, "right": right}


def _pad(x: Any, pad: Any, value: float = 0.0) -> Sample:
    return "nn.functional.pad", x, (list(pad), "constant", value), {}


def _resize(mode: str) -> Callable[..., Sample]:
    def adapt(x: Any, output_size: Any, *rest: Any) -> Sample:
        align_corners, scales = (rest[0], rest[1]) if mode != "nearest" else (None, rest[0] if rest else None)
        kwargs = {"mode": mode, "size": None if output_size is None else list(output_size),
                  "scale_factor": None if output_size is not None or scales is None else list(scales)}
        if mode != "nearest":
            kwargs["align_corners"] = align_corners
        return "nn.functional.interpolate", x, (), kwargs
    return adapt


def _binary(name: str) -> Overload:
    return Overload(lambda x, other, **kwargs: (name, x, (other,), kwargs))


_UNARY = ("abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
          "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
          "sigmoid", "erf", "erfc", "erfinv", "lgamma", "floor", "ceil", "trunc", "sign", "isnan")
_ACTIVATIONS = ("relu", "gelu", "silu", "mish", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu", "softplus",
                "hardshrink", "softshrink", "threshold")

OVERLOADS: dict[Any, Overload] = {
    **{getattr(aten, name).default: _same(name) for name in _UNARY},
    **{getattr(aten, name).default: _same(f"nn.functional.{name}") for name in _ACTIVATIONS},
    aten.relu6.default: _same("nn.functional.relu6"),
    aten.elu.default: Overload(_elu),
    aten.prelu.default: _same("nn.functional.prelu"),
    aten.logit.default: _same("logit"),
    aten.round.default: _same("round"),
    aten.nan_to_num.default: _same("nan_to_num"),
    aten.add.Tensor: _binary("add"), aten.sub.Tensor: _binary("sub"), aten.mul.Tensor: _binary("mul"),
    aten.div.Tensor: _binary("div"), aten.div.Tensor_mode: _binary("div"),
    aten.pow.Tensor_Scalar: _binary("pow"), aten.pow.Tensor_Tensor: _binary("pow"),
    aten.maximum.default: _binary("maximum"), aten.minimum.default: _binary("minimum"),
    aten.fmod.Tensor: _binary("fmod"), aten.remainder.Tensor: _binary("remainder"),
    aten.atan2.default: _binary("atan2"), aten.hypot.default: _binary("hypot"),
    aten.eq.Tensor: _binary("eq"), aten.eq.Scalar: _binary("eq"), aten.ne.Tensor: _binary("ne"),
    aten.ne.Scalar: _binary("ne"), aten.lt.Tensor: _binary("lt"), aten.lt.Scalar: _binary("lt"),
    aten.ge.Tensor: _binary("ge"), aten.ge.Scalar: _binary("ge"),
    aten.logical_not.default: Overload(lambda x: ("eq", x, (0,), {})),  # not x: x == 0 (NaN is true)
    aten.logical_and.default: _binary("logical_and"), aten.logical_or.default: _binary("logical_or"),
    aten.bitwise_and.Tensor: _binary("bitwise_and"), aten.bitwise_and.Scalar: _binary("bitwise_and"),
    aten.bitwise_xor.Tensor: _binary("bitwise_xor"), aten.bitwise_xor.Scalar: _binary("bitwise_xor"),
    # ~mask on booleans is logical not (x == 0, as logical_not); on integers the bits' complement
    aten.bitwise_not.default: Overload(lambda x: ("eq", x, (0,), {}) if x.dtype == torch.bool
                                       else ("bitwise_not", x, (), {})),
    aten.add.Scalar: _binary("add"), aten.sub.Scalar: _binary("sub"), aten.mul.Scalar: _binary("mul"),
    aten.div.Scalar: _binary("div"), aten.remainder.Scalar: _binary("remainder"), aten.fmod.Scalar: _binary("fmod"),
    aten.where.self: Overload(_where),
    aten.clamp.default: _same("clamp"), aten.clamp.Tensor: _same("clamp"),
    aten.lerp.Scalar: _same("lerp"), aten.lerp.Tensor: _same("lerp"),
    aten.addcmul.default: _same("addcmul"), aten.addcdiv.default: _same("addcdiv"),
    aten.sum.default: _reduce("sum"), aten.mean.default: _reduce("mean"),
    aten.gt.Tensor: Overload(_swapped("lt")), aten.le.Tensor: Overload(_swapped("ge")),
    aten.gt.Scalar: Overload(_swapped("lt")), aten.le.Scalar: Overload(_swapped("ge")),
    aten.sum.dim_IntList: _reduce("sum"), aten.mean.dim: _reduce("mean"), aten.prod.dim_int: _reduce("prod"),
    aten.amax.default: _reduce("amax"), aten.amin.default: _reduce("amin"),
    aten.argmax.default: _reduce("argmax"), aten.argmin.default: _reduce("argmin"),
    aten.logsumexp.default: _reduce("logsumexp"),
    aten.any.dim: _reduce("any"), aten.any.dims: _reduce("any"), aten.any.default: _reduce("any"),
    aten.all.dim: _reduce("all"), aten.all.dims: _reduce("all"), aten.all.default: _reduce("all"),
    aten.var.correction: _var("var"), aten.std.correction: _var("std"),
    aten.cumsum.default: _same("cumsum"), aten.cumprod.default: _same("cumprod"),
    aten._softmax.default: _softmax("softmax"), aten._log_softmax.default: _softmax("log_softmax"),
    aten.native_layer_norm.default: Overload(_layer_norm),
    aten.native_group_norm.default: Overload(_group_norm),
    aten._native_batch_norm_legit_no_training.default: Overload(_batch_norm_eval),
    aten.native_batch_norm.default: Overload(_native_batch_norm),
    aten.mm.default: Overload(_mm), aten.bmm.default: _same("bmm"), aten.addmm.default: Overload(_addmm),
    aten.baddbmm.default: Overload(_baddbmm), aten.mv.default: _same("mv"),
    aten.convolution.default: Overload(_convolution),
    aten.max_pool2d_with_indices.default: Overload(_max_pool2d, outputs=(0, 1)),
    aten.avg_pool2d.default: Overload(_avg_pool2d),
    aten._adaptive_avg_pool2d.default: _same("nn.functional.adaptive_avg_pool2d"),
    aten.cat.default: _same("cat"),
    aten.cummax.default: Overload(lambda x, dim: ("cummax", x, (dim,), {}), outputs=(0, 1)),
    aten.roll.default: _same("roll"),
    aten.gather.default: _same("gather"), aten.index_select.default: _same("index_select"),
    aten.scatter_add.default: _same("scatter_add"),
    aten.embedding.default: Overload(_embedding),
    aten._embedding_bag.default: Overload(_embedding_bag),
    aten.searchsorted.Tensor: Overload(_searchsorted),
    aten.bucketize.Tensor: Overload(_bucketize),
    aten._embedding_bag_forward_only.default: Overload(_embedding_bag),
    aten.topk.default: Overload(lambda x, *args: ("topk", x, args, {}), outputs=(0, 1)),
    aten.sort.default: Overload(lambda x, *args: ("sort", x, args, {}), outputs=(0, 1)),
    aten.constant_pad_nd.default: Overload(_pad),
    aten.linalg_vector_norm.default: _same("linalg.vector_norm"),
    aten.upsample_nearest2d.vec: Overload(_resize("nearest")),
    aten.upsample_bilinear2d.vec: Overload(_resize("bilinear")),
    aten.flip.default: _same("flip"),
    aten.tril.default: _same("tril"),
}

#: overloads that only view their input (a new shape, strides or offset over the same memory): folded into the
#: indexing of the kernels that read them, never a kernel of their own
VIEWS = frozenset({
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default, aten.expand.default,
    aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.t.default,
    aten.transpose.int, aten.alias.default, aten.slice.Tensor, aten.select.int, aten.as_strided.default,
    aten.detach.default, aten.lift_fresh_copy.default,
})

#: overloads that make a 0-dim constant: inlined into the pointwise expressions that read it
SCALARS = frozenset({aten.scalar_tensor.default, aten.full.default, aten.full_like.default})

#: overloads whose result depends on no input (``arange``): computed once while lowering, a constant of the file
FACTORIES = frozenset({aten.arange.default, aten.arange.start, aten.arange.start_step, aten.triu_indices.default,
                       aten.tril_indices.default})

#: overloads that compute nothing a kernel needs (export's checks of its own assumptions)
CHECKS = frozenset({aten._assert_tensor_metadata.default})

#: overloads that copy their input unchanged (a kernel only where their result must be a buffer of its own)
COPIES = frozenset({aten.clone.default, aten.contiguous.default, aten._to_copy.default})


def overload_name(target: Any) -> str:
    """``aten.native_layer_norm.default`` for an overload, the function's name for anything else."""
    return str(target) if isinstance(target, torch._ops.OpOverload) else getattr(target, "__name__", str(target))
