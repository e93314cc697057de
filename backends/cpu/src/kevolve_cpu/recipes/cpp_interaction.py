"""DLRM's dot interaction in C++: out[b] = [dense[b], the strict lower triangle of T T^T row by row], T = dense[b]
stacked on sparse[b].

One pass per sample: the dense vector is copied, then each pair's dot product is accumulated in float from the
inputs themselves (no stacked copy, no full square of products); ``rows_at_once`` pairs the vector i with that
many vectors j per sweep, so each load of vector i feeds several accumulators.
"""

from __future__ import annotations

from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import parallel_for, prelude, task_schedule, tasks_param, threads_param


class CppDotInteraction(Recipe):
    name = "cpp.dot_interaction"
    language = "cpp"
    families = ("interaction",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            tasks_param("samples_per_task"),
            # vectors j dotted with vector i per sweep over the dim (accumulators in registers)
            Param("rows_at_once", (1, 2, 4, 8), {d.MEMORY_BOUND: +1, d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1},
                  default=4),
            Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1}, default="omp"),
        ])

    def render(self, problem: Problem, params: dict) -> str:
        rows = params["rows_at_once"]
        accs = ", ".join(f"a{r}" for r in range(rows))
        simd = f"#pragma omp simd reduction(+:{accs})" if params["simd"] == "omp" else ""
        pointers = "\n".join(f"                const st_t* __restrict y{r} = vec(j + {r});" for r in range(rows))
        sums = " ".join(f"a{r} += xv * ld(y{r}[c]);" for r in range(rows))
        stores = " ".join(f"tri[j + {r}] = st(a{r});" for r in range(rows))
        return prelude(problem, params) + f"""#include <cstring>

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 3) return 1;
    const int64_t batch = in[1].shape[0], features = in[1].shape[1], dim = in[1].shape[2];
    const int64_t width = out[0].shape[1];
    if (in[0].shape[0] != batch || in[0].shape[1] != dim || width != dim + (features + 1) * features / 2) return 1;
    const st_t* __restrict dense = (const st_t*)in[0].data;
    const st_t* __restrict sparse = (const st_t*)in[1].data;
    st_t* __restrict o = (st_t*)out[0].data;
    {parallel_for(params["threads"], task_schedule(params["samples_per_task"]))}
    for (int64_t b = 0; b < batch; ++b) {{
        const st_t* __restrict x0 = dense + b * dim;
        const st_t* __restrict xs = sparse + b * features * dim;
        auto vec = [&](int64_t v) {{ return v == 0 ? x0 : xs + (v - 1) * dim; }};
        st_t* __restrict ob = o + b * width;
        std::memcpy(ob, x0, dim * sizeof(st_t));
        for (int64_t i = 1; i <= features; ++i) {{
            const st_t* __restrict x = vec(i);
            st_t* __restrict tri = ob + dim + i * (i - 1) / 2;
            int64_t j = 0;
            for (; j + {rows} <= i; j += {rows}) {{
{pointers}
                ct_t {" = 0, ".join(f"a{r}" for r in range(rows))} = 0;
                {simd}
                for (int64_t c = 0; c < dim; ++c) {{ const ct_t xv = ld(x[c]); {sums} }}
                {stores}
            }}
            for (; j < i; ++j) {{
                const st_t* __restrict y = vec(j);
                ct_t a = 0;
                {"#pragma omp simd reduction(+:a)" if params["simd"] == "omp" else ""}
                for (int64_t c = 0; c < dim; ++c) a += ld(x[c]) * ld(y[c]);
                tri[j] = st(a);
            }}
        }}
    }}
    return 0;
}}
"""


RECIPES = [CppDotInteraction()]
