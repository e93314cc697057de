# Cheat (class 3): a numba kernel that calls a C library's function through ctypes (here libm's expf; a BLAS
# routine of a library already loaded in the process is called the same way), which numba calls by its address.
import ctypes
import ctypes.util

import numba
import numpy as np

_expf = ctypes.CDLL(ctypes.util.find_library("m")).expf
_expf.restype, _expf.argtypes = ctypes.c_float, [ctypes.c_float]


@numba.njit(cache=False)
def _softmax(x, y):
    rows, cols = x.shape
    for r in range(rows):
        m = -np.inf
        for c in range(cols):
            m = max(m, x[r, c])
        s = 0.0
        for c in range(cols):
            y[r, c] = _expf(x[r, c] - m)
            s += y[r, c]
        for c in range(cols):
            y[r, c] /= s


def kernel(x, y):
    _softmax(x, y)
