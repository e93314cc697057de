"""Standalone export for the GPU backends: a package holding the kernel file exactly as it was checked and an
``__init__`` that exports its launcher. A Triton (or CUDA C++ in Python) kernel file needs its own runtime and
torch, never kevolve."""

from __future__ import annotations

from pathlib import Path

_INIT = '''"""Standalone kevolve kernel ({language}) for {target}. Needs {needs}; kevolve is not required.

    from <this package> import kernel
    kernel(inputs, outputs)   # lists of contiguous GPU tensors; outputs preallocated, every element written

Problem, parameters and measured speedups are in kevolve.json next to this file.
"""

{export}

__all__ = ["kernel"]
'''


def write_package(source: str, language: str, target: str, needs: str, directory: Path,
                  support: dict[str, str] | None = None, export: str = "from .kernel import kernel") -> list[str]:
    """``kernel.py`` (the source), the ``support`` modules (name -> text) and an ``__init__`` running ``export``,
    which must bind ``kernel``."""
    files = {"kernel.py": source, **(support or {})}
    for name, text in files.items():
        (directory / name).write_text(text)
    (directory / "__init__.py").write_text(_INIT.format(language=language, target=target, needs=needs,
                                                        export=export))
    return ["__init__.py", *files]


def replaying() -> tuple[dict[str, str], str]:
    """The support modules and export that make ``kernel`` a :class:`kevolve_triton.replay.ReplayKernel`, so an
    installed op replays its launches from C as it does in kevolve (and gets the scratch buffers it asks for)."""
    import kevolve.backend.scratch as scratch

    here = Path(__file__).resolve().parent
    support = {"replay.py": (here / "replay.py").read_text(), "replay.cpp": (here / "replay.cpp").read_text(),
               "scratch.py": Path(scratch.__file__).read_text()}
    export = ("from . import kernel as _file\nfrom .replay import ReplayKernel\nfrom .scratch import allocate\n\n"
              "kernel = ReplayKernel(_file, allocate)")
    return support, export
