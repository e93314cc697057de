"""DLRM's dot interaction in Triton: out[b] = [dense[b], z[1,0], z[2,0], z[2,1], ...] where z = T T^T and T
stacks dense[b] on sparse[b] ([features + 1, dim]).

Why a kernel of its own: the framework route materialises the stacked T (a concatenation), runs a batched
matmul that writes the whole square of dot products, and gathers its lower triangle into the output, so T is
written and read back and the square makes a round trip through memory. Here each sample's vectors are read
once, the Gram matrix lives in registers (``tl.dot`` on a ``VECTORS x BLOCK_D`` tile and its transpose, the
stacking done by putting the dense slice in the tile's first row), and only the dense copy and the triangle
are written: the op becomes one pass over its inputs.
"""

from __future__ import annotations

from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.device import triton_facts
from kevolve_triton.recipes.common import (
    COMBINES,
    FLOAT_DTYPES,
    TMA_READY,
    header,
    launch_args,
    launch_params,
    next_pow2,
    pow2_range,
    with_defaults,
    with_tensor_descriptors,
)
from kevolve_triton.recipes.matmul import fp32_precisions

#: float32 Gram products at tf32x3's accuracy in two tensor-core products a slice instead of three: Triton's
#: tf32x3 splits both operands of ``T T^T`` into tf32 hi + lo parts and adds hi hi^T, hi lo^T and lo hi^T; for
#: a Gram matrix the last is the transpose of the second, so T is split once and the cross term transposed once
#: per sample (the lo lo^T term is dropped by both)
GRAM_TF32X3 = "tf32x3_gram"


class TritonDotInteraction(Recipe):
    """One program per ``SAMPLES`` samples, taken one after another; per sample the dim is walked in
    ``BLOCK_D`` slices, each adding its slice's ``tl.dot(tile, tile^T)`` to a float32 Gram tile of
    ``max(16, next_pow2(rows))`` rows (tl.dot's smallest tile; the padding rows are zeros). ``DENSE`` picks how
    the dense vector enters: "stacked" makes it the tile's first row (T itself, features + 1 rows), "separate"
    keeps the tile to the sparse vectors (one rectangle of memory, features rows) and takes the dense vector's
    dots by float32 multiply-adds beside the product. float32 inputs use ``INPUT_PRECISION`` as in the matmul
    recipe (never plain tf32). ``LOADS`` (targets whose facts say ``tma``: Hopper) picks "tma": each slice of
    the sparse vectors moved by the tensor memory accelerator from a host-side descriptor (the hardware fills
    rows outside the sample's features with zeros: the row before them, where "stacked" puts the dense vector,
    and the padding), no per-element addresses in registers and the slices in flight held in shared memory
    rather than registers; inputs whose base or strides are not 16-byte aligned take the pointer loads, which
    the file keeps."""

    name = "triton.dot_interaction"
    language = "triton"
    families = ("interaction",)
    dtypes = FLOAT_DTYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        dim = int(problem.dims.get("dim", 128))
        features = int(problem.dims.get("features", 26))
        widest = max(16, next_pow2(dim))
        # measured on an H100 at 26 features, dim 128: one warp per program is fastest, on 64-wide slices in
        # bfloat16 (batch 65536: 195 us; 2 warps 211, 4 warps 226, 8 warps 309) and 16-wide slices with tf32x3 in
        # float32 (batch 16384: 143 us; 32-wide slices 158; exact "ieee" dots 640); where the target offers
        # num_stages, no software pipelining of the slice loop (bfloat16 181 us; 2-3 stages 196-199 us).
        # 2026-11-25 (bench/row_schedules.py): float32 in two tensor-core products a slice (tf32x3_gram) 125 us
        # against tf32x3's 142-143 us, best still on one warp and 16-wide slices (2 warps 135, 32-wide 144);
        # two samples stacked in one 64-row tile, which Hopper's wgmma takes, lost: float32 185 us at best,
        # bfloat16 214 us against 181 (four times the products of one sample's tile, a quarter of them used).
        # Tensor-descriptor loads (same shapes): float32 with the dense vector separate 98-104 us on 64-wide
        # slices, 1-2 warps, 2-4 stages (stacked: 111-133 us; pointer loads, stacked, 64-wide: 112 us, separate
        # 118); bfloat16 181 us every way but pointer loads with the dense vector separate (260 us)
        tma = bool(triton_facts(facts).get("tma"))
        tma_f32 = tma and problem.dtype == torch.float32
        slice_d, warps, stages = (64, 1, 1) if problem.dtype.itemsize <= 2 else (16, 1, 1)
        if tma_f32:
            slice_d, warps, stages = 64, 1, 2
        params = [
            Param("BLOCK_D", pow2_range(16, 256), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                   d.OCCUPANCY_LIMITED: -1}, default=min(slice_d, widest)),
            Param("SAMPLES", (1, 2, 4, 8), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=1),
            Param("DENSE", ("stacked", "separate"), {d.COMPUTE_BOUND: -1, d.MEMORY_BOUND: +1},
                  default="separate" if tma_f32 else "stacked"),
        ]
        if tma:
            params.append(Param("LOADS", ("pointers", "tma"), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1,
                                                               d.OCCUPANCY_LIMITED: +1},
                                default="tma" if tma_f32 else "pointers"))
        if problem.dtype == torch.float32:
            precisions = fp32_precisions(facts)
            if "tf32x3" in precisions:
                precisions += (GRAM_TF32X3,)
            params.append(Param("INPUT_PRECISION", precisions, {d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1},
                                default=GRAM_TF32X3 if GRAM_TF32X3 in precisions else precisions[0]))
        params += with_defaults(launch_params(facts, self.families[0]), num_warps=warps, num_stages=stages)

        def valid(p: dict[str, Any]) -> bool:
            # a tile of at most 64 elements a thread, and no slice wider than the dim
            vectors = max(16, next_pow2(features + (p["DENSE"] == "stacked")))
            return p["BLOCK_D"] <= widest and vectors * p["BLOCK_D"] <= 64 * 32 * p.get("num_warps", 4)

        return ScheduleSpace(params, valid=valid)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        block_d, samples = params["BLOCK_D"], params["SAMPLES"]
        tma = params.get("LOADS") == "tma"
        first = 0 if params["DENSE"] == "stacked" else 1
        precision = params.get("INPUT_PRECISION") if problem.dtype == torch.float32 else None
        dot_kw = f', input_precision="{precision}"' if precision else ""
        accumulate = f"gram = tl.dot(tile, tl.trans(tile), gram{dot_kw})"
        cross_init = cross_add = ""
        if precision == GRAM_TF32X3:
            cross_init = "\n        cross = tl.full((VECTORS, VECTORS), 0.0, tl.float32)"
            accumulate = """# T = hi + lo, hi with tf32's 10 mantissa bits: T T^T ~ hi hi^T + C + C^T, C = hi lo^T
            hi = (tile.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
            gram = tl.dot(hi, tl.trans(hi), gram, input_precision="tf32")
            cross = tl.dot(hi, tl.trans(tile - hi), cross, input_precision="tf32")"""
            cross_add = "\n        gram += cross + tl.trans(cross)"
        load_rows = """rows = tl.load(sparse + (b64 * features + (t[:, None] - 1)) * dim + c[None, :],
                           mask=is_sparse[:, None] & c_ok[None, :], other=0.0)"""
        if tma:
            load_rows = f"""if TMA:  # the tensor memory accelerator moves the slice; rows past the features are zeros
                rows = sparse.load([b, {first - 1}, d0]).reshape(VECTORS, BLOCK_D)
            else:
                {load_rows.replace(chr(10), chr(10) + "    ")}"""
        if first == 0:  # T's dense row is the tile's first
            dense_init = dense_store = ""
            use_dense = "tile = tl.where((t == 0)[:, None], dense[None, :], rows)"
        else:  # the dense vector's dots with the sparse ones by float32 multiply-adds beside the tile's product
            dense_init = "\n        dense_dots = tl.full((VECTORS,), 0.0, tl.float32)"
            use_dense = """tile = rows
            dense_dots += tl.reduce(rows.to(tl.float32) * dense.to(tl.float32)[None, :], 1, _add)"""
            dense_store = """
        tl.store(out_ptr + b64 * width + dim + (t * (t - 1)) // 2, dense_dots.to(out_ptr.dtype.element_ty),
                 mask=is_sparse)"""
        text = header(problem, params) + (COMBINES if first else "") + f"""@triton.jit
def _dot_interaction(dense_ptr, sparse, out_ptr, batch, features, dim, width, VECTORS: tl.constexpr,
                     BLOCK_D: tl.constexpr, SAMPLES: tl.constexpr{", TMA: tl.constexpr" if tma else ""}):
    # T = [dense, sparse vectors]; tile row r holds T's row r + {first}
    t = tl.arange(0, VECTORS) + {first}
    is_sparse = (t >= 1) & (t <= features)
    # output slot of the pair (i, j), i > j: the triangle is stored row by row after the dense copy
    i = t[:, None]
    j = t[None, :]
    lower = (i > j) & (i <= features)
    slot = dim + (i * (i - 1)) // 2 + j
    for s in range(SAMPLES):
        # a program past the batch's end redoes the last sample (the same values stored again, no masks)
        b = tl.minimum(tl.program_id(0) * SAMPLES + s, batch - 1)
        b64 = b.to(tl.int64)
        gram = tl.full((VECTORS, VECTORS), 0.0, tl.float32){cross_init}{dense_init}
        for d0 in range(0, dim, BLOCK_D):
            c = d0 + tl.arange(0, BLOCK_D)
            c_ok = c < dim
            dense = tl.load(dense_ptr + b64 * dim + c, mask=c_ok, other=0.0)
            {load_rows}
            {use_dense}
            {accumulate}
            tl.store(out_ptr + b64 * width + c, dense, mask=c_ok){cross_add}
        tl.store(out_ptr + b64 * width + slot, gram.to(out_ptr.dtype.element_ty), mask=lower){dense_store}


"""
        launch = f"""_dot_interaction[grid](dense, sparse, out, batch, features, dim, out.shape[1], VECTORS=vectors,
                           BLOCK_D={block_d}, SAMPLES={samples}{{tma}}{launch_args(params)})"""
        launcher = f"""def kernel(inputs, outputs):
    dense, sparse = inputs
    out = outputs[0]
    batch, features, dim = sparse.shape
    if batch == 0:
        return
    vectors = max(16, triton.next_power_of_2(features{" + 1" if first == 0 else ""}))
    grid = (triton.cdiv(batch, {samples}),)
"""
        if not tma:
            return text + launcher + "    " + launch.format(tma="")
        return with_tensor_descriptors(text) + TMA_READY + launcher + f"""\
    # a descriptor's box is at most 256 rows
    tma = _tma_ready(sparse) and vectors <= 256
    if tma:
        sparse = TensorDescriptor.from_tensor(sparse, [1, vectors, {block_d}])
    """ + launch.format(tma=", TMA=tma")


RECIPES = [TritonDotInteraction()]
