"""ATen conformance kernels in C++: one elementwise loop printed from a :class:`~kevolve.conformance.kernel.KernelSpec`
(the scalar expression of core's conformance table, attributes baked in as constants).

Layouts: ``same`` (flat loop), ``broadcast`` (each input indexed through broadcast strides, 0 where its size is 1)
and ``halves`` (GLU: ``a`` and ``b`` are the two halves of one input along ``dim``). The kernel checks the ABI
(counts, dtypes, ranks, sizes) and declines with a non-zero code what it was not written for.

A lowered program's pointwise kernel may read an input through an index (``attrs["gathers"]``, see
:mod:`kevolve.program.fuse`): the input holds indices into a 1-D table that comes after the viewed inputs, and
the element is the table's; an index out of the table fails the call (code 2), as ``index_select`` raises.
"""

from __future__ import annotations

from dataclasses import replace

from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_common import cpp_expr, math_param, parallel_loop, threads_param

#: dtype name -> (C storage type, kv_dtype enum); bfloat16 is stored as its 16-bit pattern
C_TYPES = {"float32": ("float", "KV_FLOAT32"), "float64": ("double", "KV_FLOAT64"), "int64": ("int64_t", "KV_INT64"),
           "int32": ("int32_t", "KV_INT32"), "bool": ("bool", "KV_BOOL"), "bfloat16": ("uint16_t", "KV_BFLOAT16")}
#: declines: 1 wrong argument count, 2 shapes/layout, 3 dtype
DECLINE_CODES = {1: "wrong number of tensors", 2: "shape or layout it was not written for", 3: "dtype"}


def compute_type(dtype: str) -> str:
    """The C type a value of ``dtype`` is computed in (bfloat16 in float, as ATen's opmath)."""
    return {"float64": "double", "int64": "int64_t", "int32": "int64_t", "bool": "int64_t"}.get(dtype, "float")


def round_storage(dtype: str) -> str:
    """The kernel's ``kv_round_storage``: a computed value rounded to ``dtype``'s storage and back, as ATen's
    vectorised loops do between operations on reduced-precision data."""
    body = "return kv_bf16_to_f32(kv_f32_to_bf16(v));" if dtype == "bfloat16" else "return v;"
    return f"static inline ct_t kv_round_storage(ct_t v) {{ {body} }}"


def load(dtype: str, value: str) -> str:
    """C expression reading a stored element of ``dtype`` as its compute type."""
    return f"kv_bf16_to_f32({value})" if dtype == "bfloat16" else f"({compute_type(dtype)})({value})"


def store(dtype: str, value: str) -> str:
    """C expression converting a computed value to the storage of ``dtype`` (bfloat16: round to nearest even)."""
    return f"kv_f32_to_bf16((float)({value}))" if dtype == "bfloat16" else f"({C_TYPES[dtype][0]})({value})"


class CppAtenPointwise(Recipe):
    name = "cpp.aten_pointwise"
    language = "cpp"
    families = ("aten_pointwise",)
    takes_gathers = True

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, ("same", "broadcast", "halves"))
        return kernel is not None and all(d in C_TYPES for _, d in kernel.inputs) and kernel.out_dtype in C_TYPES \
            and not (kernel.layout == "halves" and kernel.attrs.get("gathers"))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts), replace(math_param(), default="poly")])

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        gathers = k.attrs.get("gathers", {})
        names, dtypes = [name for name, _ in k.inputs], dict(k.inputs)
        tables = [name for name in names if name in {t for t, _ in gathers.values()}]
        viewed = [(name, d) for name, d in k.inputs if name not in tables]  # the tables come after these

        def value_dtype(name: str) -> str:
            return dtypes[gathers[name][0]] if name in gathers else dtypes[name]

        def element(i: int, name: str, at: str) -> str:
            """Input ``i``'s element at offset ``at``, or the table's where it holds an index."""
            if name not in gathers:
                return load(dtypes[name], f"p{i}[{at}]")
            table, wrap = gathers[name]
            j = names.index(table)
            return load(dtypes[table], f"kv_gathered(&in[{j}], p{j}, (int64_t)p{i}[{at}], {int(wrap)}, bad)")

        first = value_dtype(k.inputs[0][0]) if k.inputs else k.out_dtype  # no input: a fill (``torch.zeros``)
        ct = compute_type(first)
        out_c, out_enum = C_TYPES[k.out_dtype]
        value = cpp_expr(k.expr, params.get("math", "libm"), ct)
        checks = [f"    if (n_in != {len(k.inputs) if k.layout != 'halves' else 1} || n_out != 1) return 1;",
                  f"    if (out[0].dtype != {out_enum}) return 3;"]
        sources = viewed if k.layout != "halves" else list(k.inputs[:1])
        passed = sources + [(t, dtypes[t]) for t in tables]  # every tensor the kernel reads, in[] order
        for i, (_, dtype) in enumerate(passed):
            checks.append(f"    if (in[{i}].dtype != {C_TYPES[dtype][1]}) return 3;")
        checks += [f"    if (in[{names.index(t)}].ndim != 1) return 2;" for t in tables]
        pointers = "\n".join(f"    const {C_TYPES[d][0]}* __restrict p{i} = (const {C_TYPES[d][0]}*)in[{i}].data;"
                             for i, (_, d) in enumerate(passed))
        done = "bad ? 2 : 0" if gathers else "0"

        def spread(loop: str) -> str:
            """The loop over the threads, or on the calling thread for a call too small to pay OpenMP's entry."""
            return "    " + parallel_loop(params["threads"], loop, "n", clauses="reduction(|:bad)" if gathers else "")

        if k.layout == "same":
            checks += [f"    if (kv_numel(&in[{i}]) != n) return 2;" for i in range(len(sources))]
            loads = " ".join(f"const ct_t {name} = {element(i, name, 'i')};" for i, (name, _) in enumerate(sources))
            loop = spread(f"""for (int64_t i = 0; i < n; ++i) {{
        {loads}
        o[i] = {store(k.out_dtype, value)};
    }}""")
        elif k.layout == "broadcast":
            checks.append("    const int64_t nd = out[0].ndim;")
            checks += [f"    if (in[{i}].ndim != nd) return 2;" for i in range(len(sources))]
            strides = "\n".join(
                f"    for (int64_t d = 0; d < nd; ++d) {{\n"
                f"        if (in[{i}].shape[d] != out[0].shape[d] && in[{i}].shape[d] != 1) return 2;\n"
                f"        s{i}[d] = in[{i}].shape[d] == 1 ? 0 : in[{i}].strides[d];\n"
                f"    }}" for i in range(len(sources)))
            offsets = " ".join(f"o{i} += c * s{i}[d];" for i in range(len(sources)))
            row_loads = " ".join(f"const ct_t {name} = {element(i, name, f'o{i} + j * s{i}[last]')};"
                                 for i, (name, _) in enumerate(sources))
            dense = " && ".join(f"kv_dense_like(&in[{i}], &out[0])" for i in range(len(sources)))
            flat = " ".join(f"const ct_t {name} = {element(i, name, 'i')};" for i, (name, _) in enumerate(sources))
            flat_loop = spread(f"""for (int64_t i = 0; i < n; ++i) {{
        {flat}
        o[i] = {store(k.out_dtype, value)};
    }}""")
            span_loop = spread(f"""for (int64_t t = 0; t < outer * spans; ++t) {{
        const int64_t r = t / spans, j0 = t % spans * span, j1 = j0 + span < inner ? j0 + span : inner;
        int64_t rest = r, {", ".join(f"o{i} = 0" for i in range(len(sources)))};
        for (int64_t d = nd - 2; d >= 0; --d) {{
            const int64_t c = rest % out[0].shape[d];
            rest /= out[0].shape[d];
            {offsets}
        }}
        for (int64_t j = j0; j < j1; ++j) {{
            {row_loads}
            o[r * inner + j] = {store(k.out_dtype, value)};
        }}
    }}""")
            if not sources:  # a fill
                loop = flat_loop
            else:
                loop = f"""    int64_t {", ".join(f"s{i}[8] = {{0}}" for i in range(len(sources)))};
{strides}
    if ({dense}) {{  // every input laid out as the output: a flat loop the compiler vectorizes
{flat_loop}
        return {done};
    }}
    // spans of the output's rows (its last dimension): one coordinate walk a span, not one an element; long
    // rows are cut into spans so that a few of them still spread over the threads
    const int64_t last = nd > 0 ? nd - 1 : 0, inner = nd > 0 ? out[0].shape[last] : 1;
    const int64_t outer = inner > 0 ? n / inner : 0, span = inner < 4096 ? inner : 4096;
    const int64_t spans = inner > 0 ? (inner + span - 1) / span : 0;
{span_loop}"""
        else:  # halves along k.dim
            checks += [f"    if (in[0].ndim <= {k.dim} || out[0].ndim != in[0].ndim) return 2;",
                       f"    const int64_t len = in[0].shape[{k.dim}], half = len / 2;",
                       "    if (len % 2 != 0) return 2;",
                       "    int64_t outer = 1, inner = 1;",
                       f"    for (int64_t d = 0; d < {k.dim}; ++d) outer *= in[0].shape[d];",
                       f"    for (int64_t d = {k.dim} + 1; d < in[0].ndim; ++d) inner *= in[0].shape[d];",
                       "    if (outer * half * inner != n) return 2;"]
            loop = spread(f"""for (int64_t i = 0; i < n; ++i) {{
        const int64_t c = i % inner, j = (i / inner) % half, r = i / (inner * half);
        const int64_t base = r * len * inner + c;
        const ct_t a = {load(k.inputs[0][1], 'p0[base + j * inner]')}, b = {load(k.inputs[0][1], 'p0[base + (j + half) * inner]')};
        o[i] = {store(k.out_dtype, value)};
    }}""")
        params_text = ", ".join(f"{key}={val}" for key, val in params.items())
        checks_text = "\n".join(checks)
        return f"""// kevolve generated kernel: {k.describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
#include "kevolve_math.h"
#include <cmath>
#include <cstdint>

typedef {ct} ct_t;  // compute type
typedef {out_c} out_t;  // output storage type
{round_storage(first)}
{GATHERED if gathers else ""}
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    const int64_t n = n_out == 1 ? kv_numel(&out[0]) : 0;
{checks_text}
{pointers}
    out_t* __restrict o = (out_t*)out[0].data;
{"    int bad = 0;" if gathers else ""}
{loop}
    return {done};
}}
"""


#: a table's element at index ``v`` (from the end where ``wrap`` and ``v`` < 0); an index out of the table sets
#: ``bad`` and reads nothing
GATHERED = """template <typename T>
static inline T kv_gathered(const kv_tensor* table, const T* data, int64_t v, int wrap, int& bad) {
    const int64_t size = table->shape[0];
    if (v < 0 && wrap) v += size;
    if (v < 0 || v >= size) {
        bad = 1;
        return T{};
    }
    return data[v * table->strides[0]];
}
"""

RECIPES = [CppAtenPointwise()]
