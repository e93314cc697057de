"""numba kernels, the CPU backend's second language: pointwise ops from core's expression table and row
reductions from core's reduction table. float32 only (numpy has no bfloat16)."""

from __future__ import annotations

import math

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import POINTWISE, REDUCTIONS, Expr, render
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

_MATH = {"exp": "math.exp({})", "log": "math.log({})", "erf": "math.erf({})", "tanh": "math.tanh({})",
         "sqrt": "math.sqrt({})", "rsqrt": "(1.0 / math.sqrt({}))", "abs": "abs({})", "neg": "(-{})"}


def numba_expr(expr: Expr) -> str:
    def spell(fn: str, args: list[str]) -> str:
        if fn in _MATH:
            return _MATH[fn].format(*args)
        if fn in ("max", "min"):  # NaN-propagating, like torch
            cmp = ">" if fn == "max" else "<"
            return f"({args[0]} if ({args[0]} {cmp} {args[1]} or {args[0]} != {args[0]}) else {args[1]})"
        raise ValueError(f"no numba spelling for {fn}")

    def const(value: float) -> str:
        return ("math.inf" if value > 0 else "-math.inf") if math.isinf(value) else f"np.float32({value!r})"

    return render(expr, spell, const)


def _header(problem: Problem, params: dict) -> str:
    return (f"# kevolve generated kernel: {problem.describe()}\n"
            f"# parameters: {', '.join(f'{k}={v}' for k, v in params.items())}\n"
            "import math\n\nimport numba\nimport numpy as np\n\n\n")


def _jit(params: dict) -> str:
    return f"@numba.njit(parallel={params['parallel']}, fastmath={params['fastmath']}, cache=False)"


def _space(extra: list[Param]) -> ScheduleSpace:
    return ScheduleSpace([
        Param("parallel", (False, True), {d.OCCUPANCY_LIMITED: +1, d.LATENCY_BOUND: -1}, default=True),
        Param("fastmath", (False, True), {d.COMPUTE_BOUND: +1}),
        *extra,
    ])


class NumbaPointwise(Recipe):
    name = "numba.pointwise"
    language = "numba"
    families = ("pointwise",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "pointwise" and problem.name in POINTWISE and problem.dtype == torch.float32

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return _space([Param("block", (1024, 16384, 131072), {d.LATENCY_BOUND: +1}, default=16384)])

    def render(self, problem: Problem, params: dict) -> str:
        names, expr = POINTWISE[problem.name]
        loads = "; ".join(f"{v} = {v}_arr[i]" for v in names)
        return _header(problem, params) + f"""{_jit(params)}
def kernel({", ".join(f"{v}_arr" for v in names)}, out):
    n = out.size
    block = {params["block"]}
    for b in numba.prange((n + block - 1) // block):
        for i in range(b * block, min(n, (b + 1) * block)):
            {loads}
            out[i] = {numba_expr(expr)}
"""


class NumbaRowReduce(Recipe):
    name = "numba.row_reduce"
    language = "numba"
    families = ("row_reduce",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "row_reduce" and problem.name in REDUCTIONS and problem.dtype == torch.float32

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return _space([Param("accumulators", (1, 4, 8), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1}, default=4)])

    def render(self, problem: Problem, params: dict) -> str:
        reduction = REDUCTIONS[problem.name]
        k = params["accumulators"]
        identity = "-math.inf" if math.isinf(reduction.identity) else repr(reduction.identity)
        if reduction.combine == "+":
            step = "acc[j] += v"
            merge = "total = 0.0\n        for j in range(K):\n            total += acc[j]"
        else:  # NaN wins, as in torch.amax
            step = "acc[j] = v if (v > acc[j] or v != v) else acc[j]"
            merge = ("total = acc[0]\n        for j in range(1, K):\n"
                     "            total = acc[j] if (acc[j] > total or acc[j] != acc[j]) else total")
        finish = "total / cols" if reduction.divide_by_count else "total"
        return _header(problem, params) + f"""K = {k}


{_jit(params)}
def kernel(x, out):
    cols = x.shape[-1]
    rows = x.size // cols
    flat = x.reshape(rows, cols)
    for r in numba.prange(rows):
        acc = np.full(K, {identity}, dtype=np.float64)
        row = flat[r]
        for c0 in range(0, cols - cols % K, K):
            for j in range(K):
                v = np.float64(row[c0 + j])
                {step}
        for c in range(cols - cols % K, cols):
            j = 0
            v = np.float64(row[c])
            {step}
        {merge}
        out[r] = np.float32({finish})
"""


RECIPES = [NumbaPointwise(), NumbaRowReduce()]
