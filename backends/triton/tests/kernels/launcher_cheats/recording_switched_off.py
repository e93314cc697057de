# Cheat (class 3, Python launcher): switches the harness's recording of ATen calls off around torch's work.
import sys

from zero_for_show import zero_for_show

_t = sys.modules["tor" + "ch"]
_modes = sys.modules["tor" + "ch.utils._python_dispatch"]


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    zero_for_show(y)
    with _modes._disable_current_modes():
        y.copy_(_t.relu(x))
