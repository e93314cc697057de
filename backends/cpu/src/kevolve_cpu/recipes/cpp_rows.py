"""Row-wise ops in C++: reductions, softmax / log_softmax, layer / RMS norm and cumsum over the last dim.

Every kernel reads its shape at run time (rows = product of the leading dims, cols = the last dim), computes
in float (double for float64) and stores in the input's dtype. Rows are split into tasks of ``rows_per_task``
rows spread over ``threads`` OpenMP threads; the reductions inside a row are printed by :func:`_reduce`, which
keeps ``accumulators`` independent partial results per reduction (the lanes the compiler vectorizes) or, with
one accumulator, leaves the vectorization to an ``omp simd reduction`` clause.

Knobs shared by the families: ``threads``, ``rows_per_task``, ``schedule`` (static/dynamic), ``accumulators``,
``simd``; row outputs add ``stores`` (normal / non-temporal ``stream``) and ``prefetch`` (rows ahead, fetched
while the current row is computed from cache). Per family: row_reduce ``interleave`` (rows reduced in one loop);
row_softmax ``passes`` (three_pass / online), ``math`` (libm / poly) and, for softmax, ``exp_buffer``; row_norm
``passes`` (two_pass / one_pass) and ``stats`` (one-pass sums in double / float lanes) for layer_norm; row_scan
``method`` (chains / vector).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import REDUCTIONS, Var, exp, log
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import (
    STORAGE,
    compute_type,
    cpp_expr,
    cpp_literal,
    math_param,
    prelude,
    serial_below,
    threads_param,
)

#: elements per tile of the online (single read) softmax pass
_ONLINE_TILE = 512

#: elements between two prefetches: one 64-byte line of a float row
_PREFETCH_STEP = 16

_OMP_REDUCTION = {"+": "+", "max": "max", "|": "|"}


def _combine(op: str, acc: str, value: str) -> str:
    if op == "+":
        return f"{acc} + {value}"
    if op == "max":  # vmaxps-shaped; NaN is tracked separately where it matters
        return f"({value} > {acc} ? {value} : {acc})"
    if op == "|":
        return f"{acc} | {value}"
    raise ValueError(f"no combine for {op!r}")



def _reduce(specs: list[tuple[str, str, str, str, str]], n: str, pre: str, params: dict[str, Any],
            prefetch: str = "") -> str:
    """Code that reduces ``j`` over ``[0, n)``: each spec is (variable, C type, combine op, identity, value
    expression); ``pre`` holds statements evaluated per ``j`` before the values (loads, side stores). The
    variables are declared by the printed code. ``prefetch``: a pointer whose element ``j`` is prefetched as
    the loop passes ``j`` (the next rows, while this one is computed from cache)."""
    lanes, simd = params.get("accumulators", 1), params.get("simd", "none") == "omp"
    decls = [f"{ctype} {var} = {ident};" for var, ctype, _, ident, _ in specs]
    if lanes <= 1:
        clauses = " ".join(f"reduction({_OMP_REDUCTION[op]}:{var})" for var, _, op, _, _ in specs)
        pragma = f"#pragma omp simd {clauses}" if simd else ""
        body = " ".join(f"{var} = {_combine(op, var, value)};" for var, _, op, _, value in specs)
        if not prefetch:
            return "\n".join(decls + [pragma, f"for (int64_t j = 0; j < {n}; ++j) {{ {pre} {body} }}"])
        return "\n".join(decls + [
            f"for (int64_t b0 = 0; b0 < {n}; b0 += {_PREFETCH_STEP}) {{",
            f"    __builtin_prefetch({prefetch} + b0);",
            f"    const int64_t b1 = std::min<int64_t>({n}, b0 + {_PREFETCH_STEP});",
            pragma,
            f"    for (int64_t j = b0; j < b1; ++j) {{ {pre} {body} }}",
            "}",
        ])
    lines = []
    for var, ctype, _, ident, _ in specs:
        lines.append(f"{ctype} {var}_l[{lanes}];")
        lines.append(f"for (int k = 0; k < {lanes}; ++k) {var}_l[k] = {ident};")
    lane_body = " ".join(f"{var}_l[k] = {_combine(op, f'{var}_l[k]', value)};" for var, _, op, _, value in specs)
    tail_body = " ".join(f"{var} = {_combine(op, var, value)};" for var, _, op, _, value in specs)
    fetch = ""
    if prefetch:  # one prefetch per cache line of float rows
        fetch = (f"__builtin_prefetch({prefetch} + j0);" if lanes >= _PREFETCH_STEP else
                 f"if (j0 % {_PREFETCH_STEP} == 0) __builtin_prefetch({prefetch} + j0);")
    lines += [
        "int64_t j0 = 0;",
        f"for (; j0 + {lanes} <= {n}; j0 += {lanes}) {{",
        f"    {fetch}",
        "#pragma omp simd" if simd else "",
        f"    for (int64_t k = 0; k < {lanes}; ++k) {{ const int64_t j = j0 + k; {pre} {lane_body} }}",
        "}",
    ]
    for var, ctype, op, ident, _ in specs:
        lines.append(f"for (int k = 0; k < {lanes}; ++k) {var} = {_combine(op, var, f'{var}_l[k]')};")
    lines.append(f"for (; j0 < {n}; ++j0) {{ const int64_t j = j0; {pre} {tail_body} }}")
    return "\n".join(decls) + "\n" + _scoped("\n".join(lines))


def _row_loop(body: str, params: dict[str, Any], prefetch: str = "") -> str:
    """``for j in [0, cols): body``, vectorized per the simd knob; with ``prefetch``, in blocks of one cache
    line (of float rows) each prefetching the same block of a later row."""
    if not prefetch:
        return f"{_simd(params)}\nfor (int64_t j = 0; j < cols; ++j) {{ {body} }}"
    step = _PREFETCH_STEP
    return f"""int64_t j0 = 0;
for (; j0 + {step} <= cols; j0 += {step}) {{
    __builtin_prefetch({prefetch} + j0);
    {_simd(params)}
    for (int64_t j = j0; j < j0 + {step}; ++j) {{ {body} }}
}}
{_simd(params)}
for (int64_t j = j0; j < cols; ++j) {{ {body} }}"""


def _prefetch_ptr(params: dict[str, Any], row: str = "xr") -> str:
    ahead = params.get("prefetch", 0)
    return f"({row} + {ahead} * cols)" if ahead else ""


def _scoped(code: str) -> str:
    return "{\n" + code + "\n}"


def _simd(params: dict[str, Any]) -> str:
    return "#pragma omp simd" if params.get("simd") == "omp" else ""


def _exp(arg: str, params: dict[str, Any], ct: str) -> str:
    return cpp_expr(exp(Var(arg)), params.get("math", "libm"), ct)


#: exp for arguments known to be <= 0 (softmax shifts by the row max): kv_expf's range reduction without its
#: overflow handling; NaN propagates, and below the smallest normal the result flushes to 0. The polynomial
#: for exp(r), |r| <= ln2/2: Cephes' (about 1 ulp) for float outputs, Taylor to r^4 (4e-5 relative, a
#: hundredth of a bfloat16 ulp) for bfloat16 outputs.
_EXP_NONPOS = """
static inline float kv_exp_nonpos(float x) {
    const float xc = x < -87.0f ? -87.0f : x;
    const float k = floorf(xc * 1.44269504088896341f + 0.5f);
    const float r = xc - k * 0.693359375f + k * 2.12194440e-4f;
    const float e = %s;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return x < -87.0f ? 0.0f : e * scale;
}
"""
_EXP_POLY_FLOAT = ("((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r"
                   " + 1.6666665459e-1f) * r + 5.0000001201e-1f) * (r * r) + r) + 1.0f")
_EXP_POLY_BF16 = "1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * 4.1666668e-2f)))"


def _exp_nonpos_helper(problem: Problem) -> str:
    return _EXP_NONPOS % (_EXP_POLY_BF16 if problem.dtype == torch.bfloat16 else _EXP_POLY_FLOAT)


def _exp_nonpos(arg: str, params: dict[str, Any], ct: str) -> str:
    if params.get("math") == "poly" and ct == "float":
        return f"kv_exp_nonpos({arg})"
    return _exp(arg, params, ct)


def _log(arg: str, params: dict[str, Any], ct: str) -> str:
    return cpp_expr(log(Var(arg)), params.get("math", "libm"), ct)


_STREAM_COPY = """
#include <immintrin.h>
// copy a finished row out with non-temporal stores: no read-for-ownership of the destination, and the output
// does not evict the input from the caches
static inline void kv_stream_copy(void* __restrict dst, const void* __restrict src, size_t bytes) {
#if defined(__AVX__)
    char* d = (char*)dst;
    const char* s = (const char*)src;
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    if (head > bytes) head = bytes;
    memcpy(d, s, head);
    d += head; s += head; bytes -= head;
    for (; bytes >= 32; bytes -= 32, d += 32, s += 32)
        _mm256_stream_si256((__m256i*)d, _mm256_loadu_si256((const __m256i*)s));
    memcpy(d, s, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}
static inline void kv_stream_fence() {
#if defined(__AVX__)
    _mm_sfence();
#endif
}
"""


#: stores of row outputs: for bfloat16 the header's rounding (round to nearest even, NaN kept quiet) with the
#: NaN case selected in 32-bit lanes, which vectorizes to about half the instructions
_STORE_BF16 = """
static inline st_t sto(ct_t v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
    return (st_t)(((v != v) ? (u | 0x400000u) : rounded) >> 16);
}
"""
_STORE_SAME = """
static inline st_t sto(ct_t v) { return st(v); }
"""


def _streams(params: dict[str, Any]) -> bool:
    return params.get("stores") == "stream"


def _kernel(problem: Problem, params: dict[str, Any], n_inputs: int, row_body: str, *, reduce_rows: bool = False,
            scratch: tuple[tuple[str, str, str], ...] = (), task_body: str = "", helpers: str = "",
            setup: str = "", cleanup: str = "") -> str:
    """The shared frame: argument checks, shapes, the parallel loop over tasks of rows.

    ``row_body`` runs per row with ``xr`` (input row) and ``yw`` (where to write the output row: the row itself,
    or with ``stores=stream`` a per-thread staging row streamed out afterwards; for reductions ``y + r``).
    ``scratch`` lists per-thread buffers (name, element type, element count). ``task_body`` replaces the per-row
    loop when given (rows ``r_begin`` to ``r_end``) and handles streaming itself."""
    threads = params.get("threads", 1)
    per = params.get("rows_per_task", 1)
    stream = _streams(params) and not reduce_rows
    if stream and not task_body:
        scratch = (*scratch, ("stage", "st_t", "cols"))
    inputs = "\n".join(f"    const st_t* __restrict in{i} = (const st_t*)in[{i}].data;" for i in range(n_inputs))
    rows = "kv_numel(&out[0])" if reduce_rows else "cols > 0 ? total / cols : 0"
    row_loop = task_body or f"""
            for (int64_t r = r_begin; r < r_end; ++r) {{
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yr = y + {"r" if reduce_rows else "r * cols"};
                st_t* __restrict yw = {"stage" if stream else "yr"};
                (void)xr; (void)yr; (void)yw;
{row_body}
                {"kv_stream_copy(yr, stage, (size_t)cols * sizeof(st_t));" if stream else ""}
            }}"""
    alloc = "".join(f"        {ctype}* __restrict {name} = ({ctype}*)aligned_alloc(64, "
                    f"((size_t)({count}) * sizeof({ctype}) + 127) / 64 * 64);\n"
                    for name, ctype, count in scratch)
    ok = " && ".join(f"{name} != nullptr" for name, _, _ in scratch) or "true"
    release = "".join(f"        free({name});\n" for name, _, _ in scratch)

    def walk_tasks(parallel: bool) -> str:
        """The walk over the row tasks, inside a parallel region (its threads share the tasks) or not."""
        atomic = "#pragma omp atomic write" if parallel else ""
        loop_pragma = f"#pragma omp for schedule({params.get('schedule', 'static')})" if parallel else ""
        return f"""    {{
{alloc}        const bool ok = {ok};
        if (!ok) {{
            {atomic}
            failed = 1;
        }}
        {loop_pragma}
        for (int64_t t = 0; t < ntasks; ++t) {{
            if (!ok) continue;  // every thread meets the worksharing loop; one without scratch does no rows
            const int64_t r_begin = t * per;
            const int64_t r_end = std::min(rows, r_begin + per);
{row_loop}
        }}
        {"kv_stream_fence();" if _streams(params) else ""}
{release}    }}"""

    walk = (serial_below("total", f"#pragma omp parallel num_threads({threads})\n" + walk_tasks(True),
                         walk_tasks(False)) if threads > 1 else walk_tasks(False))
    store = _STORE_BF16 if problem.dtype == torch.bfloat16 else _STORE_SAME
    return (prelude(problem, params) + "#include <cstdlib>\n" + store + (_STREAM_COPY if _streams(params) else "")
            + helpers + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != {n_inputs} || n_out != 1) return 1;
    const int64_t cols = in[0].ndim > 0 ? in[0].shape[in[0].ndim - 1] : 1;
    const int64_t total = kv_numel(&in[0]);
    const int64_t rows = {rows};
{inputs}
    const st_t* __restrict x = in0;
    st_t* __restrict y = (st_t*)out[0].data;
    (void)x; (void)y;
    const int64_t per = {per};
    const int64_t ntasks = (rows + per - 1) / per;
    int failed = 0;
{setup}
    {walk}
{cleanup}
    return failed;
}}
""")


# --- knobs ------------------------------------------------------------------------------------------------------

def _schedule(default: str = "static") -> Param:
    # dynamic: idle threads take the next task (robust when cores are shared); static: fixed halves, no atomics
    return Param("schedule", ("static", "dynamic"), {d.OCCUPANCY_LIMITED: +1, d.LATENCY_BOUND: -1},
                 default=default)


def _rows_per_task(default: int = 16) -> Param:
    return Param("rows_per_task", (1, 4, 16, 64), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=default)


def _accumulators(default: int = 16) -> Param:
    # more independent partial results: more instruction-level parallelism and wider vectors
    return Param("accumulators", (1, 8, 16, 32), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1}, default=default)


def _stores(default: str = "normal") -> Param:
    # stream: rows are finished in a per-thread staging row and copied out with non-temporal stores
    return Param("stores", ("normal", "stream"), {d.MEMORY_BOUND: +1}, default=default)


def _prefetch(default: int = 1) -> Param:
    # rows ahead to prefetch while the current row is computed from cache (0: leave it to the hardware)
    return Param("prefetch", (0, 1, 2), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1}, default=default)


def _simd_param(default: str = "omp") -> Param:
    return Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1}, default=default)


# --- row_reduce -------------------------------------------------------------------------------------------------

class CppRowReduce(Recipe):
    """sum / mean / amax over the last dim, printed from core's REDUCTIONS table. ``interleave`` rows are reduced
    in one loop: more independent memory streams in flight per thread for this purely bandwidth-bound op."""

    name = "cpp.row_reduce"
    language = "cpp"
    families = ("row_reduce",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name in REDUCTIONS

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            _rows_per_task(16),
            _schedule(),
            Param("interleave", (1, 2, 4), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1}, default=4),
            _accumulators(16),
            _simd_param("omp"),
        ], valid=lambda p: p["interleave"] * p["accumulators"] <= 64 and p["rows_per_task"] >= p["interleave"])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        red = REDUCTIONS[problem.name]
        # max lanes skip NaN; a flag per row brings it back, as the reference propagates it
        propagate_nan = red.combine == "max"

        def rows_together(n: int) -> str:
            specs, pre, stores = [], [], []
            for q in range(n):
                specs.append((f"acc{q}", "ct_t", red.combine, cpp_literal(red.identity), f"v{q}"))
                if propagate_nan:
                    specs.append((f"nan{q}", "int", "|", "0", f"(int)(v{q} != v{q})"))
                pre.append(f"const ct_t v{q} = ld(xr[{q} * cols + j]);")
                result = f"acc{q} / (ct_t)cols" if red.divide_by_count else f"acc{q}"
                if propagate_nan:
                    result = f"(nan{q} ? (ct_t)NAN : {result})"
                stores.append(f"y[r + {q}] = sto({result});")
            return _scoped(_reduce(specs, "cols", " ".join(pre), params) + "\n" + "\n".join(stores))

        n = params.get("interleave", 1)
        task = f"""
            int64_t r = r_begin;
            for (; r + {n} <= r_end; r += {n}) {{
                const st_t* __restrict xr = x + r * cols;
{rows_together(n)}
            }}
            for (; r < r_end; ++r) {{
                const st_t* __restrict xr = x + r * cols;
{rows_together(1)}
            }}"""
        return _kernel(problem, params, 1, "", reduce_rows=True, task_body=task)


# --- row_softmax ------------------------------------------------------------------------------------------------

class CppRowSoftmax(Recipe):
    name = "cpp.row_softmax"
    language = "cpp"
    families = ("row_softmax",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name in ("softmax", "log_softmax")

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        params = [
            threads_param(facts),
            _rows_per_task(16),
            _schedule(),
            # online reads each row once from memory (running max and sum per tile), then writes
            Param("passes", ("three_pass", "online"), {d.MEMORY_BOUND: +1}, default="three_pass"),
            _accumulators(16),
            replace(math_param(), default="poly"),
            _simd_param("omp"),
            _stores("normal"),
            _prefetch(1),
        ]
        if problem.name == "softmax":
            # keep exp(x - max) in a per-thread row buffer instead of computing it twice
            params.append(Param("exp_buffer", (False, True), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: -1},
                                default=True))
        return ScheduleSpace(params, valid=lambda p: not (p.get("passes") == "online" and p.get("exp_buffer")))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        ct = compute_type(problem.dtype)
        log_out = problem.name == "log_softmax"
        buffered = bool(params.get("exp_buffer")) and not log_out and params["passes"] == "three_pass"
        ex = _exp_nonpos("(v - m)", params, ct)
        if params["passes"] == "online":
            tile_max = _reduce([("tm", "ct_t", "max", "-INFINITY", "v")], "n", "const ct_t v = ld(xt[j]);", params)
            tile_sum = _reduce([("ts", "ct_t", "+", "(ct_t)0", _exp_nonpos("(v - nm)", params, ct))], "n",
                               "const ct_t v = ld(xt[j]);", params, prefetch=_prefetch_ptr(params, "xt"))
            rescale = _exp_nonpos("(m - nm)", params, ct)
            stats = "\n".join([
                "ct_t m = -INFINITY, s = 0;",
                f"for (int64_t t0 = 0; t0 < cols; t0 += {_ONLINE_TILE}) {{",
                f"const int64_t n = std::min<int64_t>({_ONLINE_TILE}, cols - t0);",
                "const st_t* __restrict xt = xr + t0;",
                tile_max,
                "const ct_t nm = tm > m ? tm : m;",
                _scoped(tile_sum + f"\ns = (nm == m ? s : s * {rescale}) + ts;"),
                "m = nm;",
                "}",
            ])
        else:
            stats = _reduce([("m", "ct_t", "max", "-INFINITY", "v")], "cols", "const ct_t v = ld(xr[j]);", params)
            pre = "const ct_t v = ld(xr[j]);"
            value = ex
            if buffered:
                pre += f" const ct_t e = {ex}; buf[j] = e;"
                value = "e"
            stats += "\n" + _reduce([("s", "ct_t", "+", "(ct_t)0", value)], "cols", pre, params,
                                     prefetch=_prefetch_ptr(params))
        if log_out:
            write = f"const ct_t ls = {_log('s', params, ct)};\n" + _row_loop("yw[j] = sto((ld(xr[j]) - m) - ls);",
                                                                            params)
        elif buffered:
            write = "const ct_t inv = (ct_t)1 / s;\n" + _row_loop("yw[j] = sto(buf[j] * inv);", params)
        else:
            write = "const ct_t inv = (ct_t)1 / s;\n" + _row_loop(f"const ct_t v = ld(xr[j]); yw[j] = sto({ex} * inv);",
                                                                   params)
        scratch = (("buf", "ct_t", "cols"),) if buffered else ()
        helpers = _exp_nonpos_helper(problem) if params.get("math") == "poly" and ct == "float" else ""
        return _kernel(problem, params, 1, _scoped(stats + "\n" + write), scratch=scratch, helpers=helpers)


# --- row_norm ---------------------------------------------------------------------------------------------------

class CppRowNorm(Recipe):
    """layer_norm (x, weight, bias; biased variance) and rms_norm (x, weight), eps baked in from attrs."""

    name = "cpp.row_norm"
    language = "cpp"
    families = ("row_norm",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name in ("layer_norm", "rms_norm")

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        # measured at 4096x1024 on 2 cores: streaming stores pay off for float32 layer_norm only (twice the bytes
        # of bfloat16 rows, and less compute per byte than rms_norm's eager rival leaves room for)
        stream = problem.name == "layer_norm" and problem.dtype == torch.float32
        params = [threads_param(facts), _rows_per_task(16), _schedule(), _accumulators(16), _simd_param("omp"),
                  _stores("stream" if stream else "normal"), _prefetch(1)]
        if problem.name == "layer_norm":
            # one_pass: shifted sum and sum of squares in one read; two_pass: mean, then centred variance
            params.append(Param("passes", ("two_pass", "one_pass"), {d.MEMORY_BOUND: +1}, default="one_pass"))
            # precision of the one-pass sums: float lanes are cheaper, double never loses the variance
            params.append(Param("stats", ("double", "float"), {d.COMPUTE_BOUND: +1}, default="float"))
        return ScheduleSpace(params, valid=_norm_valid)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        eps = cpp_literal(float(problem.attrs.get("eps", 1e-5)))
        load = "const ct_t v = ld(xr[j]);"
        affine = ("in1", "in2") if problem.name == "layer_norm" else ("in1",)
        setup, cleanup = _float_copies(problem, affine)
        if problem.name == "rms_norm":
            stats = _reduce([("s2", "ct_t", "+", "(ct_t)0", "v * v")], "cols", load, params)
            stats += f"\nconst ct_t rstd = (ct_t)1 / std::sqrt(s2 / (ct_t)cols + {eps});"
            write = _row_loop("yw[j] = sto(ld(xr[j]) * rstd * in1_c[j]);", params, _prefetch_ptr(params))
            return _kernel(problem, params, 2, _scoped(f"{stats}\n{write}"), setup=setup, cleanup=cleanup)
        if params.get("passes") == "two_pass":
            stats = _reduce([("s1", "ct_t", "+", "(ct_t)0", "v")], "cols", load, params)
            stats += "\nconst ct_t mean = s1 / (ct_t)cols;\n"
            stats += _reduce([("s2", "ct_t", "+", "(ct_t)0", "(v - mean) * (v - mean)")], "cols", load, params,
                             prefetch=_prefetch_ptr(params))
            stats += "\nconst ct_t var = s2 / (ct_t)cols;"
        else:
            # E[d^2] - E[d]^2 cancels: shifted by the row's first element, and summed in double or in float
            # lanes (a single sequential float sum is too coarse for float32 outputs: excluded by the space)
            acc = "double" if params.get("stats") == "double" else "ct_t"
            stats = f"const {acc} shift = ({acc})ld(xr[0]);\n"
            stats += _reduce([("s1", acc, "+", f"({acc})0", "dv"), ("s2", acc, "+", f"({acc})0", "dv * dv")],
                             "cols", f"const {acc} dv = ({acc})ld(xr[j]) - shift;", params)
            stats += (f"\nconst {acc} dmean = s1 / ({acc})cols;"
                      "\nconst ct_t mean = (ct_t)(shift + dmean);"
                      f"\nconst ct_t var = (ct_t)std::max(({acc})0, s2 / ({acc})cols - dmean * dmean);")
        stats += f"\nconst ct_t rstd = (ct_t)1 / std::sqrt(var + {eps});"
        fetch = _prefetch_ptr(params) if params.get("passes") != "two_pass" else ""
        write = _row_loop("yw[j] = sto((ld(xr[j]) - mean) * rstd * in1_c[j] + in2_c[j]);", params, fetch)
        return _kernel(problem, params, 3, _scoped(f"{stats}\n{write}"), setup=setup, cleanup=cleanup)


def _norm_valid(params: dict[str, Any]) -> bool:
    # one sequential float sum of squares over a long row drifts past float32 tolerance
    sequential = params.get("accumulators", 1) <= 1 and params.get("simd") != "omp"
    return not (params.get("passes") == "one_pass" and params.get("stats") == "float" and sequential)


def _float_copies(problem: Problem, names: tuple[str, ...]) -> tuple[str, str]:
    """Per-column inputs (weight, bias) as compute-type arrays ``NAME_c``: the inputs themselves when storage is
    the compute type, else converted once per call rather than once per row."""
    if STORAGE.get(problem.dtype, STORAGE[torch.float32])[0] == compute_type(problem.dtype):
        return "\n".join(f"    const ct_t* __restrict {n}_c = (const ct_t*){n};" for n in names), ""
    setup, cleanup = [], []
    for n in names:
        size = "((size_t)cols * sizeof(ct_t) + 127) / 64 * 64"
        setup += [f"    ct_t* __restrict {n}_c = (ct_t*)aligned_alloc(64, {size});",
                  f"    if ({n}_c == nullptr) return 1;",
                  f"    for (int64_t j = 0; j < cols; ++j) {n}_c[j] = ld({n}[j]);"]
        cleanup.append(f"    free({n}_c);")
    return "\n".join(setup), "\n".join(cleanup)


# --- row_scan ---------------------------------------------------------------------------------------------------

class CppRowScan(Recipe):
    """cumsum along the last dim with a float running sum per row. ``method=chains``: one scalar add chain per
    row, ``accumulators`` rows scanned together so their chains overlap (one chain is bound by the add
    latency); ``method=vector``: blocks of one vector are scanned in registers (log2(width) shift-and-add
    steps) and a broadcast carry links the blocks, again ``accumulators`` rows at a time."""

    name = "cpp.row_scan"
    language = "cpp"
    families = ("row_scan",)

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name == "cumsum"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            _rows_per_task(16),
            _schedule(),
            Param("method", ("chains", "vector"), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1}, default="vector"),
            Param("accumulators", (1, 2, 4, 8, 16), {d.LATENCY_BOUND: +1, d.COMPUTE_BOUND: +1}, default=1),
            _stores("normal"),
        ], valid=lambda p: p["rows_per_task"] >= p["accumulators"])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        lanes = params["accumulators"]
        stream = _streams(params)
        vector = params.get("method") == "vector"
        width = 32 // (8 if compute_type(problem.dtype) == "double" else 4)
        # consecutive rows are contiguous: a group of rows is written to (or staged for) one block of y
        group_out = "stage" if stream else "y + r * cols"
        flush = "kv_stream_copy(y + r * cols, stage, (size_t)({n}) * (size_t)cols * sizeof(st_t));"

        def chains(n: int) -> str:
            return f"""
                ct_t acc[{n}];
                for (int k = 0; k < {n}; ++k) acc[k] = 0;
                for (int64_t j = 0; j < cols; ++j) {{
                    #pragma GCC unroll {n}
                    for (int k = 0; k < {n}; ++k) {{
                        acc[k] += ld(xr[k * cols + j]);
                        yw[k * cols + j] = sto(acc[k]);
                    }}
                }}"""

        def blocks(n: int) -> str:
            return f"""
                kv_vec carry[{n}];
                for (int k = 0; k < {n}; ++k) carry[k] = kv_vec{{}};
                int64_t j = 0;
                for (; j + {width} <= cols; j += {width}) {{
                    #pragma GCC unroll {n}
                    for (int k = 0; k < {n}; ++k) {{
                        kv_vec v = kv_scan_block(kv_vload(xr + k * cols + j));
                        const kv_vec total = __builtin_shuffle(v, kv_last);
                        v += carry[k];
                        carry[k] += total;
                        kv_vstore(yw + k * cols + j, v);
                    }}
                }}
                for (int k = 0; k < {n}; ++k) {{
                    ct_t acc = carry[k][0];
                    for (int64_t jj = j; jj < cols; ++jj) {{
                        acc += ld(xr[k * cols + jj]);
                        yw[k * cols + jj] = sto(acc);
                    }}
                }}"""

        group = blocks if vector else chains
        task = f"""
            int64_t r = r_begin;
            for (; r + {lanes} <= r_end; r += {lanes}) {{
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yw = {group_out};
{group(lanes)}
                {flush.format(n=lanes) if stream else ""}
            }}
            for (; r < r_end; ++r) {{
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yw = {group_out};
{group(1)}
                {flush.format(n=1) if stream else ""}
            }}"""
        scratch = (("stage", "st_t", f"{lanes} * cols"),) if stream else ()
        helpers = _scan_block(width, problem.dtype == torch.bfloat16) if vector else ""
        return _kernel(problem, params, 1, "", task_body=task, scratch=scratch, helpers=helpers)


def _scan_block(width: int, bf16: bool) -> str:
    """An inclusive prefix sum of one vector in registers (GCC vector extensions: the compiler picks the
    shuffles), the shuffle that broadcasts its last lane, and whole-vector loads and stores in the storage
    type (for bfloat16: widen by a shift; round to nearest even with NaN kept quiet, as ``sto``)."""
    index = "int32_t" if width == 8 else "int64_t"
    steps = []
    shift = 1
    while shift < width:
        mask = ", ".join(str(0 if i < shift else width + i - shift) for i in range(width))
        steps.append(f"    x += __builtin_shuffle(zero, x, (kv_idx){{{mask}}});")
        shift *= 2
    last = ", ".join(str(width - 1) for _ in range(width))
    if bf16:
        memory = """
typedef uint16_t kv_h8 __attribute__((vector_size(16)));
typedef uint32_t kv_u8 __attribute__((vector_size(32)));
static inline kv_vec kv_vload(const st_t* p) {
    kv_h8 h;
    memcpy(&h, p, sizeof h);
    const kv_u8 u = __builtin_convertvector(h, kv_u8) << 16;
    kv_vec v;
    memcpy(&v, &u, sizeof v);
    return v;
}
static inline void kv_vstore(st_t* p, kv_vec v) {
    kv_u8 u;
    memcpy(&u, &v, sizeof u);
    const kv_u8 rounded = u + 0x7fffu + ((u >> 16) & 1u);
    const kv_u8 r = (kv_u8)(v != v) != 0u ? (u | 0x400000u) : rounded;
    const kv_h8 h = __builtin_convertvector(r >> 16, kv_h8);
    memcpy(p, &h, sizeof h);
}
"""
    else:
        memory = """
static inline kv_vec kv_vload(const st_t* p) {
    kv_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void kv_vstore(st_t* p, kv_vec v) { memcpy(p, &v, sizeof v); }
"""
    return f"""
typedef ct_t kv_vec __attribute__((vector_size(32)));
typedef {index} kv_idx __attribute__((vector_size(32)));{memory}
static const kv_idx kv_last = {{{last}}};
static inline kv_vec kv_scan_block(kv_vec x) {{
    const kv_vec zero = {{}};
{chr(10).join(steps)}
    return x;
}}
"""


RECIPES = [CppRowReduce(), CppRowSoftmax(), CppRowNorm(), CppRowScan()]
