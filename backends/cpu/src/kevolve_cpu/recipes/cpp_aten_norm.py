"""ATen conformance kernels in C++ for normalisations and losses (the ``softmax``, ``norm``, ``loss`` and
``cross_entropy`` layouts of core's conformance table, :mod:`kevolve.conformance.ops.norm`).

Every kernel reads its geometry (sizes and the integer constants that vary between samples) from its last input,
an int64 tensor, so one compiled kernel serves every sample with the same dtypes and float attributes. Values are
read and written through :func:`~kevolve_cpu.recipes.cpp_aten.load` / :func:`~kevolve_cpu.recipes.cpp_aten.store`
and computed in double: the statistics and reductions then stay well inside the float32 tolerance, and IEEE
arithmetic carries NaN and infinities the way ATen's float formulas do (the formulas follow ATen's CPU kernels).
"""

from __future__ import annotations

from typing import Any

from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_cpu.recipes.cpp_aten import C_TYPES, load, store
from kevolve_cpu.recipes.cpp_common import parallel_for, threads_param

#: C helpers every kernel of this module may use: NaN-propagating max/min (as ATen's reductions)
_HELPERS = """static inline double kv_nanmax(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
static inline double kv_nanmin(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }"""


def _literal(value: float) -> str:
    """A double literal (attributes baked into the kernel)."""
    return repr(float(value))


def _reduce_pragma(threads: int, sums: str) -> str:
    """A parallel loop that sums ``sums`` over its iterations (none for one thread)."""
    return "" if threads <= 1 else f"#pragma omp parallel for num_threads({threads}) reduction(+:{sums})"


class _AtenRecipe(Recipe):
    """What the four kernel kinds share: the family, the layout they own, the thread knob and the file around the
    body (ABI checks for counts and dtypes, typed pointers, the geometry pointer ``g``)."""

    language = "cpp"
    families = ("aten_pointwise",)
    layout = ""

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, (self.layout,))
        return kernel is not None and len(kernel.inputs) >= 2 and kernel.inputs[-1][1] == "int64" \
            and kernel.all_dtypes_in(C_TYPES)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([threads_param(facts)])

    def body(self, kernel: Any, threads: int) -> str:
        raise NotImplementedError

    def render(self, problem: Problem, params: dict) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        checks = [f"    if (n_in != {len(k.inputs)} || n_out != {len(k.outputs)}) return 1;"]
        checks += [f"    if (in[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, (_, d) in enumerate(k.inputs)]
        checks += [f"    if (out[{i}].dtype != {C_TYPES[d][1]}) return 3;" for i, d in enumerate(k.outputs)]
        pointers = [f"    const {C_TYPES[d][0]}* __restrict p{i} = (const {C_TYPES[d][0]}*)in[{i}].data;"
                    for i, (_, d) in enumerate(k.inputs[:-1])]
        pointers.append(f"    const int64_t* __restrict g = (const int64_t*)in[{len(k.inputs) - 1}].data;")
        pointers.append(f"    {C_TYPES[k.outputs[0]][0]}* __restrict o = ({C_TYPES[k.outputs[0]][0]}*)out[0].data;")
        params_text = ", ".join(f"{key}={val}" for key, val in params.items())
        return f"""// kevolve generated kernel: {k.describe()}
// parameters: {params_text}
#include "kevolve_kernel.h"
#include <algorithm>
#include <cmath>
#include <cstdint>

{_HELPERS}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {{
{chr(10).join(checks)}
{chr(10).join(pointers)}
{self.body(k, params["threads"])}
    return 0;
}}
"""


def _in(kernel: Any, i: int, index: str) -> str:
    """Input ``i``'s element at ``index``, as double."""
    return f"(double){load(kernel.inputs[i][1], f'p{i}[{index}]')}"


def _out(kernel: Any, value: str) -> str:
    return store(kernel.outputs[0], value)


class CppAtenSoftmax(_AtenRecipe):
    """One lane along a dim (geometry: outer, length, inner): softmax, log_softmax, softmin (softmax of -x) and
    normalize (x over its p-norm, clamped below by eps)."""

    name = "cpp.aten_softmax"
    layout = "softmax"

    def body(self, k: Any, threads: int) -> str:
        x = _in(k, 0, "base + j * inner")
        lane = self.normalize(k, x) if k.op == "nn.functional.normalize" else self.softmax(k, x)
        return f"""    const int64_t outer = g[0], len = g[1], inner = g[2];
    if (kv_numel(&in[0]) != outer * len * inner || kv_numel(&out[0]) != outer * len * inner) return 2;
    {parallel_for(threads)}
    for (int64_t lane = 0; lane < outer * inner; ++lane) {{
        const int64_t base = (lane / inner) * len * inner + lane % inner;
{lane}
    }}"""

    @staticmethod
    def softmax(k: Any, x: str) -> str:
        """ATen: max (NaN-propagating), sum of exp(x - max), then exp(x - max) / sum or x - max - log(sum)."""
        v = f"(-{x})" if k.op == "nn.functional.softmin" else x
        value = "v - m - std::log(s)" if k.op == "log_softmax" else "std::exp(v - m) / s"
        return f"""        double m = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < len; ++j) m = kv_nanmax(m, {v});
        for (int64_t j = 0; j < len; ++j) s += std::exp({v} - m);
        for (int64_t j = 0; j < len; ++j) {{
            const double v = {v};
            o[base + j * inner] = {_out(k, value)};
        }}"""

    @staticmethod
    def normalize(k: Any, x: str) -> str:
        """ATen's vector norm by p (0: count of non-zeros, +-inf: max/min of |x|, else the p-th root of the sum of
        |x|^p), clamp_min(eps) keeping NaN, then x / norm."""
        p = float(k.attrs["p"])
        init, step = "0.0", f"acc += std::pow(a, {_literal(p)});"
        final = f"std::pow(acc, {_literal(1.0 / p)})" if p else "acc"
        if p == 0:
            step, final = "acc += (a != 0.0) ? 1.0 : 0.0;", "acc"
        elif p == 1:
            step, final = "acc += a;", "acc"
        elif p == 2:
            step, final = "acc += a * a;", "std::sqrt(acc)"
        elif p == float("inf"):
            step, final = "acc = kv_nanmax(acc, a);", "acc"
        elif p == float("-inf"):
            init, step, final = "INFINITY", "acc = kv_nanmin(acc, a);", "acc"
        eps = _literal(k.attrs["eps"])
        return f"""        double acc = {init};
        for (int64_t j = 0; j < len; ++j) {{ const double a = std::fabs({x}); {step} }}
        const double norm = {final};
        const double denom = norm != norm ? norm : std::max(norm, {eps});
        for (int64_t j = 0; j < len; ++j) o[base + j * inner] = {_out(k, f"{x} / denom")};"""


class CppAtenNorm(_AtenRecipe):
    """Statistics over groups of elements, then ``x * alpha + beta`` per channel (geometry: batch N, channels C,
    spatial S, groups G of an (N, C, S) view). layer/rms/group norm: groups of C/G channels of one sample (layer
    norm: C is the normalised row, S 1); batch norm: one channel over the batch, or the running statistics."""

    name = "cpp.aten_norm"
    layout = "norm"

    def body(self, k: Any, threads: int) -> str:
        a = k.attrs
        names = ["x", *(["rm", "rv"] if a["norm"] == "batch" and not a["training"] else []),
                 *(["w"] if a["weight"] else []), *(["b"] if a["bias"] else [])]
        slot = {name: i for i, name in enumerate(names)}
        w = _in(k, slot["w"], "c") if "w" in slot else "1.0"
        b = _in(k, slot["b"], "c") if "b" in slot else "0.0"
        sizes = "\n".join(f"    if (kv_numel(&in[{slot[n]}]) != C) return 2;" for n in names[1:])
        stats = self.batch(k, slot, w, b, threads) if a["norm"] == "batch" else self.groups(k, w, b, threads)
        return f"""    const int64_t N = g[0], C = g[1], S = g[2], G = g[3];
    if (kv_numel(&in[0]) != N * C * S || kv_numel(&out[0]) != N * C * S || G <= 0 || C % G != 0) return 2;
    if (N * C * S == 0) return 0;
{sizes}
    const double eps = {_literal(a["eps"])};
{stats}"""

    @staticmethod
    def groups(k: Any, w: str, b: str, threads: int) -> str:
        """layer/group norm: mean and biased variance, rstd = 1 / sqrt(max(var, 0) + eps); rms norm: x * rsqrt of
        the mean square + eps, times the weight."""
        x = _in(k, 0, "base + j")
        if k.attrs["norm"] == "rms":
            stats = f"""        double sq = 0.0;
        for (int64_t j = 0; j < L; ++j) {{ const double v = {x}; sq += v * v; }}
        const double rstd = 1.0 / std::sqrt(sq / (double)L + eps);"""
            value = f"{x} * rstd * {w}" + (f" + {b}" if k.attrs["bias"] else "")
            affine = ""
        else:
            stats = f"""        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < L; ++j) sum += {x};
        const double mean = sum / (double)L;
        for (int64_t j = 0; j < L; ++j) {{ const double d = {x} - mean; sq += d * d; }}
        const double var = sq / (double)L;
        const double rstd = 1.0 / std::sqrt((var != var ? var : std::max(var, 0.0)) + eps);"""
            affine = f"const double alpha = rstd * {w}, beta = {b} - mean * alpha;"
            value = f"{x} * alpha + beta"
        return f"""    const int64_t CG = C / G, L = CG * S;
    {parallel_for(threads)}
    for (int64_t r = 0; r < N * G; ++r) {{
        const int64_t base = r * L, c0 = (r % G) * CG;
{stats}
        for (int64_t j = 0; j < L; ++j) {{
            const int64_t c = c0 + j / S;
            {affine}
            o[base + j] = {_out(k, value)};
        }}
    }}"""

    @staticmethod
    def batch(k: Any, slot: dict[str, int], w: str, b: str, threads: int) -> str:
        """Per channel over (N, S): the batch's mean and biased variance (invstd 0 where both var and eps are 0,
        as ATen's InvStd) in training mode, the running ones in eval mode; then ATen's alpha = invstd * w,
        beta = b - mean * alpha."""
        x = _in(k, 0, "(n * C + c) * S + s")
        if k.attrs["training"]:
            stats = f"""        double sum = 0.0, sq = 0.0;
        for (int64_t n = 0; n < N; ++n) for (int64_t s = 0; s < S; ++s) sum += {x};
        const double mean = sum / (double)(N * S);
        for (int64_t n = 0; n < N; ++n) for (int64_t s = 0; s < S; ++s) {{ const double d = {x} - mean; sq += d * d; }}
        const double var = sq / (double)(N * S);
        const double invstd = (var == 0.0 && eps == 0.0) ? 0.0 : 1.0 / std::sqrt(var + eps);"""
        else:
            stats = f"""        const double mean = {_in(k, slot["rm"], "c")};
        const double invstd = 1.0 / std::sqrt({_in(k, slot["rv"], "c")} + eps);"""
        return f"""    {parallel_for(threads)}
    for (int64_t c = 0; c < C; ++c) {{
{stats}
        const double alpha = invstd * {w}, beta = {b} - mean * alpha;
        for (int64_t n = 0; n < N; ++n)
            for (int64_t s = 0; s < S; ++s) o[(n * C + c) * S + s] = {_out(k, f"{x} * alpha + beta")};
    }}"""


class CppAtenLoss(_AtenRecipe):
    """An elementwise loss over operands broadcast to their common shape (each viewed at one rank by the host),
    times the optional weight, then reduced by the code in the geometry (0 none, 1 mean, 2 sum). Weighted mse's
    mean divides by the sum of the weights, as torch.nn.functional.mse_loss."""

    name = "cpp.aten_loss"
    layout = "loss"

    @staticmethod
    def element(k: Any, slot: dict[str, int]) -> str:
        """The loss of one element from ``a`` (input) and ``t`` (target), ATen's CPU formula."""
        if k.op == "nn.functional.mse_loss":
            return "(a - t) * (a - t)"
        if k.op == "nn.functional.smooth_l1_loss":
            beta = float(k.attrs["beta"])
            if beta == 0:
                return "std::fabs(a - t)"
            return (f"(std::fabs(a - t) < {_literal(beta)} ? 0.5 * (a - t) * (a - t) / {_literal(beta)} "
                    f": std::fabs(a - t) - {_literal(0.5 * beta)})")
        if k.op == "nn.functional.binary_cross_entropy_with_logits":
            # ATen's composite: each tensor op rounds to the storage type (R), which matters where (1 - t) * a
            # and the log-sigmoid term cancel
            ls = "R(std::min(a, 0.0) - std::log1p(std::exp(-std::fabs(a))))"
            lw = "R(R(R(pw - 1.0) * t) + 1.0)" if "pw" in slot else ""
            return f"R(R(R(1.0 - t) * a) - {f'R({lw} * {ls})' if lw else ls})"
        raise ValueError(f"no loss formula for {k.op}")

    def body(self, k: Any, threads: int) -> str:
        names = ["a", "t", *(["w"] if k.attrs.get("weight") else []), *(["pw"] if k.attrs.get("pos_weight") else [])]
        slot = {name: i for i, name in enumerate(names)}
        count = len(names)
        shape = "\n".join(f"""        if (in[{i}].ndim != nd) return 2;
        if (in[{i}].shape[d] != 1) {{ if (full[d] != 1 && full[d] != in[{i}].shape[d]) return 2; full[d] = in[{i}].shape[d]; }}"""
                          for i in range(count))
        strides = "\n".join(f"        st[{i}][d] = in[{i}].shape[d] == 1 ? 0 : in[{i}].strides[d];" for i in range(count))
        loads = " ".join(f"const double {name} = {_in(k, i, f'off[{i}]')};" for name, i in slot.items())
        loss = f"R({self.element(k, slot)} * w)" if "w" in slot else self.element(k, slot)
        weights = "w" if "w" in slot and k.op == "nn.functional.mse_loss" else "1.0"
        return f"""    // R: a value rounded to the storage type, as each step of the reference leaves it
    auto R = [](double v) {{ return (double){load(k.outputs[0], store(k.outputs[0], "v"))}; }};
    const int64_t code = g[0], nd = in[0].ndim;
    if (nd > 8) return 2;
    int64_t full[8], st[{count}][8], n = 1;
    for (int64_t d = 0; d < nd; ++d) {{
        full[d] = 1;
{shape}
        n *= full[d];
    }}
    for (int64_t d = 0; d < nd; ++d) {{
{strides}
    }}
    if (kv_numel(&out[0]) != (code == 0 ? n : 1)) return 2;
    double total = 0.0, weights = 0.0;
    {_reduce_pragma(threads, "total, weights")}
    for (int64_t i = 0; i < n; ++i) {{
        int64_t rest = i, off[{count}] = {{0}};
        for (int64_t d = nd - 1; d >= 0; --d) {{
            const int64_t c = rest % full[d];
            rest /= full[d];
            for (int64_t k = 0; k < {count}; ++k) off[k] += c * st[k][d];
        }}
        {loads}
        const double l = {loss};
        if (code == 0) o[i] = {_out(k, "l")};
        else {{ total += l; weights += {weights}; }}
    }}
    if (code == 1) o[0] = {_out(k, "total / " + ("weights" if weights != "1.0" else "(double)n"))};
    if (code == 2) o[0] = {_out(k, "total")};"""


class CppAtenCrossEntropy(_AtenRecipe):
    """Log-softmax over the class dim (geometry: batch N, classes C, positions D, reduction code, ignore_index),
    then ATen's cross entropy: nll with class weights (ignored targets count 0 and leave the mean's weight sum),
    label smoothing blended in, or probability targets (smoothed towards uniform)."""

    name = "cpp.aten_cross_entropy"
    layout = "cross_entropy"

    def body(self, k: Any, threads: int) -> str:
        ls = float(k.attrs["label_smoothing"])
        weighted = bool(k.attrs["weight"])
        wc = _in(k, 2, "c") if weighted else "1.0"
        logp = f"({_in(k, 0, 'base + c * D')} - m - lse)"
        if k.inputs[1][1] == "int64":
            per_row, final = self.indices(k, ls, weighted, logp, wc)
        else:
            per_row, final = self.probabilities(k, ls, logp, wc)
        weight_check = "    if (kv_numel(&in[2]) != C) return 2;" if weighted else ""
        return f"""    const int64_t N = g[0], C = g[1], D = g[2], code = g[3], ignore = g[4], M = N * D;
    if (kv_numel(&in[0]) != N * C * D || kv_numel(&out[0]) != (code == 0 ? M : 1)) return 2;
{weight_check}
    double total = 0.0, weights = 0.0, smooth_total = 0.0;
    int64_t bad = 0;
    {_reduce_pragma(threads, "total, weights, smooth_total, bad")}
    for (int64_t r = 0; r < M; ++r) {{
        const int64_t base = (r / D) * C * D + r % D;
        double m = -INFINITY, s = 0.0;
        for (int64_t c = 0; c < C; ++c) m = kv_nanmax(m, {_in(k, 0, 'base + c * D')});
        for (int64_t c = 0; c < C; ++c) s += std::exp({_in(k, 0, 'base + c * D')} - m);
        const double lse = std::log(s);
{per_row}
    }}
    if (bad) return 2;
{final}"""

    @staticmethod
    def indices(k: Any, ls: float, weighted: bool, logp: str, wc: str) -> tuple[str, str]:
        """Class-index targets: -w[t] * logp[t]; with label smoothing also -sum_c w[c] * logp[c], blended as
        (1 - ls) * nll + ls / C * smooth (each reduced on its own, the mean over the targets' weights)."""
        smooth = f"""                for (int64_t c = 0; c < C; ++c) smooth -= {logp} * {wc};""" if ls > 0 else ""
        w_t = _in(k, 2, "t") if weighted else "1.0"
        row = f"""        const int64_t t = p1[r];
        double nll = 0.0, smooth = 0.0, wt = 0.0;
        if (t != ignore) {{
            if (t < 0 || t >= C) {{ bad += 1; continue; }}
            {{
                const int64_t c = t;
                wt = {w_t};
                nll = -wt * {logp};
            }}
{smooth}
        }}
        total += nll; weights += wt; smooth_total += smooth;
        if (code == 0) o[r] = {_out(k, f"(1.0 - {_literal(ls)}) * nll + smooth * {_literal(ls)} / (double)C"
                                     if ls > 0 else "nll")};"""
        blend = (f"(1.0 - {_literal(ls)}) * {{nll}} + {{smooth}} * {_literal(ls)} / (double)C" if ls > 0
                 else "{nll}")
        final = f"""    if (code == 1) o[0] = {_out(k, blend.format(nll="(total / weights)", smooth="(smooth_total / weights)"))};
    if (code == 2) o[0] = {_out(k, blend.format(nll="total", smooth="smooth_total"))};"""
        return row, final

    @staticmethod
    def probabilities(k: Any, ls: float, logp: str, wc: str) -> tuple[str, str]:
        """Probability targets: -sum_c logp[c] * t[c] * w[c], t smoothed to t * (1 - ls) + ls / C; the mean
        divides by the number of positions (NaN when there are none, as ATen)."""
        t = _in(k, 1, "base + c * D")
        if ls > 0:
            t = f"({t} * (1.0 - {_literal(ls)}) + {_literal(ls)} / (double)C)"
        row = f"""        double l = 0.0;
        for (int64_t c = 0; c < C; ++c) l -= {logp} * {t} * {wc};
        total += l;
        if (code == 0) o[r] = {_out(k, "l")};"""
        final = f"""    if (code == 1) o[0] = {_out(k, "M == 0 ? NAN : total / (double)M")};
    if (code == 2) o[0] = {_out(k, "total")};"""
        return row, final


RECIPES = [CppAtenSoftmax(), CppAtenNorm(), CppAtenLoss(), CppAtenCrossEntropy()]
