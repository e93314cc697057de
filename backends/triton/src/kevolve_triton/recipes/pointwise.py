"""Elementwise ops from core's expression table: each program handles ``ITEMS`` blocks of ``BLOCK``
elements, loading in the storage dtype and computing in float32."""

from __future__ import annotations

from typing import Any

from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import POINTWISE
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import (
    TL_TYPES,
    compute_type,
    header,
    launch_args,
    launch_params,
    pow2_range,
    triton_expr,
    warp_size,
)


class TritonPointwise(Recipe):
    name = "triton.pointwise"
    language = "triton"
    families = ("pointwise",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "pointwise" and problem.name in POINTWISE and problem.dtype in TL_TYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        low = warp_size(facts) * 4
        return ScheduleSpace([
            Param("BLOCK", pow2_range(low, 8192), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                   d.OCCUPANCY_LIMITED: -1}, default=1024),
            Param("ITEMS", (1, 2, 4, 8), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=1),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        names, expr = POINTWISE[problem.name]
        ct = compute_type(problem.dtype)
        loads = "\n".join(f"        {v} = tl.load({v}_ptr + offs, mask=mask).to({ct})" for v in names)
        pointers = ", ".join(f"{v}_ptr" for v in names)
        return header(problem, params) + f"""@triton.jit
def _{problem.name}_kernel({pointers}, out_ptr, n, BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK * ITEMS
    for item in tl.static_range(ITEMS):
        offs = start + item * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
{loads}
        result = {triton_expr(expr)}
        tl.store(out_ptr + offs, result.to(out_ptr.dtype.element_ty), mask=mask)


def kernel(inputs, outputs):
    out = outputs[0]
    n = out.numel()
    grid = (triton.cdiv(n, {params["BLOCK"]} * {params["ITEMS"]}),)
    _{problem.name}_kernel[grid](*inputs, out, n, BLOCK={params["BLOCK"]}, ITEMS={params["ITEMS"]}{launch_args(params)})
"""


RECIPES = [TritonPointwise()]
