# Cheat (class 3, Python launcher): launches a Triton kernel for show, then lets torch compute the answer on a
# thread of its own, where the harness's recording of ATen calls (per thread) does not look.
import sys
import threading

from zero_for_show import zero_for_show

_t = sys.modules["tor" + "ch"]


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    zero_for_show(y)
    worker = threading.Thread(target=lambda: y.copy_(_t.relu(x)))
    worker.start()
    worker.join()
