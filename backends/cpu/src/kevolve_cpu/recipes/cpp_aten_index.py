"""ATen conformance kernels in C++: indexing operators, one renderer per kernel kind (layout of core's
conformance table, :mod:`kevolve.conformance.ops.index`).

* ``gather``: inputs (x, index, params[dim, broadcast, wrap]); every output element reads one input element
  (negative indices count from the end where ATen allows it: take_along_dim).
* ``scatter``: inputs (x, index, [src], params[dim, domain]); the output starts as x, then the source elements
  are combined into it in ATen's order (sequential along ``dim`` within each column, columns in parallel: two
  columns never touch the same output element), so repeated targets and float rounding match ATen's CPU loop.
* ``index_put``: inputs (x, index tensors..., values); integer indices broadcast together (negative ones wrap) or
  one boolean mask over the leading dims (its true positions in row-major order), applied sequentially.
* ``embedding_bag``: inputs (weight, indices, [offsets], [per_sample_weights], params[bags, length, padding_idx,
  include_last_offset]); ``max_norm`` renormalises the rows read, as ``embedding_renorm_`` would, without writing
  the weight.
* ``search``: inputs (sorted rows, values, [sorter], params[right]); ATen's own lower/upper bound loop, so NaN
  (and unsorted input) land where ATen puts them; the output is int64 or int32, read from the output tensor.

Integers that vary between samples (dims, modes, padding index) come at run time in the trailing int64 tensor;
reductions, dtypes and float constants are compiled in. An index out of range declines (code 2), as ATen raises.
"""

from __future__ import annotations

import math
from typing import Any

from kevolve import diagnosis as d
from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, compute_type, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, parallel_loop, threads_param
from kevolve_cpu.recipes.cpp_index import bag_sum_loop

#: scatter reductions: (combine(cur, v) in C++, identity when include_self is False)
_SCATTER_OPS = {
    "none": ("v", None),
    "sum": ("cur + v", "0"),
    "mean": ("cur + v", "0"),
    "prod": ("cur * v", "1"),
    "amax": ("(v != v) ? v : std::max<ct_t>(cur, v)", "-INFINITY"),  # ATen: NaN in the source wins; NaN kept
    "amin": ("(v != v) ? v : std::min<ct_t>(cur, v)", "INFINITY"),
}


def _literal(value: float) -> str:
    """A compute-type literal (infinities and NaN by their macros)."""
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if math.isnan(value):
        return "NAN"
    return f"(ct_t){float(value)!r}"


def _ctype(dtype: str) -> str:
    return C_TYPES[dtype][0]


def _dtype_checks(inputs: list[str], outputs: list[str] | None = None) -> str:
    """Decline (3) a tensor whose dtype is not the one the kernel was written for (None: not checked here)."""
    lines = [f"    if (in[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, d in enumerate(inputs)]
    lines += [f"    if (out[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, d in enumerate(outputs or [])]
    return "\n".join(lines)


def _pointer(name: str, index: int, dtype: str) -> str:
    return f"    const {_ctype(dtype)}* __restrict {name} = (const {_ctype(dtype)}*)in[{index}].data;"


def _source(problem: Problem, params: dict, ct: str, body: str) -> str:
    """The whole file: prelude, then the ``kevolve_kernel`` entry point around ``body``."""
    k = problem.kernel  # type: ignore[attr-defined]
    params_text = ", ".join(f"{key}={val}" for key, val in params.items())
    return f"""// kevolve generated kernel: {k.describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

typedef {ct} ct_t;  // compute type

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{body}
}}
"""


def _parallel(params: dict, reduction: str = "") -> str:
    pragma = parallel_for(params["threads"])
    return f"{pragma} {reduction}" if pragma and reduction else pragma


def _copy_input(dtype: str, params: dict) -> str:
    """out[0] = in[0], element by element (the output of every in-place style op starts as its input)."""
    return f"""    const int64_t n = kv_numel(&out[0]);
    if (n != kv_numel(&in[0])) return 2;
    const {_ctype(dtype)}* __restrict x = (const {_ctype(dtype)}*)in[0].data;
    {_ctype(dtype)}* __restrict o = ({_ctype(dtype)}*)out[0].data;
    {_parallel(params)}
    for (int64_t i = 0; i < n; ++i) o[i] = {store(dtype, load(dtype, 'x[i]'))};"""


class _IndexRecipe(Recipe):
    """What the index renderers share: the family, the layout each one owns, the schedule (threads)."""

    language = "cpp"
    families = ("aten_pointwise",)
    layout = ""

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, (self.layout,))
        return kernel is not None and kernel.all_dtypes_in(C_TYPES)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        dtypes = [d for _, d in k.inputs]
        return _source(problem, params, compute_type(dtypes[0]), self.body(k, dtypes, params))

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        raise NotImplementedError


class CppAtenGather(_IndexRecipe):
    """out[c] = x[c with c[dim] = index[c]]; with broadcast=1 the input and the index broadcast against each
    other except along dim (take_along_dim, index_select viewed as a broadcast index)."""

    name = "cpp.aten_gather"
    layout = "gather"

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        xt, it = dtypes[0], dtypes[1]
        return f"""    if (n_in != 3 || n_out != 1) return 1;
{_dtype_checks(dtypes, [xt])}
    const int64_t n = kv_numel(&out[0]);
    if (n == 0) return 0;
    const kv_tensor* X = &in[0];
    const kv_tensor* I = &in[1];
    const int64_t* P = (const int64_t*)in[2].data;
    const int64_t nd = X->ndim, dim = P[0], broadcast = P[1], wrap = P[2];
    if (I->ndim != nd || dim < 0 || dim >= nd) return 2;
    int64_t shape[8], xs[8], is[8], total = 1;
    for (int64_t d = 0; d < nd; ++d) {{
        const int64_t xd = X->shape[d], id = I->shape[d];
        shape[d] = (d == dim || !broadcast || id != 1) ? id : xd;
        if (d != dim && broadcast && xd != shape[d] && xd != 1) return 2;
        if (d != dim && !broadcast && id > xd) return 2;
        xs[d] = (d == dim || xd == 1) ? 0 : X->strides[d];
        is[d] = id == 1 ? 0 : I->strides[d];
        total *= shape[d];
    }}
    if (total != n) return 2;
    const int64_t size = X->shape[dim], step = X->strides[dim];
{_pointer("x", 0, xt)}
{_pointer("idx", 1, it)}
    {_ctype(xt)}* __restrict o = ({_ctype(xt)}*)out[0].data;
    // spans of the output's last dimension (up to 4096 elements): one coordinate walk a span, not one an element
    const int64_t last = nd - 1, inner = shape[last], outer = inner > 0 ? n / inner : 0;
    const int64_t span = inner < 4096 ? inner : 4096, spans = inner > 0 ? (inner + span - 1) / span : 0;
    int bad = 0;
    {_parallel(params, "reduction(|:bad)")}
    for (int64_t t = 0; t < outer * spans; ++t) {{
        const int64_t r = t / spans, j0 = t % spans * span, j1 = j0 + span < inner ? j0 + span : inner;
        int64_t rest = r, ox = 0, oi = 0;
        for (int64_t d = nd - 2; d >= 0; --d) {{
            const int64_t c = rest % shape[d];
            rest /= shape[d];
            ox += c * xs[d];
            oi += c * is[d];
        }}
        for (int64_t j = j0; j < j1; ++j) {{
            int64_t v = (int64_t)idx[oi + j * is[last]];
            if (v < 0 && wrap) v += size;
            const bool ok = v >= 0 && v < size;
            bad |= !ok;
            o[r * inner + j] = ok ? {store(xt, load(xt, "x[ox + j * xs[last] + v * step]"))} : {store(xt, "0")};
        }}
    }}
    return bad ? 2 : 0;"""


class CppAtenScatter(_IndexRecipe):
    """out = x, then out[c with c[dim] = index[c]] = combine(out[...], src[c]) over the domain (the index's
    elements, or the source's with the index broadcast: index_add), in order along dim."""

    name = "cpp.aten_scatter"
    layout = "scatter"

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        xt, it = dtypes[0], dtypes[1]
        reduce, include_self, alpha = k.attrs["reduce"], k.attrs["include_self"], k.attrs["alpha"]
        combine, identity = _SCATTER_OPS[reduce]
        const_src = "src" in k.attrs
        n_in = 3 if const_src else 4
        if const_src:
            value = "const ct_t v = src_value;"
            source = f"    const ct_t src_value = {_literal(k.attrs['src'])};"
            geometry = "const kv_tensor* S = I;"
        else:
            scaled = load(xt, "src[bs + t * ss[dim]]")
            value = f"const ct_t v = {scaled if alpha == 1.0 else f'{_literal(alpha)} * {scaled}'};"
            source = _pointer("src", 2, xt)
            geometry = "const kv_tensor* S = &in[2];"
        mean = reduce == "mean"
        # integers are exact either way: no copy of the output to accumulate in
        once = k.attrs.get("rounding", "once") == "once" and xt.startswith(("float", "bfloat"))
        # where the running value lives: a compute-type copy of the output (rounded once at the end), or the
        # output itself (rounded every step)
        read, write = ("acc[at]", "acc[at] = {};") if once else (load(xt, "o[at]"), f"o[at] = {store(xt, '{}')};")
        reset = "" if include_self or identity is None else f"""
        for (int64_t t = 0; t < len; ++t) {{
            const int64_t v = (int64_t)idx[bi + t * is[dim]];
            if (v >= 0 && v < size) {{ const int64_t at = bo + v * step; {write.format(identity)} }}
        }}"""
        accumulate = "" if not once else f"""
    std::vector<ct_t> acc(n);
    for (int64_t i = 0; i < n; ++i) acc[i] = {load(xt, "o[i]")};"""
        settle = "" if not once else f"""
    for (int64_t i = 0; i < n; ++i) o[i] = {store(xt, "acc[i]")};"""
        divide = "" if not mean else f"""
    {_parallel(params)}
    for (int64_t i = 0; i < n; ++i) {{
        const int64_t c = count[i] + {int(include_self)};
        o[i] = {store(xt, f"{load(xt, 'o[i]')} / (ct_t)(c > 0 ? c : 1)")};
    }}"""
        return f"""    if (n_in != {n_in} || n_out != 1) return 1;
{_dtype_checks(dtypes, [xt])}
{_copy_input(xt, params)}
    const kv_tensor* X = &in[0];
    const kv_tensor* I = &in[1];
    {geometry}
    const int64_t* P = (const int64_t*)in[n_in - 1].data;
    if (kv_numel(I) == 0) return 0;
    const int64_t nd = X->ndim, dim = P[0], from_src = P[1];
    if (I->ndim != nd || S->ndim != nd || dim < 0 || dim >= nd) return 2;
    int64_t dom[8], is[8], ss[8];
    for (int64_t d = 0; d < nd; ++d) {{
        dom[d] = from_src ? S->shape[d] : I->shape[d];
        if (I->shape[d] != dom[d] && I->shape[d] != 1) return 2;
        if (S->shape[d] < dom[d] || (d != dim && X->shape[d] < dom[d])) return 2;
        is[d] = I->shape[d] == 1 ? 0 : I->strides[d];
        ss[d] = S->strides[d];
    }}
    const int64_t len = dom[dim], size = X->shape[dim], step = X->strides[dim];
    int64_t columns = 1;
    for (int64_t d = 0; d < nd; ++d) if (d != dim) columns *= dom[d];
{_pointer("idx", 1, it)}
{source}{accumulate}
    std::vector<int64_t> count({"n" if mean else "0"}, 0);
    int bad = 0;
    {_parallel(params, "reduction(|:bad)")}
    for (int64_t q = 0; q < columns; ++q) {{
        int64_t rest = q, bi = 0, bs = 0, bo = 0;
        for (int64_t d = nd - 1; d >= 0; --d) {{
            if (d == dim) continue;
            const int64_t c = rest % dom[d];
            rest /= dom[d];
            bi += c * is[d];
            bs += c * ss[d];
            bo += c * X->strides[d];
        }}
        (void)bs;{reset}
        for (int64_t t = 0; t < len; ++t) {{
            const int64_t target = (int64_t)idx[bi + t * is[dim]];
            if (target < 0 || target >= size) {{
                bad = 1;
                continue;
            }}
            const int64_t at = bo + target * step;
            {value}
            const ct_t cur = {read};
            (void)cur;
            {write.format(combine)}{" count[at] += 1;" if mean else ""}
        }}
    }}{settle}{divide}
    return bad ? 2 : 0;"""


class CppAtenIndexPut(_IndexRecipe):
    """out = x, then out[indices] = values (or += with accumulate), values broadcast to the indexed shape; the
    indexed positions in ATen's order (row-major over the broadcast indices, or over the mask's true elements)."""

    name = "cpp.aten_index_put"
    layout = "index_put"

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        xt, index_types = dtypes[0], dtypes[1:-1]
        count = len(index_types)
        mask = index_types == ["bool"]
        if "bool" in index_types and not mask:
            raise ValueError("a boolean mask among other indices")
        update = f"{load(xt, 'o[at]')} + {load(xt, 'vals[vo]')}" if k.attrs["accumulate"] else load(xt, "vals[vo]")
        pointers = "\n".join(_pointer(f"idx{j}", 1 + j, t) for j, t in enumerate(index_types))
        walk = self._mask_walk() if mask else self._index_walk(count)
        return f"""    if (n_in != {count + 2} || n_out != 1) return 1;
{_dtype_checks(dtypes, [xt])}
{_copy_input(xt, params)}
    const kv_tensor* X = &in[0];
    const kv_tensor* V = &in[{count + 1}];
    const int64_t nd = X->ndim, lead_dims = {"in[1].ndim" if mask else count};
    if (lead_dims > nd) return 2;
{pointers}
    const {_ctype(xt)}* __restrict vals = (const {_ctype(xt)}*)V->data;
    // the indexed result: the leading shape (broadcast indices, or the mask's count), then x's remaining dims
    int64_t lead[8], lr = 0;
{self._lead_shape(count, mask)}
    const int64_t rr = lr + nd - lead_dims;
    if (rr > 8 || V->ndim > rr) return 2;
    int64_t res[8], vs[8], inner = 1;
    for (int64_t r = 0; r < lr; ++r) res[r] = lead[r];
    for (int64_t d = lead_dims; d < nd; ++d) {{
        res[lr + d - lead_dims] = X->shape[d];
        inner *= X->shape[d];
    }}
    for (int64_t r = 0; r < rr; ++r) {{
        const int64_t j = r - (rr - V->ndim);
        if (j < 0 || V->shape[j] == 1) {{
            vs[r] = 0;
        }} else {{
            if (V->shape[j] != res[r]) return 2;
            vs[r] = V->strides[j];
        }}
    }}
    std::vector<int64_t> inner_offset(inner);  // values offset of each element of the trailing dims
    for (int64_t s = 0; s < inner; ++s) {{
        int64_t rest = s, off = 0;
        for (int64_t r = rr - 1; r >= lr; --r) {{
            off += (rest % res[r]) * vs[r];
            rest /= res[r];
        }}
        inner_offset[s] = off;
    }}
    auto put = [&](int64_t b, int64_t base) {{
        int64_t rest = b, vb = 0;
        for (int64_t r = lr - 1; r >= 0; --r) {{
            vb += (rest % lead[r]) * vs[r];
            rest /= lead[r];
        }}
        for (int64_t s = 0; s < inner; ++s) {{
            const int64_t at = base + s, vo = vb + inner_offset[s];
            o[at] = {store(xt, update)};
        }}
    }};
{walk}
    return 0;"""

    @staticmethod
    def _lead_shape(count: int, mask: bool) -> str:
        if mask:
            return """    for (int64_t d = 0; d < lead_dims; ++d) if (in[1].shape[d] != X->shape[d]) return 2;
    const int64_t positions = kv_numel(&in[1]);
    int64_t selected = 0;
    for (int64_t p = 0; p < positions; ++p) selected += idx0[p] ? 1 : 0;
    lead[0] = selected;
    lr = 1;"""
        lines = [f"    if (in[{1 + j}].ndim > lr) lr = in[{1 + j}].ndim;" for j in range(count)]
        lines.append("    if (lr > 8) return 2;")
        lines.append("    for (int64_t r = 0; r < lr; ++r) lead[r] = 1;")
        lines.append(f"""    int64_t ks[{count}][8];
    for (int64_t j = 0; j < {count}; ++j) {{
        const kv_tensor* T = &in[1 + j];
        for (int64_t r = 0; r < lr; ++r) {{
            const int64_t a = r - (lr - T->ndim);
            const int64_t size = a < 0 ? 1 : T->shape[a];
            if (size != 1 && lead[r] != 1 && lead[r] != size) return 2;
            if (size != 1) lead[r] = size;
            ks[j][r] = (a < 0 || size == 1) ? 0 : T->strides[a];
        }}
    }}""")
        return "\n".join(lines)

    @staticmethod
    def _mask_walk() -> str:
        return """    for (int64_t p = 0, b = 0; p < positions; ++p) {
        if (idx0[p]) put(b++, p * inner);
    }"""

    @staticmethod
    def _index_walk(count: int) -> str:
        reads = "\n".join(f"""            {{
                int64_t v = (int64_t)idx{j}[off[{j}]];
                if (v < 0) v += X->shape[{j}];
                if (v < 0 || v >= X->shape[{j}]) return 2;
                base += v * X->strides[{j}];
            }}""" for j in range(count))
        return f"""    int64_t positions = 1;
    for (int64_t r = 0; r < lr; ++r) positions *= lead[r];
    if (inner == 0) positions = 0;
    for (int64_t b = 0; b < positions; ++b) {{
        int64_t off[{count}] = {{0}}, rest = b, base = 0;
        for (int64_t r = lr - 1; r >= 0; --r) {{
            const int64_t c = rest % lead[r];
            rest /= lead[r];
            for (int64_t j = 0; j < {count}; ++j) off[j] += c * ks[j][r];
        }}
{reads}
        put(b, base);
    }}"""


class CppAtenEmbeddingBag(_IndexRecipe):
    """out[b] = reduce over the bag's indices j (padding_idx skipped) of weight[indices[j]] (times the per-sample
    weight), each row first renormalised to max_norm when its norm exceeds it."""

    name = "cpp.aten_embedding_bag"
    layout = "embedding_bag"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        # the sum's dim tile, accumulated in registers as the catalog's embedding_bag does (a wider row than the
        # tile runs in several passes; a narrower one element by element)
        return ScheduleSpace([threads_param(facts), Param("dim_tile", (16, 32, 64, 128), {d.COMPUTE_BOUND: +1,
                                                                                         d.SPILL_BOUND: -1},
                                                         default=64)])

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        a = k.attrs
        wt, it = dtypes[0], dtypes[1]
        slot = 2
        offsets = weights = ""
        if a["offsets"]:
            offsets, slot = _pointer("off", slot, dtypes[slot]), slot + 1
        if a["weights"]:
            weights, slot = _pointer("psw", slot, dtypes[slot]), slot + 1
        bounds = """            start = (int64_t)off[b];
            end = (include_last || b + 1 < n_off) ? (int64_t)off[b + 1] : N;""" if a["offsets"] else """\
            start = b * length;
            end = start + length;"""
        if a["mode"] == "sum" and not a["weights"] and a["max_norm"] is None:
            loop = self._tiled_sum(wt, bounds, params)
        else:
            loop = self._rowwise(a, dtypes, slot, bounds)
        return f"""    if (n_in != {slot + 1} || n_out != 1) return 1;
{_dtype_checks(dtypes, [wt])}
    const kv_tensor* W = &in[0];
    const int64_t* P = (const int64_t*)in[{slot}].data;
    if (W->ndim != 2) return 2;
    const int64_t rows = W->shape[0], D = W->shape[1], N = kv_numel(&in[1]);
    const int64_t length = P[1], pad = P[2], include_last = P[3];
    const int64_t dim = D, nnz = N;  // the names the tiled loop reads
    (void)length;
    (void)include_last;
    (void)dim;
    (void)nnz;
{_pointer("w", 0, wt)}
{_pointer("idx", 1, it)}
{offsets}
{weights}
    {"const int64_t n_off = kv_numel(&in[2]);" if a["offsets"] else ""}
    const int64_t bags = {"include_last ? n_off - 1 : n_off" if a["offsets"] else "P[0]"};
    if (bags < 0 || kv_numel(&out[0]) != bags * D) return 2;
    {_ctype(wt)}* __restrict o = ({_ctype(wt)}*)out[0].data;
    int bad = 0;
    {parallel_loop(params["threads"], loop, "N * D", clauses="reduction(|:bad)")}
    return bad ? 2 : 0;"""

    @staticmethod
    def _tiled_sum(wt: str, bounds: str, params: dict) -> str:
        """Plain sum pooling (what an nn.EmbeddingBag of an ads model runs): the catalog's register-tiled loop."""
        return bag_sum_loop(params["dim_tile"], 16, f"""int64_t start, end;
{bounds}
        const int64_t s = std::max<int64_t>(start, 0), e = std::min<int64_t>(end, nnz);""",
                            _ctype(wt), lambda x: load(wt, x), lambda x: store(wt, x),
                            row_checks="if (r == pad) continue;\n                    "
                                       "if (r < 0 || r >= rows) { bad = 1; continue; }")

    def _rowwise(self, a: dict[str, Any], dtypes: list[str], slot: int, bounds: str) -> str:
        """Every other mode: a row at a time into a per-thread accumulator (max, mean, per-sample weights,
        max_norm)."""
        wt = dtypes[0]
        return f"""for (int64_t b = 0; b < bags; ++b) {{
        constexpr int64_t KV_AHEAD = 16;
        static thread_local std::vector<ct_t> acc;  // one per thread, not an allocation per bag
        acc.assign(D, (ct_t)0);
        int64_t start, end, used = 0;
{bounds}
        end = std::min<int64_t>(end, N);
        for (int64_t j = std::max<int64_t>(start, 0); j < end; ++j) {{
            if (j + KV_AHEAD < N) {{  // rows are random reads: ask for one a few lookups ahead, line by line
                const int64_t ahead = (int64_t)idx[j + KV_AHEAD];
                if (ahead >= 0 && ahead < rows)
                    for (int64_t d = 0; d < D; d += 64 / (int64_t)sizeof(*w)) __builtin_prefetch(w + ahead * D + d);
            }}
            const int64_t row = (int64_t)idx[j];
            if (row == pad) continue;
            if (row < 0 || row >= rows) {{
                bad = 1;
                continue;
            }}
            const {_ctype(wt)}* __restrict wr = w + row * D;
{self._renorm(a, wt)}
            {f"const ct_t sw = {load(dtypes[slot - 1], 'psw[j]')};" if a["weights"] else ""}
            for (int64_t d = 0; d < D; ++d) {{
                ct_t v = {load(wt, "wr[d]")};
                if (renorm) v = {load(wt, store(wt, "v * scale"))};
                {self._accumulate(a["mode"], a["weights"])}
            }}
            ++used;
        }}
        {"if (used > 0) for (int64_t d = 0; d < D; ++d) acc[d] /= (ct_t)used;" if a["mode"] == "mean" else ""}
        for (int64_t d = 0; d < D; ++d) o[b * D + d] = {store(wt, "acc[d]")};
    }}"""

    @staticmethod
    def _accumulate(mode: str, weighted: bool) -> str:
        if mode == "max":  # ATen: the first row of the bag, then a strictly greater value (NaN stays if first)
            return "if (used == 0 || v > acc[d]) acc[d] = v;"
        return "acc[d] += v * sw;" if weighted else "acc[d] += v;"

    @staticmethod
    def _renorm(a: dict[str, Any], wt: str) -> str:
        """The row's norm (accumulated in double, rounded to float as ATen's row.norm()), and the scale
        embedding_renorm_ would multiply the row by."""
        if a["max_norm"] is None:
            return "            const bool renorm = false;\n            const ct_t scale = 1;"
        p = a["norm_type"]
        if p == 2.0:
            term, finish = "a * a", "std::sqrt(sum)"
        elif p == 1.0:
            term, finish = "a", "sum"
        elif math.isinf(p):
            term, finish = None, "sum"
        elif p == 0.0:
            term, finish = "(a != 0 ? 1.0 : 0.0)", "sum"
        else:
            term, finish = f"std::pow(a, {p!r})", f"std::pow(sum, {1.0 / p!r})"
        step = "sum = (a > sum || a != a) ? a : sum;" if term is None else f"sum += {term};"
        return f"""            double sum = 0;
            for (int64_t d = 0; d < D; ++d) {{
                const double a = std::fabs((double){load(wt, "wr[d]")});
                {step}
            }}
            const double norm = (double)(float)({finish});
            const bool renorm = norm > {a["max_norm"]!r};
            const ct_t scale = renorm ? (ct_t)({a["max_norm"]!r} / (norm + 1e-7)) : (ct_t)1;"""


class CppAtenSearch(_IndexRecipe):
    """ATen's cus_lower_bound / cus_upper_bound per value, over its row of the sorted sequence (one row shared by
    every value when the sequence is 1-D), through the sorter when one is given."""

    name = "cpp.aten_search"
    layout = "search"

    def body(self, k: Any, dtypes: list[str], params: dict) -> str:
        st = dtypes[0]
        constant = "values" in k.attrs  # searchsorted(sequence, number): one value, compiled in
        sorter = len(dtypes) == (3 if constant else 4)
        at = "seq[sorter[mid] + first]" if sorter else "seq[mid]"
        if constant:
            values = f"""    if (!one_row) return 2;
    const ct_t constant_value = {_literal(k.attrs['values'])};
    const int64_t M = 1;"""
            value = "constant_value"
        else:
            values = f"""{_pointer("val", 1, dtypes[1])}
    const kv_tensor* V = &in[1];
    if (n != kv_numel(V)) return 2;
    const int64_t M = V->ndim ? V->shape[V->ndim - 1] : 1;
    if (!one_row) {{
        if (V->ndim != S->ndim) return 2;
        for (int64_t d = 0; d + 1 < S->ndim; ++d) if (V->shape[d] != S->shape[d]) return 2;
    }}"""
            value = load(dtypes[1], "val[i]")
        return f"""    if (n_in != {len(dtypes)} || n_out != 1) return 1;
{_dtype_checks(dtypes)}
    if (out[0].dtype != KV_INT64 && out[0].dtype != KV_INT32) return 3;
    const kv_tensor* S = &in[0];
    const int64_t n = kv_numel(&out[0]);
    if (n == 0) return 0;
    const int64_t* P = (const int64_t*)in[n_in - 1].data;
    const bool right = P[0] != 0, one_row = S->ndim <= 1;
    const int64_t K = S->ndim ? S->shape[S->ndim - 1] : 1;
{values}
{_pointer("seq", 0, st)}
{_pointer("sorter", len(dtypes) - 2, "int64") if sorter else ""}
    int64_t* __restrict o64 = (int64_t*)out[0].data;
    int32_t* __restrict o32 = (int32_t*)out[0].data;
    const bool int32_out = out[0].dtype == KV_INT32;
    int bad = 0;
    {_parallel(params, "reduction(|:bad)")}
    for (int64_t i = 0; i < n; ++i) {{
        const int64_t first = one_row ? 0 : (i / M) * K;
        int64_t lo = first, hi = first + K;
        const ct_t value = {value};
        while (lo < hi) {{
            const int64_t mid = lo + ((hi - lo) >> 1);
            {"if (sorter[mid] < 0 || sorter[mid] >= K) { bad = 1; break; }" if sorter else ""}
            const ct_t m = {load(st, at)};
            if (right ? !(m > value) : !(m >= value)) lo = mid + 1;
            else hi = mid;
        }}
        if (int32_out) o32[i] = (int32_t)(lo - first);
        else o64[i] = lo - first;
    }}
    return bad ? 2 : 0;"""


RECIPES = [CppAtenGather(), CppAtenScatter(), CppAtenIndexPut(), CppAtenEmbeddingBag(), CppAtenSearch()]
