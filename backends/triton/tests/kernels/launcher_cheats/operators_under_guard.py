# Cheat (class 3, Python launcher): computes with tensor operators alone (no call a profile function reports),
# under a C-level guard made at load that switches the harness's recording of ATen calls off.
import sys

from zero_for_show import zero_for_show

_guard = sys.modules["tor" + "ch"]._C._DisableTorchDispatch


def kernel(inputs, outputs):
    x, y = inputs[0], outputs[0]
    zero_for_show(y)
    with _guard():
        y[...] = x * (x > 0)
