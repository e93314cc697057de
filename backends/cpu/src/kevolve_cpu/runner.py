"""Runner of the CPU backend: loads C++ libraries through the kevolve_kernel ABI, or numba modules."""

from __future__ import annotations

import importlib.util
import itertools

import torch

from kevolve.backend.runner import KernelFn, Runner
from kevolve.backend.toolchain import BuildResult
from kevolve_cpu.cpp_loader import CppKernel

_module_ids = itertools.count()


def load_numba(path: str) -> KernelFn:
    """A numba kernel file defines ``kernel(*arrays)``: numpy views of the inputs, then of the outputs."""
    spec = importlib.util.spec_from_file_location(f"kevolve_numba_kernel_{next(_module_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, "kernel", None)
    if fn is None:
        raise ValueError(f"{path} defines no `kernel(*arrays)` function")

    def call(inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        fn(*[t.numpy() for t in inputs], *[t.numpy() for t in outputs])

    return call


class CpuRunner(Runner):
    device = "cpu"

    def load(self, build: BuildResult) -> KernelFn:
        if build.language == "cpp":
            return CppKernel(build.artifact)
        if build.language == "numba":
            return load_numba(build.artifact)
        raise ValueError(f"the CPU runner cannot load {build.language!r} artifacts")
