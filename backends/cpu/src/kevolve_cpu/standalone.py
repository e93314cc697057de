"""Standalone export: a directory that builds and runs the kernel with torch and a C++ compiler, no kevolve."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kevolve_cpu.toolchain import CXXFLAGS

_CPP_INIT = '''"""Standalone kevolve kernel. Needs torch and a C++ compiler (g++ or $CXX); kevolve is not required. The
kernel is compiled on first import (kernel.so, kept next to this file).

    from <this package> import kernel
    kernel(inputs, outputs)   # lists of contiguous torch tensors; outputs preallocated, every element written
"""

import os
import shlex
import subprocess
from pathlib import Path

from .cpp_loader import CppKernel

HERE = Path(__file__).resolve().parent
FLAGS = {flags!r}


def build() -> Path:
    library = HERE / "kernel.so"
    if not library.exists() or library.stat().st_mtime < (HERE / "kernel.cpp").stat().st_mtime:
        partial = HERE / f"kernel.so.{{os.getpid()}}"  # renamed when whole: a concurrent import never loads half
        command = [os.environ.get("CXX", "g++"), *FLAGS, f"-I{{HERE}}", str(HERE / "kernel.cpp"), "-o", str(partial)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building the kernel failed: {{shlex.join(command)}}\\n{{done.stderr}}")
        os.replace(partial, library)
    return library


kernel = CppKernel(str(build()))
'''

_NUMBA_INIT = '''"""Standalone kevolve kernel (numba). Needs numba and torch; kevolve is not required.

    from <this package> import kernel
    kernel(inputs, outputs)   # lists of contiguous CPU torch tensors; outputs preallocated
"""

from . import kernel_numba


def kernel(inputs, outputs) -> None:
    kernel_numba.kernel(*[t.numpy() for t in inputs], *[t.numpy() for t in outputs])
'''


def write_standalone(source: str, language: str, directory: Path) -> list[str]:
    package = resources.files("kevolve_cpu")
    if language == "cpp":
        (directory / "kernel.cpp").write_text(source)
        for name in ("kevolve_kernel.h", "kevolve_math.h"):
            (directory / name).write_text(package.joinpath(f"include/{name}").read_text())
        for name in ("cpp_loader.py", "kv_launch.cpp"):
            (directory / name).write_text(package.joinpath(name).read_text())
        flags = [f for f in CXXFLAGS if f != "-fstack-usage"]
        (directory / "__init__.py").write_text(_CPP_INIT.format(flags=flags))
        return ["__init__.py", "kernel.cpp", "kevolve_kernel.h", "kevolve_math.h", "cpp_loader.py", "kv_launch.cpp"]
    if language == "numba":
        (directory / "kernel_numba.py").write_text(source)
        (directory / "__init__.py").write_text(_NUMBA_INIT)
        return ["__init__.py", "kernel_numba.py"]
    raise ValueError(f"cannot export {language!r} kernels")
