# C = A @ B with tl.dot on 64 x 64 (x 128 deep) float32 tiles, 4 waves per workgroup, two pipeline stages:
# the operand tiles staged in LDS take all of a CDNA3 CU's 64 KB (Triton 3.9 reports 65536 bytes for gfx942),
# so one workgroup (4 waves, one per SIMD) fits per CU, while its VGPRs (about 224) would allow two: the LDS,
# not the VGPRs, limits occupancy. With BK = 256 it needs 128 KB and cannot launch on gfx942 at all.
import triton
import triton.language as tl

BM = 64
BN = 64
BK = 128
NUM_WARPS = 4
NUM_STAGES = 2


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.full((BM, BN), 0.0, tl.float32)  # not tl.zeros: a @jit helper the interpreter cannot call here
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + rn[None, :], mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def kernel(inputs, outputs):
    a, b = inputs[0], inputs[1]
    c = outputs[0]
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    _matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
