"""The GPU runner of the NVIDIA targets: the Triton GPU runner, with CUDA C++ kernel files run on PyTorch's
current stream (``cuda_stream``)."""

from __future__ import annotations

from kevolve.backend.runner import KernelFn
from kevolve.backend.toolchain import BuildResult
from kevolve_triton.runner import TritonGpuRunner

from kevolve_nvidia.cuda_stream import on_torch_stream


class NvidiaGpuRunner(TritonGpuRunner):
    runtime_packages = ("triton", "cupy")

    def load(self, build: BuildResult) -> KernelFn:
        kernel = super().load(build)
        return on_torch_stream(kernel) if build.language == "cuda" else kernel
