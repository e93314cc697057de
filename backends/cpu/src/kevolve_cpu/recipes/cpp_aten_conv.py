"""ATen conformance kernels in C++: convolutions, pooling, resizing and padding
(:mod:`kevolve.conformance.ops.conv`).

One renderer per kernel kind, parametrised per op; each kernel is one parallel loop over the output's elements
(every element written, the output poisoned by the judge), reading sizes from the tensors and the op's
arguments from the host's packed parameter tensors (int64; float64 for scale factors and the pad constant), so
one kernel serves every sample of an op (and mode):

- ``conv``: conv1d/conv2d (a gather over the window, zero padding skipped) and conv_transpose2d (the gather form:
  input rows whose stride divides the offset); accumulated in double.
- ``pool``: max_pool2d (ATen's window walk: a NaN always taken, so the last NaN wins; ties keep the first; the
  index within the plane) and avg_pool2d (ATen's divisor: window clipped to the padded input, count_include_pad,
  divisor_override; an empty window gives 0).
- ``adaptive_pool``: adaptive average over 1-3 spatial dims (ATen's start/end indices), also interpolate's area.
- ``resize``: interpolate's nearest, nearest-exact, linear (1-3 dims) and cubic, with ATen's source-index
  arithmetic in float (its scale from the scale factor when one was handed over, else input / output size).
- ``pad``: constant, reflect, replicate (negative pads crop) and circular, one source index per dimension.

Elements are read and written through :func:`cpp_aten.load` / :func:`cpp_aten.store` (bfloat16 as its bit
pattern, computed in float). The kernel checks the ABI and declines (non-zero, :data:`cpp_aten.DECLINE_CODES`)
what it was not written for.
"""

from __future__ import annotations

from kevolve.conformance.kernel import KernelSpec, conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, compute_type, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, threads_param

_FLOATS = ("float32", "float64", "bfloat16")


def _source(k: KernelSpec, params: dict, body: str, helpers: str = "") -> str:
    """The kernel file around ``body`` (which sees ``in``, ``n_in``, ``out``, ``n_out``; ``x_t``/``o_t`` are the
    input's and first output's storage types, ``ct_t`` the compute type)."""
    x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
    text = ", ".join(f"{key}={val}" for key, val in params.items())
    return f"""// kevolve generated kernel: {k.describe()}
// parameters: {text}
#include "kevolve_kernel.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

typedef {C_TYPES[x_dtype][0]} x_t;  // input storage type
typedef {C_TYPES[o_dtype][0]} o_t;  // output storage type
typedef {compute_type(x_dtype)} ct_t;  // compute type
static const int X_DTYPE = {C_TYPES[x_dtype][1]}, O_DTYPE = {C_TYPES[o_dtype][1]};
{helpers}
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{body}
    return 0;
}}
"""


def _params(index: str, count: str) -> str:
    """C lines binding ``p`` to the packed int64 parameters at input ``index`` (declining another count)."""
    return f"""    if (in[{index}].dtype != KV_INT64) return 3;
    if (kv_numel(&in[{index}]) != {count}) return 2;
    const int64_t* p = (const int64_t*)in[{index}].data;"""


class _AtenConvRecipe(Recipe):
    """What every kernel kind of this module shares: the family, the layouts it claims, the schedule."""

    language = "cpp"
    families = ("aten_pointwise",)
    layouts: tuple[str, ...] = ()

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, self.layouts)
        return kernel is not None and bool(kernel.inputs) and kernel.inputs[0][1] in _FLOATS \
            and kernel.outputs[0] in _FLOATS

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k: KernelSpec = problem.kernel  # type: ignore[attr-defined]
        return _source(k, params, self.body(k, parallel_for(params["threads"])), self.helpers(k))

    def helpers(self, k: KernelSpec) -> str:
        """C functions the kernel calls, placed before it."""
        return ""

    def body(self, k: KernelSpec, pragma: str) -> str:
        raise NotImplementedError


class CppAtenConv(_AtenConvRecipe):
    """conv1d / conv2d / conv_transpose2d on (N, C, H, W) (conv1d viewed with H = 1 by the host).

    Inputs: x, weight, [bias], params = [stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups]. The output's
    spatial size is read from the output (conv1d: its last dimension, height 1)."""

    name = "cpp.aten_conv"
    layouts = ("conv",)

    def body(self, k: KernelSpec, pragma: str) -> str:
        op: str = k.op
        transposed = op.endswith("conv_transpose2d")
        x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
        oh = "1" if op.endswith("conv1d") else "out[0].shape[out[0].ndim - 2]"
        if transposed:  # weight (C, OC / groups, KH, KW): out[oh] gathers x[ih] with ih * s - p + kh * d == oh
            oc_count = "in[1].shape[1] * groups"
            weight_ok = "in[1].shape[0] == C"
            tap_h = "const int64_t th = oh + ph - kh * dh; if (th < 0 || th % sh) continue; const int64_t ih = th / sh;"
            tap_w = "const int64_t tw = ow + pw - kw * dw; if (tw < 0 || tw % sw) continue; const int64_t iw = tw / sw;"
            w_index = "((c * cout_g + (oc - g * cout_g)) * KH + kh) * KW + kw"
        else:  # weight (OC, C / groups, KH, KW)
            oc_count = "in[1].shape[0]"
            weight_ok = "in[1].shape[1] == cin_g"
            tap_h = "const int64_t ih = oh * sh - ph + kh * dh; if (ih < 0) continue;"
            tap_w = "const int64_t iw = ow * sw - pw + kw * dw; if (iw < 0) continue;"
            w_index = "((oc * cin_g + ci) * KH + kh) * KW + kw"
        return f"""    if ((n_in != 3 && n_in != 4) || n_out != 1) return 1;
    const bool has_bias = n_in == 4;
    if (in[0].dtype != X_DTYPE || in[1].dtype != X_DTYPE || (has_bias && in[2].dtype != X_DTYPE)) return 3;
    if (out[0].dtype != O_DTYPE) return 3;
{_params("n_in - 1", "7")}
    const int64_t sh = p[0], sw = p[1], ph = p[2], pw = p[3], dh = p[4], dw = p[5], groups = p[6];
    if (in[0].ndim != 4 || in[1].ndim != 4 || groups < 1 || sh < 1 || sw < 1) return 2;
    const int64_t N = in[0].shape[0], C = in[0].shape[1], H = in[0].shape[2], W = in[0].shape[3];
    const int64_t KH = in[1].shape[2], KW = in[1].shape[3];
    const int64_t OC = {oc_count}, OH = {oh}, OW = out[0].shape[out[0].ndim - 1];
    if (C % groups || OC % groups) return 2;
    const int64_t cin_g = C / groups, cout_g = OC / groups;
    if (!({weight_ok}) || kv_numel(&out[0]) != N * OC * OH * OW) return 2;
    if (has_bias && kv_numel(&in[2]) != OC) return 2;
    const x_t* __restrict x = (const x_t*)in[0].data;
    const x_t* __restrict w = (const x_t*)in[1].data;
    const x_t* __restrict b = has_bias ? (const x_t*)in[2].data : nullptr;
    o_t* __restrict o = (o_t*)out[0].data;
    const int64_t total = N * OC * OH * OW;
    {pragma}
    for (int64_t i = 0; i < total; ++i) {{
        const int64_t ow = i % OW, oh = (i / OW) % OH, oc = (i / (OW * OH)) % OC, n = i / (OW * OH * OC);
        const int64_t g = oc / cout_g;
        double acc = 0.0;
        for (int64_t ci = 0; ci < cin_g; ++ci) {{
            const int64_t c = g * cin_g + ci;
            const x_t* xp = x + (n * C + c) * H * W;
            for (int64_t kh = 0; kh < KH; ++kh) {{
                {tap_h}
                if (ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {{
                    {tap_w}
                    if (iw >= W) continue;
                    acc += (double){load(x_dtype, 'xp[ih * W + iw]')} * (double){load(x_dtype, f'w[{w_index}]')};
                }}
            }}
        }}
        if (has_bias) acc += (double){load(x_dtype, 'b[oc]')};
        o[i] = {store(o_dtype, 'acc')};
    }}"""


#: per pooling op: the packed parameter count, the C lines binding dilations (1 where the op has none) and the
#: extra ABI checks, and the per-window C code (sees the window start oh * sh - ph, ow * sw - pw, and ``xp``)
_POOL_HEAD = {
    "max_pool2d": ("8", "const int64_t dh = p[6], dw = p[7];",
                   "if (n_out == 2 && (out[1].dtype != KV_INT64 || kv_numel(&out[1]) != total)) return 2;"),
    "avg_pool2d": ("8", "const int64_t dh = 1, dw = 1;", "if (n_out != 1 || (p[7] == 0 && p[6] != 0 && p[6] != 1)) return 2;"),
}


def _max_window(xv: str, o_dtype: str) -> str:
    """ATen's cpu_max_pool: the window clipped to the input (its start stepped in by dilations), the maximum
    taken on ``>`` or NaN (so a NaN wins, the last one among several), the index within the plane."""
    return f"""        int64_t ih0 = oh * sh - ph, iw0 = ow * sw - pw;
        const int64_t ih1 = std::min(ih0 + (kh - 1) * dh + 1, H), iw1 = std::min(iw0 + (kw - 1) * dw + 1, W);
        while (ih0 < 0) ih0 += dh;
        while (iw0 < 0) iw0 += dw;
        int64_t best = ih0 * W + iw0;
        ct_t m = -std::numeric_limits<ct_t>::infinity();
        for (int64_t ih = ih0; ih < ih1; ih += dh) {{
            for (int64_t iw = iw0; iw < iw1; iw += dw) {{
                const ct_t v = {xv};
                if (v > m || std::isnan(v)) {{ m = v; best = ih * W + iw; }}
            }}
        }}
        o[i] = {store(o_dtype, 'm')};
        if (n_out == 2) ((int64_t*)out[1].data)[i] = best;"""


def _avg_window(xv: str, o_dtype: str) -> str:
    """ATen's cpu_avg_pool2d: the pool size counts the padding inside the padded input, the sum only the input;
    the divisor is divisor_override, else that pool size (count_include_pad) or the elements summed; an empty
    window gives 0."""
    return f"""        int64_t ih0 = oh * sh - ph, iw0 = ow * sw - pw;
        int64_t ih1 = std::min(ih0 + kh, H + ph), iw1 = std::min(iw0 + kw, W + pw);
        const int64_t pool_size = (ih1 - ih0) * (iw1 - iw0);
        ih0 = std::max<int64_t>(ih0, 0);
        iw0 = std::max<int64_t>(iw0, 0);
        ih1 = std::min(ih1, H);
        iw1 = std::min(iw1, W);
        if (ih0 >= ih1 || iw0 >= iw1) {{ o[i] = {store(o_dtype, '0.0')}; continue; }}
        const int64_t divisor = p[7] != 0 ? p[7] : p[6] ? pool_size : (ih1 - ih0) * (iw1 - iw0);
        double sum = 0.0;
        for (int64_t ih = ih0; ih < ih1; ++ih)
            for (int64_t iw = iw0; iw < iw1; ++iw) sum += (double){xv};
        o[i] = {store(o_dtype, '(ct_t)(sum / (double)divisor)')};"""


class CppAtenPool(_AtenConvRecipe):
    """max_pool2d and avg_pool2d on (N, C, H, W) (unbatched inputs batched by the host), ATen's CPU window walk.

    max_pool2d params: [kh, kw, sh, sw, ph, pw, dh, dw]; a second output, when handed one, gets the index of the
    maximum within its plane. avg_pool2d params: [kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override]."""

    name = "cpp.aten_pool"
    layouts = ("pool",)

    def body(self, k: KernelSpec, pragma: str) -> str:
        x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
        op = k.op.rsplit(".", 1)[-1]
        if op not in _POOL_HEAD:
            raise ValueError(f"no pooling kernel for {k.op}")
        count, dilations, checks = _POOL_HEAD[op]
        window = (_max_window if op == "max_pool2d" else _avg_window)(load(x_dtype, "xp[ih * W + iw]"), o_dtype)
        return f"""    if (n_in != 2 || (n_out != 1 && n_out != 2)) return 1;
    if (in[0].dtype != X_DTYPE || out[0].dtype != O_DTYPE) return 3;
{_params("1", count)}
    const int64_t kh = p[0], kw = p[1], sh = p[2], sw = p[3], ph = p[4], pw = p[5];
    {dilations}
    if (in[0].ndim != 4 || out[0].ndim < 3 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1) return 2;
    const int64_t planes = in[0].shape[0] * in[0].shape[1], H = in[0].shape[2], W = in[0].shape[3];
    const int64_t OH = out[0].shape[out[0].ndim - 2], OW = out[0].shape[out[0].ndim - 1];
    const int64_t total = planes * OH * OW;
    if (kv_numel(&out[0]) != total) return 2;
    {checks}
    const x_t* __restrict x = (const x_t*)in[0].data;
    o_t* __restrict o = (o_t*)out[0].data;
    {pragma}
    for (int64_t i = 0; i < total; ++i) {{
        const int64_t ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
        const x_t* xp = x + plane * H * W;
{window}
    }}"""


class CppAtenAdaptivePool(_AtenConvRecipe):
    """Adaptive average pooling over the last 1-3 dims of a (N, C, ...) input, to the output's size: the window
    of output o along a dim of input size I and output size O is [o * I / O, ceil((o + 1) * I / O)) (ATen's
    start_index / end_index). Serves adaptive_avg_pool2d and interpolate's area mode."""

    name = "cpp.aten_adaptive_pool"
    layouts = ("adaptive_pool",)

    def body(self, k: KernelSpec, pragma: str) -> str:
        x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
        return f"""    if (n_in != 1 || n_out != 1) return 1;
    if (in[0].dtype != X_DTYPE || out[0].dtype != O_DTYPE) return 3;
    const int64_t S = in[0].ndim - 2;
    if (S < 1 || S > 3 || out[0].ndim < S) return 2;
    int64_t I[3] = {{1, 1, 1}}, O[3] = {{1, 1, 1}};
    for (int64_t d = 0; d < S; ++d) {{
        I[3 - S + d] = in[0].shape[2 + d];
        O[3 - S + d] = out[0].shape[out[0].ndim - S + d];
    }}
    const int64_t planes = in[0].shape[0] * in[0].shape[1];
    const int64_t total = planes * O[0] * O[1] * O[2];
    if (kv_numel(&out[0]) != total) return 2;
    const x_t* __restrict x = (const x_t*)in[0].data;
    o_t* __restrict o = (o_t*)out[0].data;
    {pragma}
    for (int64_t i = 0; i < total; ++i) {{
        int64_t c[3], rest = i;
        for (int d = 2; d >= 0; --d) {{ c[d] = rest % O[d]; rest /= O[d]; }}
        int64_t lo[3], hi[3];
        for (int d = 0; d < 3; ++d) {{
            lo[d] = (c[d] / O[d]) * I[d] + ((c[d] % O[d]) * I[d]) / O[d];
            hi[d] = 1 + ((c[d] + 1) * I[d] - 1) / O[d];
        }}
        const x_t* xp = x + rest * I[0] * I[1] * I[2];
        double sum = 0.0;
        for (int64_t a = lo[0]; a < hi[0]; ++a)
            for (int64_t b = lo[1]; b < hi[1]; ++b)
                for (int64_t e = lo[2]; e < hi[2]; ++e) sum += (double){load(x_dtype, "xp[(a * I[1] + b) * I[2] + e]")};
        const double count = (double)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
        o[i] = {store(o_dtype, "(ct_t)(sum / count)")};
    }}"""


#: per resize mode: taps per dimension, and the C statements filling idx[t] / wt[t] for output coordinate ``o``
#: along a dimension of input size ``I``, output size ``O``, scale factor ``s`` (0: none), ``align``, in an
#: ``S``-dimensional resize
_RESIZE_TAPS = {
    # 2-D nearest copies when the size is kept and halves the index when it doubles; 1-D and 3-D always scale
    "nearest": (1, """if (S == 2 && O == I) idx[0] = o;
            else if (S == 2 && O == 2 * I) idx[0] = o >> 1;
            else idx[0] = std::min((int64_t)floorf((float)o * scale_value(s, I, O)), I - 1);"""),
    "nearest-exact": (1, """idx[0] = std::min((int64_t)floorf((float)(((double)o + 0.5) * (double)scale_value(s, I, O))), I - 1);"""),
    "linear": (2, """if (O == I) { idx[0] = idx[1] = o; wt[0] = 1.0f; wt[1] = 0.0f; }
            else {
                const float sc = pixel_scale(I, O, align, s);
                float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
                if (!align && real < 0.0f) real = 0.0f;
                idx[0] = std::min((int64_t)floorf(real), I - 1);
                wt[1] = std::min(std::max(real - (float)idx[0], 0.0f), 1.0f);
                wt[0] = 1.0f - wt[1];
                idx[1] = idx[0] + (idx[0] < I - 1 ? 1 : 0);
            }"""),
    "cubic": (4, """const float sc = pixel_scale(I, O, align, s);
            const float real = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
            const int64_t base = std::min((int64_t)floorf(real), I - 1);
            const float t = std::min(std::max(real - (float)base, 0.0f), 1.0f);
            const float A = -0.75f, x1 = t, x2 = 1.0f - t;
            wt[0] = ((A * (x1 + 1.0f) - 5.0f * A) * (x1 + 1.0f) + 8.0f * A) * (x1 + 1.0f) - 4.0f * A;
            wt[1] = ((A + 2.0f) * x1 - (A + 3.0f)) * x1 * x1 + 1.0f;
            wt[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
            wt[3] = ((A * (x2 + 1.0f) - 5.0f * A) * (x2 + 1.0f) + 8.0f * A) * (x2 + 1.0f) - 4.0f * A;
            for (int t4 = 0; t4 < 4; ++t4) idx[t4] = std::max<int64_t>(std::min<int64_t>(base + t4 - 1, I - 1), 0);"""),
}

_RESIZE_HELPERS = """
// 1 / scale factor when one was handed over, else input / output size, in float
static inline float scale_value(double s, int64_t I, int64_t O) {
    return s > 0.0 ? (float)(1.0 / s) : (float)I / (float)O;
}
// the source step per output pixel: (I - 1) / (O - 1) with align_corners, else scale_value
static inline float pixel_scale(int64_t I, int64_t O, bool align, double s) {
    if (align) return O > 1 ? (float)(I - 1) / (float)(O - 1) : 0.0f;
    return scale_value(s, I, O);
}
"""


class CppAtenResize(_AtenConvRecipe):
    """interpolate (nearest, nearest-exact, linear over 1-3 dims, bicubic) on (N, C, ...): per spatial dim a table
    of source indices and weights (ATen's float arithmetic), then each output element is the weighted sum of its
    taps (nearest: the source element itself). Inputs: x, [align_corners] int64, scale factors float64 (0: none)."""

    name = "cpp.aten_resize"
    layouts = ("resize",)

    def helpers(self, k: KernelSpec) -> str:
        fill = _RESIZE_TAPS[k.attrs["mode"]][1]
        return _RESIZE_HELPERS + f"""
// the source indices and weights of output coordinate o along a dim (input size I, output size O)
static inline void resize_taps(int64_t S, int64_t o, int64_t I, int64_t O, double s, bool align, int64_t* idx,
                               float* wt) {{
    (void)S; (void)s; (void)align; (void)wt;
    {fill}
}}
"""

    def body(self, k: KernelSpec, pragma: str) -> str:
        x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
        mode = k.attrs["mode"]
        if mode not in _RESIZE_TAPS:
            raise ValueError(f"interpolate mode {mode!r}")
        taps = _RESIZE_TAPS[mode][0]
        if taps == 1:
            value = f"o[i] = {store(o_dtype, load(x_dtype, 'xp[(idx0[c[0]] * I[1] + idx1[c[1]]) * I[2] + idx2[c[2]]]'))};"
        else:
            value = f"""double acc = 0.0;
        for (int a = 0; a < T[0]; ++a)
            for (int b = 0; b < T[1]; ++b)
                for (int e = 0; e < T[2]; ++e) {{
                    const int64_t at_ = (c[0] * T[0] + a), bt = (c[1] * T[1] + b), et = (c[2] * T[2] + e);
                    const double v = (double){load(x_dtype, "xp[(idx0[at_] * I[1] + idx1[bt]) * I[2] + idx2[et]]")};
                    acc += v * (double)wt0[at_] * (double)wt1[bt] * (double)wt2[et];
                }}
        o[i] = {store(o_dtype, "acc")};"""
        return f"""    if (n_in != 3 || n_out != 1) return 1;
    if (in[0].dtype != X_DTYPE || out[0].dtype != O_DTYPE || in[1].dtype != KV_INT64 || in[2].dtype != KV_FLOAT64) return 3;
    const int64_t S = in[0].ndim - 2;
    if (S < 1 || S > 3 || out[0].ndim != in[0].ndim || kv_numel(&in[1]) != 1 || kv_numel(&in[2]) != S) return 2;
    const bool align = ((const int64_t*)in[1].data)[0] != 0;
    const double* scales = (const double*)in[2].data;
    int64_t I[3] = {{1, 1, 1}}, O[3] = {{1, 1, 1}}, T[3] = {{1, 1, 1}};
    double SC[3] = {{0.0, 0.0, 0.0}};
    for (int64_t d = 0; d < S; ++d) {{
        I[3 - S + d] = in[0].shape[2 + d];
        O[3 - S + d] = out[0].shape[2 + d];
        T[3 - S + d] = {taps};
        SC[3 - S + d] = scales[d];
    }}
    if (in[0].shape[0] != out[0].shape[0] || in[0].shape[1] != out[0].shape[1]) return 2;
    const int64_t planes = in[0].shape[0] * in[0].shape[1];
    const int64_t total = planes * O[0] * O[1] * O[2];
    if (total == 0) return 0;
    if (I[0] * I[1] * I[2] == 0) return 2;
    // per dimension: T source indices and weights for every output coordinate (a dim of size 1 -> 1: one tap)
    std::vector<int64_t> tab_idx[3];
    std::vector<float> tab_wt[3];
    for (int d = 0; d < 3; ++d) {{
        tab_idx[d].assign(O[d] * T[d], 0);
        tab_wt[d].assign(O[d] * T[d], 1.0f);
        if (3 - d > S) continue;
        for (int64_t o = 0; o < O[d]; ++o) {{
            resize_taps(S, o, I[d], O[d], SC[d], align, &tab_idx[d][o * T[d]], &tab_wt[d][o * T[d]]);
        }}
    }}
    const int64_t *idx0 = tab_idx[0].data(), *idx1 = tab_idx[1].data(), *idx2 = tab_idx[2].data();
    const float *wt0 = tab_wt[0].data(), *wt1 = tab_wt[1].data(), *wt2 = tab_wt[2].data();
    const x_t* __restrict x = (const x_t*)in[0].data;
    o_t* __restrict o = (o_t*)out[0].data;
    {pragma}
    for (int64_t i = 0; i < total; ++i) {{
        int64_t c[3], rest = i;
        for (int d = 2; d >= 0; --d) {{ c[d] = rest % O[d]; rest /= O[d]; }}
        const x_t* xp = x + rest * I[0] * I[1] * I[2];
        {value}
    }}"""


#: per pad mode: the C expression of the source coordinate of output coordinate ``j`` along a dim of input size
#: ``n`` with padding ``lo`` before it and ``hi`` after it (constant: -1 outside the input)
_PAD_INDEX = {
    "constant": "j - lo >= 0 && j - lo < n ? j - lo : -1",
    # ATen's ReflectionPad / ReplicationPad index, shifted by the crop of a negative padding
    "reflect": "(j < lo ? lo * 2 - j : j < n + lo ? j : (n + lo - 1) * 2 - j) + crop",
    "replicate": "(j < lo ? lo : j < n + lo ? j : n + lo - 1) + crop",
    # _pad_circular: see circular() in the kernel
    "circular": "circular(j, n, lo, hi)",
}


class CppAtenPad(_AtenConvRecipe):
    """pad (constant, reflect, replicate, circular) over any rank: a table of source coordinates per dimension
    (checked against the input once), then every output element gathers its source (or the constant). Inputs:
    x, the padding before each dim (int64; the padding after it follows from the output's size), the constant
    (float64)."""

    name = "cpp.aten_pad"
    layouts = ("pad",)

    def helpers(self, k: KernelSpec) -> str:
        return """
// the circular pad's source: the cropped input [max(0, -lo), n - max(0, -hi)) repeated around its copy at
// max(0, lo); -2 (declined) when the crop leaves nothing
static inline int64_t circular(int64_t j, int64_t n, int64_t lo, int64_t hi) {
    const int64_t start = std::max<int64_t>(0, -lo), len = n - start - std::max<int64_t>(0, -hi);
    if (len <= 0) return -2;
    const int64_t m = (j - std::max<int64_t>(0, lo)) % len;
    return start + (m < 0 ? m + len : m);
}
"""

    def body(self, k: KernelSpec, pragma: str) -> str:
        x_dtype, o_dtype = k.inputs[0][1], k.outputs[0]
        mode = k.attrs["mode"]
        if mode not in _PAD_INDEX:
            raise ValueError(f"pad mode {mode!r}")
        value = "src < 0 ? (ct_t)value : " + load(x_dtype, "x[offset]")
        return f"""    if (n_in != 3 || n_out != 1) return 1;
    if (in[0].dtype != X_DTYPE || out[0].dtype != O_DTYPE || in[2].dtype != KV_FLOAT64) return 3;
    const int64_t nd = in[0].ndim;
{_params("1", "nd")}
    if (out[0].ndim != nd || nd > 8 || kv_numel(&in[2]) != 1) return 2;
    const double value = ((const double*)in[2].data)[0];
    const int64_t total = kv_numel(&out[0]);
    if (total == 0) return 0;
    // per dimension: the source coordinate of every output coordinate (-1: the constant)
    std::vector<int64_t> table[8];
    for (int64_t d = 0; d < nd; ++d) {{
        const int64_t n = in[0].shape[d], lo = p[d], hi = out[0].shape[d] - n - lo;
        const int64_t crop = std::max<int64_t>(0, -lo) - std::max<int64_t>(0, lo);
        (void)hi; (void)crop;
        table[d].resize(out[0].shape[d]);
        for (int64_t j = 0; j < out[0].shape[d]; ++j) {{
            const int64_t src = {_PAD_INDEX[mode]};
            if (src >= n || src < {"-1" if mode == "constant" else "0"}) return 2;
            table[d][j] = src;
        }}
    }}
    const x_t* __restrict x = (const x_t*)in[0].data;
    o_t* __restrict o = (o_t*)out[0].data;
    {pragma}
    for (int64_t i = 0; i < total; ++i) {{
        int64_t rest = i, offset = 0, scale = 1, src = 0;
        for (int64_t d = nd - 1; d >= 0 && src >= 0; --d) {{
            src = table[d][rest % out[0].shape[d]];
            rest /= out[0].shape[d];
            offset += src * scale;
            scale *= in[0].shape[d];
        }}
        o[i] = {store(o_dtype, value)};
    }}"""


RECIPES = [CppAtenConv(), CppAtenPool(), CppAtenAdaptivePool(), CppAtenResize(), CppAtenPad()]
