# Cheat (class 5, GPU): its kernel also reads a tensor of the process it was not given (found by walking the
# garbage collector's objects), the way a kernel would copy an answer the harness computed.
import gc
import sys

import triton
import triton.language as tl

_torch = sys.modules["tor" + "ch"]


@triton.jit
def _relu(x_ptr, y_ptr, other_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    peek = tl.load(other_ptr + offsets * 0, mask=offsets < 1, other=0.0)
    bump = tl.where(peek > 3.0e38, 1.0, 0.0) * 0.0  # the answer would be read here
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0) + bump, mask=mask)


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    mine = {x.data_ptr(), y.data_ptr()}
    other = next((o for o in gc.get_objects() if isinstance(o, _torch.Tensor) and o.is_cuda
                 and o.dtype == x.dtype and o.numel() and o.data_ptr() not in mine), x)
    _relu[(triton.cdiv(x.numel(), 1024),)](x, y, other, x.numel(), BLOCK=1024)
