# relu with a huge per-lane register tile: one program loads BLOCK float32 values with ONE 64-lane wave
# (num_warps=1) before it stores any (the stores may alias the loads, so the compiler cannot interleave them).
# BLOCK = 32768 is 512 values per lane: more than the VGPR file holds, so the compiler spills to scratch.
import triton
import triton.language as tl

BLOCK = 32768
NUM_WARPS = 1


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def kernel(inputs, outputs):
    x, out = inputs[0], outputs[0]
    n = out.numel()
    _relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
