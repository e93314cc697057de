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

    # cupy 14 takes streams through the CUDA stream protocol and deprecates ExternalStream; older cupy has only that
    if hasattr(cupy.cuda.Stream, "from_external") and hasattr(torch.cuda.Stream, "__cuda_stream__"):
        def adopt(stream):
            return cupy.cuda.Stream.from_external(stream)
    else:
        def adopt(stream):
            return cupy.cuda.ExternalStream(stream.cuda_stream)

    def kernel(inputs: list, outputs: list) -> None:
        with adopt(torch.cuda.current_stream()):
            launch(inputs, outputs)

    return kernel
