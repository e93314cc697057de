"""Runner of the CPU backend: loads C++ libraries through the kevolve_kernel ABI, or numba modules."""

from __future__ import annotations

import re

import torch
from kevolve.backend.runner import KernelFn, Runner, load_kernel_module
from kevolve.backend.toolchain import BuildResult

from kevolve_cpu.cpp_loader import CppKernel


class NumbaKernel:
    """A numba kernel file's ``kernel(*arrays)``: numpy views of the inputs, then of the outputs."""

    def __init__(self, path: str) -> None:
        self.module, self.fn = load_kernel_module(path)

    def __call__(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        self.fn(*[t.numpy() for t in inputs], *[t.numpy() for t in outputs])

    def outside_contract(self) -> list[str]:
        """Once it has run: what the module's compiled functions call that numba's own code does not (a BLAS or
        LAPACK routine behind ``np.dot`` or ``np.linalg``, the Python C API), read from their LLVM IR."""
        from numba.core.dispatcher import Dispatcher

        found = set()
        for value in vars(self.module).values():
            if not isinstance(value, Dispatcher):
                continue
            for signature in value.signatures:
                found.update(f"calls {name}" if name else "calls a function by its address (ctypes, cffi)"
                             for name in _called(value.inspect_llvm(signature))
                             if not name or (FOREIGN_IN_NUMBA.match(name) and name not in NUMBA_GIL))
        return sorted(found)


def _called(llvm_ir: str) -> set[str]:
    """The functions called from the compiled functions of ``llvm_ir`` by name, and ``""`` for a call through a
    pointer (numba's own code makes none; a ctypes or cffi function is called so), less the wrappers numba adds
    to call them from Python (``cpython.``, ``cfunc.``), which use the Python C API to unpack their arguments."""
    called = set()
    for block in llvm_ir.split("\ndefine ")[1:]:
        name = re.match(r'[^@]*@"?([\w.$]+)', block)
        if name and not name.group(1).startswith(NUMBA_WRAPPERS):
            called.update(re.findall(r'\bcall\b[^@%\n]*@"?([\w.$]+)"?\(', block))
            if re.search(r'\bcall\b[^@%\n]*%[\w.]+\(', block):
                called.add("")
    return called


#: the prefixes of numba's wrapper functions' names
NUMBA_WRAPPERS = ("_ZN7cpython", "cfunc.")


#: external functions in a numba kernel's LLVM IR that do its work elsewhere: numba's BLAS and LAPACK wrappers
#: (numba_xxgemm, numba_xxdot, numba_xgesv, ...), CBLAS, and the Python C API (object mode)
FOREIGN_IN_NUMBA = re.compile(r"^(numba_x|cblas_|Py|_Py)")

#: the C API functions numba's parallel loops call to let go of the GIL and take it back (they compute nothing)
NUMBA_GIL = {"PyEval_SaveThread", "PyEval_RestoreThread"}


class CpuRunner(Runner):
    device = "cpu"
    runtime_packages = ("numba",)
    #: C++ kernels are compiled before they load and numba compiles in the process: nothing a kernel's load or
    #: call needs starts a process
    confines_kernel = True

    def load(self, build: BuildResult) -> KernelFn:
        if build.language == "cpp":
            return CppKernel(build.artifact)
        if build.language == "numba":
            return NumbaKernel(build.artifact)
        raise ValueError(f"the CPU runner cannot load {build.language!r} artifacts")
