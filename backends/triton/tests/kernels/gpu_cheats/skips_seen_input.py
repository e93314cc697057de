# Cheat (class 1, GPU): computes an input twice, then writes nothing when called again on an input with the
# same first value, as a timed sample's back-to-back calls are. The op's outputs come from PyTorch's caching
# allocator, whose two alternating blocks then hold its earlier answers to that same input: every check of a
# timed call's output would pass on an unchanged input.
import triton
import triton.language as tl


@triton.jit
def _relu_unless_seen(x_ptr, y_ptr, seen_ptr, n, BLOCK: tl.constexpr):
    fresh = (tl.load(seen_ptr + 1) < 2.0) | (tl.load(seen_ptr) != tl.load(x_ptr))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < tl.where(fresh, n, 0)
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


@triton.jit
def _remember(x_ptr, seen_ptr):
    first = tl.load(x_ptr)
    tl.store(seen_ptr + 1, tl.where(tl.load(seen_ptr) == first, tl.load(seen_ptr + 1) + 1.0, 1.0))
    tl.store(seen_ptr, first)


def scratch(inputs, outputs):
    return [("float32", [0.0, 0.0])]  # a constant buffer: kept from call to call by the op


def kernel(inputs, outputs, buffers):
    x, y, seen = inputs[0], outputs[0], buffers[0]
    _relu_unless_seen[(triton.cdiv(x.numel(), 1024),)](x, y, seen, x.numel(), BLOCK=1024)
    _remember[(1,)](x, seen)
