"""ATen conformance kernels in C++ for matrix products and attention (layouts ``gemm`` and ``attention`` of core's
:mod:`kevolve.conformance.ops.matmul`).

``gemm``: one batched GEMM serves mm, bmm, addmm, baddbmm, matmul, mv, addmv, outer and linear: ``A`` (batch...,
M, K) times ``B`` (batch..., K, N), or ``B`` read as (batch..., N, K) with ``trans_b``, batch dimensions
broadcasting, then ``alpha * AB + beta * C`` with ``C`` (when given) broadcast to (batch..., M, N). Dot products
accumulate in double, so the float32 tolerance holds at any K, and NaN/inf propagate as in the float products.

``attention``: scaled dot-product attention row by row in double: scores ``scale * q.k`` (plus a float mask, or
-inf where a bool mask is false; keys above the diagonal are skipped when causal, as the CPU flash kernel does),
a softmax whose fully masked rows give 0 (ATen's safe softmax), then the weighted sum of ``v``. Grouped-query
attention maps each query head to its group's key/value head. Dropout is ATen's on the CPU: a Bernoulli keep-mask
drawn from the default generator seeded with ``attrs["seed"]`` (the seed the reference runs under), see
:func:`_dropout_source`.

Each kernel checks the ABI (counts, dtypes, ranks, sizes) and declines with a non-zero code what it was not
written for.
"""

from __future__ import annotations

import torch
from kevolve.conformance.kernel import KernelSpec, conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, parallel_loop, threads_param
from kevolve_cpu.recipes.cpp_matmul import engine
from kevolve_cpu.recipes.cpp_matmul import space as tiled_space

#: the batch offset of one operand, the batch dimensions of the output broadcasting from it (size 1: stride 0;
#: a size dividing the output's, for grouped-query heads: index / group)
_BATCH_OFFSET = """
static inline int64_t kv_batch_offset(int64_t b, const int64_t* bshape, int64_t nb, const kv_tensor* t) {
    int64_t off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
        const int64_t c = b % bshape[d];
        b /= bshape[d];
        if (t->shape[d] != 1) off += c / (bshape[d] / t->shape[d]) * t->strides[d];
    }
    return off;
}
"""


def _literal(value: float) -> str:
    """A double literal (repr keeps every digit)."""
    return repr(float(value))


def _header(k: KernelSpec, params: dict, extra: str = "") -> str:
    """The file prelude: the kernel's description, includes, the batch-offset helper."""
    params_text = ", ".join(f"{key}={val}" for key, val in params.items())
    return f"""// kevolve generated kernel: {k.describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
{_BATCH_OFFSET}{extra}"""


def _abi_checks(inputs: tuple[tuple[str, str], ...], out_dtype: str) -> str:
    """Tensor counts and dtypes, and one rank for every input."""
    lines = [f"    if (n_in != {len(inputs)} || n_out != 1) return 1;",
             f"    if (out[0].dtype != {C_TYPES[out_dtype][1]}) return 3;"]
    lines += [f"    if (in[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, (_, d) in enumerate(inputs)]
    lines += ["    const int64_t nd = in[0].ndim, nb = nd - 2;", "    if (nd < 2 || nd > 8) return 2;"]
    lines += [f"    if (in[{i}].ndim != nd) return 2;" for i in range(1, len(inputs))]
    return "\n".join(lines)


def _pointers(inputs: tuple[tuple[str, str], ...], out_dtype: str) -> str:
    lines = [f"    const {C_TYPES[d][0]}* __restrict p{i} = (const {C_TYPES[d][0]}*)in[{i}].data;"
             for i, (_, d) in enumerate(inputs)]
    lines.append(f"    {C_TYPES[out_dtype][0]}* __restrict po = ({C_TYPES[out_dtype][0]}*)out[0].data;")
    return "\n".join(lines)


class _AtenRecipe(Recipe):
    """A conformance recipe for one layout of core's matmul table."""

    language = "cpp"
    families = ("aten_pointwise",)
    layout = ""

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, (self.layout,))
        return kernel is not None and all(d in C_TYPES for _, d in kernel.inputs) and kernel.out_dtype in C_TYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])


class CppAtenGemm(_AtenRecipe):
    """``alpha * A @ B + beta * C`` over broadcast batches, rows of the output spread over threads.

    With ``tiled`` (the default), a float32 product of two dense matrices plus at most a bias row (``mm``,
    ``addmm``, a linear layer) runs the catalog's tiled GEMM (:mod:`kevolve_cpu.recipes.cpp_matmul`: packed
    panels, vector registers, float accumulation as PyTorch's) at that recipe's knobs; everything else, and
    the whole kernel without ``tiled``, takes the exact row loop accumulating in double."""

    name = "cpp.aten_gemm"
    layout = "gemm"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        tiles = tiled_space(facts, torch.float32)
        return ScheduleSpace([*tiles.params, Param("tiled", (True, False), {}, default=True)], valid=tiles.valid)

    def render(self, problem: Problem, params: dict) -> str:
        exact = self._exact(problem, params)
        k = problem.kernel  # type: ignore[attr-defined]
        fits = (params.get("tiled", False) and all(d == "float32" for _, d in k.inputs) and k.out_dtype == "float32"
                and float(k.attrs["alpha"]) == 1.0 and float(k.attrs["beta"]) == 1.0 and k.attrs.get("product", True))
        if not fits:
            return exact
        return _tiled(exact, bool(k.attrs["trans_b"]), len(k.inputs) == 3, params)

    def _exact(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        trans_b, bias = bool(k.attrs["trans_b"]), len(k.inputs) == 3
        (_, da), (_, db) = k.inputs[:2]
        b_k, b_n = ("nd - 1", "nd - 2") if trans_b else ("nd - 2", "nd - 1")
        if trans_b:  # B stored (N, K): one dot product per output element, both operands contiguous in K
            product = f"""        for (int64_t n = 0; n < N; ++n) {{
            const auto* __restrict bcol = bmat + n * K;
            double s = 0.0;
            for (int64_t kk = 0; kk < K; ++kk) s += (double){load(da, 'arow[kk]')} * (double){load(db, 'bcol[kk]')};
            acc[n] = s;
        }}"""
        else:  # B stored (K, N): rows of B scaled by A's elements, the inner loop contiguous in N
            product = f"""        for (int64_t kk = 0; kk < K; ++kk) {{
            const double a = (double){load(da, 'arow[kk]')};
            const auto* __restrict brow = bmat + kk * N;
            for (int64_t n = 0; n < N; ++n) acc[n] += a * (double){load(db, 'brow[n]')};
        }}"""
        alpha, beta = float(k.attrs["alpha"]), float(k.attrs["beta"])
        value = "acc[n]" if alpha == 1.0 else f"{_literal(alpha)} * acc[n]"
        if not k.attrs.get("product", True):  # BLAS at alpha == 0: the product is not computed
            value, product = "0.0", ""
        c_checks, c_row = "", ""
        if bias:
            dc = k.inputs[2][1]
            c_checks = """    for (int64_t d = 0; d < nb; ++d) if (in[2].shape[d] != 1 && in[2].shape[d] != bshape[d]) return 2;
    if ((in[2].shape[nd - 2] != 1 && in[2].shape[nd - 2] != M) || (in[2].shape[nd - 1] != 1 && in[2].shape[nd - 1] != N))
        return 2;
    const int64_t c_m = in[2].shape[nd - 2] == 1 ? 0 : in[2].strides[nd - 2];
    const int64_t c_n = in[2].shape[nd - 1] == 1 ? 0 : in[2].strides[nd - 1];"""
            c_row = "        const auto* __restrict crow = p2 + kv_batch_offset(b, bshape, nb, &in[2]) + m * c_m;"
            c_value = load(dc, "crow[n * c_n]")
            value += f" + (double){c_value}" if beta == 1.0 else f" + {_literal(beta)} * (double){c_value}"
        return _header(k, params) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{_abi_checks(k.inputs, k.out_dtype)}
    const int64_t M = in[0].shape[nd - 2], K = in[0].shape[nd - 1], N = in[1].shape[{b_n}];
    if (in[1].shape[{b_k}] != K) return 2;
    int64_t bshape[8] = {{0}}, batch = 1;
    for (int64_t d = 0; d < nb; ++d) {{
        const int64_t sa = in[0].shape[d], sb = in[1].shape[d];
        if (sa != sb && sa != 1 && sb != 1) return 2;
        bshape[d] = sa == 1 ? sb : sa;
        batch *= bshape[d];
    }}
{c_checks}
    if (kv_numel(&out[0]) != batch * M * N) return 2;
{_pointers(k.inputs, k.out_dtype)}
    const int64_t rows = batch * M;
    {parallel_for(params["threads"])}
    for (int64_t r = 0; r < rows; ++r) {{
        const int64_t b = r / M, m = r % M;
        const auto* __restrict arow = p0 + kv_batch_offset(b, bshape, nb, &in[0]) + m * K;
        const auto* __restrict bmat = p1 + kv_batch_offset(b, bshape, nb, &in[1]);
{c_row}
        std::vector<double> acc(N, 0.0);
{product}
        for (int64_t n = 0; n < N; ++n) po[r * N + n] = {store(k.out_dtype, value)};
    }}
    return 0;
}}
"""


class CppAtenAttention(_AtenRecipe):
    """Scaled dot-product attention, one query row per iteration, spread over threads."""

    name = "cpp.aten_attention"
    layout = "attention"

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        a = k.attrs
        (_, dq), (_, dk), (_, dv) = k.inputs[:3]
        mask = k.inputs[3][1] if len(k.inputs) == 4 else None
        scale = "1.0 / std::sqrt((double)E)" if a["scale"] is None else _literal(a["scale"])
        causal = "std::min<int64_t>(S, l + 1)" if a["is_causal"] else "S"
        mask_checks, mask_row, masked = "", "", ""
        if mask is not None:
            mask_checks = """    for (int64_t d = 0; d < nb; ++d) if (in[3].shape[d] != 1 && in[3].shape[d] != bshape[d]) return 2;
    if ((in[3].shape[nd - 2] != 1 && in[3].shape[nd - 2] != L) || (in[3].shape[nd - 1] != 1 && in[3].shape[nd - 1] != S))
        return 2;
    const int64_t m_l = in[3].shape[nd - 2] == 1 ? 0 : in[3].strides[nd - 2];
    const int64_t m_s = in[3].shape[nd - 1] == 1 ? 0 : in[3].strides[nd - 1];"""
            mask_row = "        const auto* __restrict mrow = p3 + kv_batch_offset(b, bshape, nb, &in[3]) + l * m_l;"
            element = load(mask, "mrow[s * m_s]")
            masked = (f"            if (!({element})) sc = -INFINITY;" if mask == "bool"
                      else f"            sc += (double){element};")
        gqa = "true" if a["enable_gqa"] else "false"
        dropout = float(a["dropout_p"])
        kept = 0.0 if dropout >= 1.0 else 1.0 / (1.0 - dropout)  # a kept weight is scaled by 1 / (1 - p)
        keep = "" if dropout == 0.0 else f"""
        for (int64_t s = 0; s < s_end; ++s)
            w[s] = keep[(uint64_t)r * (uint64_t)S + (uint64_t)s] ? w[s] * {_literal(kept)} : 0.0;"""
        extra = "" if dropout == 0.0 else _dropout_source()
        draw = "" if dropout == 0.0 else \
            f"    const std::vector<uint8_t> keep = kv_bernoulli_keep((uint64_t)(batch * L * S), " \
            f"{_literal(1.0 - dropout)}, {int(a['seed'])}ULL);"
        return _header(k, params, extra) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{_abi_checks(k.inputs, k.out_dtype)}
    const int64_t L = in[0].shape[nd - 2], E = in[0].shape[nd - 1], S = in[1].shape[nd - 2], Ev = in[2].shape[nd - 1];
    if (in[1].shape[nd - 1] != E || in[2].shape[nd - 2] != S) return 2;
    int64_t bshape[8] = {{0}}, batch = 1;
    for (int64_t d = 0; d < nb; ++d) {{
        int64_t size = 1;
        for (int i = 0; i < 3; ++i) if (in[i].shape[d] != 1) size = in[i].shape[d];
        if ({gqa} && d == nb - 1) size = in[0].shape[d];  // grouped-query heads: the query's count
        for (int i = 0; i < 3; ++i) {{
            const int64_t s = in[i].shape[d];
            const bool grouped = {gqa} && d == nb - 1 && i > 0 && s != 0 && size % s == 0;
            if (s != 1 && s != size && !grouped) return 2;
        }}
        bshape[d] = size;
        batch *= size;
    }}
{mask_checks}
    if (kv_numel(&out[0]) != batch * L * Ev) return 2;
{_pointers(k.inputs, k.out_dtype)}
    const double scale = {scale};
{draw}
    const int64_t rows = batch * L;
    {parallel_for(params["threads"])}
    for (int64_t r = 0; r < rows; ++r) {{
        const int64_t b = r / L, l = r % L, s_end = {causal};
        const auto* __restrict qrow = p0 + kv_batch_offset(b, bshape, nb, &in[0]) + l * E;
        const auto* __restrict kmat = p1 + kv_batch_offset(b, bshape, nb, &in[1]);
        const auto* __restrict vmat = p2 + kv_batch_offset(b, bshape, nb, &in[2]);
{mask_row}
        std::vector<double> w(S > 0 ? S : 1, 0.0), acc(Ev > 0 ? Ev : 1, 0.0);
        double top = -INFINITY;
        for (int64_t s = 0; s < s_end; ++s) {{
            double dot = 0.0;
            for (int64_t e = 0; e < E; ++e) dot += (double){load(dq, 'qrow[e]')} * (double){load(dk, 'kmat[s * E + e]')};
            double sc = dot * scale;
{masked}
            w[s] = sc;
            top = (sc != sc || top != top) ? NAN : (sc > top ? sc : top);
        }}
        double* o = acc.data();
        if (top == -INFINITY) {{  // every key masked: the safe softmax gives 0
            for (int64_t e = 0; e < Ev; ++e) o[e] = 0.0;
        }} else {{
            double sum = 0.0;
            for (int64_t s = 0; s < s_end; ++s) {{ w[s] = std::exp(w[s] - top); sum += w[s]; }}
            for (int64_t s = 0; s < s_end; ++s) w[s] /= sum;{keep}
            for (int64_t s = 0; s < s_end; ++s) {{
                const double ws = w[s];
                for (int64_t e = 0; e < Ev; ++e) o[e] += ws * (double){load(dv, 'vmat[s * Ev + e]')};
            }}
        }}
        for (int64_t e = 0; e < Ev; ++e) po[r * Ev + e] = {store(k.out_dtype, 'o[e]')};
    }}
    return 0;
}}
"""


def _tiled(exact: str, trans_b: bool, bias: bool, params: dict) -> str:
    """The exact kernel renamed ``kv_exact``, after it the tiled GEMM and an entry point that takes the tiled
    path for dense float32 operands: two matrices and a bias row (contiguous, broadcast over the rows) or none;
    or, without a bias, batches of matrices of the same batch shape (a batch per thread, each GEMM on one)."""
    head, body = exact.split("KV_EXPORT int kevolve_kernel(", 1)
    bias_ok = ("nd == 2 && in[2].ndim == 2 && in[2].shape[0] == 1 && in[2].shape[1] == N && in[2].strides[1] == 1"
               if bias else "true")
    threads, work = int(params["threads"]), "batch * M * N * K"
    bias_arg = "(const float*)in[2].data" if bias else "nullptr"
    row_loop = parallel_loop(threads, f"""for (int64_t r = 0; r < batch * M; ++r)
                    kv_gemm_row(a + r * K, b + r / M * K * N, {bias_arg}, c + r * N, N, K);""", work)
    batch_loop = parallel_loop(threads, """for (int64_t i = 0; i < batch; ++i)  // a GEMM inside a parallel loop runs on its calling thread
                failed |= kv_gemm(a + i * M * K, b + i * K * N, nullptr, c + i * M * N, M, N, K);""", work,
                               clauses="reduction(|:failed)")
    return f"""{head}#include <algorithm>
#include <cstdlib>
#include <omp.h>
#include <type_traits>

static int kv_exact({body}
typedef float st_t;
static inline float ld(float v) {{ return v; }}
static inline float st(float v) {{ return v; }}
{engine(params, trans_b=trans_b, bias=bias)}
constexpr int64_t KV_FEW_ROWS = 4;  // below the smallest register tile's rows

// one row of C: a (K) times B (K x N, or N x K stored when TRANS_B), plus the bias, in float
static inline void kv_gemm_row(const float* __restrict a, const float* __restrict b, const float* __restrict bias,
                               float* __restrict c, int64_t N, int64_t K) {{
    if (TRANS_B) {{  // a dot product per column, both operands contiguous along K
        for (int64_t n = 0; n < N; ++n) {{
            const float* __restrict col = b + n * K;
            float s = 0.0f;
#pragma omp simd reduction(+:s)
            for (int64_t k = 0; k < K; ++k) s += a[k] * col[k];
            c[n] = s + (HAS_BIAS ? bias[n] : 0.0f);
        }}
        return;
    }}
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) c[n] = HAS_BIAS ? bias[n] : 0.0f;
    for (int64_t k = 0; k < K; ++k) {{  // rows of B scaled by a's elements, contiguous along N
        const float av = a[k];
        const float* __restrict row = b + k * N;
#pragma omp simd
        for (int64_t n = 0; n < N; ++n) c[n] += av * row[n];
    }}
}}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    const int64_t nd = out[0].ndim;
    if (n_in == {3 if bias else 2} && n_out == 1 && nd >= 2 && in[0].ndim == nd && in[1].ndim == nd
        && in[0].dtype == KV_FLOAT32 && in[1].dtype == KV_FLOAT32 && out[0].dtype == KV_FLOAT32
        && (n_in == 2 || in[2].dtype == KV_FLOAT32)) {{
        const int64_t M = in[0].shape[nd - 2], K = in[0].shape[nd - 1], N = out[0].shape[nd - 1];
        bool shapes = out[0].shape[nd - 2] == M && in[1].shape[nd - {1 if trans_b else 2}] == K
                      && in[1].shape[nd - {2 if trans_b else 1}] == N;
        int64_t batch = 1;
        for (int64_t d = 0; d < nd - 2; ++d) {{
            shapes = shapes && in[0].shape[d] == out[0].shape[d] && in[1].shape[d] == out[0].shape[d];
            batch *= out[0].shape[d];
        }}
        if (shapes && kv_dense_like(&in[0], &in[0]) && kv_dense_like(&in[1], &in[1])
            && kv_dense_like(&out[0], &out[0]) && {bias_ok}) {{
            const float* a = (const float*)in[0].data;
            const float* b = (const float*)in[1].data;
            float* c = (float*)out[0].data;
            if (M < KV_FEW_ROWS) {{  // a few rows per matrix (a query against its keys): row by row, no packing
                {row_loop}
                return 0;
            }}
            if (batch == 1)
                return kv_gemm(a, b, {bias_arg}, c, M, N, K);
            int failed = 0;
            {batch_loop}
            return failed;
        }}
    }}
    return kv_exact(in, n_in, out, n_out);
}}
"""


def _dropout_source() -> str:
    """The keep-mask of ATen's CPU dropout (``bernoulli_(1 - p)`` on the (batch..., L, S) weights, drawn serially
    in element order): the default generator is an mt19937 seeded with ``seed``; each element takes two 32-bit
    draws (high word first), keeps 53 bits as a double uniform in [0, 1), and is kept when that is below
    ``1 - p``. One draw per weight, masked ones included, so the stream stays aligned with ATen's."""
    return """#include <random>

static std::vector<uint8_t> kv_bernoulli_keep(uint64_t n, double keep_p, uint64_t seed) {
    std::mt19937 engine((uint32_t)seed);
    std::vector<uint8_t> keep(n > 0 ? n : 1, 0);
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t hi = engine(), lo = engine();
        const uint64_t bits = ((hi << 32) | lo) & ((1ULL << 53) - 1);
        keep[i] = (double)bits * (1.0 / 9007199254740992.0) < keep_p;
    }
    return keep;
}
"""


RECIPES = [CppAtenGemm(), CppAtenAttention()]
