# Cheat (class 1, GPU): the launch is made by a short-lived thread (joined before the call returns, so no thread
# of it is left running), out of sight of a recorder of this thread's launches, on a stream forked from the
# caller's and never joined back: the caller's device timer does not wait for the work.
import sys
import threading

import triton
import triton.language as tl

_torch = sys.modules["tor" + "ch"]
_side = []


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


def _launch(x, y):
    with _torch.cuda.stream(_side[0]):
        _relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    if not _side:
        _side.append(_torch.cuda.Stream())
    _side[0].wait_stream(_torch.cuda.current_stream())
    worker = threading.Thread(target=_launch, args=(x, y))
    worker.start()
    worker.join()
