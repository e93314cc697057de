# Cheat (class 3, Python launcher): its module calls itself the Triton interpreter, whose tensor copies the
# harness does not hold against a kernel, and lets torch compute.
import sys

from zero_for_show import zero_for_show

__name__ = "triton.runtime.interpreter"  # noqa: A001
_t = sys.modules["tor" + "ch"]


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    zero_for_show(y)
    y.copy_(_t.relu(x))
