"""Runner of the CPU backend: loads C++ libraries through the kevolve_kernel ABI, or numba modules."""

from __future__ import annotations

import torch
from kevolve.backend.runner import KernelFn, Runner, load_kernel_module
from kevolve.backend.toolchain import BuildResult

from kevolve_cpu.cpp_loader import CppKernel


def load_numba(path: str) -> KernelFn:
    """A numba kernel file defines ``kernel(*arrays)``: numpy views of the inputs, then of the outputs."""
    _, fn = load_kernel_module(path)

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
