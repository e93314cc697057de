"""The conformance table for convolutions, pooling, resizing and padding: how each OpInfo name's arguments bind,
and how the host normalises them.

These ops take many integer arguments (strides, paddings, dilations, kernel sizes, groups, pads) whose
combinations would each cost a compile if they stayed in the kernel's attributes. ``prepare`` packs them into an
extra int64 tensor input (the numbers that are not integers, interpolate's scale factors and pad's constant, into
a float64 one), so one kernel serves every sample of an op (and mode); only a mode stays an attribute. Output sizes never reach the kernel as numbers: it reads them from the
output tensors, which the judge allocates with PyTorch's own shapes (so ``ceil_mode``, ``output_padding`` and
``output_size`` need no packing). Unbatched inputs get a leading batch dimension (a view), and conv1d is viewed
as a conv2d of height 1. Nothing of the result is computed on the host.

Layouts (each one kernel kind of :mod:`kevolve_cpu.recipes.cpp_aten_conv`): ``conv`` (conv1d, conv2d,
conv_transpose2d), ``pool`` (max_pool2d, avg_pool2d), ``adaptive_pool`` (adaptive_avg_pool2d and interpolate's
``area`` mode), ``resize`` (interpolate's nearest, nearest-exact, linear and cubic modes) and ``pad``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from kevolve.conformance.samples import Declined
from kevolve.conformance.spec import Arg, AtenCall, OpSpec, same_call

Prepare = Callable[[list[Any], dict[str, Any]], tuple[list[Any], dict[str, Any]]]
Make = Callable[..., torch.Tensor]

#: the kernels index at most this many dimensions (kv_tensor's shape array)
MAX_DIMS = 8


def _ints(values: Sequence[int]) -> torch.Tensor:
    """Integer constants packed as the kernel's parameter tensor (no data involved)."""
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


def _per_dim(value: Any, n: int, name: str) -> list[int]:
    """An int or a sequence of 1 or ``n`` ints, as ``n`` ints (PyTorch's ``_pair`` and its single-element
    broadcast)."""
    values = [value] if isinstance(value, int) else list(value)
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise Declined(f"{name}={value!r} is not {n} integers")
    return values


def _batched(x: torch.Tensor, spatial: int) -> torch.Tensor:
    """``x`` with its batch dimension: an unbatched input (channels and ``spatial`` dims) gets a leading 1 (a
    view; the output's memory is the same either way)."""
    if x.dim() == spatial + 1:
        return x.unsqueeze(0)
    if x.dim() != spatial + 2:
        raise Declined(f"input of rank {x.dim()} for {spatial} spatial dimensions")
    return x


# --- convolutions (layout conv): inputs x (N, C, H, W), weight, [bias], params ---------------------------------

def _conv_padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int]) -> list[int]:
    """The padding before each spatial dimension. ``same`` pads ``d * (k - 1)`` in total, the odd element after
    (ATen pads the input asymmetrically; the kernel reads the output's size, so only the leading side counts)."""
    if padding == "valid":
        return [0] * len(kernel)
    if padding == "same":
        return [d * (k - 1) // 2 for k, d in zip(kernel, dilation)]
    return _per_dim(padding, len(kernel), "padding")


def _conv_prepare(spatial: int) -> Prepare:
    """x and weight batched and viewed as 2-D (conv1d: height 1); [stride, padding, dilation] per dimension (H, W)
    and groups packed as the last input. The bias, when given, stays a tensor between them."""

    def prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        x, w, *bias = tensors
        x = _batched(x, spatial)
        if w.dim() != spatial + 2:
            raise Declined(f"weight of rank {w.dim()}")
        stride = _per_dim(attrs["stride"], spatial, "stride")
        dilation = _per_dim(attrs["dilation"], spatial, "dilation")
        padding = _conv_padding(attrs["padding"], list(w.shape[2:]), dilation)
        if spatial == 1:
            x, w = x.unsqueeze(2), w.unsqueeze(2)
            stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
        return [x, w, *bias, _ints([*stride, *padding, *dilation, attrs["groups"]])], {}

    return prepare


def _conv_args(transposed: bool) -> tuple[Arg, ...]:
    common = (Arg("weight", tensor=True), Arg("bias", None, tensor=True, scalar_ok=True), Arg("stride", 1),
              Arg("padding", 0))
    if transposed:
        return (*common, Arg("output_padding", 0), Arg("groups", 1), Arg("dilation", 1))
    return (*common, Arg("dilation", 1), Arg("groups", 1))


def _conv1d_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    return (make((4, shape[1] // 2, 5)), make((4,))), {"stride": 2, "padding": 3, "dilation": 2, "groups": 2}


def _conv2d_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    return ((make((6, shape[1] // 2, 3, 5)), make((6,))),
            {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2})


def _conv_transpose2d_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    return ((make((shape[1], 3, 3, 4)), make((6,))),
            {"stride": (2, 3), "padding": (1, 2), "output_padding": (1, 2), "groups": 2, "dilation": (1, 2)})


# --- pooling (layout pool): inputs x (N, C, H, W), params ---------------------------------------------------------

def _window(attrs: dict[str, Any]) -> tuple[list[int], list[int], list[int]]:
    """kernel_size, stride (None or empty: the kernel size) and padding per spatial dimension (H, W)."""
    kernel = _per_dim(attrs["kernel_size"], 2, "kernel_size")
    stride = attrs["stride"]
    stride = kernel if stride is None or stride == () or stride == [] else _per_dim(stride, 2, "stride")
    return kernel, stride, _per_dim(attrs["padding"], 2, "padding")


def _max_pool_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """[kernel, stride, padding, dilation] per dimension; ``return_indices`` is the number of outputs the kernel
    is handed, ``ceil_mode`` only the output's size."""
    kernel, stride, padding = _window(attrs)
    dilation = _per_dim(attrs["dilation"], 2, "dilation")
    return [_batched(tensors[0], 2), _ints([*kernel, *stride, *padding, *dilation])], {}


def _avg_pool_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """[kernel, stride, padding] per dimension, count_include_pad, divisor_override (0: none)."""
    kernel, stride, padding = _window(attrs)
    divisor = attrs["divisor_override"]
    if divisor == 0:
        raise Declined("divisor_override=0")
    extra = [int(bool(attrs["count_include_pad"])), 0 if divisor is None else int(divisor)]
    return [_batched(tensors[0], 2), _ints([*kernel, *stride, *padding, *extra])], {}


def _adaptive_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Only the batch dimension: the output size is the output tensor's."""
    return [_batched(tensors[0], 2)], {}


def _max_pool_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    if shape[-1] % 2:
        return (), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": (1, 2), "ceil_mode": True,
                    "return_indices": True}
    return (), {"kernel_size": (2, 3), "stride": 1, "padding": 0, "dilation": 1, "return_indices": False}


def _avg_pool_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    if shape[-1] % 2:
        return (3, 2, 1, True, False), {}
    return ((4, 2), (3, 1), (2, 1), False, True, 5), {}


def _adaptive_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    return ((7, 9) if len(shape) == 4 else (4, None),), {}


# --- interpolate (layouts resize and adaptive_pool) ---------------------------------------------------------------

#: interpolate's modes by the kernel that computes them (linear, bilinear and trilinear are one kernel over 1-3 dims)
_RESIZE_MODES = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "linear", "bilinear": "linear",
                 "trilinear": "linear", "bicubic": "cubic"}


def _resize_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """[align_corners] as int64 and the scale factor per spatial dimension as float64 (0: none, then the kernel
    uses input / output size). PyTorch hands ``scale_factor`` to the kernel unless ``recompute_scale_factor``
    (then only the output size, which the kernel reads from the output)."""
    x = tensors[0]
    spatial = x.dim() - 2
    if spatial < 1 or spatial > 3:
        raise Declined(f"input of rank {x.dim()}")
    scale = attrs["scale_factor"]
    if scale is None or attrs["recompute_scale_factor"]:
        scales = [0.0] * spatial
    else:
        scales = [float(s) for s in (scale if isinstance(scale, (list, tuple)) else [scale] * spatial)]
    align = torch.tensor([int(bool(attrs["align_corners"]))], dtype=torch.int64)
    return [x, align, torch.tensor(scales, dtype=torch.float64)], {"mode": _RESIZE_MODES[attrs["mode"]]}


def _area_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """``area`` is an adaptive average pool to the output's size (computed by PyTorch from size or scale). An
    unbatched input (a size for all but one of its dims, as ``adaptive_avg_pool3d`` takes) is one batch of it."""
    x, size = tensors[0], attrs.get("size")
    if isinstance(size, (list, tuple)) and x.dim() == len(size) + 1:
        x = x.unsqueeze(0)
    if not 3 <= x.dim() <= 5:
        raise Declined(f"input of rank {x.dim()}")
    return [x], {}


def _interpolate_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    if len(shape) == 4:
        return (), {"scale_factor": 1.7, "mode": "nearest"}
    return ((7, 4, 11),), {"mode": "nearest"}


def _upsample_call(mode: str, aligned: bool) -> AtenCall:
    """``aten.upsample_<mode>Nd(x, output_size, [align_corners,] *scales)`` (every one present): the op's
    ``interpolate(x, size, scale_factor, mode, align_corners)``, the scales given only when ATen has every one of
    them (PyTorch computes the coordinates from them then, from the sizes otherwise)."""

    def call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
        x, size, *rest = args
        align = rest.pop(0) if aligned else None
        given = list(rest) if rest and all(s is not None for s in rest) else None
        return (x,), {"size": list(size), "scale_factor": given, "mode": mode, "align_corners": align}, None

    return call


_UPSAMPLE_OVERLOADS = {
    **{f"aten.upsample_nearest{n}d.default": _upsample_call("nearest", False) for n in (1, 2, 3)},
    **{f"aten._upsample_nearest_exact{n}d.default": _upsample_call("nearest-exact", False) for n in (1, 2, 3)},
    "aten.upsample_linear1d.default": _upsample_call("linear", True),
    "aten.upsample_bilinear2d.default": _upsample_call("bilinear", True),
    "aten.upsample_bicubic2d.default": _upsample_call("bicubic", True),
    "aten.upsample_trilinear3d.default": _upsample_call("trilinear", True),
}

def _area_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten._adaptive_avg_poolNd(x, output_size)``, as ``interpolate(mode="area")`` dispatches it."""
    x, size = args
    return (x,), {"size": list(size), "mode": "area"}, None


_AREA_OVERLOADS = {f"aten._adaptive_avg_pool{n}d.default": _area_call for n in (2, 3)}

_INTERPOLATE_ARGS = (Arg("size", None), Arg("scale_factor", None), Arg("mode", "nearest"), Arg("align_corners", None),
                     Arg("recompute_scale_factor", None), Arg("antialias", False, accepted=(False,)))


# --- pad (layout pad): inputs x, params (padding before each dimension), value ------------------------------------

def _pad_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The padding before every dimension of the input (the pad list names the last dimensions first, in
    (before, after) pairs; the size after is the output's) and the constant as float64."""
    x = tensors[0]
    pad = list(attrs["pad"])
    if len(pad) % 2 or len(pad) // 2 > x.dim() or x.dim() > MAX_DIMS:
        raise Declined(f"pad {pad} for an input of rank {x.dim()}")
    before = [0] * x.dim()
    for i in range(len(pad) // 2):
        before[x.dim() - 1 - i] = int(pad[2 * i])
    value = attrs["value"] if attrs["mode"] == "constant" and attrs["value"] is not None else 0.0
    return [x, _ints(before), torch.tensor([float(value)], dtype=torch.float64)], {"mode": attrs["mode"]}


def _convolution_call(spatial: int, transposed: bool) -> AtenCall:
    """``aten.convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)`` as the
    op's call, for inputs of its rank (batched) and its kind (transposed or not)."""

    def call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
        x, weight, bias, stride, padding, dilation, is_transposed, output_padding, groups = args
        if bool(is_transposed) != transposed or x.dim() != spatial + 2:
            raise Declined(f"a {'transposed ' if is_transposed else ''}convolution of a {x.dim()}-dim input")
        if transposed:
            return (x, weight, bias, stride, padding, output_padding, groups, dilation), {}, None
        if any(output_padding):
            raise Declined(f"output_padding={output_padding} without transposition")
        return (x, weight, bias, stride, padding, dilation, groups), {}, None

    return call


def _max_pool_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.max_pool2d_with_indices(x, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)``: the
    op's call returning the indices (an empty stride means the kernel size, as the op's None does)."""
    x, kernel_size, stride, padding, dilation, ceil_mode = args
    return (x, kernel_size, list(stride) or None, padding, dilation, ceil_mode, True), {}, None


def _pad_call(mode: str) -> AtenCall:
    """``aten.constant_pad_nd(x, pad, value)``, ``reflection_padNd(x, pad)``, ``replication_padNd(x, pad)``: the
    op's ``pad(x, pad, mode, value)``."""

    def call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
        x, pad, *value = args
        return (x, pad, mode, *(value if mode == "constant" else ())), {}, None

    return call


_PAD_OVERLOADS = {"aten.constant_pad_nd.default": _pad_call("constant"),
                  **{f"aten.{kind}_pad{n}d.default": _pad_call(mode) for kind, mode in
                     (("reflection", "reflect"), ("replication", "replicate")) for n in (1, 2, 3)}}


def _pad_large(shape: tuple[int, ...], make: Make) -> tuple[tuple, dict]:
    return ((2, -3, 1, 4), "constant", -1.5), {}


SPECS: list[OpSpec] = [
    OpSpec("nn.functional.conv1d", args=_conv_args(False), layout="conv", prepare=_conv_prepare(1),
           large=_conv1d_large, large_shapes=((2, 6, 67), (3, 4, 129)),
           aten={"aten.convolution.default": _convolution_call(1, False)}),
    OpSpec("nn.functional.conv2d", args=_conv_args(False), layout="conv", prepare=_conv_prepare(2),
           large=_conv2d_large, large_shapes=((2, 6, 19, 23), (1, 4, 17, 33)),
           aten={"aten.convolution.default": _convolution_call(2, False)}),
    OpSpec("nn.functional.conv_transpose2d", args=_conv_args(True), layout="conv", prepare=_conv_prepare(2),
           large=_conv_transpose2d_large, large_shapes=((2, 4, 9, 11), (1, 6, 7, 5)),
           aten={"aten.convolution.default": _convolution_call(2, True)}),
    OpSpec("nn.functional.max_pool2d", outputs=(1, 2), layout="pool", prepare=_max_pool_prepare,
           aten={"aten.max_pool2d_with_indices.default": _max_pool_call},
           args=(Arg("kernel_size"), Arg("stride", None), Arg("padding", 0), Arg("dilation", 1),
                 Arg("ceil_mode", False), Arg("return_indices", False)),
           large=_max_pool_large, large_shapes=((2, 3, 37, 41), (1, 4, 20, 26))),
    OpSpec("nn.functional.avg_pool2d", layout="pool", prepare=_avg_pool_prepare,
           args=(Arg("kernel_size"), Arg("stride", None), Arg("padding", 0), Arg("ceil_mode", False),
                 Arg("count_include_pad", True), Arg("divisor_override", None)),
           large=_avg_pool_large, large_shapes=((2, 3, 37, 41), (1, 4, 20, 26))),
    OpSpec("nn.functional.adaptive_avg_pool2d", args=(Arg("output_size"),), layout="adaptive_pool",
           aten={"aten._adaptive_avg_pool2d.default": same_call},
           prepare=_adaptive_prepare, large=_adaptive_large, large_shapes=((2, 3, 37, 41), (5, 23, 17))),
    OpSpec("nn.functional.interpolate", args=_INTERPOLATE_ARGS, layout="resize", prepare=_resize_prepare,
           large=_interpolate_large, large_shapes=((2, 3, 17, 23), (1, 2, 5, 9, 7)), aten=_UPSAMPLE_OVERLOADS,
           variants={"area": OpSpec("nn.functional.interpolate", args=_INTERPOLATE_ARGS, layout="adaptive_pool",
                                    prepare=_area_prepare, aten=_AREA_OVERLOADS)}),
    OpSpec("nn.functional.pad", args=(Arg("pad"), Arg("mode", "constant"), Arg("value", None)), layout="pad",
           prepare=_pad_prepare, large=_pad_large, aten=_PAD_OVERLOADS),
]
