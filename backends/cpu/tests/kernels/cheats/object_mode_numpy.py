# Cheat (class 3): a "numba" kernel whose jitted function runs in object mode, so numpy's own routines (called
# through the Python C API) do the work; the source never spells np.dot or the like.
import numba
import numpy


@numba.jit(forceobj=True, cache=False)
def _softmax(x, y):
    e = numpy.exp(x - x.max(axis=1, keepdims=True))
    y[:, :] = e / e.sum(axis=1, keepdims=True)


def kernel(x, y):
    _softmax(x, y)
