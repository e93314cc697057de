"""Decompositions kevolve adds to PyTorch's core ATen table, so that programs reach only the overloads the
backends' conformance kernels cover (:mod:`kevolve.program.overloads`). Each rewrites one overload into covered
ones and computes the same values; where its condition does not hold it leaves the overload as it is, and the
lowering then names it as uncovered.

- ``min.dim`` / ``max.dim``: the values and the indices as ``amin``/``amax`` and ``argmin``/``argmax``.
- ``split_with_sizes`` / ``split.Tensor`` (``chunk``): slices, which are views.
- ``_native_batch_norm_legit.no_stats`` (what ``instance_norm`` and batch norm in training mode become): the
  statistics as reductions, the normalisation as pointwise math; ``repeat`` as an expand and a copy.
- ``_native_batch_norm_legit_no_training`` (batch norm in eval mode): pointwise math over the running
  statistics, one fusable chain.
- ``adaptive_max_pool2d`` whose output divides its input: ``max_pool2d_with_indices`` with that window.
- ``convolution`` over three spatial dimensions, plain or transposed: one over two per depth tap, depth folded
  into the batch (a transposed one's taps spread and shifted along depth, then summed and cropped).
- ``avg_pool3d``: two ``avg_pool2d`` passes, one over height and width, one over depth. An average over a box
  window is separable, its divisor included: PyTorch's divisor (the window clipped to the padded or, without
  ``count_include_pad``, to the real input) is a product of one extent per axis.
- ``max_pool3d_with_indices``: two ``max_pool2d_with_indices`` passes, likewise (a maximum over a box is the
  maximum over depth of the maxima over height and width). The index is the first maximum's in (depth, height,
  width) order, PyTorch's: the first depth holding the maximum, then its plane's first; a NaN, PyTorch's last.
- ``index.Tensor`` (``x[i, j]``) on consecutive dimensions: one ``index_select`` over them merged;
  ``repeat_interleave`` of counts with an ``output_size``: the running count of runs that ended (a mark
  scattered at each run's end, then a cumulative sum: linear, where a search per element was not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

aten = torch.ops.aten


def table() -> dict[Any, Callable]:
    """PyTorch's core ATen decompositions with kevolve's on top."""
    decompositions = torch.export.default_decompositions()
    decompositions.update(EXTRA)
    return decompositions


def _reduce_with_index(values: Any, indices: Any) -> Callable:
    def decompose(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        return values(x, [dim], keepdim), indices(x, dim, keepdim)

    return decompose


def _split_with_sizes(x: torch.Tensor, sizes: Sequence[int], dim: int = 0) -> list[torch.Tensor]:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [aten.slice.Tensor(x, dim, start, start + size) for start, size in zip(starts, sizes)]


def _split(x: torch.Tensor, size: int, dim: int = 0) -> list[torch.Tensor]:
    length = x.shape[dim]
    return _split_with_sizes(x, [min(size, length - start) for start in range(0, length, size)], dim)


def _batch_norm_no_stats(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, training: bool,
                         momentum: float, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Normalised over every dimension but the channels (1): (output, mean, 1 / sqrt(biased variance + eps))."""
    dims = [0, *range(2, x.dim())]
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    mean = aten.mean.dim(x, dims, True)
    centred = aten.sub.Tensor(x, mean)
    rstd = aten.rsqrt.default(aten.add.Scalar(aten.mean.dim(aten.mul.Tensor(centred, centred), dims, True), eps))
    out = aten.mul.Tensor(centred, rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, shape))
    return out, aten.view.default(mean, [x.shape[1]]), aten.view.default(rstd, [x.shape[1]])


def _batch_norm_no_training(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                            running_mean: torch.Tensor, running_var: torch.Tensor, momentum: float,
                            eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batch norm in inference (``BatchNorm`` in eval mode): elementwise math over the running statistics, every
    step at the input's shape with the per-channel tensors expanded, so that it fuses into one pointwise kernel
    (and into the pointwise ops around it). As a norm kernel it had one lane per channel: a few hundred lanes
    walking every element of their channel (BatchNorm2d over 32x128x56x56 at 0.17x eager on an H200). The saved
    statistics, empty in inference, are empty views."""
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)

    def per_channel(t: torch.Tensor) -> torch.Tensor:
        return aten.expand.default(aten.view.default(t, shape), list(x.shape))

    out = aten.mul.Tensor(aten.sub.Tensor(x, per_channel(running_mean)),
                          aten.rsqrt.default(aten.add.Scalar(per_channel(running_var), eps)))
    if weight is not None:
        out = aten.mul.Tensor(out, per_channel(weight))
    if bias is not None:
        out = aten.add.Tensor(out, per_channel(bias))
    empty = aten.slice.Tensor(running_mean, 0, 0, 0)
    return out, empty, empty


def _repeat(x: torch.Tensor, repeats: Sequence[int]) -> torch.Tensor:
    """Each dimension d of size s becomes (repeats[d], s) by an expand, then one copy merges the pairs."""
    lead = len(repeats) - x.dim()
    sizes = [1] * lead + list(x.shape)
    paired = aten.view.default(x, [v for s in sizes for v in (1, s)])
    expanded = aten.expand.default(paired, [v for r, s in zip(repeats, sizes) for v in (r, s)])
    return aten.view.default(aten.clone.default(expanded, memory_format=torch.contiguous_format),
                             [r * s for r, s in zip(repeats, sizes)])


def _adaptive_max_pool2d(x: torch.Tensor, output_size: Sequence[int]) -> Any:
    height, width = x.shape[-2], x.shape[-1]
    out_h, out_w = output_size
    if height % out_h or width % out_w:
        return NotImplemented
    window = [height // out_h, width // out_w]
    return aten.max_pool2d_with_indices.default(x, window, window)


def _three(value: Sequence[int] | int) -> list[int]:
    """A pooling argument per spatial dimension of three (one value stands for all)."""
    return [value] * 3 if isinstance(value, int) else list(value) * (3 if len(value) == 1 else 1)


def _avg_pool3d(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                padding: Sequence[int] | int = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: int | None = None) -> Any:
    if divisor_override is not None or x.dim() != 5:
        return NotImplemented
    kernel, step = _three(kernel_size), _three(stride or kernel_size)
    pad = _three(padding)
    n, c, depth, height, width = x.shape
    planes = aten.avg_pool2d.default(aten.reshape.default(x, [n, c * depth, height, width]), kernel[1:], step[1:],
                                     pad[1:], ceil_mode, count_include_pad)
    out_h, out_w = planes.shape[-2], planes.shape[-1]
    columns = aten.view.default(planes, [n, c, depth, out_h * out_w])
    pooled = aten.avg_pool2d.default(columns, [kernel[0], 1], [step[0], 1], [pad[0], 0], ceil_mode,
                                     count_include_pad)
    return aten.view.default(pooled, [n, c, pooled.shape[2], out_h, out_w])


def _max_pool3d(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                padding: Sequence[int] | int = 0, dilation: Sequence[int] | int = 1, ceil_mode: bool = False) -> Any:
    if x.dim() != 5:
        return NotImplemented
    kernel, step = _three(kernel_size), _three(stride or kernel_size)
    pad, spread = _three(padding), _three(dilation)
    n, c, depth, height, width = x.shape
    planes, within = aten.max_pool2d_with_indices.default(aten.reshape.default(x, [n, c * depth, height, width]),
                                                           kernel[1:], step[1:], pad[1:], spread[1:], ceil_mode)
    out_h, out_w = planes.shape[-2], planes.shape[-1]
    columns = aten.view.default(planes, [n, c, depth, out_h * out_w])
    pooled, across = aten.max_pool2d_with_indices.default(columns, [kernel[0], 1], [step[0], 1], [pad[0], 0],
                                                          [spread[0], 1], ceil_mode)
    # across indexes (depth, column) of the columns: its depth picks the plane whose own index is taken
    taken = aten.div.Tensor_mode(across, out_h * out_w, rounding_mode="floor")
    plane = aten.gather.default(aten.view.default(within, [n, c, depth, out_h * out_w]), 2, taken)
    indices = aten.add.Tensor(aten.mul.Tensor(taken, height * width), plane)
    shape = [n, c, pooled.shape[2], out_h, out_w]
    return aten.view.default(pooled, shape), aten.view.default(indices, shape)


def _convolution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Any:
    """A convolution over three spatial dimensions as one over two per depth tap, depth folded into the batch."""
    if x.dim() != 5:
        return NotImplemented
    conv = _conv_transpose3d if transposed else _conv3d
    out = conv(x, weight, stride, padding, dilation, output_padding, groups)
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, [1, bias.shape[0], 1, 1, 1]))
    return aten.clone.default(out, memory_format=torch.contiguous_format)


def _planes(x: torch.Tensor) -> torch.Tensor:
    """(N, C, D, H, W) -> (N * D, C, H, W)"""
    n, c, d, h, w = x.shape
    return aten.reshape.default(aten.permute.default(x, [0, 2, 1, 3, 4]), [n * d, c, h, w])


def _conv3d(x: torch.Tensor, weight: torch.Tensor, stride: Sequence[int], padding: Sequence[int],
            dilation: Sequence[int], output_padding: Sequence[int], groups: int) -> torch.Tensor:
    """out[:, :, o] = sum over taps k of conv2d(x[:, :, o * stride + k * dilation], weight[:, :, k])."""
    (step, pad, spread), taps = (stride[0], padding[0], dilation[0]), weight.shape[2]
    if pad:
        x = aten.constant_pad_nd.default(x, [0, 0, 0, 0, pad, pad])
    n, depth = x.shape[0], x.shape[2]
    out_depth = (depth - spread * (taps - 1) - 1) // step + 1
    total = None
    for k in range(taps):
        sliced = aten.slice.Tensor(x, 2, k * spread, k * spread + step * (out_depth - 1) + 1, step)
        planes = aten.convolution.default(_planes(sliced), aten.select.int(weight, 2, k), None, list(stride[1:]),
                                          list(padding[1:]), list(dilation[1:]), False, [0, 0], groups)
        total = planes if total is None else aten.add.Tensor(total, planes)
    height, width = total.shape[-2], total.shape[-1]
    return aten.permute.default(aten.view.default(total, [n, out_depth, total.shape[1], height, width]),
                                [0, 2, 1, 3, 4])


def _conv_transpose3d(x: torch.Tensor, weight: torch.Tensor, stride: Sequence[int], padding: Sequence[int],
                      dilation: Sequence[int], output_padding: Sequence[int], groups: int) -> torch.Tensor:
    """Input depth i and tap k write output depth i * stride + k * dilation - padding: per tap, a transposed
    conv2d of every input plane, spread along depth to every stride-th place and shifted by the tap; summed,
    then cropped by the padding."""
    (step, pad, spread, extra), taps = (stride[0], padding[0], dilation[0], output_padding[0]), weight.shape[2]
    n, depth = x.shape[0], x.shape[2]
    full = (depth - 1) * step + spread * (taps - 1) + 1 + extra
    planes = _planes(x)
    total = None
    for k in range(taps):
        y = aten.convolution.default(planes, aten.select.int(weight, 2, k), None, list(stride[1:]),
                                     list(padding[1:]), list(dilation[1:]), True, list(output_padding[1:]), groups)
        channels, height, width = y.shape[1:]
        y = aten.view.default(y, [n, depth, 1, channels, height, width])
        if step > 1:  # every stride-th depth: zeros between the planes
            y = aten.constant_pad_nd.default(y, [0, 0, 0, 0, 0, 0, 0, step - 1])
        y = aten.slice.Tensor(aten.reshape.default(y, [n, depth * step, channels, height, width]), 1, 0,
                              (depth - 1) * step + 1)
        y = aten.constant_pad_nd.default(y, [0, 0, 0, 0, 0, 0, k * spread, full - k * spread - y.shape[1]])
        total = y if total is None else aten.add.Tensor(total, y)
    out_depth = full - 2 * pad
    return aten.permute.default(aten.slice.Tensor(total, 1, pad, pad + out_depth), [0, 2, 1, 3, 4])


def _index(x: torch.Tensor, indices: Sequence[torch.Tensor | None]) -> Any:
    """``x[..., i, j, ...]`` with index tensors on consecutive dimensions: those dimensions merged into one (a
    reshape), the broadcast indices turned into positions in it (wrapped where negative), one ``index_select``, and
    the result reshaped. Indices split by a ``None`` (PyTorch then moves the indexed dimensions first) or a
    boolean mask stay as they are."""
    at = [d for d, t in enumerate(indices) if t is not None]
    if not at or at != list(range(at[0], at[0] + len(at))) or any(indices[d].dtype == torch.bool for d in at):
        return NotImplemented
    first, last = at[0], at[-1] + 1
    sizes = list(x.shape[first:last])
    index = torch.broadcast_tensors(*[indices[d] for d in at])
    position = None
    for tensor, size in zip(index, sizes):
        wrapped = aten.remainder.Scalar(tensor, size)
        position = wrapped if position is None else aten.add.Tensor(aten.mul.Tensor(position, size), wrapped)
    merged = aten.reshape.default(x, [*x.shape[:first], -1, *x.shape[last:]])
    picked = aten.index_select.default(merged, first, aten.reshape.default(position, [-1]))
    return aten.reshape.default(picked, [*x.shape[:first], *index[0].shape, *x.shape[last:]])


def _repeat_interleave(repeats: torch.Tensor, output_size: int | None = None) -> Any:
    """The index of each of ``output_size`` elements' run: how many runs ended at or before it, one mark added at
    each run's end (its running sum; the last ends at ``output_size``, one past the elements) and the marks
    summed cumulatively. Two linear passes, where a binary search per element cost ``log2(runs)`` dependent
    loads. Without ``output_size`` the length is the repeats' sum, a value: left as it is."""
    if output_size is None:
        return NotImplemented
    ends = aten.cumsum.default(repeats, 0)
    marks = aten.zeros.default([output_size + 1], dtype=repeats.dtype, device=repeats.device)
    marks = aten.scatter_add.default(marks, 0, ends, aten.ones_like.default(ends))
    return aten.cumsum.default(aten.slice.Tensor(marks, 0, 0, output_size), 0)


EXTRA: dict[Any, Callable] = {
    aten.index.Tensor: _index,
    aten.repeat_interleave.Tensor: _repeat_interleave,
    aten.convolution.default: _convolution,
    aten.min.dim: _reduce_with_index(aten.amin.default, aten.argmin.default),
    aten.max.dim: _reduce_with_index(aten.amax.default, aten.argmax.default),
    aten.split_with_sizes.default: _split_with_sizes,
    aten.split.Tensor: _split,
    aten._native_batch_norm_legit.no_stats: _batch_norm_no_stats,
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
    aten.repeat.default: _repeat,
    aten.adaptive_max_pool2d.default: _adaptive_max_pool2d,
    aten.avg_pool3d.default: _avg_pool3d,
    aten.max_pool3d_with_indices.default: _max_pool3d,
}
