"""Indexing and the ads long tail in C++: gather, embedding_bag (sum), bucketize, feature_hash, keyed_feature_hash,
jagged_truncate.

Shapes are read from the kv_tensors at run time; op constants (num_buckets, k, the hash constants) are baked
into the source (keyed_feature_hash's table sizes are data). Float payloads that are only moved (gather, jagged
values) are copied bit for bit in their storage type, so bfloat16 needs no conversion; sums (embedding_bag)
accumulate in float.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from kevolve import diagnosis as d
from kevolve.problems.ops import HASH_MULTIPLIERS, HASH_SHIFTS
from kevolve.problems.problem import Problem
from kevolve.synthesis.intdiv import U64, magic_divisor
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import (
    elementwise_loop,
    parallel_loop,
    prelude,
    simd_or_unroll,
    task_schedule,
    tasks_param,
    threads_param,
)

INT64_MAX = (1 << 63) - 1


def _simd(params: dict) -> str:
    return "#pragma omp simd" if params.get("simd") == "omp" else ""


def _header(problem: Problem, params: dict) -> str:
    return prelude(problem, params) + "#include <cstring>\n"


# --- gather -------------------------------------------------------------------------------------------------

class CppGather(Recipe):
    """out[i, j] = x[i, index[i, j]]: a row of x is the working set of a row of indices."""

    name = "cpp.gather"
    language = "cpp"
    families = ("gather",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            tasks_param("rows_per_task", (1, 8, 64, 0), default=0),
            # prefetch the x row this many rows ahead (0: leave it to the hardware); rows much wider than the
            # gathered count are not prefetched
            Param("prefetch", (0, 1, 2, 4), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1}, default=1),
            Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1}, default="none"),
        ])

    def render(self, problem: Problem, params: dict) -> str:
        pf = params["prefetch"]
        prefetch = f"""
        if (i + {pf} < rows) {{
            const char* ahead = (const char*)(x + (i + {pf}) * cols);
            for (int64_t l = 0; l < prefetch_bytes; l += 64) __builtin_prefetch(ahead + l, 0, 3);
        }}""" if pf else ""
        loop = f"""for (int64_t i = 0; i < rows; ++i) {{{prefetch}
        const st_t* __restrict xr = x + i * cols;
        const int64_t* __restrict ir = index + i * k;
        st_t* __restrict orow = o + i * k;
        {_simd(params)}
        for (int64_t j = 0; j < k; ++j) orow[j] = xr[ir[j]];
    }}"""
        return _header(problem, params) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2) return 1;
    const int64_t rows = in[1].shape[0], k = in[1].shape[1], cols = in[0].shape[1];
    if (in[0].shape[0] < rows) return 1;
    const st_t* __restrict x = (const st_t*)in[0].data;
    const int64_t* __restrict index = (const int64_t*)in[1].data;
    st_t* __restrict o = (st_t*)out[0].data;
    // whole upcoming rows are prefetched only where a row of indices touches most of its lines
    const int64_t prefetch_bytes = cols <= 8 * k ? cols * (int64_t)sizeof(st_t) : 0;
    (void)prefetch_bytes;
    {parallel_loop(params["threads"], loop, "rows * k", task_schedule(params["rows_per_task"]))}
    return 0;
}}
"""


# --- embedding_bag ----------------------------------------------------------------------------------------------

class CppEmbeddingBag(Recipe):
    """Sum pooling with include_last_offset offsets: bag b sums weight rows indices[offsets[b]:offsets[b+1]];
    an empty bag is zeros. The dim loop runs in tiles accumulated in registers."""

    name = "cpp.embedding_bag"
    language = "cpp"
    families = ("embedding_bag",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            tasks_param("bags_per_task"),
            # prefetch the weight row of the index this many lookups ahead
            Param("prefetch", (0, 4, 8, 16, 32), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1}, default=16),
            # width of the dim tile accumulated in registers
            # (16 AVX2 registers: 128 float32 lanes fit as accumulators; bfloat16 also needs registers to widen)
            Param("dim_tile", (16, 32, 64, 128), {d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1},
                  default=64 if problem.dtype == torch.bfloat16 else 128),
        ])

    def render(self, problem: Problem, params: dict) -> str:
        loop = bag_sum_loop(params["dim_tile"], params["prefetch"], "const int64_t s = off[b], e = off[b + 1];",
                            "st_t", lambda x: f"ld({x})", lambda x: f"st({x})")
        return _header(problem, params) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 3 || n_out != 1 || in[0].ndim != 2) return 1;
    const int64_t dim = in[0].shape[1];
    const int64_t nnz = in[1].shape[0];
    const int64_t bags = out[0].shape[0];
    if (in[2].shape[0] != bags + 1) return 1;
    const st_t* __restrict w = (const st_t*)in[0].data;
    const int64_t* __restrict idx = (const int64_t*)in[1].data;
    const int64_t* __restrict off = (const int64_t*)in[2].data;
    st_t* __restrict o = (st_t*)out[0].data;
    (void)nnz;
    {parallel_loop(params["threads"], loop, "nnz * dim", task_schedule(params["bags_per_task"]))}
    return 0;
}}
"""


def bag_sum_loop(tile: int, prefetch: int, bounds: str, storage: str, ld: Callable[[str], str],
                 st: Callable[[str], str], row_checks: str = "") -> str:
    """The loop over bags that sums each bag's weight rows, the dim in tiles of ``tile`` accumulated in
    registers, each tile pass prefetching its slice of the row ``prefetch`` lookups ahead (one prefetch per cache
    line, interleaved with the adds; 0: none). It sees ``w``, ``idx``, ``o``, ``dim``, ``nnz`` and ``bags``;
    ``bounds`` sets the bag's ``s`` and ``e`` from ``b``; ``row_checks`` may ``continue`` past the row ``r``
    (a padding index, one out of range). The catalog's embedding_bag and the ATen kernel a captured program's
    ``_embedding_bag`` lowers to both run it."""
    line = f"(64 / (int)sizeof({storage}) < {tile} ? 64 / (int)sizeof({storage}) : {tile})"
    ahead = f"""const char* ahead = (const char*)(w + (int64_t)idx[j + {prefetch} < nnz ? j + {prefetch} : nnz - 1] * dim + d0);""" \
        if prefetch else ""
    line_prefetch = "__builtin_prefetch(ahead + c * (int64_t)sizeof(*w), 0, 3);" if prefetch else ""
    tail_prefetch = """for (int64_t l = 0; l < width * (int64_t)sizeof(*w); l += 64) __builtin_prefetch(ahead + l, 0, 3);""" \
        if prefetch else ""
    return f"""for (int64_t b = 0; b < bags; ++b) {{
        constexpr int TILE = {tile}, LINE = {line};  // LINE: elements per cache line
        {bounds}
        {storage}* __restrict orow = o + b * dim;
        for (int64_t d0 = 0; d0 < dim; d0 += TILE) {{
            ct_t acc[TILE];
            if (d0 + TILE <= dim) {{
                for (int t = 0; t < TILE; ++t) acc[t] = 0;
                for (int64_t j = s; j < e; ++j) {{
                    const int64_t r = (int64_t)idx[j];
                    {row_checks}
                    {ahead}
                    const {storage}* __restrict row = w + r * dim + d0;
                    #pragma GCC unroll 16
                    for (int c = 0; c < TILE; c += LINE) {{
                        {line_prefetch}
                        #pragma omp simd
                        for (int t = c; t < c + LINE; ++t) acc[t] += {ld("row[t]")};
                    }}
                }}
                #pragma omp simd
                for (int t = 0; t < TILE; ++t) orow[d0 + t] = {st("acc[t]")};
            }} else {{
                const int64_t width = dim - d0;
                for (int64_t t = 0; t < width; ++t) acc[t] = 0;
                for (int64_t j = s; j < e; ++j) {{
                    const int64_t r = (int64_t)idx[j];
                    {row_checks}
                    {ahead}
                    {tail_prefetch}
                    const {storage}* __restrict row = w + r * dim + d0;
                    for (int64_t t = 0; t < width; ++t) acc[t] += {ld("row[t]")};
                }}
                for (int64_t t = 0; t < width; ++t) orow[d0 + t] = {st("acc[t]")};
            }}
        }}
    }}"""


# --- bucketize ------------------------------------------------------------------------------------------------

class CppBucketize(Recipe):
    """right=False: the bucket of x is the number of boundaries b with !(b >= x), a lower bound; a NaN x lands
    past the last boundary, as in the reference. Searches:

    - "binary": the textbook loop with a data-dependent branch;
    - "branchless": the same halving steps (identical for every x) with a select instead of the branch;
    - "blocked": the branchless steps run step-major over a block of elements, so the compiler may vectorize;
    - "gather": the branchless steps on 8 elements at once with AVX2 gathers, ``interleave`` groups in flight
      (falls back to "branchless" where AVX2 is missing);
    - "table": a grid of ``grid`` cells per boundary over [first, last boundary] gives each x the range of
      boundaries it can fall between, finished by branch-free halving steps over the widest cell. Exact for
      any input: the cell function is monotone and computed the same way for boundaries and x, so boundaries
      in earlier cells are below x and those in later cells are not (a grid that cannot be built, e.g. with
      infinite boundaries, falls back to "branchless").

    On AVX2 machines "gather" is fastest at the timing shape; GCC does not emit gathers itself when tuning for
    AMD Zen, hence the intrinsics.
    """

    name = "cpp.bucketize"
    language = "cpp"
    families = ("bucketize",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and not problem.attrs.get("right", False)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        def valid(p: dict) -> bool:
            return ((p["search"] == "blocked" or p["block"] == 256)
                    and (p["search"] == "gather" or p["interleave"] == 4)
                    and (p["search"] == "table" or p["grid"] == 4))

        return ScheduleSpace([
            threads_param(facts),
            Param("search", ("binary", "branchless", "blocked", "table", "gather"),
                  {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1}, default="gather"),
            Param("block", (64, 256, 1024), {d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1}, default=256),
            Param("interleave", (1, 2, 4), {d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1}, default=4),
            Param("grid", (1, 4, 16), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: -1}, default=4),
        ], valid=valid)

    def render(self, problem: Problem, params: dict) -> str:
        search = params["search"]
        block = params["block"] if search == "blocked" else 4096
        branchless = """
            for (int64_t i = i0; i < i1; ++i) o[i] = lower_bound_branchless(x[i]);"""
        if search == "binary":
            body = """
            for (int64_t i = i0; i < i1; ++i) {
                const float v = x[i];
                int64_t lo = 0, hi = nb;
                while (lo < hi) {
                    const int64_t mid = lo + ((hi - lo) >> 1);
                    if (!(bnd[mid] >= v)) lo = mid + 1; else hi = mid;
                }
                o[i] = lo;
            }"""
        elif search == "branchless":
            body = branchless
        elif search == "blocked":
            body = """
            int32_t lo[BLOCK];
            const int64_t width = i1 - i0;
            const float* __restrict xb = x + i0;
            for (int64_t t = 0; t < width; ++t) lo[t] = 0;
            for (int s = 0; s < steps; ++s) {
                const int32_t h = (int32_t)half[s];
                const float* __restrict probe = bnd + (h - 1);
                #pragma omp simd
                for (int64_t t = 0; t < width; ++t) lo[t] += !(probe[lo[t]] >= xb[t]) ? h : 0;
            }
            #pragma omp simd
            for (int64_t t = 0; t < width; ++t) o[i0 + t] = lo[t];"""
        elif search == "gather":
            g = params["interleave"]
            body = f"""
#ifdef __AVX2__
            int64_t i = i0;
            for (; i + {8 * g} <= i1; i += {8 * g}) {{
                __m256 xv[{g}];
                __m256i lo[{g}];
                for (int u = 0; u < {g}; ++u) {{
                    xv[u] = _mm256_loadu_ps(x + i + 8 * u);
                    lo[u] = _mm256_setzero_si256();
                }}
                for (int s = 0; s < steps; ++s) {{
                    const __m256i h = _mm256_set1_epi32((int32_t)half[s]);
                    const float* probe = bnd + (half[s] - 1);
                    for (int u = 0; u < {g}; ++u) {{
                        const __m256 b = _mm256_i32gather_ps(probe, lo[u], 4);
                        const __m256 below = _mm256_cmp_ps(b, xv[u], _CMP_NGE_UQ);
                        lo[u] = _mm256_add_epi32(lo[u], _mm256_and_si256(_mm256_castps_si256(below), h));
                    }}
                }}
                for (int u = 0; u < {g}; ++u) {{
                    _mm256_storeu_si256((__m256i*)(o + i + 8 * u),
                                        _mm256_cvtepi32_epi64(_mm256_castsi256_si128(lo[u])));
                    _mm256_storeu_si256((__m256i*)(o + i + 8 * u + 4),
                                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(lo[u], 1)));
                }}
            }}
            for (; i < i1; ++i) o[i] = lower_bound_branchless(x[i]);
#else{branchless}
#endif"""
        else:
            body = """
            if (table == nullptr) {""" + branchless + """
            } else {
                for (int64_t i = i0; i < i1; ++i) {
                    const float v = x[i];
                    const int64_t c = cell(v);
                    int64_t lo = table[c];
                    const int64_t hi = table[c + 1];
                    // lower bound in [lo, lo + wide] of b' with b'[j] = +inf past hi: the answer lies in [lo, hi]
                    for (int s = 0; s < wsteps; ++s) {
                        const int64_t j = lo + whalf[s] - 1;
                        const float b = bnd[j < last_index ? j : last_index];
                        lo += (j < hi) & !(b >= v) ? whalf[s] : 0;
                    }
                    o[i] = lo;
                }
            }"""
        table = f"""
    // grid: cell(v) is monotone in v and computed identically for boundaries and x
    const int64_t cells = nb * {params["grid"]};
    const float first = nb ? bnd[0] : 0.0f, last = nb ? bnd[nb - 1] : 0.0f;
    const int64_t last_index = nb - 1;
    const float scale = (float)cells / (last - first);
    const float top_cell = (float)(cells - 1);
    auto cell = [=](float v) -> int64_t {{
        float f = (v - first) * scale;
        f = f < top_cell ? f : top_cell;  // NaN -> the last cell
        f = f > 0.0f ? f : 0.0f;
        return (int64_t)f;
    }};
    int32_t* table = nullptr;
    int64_t wide = 0;
    if (nb > 0 && scale > 0.0f && scale < INFINITY && cells < ((int64_t)1 << 26)) {{
        table = new int32_t[cells + 1];
        int64_t j = 0;
        for (int64_t c = 0; c < cells; ++c) {{
            while (j < nb && cell(bnd[j]) < c) ++j;
            table[c] = (int32_t)j;
        }}
        table[cells] = (int32_t)nb;
        for (int64_t c = 0; c < cells; ++c) wide = std::max<int64_t>(wide, table[c + 1] - table[c]);
    }}
    // the branch-free halving steps over the widest cell, the same for every x
    int64_t whalf[66];
    int wsteps = 0;
    for (int64_t len = wide; len > 0; ) {{
        const int64_t h = len > 1 ? len / 2 : 1;
        whalf[wsteps++] = h;
        len -= h;
    }}""" if search == "table" else ""
        cleanup = "\n    delete[] table;" if search == "table" else ""
        loop = f"""for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {{
        const int64_t i1 = std::min(n, i0 + BLOCK);
        {{{body}
        }}
    }}"""
        return _header(problem, params) + ("#include <immintrin.h>\n" if search == "gather" else "") + f"""
#define BLOCK {block}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 2 || n_out != 1 || in[0].dtype != KV_FLOAT32 || in[1].dtype != KV_FLOAT32) return 1;
    const int64_t n = kv_numel(&in[0]);
    const int64_t nb = kv_numel(&in[1]);
    if (nb >= ((int64_t)1 << 30)) return 1;
    const float* __restrict x = (const float*)in[0].data;
    const float* __restrict bnd = (const float*)in[1].data;
    int64_t* __restrict o = (int64_t*)out[0].data;
    // the halving steps of a branchless lower bound over nb items; the same for every x
    int64_t half[66];
    int steps = 0;
    for (int64_t len = nb; len > 0; ) {{
        const int64_t h = len > 1 ? len / 2 : 1;
        half[steps++] = h;
        len -= h;
    }}
    auto lower_bound_branchless = [&](float v) -> int64_t {{
        int64_t lo = 0;
        for (int s = 0; s < steps; ++s) lo += !(bnd[lo + half[s] - 1] >= v) ? half[s] : 0;
        return lo;
    }};
    (void)lower_bound_branchless;{table}
    {parallel_loop(params["threads"], loop, "n")}{cleanup}
    return 0;
}}
"""


# --- feature_hash ---------------------------------------------------------------------------------------------

def _mix_rounds(indent: int) -> str:
    """The hash's multiply and xor-shift rounds on a uint64_t ``h``, one line each."""
    return "\n".join(f"{' ' * indent}h *= 0x{m & U64:016x}ULL; h ^= h >> {s};"
                     for m, s in zip(HASH_MULTIPLIERS, HASH_SHIFTS))


def lemire_constant(divisor: int) -> int:
    """M = ceil(2**128 / divisor) mod 2**128: a mod divisor == ((M * a mod 2**128) * divisor) >> 128 for every
    64-bit a (Lemire, Kaser and Kurz, "Faster remainder by direct computation", with 2N = 128 bits)."""
    return ((1 << 128) // divisor + (1 if (1 << 128) % divisor else 0)) & ((1 << 128) - 1)


#: "fp" needs quotients below 2**51 for 63-bit values: divisors from 2**12 on
FP_MOD_MIN = 1 << 12


def mod_reference(a: int, divisor: int, how: str) -> int:
    """What the generated C++ computes, in Python (for tests of the constants)."""
    if how == "fp" and not FP_MOD_MIN <= divisor < 1 << 62:
        how = "magic"
    if how != "div" and divisor & (divisor - 1) == 0:
        return a & (divisor - 1)
    if how == "fp":  # IEEE double arithmetic, as in C++ (Python floats are doubles, rounding to nearest)
        q = int(float(a) * (1.0 / float(divisor)))
        r = a - q * divisor
        r += divisor if r < 0 else 0
        r -= divisor if r >= divisor else 0
        return r
    if how == "magic":
        m, s = magic_divisor(divisor)
        return a - ((a * m) >> (64 + s)) * divisor
    if how == "fastmod":
        low = (lemire_constant(divisor) * a) & ((1 << 128) - 1)
        return (low * divisor) >> 128
    return a % divisor


class CppFeatureHash(Recipe):
    """bucket = (mix(id) & INT64_MAX) % num_buckets on the unsigned 64-bit pattern: each round multiplies
    (wrapping) then xors in a logical right shift. The modulo is a division ("div"), Lemire's direct remainder
    with a 128-bit reciprocal ("fastmod"), or a quotient by a 64-bit multiply-high reciprocal ("magic"); the two
    reciprocals are exact for every 63-bit value."""

    name = "cpp.feature_hash"
    language = "cpp"
    families = ("feature_hash",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            Param("mod", ("div", "fastmod", "magic", "fp"), {d.COMPUTE_BOUND: +1}, default="magic"),
            Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1}, default="none"),
            Param("unroll", (1, 2, 4), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1}, default=1),
            Param("block", (4096, 65536), {d.LATENCY_BOUND: +1}, default=65536),
        ], valid=simd_or_unroll)

    def render(self, problem: Problem, params: dict) -> str:
        buckets = int(problem.attrs["num_buckets"])
        if buckets <= 0:
            raise ValueError("num_buckets must be positive")
        rounds = _mix_rounds(12)
        how = params["mod"]
        if how == "fp" and not FP_MOD_MIN <= buckets < 1 << 62:
            how = "magic"  # the double estimate of the quotient is within one only for quotients below 2**51
        if how != "div" and buckets & (buckets - 1) == 0:
            constants = ""
            mod = "const uint64_t r = h & (BUCKETS - 1);"
        elif how == "fp":
            constants = f"static const double INV = 1.0 / {buckets}.0;"
            mod = ("const int64_t q = (int64_t)((double)(int64_t)h * INV);  // the quotient, or one off\n"
                   "            int64_t sr = (int64_t)h - q * (int64_t)BUCKETS;\n"
                   "            sr += sr < 0 ? (int64_t)BUCKETS : 0;\n"
                   "            sr -= sr >= (int64_t)BUCKETS ? (int64_t)BUCKETS : 0;\n"
                   "            const uint64_t r = (uint64_t)sr;")
        elif how == "magic":
            m, s = magic_divisor(buckets)
            constants = f"static const uint64_t MAGIC = 0x{m:016x}ULL;"
            mod = (f"const uint64_t q = (uint64_t)(((unsigned __int128)h * MAGIC) >> 64) >> {s};\n"
                   f"            const uint64_t r = h - q * BUCKETS;")
        elif how == "fastmod":
            big = lemire_constant(buckets)
            constants = (f"static const unsigned __int128 LEMIRE = ((unsigned __int128)0x{big >> 64:016x}ULL << 64)"
                         f" | 0x{big & U64:016x}ULL;")
            mod = ("const unsigned __int128 low = LEMIRE * h;\n"
                   "            const unsigned __int128 bottom = ((unsigned __int128)(uint64_t)low * BUCKETS) >> 64;\n"
                   "            const unsigned __int128 top = (unsigned __int128)(uint64_t)(low >> 64) * BUCKETS;\n"
                   "            const uint64_t r = (uint64_t)((bottom + top) >> 64);")
        else:
            constants = ""
            mod = "const uint64_t r = h % BUCKETS;"
        body = f"uint64_t h = ids[i];\n{rounds}\n            h &= MASK63;\n            {mod}\n            o[i] = (int64_t)r;"
        return _header(problem, params) + f"""
static const uint64_t BUCKETS = {buckets}ULL;
static const uint64_t MASK63 = 0x{INT64_MAX:016x}ULL;
{constants}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 1 || n_out != 1 || in[0].dtype != KV_INT64) return 1;
    const int64_t n = kv_numel(&in[0]);
    const uint64_t* __restrict ids = (const uint64_t*)in[0].data;
    int64_t* __restrict o = (int64_t*)out[0].data;
    {elementwise_loop("n", body, params)}
    return 0;
}}
"""


class CppKeyedFeatureHash(Recipe):
    """keyed_feature_hash: the flat hash's mix, then a remainder by the size of the id's feature table, which
    arrives as a tensor. Each feature's ids are one contiguous run, so a thread walks its even share of the ids
    feature by feature and sets the divisor up once per run: "div" divides, "magic" computes the run's
    multiply-high reciprocal with a 128-bit division (m = ceil(2**(63 + l) / d), s = l - 1 for l the bit length
    of d - 1: exact for every 63-bit dividend) and then multiplies."""

    name = "cpp.keyed_feature_hash"
    language = "cpp"
    families = ("keyed_hash",)
    dtypes = (torch.int64,)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            Param("mod", ("div", "magic"), {d.COMPUTE_BOUND: +1}, default="magic"),
        ])

    def render(self, problem: Problem, params: dict) -> str:
        threads = params["threads"]
        if params["mod"] == "magic":
            setup = """const int l = 64 - __builtin_clzll(d - 1);
            const int s = l - 1;
            const uint64_t m = (uint64_t)((((unsigned __int128)1 << (63 + l)) + d - 1) / d);"""
            remainder = "h - ((uint64_t)(((unsigned __int128)h * m) >> 64) >> s) * d"
        else:
            setup = ""
            remainder = "h % d"
        region, thread, count = ((f"#pragma omp parallel num_threads({threads})", "omp_get_thread_num()",
                                  "omp_get_num_threads()") if threads > 1 else ("", "0", "1"))
        return _header(problem, params) + f"""
static const uint64_t MASK63 = 0x{INT64_MAX:016x}ULL;

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 3 || n_out != 1) return 1;
    for (int k = 0; k < 3; ++k) if (in[k].dtype != KV_INT64) return 1;
    const int64_t n = kv_numel(&in[0]), features = kv_numel(&in[2]);
    if (features < 1 || kv_numel(&out[0]) != n) return 2;
    const int64_t batch = (kv_numel(&in[1]) - 1) / features;
    const uint64_t* __restrict ids = (const uint64_t*)in[0].data;
    const int64_t* __restrict off = (const int64_t*)in[1].data;
    const int64_t* __restrict sizes = (const int64_t*)in[2].data;
    int64_t* __restrict o = (int64_t*)out[0].data;
    {region}
    {{
        const int t = {thread}, nt = {count};
        // where feature g's ids end: the next one's first offset (the last one's is n, so every walk ends)
        auto end_of = [&](int64_t g) {{ return g + 1 < features ? off[(g + 1) * batch] : n; }};
        int64_t i = n * t / nt, f = 0;
        const int64_t stop = n * (t + 1) / nt;
        while (i < stop) {{
            while (end_of(f) <= i) ++f;  // the feature holding id i (empty ones passed over)
            const int64_t run_end = std::min(stop, end_of(f));
            const uint64_t d = (uint64_t)sizes[f];
            if (d == 1) {{
                for (; i < run_end; ++i) o[i] = 0;
                continue;
            }}
            {setup}
            for (; i < run_end; ++i) {{
                uint64_t h = ids[i];
{_mix_rounds(16)}
                h &= MASK63;
                o[i] = (int64_t)({remainder});
            }}
        }}
    }}
    return 0;
}}
"""


# --- jagged_truncate -------------------------------------------------------------------------------------------

class CppJaggedTruncate(Recipe):
    """Keep the last k items of each sequence. Two phases in one parallel region: first the output offset where
    each thread's contiguous share of sequences starts (the sum of the kept lengths min(len, k) before it), then
    each thread writes its offsets and copies its kept items. The start comes from the threads' share sums
    scanned after a barrier ("shared"), or each thread recounts the kept lengths before its share itself
    ("recount": reads more offsets, but no barrier, which matters when a thread can be descheduled)."""

    name = "cpp.jagged_truncate"
    language = "cpp"
    families = ("jagged",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name == "jagged_truncate"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            # "fixed": a full k-item run is one constant-length copy, shorter ones a loop
            Param("copy", ("loop", "memcpy", "fixed"), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1}, default="memcpy"),
            Param("scan", ("shared", "recount"), {d.LATENCY_BOUND: +1}, default="recount"),
        ], valid=lambda p: p["threads"] > 1 or p["scan"] == "recount")

    def render(self, problem: Problem, params: dict) -> str:
        k = int(problem.attrs["k"])
        threads = params["threads"]
        loop = "for (int64_t t = 0; t < keep; ++t) dst[t] = src[t];"
        copy = {
            "loop": loop,
            "memcpy": "memcpy(dst, src, (size_t)keep * sizeof(st_t));",
            "fixed": f"if (keep == K) memcpy(dst, src, K * sizeof(st_t)); else {{ {loop} }}",
        }[params["copy"]]
        if threads > 1 and params["scan"] == "shared":
            region_open = f"""
    int64_t partial[{threads}];
    #pragma omp parallel num_threads({threads})
    {{
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t b0 = batch * t / nt, b1 = batch * (t + 1) / nt;
        int64_t local = 0;
        for (int64_t b = b0; b < b1; ++b) local += std::min(off[b + 1] - off[b], K);"""
            barrier = """
        partial[t] = local;
        #pragma omp barrier
        int64_t base = 0;
        for (int u = 0; u < t; ++u) base += partial[u];"""
        elif threads > 1:
            region_open = f"""
    #pragma omp parallel num_threads({threads})
    {{
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t b0 = batch * t / nt, b1 = batch * (t + 1) / nt;"""
            barrier = """
        int64_t base = 0;
        for (int64_t b = 0; b < b0; ++b) base += std::min(off[b + 1] - off[b], K);"""
        else:
            region_open = """
    {
        const int64_t b0 = 0, b1 = batch;"""
            barrier = """
        int64_t base = 0;"""
        return _header(problem, params) + f"""
static const int64_t K = {k};

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 2 || n_out != 2) return 1;
    const int64_t batch = kv_numel(&in[1]) - 1;
    if (batch < 0 || kv_numel(&out[1]) != batch + 1) return 1;
    const st_t* __restrict v = (const st_t*)in[0].data;
    const int64_t* __restrict off = (const int64_t*)in[1].data;
    st_t* __restrict ov = (st_t*)out[0].data;
    int64_t* __restrict oo = (int64_t*)out[1].data;
    oo[0] = 0;{region_open}{barrier}
        for (int64_t b = b0; b < b1; ++b) {{
            const int64_t keep = std::min(off[b + 1] - off[b], K);
            const st_t* __restrict src = v + (off[b + 1] - keep);
            st_t* __restrict dst = ov + base;
            {copy}
            base += keep;
            oo[b + 1] = base;
        }}
    }}
    return 0;
}}
"""


RECIPES = [CppGather(), CppEmbeddingBag(), CppBucketize(), CppFeatureHash(), CppKeyedFeatureHash(),
           CppJaggedTruncate()]
