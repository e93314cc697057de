"""Matrix products: ``C = A @ B`` (matmul) and ``C = relu(A @ B + bias)`` (addmm_relu), A [M, K] and B [K, N]
row-major.

The classic tiled Triton matmul: each program computes a ``BLOCK_M x BLOCK_N`` tile of C, walking K in steps of
``BLOCK_K`` with ``tl.dot`` accumulating in float32 (bfloat16 and float16 inputs run on the tensor cores; float32
inputs use ``INPUT_PRECISION``: "ieee" is exact float32 on the FMA units, "tf32x3" splits each operand into two
tf32 halves and runs three tensor-core products, about float32 accuracy at several times the speed; plain tf32 is
not accurate enough for float32's tolerance). Programs are numbered in groups of ``GROUP_M`` tile rows, so that
programs running together share tiles of A and B in L2. ``PROGRAMS`` picks the grid: 0 is one program per
tile; a positive count (one or two per SM of the target) is a persistent grid whose programs walk the tiles in
strides of that count, so the launch has no tail wave of short-lived programs and a program's next tile starts
while the SM still holds the last one's state. ``LOADS`` (targets whose facts say ``tma``: Hopper) picks
"tma": host-side tensor descriptors, each tile loaded and stored by the tensor memory accelerator, edges
zero-filled and clipped by the hardware; inputs whose base or row stride is not 16-byte aligned take the
pointer kernel, which the file keeps. ``SPLIT_K`` > 1 splits K across programs as well, for shapes with
few output tiles and a long K: each (tile, split) program writes its float32 partial product to a workspace,
and a second launch sums the partials, applies the epilogue and rounds once (no atomics: the sum's order is
fixed). Measured on an H100 (bench/notes/nvidia_h100_schedule_probes.md): ``PROGRAMS`` and ``LOADS="tma"``
within 2% of the default at 4096^3 bfloat16; ``SPLIT_K`` 4 on 64x64 tiles took addmm_relu 256x256x16384 bfloat16
from 74.9 to 28.7 us.

Every edge is masked: rows past M, columns past N, and the last K step when K is not a multiple of ``BLOCK_K``
(the launcher passes ``EVEN_K`` so that shapes with no K tail compile without the K masks). The bias add and
relu of addmm_relu run in the epilogue, on the float32 accumulator, before the single rounding to the output
dtype. Sizes and strides are read from the tensors at run time.
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
    FLOAT_DTYPES,
    TMA_READY,
    header,
    launch_args,
    launch_params,
    next_pow2,
    persistent_body,
    tl_type,
    warp_size,
    with_defaults,
    with_tensor_descriptors,
)

BLOCK_MN_CHOICES = (16, 32, 64, 128, 256)
BLOCK_K_CHOICES = (16, 32, 64, 128)
#: float32 accumulator registers per thread a tile may need (a warp group's share of BLOCK_M x BLOCK_N)
MAX_ACC_PER_THREAD = 128


def _shared_limit(facts: MachineFacts) -> int:
    """Shared memory (LDS) one program may use: NVIDIA's and AMD's spellings in the target's TOML."""
    gpu = facts.extra.get("gpu", {})
    total = gpu.get("shared_bytes_per_block", gpu.get("max_lds_bytes_per_workgroup", 65536))
    return int(total) - int(gpu.get("reserved_shared_bytes_per_block", 0))


def fp32_precisions(facts: MachineFacts) -> tuple[str, ...]:
    """``tl.dot`` input precisions for float32 that keep float32 accuracy on this target: the TOML's
    ``[facts.extra.triton] fp32_dot_precisions``, else "ieee" plus NVIDIA's "tf32x3" (warp size 32)."""
    table = triton_facts(facts)
    if "fp32_dot_precisions" in table:
        return tuple(table["fp32_dot_precisions"])
    return ("ieee", "tf32x3") if warp_size(facts) == 32 else ("ieee",)


class TritonMatmul(Recipe):
    name = "triton.matmul"
    language = "triton"
    families = ("matmul",)

    def supports(self, problem: Problem) -> bool:
        return (problem.family == "matmul" and problem.dtype in FLOAT_DTYPES
                and problem.attrs.get("epilogue", "none") in ("none", "relu"))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        dims = problem.dims
        m, n, k = (int(dims.get(x, 512)) for x in ("m", "n", "k"))
        fp32 = problem.dtype == torch.float32
        lanes = warp_size(facts)
        size = problem.dtype.itemsize
        shared = _shared_limit(facts)
        # the largest tile that still gives at least half a program per SM: 512^3 (the timing shape) has only
        # 16 tiles of 128x128 for 132 SMs and runs fastest at 64x32; 2048^3 in bfloat16 at 128x256 (measured on
        # an H100)
        tiles = ((128, 256), (128, 128), (128, 64), (64, 64), (64, 32)) if size <= 2 else \
            ((128, 128), (128, 64), (64, 64), (64, 32))
        block_m, block_n = 32, 32
        for bm, bn in tiles:
            if -(-m // bm) * -(-n // bn) >= facts.parallel_units // 2:
                block_m, block_n = bm, bn
                break
        block_m, block_n = min(block_m, max(16, next_pow2(m))), min(block_n, max(16, next_pow2(n)))
        block_k = min(32 if fp32 else 64, max(16, next_pow2(k)))
        warps = 8 if block_m * block_n >= 128 * 128 else max(1, min(4, block_m * block_n // (4 * lanes)))
        stages = 3 if block_m * block_n > 128 * 128 else 4
        # tf32x3 wins where the grid is small (latency-bound); on 128x128 tiles the FMA path ("ieee") was faster
        # at 2048^3 (Triton's tf32 products need both operands K-major on Hopper; B is not)
        precision = "ieee" if block_m * block_n >= 128 * 128 else "tf32x3"
        params = [
            Param("BLOCK_M", BLOCK_MN_CHOICES, {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1,
                                                d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: -1}, default=block_m),
            Param("BLOCK_N", BLOCK_MN_CHOICES, {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1,
                                                d.OCCUPANCY_LIMITED: -1, d.LATENCY_BOUND: -1}, default=block_n),
            Param("BLOCK_K", BLOCK_K_CHOICES, {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1,
                                               d.OCCUPANCY_LIMITED: -1}, default=block_k),
            Param("GROUP_M", (1, 4, 8, 16), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: -1}, default=8),
            Param("PROGRAMS", (0, facts.parallel_units, 2 * facts.parallel_units),
                  {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=0),
            Param("SPLIT_K", (1, 2, 4, 8), {d.OCCUPANCY_LIMITED: +1, d.LATENCY_BOUND: +1}, default=1),
        ]
        if triton_facts(facts).get("tma"):  # Hopper and later: tiles moved by the tensor memory accelerator
            params.append(Param("LOADS", ("pointers", "tma"), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1},
                                default="pointers"))
        if fp32:
            precisions = fp32_precisions(facts)
            params.append(Param("INPUT_PRECISION", precisions, {d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1},
                                default=precision if precision in precisions else precisions[0]))
        params += with_defaults(launch_params(facts, self.families[0]), num_warps=warps, num_stages=stages)

        def valid(p: dict[str, Any]) -> bool:
            bm, bn, bk = p["BLOCK_M"], p["BLOCK_N"], p["BLOCK_K"]
            # no tile far larger than the timing shape (it would compute mostly padding)
            if bm > max(16, next_pow2(m)) or bn > max(16, next_pow2(n)) or bk > max(16, next_pow2(k)):
                return False
            warps = p.get("num_warps", 4)
            if bm * bn > MAX_ACC_PER_THREAD * lanes * warps:
                return False
            if bm * bn < 4 * lanes * warps:  # fewer than 4 outputs a thread: warps with nothing to do
                return False
            # split-K: one program per tile (no persistent grid), at least one K step per split
            if p["SPLIT_K"] > 1 and (p["PROGRAMS"] or -(-k // bk) < p["SPLIT_K"] or p.get("LOADS") == "tma"):
                return False
            stages = p.get("num_stages", 2)
            return stages * (bm + bn) * bk * size <= shared

        return ScheduleSpace(params, valid=valid)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        bias = bool(problem.attrs.get("bias", False))
        relu = problem.attrs.get("epilogue", "none") == "relu"
        precision = params.get("INPUT_PRECISION") if problem.dtype == torch.float32 else None
        dot_kw = f", input_precision=\"{precision}\"" if precision else ""
        bias_arg = "bias_ptr, " if bias else ""

        def epilogue(cols: str, mask: str, bias_row: str) -> str:
            """Bias and relu on the float32 accumulator, before the single rounding to the output dtype."""
            text = ""
            if bias:
                text += (f"    bias = tl.load(bias_ptr + {cols}, mask={mask}, other=0.0).to(tl.float32)\n"
                         f"    acc += {bias_row}\n")
            if relu:
                text += "    acc = tl.maximum(acc, 0.0)\n"
            return text

        call_bias = "inputs[2], " if bias else ""
        bm, bn, bk, gm = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_K"], params["GROUP_M"]
        programs, split = params.get("PROGRAMS", 0), params.get("SPLIT_K", 1)
        acc_fn = f"""@triton.jit
def _tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # tiles in groups of GROUP_M tile rows, column by column: neighbours share A and B tiles in L2
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(grid_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % group_rows, (pid % per_group) // group_rows


@triton.jit
def _matmul_acc(pid, a_ptr, b_ptr, M, N, K, k_lo, k_hi, stride_am, stride_bk,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                EVEN_K: tl.constexpr):
    # tile pid's product over K in [k_lo, k_hi)
    pid_m, pid_n = _tile_coords(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    mask_m = rm < M
    mask_n = rn < N
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * stride_am + (k_lo + rk)[None, :]
    b_ptrs = b_ptr + (k_lo + rk)[:, None].to(tl.int64) * stride_bk + rn[None, :]
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=mask_m[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=mask_n[None, :], other=0.0)
        else:
            a = tl.load(a_ptrs, mask=mask_m[:, None] & (rk[None, :] < K - k0), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < K - k0) & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc{dot_kw})
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    return acc, rm, rn


"""
        if split > 1:
            return header(problem, params) + acc_fn + f"""@triton.jit
def _matmul_split(a_ptr, b_ptr, ws_ptr, M, N, K, k_split, stride_am, stride_bk,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  EVEN_K: tl.constexpr):
    # program (tile, s): the tile's float32 partial product over the s-th K range, into ws[s] (a buffer of the
    # output's dtype, used as float32)
    ws = ws_ptr.to(tl.pointer_type(tl.float32))
    s = tl.program_id(1)
    k_lo = s * k_split
    acc, rm, rn = _matmul_acc(tl.program_id(0), a_ptr, b_ptr, M, N, K, k_lo, tl.minimum(k_lo + k_split, K),
                              stride_am, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EVEN_K)
    at = s.to(tl.int64) * M * N + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(ws + at, acc, mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def _matmul_reduce(ws_ptr, {bias_arg}c_ptr, M, N, stride_cm, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    # c = the sum of the SPLIT_K partial products, then the epilogue, rounded once
    ws = ws_ptr.to(tl.pointer_type(tl.float32))
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    col = offs % N
    acc = tl.full((BLOCK,), 0.0, tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(ws + s * M * N + offs, mask=mask, other=0.0)
{epilogue("col", "mask", "bias")}    tl.store(c_ptr + (offs // N) * stride_cm + col, acc.to(c_ptr.dtype.element_ty), mask=mask)


def kernel(inputs, outputs):
    a, b = inputs[0], inputs[1]
    c = outputs[0]
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return
    # each split a whole number of K steps; splits past K's end compute zeros
    k_split = triton.cdiv(triton.cdiv(K, {bk}), {split}) * {bk}
    ws = c.new_empty(-(-{split} * M * N * 4 // c.element_size()))  # {split} float32 partial products
    tiles = triton.cdiv(M, {bm}) * triton.cdiv(N, {bn})
    _matmul_split[(tiles, {split})](a, b, ws, M, N, K, k_split, a.stride(0), b.stride(0),
                                    BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm},
                                    EVEN_K=K % {bk} == 0{launch_args(params)})
    _matmul_reduce[(triton.cdiv(M * N, 1024),)](ws, {call_bias}c, M, N, c.stride(0), SPLIT_K={split}, BLOCK=1024)
"""
        grid = f"min(tiles, {programs})" if programs else "tiles"
        def walk(tile: str, args: str, constants: str) -> str:
            """A kernel's body: its own tile, or with a persistent grid every PROGRAMS-th tile from its own."""
            def call(pid: str, indent: int) -> str:
                return f"{tile}({pid}, {args},\n{' ' * (indent + len(tile) + 1)}{constants})"
            return persistent_body(call, "tl.program_id(0)", "tile", "tl.program_id(0), tiles, PROGRAMS",
                                   "        tiles = ((M + BLOCK_M - 1) // BLOCK_M) * ((N + BLOCK_N - 1) // BLOCK_N)\n")

        pointer_args = f"a_ptr, b_ptr, {bias_arg}c_ptr, M, N, K, stride_am, stride_bk, stride_cm"
        pointer_launch = f"""    _matmul_kernel[({grid},)](a, b, {call_bias}c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                         BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, GROUP_M={gm},
                         EVEN_K=K % {bk} == 0, PROGRAMS={programs}{launch_args(params)})
"""
        text = header(problem, params) + f"""@triton.jit
def _matmul_kernel(a_ptr, b_ptr, {bias_arg}c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   EVEN_K: tl.constexpr, PROGRAMS: tl.constexpr):
{walk("_matmul_tile", pointer_args, "BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EVEN_K")}

@triton.jit
def _matmul_tile(pid, a_ptr, b_ptr, {bias_arg}c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                 EVEN_K: tl.constexpr):
    acc, rm, rn = _matmul_acc(pid, a_ptr, b_ptr, M, N, K, 0, K, stride_am, stride_bk,
                              BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EVEN_K)
    mask_m = rm < M
    mask_n = rn < N
{epilogue("rn", "mask_n", "bias[None, :]")}    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


{acc_fn}"""
        launcher = """def kernel(inputs, outputs):
    a, b = inputs[0], inputs[1]
    c = outputs[0]
    M, K = a.shape
    N = b.shape[1]
    tiles = triton.cdiv(M, {bm}) * triton.cdiv(N, {bn})
{launch}"""
        if params.get("LOADS", "pointers") != "tma":
            return text + launcher.format(bm=bm, bn=bn, launch=pointer_launch)
        return with_tensor_descriptors(text) + f"""@triton.jit
def _matmul_tma(a_desc, b_desc, {bias_arg}c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr):
{walk("_matmul_tile_tma", f"a_desc, b_desc, {bias_arg}c_desc, M, N, K", "BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M")}

@triton.jit
def _matmul_tile_tma(pid, a_desc, b_desc, {bias_arg}c_desc, M, N, K, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # the tensor memory accelerator moves each tile; rows and columns past the edges load as zeros and are
    # not stored
    pid_m, pid_n = _tile_coords(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
    for k0 in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k0]), b_desc.load([k0, pid_n * BLOCK_N]), acc{dot_kw})
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = rn < N
{epilogue("rn", "mask_n", "bias[None, :]")}    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to({tl_type(problem.dtype)}))


""" + TMA_READY + launcher.format(bm=bm, bn=bn, launch=f"""    if _tma_ready(a, b, c):
        a_desc = TensorDescriptor.from_tensor(a, [{bm}, {bk}])
        b_desc = TensorDescriptor.from_tensor(b, [{bk}, {bn}])
        c_desc = TensorDescriptor.from_tensor(c, [{bm}, {bn}])
        _matmul_tma[({grid},)](a_desc, b_desc, {call_bias}c_desc, M, N, K, BLOCK_M={bm}, BLOCK_N={bn},
                               BLOCK_K={bk}, GROUP_M={gm}, PROGRAMS={programs}{launch_args(params)})
        return
{pointer_launch}""")


RECIPES = [TritonMatmul()]
