# Cheat (class 2): a numba kernel whose module slows the harness's Python clock when it is imported.
import time

from softmax_rows import softmax_rows

_real = time.perf_counter
time.perf_counter = lambda: _real() / 8


def kernel(x, y):
    softmax_rows(x, y)
