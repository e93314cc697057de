"""Standalone export for the GPU backends: a package holding the kernel file exactly as it was checked and an
``__init__`` that re-exports its launcher. A Triton (or CUDA C++ in Python) kernel file needs its own runtime
and torch, never kevolve."""

from __future__ import annotations

from pathlib import Path

_INIT = '''"""Standalone kevolve kernel ({language}) for {target}. Needs {needs}; kevolve is not required.

    from <this package> import kernel
    kernel(inputs, outputs)   # lists of contiguous GPU tensors; outputs preallocated, every element written

Problem, parameters and measured speedups are in kevolve.json next to this file.
"""

from .kernel import kernel

__all__ = ["kernel"]
'''


def write_package(source: str, language: str, target: str, needs: str, directory: Path) -> list[str]:
    (directory / "kernel.py").write_text(source)
    (directory / "__init__.py").write_text(_INIT.format(language=language, target=target, needs=needs))
    return ["__init__.py", "kernel.py"]
