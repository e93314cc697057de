"""Matrix multiply in C++ (``matmul`` and ``addmm_relu`` from one template): cache tiles over C, packed panels
of A and B in float, a register micro-tile written with GCC vector extensions (g++ -O3 -march=native turns
``acc += a * b`` on them into FMA vector code), and the bias and epilogue fused into the one store of C.

Layout of the work: C is cut into ``tile_m x tile_n`` tiles, numbered in ``loop_order`` (``nm``: n tiles outer,
so consecutive tiles share, and a thread keeps reusing, one packed B panel; ``mn``: m tiles outer, the packed A
panel is reused) and handed to threads as contiguous runs (``schedule`` static) or one at a time from a shared
counter (dynamic). Each tile runs over K in ``tile_k`` blocks; inside a block the micro-panels of B
(``tile_k x NR``, meant for L1) are the outer loop and the micro-panels of A (``tile_m x tile_k``, meant for L2)
the inner one. Partial sums between K blocks live in C itself for float32 and in a per-thread float tile for
bfloat16 (accumulation is float either way; the output is rounded once). Edge tiles: packed panels are padded
with zeros, unpacked A rows past the edge repeat the last valid row, and only valid elements are stored.
"""

from __future__ import annotations

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import prelude, threads_param

#: register micro-tiles "MRxNR": NR is a multiple of the 8-float vector; all keep MR*NR/8 accumulators plus
#: NR/8 B vectors and one broadcast within the 16 vector registers of AVX2
MICRO = ("4x8", "8x8", "4x16", "6x16", "4x24")
VEC = 8  # floats per vector (32 bytes)


def micro_shape(micro: str) -> tuple[int, int]:
    mr, nr = micro.split("x")
    return int(mr), int(nr)


def _valid(params: dict) -> bool:
    mr, nr = micro_shape(params["micro"])
    return params["tile_m"] % mr == 0 and params["tile_n"] % nr == 0 and params["tile_n"] >= nr


def space(facts: MachineFacts, dtype: torch.dtype) -> ScheduleSpace:
    """The tiled GEMM's knobs (this recipe's, and the ATen gemm kernels' tiled path's)."""
    return ScheduleSpace([
        threads_param(facts),
        # bigger cache tiles reuse each loaded panel more (memory-bound), smaller ones make more tiles
        # to share out among threads (occupancy) and less packing before the first FMA (latency)
        Param("tile_m", (24, 48, 72, 96, 144, 192),
              {d.MEMORY_BOUND: +1, d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: -1}, default=96),
        Param("tile_n", (48, 96, 128, 192, 256, 384, 512),
              {d.MEMORY_BOUND: +1, d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: -1}, default=256),
        # longer K blocks mean fewer round trips of partial sums through memory; shorter ones keep the
        # B micro-panel in L1
        Param("tile_k", (64, 128, 256, 384, 512), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: -1}, default=512),
        # a larger register tile does more FMAs per load
        Param("micro", MICRO, {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1, d.LATENCY_BOUND: -1}, default="6x16"),
        # float32 A rows are broadcast straight from the input about as fast as from a packed panel;
        # bfloat16 ones would be converted in the inner loop, so packing (converting once) wins there
        Param("pack_a", (False, True), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: -1},
              default=dtype != torch.float32),
        Param("pack_b", (False, True), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: -1}, default=True),
        # nm reuses the (larger) packed B panel across m tiles; mn the packed A panel across n tiles
        Param("loop_order", ("mn", "nm"), {d.MEMORY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default="nm"),
        # dynamic hands tiles out one at a time: balances edge tiles and threads that get descheduled
        Param("schedule", ("static", "dynamic"), {d.OCCUPANCY_LIMITED: +1, d.LATENCY_BOUND: -1},
              default="dynamic"),
    ], valid=_valid)


class CppMatmul(Recipe):
    name = "cpp.matmul"
    language = "cpp"
    families = ("matmul",)

    def supports(self, problem: Problem) -> bool:
        return (problem.family == "matmul" and problem.dtype in (torch.float32, torch.bfloat16)
                and problem.attrs.get("epilogue", "none") in ("none", "relu"))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return space(facts, problem.dtype)

    def render(self, problem: Problem, params: dict) -> str:
        bias = bool(problem.attrs.get("bias", False))
        relu = problem.attrs.get("epilogue", "none") == "relu"
        kv_dtype = "KV_BFLOAT16" if problem.dtype == torch.bfloat16 else "KV_FLOAT32"
        return (prelude(problem, params) + engine(params, bias=bias, relu=relu)
                + _ENTRY.format(N_IN=3 if bias else 2, KV_DTYPE=kv_dtype))


def engine(params: dict, *, trans_b: bool = False, bias: bool = False, relu: bool = False) -> str:
    """``kv_gemm`` at ``params`` (this recipe's knobs): after a prelude that defines ``st_t``, ``ld`` and ``st``."""
    mr, nr = micro_shape(params["micro"])
    return ENGINE.format(
        MR=mr, NR=nr, NV=nr // VEC, VEC=VEC, TM=params["tile_m"], TN=params["tile_n"], TK=params["tile_k"],
        PACK_A=_b(params["pack_a"]), PACK_B=_b(params["pack_b"]), TRANS_B=_b(trans_b),
        N_OUTER=_b(params["loop_order"] == "nm"), DYNAMIC=_b(params["schedule"] == "dynamic"), HAS_BIAS=_b(bias),
        RELU=_b(relu), THREADS=int(params["threads"]),
    )


def _b(flag: bool) -> str:
    return "true" if flag else "false"


#: the tiled GEMM itself (kv_gemm), shared with the ATen gemm kernels of lowered programs
ENGINE = r"""
#include <cstdlib>
#include <type_traits>

constexpr int MR = {MR}, NR = {NR}, NV = {NV}, VEC = {VEC};
constexpr int64_t TM = {TM}, TN = {TN}, TK = {TK};
constexpr bool PACK_A = {PACK_A}, PACK_B = {PACK_B} || {TRANS_B}, N_OUTER = {N_OUTER}, DYNAMIC = {DYNAMIC};
constexpr bool TRANS_B = {TRANS_B};  // B stored (N, K), as a linear layer's weight: read through the packing
constexpr bool HAS_BIAS = {HAS_BIAS}, RELU = {RELU};
constexpr bool C_FLOAT = std::is_same<st_t, float>::value;  // partial sums can live in C itself

typedef float kv_vf __attribute__((vector_size(32)));
typedef uint16_t kv_vh __attribute__((vector_size(16)));
typedef uint32_t kv_vu __attribute__((vector_size(32)));

static inline float kv_f(float v) {{ return v; }}
static inline float kv_f(uint16_t v) {{ return kv_bf16_to_f32(v); }}
static inline kv_vf kv_load(const float* p) {{ kv_vf v; __builtin_memcpy(&v, p, sizeof v); return v; }}
static inline kv_vf kv_load(const uint16_t* p) {{
    kv_vh h;
    __builtin_memcpy(&h, p, sizeof h);
    kv_vu w = __builtin_convertvector(h, kv_vu) << 16;
    kv_vf v;
    __builtin_memcpy(&v, &w, sizeof v);
    return v;
}}

static inline void kv_store(float* p, kv_vf v) {{ __builtin_memcpy(p, &v, sizeof v); }}
static inline void kv_store(uint16_t* p, kv_vf v) {{  // round to nearest even, NaN kept quiet: kv_f32_to_bf16
    kv_vu u;
    __builtin_memcpy(&u, &v, sizeof u);
    const kv_vu rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const kv_vu quiet = (u >> 16) | 0x40u;
    const kv_vu r = (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
    const kv_vh h = __builtin_convertvector(r, kv_vh);
    __builtin_memcpy(p, &h, sizeof h);
}}
static inline kv_vf kv_splat(float x) {{ return kv_vf{{x, x, x, x, x, x, x, x}}; }}

constexpr int64_t KV_PACK_FLOATS = (int64_t)1 << 21;  // 8 MiB per packed buffer and thread

static inline int64_t kv_round_up(int64_t x, int64_t to) {{ return (x + to - 1) / to * to; }}

static float* kv_alloc(int64_t floats) {{
    const size_t bytes = (size_t)kv_round_up(std::max<int64_t>(floats, 1) * (int64_t)sizeof(float), 64);
    return (float*)std::aligned_alloc(64, bytes);
}}

// A rows [i0, i0+mc) x K range [k0, k1) (whole K blocks), as float: per K block (at (p0 - k0) * mc_pad) panels
// of MR rows, element (p, i) of a panel at p * MR + i; rows past mc are zero.
static void kv_pack_a(const st_t* __restrict a, int64_t lda, int64_t i0, int64_t mc, int64_t k0, int64_t k1,
                      float* __restrict buf) {{
    const int64_t mc_pad = kv_round_up(mc, MR);
    for (int64_t p0 = k0; p0 < k1; p0 += TK) {{
        const int64_t kc = std::min(TK, k1 - p0);
        for (int64_t ip = 0; ip < mc_pad; ip += MR) {{
            float* __restrict dst = buf + (p0 - k0) * mc_pad + ip * kc;
            for (int i = 0; i < MR; ++i) {{
                if (ip + i < mc) {{
                    const st_t* __restrict src = a + (i0 + ip + i) * lda + p0;
                    for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = ld(src[p]);
                }} else {{
                    for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = 0.0f;
                }}
            }}
        }}
    }}
}}

// B columns [j0, j0+nc) x K range [k0, k1) (whole K blocks), as float: per K block (at (p0 - k0) * nc_pad)
// panels of NR columns, element (p, j) of a panel at p * NR + j; columns past nc are zero. TRANS_B: column j
// of B is row j of the stored (N, K) matrix, read along K.
static void kv_pack_b(const st_t* __restrict b, int64_t ldb, int64_t j0, int64_t nc, int64_t k0, int64_t k1,
                      float* __restrict buf) {{
    const int64_t nc_pad = kv_round_up(nc, NR);
    for (int64_t p0 = k0; p0 < k1; p0 += TK) {{
        const int64_t kc = std::min(TK, k1 - p0);
        for (int64_t jp = 0; jp < nc_pad; jp += NR) {{
            float* __restrict dst = buf + (p0 - k0) * nc_pad + jp * kc;
            const int64_t nv = std::min<int64_t>(NR, nc - jp);
            if (TRANS_B) {{
                for (int j = 0; j < NR; ++j) {{
                    const st_t* __restrict src = b + (j0 + jp + j) * ldb + p0;
                    for (int64_t p = 0; p < kc; ++p) dst[p * NR + j] = j < nv ? ld(src[p]) : 0.0f;
                }}
                continue;
            }}
            for (int64_t p = 0; p < kc; ++p) {{
                const st_t* __restrict src = b + (p0 + p) * ldb + j0 + jp;
                if (nv == NR) {{
#pragma omp simd
                    for (int j = 0; j < NR; ++j) dst[p * NR + j] = ld(src[j]);
                }} else {{
                    for (int j = 0; j < NR; ++j) dst[p * NR + j] = j < nv ? ld(src[j]) : 0.0f;
                }}
            }}
        }}
    }}
}}

// One MR x NR tile of C over a K block of length kc. A: packed panel (A_PACKED) or rows of the input with
// stride lda; B: rows of NR floats/storage values with stride ldb (NR for a packed panel). first: start from
// zero, else from the partial sums in cacc; last: add bias, apply the epilogue, store C; else store partial
// sums to cacc. mv x nv: the valid part of the tile.
template <bool A_PACKED, typename TA, typename TB>
static inline void kv_micro(int64_t kc, const TA* __restrict a, int64_t lda, const TB* __restrict b, int64_t ldb,
                            int mv, int nv, bool first, bool last, float* __restrict cacc, int64_t ldacc,
                            st_t* __restrict c, int64_t ldc, const st_t* __restrict bias) {{
    kv_vf acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = kv_vf{{}};
    const TA* ar[MR];
    for (int i = 0; i < MR; ++i) ar[i] = a + (int64_t)std::min(i, mv - 1) * lda;
    for (int64_t p = 0; p < kc; ++p) {{
        kv_vf bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = kv_load(b + p * ldb + v * VEC);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {{
            const kv_vf av = kv_splat(A_PACKED ? kv_f(a[p * MR + i]) : kv_f(ar[i][p]));
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
        }}
    }}
    if (mv == MR && nv == NR) {{  // full tile: whole vectors, no temporaries
        if (!first) {{
#pragma GCC unroll 16
            for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[i][v] += kv_load(cacc + i * ldacc + v * VEC);
        }}
        if (!last) {{
#pragma GCC unroll 16
            for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) kv_store(cacc + i * ldacc + v * VEC, acc[i][v]);
            return;
        }}
        kv_vf bvec[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bvec[v] = HAS_BIAS ? kv_load(bias + v * VEC) : kv_vf{{}};
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {{
                kv_vf x = acc[i][v] + bvec[v];
                if (RELU) x = x < kv_vf{{}} ? kv_vf{{}} : x;  // NaN passes through, as relu does
                kv_store(c + i * ldc + v * VEC, x);
            }}
        return;
    }}
    float t[MR][NR];
    __builtin_memcpy(t, acc, sizeof t);
    if (!first) {{
        for (int i = 0; i < mv; ++i)
#pragma omp simd
            for (int j = 0; j < nv; ++j) t[i][j] += cacc[i * ldacc + j];
    }}
    if (!last) {{
        for (int i = 0; i < mv; ++i)
#pragma omp simd
            for (int j = 0; j < nv; ++j) cacc[i * ldacc + j] = t[i][j];
        return;
    }}
    float bf[NR];
#pragma omp simd
    for (int j = 0; j < NR; ++j) bf[j] = (HAS_BIAS && j < nv) ? ld(bias[j]) : 0.0f;
    for (int i = 0; i < mv; ++i) {{
#pragma omp simd
        for (int j = 0; j < nv; ++j) {{
            float x = t[i][j] + bf[j];
            if (RELU) x = x < 0.0f ? 0.0f : x;  // NaN passes through, as relu does
            c[i * ldc + j] = st(x);
        }}
    }}
}}

// C (M x N) = A (M x K) B (K x N, or N x K stored when TRANS_B) + bias (N), all dense; 0, or 2 when a buffer
// could not be allocated
static int kv_gemm(const st_t* __restrict A, const st_t* __restrict B, const st_t* __restrict bias,
                   st_t* __restrict C, int64_t M, int64_t N, int64_t K) {{
    if (M == 0 || N == 0) return 0;
    const int64_t ldb = TRANS_B ? K : N;

    const int64_t tiles_m = (M + TM - 1) / TM, tiles_n = (N + TN - 1) / TN, tiles = tiles_m * tiles_n;
    const int64_t k_blocks = K > 0 ? (K + TK - 1) / TK : 1;  // K == 0 still stores bias/epilogue once
    const bool whole_k = K * std::max(kv_round_up(TM, MR), kv_round_up(TN, NR)) <= KV_PACK_FLOATS;
    const int nt = (int)std::min<int64_t>({THREADS}, tiles);
    int failed = 0;
    int64_t next_tile = 0;
    // each thread's share of the tiles; one thread (one tile, or THREADS 1) runs it without entering OpenMP, whose
    // team of one costs as much as a whole small product (0.26-0.5 us a call)
    auto kv_tiles = [&]() {{
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        // static: a contiguous run of tiles per thread; dynamic: tiles taken in order from a shared counter
        // (keeps both threads busy when one is slowed down; consecutive tiles still mostly share a panel)
        int64_t t_begin = DYNAMIC ? 0 : tiles * tid / nth, t_end = DYNAMIC ? 0 : tiles * (tid + 1) / nth;
        // packed panels span all of K (packed once per tile, reused by the next tiles that share them) unless
        // that would take more than KV_PACK_FLOATS per thread; then they are packed one K block at a time
        const int64_t k_alloc = whole_k ? std::max<int64_t>(K, 1) : TK;
        // buffers as large as the tiles this product has (a small matrix in a batch of thousands: a few KB from
        // the heap, not a cache tile's worth mapped and unmapped per call)
        const int64_t tm = std::min(TM, M), tn = std::min(TN, N);
        float* abuf = PACK_A ? kv_alloc(k_alloc * kv_round_up(tm, MR)) : nullptr;
        float* bbuf = PACK_B ? kv_alloc(k_alloc * kv_round_up(tn, NR)) : nullptr;
        float* ebuf = PACK_B ? nullptr : kv_alloc(TK * NR);
        float* cbuf = (!C_FLOAT && k_blocks > 1) ? kv_alloc(tm * TN) : nullptr;
        const bool ok = (!PACK_A || abuf) && (!PACK_B || bbuf) && (PACK_B || ebuf)
                        && (C_FLOAT || k_blocks == 1 || cbuf);
        if (!ok) {{
#pragma omp atomic write
            failed = 1;
        }}
        int64_t packed_m = -1, packed_n = -1;
        for (;;) {{
            int64_t t;
            if (DYNAMIC) {{
#pragma omp atomic capture
                t = next_tile++;
            }} else {{
                t = t_begin++;
            }}
            if (!ok || t >= (DYNAMIC ? tiles : t_end)) break;
            const int64_t im = N_OUTER ? t % tiles_m : t / tiles_n;
            const int64_t jn = N_OUTER ? t / tiles_m : t % tiles_n;
            const int64_t i0 = im * TM, mc = std::min(TM, M - i0), mc_pad = kv_round_up(mc, MR);
            const int64_t j0 = jn * TN, nc = std::min(TN, N - j0), nc_pad = kv_round_up(nc, NR);
            if (whole_k && PACK_A && im != packed_m) {{ kv_pack_a(A, K, i0, mc, 0, K, abuf); packed_m = im; }}
            if (whole_k && PACK_B && jn != packed_n) {{ kv_pack_b(B, ldb, j0, nc, 0, K, bbuf); packed_n = jn; }}
            for (int64_t kb = 0; kb < k_blocks; ++kb) {{
                const int64_t p0 = kb * TK, kc = std::min(TK, K - p0);
                const int64_t pbase = whole_k ? 0 : p0;  // K offset of the packed buffers
                if (!whole_k && PACK_A) kv_pack_a(A, K, i0, mc, p0, p0 + kc, abuf);
                if (!whole_k && PACK_B) kv_pack_b(B, ldb, j0, nc, p0, p0 + kc, bbuf);
                const bool first = kb == 0, last = kb == k_blocks - 1;
                for (int64_t jr = 0; jr < nc; jr += NR) {{
                    const int nv = (int)std::min<int64_t>(NR, nc - jr);
                    const float* bpanel = nullptr;
                    if (PACK_B) {{
                        bpanel = bbuf + (p0 - pbase) * nc_pad + jr * kc;
                    }} else if (nv < NR) {{  // the edge panel of unpacked B: copy it, padded with zeros
                        for (int64_t p = 0; p < kc; ++p) {{
                            const st_t* src = B + (p0 + p) * N + j0 + jr;
                            for (int j = 0; j < NR; ++j) ebuf[p * NR + j] = j < nv ? ld(src[j]) : 0.0f;
                        }}
                        bpanel = ebuf;
                    }}
                    const st_t* bdirect = B + p0 * N + j0 + jr;
                    for (int64_t ir = 0; ir < mc; ir += MR) {{
                        const int mv = (int)std::min<int64_t>(MR, mc - ir);
                        float* cacc = C_FLOAT ? (float*)(void*)(C + (i0 + ir) * N + j0 + jr)
                                              : (cbuf ? cbuf + ir * TN + jr : nullptr);  // unused when 1 K block
                        const int64_t ldacc = C_FLOAT ? N : TN;
                        st_t* c = C + (i0 + ir) * N + j0 + jr;
                        const st_t* bs = HAS_BIAS ? bias + j0 + jr : nullptr;
                        if (PACK_A) {{
                            const float* ap = abuf + (p0 - pbase) * mc_pad + ir * kc;
                            if (bpanel)
                                kv_micro<true>(kc, ap, 0, bpanel, NR, mv, nv, first, last, cacc, ldacc, c, N, bs);
                            else
                                kv_micro<true>(kc, ap, 0, bdirect, N, mv, nv, first, last, cacc, ldacc, c, N, bs);
                        }} else {{
                            const st_t* ap = A + (i0 + ir) * K + p0;
                            if (bpanel)
                                kv_micro<false>(kc, ap, K, bpanel, NR, mv, nv, first, last, cacc, ldacc, c, N, bs);
                            else
                                kv_micro<false>(kc, ap, K, bdirect, N, mv, nv, first, last, cacc, ldacc, c, N, bs);
                        }}
                    }}
                }}
            }}
        }}
        std::free(abuf);
        std::free(bbuf);
        std::free(ebuf);
        std::free(cbuf);
    }};
    if (nt > 1) {{  // never with THREADS 1 (nt <= THREADS)
#pragma omp parallel num_threads(nt)
        kv_tiles();
    }} else {{
        kv_tiles();
    }}
    return failed ? 2 : 0;
}}
"""

#: the catalog's entry point: 2-D A and B (K x N), a 1-D bias
_ENTRY = r"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != {N_IN} || n_out != 1) return 1;
    if (in[0].ndim != 2 || in[1].ndim != 2 || out[0].ndim != 2) return 1;
    for (int64_t i = 0; i < n_in; ++i)
        if (in[i].dtype != {KV_DTYPE}) return 1;
    if (out[0].dtype != {KV_DTYPE}) return 1;
    const int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];
    if (in[1].shape[0] != K || out[0].shape[0] != M || out[0].shape[1] != N) return 1;
    if (HAS_BIAS && (in[n_in - 1].ndim != 1 || in[n_in - 1].shape[0] != N)) return 1;
    return kv_gemm((const st_t*)in[0].data, (const st_t*)in[1].data,
                   HAS_BIAS ? (const st_t*)in[n_in - 1].data : nullptr, (st_t*)out[0].data, M, N, K);
}}
"""


RECIPES = [CppMatmul()]
