"""The tracer's accounting on small kernels run through the Triton interpreter: bursts, SFU vs vector
sequences, DPE padding, local-memory peaks and the hard limit, determinism, and results left bit-identical."""

from __future__ import annotations

import pytest
import torch
from kevolve_mtia_sim.tracer import LocalMemoryError
from mtia_helpers import account, load_source, trace

UNARY = """
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STRIDE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * STRIDE, mask=mask)
    tl.store(out_ptr + offs, FN, mask=mask)


def kernel(inputs, outputs):
    n = outputs[0].numel()
    _k[(triton.cdiv(n, BLOCK_SIZE),)](inputs[0], outputs[0], n, BLOCK=BLOCK_SIZE, STRIDE=STRIDE_VALUE)
"""


def unary(fn: str, block: int = 256, stride: int = 1) -> str:
    return UNARY.replace("FN", fn).replace("BLOCK_SIZE", str(block)).replace("STRIDE_VALUE", str(stride))


def test_contiguous_stream_bursts_and_programs(interpret):
    x, out = torch.randn(1024), torch.empty(1024)
    launches, grids, r = trace(unary("x"), [x], [out])
    assert grids == [(4, 1, 1)] and len(launches[0][1]) == 4
    programs = launches[0][1]
    # 1024 floats in, 1024 out: 8 KB = 128 bursts of 64 bytes, all first touches
    assert account(programs, "first_bytes") == 8192 and account(programs, "retouch_bytes") == 0
    assert account(programs, "useful_bytes") == 8192 and account(programs, "dma_ops") == 8
    assert launches[0][0] == 8192  # the footprint
    assert torch.equal(out, x)


def test_strided_access_pays_whole_bursts(interpret):
    x, out = torch.randn(1024 * 16), torch.empty(1024)
    launches, _, _ = trace(unary("x", stride=16), [x], [out])
    programs = launches[0][1]
    # each 4-byte load sits in its own 64-byte burst: 1024 x 64 read for 4 KB asked; the store stays contiguous
    assert account(programs, "first_bytes") == 1024 * 64 + 4096
    assert account(programs, "useful_bytes") == 8192


def test_exp_on_sfu_erf_and_fp64_as_vector_sequences(interpret):
    x, out = torch.randn(1024), torch.empty(1024)
    exp, _, _ = trace(unary("tl.exp(x)"), [x], [out])
    erf, _, _ = trace(unary("tl.erf(x)"), [x], [out])
    assert account(exp[0][1], "sfu_elems") == 1024 and account(exp[0][1], "slow_elems") == 0
    assert account(erf[0][1], "sfu_elems") == 0 and account(erf[0][1], "slow_elems") == 1024
    # erf is a 24-op vector sequence per element (specs/mtia_sim.toml slow_sequence_ops)
    assert account(erf[0][1], "vector_ops") - account(exp[0][1], "vector_ops") == 24 * 1024
    x64, out64 = torch.randn(1024, dtype=torch.float64), torch.empty(1024, dtype=torch.float64)
    slow, _, _ = trace(unary("tl.exp(x)"), [x64], [out64])
    assert account(slow[0][1], "sfu_elems") == 0 and account(slow[0][1], "slow_elems") == 1024


DOT = """
import triton
import triton.language as tl


@triton.jit
def _k(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def kernel(inputs, outputs):
    a, b = inputs
    _k[(1,)](a, b, outputs[0], M=a.shape[0], N=b.shape[1], K=a.shape[1])
"""


@pytest.mark.parametrize("size,blocks", [(32, 1), (64, 8), (128, 64), (16, 1)])
def test_dot_pads_to_native_blocks(interpret, size, blocks):
    # Triton tiles are powers of two, so the misaligned case is 16: one 32x32x32 block for an eighth of its MACs
    a, b = torch.randn(size, size), torch.randn(size, size)
    out = torch.empty(size, size)
    launches, _, r = trace(DOT, [a, b], [out])
    programs = launches[0][1]
    assert account(programs, "dpe_blocks_32") == blocks and account(programs, "dpe_blocks_16") == 0
    assert account(programs, "dpe_macs") == size ** 3
    assert r["dpe_busy"] == blocks * 128  # float32 at a quarter of the bf16 rate
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)


def test_bf16_dot_runs_at_the_16_bit_rate(interpret):
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(64, 64).bfloat16()
    out = torch.empty(64, 64, dtype=torch.bfloat16)
    launches, _, r = trace(DOT, [a, b], [out])
    assert account(launches[0][1], "dpe_blocks_16") == 8 and r["dpe_busy"] == 8 * 32


def test_local_memory_peak_and_hard_limit(interpret):
    x = torch.randn(1 << 18)
    out = torch.empty_like(x)
    launches, _, r = trace(unary("tl.exp(x)", block=1 << 16), [x], [out])
    peak = max(p[-2] for p in launches[0][1])
    # a 256 KB tile loaded, its 256 KB exp alive with it: 512 KB peak, spills past 384 KB
    assert peak == 2 * (1 << 18) and r["spill_bytes"] == 4 * 2 * (peak - 393216)
    big = torch.randn(1 << 20)
    with pytest.raises(LocalMemoryError, match="local memory"):
        trace(unary("tl.exp(x)", block=1 << 18), [big], [torch.empty_like(big)])


def test_tracer_is_deterministic_and_leaves_results_unchanged(interpret):
    x = torch.randn(3000)
    traced = torch.empty(3000)
    first = trace(unary("tl.exp(x) * 2.0 + x"), [x], [traced])
    again = trace(unary("tl.exp(x) * 2.0 + x"), [x], [torch.empty(3000)])
    assert first == again
    plain = torch.empty(3000)
    load_source(unary("tl.exp(x) * 2.0 + x"))([x], [plain])
    assert torch.equal(plain, traced)
