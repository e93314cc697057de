"""ATen conformance kernels in Triton: convolutions, pooling, resizing and padding
(:mod:`kevolve.conformance.ops.conv`), the same kernel kinds and semantics as the C++ recipes of
:mod:`kevolve_cpu.recipes.cpp_aten_conv`.

One renderer per kernel kind; each kernel is one program per block of output elements (every element written,
the output poisoned by the judge). The op's integer arguments arrive packed in an int64 tensor (scale factors
and pad's constant in a float64 one) and are read with ``tl.load`` inside the kernel, so one compiled kernel
(and, under the interpreter, one launch path) serves every sample of an op and mode: window sizes read that way
are runtime loop bounds. The launcher reads only shapes and dtypes (no torch calls: the judge records ATen
dispatch while it runs) and declines, with a "declined" error, what the kernel was not written for.

- ``conv``: conv1d/conv2d and conv_transpose2d; groups follow from the shapes. ``ALGO`` "gemm" runs a
  convolution as an implicit GEMM per group (rows: the output positions, columns: the group's output channels,
  reduction: input channel x window tap; the input tile gathered through the window, padding taps loaded as 0)
  on ``tl.dot``, float32 at a precision that keeps float32 accuracy (``INPUT_PRECISION``: never plain tf32);
  a transposed convolution is the same GEMM over the taps that gather into an output position (the input rows
  whose stride divides the offset; at stride s, all but 1/s of a row's taps are masked off). "direct", and a
  group too narrow for a dot tile (fewer than 16 output channels or reduction terms), gathers the window per
  output element. The direct form ran 25-100x behind cuDNN on a lent H200 (conv2d 3x3 at 0.01x eager,
  conv_transpose2d at 0.002x): one output element a lane, its whole reduction in scalar multiply-adds. The GEMM
  with one flat (channel, tap) reduction ran conv2d 3x3 (32x64x56x56 to 128 channels) in 636 us against
  cuDNN's 170 us, each K tile dividing a [BLOCK_M, BLOCK_K] tile of terms into channel and tap; ``ORDER``
  "taps" (where the channels fill whole K tiles) walks the taps outside and the channels inside instead: a
  knob the search may try, not the default (on the H200, 849 us a call against the flat form's 716).
- ``pool``: max_pool2d (ATen's window walk: a NaN always taken, so the last NaN wins; ties keep the first; the
  index within the plane) and avg_pool2d (ATen's divisor: the window clipped to the padded input,
  count_include_pad, divisor_override; an empty window gives 0).
- ``adaptive_pool``: adaptive average over 1-3 spatial dims (ATen's start/end indices), also interpolate's area.
- ``resize``: interpolate's nearest, nearest-exact, linear (1-3 dims) and cubic, ATen's source-index arithmetic
  in float32 (divisions with ``tl.div_rn``, so the GPU's approximate division cannot move an index).
- ``pad``: constant, reflect, replicate (negative pads crop) and circular, one source index per dimension.

Values are loaded in their storage dtype, computed in float32 and stored in the output's dtype (bfloat16 ready).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from kevolve import diagnosis as d
from kevolve.conformance.kernel import KernelSpec, conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import header, launch_args, launch_params, pow2_range
from kevolve_triton.recipes.matmul import fp32_precisions
from kevolve_triton.recipes.host import DTYPE_NAME, host_functions

#: storage dtypes the kernels load and store (computed in float32)
FLOATS = ("float32", "bfloat16", "float16")
#: dimensions the pad kernel indexes (the table's MAX_DIMS); smaller inputs get leading size-1 dimensions
PAD_DIMS = 8
#: interpolate modes (the table's kernel names) -> taps per spatial dimension
RESIZE_TAPS = {"nearest": 1, "nearest-exact": 1, "linear": 2, "cubic": 4}
PAD_MODES = ("constant", "reflect", "replicate", "circular")

#: host helpers every launcher shares (copied into the kernel file)
_HOST = host_functions(DTYPE_NAME) + '''def _decline(why):
    raise RuntimeError(f"declined: {why}")


def _check_dtypes(tensors, names):
    if tuple(_dtype_name(t) for t in tensors) != tuple(names):
        _decline("dtype")


def _numel(shape):
    count = 1
    for size in shape:
        count *= size
    return count


'''


class _AtenConvRecipe(Recipe):
    """What every kernel kind of this module shares: the family, the layouts it claims, the schedule (a block
    of output elements per program and the target's launch knobs)."""

    language = "triton"
    families = ("aten_pointwise",)
    layouts: tuple[str, ...] = ()

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, self.layouts)
        return (kernel is not None and bool(kernel.inputs) and kernel.inputs[0][1] in FLOATS
                and kernel.outputs[0] in FLOATS)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            Param("BLOCK", pow2_range(128, 2048), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
                  default=512),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k: KernelSpec = problem.kernel  # type: ignore[attr-defined]
        return header(problem, params) + self.device(k) + "\n\n" + _HOST + self.launcher(k, params)

    def device(self, k: KernelSpec) -> str:
        """The ``@triton.jit`` functions of the file."""
        raise NotImplementedError

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        """The host function ``kernel(inputs, outputs)``: checks, sizes, the launch."""
        raise NotImplementedError


def _flat_offsets() -> str:
    """The lines every kernel starts with: this program's output elements (int64, so large outputs index
    correctly) and their mask."""
    return """    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total"""


def _mode(k: KernelSpec, modes: Container[str], what: str) -> str:
    """The kernel's ``mode`` attribute, checked against the modes the recipe has code for."""
    mode = k.attrs.get("mode")
    if mode not in modes:
        raise ValueError(f"{what} mode {mode!r}")
    return str(mode)


def _take_tensors(names: list[str], dtypes: list[str]) -> str:
    """The launcher lines that decline a call with other than ``len(names) - 1`` inputs and one output, name the
    tensors and check their dtypes (the last name is the output)."""
    inputs = ", ".join(f"inputs[{i}]" for i in range(len(names) - 1))
    return f"""    if len(inputs) != {len(names) - 1} or len(outputs) != 1:
        _decline("wrong number of tensors")
    {", ".join(names)} = {inputs}, outputs[0]
    _check_dtypes([{", ".join(names)}], ({", ".join(dtypes)}))"""


def _launch(name: str, args: str, params: dict[str, Any]) -> str:
    """The launch line of kernel ``name`` over ``total`` output elements."""
    block = params["BLOCK"]
    return f"    {name}[(triton.cdiv(total, {block}),)]({args}, BLOCK={block}{launch_args(params, contract=False)})"


# --- conv ---------------------------------------------------------------------------------------------------------

_CONV_DEVICE = """@triton.jit
def _kv_conv_kernel(x_ptr, w_ptr, b_ptr, p_ptr, out_ptr, total, C, H, W, OC, OH, OW, KH, KW, cin_g, cout_g,
                    HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, BLOCK: tl.constexpr):
    # params: [stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups] (groups follows from the shapes)
{offsets}
    ow = offs % OW
    rest = offs // OW
    oh = rest % OH
    rest = rest // OH
    oc = rest % OC
    n = rest // OC
    sh = tl.load(p_ptr + 0)
    sw = tl.load(p_ptr + 1)
    ph = tl.load(p_ptr + 2)
    pw = tl.load(p_ptr + 3)
    dh = tl.load(p_ptr + 4)
    dw = tl.load(p_ptr + 5)
    g = oc // cout_g
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for ci in range(cin_g):
        c = g * cin_g + ci
        x_base = (n * C + c) * H * W
        for kh in range(KH):
            if TRANSPOSED:
                # out[oh] gathers x[ih] with ih * sh - ph + kh * dh == oh
                th = oh + ph - kh * dh
                th = tl.where(th >= 0, th, 0 * th - 1)
                ih = th // sh
                ok_h = (th >= 0) & (th % sh == 0) & (ih < H)
            else:
                ih = oh * sh - ph + kh * dh
                ok_h = (ih >= 0) & (ih < H)
            for kw in range(KW):
                if TRANSPOSED:
                    tw = ow + pw - kw * dw
                    tw = tl.where(tw >= 0, tw, 0 * tw - 1)
                    iw = tw // sw
                    ok = mask & ok_h & (tw >= 0) & (tw % sw == 0) & (iw < W)
                    w_index = ((c * cout_g + (oc - g * cout_g)) * KH + kh) * KW + kw
                else:
                    iw = ow * sw - pw + kw * dw
                    ok = mask & ok_h & (iw >= 0) & (iw < W)
                    w_index = ((oc * cin_g + ci) * KH + kh) * KW + kw
                xv = tl.load(x_ptr + x_base + ih * W + iw, mask=ok, other=0.0).to(tl.float32)
                wv = tl.load(w_ptr + w_index, mask=ok, other=0.0).to(tl.float32)
                acc += xv * wv
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)"""


_CONV_GEMM_DEVICE = """@triton.jit
def _kv_conv_gemm_kernel(x_ptr, w_ptr, b_ptr, p_ptr, out_ptr, M, C, H, W, OC, OH, OW, KH, KW, cin_g, cout_g,
                         HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, PRECISION: tl.constexpr,
                         TAPS_OUTER: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    # one group's output tile: rows (n, oh, ow), columns the group's output channels; the reduction runs over
    # (ci, kh, kw) (transposed: the weight is (C, cout_g, KH, KW), and a tap reads the input row whose stride
    # divides its offset, as the direct kernel). TAPS_OUTER (ORDER "taps", where the group's channels fill
    # whole K tiles): tap by tap, each tap's window position computed once per output row, the channels
    # stepping through the K tiles with no division in the loop; otherwise the (ci, kh, kw) terms are one flat
    # range, each K tile dividing its terms into channel and tap (few channels: a stem's 3)
    g = tl.program_id(2)
    rm = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = rm < M
    mask_n = rn < cout_g
    # positions within a plane in int32 (the [BLOCK_M, BLOCK_K] index tiles are most of the registers); the
    # planes' offsets in int64
    ow = (rm % OW).to(tl.int32)
    rest = rm // OW
    oh = (rest % OH).to(tl.int32)
    n = rest // OH
    oc = g * cout_g + rn
    sh = tl.load(p_ptr + 0).to(tl.int32)
    sw = tl.load(p_ptr + 1).to(tl.int32)
    ph = tl.load(p_ptr + 2).to(tl.int32)
    pw = tl.load(p_ptr + 3).to(tl.int32)
    dh = tl.load(p_ptr + 4).to(tl.int32)
    dw = tl.load(p_ptr + 5).to(tl.int32)
    taps = KH * KW
    K = cin_g * taps
    if TRANSPOSED:  # out[oh] gathers x[ih] with ih * sh - ph + kh * dh == oh
        top = oh + ph
        left = ow + pw
    else:
        top = oh * sh - ph
        left = ow * sw - pw
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if TAPS_OUTER:
        for tap in range(0, taps):
            if TRANSPOSED:
                th = top - (tap // KW) * dh
                tw = left - (tap % KW) * dw
                ih = th // sh
                iw = tw // sw
                inside = (th >= 0) & (tw >= 0) & (th % sh == 0) & (tw % sw == 0) & (ih < H) & (iw < W)
            else:
                ih = top + (tap // KW) * dh
                iw = left + (tap % KW) * dw
                inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            row = (n * C + g * cin_g) * H * W + ih * W + iw
            rows_in = mask_m & inside
            for c0 in range(0, cin_g, BLOCK_K):
                ci = c0 + tl.arange(0, BLOCK_K)
                a = tl.load(x_ptr + row[:, None] + ci[None, :].to(tl.int64) * H * W, mask=rows_in[:, None],
                            other=0.0)
                if TRANSPOSED:
                    w_offs = ((g * cin_g + ci)[:, None].to(tl.int64) * cout_g + rn[None, :]) * taps + tap
                else:
                    w_offs = oc[None, :].to(tl.int64) * K + ci[:, None] * taps + tap
                b = tl.load(w_ptr + w_offs, mask=mask_n[None, :], other=0.0)
                acc = tl.dot(a, b, acc, input_precision=PRECISION)
    else:
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            mask_k = kk < K
            ci = kk // taps
            tap = kk % taps
            if TRANSPOSED:
                th = top[:, None] - (tap // KW)[None, :] * dh
                tw = left[:, None] - (tap % KW)[None, :] * dw
                ih = th // sh
                iw = tw // sw
                inside = (th >= 0) & (tw >= 0) & (th % sh == 0) & (tw % sw == 0) & (ih < H) & (iw < W)
                w_offs = ((g * cin_g + ci)[:, None].to(tl.int64) * cout_g + rn[None, :]) * taps + tap[:, None]
            else:
                ih = top[:, None] + (tap // KW)[None, :] * dh
                iw = left[:, None] + (tap % KW)[None, :] * dw
                inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                w_offs = oc[None, :].to(tl.int64) * K + kk[:, None]
            plane = n[:, None] * C + (g * cin_g + ci)[None, :]
            a = tl.load(x_ptr + (plane * H + ih) * W + iw, mask=mask_m[:, None] & mask_k[None, :] & inside,
                        other=0.0)
            b = tl.load(w_ptr + w_offs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    spot = ((n[:, None] * OC + oc[None, :]) * OH + oh[:, None]) * OW + ow[:, None]
    tl.store(out_ptr + spot, acc.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])"""

#: the smallest dot tile side: a group with fewer output channels or reduction terms runs direct
DOT_MIN = 16
#: the arguments both convolution kernels take first (``count``: the outputs, or the GEMM's rows, to cover)
_CONV_ARGS = ("x, w, bias if has_bias else x, p, out, {count}, C, H, W, OC, OH, OW, KH, KW, cin_g, cout_g, "
              "HAS_BIAS=has_bias")


class TritonAtenConv(_AtenConvRecipe):
    """conv1d / conv2d / conv_transpose2d on (N, C, H, W) (conv1d viewed with H = 1 by the host).

    Inputs: x, weight, [bias], params = [stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups]. The output's
    spatial size is read from the output (conv1d: its last dimension, height 1); groups from the channel counts
    (conv: C / weight's in-channels; transposed: out-channels / weight's out-channels)."""

    name = "triton.aten_conv"
    layouts = ("conv",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        k: KernelSpec = problem.kernel  # type: ignore[attr-defined]
        tile = {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1}
        gemm = [Param("ALGO", ("gemm", "direct"), {d.COMPUTE_BOUND: -1, d.OCCUPANCY_LIMITED: +1}, default="gemm"),
                Param("BLOCK_M", (32, 64, 128), tile, default=128),
                Param("BLOCK_N", (16, 32, 64, 128), tile, default=64),
                Param("BLOCK_K", (16, 32, 64), {d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1}, default=16),
                # the reduction tap by tap where the channels fill whole K tiles, or one flat range (the default:
                # conv2d 3x3 on a lent H200, flat 716 us a call against taps 849; tap by tap, a K tile's weights
                # are read a tap's stride apart)
                Param("ORDER", ("flat", "taps"), {d.COMPUTE_BOUND: +1}, default="flat")]
        if k.inputs[0][1] == "float32":
            precisions = fp32_precisions(facts)
            gemm.append(Param("INPUT_PRECISION", precisions, {d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1},
                              default=precisions[-1]))
        return ScheduleSpace([*gemm, *super().space(problem, facts).params])

    def device(self, k: KernelSpec) -> str:
        return _CONV_DEVICE.format(offsets=_flat_offsets()) + "\n\n\n" + _CONV_GEMM_DEVICE

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        transposed = k.op.endswith("conv_transpose2d")
        oh = "1" if k.op.endswith("conv1d") else "out.shape[-2]"
        if transposed:  # weight (C, OC / groups, KH, KW); the output holds OC
            channels = """    cout_g = w.shape[1]
    OC = out.shape[-3] if out.dim() >= 3 else 0
    if cout_g < 1 or OC % cout_g or w.shape[0] != C:
        _decline("channel counts")
    groups = OC // cout_g
    if C % groups:
        _decline("channel counts")
    cin_g = C // groups"""
        else:  # weight (OC, C / groups, KH, KW)
            channels = """    OC, cin_g = w.shape[0], w.shape[1]
    if cin_g < 1 or C % cin_g:
        _decline("channel counts")
    groups = C // cin_g
    if OC % groups:
        _decline("channel counts")
    cout_g = OC // groups"""
        x_dtype = k.inputs[0][1]
        args = _CONV_ARGS.format(count="total") + f", TRANSPOSED={transposed}"
        return f"""def kernel(inputs, outputs):
    if len(inputs) not in (3, 4) or len(outputs) != 1:
        _decline("wrong number of tensors")
    has_bias = len(inputs) == 4
    x, w, p, out = inputs[0], inputs[1], inputs[-1], outputs[0]
    bias = inputs[2] if has_bias else None
    _check_dtypes(inputs[:-1], ({x_dtype!r},) * (len(inputs) - 1))
    _check_dtypes([p, out], ("int64", {k.outputs[0]!r}))
    if x.dim() != 4 or w.dim() != 4 or p.numel() != 7 or out.dim() < 2:
        _decline("shape")
    N, C, H, W = x.shape
    KH, KW = w.shape[2], w.shape[3]
{channels}
    OH, OW = {oh}, out.shape[-1]
    total = N * OC * OH * OW
    if out.numel() != total or (has_bias and bias.numel() != OC):
        _decline("shape")
    if total == 0:
        return
{self._gemm_launch(params, transposed)}{_launch("_kv_conv_kernel", args, params)}
"""

    @staticmethod
    def _gemm_launch(params: dict[str, Any], transposed: bool) -> str:
        """The launcher lines that run the convolution as an implicit GEMM where its groups fill a dot tile (and
        return); nothing for the direct form."""
        if params.get("ALGO", "direct") != "gemm":
            return ""
        bm, bn, bk = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_K"]
        precision = params.get("INPUT_PRECISION", "ieee")
        by_taps = params.get("ORDER", "flat") == "taps"
        args = (_CONV_ARGS.format(count="N * OH * OW") + f", TRANSPOSED={transposed}, PRECISION={precision!r}, "
                f"TAPS_OUTER={by_taps} and cin_g % {bk} == 0, BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}")
        grid = f"(triton.cdiv(N * OH * OW, {bm}), triton.cdiv(cout_g, {bn}), groups)"
        return f"""    if cout_g >= {DOT_MIN} and cin_g * KH * KW >= {DOT_MIN}:
        _kv_conv_gemm_kernel[{grid}]({args}{launch_args(params, contract=False)})
        return
"""


# --- pool ---------------------------------------------------------------------------------------------------------

#: both pooling kernels: the output element's plane and position, and the window's size, stride and padding
#: (params[0:6])
_POOL_WINDOW = """    ow = offs % OW
    rest = offs // OW
    oh = rest % OH
    plane = rest // OH
    kh = tl.load(p_ptr + 0)
    kw = tl.load(p_ptr + 1)
    sh = tl.load(p_ptr + 2)
    sw = tl.load(p_ptr + 3)
    ph = tl.load(p_ptr + 4)
    pw = tl.load(p_ptr + 5)"""

_MAX_POOL_DEVICE = """@triton.jit
def _kv_max_pool_kernel(x_ptr, p_ptr, out_ptr, idx_ptr, total, H, W, OH, OW, HAS_INDEX: tl.constexpr,
                        BLOCK: tl.constexpr):
    # params: [kh, kw, sh, sw, ph, pw, dh, dw]; PyTorch's cpu_max_pool: the window clipped to the input (its start
    # stepped in by dilations), the maximum taken on > or NaN (so the last NaN wins), the index within the plane
{offsets}
{window}
    dh = tl.load(p_ptr + 6)
    dw = tl.load(p_ptr + 7)
    ih0 = oh * sh - ph
    iw0 = ow * sw - pw
    ih1 = tl.minimum(ih0 + (kh - 1) * dh + 1, H)
    iw1 = tl.minimum(iw0 + (kw - 1) * dw + 1, W)
    ih0 += (tl.maximum(-ih0, 0) + dh - 1) // dh * dh
    iw0 += (tl.maximum(-iw0, 0) + dw - 1) // dw * dw
    best = ih0 * W + iw0
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    x_base = plane * H * W
    for a in range(kh):
        ih = ih0 + a * dh
        for b in range(kw):
            iw = iw0 + b * dw
            ok = mask & (ih < ih1) & (iw < iw1)
            v = tl.load(x_ptr + x_base + ih * W + iw, mask=ok, other=0.0).to(tl.float32)
            take = ok & ((v > m) | (v != v))
            m = tl.where(take, v, m)
            best = tl.where(take, ih * W + iw, best)
    tl.store(out_ptr + offs, m.to(out_ptr.dtype.element_ty), mask=mask)
    if HAS_INDEX:
        tl.store(idx_ptr + offs, best.to(tl.int64), mask=mask)"""

_AVG_POOL_DEVICE = """@triton.jit
def _kv_avg_pool_kernel(x_ptr, p_ptr, out_ptr, total, H, W, OH, OW, BLOCK: tl.constexpr):
    # params: [kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override]; PyTorch's cpu_avg_pool2d: the pool
    # size counts the padding inside the padded input, the sum only the input; an empty window gives 0
{offsets}
{window}
    include_pad = tl.load(p_ptr + 6)
    divisor_override = tl.load(p_ptr + 7)
    ih0 = oh * sh - ph
    iw0 = ow * sw - pw
    ih1 = tl.minimum(ih0 + kh, H + ph)
    iw1 = tl.minimum(iw0 + kw, W + pw)
    pool_size = (ih1 - ih0) * (iw1 - iw0)
    ih0 = tl.maximum(ih0, 0)
    iw0 = tl.maximum(iw0, 0)
    ih1 = tl.minimum(ih1, H)
    iw1 = tl.minimum(iw1, W)
    empty = (ih0 >= ih1) | (iw0 >= iw1)
    divisor = tl.where(divisor_override != 0, divisor_override,
                       tl.where(include_pad != 0, pool_size, (ih1 - ih0) * (iw1 - iw0)))
    divisor = tl.where(empty | (divisor == 0), 1, divisor)
    total_sum = tl.zeros([BLOCK], dtype=tl.float32)
    x_base = plane * H * W
    for a in range(kh):
        ih = ih0 + a
        for b in range(kw):
            iw = iw0 + b
            ok = mask & (ih < ih1) & (iw < iw1)
            total_sum += tl.load(x_ptr + x_base + ih * W + iw, mask=ok, other=0.0).to(tl.float32)
    value = tl.where(empty, 0.0, tl.div_rn(total_sum, divisor.to(tl.float32)))
    tl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)"""


class TritonAtenPool(_AtenConvRecipe):
    """max_pool2d and avg_pool2d on (N, C, H, W) (unbatched inputs batched by the host), PyTorch's CPU window walk.

    max_pool2d params: [kh, kw, sh, sw, ph, pw, dh, dw]; a second output, when handed one, gets the index of the
    maximum within its plane. avg_pool2d params: [kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override]."""

    name = "triton.aten_pool"
    layouts = ("pool",)

    def _op(self, k: KernelSpec) -> str:
        op = k.op.rsplit(".", 1)[-1]
        if op not in ("max_pool2d", "avg_pool2d"):
            raise ValueError(f"no pooling kernel for {k.op}")
        return op

    def device(self, k: KernelSpec) -> str:
        source = _MAX_POOL_DEVICE if self._op(k) == "max_pool2d" else _AVG_POOL_DEVICE
        return source.format(offsets=_flat_offsets(), window=_POOL_WINDOW)

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        if self._op(k) == "max_pool2d":
            counts, name = "(1, 2)", "_kv_max_pool_kernel"
            args = "x, p, out, outputs[1] if has_index else out, total, H, W, OH, OW, HAS_INDEX=has_index"
            index_check = """    has_index = len(outputs) == 2
    if has_index and (_dtype_name(outputs[1]) != "int64" or outputs[1].numel() != total):
        _decline("index output")"""
        else:
            counts, name = "(1,)", "_kv_avg_pool_kernel"
            args = "x, p, out, total, H, W, OH, OW"
            index_check = ""
        return f"""def kernel(inputs, outputs):
    if len(inputs) != 2 or len(outputs) not in {counts}:
        _decline("wrong number of tensors")
    x, p, out = inputs[0], inputs[1], outputs[0]
    _check_dtypes([x, p, out], ({k.inputs[0][1]!r}, "int64", {k.outputs[0]!r}))
    if x.dim() != 4 or out.dim() < 3 or p.numel() != 8:
        _decline("shape")
    H, W = x.shape[2], x.shape[3]
    OH, OW = out.shape[-2], out.shape[-1]
    total = x.shape[0] * x.shape[1] * OH * OW
    if out.numel() != total:
        _decline("shape")
{index_check}
    if total == 0:
        return
{_launch(name, args, params)}
"""


# --- adaptive pool ------------------------------------------------------------------------------------------------

_ADAPTIVE_DEVICE = """@triton.jit
def _kv_adaptive_pool_kernel(x_ptr, out_ptr, total, I0, I1, I2, O0, O1, O2, M0, M1, M2, BLOCK: tl.constexpr):
    # the window of output o along a dim of input size I and output size O is [o * I / O, ceil((o + 1) * I / O))
    # (PyTorch's start_index / end_index); M bounds its length
{offsets}
    c2 = offs % O2
    rest = offs // O2
    c1 = rest % O1
    rest = rest // O1
    c0 = rest % O0
    plane = rest // O0
    lo0 = (c0 * I0) // O0
    lo1 = (c1 * I1) // O1
    lo2 = (c2 * I2) // O2
    hi0 = 1 + ((c0 + 1) * I0 - 1) // O0
    hi1 = 1 + ((c1 + 1) * I1 - 1) // O1
    hi2 = 1 + ((c2 + 1) * I2 - 1) // O2
    x_base = plane * I0 * I1 * I2
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for a in range(M0):
        for b in range(M1):
            for e in range(M2):
                ok = mask & (lo0 + a < hi0) & (lo1 + b < hi1) & (lo2 + e < hi2)
                src = x_base + ((lo0 + a) * I1 + lo1 + b) * I2 + lo2 + e
                acc += tl.load(x_ptr + src, mask=ok, other=0.0).to(tl.float32)
    count = ((hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2)).to(tl.float32)
    tl.store(out_ptr + offs, tl.div_rn(acc, count).to(out_ptr.dtype.element_ty), mask=mask)"""


class TritonAtenAdaptivePool(_AtenConvRecipe):
    """Adaptive average pooling over the last 1-3 dims of a (N, C, ...) input, to the output's size (PyTorch's
    start/end indices). Serves adaptive_avg_pool2d and interpolate's area mode. The longest window along a dim
    (at most ceil(I / O) + 1) is the loop bound, computed by the launcher from the sizes."""

    name = "triton.aten_adaptive_pool"
    layouts = ("adaptive_pool",)

    def device(self, k: KernelSpec) -> str:
        return _ADAPTIVE_DEVICE.format(offsets=_flat_offsets())

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        args = "x, out, total, *I, *O, *M"
        tensors = _take_tensors(["x", "out"], [repr(k.inputs[0][1]), repr(k.outputs[0])])
        return f"""def kernel(inputs, outputs):
{tensors}
    S = x.dim() - 2
    if S < 1 or S > 3 or out.dim() < S:
        _decline("shape")
    I = [1] * (3 - S) + list(x.shape[2:])
    O = [1] * (3 - S) + list(out.shape[out.dim() - S:])
    total = x.shape[0] * x.shape[1] * _numel(O)
    if out.numel() != total:
        _decline("shape")
    if total == 0:
        return
    if _numel(I) == 0:
        _decline("empty input")
    M = [-(-i // o) + 1 for i, o in zip(I, O)]
{_launch("_kv_adaptive_pool_kernel", args, params)}
"""


# --- resize -------------------------------------------------------------------------------------------------------

_RESIZE_DEVICE = """@triton.jit
def _kv_scale_value(s, I, O):
    # 1 / scale factor when one was handed over, else input / output size, in float32
    by_size = tl.div_rn(I.to(tl.float32), O.to(tl.float32))
    by_factor = (1.0 / tl.where(s > 0.0, s, 1.0)).to(tl.float32)
    return tl.where(s > 0.0, by_factor, by_size)


@triton.jit
def _kv_pixel_scale(I, O, align, s):
    # the source step per output pixel: (I - 1) / (O - 1) with align_corners, else _kv_scale_value
    aligned = tl.div_rn((I - 1).to(tl.float32), tl.maximum(O - 1, 1).to(tl.float32))
    aligned = tl.where(O > 1, aligned, 0.0)
    return tl.where(align, aligned, _kv_scale_value(s, I, O))


@triton.jit
def _kv_cubic_weight(t, TAP: tl.constexpr):
    # PyTorch's cubic convolution coefficients (A = -0.75) of tap TAP at fraction t
    A: tl.constexpr = -0.75
    if TAP == 0:
        x = t + 1.0
        w = ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
    elif TAP == 1:
        w = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0
    elif TAP == 2:
        x = 1.0 - t
        w = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    else:
        x = 2.0 - t
        w = ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
    return w


@triton.jit
def _kv_tap(o, I, O, s, align, S: tl.constexpr, TAP: tl.constexpr, MODE: tl.constexpr):
    # source index and weight of tap TAP of output coordinate o along a dim (input size I, output size O)
    of = o.to(tl.float32)
    if MODE == "nearest":
        # 2-D nearest copies when the size is kept and halves the index when it doubles; 1-D and 3-D scale
        idx = tl.minimum(tl.floor(of * _kv_scale_value(s, I, O)).to(tl.int64), I - 1)
        if S == 2:
            idx = tl.where(O == I, o, tl.where(O == 2 * I, o >> 1, idx))
        w = tl.full(o.shape, 1.0, tl.float32)
    elif MODE == "nearest-exact":
        real = ((o.to(tl.float64) + 0.5) * _kv_scale_value(s, I, O).to(tl.float64)).to(tl.float32)
        idx = tl.minimum(tl.floor(real).to(tl.int64), I - 1)
        w = tl.full(o.shape, 1.0, tl.float32)
    elif MODE == "linear":
        sc = _kv_pixel_scale(I, O, align, s)
        real = tl.where(align, sc * of, tl.maximum(sc * (of + 0.5) - 0.5, 0.0))
        i0 = tl.minimum(tl.floor(real).to(tl.int64), I - 1)
        w1 = tl.minimum(tl.maximum(real - i0.to(tl.float32), 0.0), 1.0)
        same = O == I
        if TAP == 0:
            idx = tl.where(same, o, i0)
            w = tl.where(same, 1.0, 1.0 - w1)
        else:
            idx = tl.where(same, o, i0 + tl.where(i0 < I - 1, 1, 0))
            w = tl.where(same, 0.0, w1)
    else:
        sc = _kv_pixel_scale(I, O, align, s)
        real = tl.where(align, sc * of, sc * (of + 0.5) - 0.5)
        base = tl.minimum(tl.floor(real).to(tl.int64), I - 1)
        t = tl.minimum(tl.maximum(real - base.to(tl.float32), 0.0), 1.0)
        w = _kv_cubic_weight(t, TAP)
        idx = tl.maximum(tl.minimum(base + (TAP - 1), I - 1), 0)
    return idx, w


@triton.jit
def _kv_dim_tap(o, I, O, s, align, REAL: tl.constexpr, S: tl.constexpr, TAP: tl.constexpr, MODE: tl.constexpr):
    # a padded dimension (size 1 on both sides) has one tap: index 0, weight 1
    if REAL:
        idx, w = _kv_tap(o, I, O, s, align, S, TAP, MODE)
    else:
        idx = o * 0
        w = tl.full(o.shape, 1.0, tl.float32)
    return idx, w


@triton.jit(do_not_specialize=["I0", "I1", "I2", "O0", "O1", "O2"])
def _kv_resize_kernel(x_ptr, align_ptr, scale_ptr, out_ptr, total, I0, I1, I2, O0, O1, O2, S: tl.constexpr,
                      MODE: tl.constexpr, TAPS: tl.constexpr, T0: tl.constexpr, T1: tl.constexpr,
                      BLOCK: tl.constexpr):
    # dims padded to 3 at the front: dim d is real when d >= 3 - S (its scale factor is scales[d - (3 - S)]) and
    # has TAPS taps, a padded one T0 / T1 = 1; the sizes are never specialised (the tap helpers convert them)
{offsets}
    c2 = offs % O2
    rest = offs // O2
    c1 = rest % O1
    rest = rest // O1
    c0 = rest % O0
    plane = rest // O0
    align = tl.load(align_ptr) != 0
    s2 = tl.load(scale_ptr + (S - 1))
    s1 = s2
    s0 = s2
    if S >= 2:
        s1 = tl.load(scale_ptr + (S - 2))
    if S >= 3:
        s0 = tl.load(scale_ptr + 0)
    x_base = plane * I0 * I1 * I2
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for a in tl.static_range(T0):
        i0, w0 = _kv_dim_tap(c0, I0, O0, s0, align, S >= 3, S, a, MODE)
        for b in tl.static_range(T1):
            i1, w1 = _kv_dim_tap(c1, I1, O1, s1, align, S >= 2, S, b, MODE)
            for e in tl.static_range(TAPS):
                i2, w2 = _kv_dim_tap(c2, I2, O2, s2, align, True, S, e, MODE)
                v = tl.load(x_ptr + x_base + (i0 * I1 + i1) * I2 + i2, mask=mask, other=0.0).to(tl.float32)
                if TAPS == 1:
                    acc = v
                else:
                    acc += v * w0 * w1 * w2
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)"""


class TritonAtenResize(_AtenConvRecipe):
    """interpolate (nearest, nearest-exact, linear over 1-3 dims, bicubic) on (N, C, ...): per output element
    and spatial dim its source indices and weights (PyTorch's float arithmetic), then the weighted sum of its taps
    (nearest: the source element itself). Inputs: x, [align_corners] int64, scale factors float64 (0: none).
    The mode is the kernel's attribute (a constexpr), the spatial rank a constexpr of the launch."""

    name = "triton.aten_resize"
    layouts = ("resize",)

    def device(self, k: KernelSpec) -> str:
        _mode(k, RESIZE_TAPS, "interpolate")
        return _RESIZE_DEVICE.format(offsets=_flat_offsets())

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        mode = _mode(k, RESIZE_TAPS, "interpolate")
        args = (f"x, align, scales, out, total, *I, *O, S=S, MODE={mode!r}, TAPS=taps, T0=taps if S >= 3 else 1, "
                "T1=taps if S >= 2 else 1")
        tensors = _take_tensors(["x", "align", "scales", "out"],
                                [repr(k.inputs[0][1]), '"int64"', '"float64"', repr(k.outputs[0])])
        return f"""def kernel(inputs, outputs):
{tensors}
    S = x.dim() - 2
    if S < 1 or S > 3 or out.dim() != x.dim() or align.numel() != 1 or scales.numel() != S:
        _decline("shape")
    if x.shape[0] != out.shape[0] or x.shape[1] != out.shape[1]:
        _decline("shape")
    I = [1] * (3 - S) + list(x.shape[2:])
    O = [1] * (3 - S) + list(out.shape[2:])
    total = out.numel()
    if total == 0:
        return
    if _numel(I) == 0:
        _decline("empty input")
    taps = {RESIZE_TAPS[mode]}
{_launch("_kv_resize_kernel", args, params)}
"""


# --- pad ----------------------------------------------------------------------------------------------------------

#: per pad mode: Triton lines setting ``src`` (the source coordinate) and ``ok`` (inside the input) from output
#: coordinate ``j`` along a dim of input size ``n`` with padding ``lo`` before it and ``hi`` after it
_PAD_SOURCE = {
    "constant": """src = j - lo
        ok = ok & (src >= 0) & (src < n)""",
    # PyTorch's ReflectionPad / ReplicationPad index, shifted by the crop of a negative padding
    "reflect": """crop = tl.maximum(-lo, 0) - tl.maximum(lo, 0)
        src = tl.where(j < lo, lo * 2 - j, tl.where(j < n + lo, j, (n + lo - 1) * 2 - j)) + crop""",
    "replicate": """crop = tl.maximum(-lo, 0) - tl.maximum(lo, 0)
        src = tl.where(j < lo, lo, tl.where(j < n + lo, j, n + lo - 1)) + crop""",
    # _pad_circular: the cropped input [max(0, -lo), n - max(0, -hi)) repeated around its copy at max(0, lo)
    "circular": """start = tl.maximum(-lo, 0)
        length = tl.maximum(n - start - tl.maximum(-hi, 0), 1)
        m = (j - tl.maximum(lo, 0)) % length
        src = start + tl.where(m < 0, m + length, m)""",
}


def _pad_device(mode: str) -> str:
    """The pad kernel, its per-dimension code unrolled over :data:`PAD_DIMS` dims (innermost last; the host
    puts leading size-1 dims before the input's, whose paddings are read at ``before[d - LEAD]``)."""
    dims = range(PAD_DIMS)
    sizes = ", ".join([f"n{i}" for i in dims] + [f"o{i}" for i in dims])
    lines = []
    for i in reversed(dims):
        lines.append(f"""    if {i} >= LEAD:
        lo = tl.load(before_ptr + ({i} - LEAD))
    else:
        lo = 0
    if True:
        n = n{i}
        hi = o{i} - n{i} - lo
        j = rest % o{i}
        rest = rest // o{i}
        {_PAD_SOURCE[mode]}
        src_off += src * scale
        scale *= n{i}""")
    body = "\n".join(lines)
    return f"""@triton.jit
def _kv_pad_kernel(x_ptr, before_ptr, value_ptr, out_ptr, total, {sizes}, LEAD: tl.constexpr,
                   BLOCK: tl.constexpr):
    # mode {mode}: every output element gathers its source (or the constant)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    rest = offs
    src_off = offs * 0
    scale = tl.full([], 1, tl.int64)
    ok = mask
{body}
    value = tl.load(value_ptr).to(tl.float32)
    v = tl.load(x_ptr + src_off, mask=ok, other=0.0).to(tl.float32)
    v = tl.where(ok, v, value)
    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)"""


class TritonAtenPad(_AtenConvRecipe):
    """pad (constant, reflect, replicate, circular) over any rank up to :data:`PAD_DIMS`: every output element
    gathers its source (or the constant). Inputs: x, the padding before each dim (int64; the padding after it
    follows from the output's size), the constant (float64)."""

    name = "triton.aten_pad"
    layouts = ("pad",)

    def device(self, k: KernelSpec) -> str:
        return _pad_device(_mode(k, PAD_MODES, "pad"))

    def launcher(self, k: KernelSpec, params: dict[str, Any]) -> str:
        _mode(k, PAD_MODES, "pad")
        args = "x, before, value, out, total, *N, *O, LEAD=lead"
        tensors = _take_tensors(["x", "before", "value", "out"],
                                [repr(k.inputs[0][1]), '"int64"', '"float64"', repr(k.outputs[0])])
        return f"""def kernel(inputs, outputs):
{tensors}
    nd = x.dim()
    if nd > {PAD_DIMS} or out.dim() != nd or before.numel() != nd or value.numel() != 1:
        _decline("shape")
    lead = {PAD_DIMS} - nd
    N = [1] * lead + list(x.shape)
    O = [1] * lead + list(out.shape)
    total = out.numel()
    if total == 0:
        return
{_launch("_kv_pad_kernel", args, params)}
"""


RECIPES = [TritonAtenConv(), TritonAtenPool(), TritonAtenAdaptivePool(), TritonAtenResize(), TritonAtenPad()]
