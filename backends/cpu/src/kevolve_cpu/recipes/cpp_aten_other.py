"""ATen conformance kernels in C++: sorting/selection and data movement (:mod:`kevolve.conformance.ops.other`).

Two kernel kinds, each one renderer parametrised per op by a small table of C statements; every kernel takes the
op's tensors, then one int64 tensor of packed integer parameters (k, descending, shifts, dims, ...), so one build
serves every combination of them:

- lines (``sort``, ``topk``, ``kthvalue``): the input is (outer, L, inner) (the host viewed it around the selected
  dimension); each line of L elements is copied as (value, position) pairs, reordered, and the first K pairs
  from ``first`` on are written (values and int64 positions). The reordering follows ATen's CPU kernels so that
  ties come out in PyTorch's order (NaN greatest): libstdc++'s ``stable_sort``, or its ``sort`` when
  ``stable=False`` (but fbgemm's stable radix sort for a long 1-D integer input ascending), for sort/argsort;
  ``partial_sort`` when ``k * 64 <= L``, else ``nth_element`` (then ``sort`` of the first k - 1 when sorted)
  for topk; ATen's median-of-three quickselect (Sedgewick's partition) for kthvalue.
- moves (``cat``, ``flip``, ``roll``, ``tril``): every output element reads one input element (or is zero), its
  position computed from the output's coordinates.

Elements are read and written through :func:`cpp_aten.load` / :func:`cpp_aten.store` (bfloat16 as its bit
pattern, computed in float). The kernel checks the ABI and declines (non-zero, :data:`cpp_aten.DECLINE_CODES`)
what it was not written for.
"""

from __future__ import annotations

from dataclasses import dataclass

from kevolve.conformance.kernel import KernelSpec, conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, compute_type, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, threads_param


@dataclass(frozen=True)
class LineOp:
    """How one selection op reorders a line ``q`` of L (value, position) pairs, in C.

    ``params``: how many packed parameters it takes; ``prologue`` reads them (``prm``) before the lines and sets
    ``K`` (elements written per line) and ``first`` (the first pair written), declining what ATen rejects;
    ``body`` reorders ``q``."""

    params: int
    prologue: str
    body: str


_LINE_OPS = {
    "sort": LineOp(3, "const bool descending = prm[0] != 0;\n"
                      "    // integers of a long 1-D input ascending: fbgemm's radix sort, stable whatever was asked\n"
                      "    const bool stable = prm[1] != 0 || (integral && prm[2] != 0 && !descending && L >= 32768);\n"
                      "    const int64_t K = L, first = 0;",
                   "sort_line(q, descending ? gt_nan : lt_nan, stable);"),
    "topk": LineOp(3, "const int64_t K = prm[0], first = 0;\n"
                      "    const bool largest = prm[1] != 0, sorted = prm[2] != 0;\n"
                      "    if (K < 0 || K > L) return 2;",
                   "if (K > 0) topk_line(q, K, largest ? gt_nan : lt_nan, sorted);"),
    "kthvalue": LineOp(1, "const int64_t k = prm[0], K = 1, first = k - 1;\n    if (k < 1 || k > L) return 2;",
                       "quick_select(q, first);"),
}

_LINE_HELPERS = """typedef std::pair<ct_t, int64_t> elem_t;  // (value, position in the line)
typedef bool (*cmp_t)(const elem_t&, const elem_t&);

static inline bool is_nan(ct_t v) { return v != v; }
// PyTorch's orders: NaN is the greatest value
static bool lt_nan(const elem_t& a, const elem_t& b) {
    return (!is_nan(a.first) && is_nan(b.first)) || a.first < b.first;
}
static bool gt_nan(const elem_t& a, const elem_t& b) {
    return (is_nan(a.first) && !is_nan(b.first)) || a.first > b.first;
}

// PyTorch's CPU sort: libstdc++'s stable_sort or (introspective) sort, whose order of ties is its own
static void sort_line(std::vector<elem_t>& q, cmp_t cmp, bool stable) {
    if (stable) std::stable_sort(q.begin(), q.end(), cmp);
    else std::sort(q.begin(), q.end(), cmp);
}

// PyTorch's CPU topk (topk_impl_loop): which libstdc++ algorithm decides the order of ties
static void topk_line(std::vector<elem_t>& q, int64_t k, cmp_t cmp, bool sorted) {
    const int64_t n = (int64_t)q.size();
    if (k * 64 <= n) {
        std::partial_sort(q.begin(), q.begin() + k, q.end(), cmp);
    } else {
        std::nth_element(q.begin(), q.begin() + k - 1, q.end(), cmp);
        if (sorted) std::sort(q.begin(), q.begin() + k - 1, cmp);
    }
}

// PyTorch's CPU kthvalue: quick_select_template (median of three, Sedgewick's partition), NaN greatest
static inline bool gt_or_nan(ct_t x, ct_t y) { return (is_nan(x) && !is_nan(y)) || x > y; }
static void quick_select(std::vector<elem_t>& a, int64_t k) {
    int64_t L = 0, R = (int64_t)a.size() - 1;
    while (true) {
        if (R <= L) return;
        if (R == L + 1) {
            if (gt_or_nan(a[L].first, a[R].first)) std::swap(a[L], a[R]);
            return;
        }
        const int64_t P = (L + R) >> 1;
        std::swap(a[P], a[L + 1]);
        if (gt_or_nan(a[L + 1].first, a[R].first)) std::swap(a[L + 1], a[R]);
        if (gt_or_nan(a[L].first, a[R].first)) std::swap(a[L], a[R]);
        if (gt_or_nan(a[L + 1].first, a[L].first)) std::swap(a[L + 1], a[L]);
        int64_t i = L + 1, j = R;
        const ct_t piv = a[L].first;
        while (true) {
            do ++i; while (gt_or_nan(piv, a[i].first));
            do --j; while (gt_or_nan(a[j].first, piv));
            if (j < i) break;
            std::swap(a[i], a[j]);
        }
        std::swap(a[L], a[j]);
        if (j <= k) L = i;
        if (j >= k) R = j - 1;
    }
}
"""


@dataclass(frozen=True)
class MoveOp:
    """How one data-movement op finds the input element of each output element, in C.

    ``prologue`` reads the packed parameters (``prm``, ``n_prm`` of them) and the shapes, declining what it was
    not written for; ``element`` sets ``src`` (a pointer to the input element) and ``keep`` (false: write zero)
    for the output element ``i``. ``same_shape``: the input has the output's shape (the kernel checks it);
    ``many``: any number of input tensors (cat), else exactly one."""

    prologue: str
    element: str
    same_shape: bool = True
    many: bool = False


_COORDS = """int64_t rest = i, at = 0;
        for (int64_t d = nd - 1; d >= 0; --d) {{
            int64_t c = rest % shape[d];
            rest /= shape[d];
            {map}
            at += c * stride[d];
        }}
        src = x + at;"""

_MOVE_OPS = {
    "flip": MoveOp("""bool flipped[8] = {false};
    for (int64_t f = 0; f < n_prm; ++f) {
        const int64_t d = prm[f] < 0 ? prm[f] + nd : prm[f];
        if (d < 0 || d >= nd) return 2;
        flipped[d] = true;
    }""", _COORDS.format(map="if (flipped[d]) c = shape[d] - 1 - c;")),
    "roll": MoveOp("""if (n_prm < 2) return 2;
    const bool flat = prm[0] != 0;
    const int64_t m = prm[1];
    if (n_prm != 2 + m * (flat ? 1 : 2) || (flat && m != 1)) return 2;
    int64_t shift[8] = {0};
    int64_t flat_shift = 0;
    if (flat && n > 0) flat_shift = ((prm[2] % n) + n) % n;
    for (int64_t t = 0; !flat && t < m; ++t) {
        const int64_t d = prm[2 + m + t] < 0 ? prm[2 + m + t] + nd : prm[2 + m + t];
        if (d < 0 || d >= nd) return 2;
        if (shape[d] > 0) shift[d] = ((shift[d] + prm[2 + t] % shape[d]) % shape[d] + shape[d]) % shape[d];
    }""", """if (flat) {
            src = x + (i >= flat_shift ? i - flat_shift : i - flat_shift + n);
        } else {
            """ + _COORDS.format(map="c -= shift[d]; if (c < 0) c += shape[d];") + """
        }"""),
    "tril": MoveOp("""if (n_prm != 1 || in[0].ndim != 3) return 2;
    if (in[0].shape[0] * in[0].shape[1] * in[0].shape[2] != n) return 2;
    const int64_t rows = in[0].shape[1], cols = in[0].shape[2], diagonal = prm[0];""",
                   """const int64_t col = i % cols, row = (i / cols) % rows;
        keep = col - row <= diagonal;
        src = x + i;""", same_shape=False),
    "cat": MoveOp("""if (n_prm != 1 || n_data > 64) return 2;
    const int64_t cd = prm[0] < 0 ? prm[0] + nd : prm[0];
    if (cd < 0 || cd >= nd) return 2;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < cd; ++d) outer *= shape[d];
    for (int64_t d = cd + 1; d < nd; ++d) inner *= shape[d];
    const int64_t len = n > 0 ? shape[cd] : 0;
    // the inputs that take part (PyTorch skips legacy empty 1-D tensors of shape (0,)), where each starts along cd
    const in_t* part[64];
    int64_t start[65], parts = 0, along = 0;
    for (int64_t t = 0; t < n_data; ++t) {
        const kv_tensor* a = &in[t];
        if (a->dtype != in[0].dtype) return 3;
        if (a->ndim == 1 && a->shape[0] == 0) continue;
        if (a->ndim != nd) return 2;
        for (int64_t d = 0; d < nd; ++d) if (d != cd && a->shape[d] != shape[d]) return 2;
        part[parts] = (const in_t*)a->data;
        start[parts++] = along;
        along += a->shape[cd];
    }
    start[parts] = along;
    if (n > 0 && along != len) return 2;
    if (out[0].dtype == in[0].dtype) {  // same storage: each input's part of a row is one run, copied whole
        char* dst = (char*)out[0].data;
        const int64_t item = (int64_t)sizeof(in_t), rows = len > 0 ? outer : 0;
        KV_PARALLEL_FOR
        for (int64_t r = 0; r < rows * parts; ++r) {
            const int64_t row = r / parts, t = r % parts, size = start[t + 1] - start[t];
            memcpy(dst + ((row * len + start[t]) * inner) * item, (const char*)part[t] + row * size * inner * item,
                   (size_t)(size * inner * item));
        }
        return 0;
    }""",
                  """const int64_t ci = i % inner, c = (i / inner) % len, row = i / (inner * len);
        int64_t t = 0;
        while (c >= start[t + 1]) ++t;
        const int64_t size = start[t + 1] - start[t];
        src = part[t] + (row * size + c - start[t]) * inner + ci;""", same_shape=False, many=True),
}


def _kernel(problem: Problem) -> KernelSpec:
    return problem.kernel  # type: ignore[attr-defined]


def _owns(problem: Problem, layouts: tuple[str, ...]) -> bool:
    kernel = conformance_kernel(problem, layouts)
    return kernel is not None and kernel.all_dtypes_in(C_TYPES)


def _header(problem: Problem, params: dict, ct: str, includes: str) -> str:
    params_text = ", ".join(f"{key}={val}" for key, val in params.items())
    return f"""// kevolve generated kernel: {_kernel(problem).describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
{includes}
#include <cmath>
#include <cstdint>

typedef {ct} ct_t;  // compute type
"""


class CppAtenLines(Recipe):
    """sort/argsort, topk, kthvalue: one line at a time, reordered by ATen's own algorithm."""

    name = "cpp.aten_lines"
    language = "cpp"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        return _owns(problem, tuple(_LINE_OPS))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k = _kernel(problem)
        op = _LINE_OPS[k.layout]
        dtype = k.inputs[0][1]
        in_c, in_enum = C_TYPES[dtype]
        out_dtype = k.outputs[0]
        n_out = len(k.outputs)
        # argsort writes only the positions; sort, topk and kthvalue write values, then positions
        positions_only = n_out == 1
        checks = [f"    if (out[{o}].dtype != {C_TYPES[d][1]}) return 3;" for o, d in enumerate(k.outputs)]
        sizes = "\n".join(f"    if (kv_numel(&out[{o}]) != outer * K * inner) return 2;" for o in range(n_out))
        if positions_only:
            writes = "o0[at] = q[first + j].second;"
            pointers = "    int64_t* __restrict o0 = (int64_t*)out[0].data;"
        else:
            writes = (f"o0[at] = {store(out_dtype, 'q[first + j].first')};"
                      + (" o1[at] = q[first + j].second;" if n_out == 2 else ""))
            pointers = f"    {C_TYPES[out_dtype][0]}* __restrict o0 = ({C_TYPES[out_dtype][0]}*)out[0].data;" + (
                "\n    int64_t* __restrict o1 = (int64_t*)out[1].data;" if n_out == 2 else "")
        checks_text = "\n".join(checks)
        includes = "#include <algorithm>\n#include <utility>\n#include <vector>"
        return _header(problem, params, compute_type(dtype), includes) + f"""
static const bool integral = {"true" if dtype in ("int64", "int32") else "false"};  // an integer dtype
{_LINE_HELPERS}
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in != 2 || n_out != {n_out}) return 1;
    if (in[0].dtype != {in_enum} || in[1].dtype != KV_INT64) return 3;
{checks_text}
    if (in[0].ndim != 3 || in[1].ndim != 1 || in[1].shape[0] != {op.params}) return 2;
    const int64_t outer = in[0].shape[0], L = in[0].shape[1], inner = in[0].shape[2];
    const int64_t* prm = (const int64_t*)in[1].data;
    {op.prologue}
{sizes}
    const {in_c}* __restrict x = (const {in_c}*)in[0].data;
{pointers}
    {parallel_for(params["threads"])}
    for (int64_t r = 0; r < outer * inner; ++r) {{
        const int64_t o = r / inner, c = r % inner;
        const {in_c}* line = x + o * L * inner + c;
        std::vector<elem_t> q(L);
        for (int64_t j = 0; j < L; ++j) q[j] = elem_t({load(dtype, 'line[j * inner]')}, j);
        {op.body}
        for (int64_t j = 0; j < K; ++j) {{
            const int64_t at = (o * K + j) * inner + c;
            {writes}
        }}
    }}
    return 0;
}}
"""


class CppAtenMoves(Recipe):
    """cat, flip, roll, tril: each output element copied from one input element (or zero)."""

    name = "cpp.aten_moves"
    language = "cpp"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        return _owns(problem, tuple(_MOVE_OPS))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k = _kernel(problem)
        op = _MOVE_OPS[k.layout]
        dtype, out_dtype = k.inputs[0][1], k.outputs[0]
        in_c, in_enum = C_TYPES[dtype]
        out_c, out_enum = C_TYPES[out_dtype]
        same = """    if (in[0].ndim != nd) return 2;
    for (int64_t d = 0; d < nd; ++d) if (in[0].shape[d] != shape[d]) return 2;""" if op.same_shape else ""
        if not op.many:
            same = "    if (n_data != 1) return 1;\n" + same
        return _header(problem, params, compute_type(dtype), "") + f"""
typedef {in_c} in_t;  // input storage type

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
    if (n_in < 2 || n_out != 1) return 1;
    const int64_t n_data = n_in - 1;
    const kv_tensor* p = &in[n_data];
    if (in[0].dtype != {in_enum} || out[0].dtype != {out_enum} || p->dtype != KV_INT64) return 3;
    if (p->ndim != 1 || out[0].ndim > 8) return 2;
    const int64_t nd = out[0].ndim, n = kv_numel(&out[0]), n_prm = p->shape[0];
    const int64_t* shape = out[0].shape;
    const int64_t* stride = in[0].strides;
    const int64_t* prm = (const int64_t*)p->data;
    (void)shape; (void)stride; (void)prm;
{same}
    {op.prologue.replace("KV_PARALLEL_FOR", parallel_for(params["threads"]))}
    const in_t* __restrict x = (const in_t*)in[0].data;
    {out_c}* __restrict o = ({out_c}*)out[0].data;
    (void)x;
    {parallel_for(params["threads"])}
    for (int64_t i = 0; i < n; ++i) {{
        const in_t* src = x;
        bool keep = true;
        {op.element}
        o[i] = keep ? {store(out_dtype, load(dtype, '*src'))} : {store(out_dtype, '0')};
    }}
    return 0;
}}
"""


RECIPES = [CppAtenLines(), CppAtenMoves()]
