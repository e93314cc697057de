"""ATen conformance kernels in Triton: reductions and scans (:mod:`kevolve.conformance.ops.reduction`).

The same two kernel kinds as the CPU recipe (:mod:`kevolve_cpu.recipes.cpp_aten_reduction`), whose numbers they
mirror; each is one renderer parametrised per op by a small table of Triton statements:

- ``reduce``: the input is (outer, R) (the host moved the reduced dimensions last), or, in a program that reads
  it in place (:attr:`TritonAtenReduce.reads_in_place`), a strided view (A, R, I) of the unmoved tensor whose
  output ``a * I + i`` reduces the line ``x[a, :, i]``. A program takes ``BLOCK_M`` rows (outputs neighbouring
  in memory: along I, or along A where I is 1) of one group and walks them in ``[BLOCK_M, BLOCK_N]`` tiles, each
  lane keeping its own accumulator, then combines the lanes of every row (``tl.sum`` or ``tl.reduce`` with a
  combine function of this module). A reduction over a leading dimension thus reads rows side by side, as
  contiguous as the tensor is, and no transposed copy is made.
- ``scan``: the input is (outer, L, inner). A program takes one outer index and ``BLOCK_I`` neighbouring lines,
  walks L in ``[BLOCK_L, BLOCK_I]`` tiles, scans each tile along L with ``tl.associative_scan`` and combines it
  with the carry of the tiles before.

Numbers follow ATen's CPU kernels, like the CPU recipe: sums, means, products, variances and the cumulative sum
and product of float32 accumulate in float64, of 16-bit floats in float32 (ATen's CPU ``acc_type``: a cumprod
overflows where ATen's does);
extrema propagate the first NaN and keep the first of equal values (per lane in order, then across lanes by
index); cummax lets a NaN or an equal value take over (the later index wins); logsumexp subtracts the row
maximum unless it is infinite; logcumsumexp combines with ATen's log-add-exp. Transcendental functions run in
float32 (Triton spells them for float32 on every target and in the interpreter). Masked lanes load each op's
identity, or are masked out of the accumulation explicitly where none exists.

The host side (``kernel(inputs, outputs)``) only checks the arguments (counts, dtypes, rank, sizes, dense
outputs; anything else raises a "declined" error, as does an empty row for the ops ATen raises on) and picks the
tile shape from the sizes; it never calls torch.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl
from kevolve import diagnosis as d
from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes import tl_math
from kevolve_triton.recipes.aten_pointwise import TL_STORAGE, compute_type, kernel_expr
from kevolve_triton.recipes.common import header, launch_args, launch_params, pow2_range, triton_literal
from kevolve_triton.recipes.host import DENSE, DTYPE_NAME, POW2, host_functions
from kevolve_triton.recipes.tl_math import _kv_log1p

#: input dtypes these kernels are written for (integer inputs are the CPU recipe's only)
FLOAT_INPUTS = ("float32", "bfloat16", "float16", "float64")
#: the reductions that take bool inputs too (a mask's any/all, as decomposed attention asks): they only test
#: elements against zero
TRUTH_OPS = ("all", "any", "count_nonzero")
#: the ops each kernel kind is written for (another table may name a layout "reduce" or "scan" too)
REDUCE_OPS = ("sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "std", "var", "logsumexp",
              "linalg.vector_norm", "all", "any", "count_nonzero")
SCAN_OPS = ("cumsum", "cumprod", "logcumsumexp", "cummax")
#: integer inputs of a cumulative sum (an int64 sum, as ATen's; exact in any order, so a line is scanned in
#: tiles with tl.cumsum rather than element by element)
INT_SCAN_INPUTS = ("int64", "int32")
#: the index of a masked lane for the first-extremum picks: loses every tie to a real element
NO_INDEX = 2 ** 62
NEG_INF, POS_INF = "float('-inf')", "float('inf')"


# --- device functions (copied into the kernel files that call them) -----------------------------------------

@triton.jit
def _kvr_nanmax(a, b):
    """max that propagates NaN on every target (tl.maximum's NaN rule differs between backends), elementwise."""
    return tl.where(a != a, a, tl.where((b > a) | (b != b), b, a))  # noqa: PLR0124


@triton.jit
def _kvr_nanmin(a, b):
    """min that propagates NaN on every target, elementwise."""
    return tl.where(a != a, a, tl.where((b < a) | (b != b), b, a))  # noqa: PLR0124


@triton.jit
def _kvr_first_max(va, ia, vb, ib):
    """The first maximum of two (value, index) candidates, elementwise: a NaN beats any number (the first NaN
    wins), then the greater value, then the smaller index (PyTorch's max/argmax rule)."""
    a_nan = va != va  # noqa: PLR0124
    b_nan = vb != vb  # noqa: PLR0124
    tie = (va == vb) | (a_nan & b_nan)
    take_a = (a_nan & ~b_nan) | (~a_nan & ~b_nan & (va > vb)) | (tie & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _kvr_first_min(va, ia, vb, ib):
    """The first minimum of two (value, index) candidates: as :func:`_kvr_first_max` with the order reversed."""
    a_nan = va != va  # noqa: PLR0124
    b_nan = vb != vb  # noqa: PLR0124
    tie = (va == vb) | (a_nan & b_nan)
    take_a = (a_nan & ~b_nan) | (~a_nan & ~b_nan & (va < vb)) | (tie & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _kvr_log_add_exp(x, y):
    """PyTorch's _log_add_exp_helper: log1p(exp(lo - hi)) + hi, except equal infinities (x itself); NaN from
    either operand."""
    lo = tl.where(x < y, x, y)
    hi = tl.where(x < y, y, x)
    r = tl.where((lo != hi) | (tl.abs(lo) != float("inf")), _kv_log1p(tl.exp(lo - hi)) + hi, x)
    return tl.where((x != x) | (y != y), x + y, r)  # noqa: PLR0124


@triton.jit
def _kvr_round_bf16(x):
    """float32 to bfloat16, rounded to nearest even on the bits (the interpreter's cast truncates where GPUs
    round, so a sum just past bfloat16's largest finite value would stay finite); NaN stays a quiet NaN."""
    bits = x.to(tl.int32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    rounded = tl.where(x != x, 0x7FC0, rounded)  # noqa: PLR0124
    return rounded.to(tl.int16).to(tl.bfloat16, bitcast=True)


# --- what each op computes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    """One walk over a row's tiles: ``init`` before (accumulators of shape [BLOCK_M, BLOCK_N]), ``step`` per
    tile (``v``: the tile in the accumulation type, masked lanes holding ``fill``; ``m``: the mask; ``j``: the
    column index, int64), ``finish`` after (per-row values of shape [BLOCK_M])."""

    init: tuple[str, ...]
    step: tuple[str, ...]
    finish: tuple[str, ...]
    fill: str = "0.0"
    #: the type of ``res`` where ``finish`` sums the lanes into it, so that the ``res`` of a row's pieces add up
    #: to the row's (:func:`_reduce_split_kernels`); "" for any other finish
    additive: str = ""


@dataclass(frozen=True)
class Reduction:
    """A reduction: its passes (a two-pass one, e.g. variance, has a first), the per-row expressions stored into
    each output, the accumulation type (``"wide"``: float64 for floats) and whether ATen raises on an empty
    row (then the kernel declines it)."""

    passes: tuple[Pass, ...]
    results: tuple[str, ...]
    wide: bool = False
    nonempty: bool = False


_TILE = "[BLOCK_M, BLOCK_N]"


def _accumulate(expr: str, fill: str = "0.0", dtype: str = "ACC", finish: str = "tl.sum(acc, axis=1)") -> Pass:
    """acc += expr per lane (masked lanes add nothing), the lanes combined by ``finish`` into ``res``."""
    return Pass((f"acc = tl.zeros({_TILE}, {dtype})",), (f"acc += tl.where(m, {expr}, 0).to({dtype})",),
                (f"res = {finish}",), fill, dtype if finish == "tl.sum(acc, axis=1)" else "")


def _pick(larger: bool, key: str = "v") -> Pass:
    """The first extremum of ``key`` (an expression of the element ``v``) and its index, per row: each lane
    keeps its first extremum, then the row's is found with tl.max/tl.min and tl.sum alone (a custom combine in
    tl.reduce runs element by element in the interpreter): a NaN if any lane has one, else the extreme value;
    the smallest index of the lanes holding it; the value read back from that lane (keeping a zero's sign)."""
    combine = "_kvr_first_max" if larger else "_kvr_first_min"
    worst = NEG_INF if larger else POS_INF
    extreme = "tl.max" if larger else "tl.min"
    return Pass((f"best = tl.full({_TILE}, {worst}, ACC)", f"at = tl.full({_TILE}, {NO_INDEX}, tl.int64)"),
                (f"best, at = {combine}(best, at, tl.where(m, {key}, {worst}), tl.where(m, j, {NO_INDEX}))",),
                ("nan = best != best",
                 "has_nan = tl.sum(nan.to(tl.int32), axis=1) > 0",
                 f"top = {extreme}(tl.where(nan, {worst}, best), axis=1)",
                 "hit = tl.where(has_nan[:, None], nan, best == top[:, None])",
                 f"first = tl.min(tl.where(hit, at, {NO_INDEX}), axis=1)",
                 f"top = {extreme}(tl.where(at == first[:, None], tl.where(nan, {worst}, best), {worst}), axis=1)",
                 "best = tl.where(has_nan, float('nan'), top)",
                 "at = first"))


def _extreme(larger: bool) -> Pass:
    """The extreme value alone, for the reductions that return no index (amax, max without ``dim``): each lane
    keeps its running extremum (a NaN sticks), then the row's is the lanes' (NaN if any lane has one). Keeping
    the first extremum's index as well, as :func:`_pick` does, more than doubles the work per element for an
    index no one reads."""
    combine = "_kvr_nanmax" if larger else "_kvr_nanmin"
    worst = NEG_INF if larger else POS_INF
    extreme = "tl.max" if larger else "tl.min"
    return Pass((f"best = tl.full({_TILE}, {worst}, ACC)",), (f"best = {combine}(best, tl.where(m, v, {worst}))",),
                ("nan = best != best",
                 f"top = {extreme}(tl.where(nan, {worst}, best), axis=1)",
                 "best = tl.where(tl.sum(nan.to(tl.int32), axis=1) > 0, float('nan'), top)"), worst)


def _moment(attrs: dict[str, Any], root: bool) -> Reduction:
    """Variance in two passes (the mean, then squared deviations) over max(0, N - correction); NaN when empty."""
    correction = triton_literal(float(attrs.get("correction", 1.0)))
    mean = Pass(("tot = tl.zeros([BLOCK_M, BLOCK_N], ACC)",), ("tot += v",),
                ("nrow = tl.zeros([BLOCK_M], ACC) + R", "mean = tl.sum(tot, axis=1) / nrow"))
    squares = Pass(("m2 = tl.zeros([BLOCK_M, BLOCK_N], ACC)",),
                   ("dev = tl.where(m, v - mean[:, None], 0.0)", "m2 += dev * dev"),
                   (f"den = nrow - {correction}",
                    "var = tl.where(nrow == 0, float('nan'), tl.sum(m2, axis=1) / tl.where(den > 0, den, 0.0))"))
    return Reduction((mean, squares), ("tl.sqrt(var)" if root else "var",), wide=True)


def _norm(attrs: dict[str, Any]) -> Reduction:
    """linalg.vector_norm by ``ord``: count of non-zeros, first max/min magnitude, or (sum |v|^p)^(1/p), the
    powers of non-negative numbers as exp2(p log2 a) (exact at 0, 1, inf and NaN)."""
    p = float(attrs.get("ord", 2.0))
    if p == 0:
        return Reduction((_accumulate("(v != 0)"),), ("res",))
    if math.isinf(p):
        return Reduction((_pick(p > 0, "tl.abs(v)"),), ("best",), nonempty=True)
    if p == 1:
        return Reduction((_accumulate("tl.abs(v)"),), ("res",))
    if p == 2:
        return Reduction((_accumulate("v * v"),), ("tl.sqrt(res)",))
    power = triton_literal(p)
    return Reduction((_accumulate(f"tl.exp2({power} * tl.log2(tl.abs(v)))"),),
                     (f"tl.exp2(tl.log2(res) * {triton_literal(1.0 / p)})",))


def reduce_body(op: str, attrs: dict[str, Any]) -> Reduction:
    """The per-row computation of the reduction ``op`` (an OpInfo name) with the table's attributes."""
    if op in ("sum", "mean"):
        return Reduction((_accumulate("v"),), ("res" if op == "sum" else "res / R",), wide=True)
    if op == "prod":
        # the lanes multiplied in order, one at a time (a lane picked exactly: -0.0 is the identity of +), not
        # by tl.cumprod: the GPU's scan multiplies in a tree, and where a bfloat16 row's float product
        # overflows, 0 * inf (NaN) or not depends on the order (the interpreter's order is ATen's here)
        return Reduction((Pass((f"acc = tl.full({_TILE}, 1.0, ACC)",), ("acc *= v",),
                               ("res = tl.full([BLOCK_M], 1.0, ACC)",
                                "for lane in range(0, BLOCK_N):",
                                "    res *= tl.sum(tl.where(cols == lane, acc, -0.0), axis=1)"), "1.0"),),
                         ("res",), wide=True)
    if op in ("all", "any"):
        # all: no zero among the elements (NaN is non-zero); any: some non-zero
        wanted = "(v == 0)" if op == "all" else "(v != 0)"
        test = "== 0" if op == "all" else "> 0"
        return Reduction((_accumulate(wanted, dtype="tl.int32"),), (f"res {test}",))
    if op == "count_nonzero":
        return Reduction((_accumulate("(v != 0)", dtype="tl.int64"),), ("res",))
    if op == "logsumexp":
        top = Pass((f"top = tl.full({_TILE}, {NEG_INF}, ACC)",), ("top = _kvr_nanmax(top, v)",),
                   ("nan = top != top",
                    "top = tl.max(tl.where(nan, float('-inf'), top), axis=1)",
                    "top = tl.where(tl.sum(nan.to(tl.int32), axis=1) > 0, float('nan'), top)",
                    "shift = tl.where(tl.abs(top) == float('inf'), 0.0, top)"), NEG_INF)
        exps = _accumulate("tl.exp(v - shift[:, None])")
        return Reduction((top, exps), ("tl.log(res) + shift",))
    if op in ("amax", "amin", "max", "min", "argmax", "argmin"):
        larger = op.endswith("max")
        if not op.startswith("arg") and not attrs.get("indices"):
            return Reduction((_extreme(larger),), ("best",), nonempty=True)
        return Reduction((_pick(larger),), ("at",) if op.startswith("arg") else ("best", "at"), nonempty=True)
    if op in ("std", "var"):
        return _moment(attrs, op == "std")
    if op == "linalg.vector_norm":
        return _norm(attrs)
    raise ValueError(f"no reduction kernel for {op}")


@dataclass(frozen=True)
class Scan:
    """A scan as statements per element of L (``v``: the element, ``jj``: its position, int64), vectorized over
    ``BLOCK_I`` lines: ``init`` before, ``step`` per element, ``results`` stored after each step."""

    init: tuple[str, ...]
    step: tuple[str, ...]
    results: tuple[str, ...]
    wide: bool = False


def scan_body(op: str) -> Scan:
    """The per-line computation of the scan ``op``, in the order ATen's CPU kernel takes (a custom combine in
    tl.associative_scan runs element by element in the interpreter, and the order keeps cumprod's overflows)."""
    scans = {
        "cumsum": Scan(("acc = tl.zeros([BLOCK_I], ACC)",), ("acc += v",), ("acc",), wide=True),
        "cumprod": Scan(("acc = tl.full([BLOCK_I], 1.0, ACC)",), ("acc *= v",), ("acc",), wide=True),
        "logcumsumexp": Scan((f"acc = tl.full([BLOCK_I], {NEG_INF}, ACC)",), ("acc = _kvr_log_add_exp(v, acc)",),
                             ("acc",)),
        # cummax_cummin_helper: a NaN always takes over, ties move the index forward (>=)
        "cummax": Scan(("best = tl.zeros([BLOCK_I], ACC)", "at = tl.zeros([BLOCK_I], tl.int64)"),
                       ("take = (jj == 0) | (v != v) | ((best == best) & (v >= best))",
                        "best = tl.where(take, v, best)", "at = tl.where(take, jj, at)"),
                       ("best", "at")),
    }
    if op not in scans:
        raise ValueError(f"no scan kernel for {op}")
    return scans[op]


# --- kernel text -----------------------------------------------------------------------------------------

def _acc_type(wide: bool, dtypes: tuple[str, ...]) -> str:
    """float64 for the wide ops of float32 inputs and for float64 tensors, float32 otherwise: ATen's CPU
    acc_type is double for float but float for bfloat16 and half (a bfloat16 cumprod overflows at float's
    range, not double's); int64 for integers."""
    if dtypes[0] in INT_SCAN_INPUTS:
        return "tl.int64"
    if "float64" in dtypes or (wide and dtypes[0] not in HALF_FLOATS):
        return "tl.float64"
    return "tl.float32"


def _helpers(text: str) -> str:
    """The source of this module's device functions that ``text`` calls, and of the tl_math ones they or
    ``text`` (a prologue's expression) call."""
    ours = {name: inspect.getsource(obj.fn) for name, obj in globals().items()
            if name.startswith("_kvr_") and callable(getattr(obj, "fn", None))}
    called = set(re.findall(r"\b_kvr_\w+\b", text))
    used = [name for name in ours if name in called]
    body = "".join(ours[name] + "\n\n" for name in used)
    return tl_math.helper_sources(body + text) + body


#: 16-bit floats pass through float32 on their way to and from a float64 accumulator: the interpreter keeps
#: bfloat16 as its bit pattern and converts it to float64 as an integer
HALF_FLOATS = ("bfloat16", "float16")


def _load(pointer: str, mask: str, fill: str, in_dtype: str) -> str:
    """A masked load widened to the accumulation type (ACC), through float32 for 16-bit floats."""
    widen = ".to(tl.float32)" if in_dtype in HALF_FLOATS else ""
    return f"tl.load({pointer}, mask={mask}, other={fill}){widen}.to(ACC)"


def _store(index: int, offsets: str, value: str, out_dtype: str, mask: str) -> str:
    """A masked store of ``value`` in output ``index``'s dtype, through float32 for 16-bit floats (bfloat16
    rounded by :func:`_kvr_round_bf16`)."""
    if out_dtype == "bfloat16":
        value = f"_kvr_round_bf16(({value}).to(tl.float32))"
    elif out_dtype == "float16":
        value = f"({value}).to(tl.float32)"
    return f"tl.store(out{index}_ptr + {offsets}, ({value}).to(out{index}_ptr.dtype.element_ty), mask={mask})"


def _lines(statements: tuple[str, ...], indent: int) -> str:
    return "\n".join(" " * indent + s for s in statements)


#: a program's rows: BLOCK_M outputs of group program_id(1), each a line of R elements; ``out``: their places in
#: the outputs. Input i's lines start ``in{i}_rs`` apart (1 along I: the tile's loads are contiguous down its
#: rows), its groups ``in{i}_gs`` apart, a line's elements ``in{i}_cs`` apart.
_ROWS = """    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    group = tl.program_id(1).to(tl.int64)
    row_ok = rows < n_rows
    out = group * n_rows + rows
{bases}
    cols = tl.arange(0, BLOCK_N).to(tl.int64)[None, :]"""


def element_dtype(k: Any) -> str:
    """The dtype of the values reduced: the input's, or with a prologue (``k.expr`` over the inputs, fused from
    a pointwise producer) the dtype the producer's result had (``attrs["element"]``)."""
    return k.attrs.get("element", k.inputs[0][1]) if k.expr is not None else k.inputs[0][1]


def _rows(k: Any) -> str:
    bases = "\n".join(f"    {n}_base = (group * {n}_gs + rows * {n}_rs)[:, None]" for n, _ in k.inputs)
    return _ROWS.format(bases=bases)


def _signature(k: Any) -> tuple[str, str]:
    """The input pointers, and the sizes and strides that follow the output pointers."""
    names = [name for name, _ in k.inputs]
    strides = ", ".join(f"{n}_rs, {n}_gs, {n}_cs" for n in names)
    return ", ".join(f"{n}_ptr" for n in names), f"n_rows, R, {strides}"


def _element(k: Any, fill: str) -> str:
    """The statements (indented for the tile loop) that set ``v``, the tile's values in ACC with ``fill`` where
    the mask ``m`` is off: a load, or the prologue's loads and expression rounded to the element dtype."""
    at = "{n}_ptr + {n}_base + j * {n}_cs"
    if k.expr is None:
        return "        v = " + _load(at.format(n="in0"), "m", fill, k.inputs[0][1])
    first = k.inputs[0][1]
    ct = compute_type(first)
    value = kernel_expr(k.expr, ct, first)
    element = element_dtype(k)
    if element in HALF_FLOATS:
        value = f"({value}).to({TL_STORAGE[element]}).to(tl.float32)"
    loads = [f"        {n} = tl.load({at.format(n=n)}, mask=m, other=0).to({ct})" for n, _ in k.inputs]
    return "\n".join([*loads, f"        v = tl.where(m, {value}, {fill}).to(ACC)"])


def _reduce_kernel(body: Reduction, k: Any, acc: str) -> str:
    """The @triton.jit reduction: the passes over the row tiles, then one store per output."""
    outs = ", ".join(f"out{i}_ptr" for i in range(len(k.outputs)))
    walks = []
    for walk in body.passes:
        walks.append(f"""{_lines(walk.init, 4)}
    for start in range(0, R, BLOCK_N):
        j = start + cols
        m = row_ok[:, None] & (j < R)
{_element(k, walk.fill)}
{_lines(walk.step, 8)}
{_lines(walk.finish, 4)}""")
    stores = "\n".join("    " + _store(i, "out", r, dt, "row_ok") for i, (r, dt) in enumerate(zip(body.results, k.outputs)))
    pointers, sizes = _signature(k)
    return f"""@triton.jit
def _kv_reduce_kernel({pointers}, {outs}, {sizes}, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
{_rows(k)}
{chr(10).join(walks)}
{stores}""".replace("ACC", acc)


def splits(body: Reduction) -> bool:
    """Whether a row can be reduced in pieces by several programs: one pass whose ``res`` adds up."""
    return len(body.passes) == 1 and bool(body.passes[0].additive)


def _reduce_split_kernels(body: Reduction, k: Any, acc: str) -> str:
    """A row in pieces, for few long rows (one program per row would leave the device idle: a mean over 33.5M
    elements took 15 ms in one program on an H200): each program reduces one piece of a block of rows to its
    ``res``, kept unrounded in the pass's own type in a buffer of 8-byte slots; a second kernel adds each row's
    pieces (in order) and stores the results."""
    walk = body.passes[0]
    outs = ", ".join(f"out{i}_ptr" for i in range(len(k.outputs)))
    stores = "\n".join("    " + _store(i, "rows", r, dt, "row_ok") for i, (r, dt) in enumerate(zip(body.results, k.outputs)))
    pointers, sizes = _signature(k)
    return f"""@triton.jit
def _kv_reduce_piece_kernel({pointers}, part_ptr, {sizes}, piece, pieces, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
{_rows(k)}
    p = tl.program_id(2).to(tl.int64)
    lo = p * piece
    hi = tl.minimum(lo + piece, R)
{_lines(walk.init, 4)}
    for start in range(lo, hi, BLOCK_N):
        j = start + cols
        m = row_ok[:, None] & (j < hi)
{_element(k, walk.fill)}
{_lines(walk.step, 8)}
{_lines(walk.finish, 4)}
    parts = part_ptr.to(tl.pointer_type({walk.additive}))
    tl.store(parts + out * pieces + p, res, mask=row_ok)


@triton.jit
def _kv_reduce_join_kernel(part_ptr, {outs}, outer, R, pieces, BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < outer
    p = tl.arange(0, BLOCK_P).to(tl.int64)[None, :]
    parts = part_ptr.to(tl.pointer_type({walk.additive}))
    res = tl.sum(tl.load(parts + rows[:, None] * pieces + p, mask=row_ok[:, None] & (p < pieces), other=0), axis=1)
{stores}""".replace("ACC", acc)


def _scan_kernel(body: Scan, k: Any, acc: str) -> str:
    """The @triton.jit scan: BLOCK_I neighbouring lines (contiguous in memory) walked along L together."""
    outs = ", ".join(f"out{i}_ptr" for i in range(len(k.outputs)))
    stores = "\n".join("        " + _store(i, "off", r, dt, "m") for i, (r, dt) in enumerate(zip(body.results, k.outputs)))
    return f"""@triton.jit
def _kv_scan_kernel(x_ptr, {outs}, L, inner, n_iblocks, BLOCK_I: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    o = pid // n_iblocks
    i = (pid - o * n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    m = i < inner
    off = o * L * inner + i
    jj = tl.zeros([BLOCK_I], tl.int64)
{_lines(body.init, 4)}
    for _ in range(0, L):
        v = {_load("x_ptr + off", "m", "0.0", k.inputs[0][1])}
{_lines(body.step, 8)}
{stores}
        off += inner
        jj += 1""".replace("ACC", acc)


def _checks(k: Any, layout_wrong: str) -> str:
    """Host checks shared by both launchers: tensor counts, dtypes, dense outputs, and ``layout_wrong``, the
    launcher's own test of the inputs' rank and layout (``x``: the first input)."""
    dtypes = repr(tuple(k.outputs))
    inputs = repr(tuple(d for _, d in k.inputs))
    return f"""    if len(inputs) != {len(k.inputs)} or len(outputs) != {len(k.outputs)}:
        raise RuntimeError("declined: wrong number of tensors")
    x = inputs[0]
    if tuple(_dtype_name(t) for t in inputs) != {inputs} or tuple(_dtype_name(o) for o in outputs) != {dtypes}:
        raise RuntimeError("declined: dtype")
    if {layout_wrong} or not all(_dense(o) for o in outputs):
        raise RuntimeError("declined: shape or layout it was not written for")"""


#: host helpers copied into every kernel file
_HOST = host_functions(DTYPE_NAME, DENSE, POW2)
#: rows reduced in pieces when they keep fewer programs busy than this, each piece at least SPLIT_TILES tiles
#: long, a row in at most MAX_PIECES pieces
SPLIT_ROWS, SPLIT_TILES, MAX_PIECES = 128, 4, 1024


def _reduce_launcher(k: Any, body: Reduction, params: dict[str, Any]) -> str:
    outs = "".join(f", outputs[{i}]" for i in range(len(k.outputs)))
    launch = launch_args(params, contract=False)
    # pieces of at least SPLIT_TILES tiles, at most MAX_PIECES of them, for fewer than SPLIT_ROWS programs of rows;
    # their results in 8-byte slots of a buffer of the first output's dtype (any size divides 8)
    split = f"""    programs = grid[0] * grid[1]
    if programs < {SPLIT_ROWS} and R >= {2 * SPLIT_TILES} * block_n:
        pieces = min(triton.cdiv(R, {SPLIT_TILES} * block_n), max(2, {MAX_PIECES} // programs))
        piece = triton.cdiv(triton.cdiv(R, pieces), block_n) * block_n
        pieces = triton.cdiv(R, piece)
        part = outputs[0].new_empty((outer * pieces * 8 // outputs[0].element_size(),))
        _kv_reduce_piece_kernel[(grid[0], grid[1], pieces)](*inputs, part, *lines, piece, pieces, BLOCK_M=block_m, BLOCK_N=block_n{launch})
        block_p = _pow2(pieces)
        join_m = max(1, {MAX_PIECES} // block_p)
        _kv_reduce_join_kernel[(triton.cdiv(outer, join_m),)](part{outs}, outer, R, pieces, BLOCK_M=join_m, BLOCK_P=block_p{launch})
        return
""" if splits(body) else ""
    empty = ('    if R == 0:\n        raise RuntimeError("declined: an empty reduction (PyTorch raises)")\n'
             if body.nonempty else "")
    # (outer, R) is (A, R, 1); rows run along I where it is longer than 1 (groups: A), else along A (one group)
    return _HOST + f"""def kernel(inputs, outputs):
{_checks(k, "x.dim() not in (2, 3) or any(t.shape != x.shape for t in inputs)")}
    A, R, I = (*x.shape, 1) if x.dim() == 2 else x.shape
    outer = A * I
    if any(o.numel() != outer for o in outputs):
        raise RuntimeError("declined: shape or layout it was not written for")
    if outer == 0:
        return
{empty}    n_rows, groups = (A, 1) if I == 1 else (I, A)
    if groups > 65535:
        raise RuntimeError("declined: more groups of rows than a grid holds")
    lines = [n_rows, R]
    for t in inputs:  # each input's (row, group, element) strides
        sa, sr, si = (*t.stride(), 0) if t.dim() == 2 else t.stride()
        lines += [sa, 0, sr] if I == 1 else [si, sa, sr]
    across = lines[2] == 1 and lines[4] != 1  # rows side by side in memory: short tiles along R, long down the rows
    block_n = min(_pow2(R), 16 if across else 1024, {params["BLOCK"]})
    block_m = min(max(1, {params["BLOCK"]} // block_n), _pow2(n_rows))
    grid = (triton.cdiv(n_rows, block_m), groups)
{split}    _kv_reduce_kernel[grid](*inputs{outs}, *lines, BLOCK_M=block_m, BLOCK_N=block_n{launch})
"""


#: an integer cumulative sum of lines contiguous in memory (inner == 1): a program per line walks it in
#: BLOCK_L tiles, each scanned at once (tl.cumsum) and offset by the sum of the tiles before
_INT_SCAN_TILED = '''@triton.jit
def _kv_scan_lines_kernel(x_ptr, out0_ptr, L, BLOCK_L: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * L
    j = tl.arange(0, BLOCK_L).to(tl.int64)
    carry = tl.zeros([1], tl.int64)
    for start in range(0, L, BLOCK_L):
        m = start + j < L
        v = tl.load(x_ptr + base + start + j, mask=m, other=0).to(tl.int64)
        tl.store(out0_ptr + base + start + j, tl.cumsum(v, 0) + carry, mask=m)
        carry += tl.sum(v, 0)


@triton.jit
def _kv_tile_sums_kernel(x_ptr, sums_ptr, L, n_tiles, BLOCK_L: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    line = pid // n_tiles
    start = (pid - line * n_tiles) * BLOCK_L
    j = tl.arange(0, BLOCK_L).to(tl.int64)
    v = tl.load(x_ptr + line * L + start + j, mask=start + j < L, other=0).to(tl.int64)
    tl.store(sums_ptr + pid, tl.sum(v, 0))


@triton.jit
def _kv_tiles_scan_kernel(x_ptr, out0_ptr, sums_ptr, L, n_tiles, BLOCK_L: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    line = pid // n_tiles
    tile = pid - line * n_tiles
    j = tl.arange(0, BLOCK_L).to(tl.int64)
    carry = tl.zeros([BLOCK_L], tl.int64)
    for s in range(0, tile, BLOCK_L):  # the sum of the tiles before this one
        carry += tl.load(sums_ptr + line * n_tiles + s + j, mask=s + j < tile, other=0)
    start = tile * BLOCK_L
    m = start + j < L
    v = tl.load(x_ptr + line * L + start + j, mask=m, other=0).to(tl.int64)
    tl.store(out0_ptr + line * L + start + j, tl.cumsum(v, 0) + tl.sum(carry, 0), mask=m)'''

#: fewer lines than this, each longer than SPLIT_TILES tiles: each line's tiles are scanned in parallel (their
#: sums first, then each tile offset by the sum of those before it) instead of by one program walking the line
SPLIT_LINES, SPLIT_TILES = 64, 4


def _scan_launcher(k: Any, params: dict[str, Any], tiled: bool) -> str:
    outs = "".join(f", outputs[{i}]" for i in range(len(k.outputs)))
    block = params["BLOCK"]
    launch = launch_args(params, contract=False)
    split = f"""    if inner == 1 and outer < {SPLIT_LINES} and L > {SPLIT_TILES * block}:
        n_tiles = triton.cdiv(L, {block})
        sums = outputs[0].new_empty((outer * n_tiles,))
        _kv_tile_sums_kernel[(outer * n_tiles,)](x, sums, L, n_tiles, BLOCK_L={block}{launch})
        _kv_tiles_scan_kernel[(outer * n_tiles,)](x{outs}, sums, L, n_tiles, BLOCK_L={block}{launch})
        return
""" if k.outputs[0] == "int64" else ""  # the tiles' sums kept in the output's own type
    lines = split + f"""    if inner == 1:
        _kv_scan_lines_kernel[(outer,)](x{outs}, L, BLOCK_L=min(_pow2(L), {block}){launch})
        return
""" if tiled else ""
    return _HOST + f"""def kernel(inputs, outputs):
{_checks(k, "x.dim() != 3 or not _dense(x)")}
    outer, L, inner = x.shape
    if any(o.numel() != x.numel() for o in outputs):
        raise RuntimeError("declined: shape or layout it was not written for")
    if x.numel() == 0:
        return
{lines}    block_i = min(_pow2(inner), {block})
    n_iblocks = triton.cdiv(inner, block_i)
    grid = (outer * n_iblocks,)
    _kv_scan_kernel[grid](x{outs}, L, inner, n_iblocks, BLOCK_I=block_i{launch_args(params, contract=False)})
"""


# --- recipes ------------------------------------------------------------------------------------------------

def _supported(problem: Problem, layout: str, ops: tuple[str, ...]) -> bool:
    kernel = conformance_kernel(problem, (layout,))
    if kernel is None or kernel.op not in ops:
        return False
    elements = FLOAT_INPUTS
    if kernel.op in TRUTH_OPS:
        elements += ("bool",)
    elif kernel.op == "cumsum":
        elements += INT_SCAN_INPUTS
    if kernel.expr is not None:  # a reduction's prologue: an expression of its inputs (a program's fused producer)
        fits = layout == "reduce" and bool(kernel.inputs) and all(d in TL_STORAGE for _, d in kernel.inputs)
    else:
        fits = len(kernel.inputs) == 1
    return (fits and element_dtype(kernel) in elements
            and all(dt in TL_STORAGE or dt == "float64" for dt in kernel.outputs))


def _space(problem: Problem, facts: MachineFacts) -> ScheduleSpace:
    """Elements per tile (the launcher shapes it from the sizes; 4096 keeps a few hundred programs on the
    larger samples, which the interpreter runs one by one) and the target's launch knobs."""
    return ScheduleSpace([
        Param("BLOCK", pow2_range(256, 8192), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
              default=4096),
        *launch_params(facts, "aten_pointwise"),
    ])


class TritonAtenReduce(Recipe):
    """Row reductions over (outer, R): [BLOCK_M, BLOCK_N] tiles, per-lane accumulators, lanes combined last."""

    name = "triton.aten_reduce"
    language = "triton"
    families = ("aten_pointwise",)
    reads_in_place = ("reduce",)
    takes_prologues = ("reduce",)

    def supports(self, problem: Problem) -> bool:
        return _supported(problem, "reduce", REDUCE_OPS)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return _space(problem, facts)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        body = reduce_body(k.op, k.attrs)
        if len(body.results) != len(k.outputs):
            raise ValueError(f"{k.op} writes {len(body.results)} outputs, the sample expects {len(k.outputs)}")
        acc = _acc_type(body.wide, (element_dtype(k), *k.outputs))
        device = _reduce_kernel(body, k, acc)
        if splits(body):
            device += "\n\n\n" + _reduce_split_kernels(body, k, acc)
        return header(problem, params) + _helpers(device) + device + "\n\n\n" + _reduce_launcher(k, body, params)


class TritonAtenScan(Recipe):
    """Scans over (outer, L, inner): BLOCK_I lines side by side, each walked along L in order."""

    name = "triton.aten_scan"
    language = "triton"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        return _supported(problem, "scan", SCAN_OPS)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return _space(problem, facts)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        body = scan_body(k.op)
        if len(body.results) != len(k.outputs):
            raise ValueError(f"{k.op} writes {len(body.results)} outputs, the sample expects {len(k.outputs)}")
        device = _scan_kernel(body, k, _acc_type(body.wide, (k.inputs[0][1], *k.outputs)))
        tiled = k.inputs[0][1] in INT_SCAN_INPUTS
        if tiled:
            device += "\n\n\n" + _INT_SCAN_TILED
        return (header(problem, params) + _helpers(device) + device + "\n\n\n"
                + _scan_launcher(k, params, tiled))


RECIPES = [TritonAtenReduce(), TritonAtenScan()]
