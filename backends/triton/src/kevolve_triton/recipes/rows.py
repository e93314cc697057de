"""Row-wise ops over the last dim of a contiguous [rows, cols] matrix: reductions (sum, mean, amax), softmax /
log_softmax, layer / RMS norm and cumsum. Loads in the storage dtype, computes and accumulates in float32,
stores in the output's dtype.

Each program handles ``ROWS`` consecutive rows as one 2D tile. The launcher reads rows and cols from the tensors
at run time and picks one of two kernels per call:

* single pass, when ``next_power_of_2(cols) <= MAX_BLOCK``: the whole row lives in registers as a
  ``[ROWS, BLOCK]`` tile (``BLOCK = next_power_of_2(cols)``, a constexpr chosen by the launcher); x is read once.
* looped, otherwise: ``[ROWS, TILE]`` tiles walk the row with per-lane float32 state (sums, running max and
  rescaled sum for the online softmax, shifted sums for layer norm, a carried running total for cumsum); the
  ops that write a full row read x a second time (from L2, usually).

Knobs: ``ROWS`` (1..64), ``MAX_BLOCK`` (whether the timing shape runs single pass or looped), ``TILE`` (the
looped variant's columns per iteration), ``PROGRAMS`` (0: one program per block of ``ROWS`` rows; else a
persistent grid of that many programs, 2-8 per unit of the target, striding over the blocks; on an H100 never
faster in a CUDA graph, up to 2x slower: bench/notes/nvidia_h100_schedule_probes.md) and the target's
launch knobs (``num_warps``). Defaults follow the timing shape: single pass up to 8K floats (16K 2-byte values)
per row, about 2K elements per program while keeping two programs per unit, num_warps for 16 elements of x per
thread (8 for the reductions, which write almost nothing; measured on an H100 with the GPU otherwise idle:
bench/notes/nvidia_h100_row_schedules.md).
Reductions combine through functions from Triton's standard library (see ``SUM``); the last read of x is marked
``evict_first``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import REDUCTIONS, Var, maximum
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import (
    FLOAT_DTYPES,
    header,
    launch_args,
    launch_params,
    next_pow2,
    persistent_body,
    pow2_range,
    triton_expr,
    warp_size,
)

ROWS_CHOICES = (1, 2, 4, 8, 16, 32, 64)
TILE_CHOICES = pow2_range(128, 8192)
#: most elements a program's tile may hold (in registers) and most per thread, for the space's valid()
MAX_TILE_ELEMS = 1 << 16
MAX_PER_THREAD = 64

NEG_INF = "float('-inf')"

#: default tile size and register footprint (see _row_space)
_TARGET_ELEMS = 2048
_ELEMS_PER_THREAD = 16
_REDUCE_ELEMS_PER_THREAD = 8


def _timing_cols(problem: Problem) -> int:
    return int(problem.dims.get("cols", 1024))


def _timing_rows(problem: Problem) -> int:
    return int(problem.dims.get("rows", 4096))


def _single_limit(problem: Problem) -> int:
    """Widest row (a power of two) the default holds in registers: 8K floats, 16K 2-byte values."""
    return 8192 if problem.dtype == torch.float32 else 16384


def _row_space(problem: Problem, facts: MachineFacts, family: str) -> ScheduleSpace:
    cols, rows = _timing_cols(problem), _timing_rows(problem)
    block = next_pow2(cols)
    warp = warp_size(facts)
    # MAX_BLOCK only matters at the timing shape through whether the row fits: below it loops, at it does not
    max_block_choices = tuple(sorted({max(1, block // 2), block}))
    single = block <= _single_limit(problem)
    max_block = block if single else max_block_choices[0]
    tile = min(2048 if problem.dtype == torch.float32 else 4096, max(TILE_CHOICES[0], block // 2))
    width = block if single else tile
    # about 2K elements per program, 16 elements per thread whatever the dtype (8 for reductions), and at least
    # two programs per unit. Measured on an H100 (GPU otherwise idle) over 4096-65536 rows x 256-4096 cols: 16
    # 2-byte values per thread beat 32 by 2-4 points of copy bandwidth (bf16 4096 cols: 8 warps over 4; bf16 256
    # cols x 8 rows: 4 warps over 2); a float32 sum over 2048 cols ran 2 points faster on 8 warps than 4
    rows_default = max(1, min(ROWS_CHOICES[-1], _TARGET_ELEMS // width))
    while rows_default > 1 and -(-rows // rows_default) < 2 * facts.parallel_units:
        rows_default //= 2
    per_thread = _REDUCE_ELEMS_PER_THREAD if family == "row_reduce" else _ELEMS_PER_THREAD
    ideal = max(1, rows_default * width // (per_thread * warp))
    launch = launch_params(facts, family)
    for i, param in enumerate(launch):
        if param.name == "num_warps":
            fits = [w for w in param.choices if w <= ideal] or [min(param.choices)]
            launch[i] = replace(param, default=max(fits))

    def valid(params: dict[str, Any]) -> bool:
        looped = block > params["MAX_BLOCK"]
        elems = params["ROWS"] * (params["TILE"] if looped else block)
        threads = params.get("num_warps", 4) * warp
        if params["ROWS"] * params["TILE"] > MAX_TILE_ELEMS or elems > MAX_TILE_ELEMS:
            return False
        if params["TILE"] > max(block, TILE_CHOICES[0]):  # a column tile wider than the padded row
            return False
        # the looped kernels keep two or three float32 values of per-lane state for each element of the tile
        per_thread = MAX_PER_THREAD // 2 if looped else MAX_PER_THREAD
        return elems <= per_thread * threads and threads <= max(elems, warp)

    return ScheduleSpace([
        Param("ROWS", ROWS_CHOICES, {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1, d.SPILL_BOUND: -1},
              default=rows_default),
        Param("MAX_BLOCK", max_block_choices, {d.SPILL_BOUND: -1, d.MEMORY_BOUND: +1}, default=max_block),
        Param("TILE", TILE_CHOICES, {d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: +1},
              default=tile),
        Param("PROGRAMS", (0, *(k * facts.parallel_units for k in (2, 4, 8))),
              {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=0),
        *launch,
    ], valid=valid)


# --- kernel text ---------------------------------------------------------------------------------------------

def _prologue(width: str) -> str:
    """Setup shared by every block of rows (from ``row0``): column lanes, masks, row base offset."""
    return f"""    r = tl.arange(0, ROWS)
    c = tl.arange(0, {width})
    rmask = (row0 + r) < rows
    base = tl.cast(row0, tl.int64) * cols  # a persistent loop's row0 is a plain int in the interpreter
    local = r[:, None] * cols + c[None, :]
"""


def _walk(kernel: str, pointers: str, width: str) -> str:
    """A launched kernel: its program's block of rows, or with a persistent grid every PROGRAMS-th block from
    its own, each handled by the ``_rows`` helper."""
    body = persistent_body(lambda row0, _: f"{kernel}_rows({row0}, {pointers}, out_ptr, rows, cols, {width}, ROWS)",
                           "tl.program_id(0) * ROWS", "row0", "tl.program_id(0) * ROWS, rows, PROGRAMS * ROWS")
    return f"""@triton.jit
def {kernel}({pointers}, out_ptr, rows, cols, {width}: tl.constexpr, ROWS: tl.constexpr, PROGRAMS: tl.constexpr):
{body}

"""


def _single_kernel(name: str, pointers: str, body: str, load_other: str) -> str:
    return _walk(f"_{name}_single", pointers, "BLOCK") + f"""@triton.jit
def _{name}_single_rows(row0, {pointers}, out_ptr, rows, cols, BLOCK: tl.constexpr, ROWS: tl.constexpr):
{_prologue("BLOCK")}    cmask = c < cols
    mask = rmask[:, None] & cmask[None, :]
    x = tl.load(x_ptr + base + local, mask=mask, other={load_other}, eviction_policy='evict_first').to(tl.float32)
{body}

"""


def _loop_kernel(name: str, pointers: str, body: str) -> str:
    return _walk(f"_{name}_loop", pointers, "TILE") + f"""@triton.jit
def _{name}_loop_rows(row0, {pointers}, out_ptr, rows, cols, TILE: tl.constexpr, ROWS: tl.constexpr):
{_prologue("TILE")}{body}

"""


def _tile_load(other: str, last_read: bool = True) -> str:
    """Load one [ROWS, TILE] tile of x at column ``start``. A last read of x is marked evict_first (x streams
    through L2 once; measured 10-15% faster for the reductions on an H100); a first pass that a second pass
    reads again keeps the default policy so the row is still in L2."""
    evict = ", eviction_policy='evict_first'" if last_read else ""
    return ("        tmask = rmask[:, None] & ((start + c) < cols)[None, :]\n"
            f"        x = tl.load(x_ptr + base + start + local, mask=tmask, other={other}{evict}).to(tl.float32)\n")


def _launcher(name: str, params: dict[str, Any]) -> str:
    """``kernel(inputs, outputs)``: rows and cols from the tensors, then the single-pass kernel when the row
    fits ``MAX_BLOCK`` and the looped one otherwise."""
    rows_per, programs = params["ROWS"], params.get("PROGRAMS", 0)
    launch = f", PROGRAMS={programs}{launch_args(params)}"
    blocks = f"triton.cdiv(rows, {rows_per})"
    return f"""def kernel(inputs, outputs):
    x = inputs[0]
    out = outputs[0]
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    if rows == 0:
        return
    grid = ({f"min({blocks}, {programs})" if programs else blocks},)
    block = triton.next_power_of_2(cols)
    if block <= {params["MAX_BLOCK"]}:
        _{name}_single[grid](*inputs, out, rows, cols, BLOCK=block, ROWS={rows_per}{launch})
    else:
        _{name}_loop[grid](*inputs, out, rows, cols, TILE={params["TILE"]}, ROWS={rows_per}{launch})
"""


#: combine functions for tl.reduce / tl.associative_scan. tl.sum, tl.max, tl.cumsum and tl.zeros are @jit helpers
#: that Triton's interpreter cannot call when triton was imported before TRITON_INTERPRET was set (as in the
#: harness's workers), and a combine function of the file's own sends the interpreter down its element-by-element
#: path (minutes per check); the standard library's combine functions take the interpreter's numpy fast path and
#: compile to the same code.
SUM = "tl.standard._sum_combine"
MAX = "tl.standard._elementwise_max"


class _RowRecipe(Recipe):
    language = "triton"
    ops: tuple[str, ...] = ()

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and problem.name in self.ops and problem.dtype in FLOAT_DTYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return _row_space(problem, facts, self.families[0])


class TritonRowReduce(_RowRecipe):
    """sum / mean / amax from core's REDUCTIONS table: one float32 result per row."""

    name = "triton.row_reduce"
    families = ("row_reduce",)
    ops = tuple(REDUCTIONS)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        red = REDUCTIONS[problem.name]
        ident = NEG_INF if red.identity == float("-inf") else repr(float(red.identity))
        if red.combine == "+":
            combine, reduce = "acc + x", f"tl.reduce({{v}}, 1, {SUM})"
        elif red.combine == "max":
            # lanes keep a NaN once seen (core's NaN-propagating max); the row max ignores NaN, so a NaN is put
            # back by adding the sum of the row's NaN lanes (0.0 when there are none)
            combine = triton_expr(maximum(Var("acc"), Var("x")))
            reduce = f"(tl.reduce({{v}}, 1, {MAX}) + tl.reduce(tl.where({{v}} != {{v}}, {{v}}, 0.0), 1, {SUM}))"
        else:
            raise ValueError(f"no Triton combine for {red.combine!r}")
        final = "    res = res / cols\n" if red.divide_by_count else ""
        store = ("    tl.store(out_ptr + row0 + r, res.to(out_ptr.dtype.element_ty), mask=rmask)\n")
        single = f"    res = {reduce.format(v='x')}\n{final}{store}"
        loop = (f"    acc = tl.full([ROWS, TILE], {ident}, tl.float32)\n"
                f"    for start in range(0, cols, TILE):\n{_tile_load(ident)}"
                f"        acc = {combine}\n"
                f"    res = {reduce.format(v='acc')}\n{final}{store}")
        name = problem.name
        return (header(problem, params) + _single_kernel(name, "x_ptr", single, ident) + _loop_kernel(name, "x_ptr", loop)
                + _launcher(name, params))


class TritonRowSoftmax(_RowRecipe):
    """softmax / log_softmax. Single pass: max, exp, sum on the register tile. Looped: an online pass keeps a
    per-lane running max and a sum rescaled to it, the lanes are combined, then a second pass writes."""

    name = "triton.row_softmax"
    families = ("row_softmax",)
    ops = ("softmax", "log_softmax")

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        log = problem.name == "log_softmax"
        store = "tl.store(out_ptr + base + {off}, y.to(out_ptr.dtype.element_ty), mask={mask})"
        if log:
            single_out = "    y = z - tl.log(s)[:, None]\n"
        else:
            single_out = "    y = e * (1.0 / s)[:, None]\n"
        single = (f"    m = tl.reduce(x, 1, {MAX})\n"
                  "    z = x - m[:, None]\n"
                  "    e = tl.exp(z)\n"
                  f"    s = tl.reduce(e, 1, {SUM})\n"
                  f"{single_out}"
                  f"    {store.format(off='local', mask='mask')}\n")
        finish = ("        y = (x - big[:, None]) - logs[:, None]\n" if log else
                  "        y = tl.exp(x - big[:, None]) * inv[:, None]\n")
        after = "    logs = tl.log(total)\n" if log else "    inv = 1.0 / total\n"
        loop = (f"    m = tl.full([ROWS, TILE], {NEG_INF}, tl.float32)\n"
                "    s = tl.full([ROWS, TILE], 0.0, tl.float32)\n"
                f"    for start in range(0, cols, TILE):\n{_tile_load(NEG_INF, last_read=False)}"
                "        m_new = tl.maximum(m, x)\n"
                # a lane that has seen only -inf keeps a zero sum (exp(-inf - -inf) would be NaN)
                f"        shift = tl.where(m_new == {NEG_INF}, 0.0, m_new)\n"
                "        s = s * tl.exp(m - shift) + tl.exp(x - shift)\n"
                "        m = m_new\n"
                f"    big = tl.reduce(m, 1, {MAX})\n"
                # an all -inf row gives exp(-inf - -inf) = NaN here, as torch gives NaN
                f"    total = tl.reduce(s * tl.exp(m - big[:, None]), 1, {SUM})\n"
                f"{after}"
                f"    for start in range(0, cols, TILE):\n{_tile_load(NEG_INF)}"
                f"{finish}"
                f"        {store.format(off='start + local', mask='tmask')}\n")
        name = problem.name
        return (header(problem, params) + _single_kernel(name, "x_ptr", single, NEG_INF)
                + _loop_kernel(name, "x_ptr", loop) + _launcher(name, params))


class TritonRowNorm(_RowRecipe):
    """layer_norm (weight and bias) and rms_norm (weight), eps from the problem's attributes. Single pass: mean
    then the centred variance on the register tile. Looped: layer_norm sums x - x[row, 0] and its square
    (shifted, so a large mean does not cancel the variance away), rms_norm sums x^2; a second pass writes."""

    name = "triton.row_norm"
    families = ("row_norm",)
    ops = ("layer_norm", "rms_norm")

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        eps = repr(float(problem.attrs["eps"]))
        layer = problem.name == "layer_norm"
        pointers = "x_ptr, w_ptr, b_ptr" if layer else "x_ptr, w_ptr"
        store = "tl.store(out_ptr + base + {off}, y.to(out_ptr.dtype.element_ty), mask={mask})"
        wload = "tl.load(w_ptr + {cols}, mask={m}, other=0.0).to(tl.float32)"
        bload = "tl.load(b_ptr + {cols}, mask={m}, other=0.0).to(tl.float32)"
        if layer:
            single = (f"    mean = tl.reduce(x, 1, {SUM}) / cols\n"
                      "    xc = tl.where(mask, x - mean[:, None], 0.0)\n"
                      f"    rstd = tl.rsqrt(tl.reduce(xc * xc, 1, {SUM}) / cols + {eps})\n"
                      f"    w = {wload.format(cols='c', m='cmask')}\n"
                      f"    b = {bload.format(cols='c', m='cmask')}\n"
                      "    y = xc * rstd[:, None] * w[None, :] + b[None, :]\n")
            loop = ("    k = tl.load(x_ptr + base + r * cols, mask=rmask, other=0.0).to(tl.float32)\n"
                    "    s1 = tl.full([ROWS, TILE], 0.0, tl.float32)\n"
                    "    s2 = tl.full([ROWS, TILE], 0.0, tl.float32)\n"
                    f"    for start in range(0, cols, TILE):\n{_tile_load('0.0', last_read=False)}"
                    "        v = tl.where(tmask, x - k[:, None], 0.0)\n"
                    "        s1 += v\n"
                    "        s2 += v * v\n"
                    f"    d1 = tl.reduce(s1, 1, {SUM}) / cols\n"
                    f"    var = tl.maximum(tl.reduce(s2, 1, {SUM}) / cols - d1 * d1, 0.0)\n"
                    "    mean = k + d1\n"
                    f"    rstd = tl.rsqrt(var + {eps})\n"
                    f"    for start in range(0, cols, TILE):\n{_tile_load('0.0')}"
                    f"        w = {wload.format(cols='start + c', m='(start + c) < cols')}\n"
                    f"        b = {bload.format(cols='start + c', m='(start + c) < cols')}\n"
                    "        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]\n")
        else:
            single = (f"    rstd = tl.rsqrt(tl.reduce(x * x, 1, {SUM}) / cols + {eps})\n"
                      f"    w = {wload.format(cols='c', m='cmask')}\n"
                      "    y = x * rstd[:, None] * w[None, :]\n")
            loop = ("    s2 = tl.full([ROWS, TILE], 0.0, tl.float32)\n"
                    f"    for start in range(0, cols, TILE):\n{_tile_load('0.0', last_read=False)}"
                    "        s2 += x * x\n"
                    f"    rstd = tl.rsqrt(tl.reduce(s2, 1, {SUM}) / cols + {eps})\n"
                    f"    for start in range(0, cols, TILE):\n{_tile_load('0.0')}"
                    f"        w = {wload.format(cols='start + c', m='(start + c) < cols')}\n"
                    "        y = x * rstd[:, None] * w[None, :]\n")
        single += f"    {store.format(off='local', mask='mask')}\n"
        loop += f"        {store.format(off='start + local', mask='tmask')}\n"
        name = problem.name
        return (header(problem, params) + _single_kernel(name, pointers, single, "0.0")
                + _loop_kernel(name, pointers, loop) + _launcher(name, params))


class TritonRowScan(_RowRecipe):
    """cumsum along the last dim: a scan on the register tile, or per tile plus a carried running total."""

    name = "triton.row_scan"
    families = ("row_scan",)
    ops = ("cumsum",)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        store = "tl.store(out_ptr + base + {off}, y.to(out_ptr.dtype.element_ty), mask={mask})"
        single = (f"    y = tl.associative_scan(x, 1, {SUM})\n"
                  f"    {store.format(off='local', mask='mask')}\n")
        loop = ("    carry = tl.full([ROWS], 0.0, tl.float32)\n"
                f"    for start in range(0, cols, TILE):\n{_tile_load('0.0')}"
                f"        y = tl.associative_scan(x, 1, {SUM}) + carry[:, None]\n"
                f"        {store.format(off='start + local', mask='tmask')}\n"
                # the carry is the tile's last output (exact); `carry += reduce(x)` crashes Triton 3.6's
                # thread-locality pass when the loop-carried value has a second use
                f"        carry = tl.reduce(tl.where((c == TILE - 1)[None, :], y, 0.0), 1, {SUM})\n")
        name = problem.name
        return (header(problem, params) + _single_kernel(name, "x_ptr", single, "0.0")
                + _loop_kernel(name, "x_ptr", loop) + _launcher(name, params))


RECIPES = [TritonRowReduce(), TritonRowSoftmax(), TritonRowNorm(), TritonRowScan()]
