"""Pointwise ops in C++, printed from core's scalar-expression table."""

from __future__ import annotations

from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import POINTWISE
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import (
    compute_type,
    cpp_expr,
    elementwise_loop,
    math_param,
    prelude,
    simd_or_unroll,
    threads_param,
)


class CppPointwise(Recipe):
    name = "cpp.pointwise"
    language = "cpp"
    families = ("pointwise",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "pointwise" and problem.name in POINTWISE

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            math_param(),
            Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1}, default="omp"),
            Param("block", (1024, 4096, 16384, 65536, 262144), {d.LATENCY_BOUND: +1}, default=16384),
            Param("unroll", (1, 2, 4, 8), {d.COMPUTE_BOUND: +1}),
        ], valid=simd_or_unroll)

    def render(self, problem: Problem, params: dict) -> str:
        names, expr = POINTWISE[problem.name]
        ct = compute_type(problem.dtype)
        loads = " ".join(f"const ct_t {v} = ld({v}_ptr[i]);" for v in names)
        pointers = "\n".join(f"    const st_t* __restrict {v}_ptr = (const st_t*)in[{i}].data;"
                             for i, v in enumerate(names))
        return prelude(problem, params) + f"""
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != {len(names)} || n_out != 1) return 1;
    const int64_t n = kv_numel(&out[0]);
{pointers}
    st_t* __restrict out_ptr = (st_t*)out[0].data;
    {elementwise_loop("n", f"{loads} out_ptr[i] = st({cpp_expr(expr, params['math'], ct)});", params)}
    return 0;
}}
"""


RECIPES = [CppPointwise()]
