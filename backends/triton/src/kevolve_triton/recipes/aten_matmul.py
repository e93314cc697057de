"""ATen conformance kernels in Triton for matrix products and attention (layouts ``gemm`` and ``attention`` of
core's :mod:`kevolve.conformance.ops.matmul`); the same semantics as the C++ recipes of
``kevolve_cpu.recipes.cpp_aten_matmul``, which are proven against ATen.

``gemm``: one batched tiled GEMM serves mm, bmm, addmm, baddbmm, matmul, mv, addmv, outer and linear: ``A``
(batch..., M, K) times ``B`` (batch..., K, N), or ``B`` read as (batch..., N, K) with ``trans_b`` (only the
strides the launcher passes differ), batch dimensions broadcasting, then ``alpha * AB + beta * C`` with ``C``
broadcast to (batch..., M, N). Tiles are widened to float32 and multiplied with ``tl.dot(...,
input_precision="ieee")`` (never TF32), accumulating in float32; masked lanes load 0, so NaN/inf propagate only
from real elements. At ``alpha == 0`` for addmm/addmv (``attrs["product"]`` False) the product is not computed.

``attention``: one program per tile of query rows of one batch, three passes over blocks of keys (the row
maximum with NaN propagating, the softmax sum, the weighted sum of ``v`` with normalised weights), a fully
masked row giving 0 (ATen's safe softmax). Scores and the weighted sum are broadcast products reduced with
``tl.sum`` in float32 rather than ``tl.dot``: keys past a row's causal end must add nothing at all (as in the
C++ loop and ATen's CPU flash kernel, which never read them), where a product of a 0 weight with a NaN value
would add NaN; and dropout's one-row tiles are below ``tl.dot``'s 16-row minimum.

Dropout reproduces ATen's CPU keep-mask: ``bernoulli_(1 - p)`` over the (batch..., L, S) weights, drawn serially
from the default generator (an mt19937 seeded with ``attrs["seed"]``), two 32-bit draws per weight. The kernel
runs the Mersenne Twister itself (:data:`_MT_SOURCE`: seeding, a vectorised twist, tempering) in one program that
walks the tiles in row order, so that the generator's state only moves forward; a tile has several rows only
when each row's keys fit one key block (then its weights are one contiguous run of the stream).

Batch dimensions: the launcher drops the output's size-1 batch dimensions and passes, per kept dimension, its
size and for each tensor a divisor and a stride (the coordinate of a tensor is ``c // divisor``: 1 where it
matches the output, the output's size where it broadcasts, the group size for grouped-query heads), so one
formula covers broadcasting and GQA. The launcher reads shapes and strides only; anything it was not written
for raises a "declined" error.
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

from kevolve_triton.recipes.common import header, launch_args, launch_params, triton_literal
from kevolve_triton.recipes.host import DTYPE_NAME, host_functions

#: storage dtypes the kernels load (always widened to float32); bool only for attention masks
TL_STORAGE = {"float32": "tl.float32", "bfloat16": "tl.bfloat16", "float16": "tl.float16", "float64": "tl.float64",
              "bool": "tl.int1"}
FLOATS = ("float32", "bfloat16", "float16")
#: batch dimensions a kernel indexes (rank 8 of the kernel ABI minus the two matrix dimensions)
MAX_BATCH = 6
#: mt19937 outputs per twist, and weights (two draws each) per twist
_MT_N = 624
_MT_PAIRS = _MT_N // 2


def _batch_args(names: list[str]) -> str:
    """The batch parameters of a kernel: sizes, then each tensor's divisors and strides."""
    sizes = [f"bs{i}" for i in range(MAX_BATCH)]
    per = [f"{n}_{kind}{i}" for n in names for kind in ("r", "s") for i in range(MAX_BATCH)]
    return ", ".join(sizes + per)


def _batch_offsets(names: list[str], index: str) -> str:
    """Device code: each tensor's element offset ``<name>_off`` for the flat batch index ``index``, innermost
    batch dimension first (unrolled to the launch's ``NB`` kept dimensions)."""
    lines = [f"    rest = {index}"] + [f"    {n}_off = {index} * 0" for n in names]
    for i in range(MAX_BATCH):
        lines += [f"    if NB > {i}:", f"        c = rest % bs{i}", f"        rest = rest // bs{i}"]
        lines += [f"        {n}_off += (c // {n}_r{i}) * {n}_s{i}" for n in names]
    return "\n".join(lines)


#: host code (copied into every kernel file): the kept batch dimensions and per-tensor divisors and strides
_HOST = f'''MAX_BATCH = {MAX_BATCH}


{host_functions(DTYPE_NAME)}def _declined(why):
    return RuntimeError("declined: " + why)


def _next_pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def _batch_layout(tensors, bshape):
    """The output's batch dimensions of size > 1, innermost first, padded to MAX_BATCH: sizes, then for each
    tensor the divisor of the output's coordinate (1, the size where it broadcasts, the group for grouped
    heads) and its stride (0 where it broadcasts); and how many dimensions were kept."""
    sizes, ratios, strides = [], [[] for _ in tensors], [[] for _ in tensors]
    for dim in range(len(bshape) - 1, -1, -1):
        if bshape[dim] == 1:
            continue
        sizes.append(bshape[dim])
        for i, t in enumerate(tensors):
            ratios[i].append(bshape[dim] // t.shape[dim])
            strides[i].append(t.stride(dim) if t.shape[dim] != 1 else 0)
    pad = MAX_BATCH - len(sizes)
    args = sizes + [1] * pad
    for row_r, row_s in zip(ratios, strides):
        args += row_r + [1] * pad + row_s + [0] * pad
    return args, len(sizes)


'''


class _AtenRecipe(Recipe):
    """A conformance recipe for one layout of core's matmul table."""

    language = "triton"
    families = ("aten_pointwise",)
    layout = ""

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, (self.layout,))
        return (kernel is not None and len(kernel.outputs) == 1 and kernel.out_dtype in FLOATS
                and all(dt in TL_STORAGE for _, dt in kernel.inputs))


class TritonAtenGemm(_AtenRecipe):
    """``alpha * A @ B + beta * C`` over broadcast batches: one program per output tile of one batch."""

    name = "triton.aten_gemm"
    layout = "gemm"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        tile = {d.COMPUTE_BOUND: +1, d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1}
        return ScheduleSpace([
            Param("BLOCK_M", (16, 32, 64, 128), tile, default=64),
            Param("BLOCK_N", (16, 32, 64, 128), tile, default=64),
            Param("BLOCK_K", (16, 32, 64), {d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1}, default=32),
            # B's tile as (K, N), or as (N, K) transposed in registers: for a B read as (N, K) with ``trans_b``
            # (nn.Linear's weight) the second loads along its contiguous K
            Param("B_TILE", ("kn", "nk"), {}, default="kn"),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        if any(dt not in FLOATS for _, dt in k.inputs):
            raise ValueError(f"gemm of {[dt for _, dt in k.inputs]}")
        has_c = len(k.inputs) == 3
        device = _gemm_device(k.attrs, has_c, params.get("B_TILE", "kn"))
        return header(problem, params) + device + "\n\n\n" + _HOST + _gemm_host(
            k.inputs, k.out_dtype, bool(k.attrs.get("trans_b", False)), params)


def _gemm_device(attrs: dict[str, Any], has_c: bool, b_tile: str = "kn") -> str:
    """The @triton.jit GEMM: batch offsets, the K loop of float32 ``tl.dot`` (skipped when the product is not
    computed) with B's tile loaded as ``b_tile`` ("kn", or "nk" and transposed), the alpha/beta epilogue with the
    C++ recipe's operation order, the store."""
    names = ["a", "b", "c"] if has_c else ["a", "b"]
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    value = "acc" if alpha == 1.0 else f"{triton_literal(alpha)} * acc"
    load_b = {"kn": """        b = tl.load(b_ptr + b_off + kk[:, None].to(tl.int64) * b_sk + rn64[None, :] * b_sn,
                    mask=(kk[:, None] < K) & mask_n[None, :], other=0.0).to(tl.float32)
""", "nk": """        b = tl.trans(tl.load(b_ptr + b_off + rn64[:, None] * b_sn + kk[None, :].to(tl.int64) * b_sk,
                             mask=mask_n[:, None] & (kk[None, :] < K), other=0.0).to(tl.float32))
"""}[b_tile]
    loop = """    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + a_off + rm64[:, None] * a_sm + kk[None, :].to(tl.int64) * a_sk,
                    mask=mask_m[:, None] & (kk[None, :] < K), other=0.0)
""" + load_b + """        acc = tl.dot(a.to(tl.float32), b, acc, input_precision="ieee")
"""
    if not attrs.get("product", True):  # BLAS at alpha == 0: the product is not computed (its NaN does not show)
        value, loop = "acc", ""
    epilogue = ""
    if has_c:
        epilogue = ("    cv = tl.load(c_ptr + c_off + rm64[:, None] * c_sm + rn64[None, :] * c_sn, mask=mask,"
                    " other=0.0).to(tl.float32)\n")
        value += " + cv" if beta == 1.0 else f" + {triton_literal(beta)} * cv"
    c_args = "c_ptr, " if has_c else ""
    c_strides = ", c_sm, c_sn" if has_c else ""
    return f"""@triton.jit
def _kv_gemm_kernel(a_ptr, b_ptr, {c_args}out_ptr, M, N, K, a_sm, a_sk, b_sk, b_sn{c_strides}, tiles_n, tiles,
                    {_batch_args(names)},
                    NB: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    batch = pid // tiles
    tile = pid % tiles
{_batch_offsets(names, "batch")}
    rm = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm64 = rm.to(tl.int64)
    rn64 = rn.to(tl.int64)
    mask_m = rm < M
    mask_n = rn < N
    mask = mask_m[:, None] & mask_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
{loop}{epilogue}    result = {value}
    out = out_ptr + batch * M * N + rm64[:, None] * N + rn64[None, :]
    tl.store(out, result.to(out_ptr.dtype.element_ty), mask=mask)"""


def _gemm_host(inputs: tuple[tuple[str, str], ...], out_dtype: str, trans_b: bool, params: dict[str, Any]) -> str:
    """The launcher: the ABI checks of the C++ kernel (counts, dtypes, one rank, matching K, broadcasting
    batches, C broadcasting to the output), sizes and strides, the tile sizes clamped to the problem."""
    dtypes = repr(tuple(dt for _, dt in inputs))
    b_k, b_n = ("nd - 1", "nd - 2") if trans_b else ("nd - 2", "nd - 1")
    has_c = len(inputs) == 3
    c_check = """    c = inputs[2]
    if any(c.shape[i] != 1 and c.shape[i] != bshape[i] for i in range(nb)):
        raise _declined("C does not broadcast to the batch")
    if c.shape[nd - 2] not in (1, M) or c.shape[nd - 1] not in (1, N):
        raise _declined("C does not broadcast to (M, N)")
    c_strides = [c.stride(nd - 2) if c.shape[nd - 2] != 1 else 0, c.stride(nd - 1) if c.shape[nd - 1] != 1 else 0]
""" if has_c else "    c_strides = []\n"
    return f"""def kernel(inputs, outputs):
    if len(inputs) != {len(inputs)} or len(outputs) != 1:
        raise _declined("wrong number of tensors")
    out = outputs[0]
    if tuple(_dtype_name(t) for t in inputs) != {dtypes} or _dtype_name(out) != "{out_dtype}":
        raise _declined("dtype")
    a, b = inputs[0], inputs[1]
    nd = a.dim()
    if nd < 2 or nd > 8 or any(t.dim() != nd for t in inputs):
        raise _declined("rank")
    nb = nd - 2
    M, K, N = a.shape[nd - 2], a.shape[nd - 1], b.shape[{b_n}]
    if b.shape[{b_k}] != K:
        raise _declined("inner dimensions differ")
    bshape, batch = [], 1
    for i in range(nb):
        sa, sb = a.shape[i], b.shape[i]
        if sa != sb and sa != 1 and sb != 1:
            raise _declined("batch dimensions do not broadcast")
        bshape.append(sb if sa == 1 else sa)
        batch *= bshape[-1]
{c_check}    if out.numel() != batch * M * N:
        raise _declined("output size")
    if out.numel() == 0:
        return
    block_m = min({params["BLOCK_M"]}, max(16, _next_pow2(M)))
    block_n = min({params["BLOCK_N"]}, max(16, _next_pow2(N)))
    block_k = min({params["BLOCK_K"]}, max(16, _next_pow2(K)))
    tiles_n = triton.cdiv(N, block_n)
    tiles = triton.cdiv(M, block_m) * tiles_n
    batch_args, kept = _batch_layout(inputs, bshape)
    strides = [a.stride(nd - 2), a.stride(nd - 1), b.stride({b_k}), b.stride({b_n})] + c_strides
    _kv_gemm_kernel[(batch * tiles,)](*inputs, out, M, N, K, *strides, tiles_n, tiles, *batch_args, NB=kept,
                                      BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k{launch_args(params, contract=False)})
"""


class TritonAtenAttention(_AtenRecipe):
    """Scaled dot-product attention, one tile of query rows per program (one program walking the tiles in order
    when dropout draws its keep-mask, so that the generator runs forward once)."""

    name = "triton.aten_attention"
    layout = "attention"

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            Param("BLOCK_L", (1, 2, 4, 8, 16, 32), {d.COMPUTE_BOUND: +1, d.SPILL_BOUND: -1}, default=16),
            Param("BLOCK_S", (16, 32, 64, 128), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1}, default=16),
            Param("BLOCK_E", (16, 32, 64), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1}, default=16),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        if any(dt not in FLOATS for _, dt in k.inputs[:3]):
            raise ValueError(f"attention of {[dt for _, dt in k.inputs]}")
        a = k.attrs
        mask = k.inputs[3][1] if len(k.inputs) == 4 else None
        dropout = float(a["dropout_p"])
        device = _attention_device(a, mask)
        if dropout > 0.0:
            device = _MT_SOURCE + device
        return header(problem, params) + device + "\n\n\n" + _HOST + _attention_host(k.inputs, k.out_dtype, a,
                                                                                     params)


def _attention_device(a: dict[str, Any], mask: str | None) -> str:
    """The @triton.jit attention kernel: tiles of ``BLOCK_L`` query rows of one batch, ``tiles_per`` tiles a
    program, each in three passes over blocks of keys."""
    names = ["q", "k", "v", "m"] if mask is not None else ["q", "k", "v"]
    scale = "1.0 / tl.sqrt(E.to(tl.float32))" if a["scale"] is None else triton_literal(float(a["scale"]))
    causal = bool(a["is_causal"])
    masked = ""
    if mask == "bool":
        masked = ("mv = tl.load(m_ptr + m_off + offs_l[:, None] * m_l + offs_s[None, :] * m_s, mask=valid, other=0)\n"
                  "sc = tl.where(mv != 0, sc, float('-inf'))\n")
    elif mask is not None:
        masked = ("sc += tl.load(m_ptr + m_off + offs_l[:, None] * m_l + offs_s[None, :] * m_s, mask=valid,"
                  " other=0.0).to(tl.float32)\n")
    scores = f"""offs_s = s0 + tl.arange(0, BLOCK_S).to(tl.int64)
valid = (offs_s[None, :] < s_end[:, None]) & row_ok[:, None]
sc = tl.zeros([BLOCK_L, BLOCK_S], dtype=tl.float32)
for e0 in range(0, E, BLOCK_E):
    oe = e0 + offs_e
    qt = tl.load(q_ptr + q_off + offs_l[:, None] * q_sl + oe[None, :] * q_se,
                 mask=row_ok[:, None] & (oe[None, :] < E), other=0.0).to(tl.float32)
    kt = tl.load(k_ptr + k_off + offs_s[:, None] * k_ss + oe[None, :] * k_se,
                 mask=(offs_s[:, None] < S) & (oe[None, :] < E), other=0.0).to(tl.float32)
    sc += tl.sum(qt[:, None, :] * kt[None, :, :], axis=2)
sc = sc * scale
{masked}"""
    keep, draw_state = "", ""
    dropout = float(a["dropout_p"])
    if dropout > 0.0:
        draw_state = f"""    state = _kv_mt_seed({int(a["seed"])})
    block = tl.full([], -1, tl.int64)
"""
        keep = _keep_source(dropout)
    strides = ", m_l, m_s" if mask is not None else ""
    return f"""@triton.jit
def _kv_attention_kernel(q_ptr, k_ptr, v_ptr, {"m_ptr, " if mask else ""}out_ptr, tiles, tiles_per, tiles_l, L, S, E,
                         Ev, q_sl, q_se, k_ss, k_se, v_ss, v_se{strides}, {_batch_args(names)},
                         NB: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr,
                         BLOCK_EV: tl.constexpr):
    offs_e = tl.arange(0, BLOCK_E).to(tl.int64)
    offs_v = tl.arange(0, BLOCK_EV).to(tl.int64)
    mask_v = offs_v < Ev
    scale = {scale}
    first = tl.program_id(0).to(tl.int64) * tiles_per
{draw_state}    for tile in range(first, tl.minimum(first + tiles_per, tiles)):
        bidx = tile // tiles_l
        offs_l = (tile % tiles_l) * BLOCK_L + tl.arange(0, BLOCK_L).to(tl.int64)
        row_ok = offs_l < L
        s_end = {"tl.minimum(offs_l + 1, S)" if causal else "tl.zeros([BLOCK_L], dtype=tl.int64) + S"}
        s_stop = {"tl.minimum((tile % tiles_l) * BLOCK_L + BLOCK_L, S)" if causal else "S"}
{_indent(_batch_offsets(names, "bidx"), 4)}
        top = tl.full([BLOCK_L], float('-inf'), tl.float32)
        nan = tl.zeros([BLOCK_L], dtype=tl.int32)
        for s0 in range(0, s_stop, BLOCK_S):
{_indent(scores, 12)}            real = valid & (sc == sc)
            top = tl.maximum(top, tl.max(tl.where(real, sc, float('-inf')), axis=1))
            nan = tl.maximum(nan, tl.max(tl.where(valid & (sc != sc), 1, 0), axis=1))
        top = tl.where(nan > 0, float('nan'), top)
        total = tl.zeros([BLOCK_L], dtype=tl.float32)
        for s0 in range(0, s_stop, BLOCK_S):
{_indent(scores, 12)}            total += tl.sum(tl.where(valid, tl.exp(sc - top[:, None]), 0.0), axis=1)
        acc = tl.zeros([BLOCK_L, BLOCK_EV], dtype=tl.float32)
        for s0 in range(0, s_stop, BLOCK_S):
{_indent(scores, 12)}            p = tl.where(valid, tl.exp(sc - top[:, None]) / total[:, None], 0.0)
{keep}            vt = tl.load(v_ptr + v_off + offs_s[:, None] * v_ss + offs_v[None, :] * v_se,
                         mask=(offs_s[:, None] < S) & mask_v[None, :], other=0.0).to(tl.float32)
            # keys past a row's end add nothing at all (0 * NaN would): the C++ loop never reads them
            acc += tl.sum(tl.where(valid[:, :, None], p[:, :, None] * vt[None, :, :], 0.0), axis=1)
        acc = tl.where(top[:, None] == float('-inf'), 0.0, acc)
        out = out_ptr + (bidx * L + offs_l[:, None]) * Ev + offs_v[None, :]
        tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & mask_v[None, :])"""


def _keep_source(dropout: float) -> str:
    """Device code of the dropout keep-mask for one key block of a tile: weight (row, s) is draw pair
    ``row * S + s`` of the stream; blocks of draws past the generator's are reached by twisting forward, and
    each weight's bit gathered from the block holding it. The state never needs to go back: tiles run in row
    order, and a tile of several rows has a single key block (the launcher makes one-row tiles otherwise)."""
    threshold = math.ceil((1.0 - dropout) * 2.0 ** 53)  # keep when the 53-bit draw is below (1 - p) * 2^53
    kept = 0.0 if dropout >= 1.0 else 1.0 / (1.0 - dropout)
    return f"""            e = (bidx * L + offs_l[:, None]) * S + offs_s[None, :]
            e_first = (bidx * L + (tile % tiles_l) * BLOCK_L) * S + s0
            e_hi = tl.max(tl.max(tl.where(valid, e + 1, 0), axis=1), axis=0)
            t_first = e_first // {_MT_PAIRS}
            t_last = tl.where(e_hi > e_first, (e_hi - 1) // {_MT_PAIRS}, t_first - 1)
            flat = tl.reshape(e, [BLOCK_L * BLOCK_S])
            keep_bits = tl.zeros([BLOCK_L * BLOCK_S], dtype=tl.int32)
            for t in range(t_first, t_last + 1):
                while block < t:
                    state = _kv_mt_twist(state)
                    block += 1
                bits = _kv_mt_keep(state, {threshold})
                local = flat - t * {_MT_PAIRS}
                here = (local >= 0) & (local < {_MT_PAIRS})
                got = tl.gather(bits, tl.where(here, local, 0).to(tl.int32), 0)
                keep_bits = tl.where(here, got, keep_bits)
            # only valid weights read their bit: a block the state has passed holds none of this tile's
            p = tl.where(tl.reshape(keep_bits, [BLOCK_L, BLOCK_S]) != 0, p * {triton_literal(kept)}, 0.0)
"""


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


def _attention_host(inputs: tuple[tuple[str, str], ...], out_dtype: str, a: dict[str, Any],
                    params: dict[str, Any]) -> str:
    """The launcher: the C++ kernel's ABI checks (one rank, matching E and S, batch dimensions broadcasting or
    grouped, the mask broadcasting to (batch..., L, S)), strides, one program per tile of rows (one for all
    tiles when dropout draws the keep-mask)."""
    dtypes = repr(tuple(dt for _, dt in inputs))
    has_mask = len(inputs) == 4
    gqa = bool(a["enable_gqa"])
    mask_check = """    msk = inputs[3]
    if any(msk.shape[i] != 1 and msk.shape[i] != bshape[i] for i in range(nb)):
        raise _declined("the mask does not broadcast to the batch")
    if msk.shape[nd - 2] not in (1, L) or msk.shape[nd - 1] not in (1, S):
        raise _declined("the mask does not broadcast to (L, S)")
    mask_strides = [msk.stride(nd - 2) if msk.shape[nd - 2] != 1 else 0,
                    msk.stride(nd - 1) if msk.shape[nd - 1] != 1 else 0]
""" if has_mask else "    mask_strides = []\n"
    dropout = float(a["dropout_p"]) > 0.0
    # dropout: one program walks the tiles in row order (the generator only moves forward), key blocks as wide
    # as the keys up to 128; a tile has several rows only when its rows fit one key block
    block_s = f"min({128 if dropout else params['BLOCK_S']}, max(16, _next_pow2(S)))"
    block_l = f"min({params['BLOCK_L']}, _next_pow2(L))"
    if dropout:
        block_l = f"(1 if S > block_s else {block_l})"
    return f"""def kernel(inputs, outputs):
    if len(inputs) != {len(inputs)} or len(outputs) != 1:
        raise _declined("wrong number of tensors")
    out = outputs[0]
    if tuple(_dtype_name(t) for t in inputs) != {dtypes} or _dtype_name(out) != "{out_dtype}":
        raise _declined("dtype")
    q, k, v = inputs[0], inputs[1], inputs[2]
    nd = q.dim()
    if nd < 2 or nd > 8 or any(t.dim() != nd for t in inputs):
        raise _declined("rank")
    nb = nd - 2
    L, E, S, Ev = q.shape[nd - 2], q.shape[nd - 1], k.shape[nd - 2], v.shape[nd - 1]
    if k.shape[nd - 1] != E or v.shape[nd - 2] != S:
        raise _declined("q, k and v do not match")
    bshape, batch = [], 1
    for i in range(nb):
        size = 1
        for t in (q, k, v):
            if t.shape[i] != 1:
                size = t.shape[i]
        if {gqa} and i == nb - 1:
            size = q.shape[i]
        for j, t in enumerate((q, k, v)):
            s = t.shape[i]
            grouped = {gqa} and i == nb - 1 and j > 0 and s != 0 and size % s == 0
            if s != 1 and s != size and not grouped:
                raise _declined("batch dimensions do not broadcast")
        bshape.append(size)
        batch *= size
{mask_check}    if out.numel() != batch * L * Ev:
        raise _declined("output size")
    if out.numel() == 0:
        return
    block_s = {block_s}
    block_l = {block_l}
    tiles_l = triton.cdiv(L, block_l)
    tiles = batch * tiles_l
    tiles_per = {"tiles" if dropout else "1"}
    batch_args, kept = _batch_layout(inputs, bshape)
    strides = [q.stride(nd - 2), q.stride(nd - 1), k.stride(nd - 2), k.stride(nd - 1), v.stride(nd - 2),
               v.stride(nd - 1)] + mask_strides
    _kv_attention_kernel[(triton.cdiv(tiles, tiles_per),)](
        *inputs, out, tiles, tiles_per, tiles_l, L, S, E, Ev, *strides, *batch_args, NB=kept, BLOCK_L=block_l,
        BLOCK_S=block_s, BLOCK_E={params["BLOCK_E"]}, BLOCK_EV=max(16, _next_pow2(Ev)){launch_args(params, contract=False)})
"""


#: device code of dropout kernels: std::mt19937 (seeding, the twist, tempering) on a state of 624 words held
#: in a 1024-lane int64 vector (32-bit values, so no unsigned arithmetic), and ATen's CPU Bernoulli draw from
#: two consecutive outputs. The twist's recurrence is sequential, but in three dependency-free phases: words
#: 0..226 read the old words 397..623, words 227..453 the new words 0..226, words 454..622 the new words
#: 227..395, and word 623 reads the new words 0 and 396; each phase is one vector step with gathers.
_MT_SOURCE = '''@triton.jit
def _kv_u32(value: tl.constexpr):
    """A 32-bit constant as int64 (a literal above 2^31 would be uint32, and mixing signedness is murky)."""
    return tl.full([], value, tl.int64)


@triton.jit
def _kv_mt_seed(seed):
    """std::mt19937(seed): state[i] = 1812433253 * (state[i-1] ^ (state[i-1] >> 30)) + i (mod 2^32)."""
    idx = tl.arange(0, 1024)
    word = tl.full([], seed, tl.int64) & _kv_u32(0xFFFFFFFF)
    state = tl.where(idx == 0, word, tl.zeros([1024], dtype=tl.int64))
    for i in range(1, 624):
        word = (1812433253 * (word ^ (word >> 30)) + i) & _kv_u32(0xFFFFFFFF)
        state = tl.where(idx == i, word, state)
    return state


@triton.jit
def _kv_mt_mix(cur, nxt, far):
    """One word of the twist: ``far ^ (y >> 1) ^ (y odd ? 0x9908b0df : 0)`` with y the upper bit of ``cur`` and
    the lower 31 of ``nxt``."""
    y = (cur & _kv_u32(0x80000000)) | (nxt & 0x7FFFFFFF)
    return far ^ (y >> 1) ^ tl.where((y & 1) != 0, _kv_u32(0x9908B0DF), _kv_u32(0))


@triton.jit
def _kv_mt_twist(state):
    """The next 624 words (std::mt19937's _M_gen_rand), in the three vector phases described above."""
    idx = tl.arange(0, 1024)
    nxt = tl.gather(state, tl.minimum(idx + 1, 1023), 0)
    far = tl.gather(state, tl.minimum(idx + 397, 1023), 0)
    new = tl.where(idx < 227, _kv_mt_mix(state, nxt, far), state)
    back = tl.maximum(idx - 227, 0)
    new = tl.where((idx >= 227) & (idx < 454), _kv_mt_mix(state, nxt, tl.gather(new, back, 0)), new)
    new = tl.where((idx >= 454) & (idx < 623), _kv_mt_mix(state, nxt, tl.gather(new, back, 0)), new)
    first = tl.gather(new, tl.zeros([1024], dtype=tl.int32), 0)
    mid = tl.gather(new, tl.full([1024], 396, tl.int32), 0)
    return tl.where(idx == 623, _kv_mt_mix(state, first, mid), new)


@triton.jit
def _kv_mt_keep(state, threshold):
    """Keep bits of the 312 weights this block of draws serves (lanes 0..311 of 512): tempered outputs 2j (high
    word) and 2j+1 (low word) make a 53-bit integer; kept when below ``threshold`` = ceil((1 - p) * 2^53),
    which is PyTorch's CPU ``uniform < 1 - p`` on the double ``bits * 2^-53``."""
    y = state
    y = y ^ (y >> 11)
    y = y ^ ((y << 7) & _kv_u32(0x9D2C5680))
    y = y ^ ((y << 15) & _kv_u32(0xEFC60000))
    y = y ^ (y >> 18)
    pair = tl.arange(0, 512)
    hi = tl.gather(y, tl.minimum(2 * pair, 1023), 0)
    lo = tl.gather(y, tl.minimum(2 * pair + 1, 1023), 0)
    bits = ((hi & 0x1FFFFF) << 32) | lo
    return (bits < threshold).to(tl.int32)


'''


RECIPES = [TritonAtenGemm(), TritonAtenAttention()]
