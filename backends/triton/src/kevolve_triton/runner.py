"""Runners for Triton kernel files: the Triton interpreter on the CPU (correctness anywhere, no timing), or a
GPU through PyTorch's device API (CUDA and ROCm alike) timed with device events on a cold L2."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import torch
from kevolve.backend.runner import Audit, AuditCase, KernelFn, Runner, load_kernel_module
from kevolve.backend.toolchain import BuildResult

from kevolve_triton.toolchain import ENV


class TritonInterpreterRunner(Runner):
    """Runs kernels through ``TRITON_INTERPRET=1`` on CPU tensors: numerically what the kernel computes,
    nothing about how fast. The interpreter copies arguments to host buffers and back through torch; those
    copies are its plumbing, not the kernel's computation."""

    device = "cpu"
    plumbing_modules = ("triton.runtime.interpreter",)
    runtime_packages = ("triton",)
    #: the process must start with it: Triton's own @jit helpers (tl.sum, tl.cdiv, ...) are made interpreted
    #: or compiled once, when triton is first imported
    ENV = {"TRITON_INTERPRET": "1"}

    def load(self, build: BuildResult) -> KernelFn:
        if build.language != "triton":
            raise RuntimeError(f"{build.language} kernels run only on their GPU and none is here (the Triton "
                               "interpreter runs Triton kernels only): it compiled, its resources are in the "
                               "build, its results were not checked")
        os.environ.update({**ENV, **self.ENV})
        _widen_bf16_dots()
        _round_bf16_casts()
        _, fn = load_kernel_module(build.artifact)
        return fn


def _widen_bf16_dots() -> None:
    """The interpreter keeps bfloat16 as raw uint16 and multiplies the bit patterns in ``tl.dot``
    (triton-lang/triton#11584); the GPU multiplies the values. Widening bf16 operands to float32 first makes the
    interpreter compute what the hardware computes (bf16 products are exact in float32)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_kevolve_widens_bf16", False):
        return
    original = builder.create_dot

    def widen(handle):
        if handle.dtype != tl.bfloat16:
            return handle
        return interpreter.TensorHandle((handle.data.astype(np.uint32) << 16).view(np.float32), tl.float32)

    def create_dot(self, a, b, d, *args, **kwargs):
        return original(self, widen(a), widen(b), d, *args, **kwargs)

    builder.create_dot = create_dot
    builder._kevolve_widens_bf16 = True


def _round_bf16_casts() -> None:
    """The interpreter casts float32 to bfloat16 by dropping the low 16 bits; the GPU (and Triton's default
    rounding for ``.to(tl.bfloat16)``) rounds to nearest even, as PyTorch does. Rounding here makes interpreted
    bfloat16 results those of the hardware, bit for bit (NaN stays a quiet NaN)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_kevolve_rounds_bf16", False):
        return
    original = builder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar != tl.float32 or dst_type.scalar != tl.bfloat16:
            return original(self, src, dst_type)
        bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
        nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
        out = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)
        return interpreter.TensorHandle(out, dst_type.scalar)

    builder.cast_impl = cast_impl
    builder._kevolve_rounds_bf16 = True


class TritonGpuRunner(Runner):
    """Launches on the GPU. Each timed call starts with L2 evicted and clean (a read over a buffer twice the
    L2 size) and is timed by its own pair of device events, so queued launches of the CPU side do not count.

    The eviction reads rather than writes: a write leaves L2 full of the flush's own dirty lines, which the
    timed call then has to write back to make room. On the lent H100 that cost a call 4 us at 34 MB and about
    6 us from 64 MB up: a 34 MB ``copy_`` ran at 70% of a 1 GiB copy's bandwidth behind the write and at 92%
    behind a read, layer_norm 4096x4096 bf16 at 80% and 99% (bench/results/nvidia_h100/flush.md).

    Between the flush and the start event the GPU spins: by the time the start event fires, the host has
    enqueued the timed call. Without it, a call whose host side (a Triton launch from Python costs tens of
    microseconds) outlasts the flush left the GPU idle inside the timed window, which doubled the time of 25 us
    kernels while eager's C++-launched ones were unaffected. The spin is at least ``preroll_cycles`` and at
    least twice the slowest call's host side, measured before timing. 200k cycles (about 100 us) was too
    little on the lent H100 machine: a launch with host-side tensor descriptors (72 us of host time) timed 115
    us per call behind it against 104 us behind 800k, and torch.compile of rms_norm 4096x512 bf16 (51-75 us of
    host time back to back) timed 7.4 and 6.8 us per call in one pass behind 200k (ten calls a sample, one call
    a sample) but 19.5 and 57.3 in the next, and 7.2 and 6.8 behind 800k, while the kernel and a copy kept their
    6.8-7.3 us throughout (bench/timing_methods.py, 2026-11-25)."""

    cold_cache = True
    #: the least spin: about 400 us at H100/MI300 clocks
    preroll_cycles = 800_000

    def __init__(self, device: str = "cuda", flush_bytes: int = 256 << 20) -> None:
        self.device = device
        self.flush_bytes = flush_bytes
        self._flush: torch.Tensor | None = None

    #: the replaying kernel allocates the scratch buffers a file asks for, as the harness would
    plumbing_modules = ("kevolve_triton.replay",)
    runtime_packages = ("triton",)

    def load(self, build: BuildResult) -> KernelFn:
        os.environ.update(ENV)
        os.environ.pop("TRITON_INTERPRET", None)
        module, fn = load_kernel_module(build.artifact)
        if build.language != "triton":
            return fn
        from kevolve.backend.scratch import allocate

        from kevolve_triton.replay import ReplayKernel

        return ReplayKernel(module, allocate)

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def flush_cache(self) -> None:
        self.start_device()
        torch.sum(self._flush, dim=0, out=self._flush_sum)

    def start_device(self) -> None:
        """The context and the flush buffer: 0.8 s of a worker's first correctness call on a lent H200."""
        if self._flush is None:
            self._flush = torch.ones(self.flush_bytes // 4, dtype=torch.float32, device=self.device)
            self._flush_sum = torch.empty((), dtype=torch.float32, device=self.device)
            torch.cuda.synchronize()

    def device_key(self) -> str:
        """The GPU's UUID: every worker sees its own GPU as device 0 (timing lanes set ``CUDA_VISIBLE_DEVICES``),
        so the device's name alone would make two GPUs one lock. Where a build reports no UUID, the PCI
        address stands in (and, failing that, the model's name: one lock for all, slower but never shared)."""
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        where = getattr(props, "uuid", "") or ":".join(str(getattr(props, f"pci_{part}_id", "")) for part in
                                                        ("domain", "bus", "device"))
        return f"{self.device}-{where}-{props.name}"

    def audit(self, kernel: KernelFn, case: AuditCase) -> Audit:
        """Its launches on the caller's stream and into its own memory, and one call captured in a CUDA graph
        computing its outputs (kevolve_triton/audit.py)."""
        from kevolve_triton.audit import audit_call

        return audit_call(kernel, *case())

    def time_interleaved(self, thunks: dict[str, Callable[[], object]], *, repeats: int,
                         inner: dict[str, int], host_clock: bool = False,
                         before_call: Callable[[], object] = lambda: None) -> dict[str, list[float]]:
        """Device time per call behind the spin; or, with ``host_clock``, the host's clock over a loop of calls
        (the base runner's; L2 evicted before each sample): for calls that read the device to size their outputs,
        whose host side before the read a spin would hide and a caller pays (jagged_truncate: 99.9 us behind the
        spin against 112.4 us per call in a loop on the lent H100, eager 159 against 222 us;
        bench/results/nvidia_h100/op_overhead.md), and for calls a CUDA graph cannot capture."""
        if host_clock:
            return super().time_interleaved(thunks, repeats=repeats, inner=inner, before_call=before_call)
        preroll = self._preroll(thunks)
        samples: dict[str, list[float]] = {name: [] for name in thunks}
        for _ in range(repeats):
            for name, thunk in thunks.items():
                events = []
                for _ in range(inner[name]):
                    before_call()
                    self.flush_cache()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(preroll)
                    start.record()
                    thunk()
                    end.record()
                    events.append((start, end))
                torch.cuda.synchronize()
                samples[name].append(sum(s.elapsed_time(e) for s, e in events) / 1e3 / len(events))
        return samples

    def _preroll(self, thunks: dict[str, Callable[[], object]]) -> int:
        """The spin before each timed call: the GPU's spin rate and each thunk's host side (with the flush
        before it; median of three calls, not synchronised) measured here."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        torch.cuda._sleep(self.preroll_cycles)
        end.record()
        end.synchronize()
        cycles_per_s = self.preroll_cycles / (start.elapsed_time(end) / 1e3)
        host_s = 0.0
        for thunk in thunks.values():
            times = []
            for _ in range(3):
                began = time.perf_counter()
                self.flush_cache()
                thunk()
                times.append(time.perf_counter() - began)
            host_s = max(host_s, sorted(times)[1])
        torch.cuda.synchronize()
        return spin_cycles(host_s, cycles_per_s, self.preroll_cycles)


def spin_cycles(host_s: float, cycles_per_s: float, least: int) -> int:
    """GPU spin cycles that outlast twice a call's host side ``host_s`` (twice: the host's time varies from call
    to call), never fewer than ``least``."""
    return max(least, int(2 * host_s * cycles_per_s))
