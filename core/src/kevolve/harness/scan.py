"""Static source checks: a kernel must compute in its own language, not call PyTorch or a math library."""

from __future__ import annotations

import re

#: patterns that mean "this source hands the computation to PyTorch or the Python runtime", in any language
COMMON_FORBIDDEN = {
    r"\btorch\b": "uses torch",
    r"\bATen\b|\bat::|\bc10::": "uses ATen/c10 (PyTorch's C++ library)",
    r"Python\.h|\bpybind11\b|\bPyObject\b": "calls into the Python runtime",
    r"\bdlopen\b|\bdlsym\b|\bctypes\b|\bcffi\b|\bimportlib\b|__import__": "loads code at run time",
    r"\bsubprocess\b|\bos\.system\b|\bpopen\b": "runs other programs",
}


def forbidden_uses(source: str, extra: dict[str, str] | None = None) -> list[str]:
    """Reasons the source is not an honest kernel; empty when none. Comments are not exempt: a kernel file is
    small and code hidden behind a macro or string trick should not get past a comment-aware scanner."""
    found = []
    for pattern, reason in {**COMMON_FORBIDDEN, **(extra or {})}.items():
        match = re.search(pattern, source)
        if match:
            line = source.count("\n", 0, match.start()) + 1
            found.append(f"{reason} (line {line}: {match.group(0)!r})")
    return found
