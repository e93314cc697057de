"""Static source checks: a kernel must compute in its own language, not call PyTorch or a math library."""

from __future__ import annotations

import io
import re
import tokenize

#: patterns that mean "this source hands the computation to PyTorch or the Python runtime", in any language
COMMON_FORBIDDEN = {
    r"\btorch\b": "uses torch",
    r"\bATen\b|\bat::|\bc10::": "uses ATen/c10 (PyTorch's C++ library)",
    r"Python\.h|\bpybind11\b|\bPyObject\b": "calls into the Python runtime",
    r"\bdlopen\b|\bdlsym\b|\bctypes\b|\bcffi\b|\bimportlib\b|__import__": "loads code at run time",
    r"\bsubprocess\b|\bos\.system\b|\bpopen\b": "runs other programs",
}


def forbidden_uses(source: str, extra: dict[str, str] | None = None, *, python: bool = False) -> list[str]:
    """Reasons the source is not an honest kernel; empty when none. Comments are blanked first (a comment
    that says "dlopen" is not a call); string literals are not, since code can be built from them. This scan is
    the first filter only: the linker's view of a build (``BuildResult.foreign_calls``) and the worker's checks
    at run time are what hold."""
    code = _without_comments(source, python)
    found = []
    for pattern, reason in {**COMMON_FORBIDDEN, **(extra or {})}.items():
        match = re.search(pattern, code)
        if match:
            line = code.count("\n", 0, match.start()) + 1
            found.append(f"{reason} (line {line}: {match.group(0)!r})")
    return found


def _without_comments(source: str, python: bool) -> str:
    """The source with every comment replaced by spaces (line numbers kept): ``#`` comments in Python, ``//``
    and ``/* */`` in C-family sources, outside string and character literals."""
    if python:
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError):
            return source
        lines = source.splitlines(keepends=True)
        for token in tokens:
            if token.type == tokenize.COMMENT:
                (row, start), (_, end) = token.start, token.end
                lines[row - 1] = lines[row - 1][:start] + " " * (end - start) + lines[row - 1][end:]
        return "".join(lines)
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        elif source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", source[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)
