"""Target attention in C++: out[b] = softmax over l < lengths[b] of (q[b] . k[b, l] / sqrt(dim)) applied to
v[b, l]; an empty history gives zeros.

One sample per iteration of the parallel loop: the scores of the valid history go to a per-thread buffer (one
dot product per key, float accumulation), then the weights, then one sweep over the valid values accumulates
the output row in a float buffer. Only the valid rows are read, the padding never.
"""

from __future__ import annotations

from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import prelude, task_schedule, tasks_param, threads_param


class CppTargetAttention(Recipe):
    name = "cpp.target_attention"
    language = "cpp"
    families = ("attention",)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            threads_param(facts),
            tasks_param("samples_per_task"),
            Param("simd", ("none", "omp"), {d.COMPUTE_BOUND: +1}, default="omp"),
        ])

    def render(self, problem: Problem, params: dict) -> str:
        simd = "#pragma omp simd" if params["simd"] == "omp" else ""
        reduction = "#pragma omp simd reduction(+:dot)" if params["simd"] == "omp" else ""
        return prelude(problem, params) + f"""#include <vector>

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 4 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 3 || in[2].ndim != 3) return 1;
    const int64_t batch = in[1].shape[0], history = in[1].shape[1], dim = in[1].shape[2];
    if (in[0].shape[0] != batch || in[0].shape[1] != dim || in[3].shape[0] != batch) return 1;
    const st_t* __restrict q = (const st_t*)in[0].data;
    const st_t* __restrict k = (const st_t*)in[1].data;
    const st_t* __restrict v = (const st_t*)in[2].data;
    const int64_t* __restrict lengths = (const int64_t*)in[3].data;
    st_t* __restrict o = (st_t*)out[0].data;
    const ct_t scale = (ct_t)1 / std::sqrt((ct_t)dim);
    #pragma omp parallel num_threads({params["threads"]})
    {{
        std::vector<ct_t> scores(history), acc(dim);
        #pragma omp for schedule({task_schedule(params["samples_per_task"])})
        for (int64_t b = 0; b < batch; ++b) {{
            const int64_t n = std::min<int64_t>(std::max<int64_t>(lengths[b], 0), history);
            const st_t* __restrict qb = q + b * dim;
            const st_t* __restrict kb = k + b * history * dim;
            const st_t* __restrict vb = v + b * history * dim;
            ct_t top = -INFINITY;
            for (int64_t l = 0; l < n; ++l) {{
                ct_t dot = 0;
                const st_t* __restrict kr = kb + l * dim;
                {reduction}
                for (int64_t c = 0; c < dim; ++c) dot += ld(qb[c]) * ld(kr[c]);
                scores[l] = dot * scale;
                top = std::max(top, scores[l]);
            }}
            ct_t total = 0;
            for (int64_t c = 0; c < dim; ++c) acc[c] = 0;
            for (int64_t l = 0; l < n; ++l) {{
                const ct_t w = std::exp(scores[l] - top);
                total += w;
                const st_t* __restrict vr = vb + l * dim;
                {simd}
                for (int64_t c = 0; c < dim; ++c) acc[c] += w * ld(vr[c]);
            }}
            const ct_t inv = total > 0 ? (ct_t)1 / total : (ct_t)0;
            st_t* __restrict ob = o + b * dim;
            for (int64_t c = 0; c < dim; ++c) ob[c] = st(acc[c] * inv);
        }}
    }}
    return 0;
}}
"""


RECIPES = [CppTargetAttention()]
