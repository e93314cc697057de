"""Scratch memory for Python kernel files (Triton, CUDA through cupy): the harness side of the contract.

A kernel file whose launcher needs memory besides its outputs (a lowered program's intermediates, the constants
its kernels read on the device) defines ``scratch(inputs, outputs)``, returning one ``(dtype name, size)`` per
buffer: ``size`` an element count for uninitialised memory, or a list of values for a constant buffer. The
harness allocates them on the outputs' device and calls ``kernel(inputs, outputs, buffers)``; the launcher
itself stays free of torch (it only views the buffers, with ``as_strided``). The allocation is the harness's
work, like the outputs', so it is not held against the kernel (:data:`PLUMBING`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy
import torch

#: this module's torch calls are the harness allocating, not the kernel computing
PLUMBING = (__name__,)
ENTRY = "scratch"


def with_scratch(module: ModuleType, fn: Callable) -> Callable:
    """``fn`` itself, or for a file that defines ``scratch``: ``kernel(inputs, outputs)`` that allocates the
    buffers it asks for and passes them as the third argument."""
    request = getattr(module, ENTRY, None)
    if not callable(request):
        return fn

    def kernel(inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> Any:
        return fn(inputs, outputs, allocate(request(inputs, outputs), (outputs or inputs)[0].device))

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def allocate(requests: list[tuple[str, Any]], device: torch.device) -> list[torch.Tensor]:
    buffers = []
    for dtype_name, size in requests:
        dtype = getattr(torch, str(dtype_name), None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"scratch(): {dtype_name!r} is not a dtype name (float32, int64, ...)")
        if isinstance(size, (list, tuple)):
            # through numpy, not torch.tensor: that one runs ops of its own where the harness's recording cannot
            # see them, which would pass for a kernel computing out of its sight (kevolve.harness.unseen)
            buffers.append(torch.from_numpy(numpy.asarray(size)).to(dtype=dtype, device=device, copy=True))
        else:
            buffers.append(torch.empty(int(size), dtype=dtype, device=device))
    return buffers
