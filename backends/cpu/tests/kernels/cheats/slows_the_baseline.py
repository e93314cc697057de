# Cheat (class 1): right answers, but while timed each call leaves a thread burning the CPU for a while, so that
# the baseline timed next runs slower and the kernel looks faster beside it.
import threading
import time

import numpy as np
from softmax_rows import softmax_rows


def _burn():
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        pass


def kernel(x, y):
    checked = np.isnan(y[0, 0]) or y[0, 0] == np.float32(-3.0e38)
    softmax_rows(x, y)
    if not checked:
        threading.Thread(target=_burn).start()
