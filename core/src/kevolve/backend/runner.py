"""Runner: loads a built kernel inside the worker process and times callables on the device."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Protocol

import torch

from kevolve.backend.toolchain import BuildResult


class KernelFn(Protocol):
    """A loaded kernel: ``kernel(inputs, outputs)``. A loader may give it more to say, which core asks for where
    present: ``outside_contract() -> list[str]``, once it has run, what it called outside its language's
    contract (e.g. a numba kernel's BLAS routines); ``native_launch(build_library, value_dependent)``, a C function the op's
    native per-call path launches it with (see kevolve.delivery.runtime)."""

    def __call__(self, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> None: ...


@dataclass
class Audit:
    """What a runner saw one call of a kernel do besides its own work (:meth:`Runner.audit`)."""

    #: rules the call broke, each in words with its evidence: the candidate is rejected
    violations: list[str] = field(default_factory=list)
    #: why the runner's usual timer might miss part of the call's work, so the call is timed by the host's clock
    #: over back-to-back calls (waiting for all of the device's work); "" where nothing stands in the way
    host_clock: str = ""


#: ``case()`` of :meth:`Runner.audit`: a call's inputs, its poisoned outputs, and the judge of what it wrote
Judge = Callable[[list[torch.Tensor]], str | None]
AuditCase = Callable[[], tuple[list[torch.Tensor], list[torch.Tensor], Judge]]

_module_ids = itertools.count()


def load_kernel_module(path: str, entry: str = "kernel") -> tuple[ModuleType, Callable]:
    """Import a Python kernel file under a fresh module name (two candidates never share module state) and
    return it with its entry point; a file without one is a load error that names it."""
    from kevolve.harness.launchers import record_file

    record_file(path)  # before its code runs: what it may do is checked from its first line
    spec = importlib.util.spec_from_file_location(f"kevolve_kernel_{next(_module_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: code that finds its globals by module name (numba) does
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if not callable(fn):
        raise ValueError(f"{path} defines no `{entry}` function")
    from kevolve.backend.scratch import with_scratch

    return module, with_scratch(module, fn) if entry == "kernel" else fn


class Runner(ABC):
    #: torch device the kernel's inputs and outputs live on
    device: str = "cpu"
    #: modules of the language's own runtime whose tensor plumbing (e.g. the Triton interpreter copying
    #: arguments to the host and back) is not the kernel's computation; torch ops they dispatch are not held
    #: against the kernel. Ops dispatched from the kernel's own code always are.
    plumbing_modules: tuple[str, ...] = ()
    #: packages of the language's runtime that a Python kernel file's own code may call into (a launcher calling
    #: ``triton``); what else that code may call is harness/launchers.py's
    runtime_packages: tuple[str, ...] = ()
    #: whether :meth:`flush_cache` evicts the caches before each timed call (bandwidth is then judged against
    #: the outermost memory level)
    cold_cache: bool = False
    #: whether the worker loads and calls this runner's kernels on a thread whose seccomp filter refuses process
    #: creation, running programs and tracing (harness/confine.py); a runner whose kernels compile on first call
    #: by running a compiler (Triton on a GPU: ``ptxas``) cannot. Its backend starts the workers with
    #: :func:`kevolve.harness.confine.worker_env` (``Backend.worker_env``), so that the thread allocates as a
    #: caller's main thread does
    confines_kernel: bool = False

    @abstractmethod
    def load(self, build: BuildResult) -> KernelFn:
        """Turn a build into a callable writing into preallocated outputs."""

    def synchronize(self) -> None:
        """Wait for the device to finish queued work (no-op on the CPU)."""

    def flush_cache(self) -> None:
        """Evict caches between repetitions where the runner's timing model asks for cold caches."""

    def start_device(self) -> None:
        """Start the device's runtime (its context, the buffers timing uses) before the worker waits for the
        device: a process's start-up is not a kernel's work and need not hold the device while another
        candidate is timed on it. Nothing to start on the host."""

    def device_key(self) -> str | None:
        """Names this device alike in every process that uses it, and apart from every other device: the lock
        that keeps two candidates off one device at once is taken by this name. None where no lock is needed:
        the host's cores, which the executor keeps quiet while a kernel is timed on them. Called after
        :meth:`start_device`."""
        return None if self.device == "cpu" else self.device

    def audit(self, kernel: KernelFn, case: AuditCase) -> Audit:
        """Before timing, what one call ``kernel(inputs, outputs)`` does besides its own work, where this runner can
        see it: work the timer would not wait for, memory the call was not given. ``case()`` draws the call's
        ``(inputs, outputs, judge)``; ``judge(outputs)`` says what is wrong with outputs the audit had the kernel
        write (None when right), its reference computed only then, after the kernel's calls. Here: nothing to see
        (a host timer waits for everything), so nothing is drawn."""
        return Audit()

    def time_interleaved(self, thunks: dict[str, Callable[[], object]], *, repeats: int,
                         inner: dict[str, int], host_clock: bool = False,
                         before_call: Callable[[], object] = lambda: None) -> dict[str, list[float]]:
        """Seconds per call for each thunk, sampled round-robin so that machine noise (frequency changes,
        neighbours) hits every contender alike. ``inner[name]`` calls make one sample, each preceded by
        ``before_call`` outside the clock (the harness changes an input there so that no call sees an input
        again: harness/variation.py). Here by the host's clock at the rate a caller's loop of calls gets: the
        device is synchronised before a sample and once after its last call (that wait is counted), not around
        each call, so a call's device work after its last host read overlaps the next call's host side as it does
        in a loop (jagged_truncate on a lent H200, synchronising each call: harness 1.13x eager against the 1.40x
        a caller's loop got). ``host_clock`` asks a runner that times otherwise (device events) to time so too."""
        samples: dict[str, list[float]] = {name: [] for name in thunks}
        for _ in range(repeats):
            for name, thunk in thunks.items():
                self.flush_cache()
                self.synchronize()
                total = 0.0
                for _ in range(inner[name]):
                    before_call()
                    start = time.perf_counter()
                    thunk()
                    total += time.perf_counter() - start
                start = time.perf_counter()
                self.synchronize()
                total += time.perf_counter() - start
                samples[name].append(total / inner[name])
        return samples
