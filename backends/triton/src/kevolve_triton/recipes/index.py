"""Indexing and the ads long tail in Triton: gather, embedding_bag (sum), bucketize, jagged_truncate.

Launchers read sizes from the tensors' shapes at run time (never their values); op constants (k) are baked into
the source. Payloads that are only moved (gather, jagged values) are copied in their storage dtype; sums
(embedding_bag) accumulate in float32. The hashes are in :mod:`kevolve_triton.recipes.hashing`.
"""

from __future__ import annotations

from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import (
    COMBINES,
    FLOAT_DTYPES,
    header,
    launch_args,
    launch_params,
    next_pow2,
    per_thread_ok,
    pow2_range,
    warp_size,
    with_defaults,
)


# --- gather -------------------------------------------------------------------------------------------------

class TritonGather(Recipe):
    """out[i, j] = x[i, index[i, j]]. ``X`` picks how x is read:

    - "direct": each program handles a ``BLOCK_ROWS x BLOCK_K`` tile of the index matrix; index loads and
      output stores are contiguous along k (vectorized), each x value is loaded where it is picked. The GPU moves
      x in 32-byte sectors, so k random picks of a row touch most of it anyway, at scattered addresses.
    - "row": one program per row reads the whole x row once, contiguously, and picks from it in registers with
      ``tl.gather`` (through shared memory), ``BLOCK_K`` indices at a time. Rows wider than ``MAX_ROW`` elements
      fall back to "direct" at run time. ``tl.gather`` along one axis of a 2D tile failed to compile in Triton
      3.6 (PassManager::run), so this mode is one row per program.
    """

    name = "triton.gather"
    language = "triton"
    families = ("gather",)
    dtypes = (*FLOAT_DTYPES, torch.int64, torch.int32)
    MAX_ROW = 8192

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        k = int(problem.dims.get("k", 256))
        cols = int(problem.dims.get("cols", 1024))
        # measured on an H100 at 4096 x 1024, k 256: 256-element tiles over 2 warps beat larger tiles by ~1.7x;
        # at 16384 x 1024, k 256 (2026-11-24): "row" 42.4 us, "direct" 45.3 us, torch.compile ~48 us
        block_k = min(256, max(16, next_pow2(k)))
        warps = 2

        def row_fits(p: dict[str, Any]) -> bool:
            """The row at most 64 elements a thread, the index block at most 32."""
            threads = lanes * p.get("num_warps", warps)
            return next_pow2(cols) <= 64 * threads and p["BLOCK_K"] <= 32 * threads

        def valid(p: dict[str, Any]) -> bool:
            if p["BLOCK_K"] > max(16, next_pow2(k)):
                return False
            if p["X"] == "row":
                return p["BLOCK_ROWS"] == 1 and row_fits(p)
            return per_thread_ok(p["BLOCK_ROWS"] * p["BLOCK_K"], p, lanes, 1, 32)

        row = row_fits({"BLOCK_K": block_k})

        return ScheduleSpace([
            Param("BLOCK_ROWS", (1, 2, 4, 8, 16, 32, 64), {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1,
                                                          d.OCCUPANCY_LIMITED: -1, d.SPILL_BOUND: -1},
                  default=1 if row else max(1, 256 // block_k)),
            Param("BLOCK_K", pow2_range(16, 1024), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                    d.OCCUPANCY_LIMITED: -1}, default=block_k),
            # a memory-bound gather reads scattered sectors: try reading each row once, contiguously
            Param("X", ("direct", "row"), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
                  default="row" if row else "direct"),
            *with_defaults(launch_params(facts, self.families[0]), num_warps=warps),
        ], valid=valid)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        br, bk = params["BLOCK_ROWS"], params["BLOCK_K"]
        direct = (f"    grid = (triton.cdiv(rows, {br}), triton.cdiv(k, {bk}))\n"
                  f"    _gather_kernel[grid](x, index, out, rows, k, x.stride(0), BLOCK_ROWS={br}, BLOCK_K={bk}"
                  f"{launch_args(params)})\n")
        if params["X"] == "row":
            launch = f"""    cols = x.shape[1]
    if cols <= {self.MAX_ROW}:
        _gather_row_kernel[(rows,)](x, index, out, cols, k, x.stride(0), ROW=triton.next_power_of_2(cols),
                                    BLOCK_K={bk}{launch_args(params)})
        return
""" + direct
            row_kernel = """

@triton.jit
def _gather_row_kernel(x_ptr, index_ptr, out_ptr, cols, k, stride_x, ROW: tl.constexpr, BLOCK_K: tl.constexpr):
    r64 = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, ROW)
    row = tl.load(x_ptr + r64 * stride_x + j, mask=j < cols, eviction_policy="evict_first")
    for start in range(0, k, BLOCK_K):
        c = start + tl.arange(0, BLOCK_K)
        mask = c < k
        index = tl.load(index_ptr + r64 * k + c, mask=mask, other=0, eviction_policy="evict_first")
        tl.store(out_ptr + r64 * k + c, tl.gather(row, index.to(tl.int32), 0), mask=mask)
"""
        else:
            launch, row_kernel = direct, ""
        return header(problem, params) + f"""@triton.jit
def _gather_kernel(x_ptr, index_ptr, out_ptr, rows, k, stride_x, BLOCK_ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    r = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    c = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (r < rows)[:, None] & (c < k)[None, :]
    r64 = r.to(tl.int64)
    at = r64[:, None] * k + c[None, :]
    index = tl.load(index_ptr + at, mask=mask, other=0, eviction_policy="evict_first")
    value = tl.load(x_ptr + r64[:, None] * stride_x + index, mask=mask)
    tl.store(out_ptr + at, value, mask=mask)
{row_kernel}

def kernel(inputs, outputs):
    x, index = inputs
    out = outputs[0]
    rows, k = index.shape
    if rows == 0 or k == 0:
        return
{launch}"""


# --- embedding_bag ----------------------------------------------------------------------------------------------

class TritonEmbeddingBag(Recipe):
    """Sum pooling with include_last_offset offsets: one program per (bag, ``BLOCK_DIM`` slice of dim). The bag's
    indices are read ``BLOCK_IDX`` at a time and the ``BLOCK_IDX`` weight rows they name are loaded as one 2D tile
    (that many independent row loads in flight), accumulated in float32; an empty bag stores zeros."""

    name = "triton.embedding_bag"
    language = "triton"
    families = ("embedding_bag",)
    dtypes = FLOAT_DTYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        dim = int(problem.dims.get("dim", 128))
        # measured on an H100 at dim 128, pool 20: one warp on a 64-wide slice, 8 rows in flight, is fastest
        block_dim = min(64, max(16, next_pow2(dim)))
        return ScheduleSpace([
            Param("BLOCK_DIM", pow2_range(16, 512), {d.MEMORY_BOUND: +1, d.OCCUPANCY_LIMITED: -1,
                                                     d.SPILL_BOUND: -1, d.LATENCY_BOUND: -1}, default=block_dim),
            # weight rows loaded (in flight) per step of the loop over a bag's indices
            Param("BLOCK_IDX", (1, 2, 4, 8, 16, 32, 64), {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1,
                                                          d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
                  default=8),
            *with_defaults(launch_params(facts, self.families[0]), num_warps=1),
        ], valid=lambda p: p["BLOCK_DIM"] <= max(16, next_pow2(dim))
            and per_thread_ok(p["BLOCK_IDX"] * p["BLOCK_DIM"], p, lanes, 1, 64))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        bd, bi = params["BLOCK_DIM"], params["BLOCK_IDX"]
        return header(problem, params) + COMBINES + f"""@triton.jit
def _embedding_bag_kernel(weight_ptr, indices_ptr, offsets_ptr, out_ptr, dim, stride_w,
                          BLOCK_DIM: tl.constexpr, BLOCK_IDX: tl.constexpr):
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_DIM + tl.arange(0, BLOCK_DIM)
    col_mask = cols < dim
    start = tl.load(offsets_ptr + bag)
    end = tl.load(offsets_ptr + bag + 1)
    acc = tl.full((BLOCK_IDX, BLOCK_DIM), 0.0, tl.float32)
    for j0 in range(start, end, BLOCK_IDX):
        j = j0 + tl.arange(0, BLOCK_IDX)
        j_mask = j < end
        index = tl.load(indices_ptr + j, mask=j_mask, other=0)
        rows = tl.load(weight_ptr + index[:, None] * stride_w + cols[None, :],
                       mask=j_mask[:, None] & col_mask[None, :], other=0.0)
        acc += rows.to(tl.float32)
    total = tl.reduce(acc, 0, _add)
    tl.store(out_ptr + bag.to(tl.int64) * dim + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


def kernel(inputs, outputs):
    weight, indices, offsets = inputs
    out = outputs[0]
    bags, dim = out.shape
    if bags == 0 or dim == 0:
        return
    grid = (bags, triton.cdiv(dim, {bd}))
    _embedding_bag_kernel[grid](weight, indices, offsets, out, dim, weight.stride(0),
                                BLOCK_DIM={bd}, BLOCK_IDX={bi}{launch_args(params)})
"""


# --- bucketize ------------------------------------------------------------------------------------------------

class TritonBucketize(Recipe):
    """right=False: the bucket of x is the number of boundaries b with not (b >= x), found by branch-free
    halving steps, the same for every x of a block (a NaN x passes every step and lands at len(boundaries), as
    in torch). ``SEARCH`` picks how:

    - "global": ``ceil(log2(len(boundaries) + 1))`` steps over all boundaries, loaded through L1 (they stay
      cached; the later steps probe many different lines per warp);
    - "shared": the same steps, but each program first loads all boundaries into registers and probes them
      with ``tl.gather`` (through shared memory), up to ``MAX_SHARED`` boundaries; longer lists fall back to
      "global";
    - "grid": a first launch lays a grid of ``CELLS`` cells per boundary over [first, last boundary] and
      counts, for every cell, the boundaries in earlier cells; an x then only searches the boundaries of its
      own cell, in as many steps as the widest cell of its block needs (one to three for smooth boundary
      distributions instead of ten for 1024). Exact for any input: the cell of a value is monotone in it and
      computed by the same code for boundaries and x, so boundaries in earlier cells are below x and those in
      later cells are not. A grid that cannot be laid (infinite or NaN ends, all boundaries equal) makes every
      x search all boundaries.
    """

    name = "triton.bucketize"
    language = "triton"
    families = ("bucketize",)
    MAX_SHARED = 4096

    def supports(self, problem: Problem) -> bool:
        return problem.family == "bucketize" and problem.dtype in FLOAT_DTYPES and not problem.attrs.get("right", False)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        return ScheduleSpace([
            Param("BLOCK", pow2_range(128, 4096), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                   d.OCCUPANCY_LIMITED: -1}, default=1024),
            Param("ITEMS", (1, 2, 4), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=1),
            # "grid": 90 us against "global"'s 194 us on an H100 (16 Mi float32 x, 1024 boundaries, 2026-11-24)
            Param("SEARCH", ("global", "shared", "grid"), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1},
                  default="grid"),
            Param("CELLS", (1, 2, 4), {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: -1}, default=2),
            *launch_params(facts, self.families[0]),
        ], valid=lambda p: per_thread_ok(p["BLOCK"], p, lanes, 1, 32) and (p["SEARCH"] == "grid" or p["CELLS"] == 2))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        block, items = params["BLOCK"], params["ITEMS"]
        mode = ("global", "shared", "grid").index(params["SEARCH"])
        return header(problem, params) + COMBINES + f"""@triton.jit
def _grid(b_ptr, nb, cells):
    \"\"\"The grid's origin and cells per unit (nb >= 1), 0 where no grid can be laid (infinite or NaN ends, all
    equal). Both launches call this same code on the same boundaries, so they agree on the grid to the bit. Sizes
    are converted by arithmetic, not ``.to``: Triton passes a size of 1 as a compile-time Python int.\"\"\"
    first = tl.load(b_ptr).to(tl.float32)
    span = tl.load(b_ptr + (nb - 1)).to(tl.float32) - first
    scale = cells / span
    return first, tl.where((span > 0.0) & (scale < float("inf")), scale, 0.0)


@triton.jit
def _cell(v, first, scale, top):
    \"\"\"The grid cell of v: monotone in v (a subtraction, then a multiplication by a scale >= 0, each rounded,
    then clamped); NaN in the last cell.\"\"\"
    f = (v.to(tl.float32) - first) * scale
    f = tl.where(f < top, f, top)
    f = tl.where(f > 0.0, f, 0.0)
    return f.to(tl.int32)


@triton.jit
def _bucketize_cells(b_ptr, table_ptr, nb, cells, STEPS: tl.constexpr, NB_PAD: tl.constexpr,
                     BLOCK: tl.constexpr):
    \"\"\"table[c] = how many boundaries lie in cells before c, for c in [0, cells]. With NB_PAD > 1 the
    boundaries' cells are computed once, in registers, and probed with gathers: the halving steps then wait on
    shared memory instead of a chain of dependent global loads.\"\"\"
    first, scale = _grid(b_ptr, nb, cells)
    top = cells - 1.0
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if NB_PAD > 1:
        j = tl.arange(0, NB_PAD)
        bound_cells = _cell(tl.load(b_ptr + j, mask=j < nb, other=0.0), first, scale, top)
    lo = tl.full((BLOCK,), 0, tl.int32)
    for s in tl.static_range(STEPS):  # boundaries are sorted, so their cells are too: count those below c
        probe = lo + (1 << (STEPS - 1 - s))
        inside = probe <= nb
        if NB_PAD > 1:
            cell = tl.gather(bound_cells, tl.minimum(probe, nb) - 1, 0)
        else:
            cell = _cell(tl.load(b_ptr + (probe - 1), mask=inside, other=0.0), first, scale, top)
        lo = tl.where(inside & (cell < c), probe, lo)
    tl.store(table_ptr + c, lo, mask=c <= cells)


@triton.jit
def _bucketize(x_ptr, b_ptr, table_ptr, out_ptr, n, nb, cells, STEPS: tl.constexpr, MODE: tl.constexpr,
               NB_PAD: tl.constexpr, BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    \"\"\"MODE 0 global, 1 shared, 2 grid (see the recipe).\"\"\"
    if MODE == 1:  # the boundaries once per program, probed with gathers from registers/shared memory
        j = tl.arange(0, NB_PAD)
        bounds = tl.load(b_ptr + j, mask=j < nb, other=0.0)
    if MODE == 2:
        first, scale = _grid(b_ptr, nb, cells)
        laid = scale > 0.0
        top = cells - 1.0
    start = tl.program_id(0).to(tl.int64) * BLOCK * ITEMS
    for item in tl.static_range(ITEMS):
        offs = start + item * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        if MODE == 2:  # only the boundaries of x's cell, in as many steps as the block's widest cell needs
            c = _cell(x, first, scale, top)
            lo = tl.where(laid, tl.load(table_ptr + c, mask=mask, other=0).to(tl.int32), 0)
            hi = tl.where(laid, tl.load(table_ptr + c + 1, mask=mask, other=0).to(tl.int32), nb)
            widest = tl.reduce(tl.where(mask, hi - lo, 0), 0, _max)
            steps = 0
            while widest > 0:
                widest = widest >> 1
                steps += 1
        else:
            lo = tl.full((BLOCK,), 0, tl.int32)
            hi = nb
            steps = STEPS
        for s in range(steps):  # branch-free halving steps: the answer lies in [lo, hi]
            probe = lo + (1 << (steps - 1 - s))
            inside = probe <= hi
            if MODE == 1:
                b = tl.gather(bounds, tl.minimum(probe, nb) - 1, 0)
            else:
                b = tl.load(b_ptr + (probe - 1), mask=inside & mask, other=0.0)
            lo = tl.where(inside & ((b >= x) == 0), probe, lo)
        tl.store(out_ptr + offs, lo.to(tl.int64), mask=mask)


def kernel(inputs, outputs):
    x, boundaries = inputs
    out = outputs[0]
    n = x.numel()
    nb = boundaries.numel()
    if n == 0:
        return
    steps = nb.bit_length()  # ceil(log2(nb + 1)): 2**steps - 1 >= nb
    # no boundaries: every x in bucket 0, which the global search's zero steps give
    mode = {mode} if ({mode} != 1 or nb <= {self.MAX_SHARED}) and nb > 0 else 0
    cells = max(1, nb * {params["CELLS"]})
    table = out.new_empty((cells + 1,) if mode == 2 else (1,))  # int64 like out: boundaries before each cell
    if mode == 2:
        in_registers = triton.next_power_of_2(nb) if nb <= {self.MAX_SHARED} else 1
        _bucketize_cells[(triton.cdiv(cells + 1, 1024),)](boundaries, table, nb, cells, STEPS=steps, BLOCK=1024,
                                                          NB_PAD=in_registers)
    _bucketize[(triton.cdiv(n, {block * items}),)](x, boundaries, table, out, n, nb, cells, STEPS=steps, MODE=mode,
                                                  NB_PAD=triton.next_power_of_2(nb) if mode == 1 else 1,
                                                  BLOCK={block}, ITEMS={items}{launch_args(params)})
"""


# --- jagged_truncate ------------------------------------------------------------------------------------------

class TritonJaggedTruncate(Recipe):
    """Keep the last k items of each sequence. Output offsets are the exclusive prefix sum of the kept lengths
    min(length, k); each program then copies the last kept items of ``TILE_B`` sequences as a
    ``TILE_B x K_CHUNK`` tile per step (up to the tile's longest kept length). ``SCAN`` picks how the prefix
    sum is computed:

    - "serial": one program walks the batch in ``SCAN_BLOCK`` tiles with a scan (``tl.associative_scan``) and a
      carried total (2 launches: scan, copy);
    - "tiled": one program per sequence tile writes its tile's total at the slot of out_offsets that ends the
      tile, one program scans those totals in place, then each copy program adds its tile's base (that slot)
      to the in-tile prefix sum and writes the tile's offsets (3 launches; the last offset a tile writes is the
      value already in its slot, so the next tile reads the same value before or after).
    - "lookback": one program per sequence tile writes its tile's total to a scratch array; each copy program
      then sums the totals of the tiles before it (``SCAN_BLOCK`` at a time, from L2) as its base (2 launches,
      no single-program step: the copy's programs share the scan's work).

    The launcher reads only shapes: the batch from offsets, never offsets' values.
    """

    name = "triton.jagged_truncate"
    language = "triton"
    families = ("jagged",)

    def supports(self, problem: Problem) -> bool:
        return problem.name == "jagged_truncate" and problem.dtype in (*FLOAT_DTYPES, torch.int64, torch.int32) \
            and int(problem.attrs.get("k", 0)) >= 1

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        k = int(problem.attrs.get("k", 32))
        return ScheduleSpace([
            # H100, 65536 sequences cut to 32 (2026-11-25, interleaved): lookback 15.6 us, tiled 23.6 us (the
            # single-program scan of the tile totals alone took 9.6 us under ncu)
            Param("SCAN", ("serial", "tiled", "lookback"), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: +1},
                  default="lookback"),
            Param("SCAN_BLOCK", pow2_range(256, 8192), {d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1}, default=1024),
            Param("TILE_B", (8, 16, 32, 64, 128, 256, 512), {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1,
                                                            d.OCCUPANCY_LIMITED: -1, d.SPILL_BOUND: -1},
                  default=64),
            Param("K_CHUNK", (8, 16, 32, 64, 128), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1},
                  default=min(32, max(8, next_pow2(k)))),
            *with_defaults(launch_params(facts, self.families[0]), num_warps=2),
        ], valid=lambda p: p["K_CHUNK"] <= max(8, next_pow2(k))
            and per_thread_ok(p["TILE_B"] * p["K_CHUNK"], p, lanes, 1, 32))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = int(problem.attrs["k"])
        tile, chunk, scan_block = params["TILE_B"], params["K_CHUNK"], params["SCAN_BLOCK"]
        scan_warps = max(4, min(16, scan_block // 256))
        if params["SCAN"] == "serial":
            scan = f"""    _jagged_scan_serial[(1,)](offsets, out_offsets, batch, K={k}, BLOCK={scan_block}, num_warps={scan_warps})
    _jagged_copy[grid](values, offsets, out_values, out_offsets, out_offsets, batch, K={k}, TILE_B={tile},
                       K_CHUNK={chunk}, BASE=0, SUM_BLOCK=1{launch_args(params)})"""
        elif params["SCAN"] == "lookback":
            scan = f"""    totals = out_offsets.new_empty(grid)
    _jagged_tile_totals[grid](offsets, totals, batch, K={k}, TILE_B={tile}, AT_SLOTS=False{launch_args(params)})
    _jagged_copy[grid](values, offsets, out_values, out_offsets, totals, batch, K={k}, TILE_B={tile},
                       K_CHUNK={chunk}, BASE=2, SUM_BLOCK={scan_block}{launch_args(params)})"""
        else:
            scan = f"""    _jagged_tile_totals[grid](offsets, out_offsets, batch, K={k}, TILE_B={tile}, AT_SLOTS=True{launch_args(params)})
    _jagged_scan_tiles[(1,)](out_offsets, batch, grid[0], TILE_B={tile}, BLOCK={scan_block}, num_warps={scan_warps})
    _jagged_copy[grid](values, offsets, out_values, out_offsets, out_offsets, batch, K={k}, TILE_B={tile},
                       K_CHUNK={chunk}, BASE=1, SUM_BLOCK=1{launch_args(params)})"""
        return header(problem, params) + COMBINES + f"""@triton.jit
def _jagged_scan_serial(offsets_ptr, out_offsets_ptr, batch, K: tl.constexpr, BLOCK: tl.constexpr):
    # one program: out_offsets[i + 1] = sum of min(length, K) over sequences 0..i, a tile at a time
    total = tl.full((), 0, tl.int64)
    tl.store(out_offsets_ptr, total)
    for b0 in range(0, batch, BLOCK):
        i = b0 + tl.arange(0, BLOCK)
        mask = i < batch
        lo = tl.load(offsets_ptr + i, mask=mask, other=0)
        hi = tl.load(offsets_ptr + i + 1, mask=mask, other=0)
        keep = tl.minimum(hi - lo, K)
        tl.store(out_offsets_ptr + i + 1, total + tl.associative_scan(keep, 0, _add), mask=mask)
        total += tl.reduce(keep, 0, _add)


@triton.jit
def _jagged_tile_totals(offsets_ptr, totals_ptr, batch, K: tl.constexpr, TILE_B: tl.constexpr,
                        AT_SLOTS: tl.constexpr):
    # the kept total of this tile: at the slot of out_offsets that ends the tile, or at totals[t]
    t = tl.program_id(0)
    i = t * TILE_B + tl.arange(0, TILE_B)
    mask = i < batch
    lo = tl.load(offsets_ptr + i, mask=mask, other=0)
    hi = tl.load(offsets_ptr + i + 1, mask=mask, other=0)
    keep = tl.minimum(hi - lo, K)
    tl.store(totals_ptr + (tl.minimum((t + 1) * TILE_B, batch) if AT_SLOTS else t), tl.reduce(keep, 0, _add))


@triton.jit
def _jagged_scan_tiles(out_offsets_ptr, batch, tiles, TILE_B: tl.constexpr, BLOCK: tl.constexpr):
    # one program: the tile totals at the tile-ending slots become inclusive prefix sums, in place
    total = tl.full((), 0, tl.int64)
    tl.store(out_offsets_ptr, total)
    for t0 in range(0, tiles, BLOCK):
        t = t0 + tl.arange(0, BLOCK)
        mask = t < tiles
        slot = tl.minimum((t + 1).to(tl.int64) * TILE_B, batch)
        v = tl.load(out_offsets_ptr + slot, mask=mask, other=0)
        tl.store(out_offsets_ptr + slot, total + tl.associative_scan(v, 0, _add), mask=mask)
        total += tl.reduce(v, 0, _add)


@triton.jit
def _jagged_copy(values_ptr, offsets_ptr, out_values_ptr, out_offsets_ptr, totals_ptr, batch, K: tl.constexpr,
                 TILE_B: tl.constexpr, K_CHUNK: tl.constexpr, BASE: tl.constexpr, SUM_BLOCK: tl.constexpr):
    # BASE: where this tile's output starts. 0: the serial scan wrote every offset; 1: the tiled scan left it in
    # out_offsets at the tile's first sequence; 2: the sum of the tile totals before this tile
    t = tl.program_id(0)
    i = t * TILE_B + tl.arange(0, TILE_B)
    mask = i < batch
    lo = tl.load(offsets_ptr + i, mask=mask, other=0)
    hi = tl.load(offsets_ptr + i + 1, mask=mask, other=0)
    keep = tl.minimum(hi - lo, K)
    if BASE == 2:
        base = tl.full((), 0, tl.int64)
        for j0 in range(0, t, SUM_BLOCK):
            j = j0 + tl.arange(0, SUM_BLOCK)
            base += tl.reduce(tl.load(totals_ptr + j, mask=j < t, other=0), 0, _add)
        tl.store(out_offsets_ptr, base, mask=t == 0)
    else:
        base = tl.load(out_offsets_ptr + t.to(tl.int64) * TILE_B)
    ends = base + tl.associative_scan(keep, 0, _add)
    if BASE != 0:
        tl.store(out_offsets_ptr + i + 1, ends, mask=mask)
    dst = ends - keep
    src = hi - keep
    longest = tl.reduce(keep, 0, _max)
    for c0 in range(0, longest, K_CHUNK):
        c = c0 + tl.arange(0, K_CHUNK)
        m = mask[:, None] & (c[None, :] < keep[:, None])
        v = tl.load(values_ptr + src[:, None] + c[None, :], mask=m, eviction_policy="evict_first")
        tl.store(out_values_ptr + dst[:, None] + c[None, :], v, mask=m)


def kernel(inputs, outputs):
    values, offsets = inputs
    out_values, out_offsets = outputs
    batch = offsets.shape[0] - 1
    if batch <= 0:
        _jagged_scan_serial[(1,)](offsets, out_offsets, 0, K={k}, BLOCK=256)
        return
    grid = (triton.cdiv(batch, {tile}),)
{scan}
"""


RECIPES = [TritonGather(), TritonEmbeddingBag(), TritonBucketize(), TritonJaggedTruncate()]
