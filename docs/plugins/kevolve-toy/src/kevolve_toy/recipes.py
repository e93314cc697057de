"""The template synthesizer's recipe for the toy target: unary pointwise ops, in blocks of BLOCK elements."""

import torch
from kevolve import diagnosis as d
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace

UFUNCS = {"relu": "np.maximum(x[i:j], 0, out=y[i:j])", "exp": "np.exp(x[i:j], out=y[i:j])"}


class NumpyPointwise(Recipe):
    name = "numpy.pointwise"
    language = "numpy"
    families = ("pointwise",)
    dtypes = (torch.float32,)

    def supports(self, problem) -> bool:
        return super().supports(problem) and problem.name in UFUNCS

    def space(self, problem, facts) -> ScheduleSpace:
        # a memory-bound verdict moves BLOCK up (fewer, longer calls); latency-bound too
        return ScheduleSpace([Param("BLOCK", (4096, 16384, 65536, 262144, 1048576),
                                    {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1}, default=16384)])

    def render(self, problem, params) -> str:
        return (f"import numpy as np\n\nBLOCK = {params['BLOCK']}\n\n\n"
                "def kernel(inputs, outputs):\n"
                "    x, y = inputs[0], outputs[0]\n"
                "    for i in range(0, x.size, BLOCK):\n"
                "        j = min(i + BLOCK, x.size)\n"
                f"        {UFUNCS[problem.name]}\n")
