"""What every C++ recipe shares: the file prelude, storage types per dtype, the expression printer and the
knobs common to all of them (threads, math library)."""

from __future__ import annotations

import math

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem, dtype_name
from kevolve.synthesis.expr import Expr, render
from kevolve.synthesis.schedule import Param
from kevolve.target import MachineFacts

#: torch dtype -> (storage type, load expression, store expression); compute is float (double for float64)
STORAGE = {
    torch.float32: ("float", "{}", "{}"),
    torch.float64: ("double", "{}", "{}"),
    torch.bfloat16: ("uint16_t", "kv_bf16_to_f32({})", "kv_f32_to_bf16({})"),
    torch.int64: ("int64_t", "{}", "{}"),
}


def compute_type(dtype: torch.dtype) -> str:
    return "double" if dtype == torch.float64 else "float"


def prelude(problem: Problem, params: dict) -> str:
    storage, load, store = STORAGE.get(problem.dtype, STORAGE[torch.float32])
    ct = compute_type(problem.dtype)
    lines = [
        f"// kevolve generated kernel: {problem.describe()}",
        f"// parameters: {', '.join(f'{k}={v}' for k, v in params.items())}",
        '#include "kevolve_kernel.h"',
        '#include "kevolve_math.h"',
        "#include <algorithm>",
        "#include <cmath>",
        "#include <cstdint>",
        "#include <omp.h>",
        "",
        f"typedef {storage} st_t;  // storage type of {dtype_name(problem.dtype)}",
        f"typedef {ct} ct_t;  // compute type",
        f"static inline ct_t ld(st_t v) {{ return (ct_t){load.format('v')}; }}",
        f"static inline st_t st(ct_t v) {{ return (st_t){store.format('v')}; }}",
        "",
    ]
    return "\n".join(lines)


#: below this many elements a kernel runs on the calling thread: a parallel region costs more than the work
#: (ATen's grain size)
PARALLEL_MIN_ELEMENTS = 1 << 15


def parallel_for(threads: int, schedule: str = "static") -> str:
    """The OpenMP pragma for a parallel loop; none at all for one thread (no runtime overhead)."""
    if threads <= 1:
        return ""
    return f"#pragma omp parallel for num_threads({threads}) schedule({schedule})"


def serial_below(work: str, parallel: str, serial: str) -> str:
    """``parallel`` (code under OpenMP) for a call whose ``work`` (a C expression of the elements it touches)
    reaches :data:`PARALLEL_MIN_ELEMENTS`, else ``serial`` (the same code without OpenMP) on the calling thread.
    A plain branch, not OpenMP's ``if`` clause: a region that clause keeps serial still enters libgomp, which
    cost 0.26 us a call on a 2-core VM and 0.5 us inside a kernel's torch op, more than half of a whole eager op
    on one element (relu: 0.86 us; its op went from 1.23 to 0.72 us without it)."""
    return f"""if ({work} >= {PARALLEL_MIN_ELEMENTS}) {{
{parallel}
    }} else {{
{serial}
    }}"""


def parallel_loop(threads: int, loop: str, work: str, schedule: str = "static", clauses: str = "") -> str:
    """``loop`` (a C ``for`` statement) spread over ``threads`` OpenMP threads (the pragma's extra ``clauses``,
    e.g. a reduction) where the call's ``work`` is large enough, the same statement without OpenMP below
    (:func:`serial_below`); the statement alone for one thread."""
    pragma = parallel_for(threads, schedule)
    if not pragma:
        return loop
    return serial_below(work, f"{pragma} {clauses}".rstrip() + f"\n{loop}", loop)


def tasks_param(name: str, choices: tuple[int, ...] = (1, 16, 64, 0), default: int = 16) -> Param:
    """Items per task of a loop scheduled by task_schedule, smallest first (0 last: the largest tasks)."""
    return Param(name, choices, {d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: +1}, default=default)


def task_schedule(per_task: int) -> str:
    """An OpenMP schedule for loops over independent items: 0, one even contiguous share per thread (keeps
    streams sequential); n, tasks of n items handed out dynamically (balances uneven work)."""
    return "static" if per_task <= 0 else f"dynamic, {per_task}"


def elementwise_loop(n: str, body: str, params: dict) -> str:
    """The loop every elementwise kernel shares: ``n`` elements in blocks of ``params["block"]`` spread over
    ``params["threads"]``, the inner loop under the chosen ``simd`` or ``unroll`` pragma; ``body`` sees ``i``."""
    simd = "#pragma omp simd" if params.get("simd") == "omp" else ""
    unroll = f"#pragma GCC unroll {params['unroll']}" if params.get("unroll", 1) > 1 else ""
    loop = f"""for (int64_t b = 0; b < {n}; b += block) {{
        const int64_t end = std::min<int64_t>({n}, b + block);
        {unroll}
        {simd}
        for (int64_t i = b; i < end; ++i) {{
            {body}
        }}
    }}"""
    return f"""const int64_t block = {params["block"]};
    {parallel_loop(params["threads"], loop, n)}"""


def thread_choices(facts: MachineFacts) -> tuple[int, ...]:
    cores = max(1, facts.parallel_units)
    choices = {1, cores}
    power = 2
    while power < cores:
        choices.add(power)
        power *= 2
    return tuple(sorted(choices))


def threads_param(facts: MachineFacts) -> Param:
    choices = thread_choices(facts)
    return Param("threads", choices, {d.OCCUPANCY_LIMITED: +1, d.LATENCY_BOUND: -1}, default=choices[-1])


def math_param() -> Param:
    """libm is exact but keeps loops scalar; the inline polynomials in kevolve_math.h vectorize."""
    return Param("math", ("libm", "poly"), {d.COMPUTE_BOUND: +1})


def simd_or_unroll(params: dict) -> bool:
    """GCC accepts one loop pragma per loop: ``omp simd`` and ``GCC unroll`` exclude each other."""
    return not (params.get("simd") == "omp" and params.get("unroll", 1) > 1)


_LIBM = {"exp": "std::exp({})", "log": "std::log({})", "erf": "std::erf({})", "tanh": "std::tanh({})"}
_POLY = {"exp": "kv_expf({})", "log": "kv_logf({})", "erf": "kv_erff({})", "tanh": "kv_tanhf({})"}


#: the extended functions of :mod:`kevolve.synthesis.expr` (the conformance table): libm, comparisons, selects
_CPP_MORE = {
    **{fn: f"std::{fn}({{}})" for fn in ("exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
                                         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc",
                                         "lgamma", "floor", "ceil", "trunc", "nearbyint", "isnan")},
    **{fn: f"std::{fn}({{}}, {{}})" for fn in ("pow", "fmod", "copysign", "atan2", "hypot", "fmax")},
    "bitand": "({} & {})", "bitxor": "({} ^ {})",
    "erfinv": "kv_erfinv({})",
    "round_storage": "kv_round_storage({})",  # defined by the kernel for its storage dtype
    "bitwise_not": "(~{})",
    "where": "(({}) ? ({}) : ({}))",
    "lt": "({} < {})", "le": "({} <= {})", "gt": "({} > {})", "ge": "({} >= {})", "eq": "({} == {})",
    "ne": "({} != {})", "and": "({} && {})", "or": "({} || {})", "not": "(!{})",
}


def cpp_expr(expr: Expr, math_lib: str, ct: str = "float") -> str:
    """Print a core scalar expression in C++ with the chosen math functions."""
    table = _POLY if math_lib == "poly" and ct == "float" else _LIBM

    def spell(fn: str, args: list[str]) -> str:
        if fn in table:
            return table[fn].format(*args)
        if fn == "sqrt":
            return f"std::sqrt({args[0]})"
        if fn == "rsqrt":
            return f"((ct_t)1 / std::sqrt({args[0]}))"
        if fn == "abs":
            return f"std::fabs({args[0]})"
        if fn == "fmod" and ct == "int64_t":  # exact: a double holds integers only up to 2**53
            return f"({args[0]} % {args[1]})"
        if fn in ("max", "min"):  # NaN-propagating, like torch; each operand spelled (and computed) once
            return f"[](ct_t a, ct_t b) {{ return a != a ? a : std::{fn}<ct_t>(a, b); }}({args[0]}, {args[1]})"
        if fn == "neg":
            return f"(-{args[0]})"
        if fn in _CPP_MORE:
            return _CPP_MORE[fn].format(*args)
        raise ValueError(f"no C++ spelling for {fn}")

    return render(expr, spell, cpp_literal)


def cpp_literal(value: float) -> str:
    """A compute-type literal; infinities and NaN spelled with the C macros."""
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if math.isnan(value):
        return "NAN"
    return f"(ct_t){float(value)!r}"
