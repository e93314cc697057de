"""Load a compiled kevolve CPU kernel (the ``kevolve_kernel`` C ABI) and call it on torch tensors.

This file is self-contained (ctypes and torch only) on purpose: the CPU runner uses it, and ``result.save()``
copies it next to the kernel as the standalone module's loader, so both run the same code.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from pathlib import Path

import torch

KV_DTYPES = {torch.float32: 0, torch.float64: 1, torch.bfloat16: 2, torch.float16: 3, torch.int64: 4,
             torch.int32: 5, torch.bool: 6, torch.uint8: 7}
#: the optional second entry point: ``int64_t kevolve_scratch_bytes(in, n_in, out, n_out)``
SCRATCH_ENTRY = "kevolve_scratch_bytes"
MAX_DIMS = 8


class KvTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int64), ("shape", ctypes.c_int64 * MAX_DIMS),
                ("strides", ctypes.c_int64 * MAX_DIMS), ("dtype", ctypes.c_int32)]


def _describe(tensors: list[torch.Tensor]):
    array = (KvTensor * max(1, len(tensors)))()  # a scratch slot is described too (then filled in)
    for slot, t in zip(array, tensors):
        if not t.is_contiguous():
            raise ValueError("kevolve CPU kernels take contiguous tensors; call .contiguous() first")
        if t.dim() > MAX_DIMS:
            raise ValueError(f"at most {MAX_DIMS} dims, got {t.dim()}")
        slot.data = t.data_ptr()
        slot.ndim = t.dim()
        for i, (size, stride) in enumerate(zip(t.shape, t.stride())):
            slot.shape[i], slot.strides[i] = size, stride
        slot.dtype = KV_DTYPES[t.dtype]
    return array


def launch_library(build_library: Callable[[Path, list[Path]], Path]) -> Path:
    """``kv_launch.cpp`` built by ``build_library`` against torch's headers (cached by it)."""
    here = Path(__file__).resolve().parent
    return build_library(here / "kv_launch.cpp", [here, here / "include"])


class CppKernel:
    """``kernel(inputs, outputs)`` calls the library's ``kevolve_kernel`` entry point; a torch op launches it from
    C (:meth:`native_launch`)."""

    def __init__(self, library_path: str) -> None:
        self.library = ctypes.CDLL(library_path)
        try:
            self._fn = self.library.kevolve_kernel
        except AttributeError:
            raise ValueError(f"{library_path} exports no kevolve_kernel(const kv_tensor*, int64_t, kv_tensor*, "
                             "int64_t) entry point; declare it with KV_EXPORT") from None
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [ctypes.POINTER(KvTensor), ctypes.c_int64, ctypes.POINTER(KvTensor), ctypes.c_int64]
        # optional: the bytes of scratch the kernel asks for (a lowered program's intermediates)
        self._scratch = getattr(self.library, SCRATCH_ENTRY, None)
        if self._scratch is not None:
            self._scratch.restype = ctypes.c_int64
            self._scratch.argtypes = self._fn.argtypes
        # kept from call to call, per thread: tens of MB allocated afresh would be mapped anew, and first
        # touch's page faults would cost more than the kernels (as kv_launch.cpp does for the op)
        self._kept = threading.local()

    def __call__(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        described_in = _describe(inputs)
        if self._scratch is None:
            code = self._fn(described_in, len(inputs), _describe(outputs), len(outputs))
        else:  # the scratch buffer goes one past the outputs, as out[n_out]
            described_out = _describe(outputs + [torch.empty(0, dtype=torch.uint8)])
            size = self._scratch(described_in, len(inputs), described_out, len(outputs))
            if size < 0:
                raise RuntimeError(f"kernel declined these arguments (asked for {size} bytes of scratch)")
            scratch = getattr(self._kept, "scratch", None)
            if scratch is None or scratch.numel() < size:
                scratch = self._kept.scratch = torch.empty(size, dtype=torch.uint8)
            described_out[len(outputs)].data = scratch.data_ptr()
            described_out[len(outputs)].shape[0] = size
            code = self._fn(described_in, len(inputs), described_out, len(outputs))
        if code != 0:
            raise RuntimeError(f"kernel declined these arguments (returned {code})")

    def native_launch(self, build_library: Callable[[Path, list[Path]], Path],
                      value_dependent: bool = False) -> tuple[int, int]:
        """The C function that launches this kernel from the op's native per-call path, and its state (the
        kernel's entry points: ``kevolve_kernel``, then ``kevolve_scratch_bytes`` or null). The same whether or
        not output sizes depend on values (``value_dependent``): the kernel reads its outputs' sizes itself."""
        self._launch = ctypes.CDLL(str(launch_library(build_library)))
        self._entries = (ctypes.c_void_p * 2)(ctypes.cast(self._fn, ctypes.c_void_p).value,
                                              ctypes.cast(self._scratch, ctypes.c_void_p).value
                                              if self._scratch is not None else None)
        return (ctypes.cast(self._launch.kevolve_cpu_launch, ctypes.c_void_p).value,
                ctypes.addressof(self._entries))
