"""Host functions that the ATen recipes' launchers share. A generated kernel file is standalone (nothing of
kevolve is imported when it runs), so each launcher carries its own copy of the few it calls; the text is
written once, here."""

from __future__ import annotations

DTYPE_NAME = '''def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]'''

POW2 = '''def _pow2(n):
    return 1 if n <= 1 else 1 << (n - 1).bit_length()'''

DENSE = '''def _dense(t):
    """Row-major contiguous (size-1 dimensions may have any stride): the kernel indexes it flat."""
    if any(size == 0 for size in t.shape):
        return True
    expected = 1
    for size, stride in zip(reversed(t.shape), reversed(t.stride())):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True'''


def host_functions(*functions: str) -> str:
    """The given functions' text, as a kernel file spaces top-level definitions (two blank lines after each)."""
    return "".join(f"{function}\n\n\n" for function in functions)
