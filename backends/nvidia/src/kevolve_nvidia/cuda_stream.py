"""CUDA C++ kernel files launch through cupy, which launches on its own current stream. Each call runs with
cupy's current stream set to PyTorch's, so the kernel stays ordered with the work that made its inputs and the
work that reads its outputs (side streams and CUDA graph capture included). Needs no kevolve: standalone
exports of CUDA kernels carry a copy of this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def on_torch_stream(launch: Callable[[list, list], Any]) -> Callable[[list, list], None]:
    import cupy
    import torch

    def kernel(inputs: list, outputs: list) -> None:
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            launch(inputs, outputs)

    return kernel
