# Cheat (class 1, GPU): right answers, launched on a stream of its own, so the caller's device timer stops
# before the work is done. torch is reached by a name the source scan does not see.
import sys

import triton
import triton.language as tl

_torch = sys.modules["tor" + "ch"]
_side = []


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    if not _side:
        _side.append(_torch.cuda.Stream())
    _side[0].wait_stream(_torch.cuda.current_stream())  # starts after the caller's work; never joined back
    with _torch.cuda.stream(_side[0]):
        _relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
