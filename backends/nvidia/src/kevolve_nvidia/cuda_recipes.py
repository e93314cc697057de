"""CUDA C++ recipes for the NVIDIA targets, printed as kernel files of the CUDA contract (``cuda_toolchain``):
the CUDA C++ in ``SOURCE``, launched through cupy's ``RawModule`` with raw device pointers (cupy has no
bfloat16 arrays, and a pointer is all a kernel needs). Loads and stores are in the storage dtype, compute in
float32; bfloat16 is converted by bit operations (round to nearest even), so no CUDA header is needed."""

from __future__ import annotations

import math
from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import POINTWISE, Expr, render
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts
from kevolve_triton.recipes.common import next_pow2

#: torch dtype -> the CUDA type a tensor of it is stored as
STORAGE = {torch.float32: "float", torch.bfloat16: "unsigned short"}

PRELUDE = r"""typedef {storage} st_t;

__device__ __forceinline__ float bf16_load(unsigned short v) {{ return __uint_as_float(((unsigned int)v) << 16); }}
__device__ __forceinline__ unsigned short bf16_store(float f) {{
    unsigned int b = __float_as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);  // NaN stays a quiet NaN
    return (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}}
__device__ __forceinline__ float ld(float v) {{ return v; }}
__device__ __forceinline__ float ld(unsigned short v) {{ return bf16_load(v); }}
__device__ __forceinline__ void st(float* p, float v) {{ *p = v; }}
__device__ __forceinline__ void st(unsigned short* p, float v) {{ *p = bf16_store(v); }}
"""

_SPELLINGS = {"exp": "expf({})", "log": "logf({})", "erf": "erff({})", "tanh": "tanhf({})", "sqrt": "sqrtf({})",
              "rsqrt": "rsqrtf({})", "abs": "fabsf({})", "neg": "(-{})",
              # NaN-propagating, like torch
              "max": "({0} != {0} ? {0} : fmaxf({0}, {1}))", "min": "({0} != {0} ? {0} : fminf({0}, {1}))"}


def cuda_literal(value: float) -> str:
    if math.isnan(value):
        return "__int_as_float(0x7fc00000)"
    if math.isinf(value):
        return "__int_as_float(0x7f800000)" if value > 0 else "__int_as_float(0xff800000)"
    return f"{float(value)!r}f"


def cuda_expr(expr: Expr) -> str:
    """Print a core scalar expression in CUDA C++ (float32 math)."""
    def spell(fn: str, args: list[str]) -> str:
        if fn not in _SPELLINGS:
            raise ValueError(f"no CUDA spelling for {fn}")
        return _SPELLINGS[fn].format(*args)

    return render(expr, spell, cuda_literal)


def kernel_file(problem: Problem, params: dict[str, Any], code: str, launcher: str) -> str:
    """A CUDA-contract kernel file: header, ``SOURCE``, the compiled module and the launcher."""
    described = ", ".join(f"{k}={v}" for k, v in params.items())
    return f'''"""kevolve CUDA C++ kernel: {problem.describe()}
parameters: {described}"""
import cupy

SOURCE = r"""
{PRELUDE.format(storage=STORAGE[problem.dtype])}
{code.strip()}
"""
OPTIONS = ("--std=c++17",)
_module = cupy.RawModule(code=SOURCE, options=OPTIONS)


{launcher.strip()}
'''


class CudaPointwise(Recipe):
    """Each thread handles ``ITEMS`` elements ``THREADS`` apart (every load of a warp is one contiguous run)."""

    name = "cuda.pointwise"
    language = "cuda"
    families = ("pointwise",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "pointwise" and problem.name in POINTWISE and problem.dtype in STORAGE

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            Param("THREADS", (128, 256, 512, 1024), {d.OCCUPANCY_LIMITED: -1, d.SPILL_BOUND: -1,
                                                    d.MEMORY_BOUND: +1}, default=256),
            Param("ITEMS", (1, 2, 4, 8), {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1, d.OCCUPANCY_LIMITED: -1},
                  default=4),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        names, expr = POINTWISE[problem.name]
        threads, items = params["THREADS"], params["ITEMS"]
        pointers = "".join(f"const st_t* __restrict__ {v}_ptr, " for v in names)
        loads = " ".join(f"const float {v} = ld({v}_ptr[i]);" for v in names)
        code = f"""extern "C" __global__ void __launch_bounds__({threads})
kv_{problem.name}({pointers}st_t* __restrict__ out, long long n) {{
    const long long first = (long long)blockIdx.x * {threads * items} + threadIdx.x;
#pragma unroll
    for (int item = 0; item < {items}; ++item) {{
        const long long i = first + (long long)item * {threads};
        if (i < n) {{
            {loads}
            st(out + i, {cuda_expr(expr)});
        }}
    }}
}}"""
        launcher = f"""def kernel(inputs, outputs):
    out = outputs[0]
    n = out.numel()
    if n == 0:
        return
    blocks = (n + {threads * items - 1}) // {threads * items}
    pointers = [cupy.uint64(t.data_ptr()) for t in (*inputs, out)]
    _module.get_function("kv_{problem.name}")((blocks,), ({threads},), (*pointers, cupy.int64(n)))"""
        return kernel_file(problem, params, code, launcher)


#: block-wide reductions (sum, max): each warp reduces with shuffles, then every thread combines the warps'
#: partials from shared memory (no second round, no broadcast); the sync before the write protects the partials
#: of the previous reduction that other threads may still be reading
REDUCE = r"""struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };
struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };

template <typename Op>
__device__ __forceinline__ float block_reduce(float v, float* partials, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if ((threadIdx.x & 31) == 0) partials[threadIdx.x >> 5] = v;
    __syncthreads();
    float all = partials[0];
    for (int i = 1; i < THREADS / 32; ++i) all = op(all, partials[i]);
    return all;
}
"""


def each_value(body: str) -> str:
    """``body`` for every column ``c`` of this thread's row with its value ``t``: the first ``ITEMS`` from
    registers (``v``, indexed at compile time), the rest read again from memory (rows wider than a block holds)."""
    return f"""#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {{
        const int c = threadIdx.x + k * THREADS;
        if (c < cols) {{ const float t = v[k]; {body} }}
    }}
    for (int c = threadIdx.x + ITEMS * THREADS; c < cols; c += THREADS) {{ const float t = ld(xr[c]); {body} }}"""


class CudaRows(Recipe):
    """softmax, log_softmax, rms_norm, layer_norm over the last dim: one block per row, ``ITEMS`` values per
    thread kept in registers (``THREADS * ITEMS`` columns; wider rows read the rest again), block reductions
    through warp shuffles. float32 math; eps from the problem."""

    name = "cuda.rows"
    language = "cuda"
    families = ("row_softmax", "row_norm")
    OPS = ("softmax", "log_softmax", "rms_norm", "layer_norm")

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name in self.OPS and problem.dtype in STORAGE

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        cols = int(problem.dims.get("cols", 1024))
        threads = min(1024, max(32, next_pow2(-(-cols // 8))))  # 8 values a thread where the block allows
        items = min(16, next_pow2(-(-cols // threads)))
        return ScheduleSpace([
            Param("THREADS", (32, 64, 128, 256, 512, 1024), {d.OCCUPANCY_LIMITED: -1, d.SPILL_BOUND: -1,
                                                            d.LATENCY_BOUND: +1}, default=threads),
            Param("ITEMS", (1, 2, 4, 8, 16), {d.SPILL_BOUND: -1, d.MEMORY_BOUND: +1}, default=items),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        op, eps = problem.name, cuda_literal(float(problem.attrs.get("eps", 0.0)))
        operands = {"rms_norm": ("w",), "layer_norm": ("w", "b")}.get(op, ())
        pointers = "".join(f"const st_t* __restrict__ {v}, " for v in operands)
        # softmax and log_softmax share the row's max and the sum of exp(x - max)
        max_and_sum = f"""float m = __int_as_float(0xff800000);
    {each_value("m = fmaxf(m, t);")}
    m = block_reduce(m, partials, Max());
    float s = 0.0f;
    {each_value("s += expf(t - m);")}
    const float total = block_reduce(s, partials, Sum());"""
        body = {
            "softmax": f"""{max_and_sum}
    const float inv = 1.0f / total;
    {each_value("st(yr + c, expf(t - m) * inv);")}""",
            "log_softmax": f"""{max_and_sum}
    const float lse = m + logf(total);
    {each_value("st(yr + c, t - lse);")}""",
            "rms_norm": f"""float s = 0.0f;
    {each_value("s += t * t;")}
    const float r = rsqrtf(block_reduce(s, partials, Sum()) / cols + {eps});
    {each_value("st(yr + c, t * r * ld(w[c]));")}""",
            "layer_norm": f"""float s = 0.0f;
    {each_value("s += t;")}
    const float mean = block_reduce(s, partials, Sum()) / cols;
    float q = 0.0f;
    {each_value("const float e = t - mean; q += e * e;")}
    const float r = rsqrtf(block_reduce(q, partials, Sum()) / cols + {eps});
    {each_value("st(yr + c, (t - mean) * r * ld(w[c]) + ld(b[c]));")}""",
        }[op]
        code = f"""#define THREADS {params["THREADS"]}
#define ITEMS {params["ITEMS"]}
{REDUCE}
extern "C" __global__ void __launch_bounds__({params["THREADS"]})
kv_{op}(const st_t* __restrict__ x, {pointers}st_t* __restrict__ out, int cols) {{
    __shared__ float partials[THREADS / 32];
    const st_t* xr = x + (long long)blockIdx.x * cols;
    st_t* yr = out + (long long)blockIdx.x * cols;
    float v[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {{
        const int c = threadIdx.x + k * THREADS;
        v[k] = c < cols ? ld(xr[c]) : 0.0f;
    }}
    {body}
}}"""
        launcher = f"""def kernel(inputs, outputs):
    out = outputs[0]
    cols = out.shape[-1] if out.dim() else 1
    if out.numel() == 0:
        return
    pointers = [cupy.uint64(t.data_ptr()) for t in (*inputs, out)]
    _module.get_function("kv_{op}")((out.numel() // cols,), ({params["THREADS"]},), (*pointers, cupy.int32(cols)))"""
        return kernel_file(problem, params, code, launcher)


RECIPES = [CudaPointwise(), CudaRows()]
