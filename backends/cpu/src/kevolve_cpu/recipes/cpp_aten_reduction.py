"""ATen conformance kernels in C++: reductions and scans (:mod:`kevolve.conformance.ops.reduction`).

Two kernel kinds, each one renderer parametrised per op by a small table of C statements:

- ``reduce``: the input is (outer, R) (the host moved the reduced dimensions last); each of the ``outer`` rows
  becomes one element of every output (values, and indices for max/min/argmax).
- ``scan``: the input is (outer, L, inner); every line of L elements is scanned in order (values, and indices for
  cummax).

Numbers follow ATen's CPU kernels: sums and products accumulate in double (ATen's ``acc_type`` for cumsum and
cumprod, and within float32's tolerance of its float cascade sums), extrema propagate the first NaN and keep the
first of equal values (cummax the last, as ATen's ``>=``), variance divides by ``max(0, N - correction)``,
logsumexp subtracts the row maximum unless it is infinite, logcumsumexp uses ATen's log-add-exp with its special
cases for equal infinities. Elements are read and written through :func:`cpp_aten.load` / :func:`cpp_aten.store`
(bfloat16 as its bit pattern, computed in float). The kernel checks the ABI and declines (non-zero) what it was
not written for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kevolve.conformance.kernel import KernelSpec, conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, compute_type, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, threads_param

_FLOATS = ("float32", "float64", "bfloat16")


@dataclass(frozen=True)
class Body:
    """What one op computes per row (reduce) or per line (scan), in C.

    ``init`` runs before the elements, ``step`` once per element (``v``: the element in the compute type, ``j``:
    its position), ``results`` are the C expressions stored into each output (for a scan: after every step).
    ``pre`` is an optional first pass over the elements for two-pass reductions: (init, step, what follows it).
    ``nonempty``: ATen raises on an empty row (max, argmax, ...), so the kernel declines it."""

    init: str
    step: str
    results: tuple[str, ...]
    pre: tuple[str, str, str] | None = None
    nonempty: bool = False


def _pick(better: str, key: str = "{}") -> Body:
    """Extremum with its position (``key`` maps an element first, e.g. to its magnitude): the first NaN wins, then
    the first of equal values (ATen's max/argmax); results: the value, its position."""
    return Body(f"ct_t best = R > 0 ? {key.format('ld(row[0])')} : (ct_t)0; int64_t at = 0;",
                f"const ct_t k = {key.format('v')}; if (!(best != best) && (k != k || k {better} best)) "
                "{ best = k; at = j; }", ("best", "at"), nonempty=True)


def _moment(attrs: dict, root: bool) -> Body:
    """Variance (two passes in double): sum of squared deviations over max(0, N - correction); NaN when empty."""
    correction = float(attrs.get("correction", 1.0))
    value = f"(R == 0 ? (acc_t)NAN : m2 / std::max<acc_t>(0, (acc_t)R - (acc_t){correction!r}))"
    return Body("acc_t m2 = 0;", "const acc_t d = (acc_t)v - mean; m2 += d * d;",
                (f"std::sqrt({value})" if root else value,),
                pre=("acc_t total = 0;", "total += (acc_t)v;", "const acc_t mean = total / (acc_t)R;"))


def _norm(attrs: dict) -> Body:
    """linalg.vector_norm by ``ord``: count of non-zeros, max/min magnitude, or (sum |v|^p)^(1/p)."""
    p = float(attrs.get("ord", 2.0))
    if p == 0:
        return Body("acc_t acc = 0;", "acc += (v != 0);", ("acc",))
    if math.isinf(p):
        return _with_results(_pick(">" if p > 0 else "<", "std::fabs({})"), ("best",))
    if p == 1:
        return Body("acc_t acc = 0;", "acc += std::fabs((acc_t)v);", ("acc",))
    if p == 2:
        return Body("acc_t acc = 0;", "acc += (acc_t)v * (acc_t)v;", ("std::sqrt(acc)",))
    return Body("acc_t acc = 0;", f"acc += std::pow(std::fabs((acc_t)v), (acc_t){p!r});",
                (f"std::pow(acc, (acc_t)1 / (acc_t){p!r})",))


def reduce_body(op: str, attrs: dict) -> Body:
    """The per-row computation of the reduction ``op`` (an OpInfo name) with the table's attributes."""
    simple = {
        "sum": Body("acc_t acc = 0;", "acc += (acc_t)v;", ("acc",)),
        "mean": Body("acc_t acc = 0;", "acc += (acc_t)v;", ("acc / (acc_t)R",)),
        "prod": Body("acc_t acc = 1;", "acc *= (acc_t)v;", ("acc",)),
        "all": Body("bool acc = true;", "acc = acc && (v != 0);", ("acc",)),
        "any": Body("bool acc = false;", "acc = acc || (v != 0);", ("acc",)),
        "count_nonzero": Body("int64_t acc = 0;", "acc += (v != 0);", ("acc",)),
        # ATen: the row maximum is subtracted unless it is infinite (NaN propagates through it)
        "logsumexp": Body("acc_t s = 0;", "s += std::exp((acc_t)v - shift);", ("std::log(s) + shift",),
                          pre=("ct_t top = -INFINITY;", "if (!(top != top) && (v != v || v > top)) top = v;",
                               "const acc_t shift = std::isinf(top) ? (acc_t)0 : (acc_t)top;")),
    }
    if op in simple:
        return simple[op]
    if op in ("amax", "amin", "max", "min", "argmax", "argmin"):
        picked = _pick(">" if op.endswith("max") else "<")
        if op.startswith("arg"):
            return _with_results(picked, ("at",))
        return picked if attrs.get("indices") else _with_results(picked, ("best",))
    if op in ("std", "var"):
        return _moment(attrs, op == "std")
    if op == "linalg.vector_norm":
        return _norm(attrs)
    raise ValueError(f"no reduction kernel for {op}")


def _with_results(body: Body, results: tuple[str, ...]) -> Body:
    return Body(body.init, body.step, results, body.pre, body.nonempty)


#: ATen's _log_add_exp_helper(x, y), in the accumulation type
_LOG_ADD_EXP = """static inline acc_t log_add_exp(acc_t x, acc_t y) {
    const acc_t lo = std::isnan(y) ? y : std::min(x, y), hi = std::isnan(y) ? y : std::max(x, y);
    return (lo != hi || std::isfinite(lo)) ? std::log1p(std::exp(lo - hi)) + hi : x;
}
"""


def scan_body(op: str) -> Body:
    """The per-line computation of the scan ``op``: results after each element."""
    bodies = {
        "cumsum": Body("acc_t acc = 0;", "acc += (acc_t)v;", ("acc",)),
        "cumprod": Body("acc_t acc = 1;", "acc *= (acc_t)v;", ("acc",)),
        "logcumsumexp": Body("acc_t acc = -INFINITY;", "acc = log_add_exp((acc_t)v, acc);", ("acc",)),
        # ATen's cummax_cummin_helper: a NaN always takes over, ties move the index forward (>=)
        "cummax": Body("ct_t best = 0; int64_t at = 0;",
                       "if (j == 0 || v != v || (!(best != best) && v >= best)) { best = v; at = j; }",
                       ("best", "at")),
    }
    if op not in bodies:
        raise ValueError(f"no scan kernel for {op}")
    return bodies[op]


def _accumulator(out_dtype: str) -> str:
    """ATen's CPU acc_type: float32/float64 accumulate in double, bfloat16 in float (so a running product that
    overflows float stays infinite, as in ATen), integers exactly in int64."""
    if out_dtype == "bfloat16":
        return "float"
    return "double" if out_dtype in _FLOATS else "int64_t"


def _prelude(k: KernelSpec, params: dict, extra: str = "") -> str:
    """Includes, the element types and the load helper every kernel of this module shares."""
    in_dtype = k.inputs[0][1]
    params_text = ", ".join(f"{key}={val}" for key, val in params.items())
    return f"""// kevolve generated kernel: {k.describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
#include <algorithm>
#include <cmath>
#include <cstdint>

typedef {C_TYPES[in_dtype][0]} in_t;  // input storage type
typedef {compute_type(in_dtype)} ct_t;  // compute type of an element
typedef {_accumulator(k.outputs[0])} acc_t;  // accumulation type
static inline ct_t ld(in_t e) {{ return {load(in_dtype, "e")}; }}
{extra}"""


def _abi_checks(k: KernelSpec, ndim: int) -> list[str]:
    """Counts, dtypes and rank of the tensors the kernel was written for (the codes of cpp_aten.DECLINE_CODES)."""
    checks = [f"    if (n_in != 1 || n_out != {len(k.outputs)}) return 1;",
              f"    if (in[0].dtype != {C_TYPES[k.inputs[0][1]][1]}) return 3;",
              f"    if (in[0].ndim != {ndim}) return 2;"]
    checks += [f"    if (out[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, d in enumerate(k.outputs)]
    return checks


def _pointers(k: KernelSpec) -> str:
    """The output pointers ``o0``, ``o1``... in their storage types."""
    return "\n".join(f"    {C_TYPES[d][0]}* __restrict o{i} = ({C_TYPES[d][0]}*)out[{i}].data;"
                     for i, d in enumerate(k.outputs))


def _stores(k: KernelSpec, body: Body, at: str) -> str:
    """Stores of the body's results, one per output, at element ``at``."""
    if len(body.results) != len(k.outputs):
        raise ValueError(f"{k.op} writes {len(body.results)} outputs, the sample expects {len(k.outputs)}")
    return " ".join(f"o{i}[{at}] = {store(d, r)};" for i, (d, r) in enumerate(zip(k.outputs, body.results)))


#: the ops each kernel kind is written for (another table may name a layout "reduce" or "scan" too)
REDUCE_OPS = ("sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var", "logsumexp",
              "linalg.vector_norm", "all", "any", "count_nonzero")
SCAN_OPS = ("cumsum", "cumprod", "logcumsumexp", "cummax")


def _supported(problem: Problem, layout: str, ops: tuple[str, ...]) -> bool:
    kernel = conformance_kernel(problem, (layout,))
    return kernel is not None and kernel.op in ops and len(kernel.inputs) == 1 and kernel.all_dtypes_in(C_TYPES)


class CppAtenReduce(Recipe):
    """Row reductions over (outer, R): one thread per block of rows, each row reduced serially in double."""

    name = "cpp.aten_reduce"
    language = "cpp"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        return _supported(problem, "reduce", REDUCE_OPS)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        body = reduce_body(k.op, k.attrs)
        checks = _abi_checks(k, 2) + ["    const int64_t outer = in[0].shape[0], R = in[0].shape[1];"]
        checks += [f"    if (kv_numel(&out[{i}]) != outer) return 2;" for i in range(len(k.outputs))]
        if body.nonempty:
            checks.append("    if (R == 0 && outer > 0) return 2;  // PyTorch raises on an empty reduction")
        each = "for (int64_t j = 0; j < R; ++j) {{ const ct_t v = ld(row[j]); {} }}"
        first = ""
        if body.pre is not None:
            init, step, then = body.pre
            first = f"{init}\n        {each.format(step)}\n        {then}"
        return _prelude(k, params) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{chr(10).join(checks)}
    const in_t* __restrict p = (const in_t*)in[0].data;
{_pointers(k)}
    {parallel_for(params["threads"])}
    for (int64_t r = 0; r < outer; ++r) {{
        const in_t* row = p + r * R;
        {first}
        {body.init}
        {each.format(body.step)}
        {_stores(k, body, "r")}
    }}
    return 0;
}}
"""


class CppAtenScan(Recipe):
    """Scans over (outer, L, inner): the outer * inner lines spread over threads, each scanned in order."""

    name = "cpp.aten_scan"
    language = "cpp"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        return _supported(problem, "scan", SCAN_OPS)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        body = scan_body(k.op)
        shape = "    const int64_t outer = in[0].shape[0], L = in[0].shape[1], inner = in[0].shape[2];"
        checks = [*_abi_checks(k, 3), shape]
        checks += [f"    if (kv_numel(&out[{i}]) != outer * L * inner) return 2;" for i in range(len(k.outputs))]
        return _prelude(k, params, _LOG_ADD_EXP if k.op == "logcumsumexp" else "") + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{chr(10).join(checks)}
    const in_t* __restrict p = (const in_t*)in[0].data;
{_pointers(k)}
    {parallel_for(params["threads"])}
    for (int64_t line = 0; line < outer * inner; ++line) {{
        const int64_t base = (line / inner) * L * inner + line % inner;
        {body.init}
        for (int64_t j = 0; j < L; ++j) {{
            const int64_t e = base + j * inner;
            const ct_t v = ld(p[e]);
            {body.step}
            {_stores(k, body, "e")}
        }}
    }}
    return 0;
}}
"""


RECIPES = [CppAtenReduce(), CppAtenScan()]
