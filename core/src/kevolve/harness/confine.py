"""The kernel's own thread: where a runner asks for it (``Runner.confines_kernel``), a candidate's load and every
call of it run on one thread of the worker whose seccomp filter kills the worker at the first system call that
creates a process, runs a program or reaches into another process's memory.

A source scan is one spelling short and the linker's view misses raw system calls (inline ``syscall``
instructions); the kernel's syscalls are not. The filter is the thread's (no ``TSYNC``), inherited by every
thread the kernel starts, and not the rest of the worker's: the worker itself still starts what it needs after
a kernel loaded (``perf`` for counters, the C++ compiler behind the op's native path). Threads stay allowed
(``clone`` with ``CLONE_THREAD``; ``clone3``, whose flags a filter cannot read, answers ``ENOSYS`` and the C
library falls back to ``clone``). A worker killed so is seen by its parent (``SIGSYS``) and the candidate is
rejected by that rule (:func:`kevolve.harness.isolation.run_isolated`).

The baselines are timed on the same thread as the kernel: an OpenMP team belongs to the thread that starts it,
and a kernel's team beside eager's on another thread doubled both times (matmul 512 with two threads on the
2-core VM: 1966-2044 us in the harness against 1085 unconfined and 1190 in a caller's loop). So the thread
starts unfiltered, prepares the compiled baselines (Inductor compiles by running the C++ compiler), and is
sealed (:meth:`KernelThread.seal`) before the kernel loads.

A thread of its own also allocates from a malloc arena of its own, where a caller's main thread uses the main
one: under a caching setting of the main arena (the benchmarks' ``MALLOC_TOP_PAD_`` and trim threshold) a 32 MiB
output was kept and reused by the caller's loop but unmapped and faulted in again on the kernel's thread
(bucketize 4M on the 2-core VM: 5.4 ms a call on the main thread, 13.2 ms on another; the harness read 7.9x eager
where a caller's loop got 17.8x). A backend whose runner confines its kernels starts its workers with
:func:`worker_env` (``Backend.worker_env``): one arena, the main one, for every thread.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: system calls a kernel's thread may not make: process creation, running a program, tracing, and reading or
#: writing another process's memory
FORBIDDEN = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev")
CLONE_THREAD = 0x00010000
#: what the worker's parent says of a worker the filter killed
RULE = ("made a system call a kernel may not make (process creation, running a program, or tracing another "
        "process), refused by its thread's seccomp filter, which killed the worker (SIGSYS)")


def worker_env() -> dict[str, str]:
    """The environment of workers whose kernels run on their own thread: it allocates as the caller's main thread
    does (one malloc arena), unless the caller chose an arena count (read when the workers start)."""
    return {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "1")}


def _install_filter() -> None:
    import pyseccomp as seccomp

    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in FORBIDDEN:
        rules.add_rule(seccomp.KILL_PROCESS, name)
    rules.add_rule(seccomp.KILL_PROCESS, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.load()


class KernelThread:
    """Runs what it is given on its own thread, one call at a time, and hands back the result or raises what the
    call raised; :meth:`seal` installs the filter there. Where the filter cannot be installed (no libseccomp,
    another OS), :attr:`unconfined` says why and calls still run on the thread."""

    def __init__(self) -> None:
        self.unconfined = ""
        try:
            import pyseccomp  # noqa: F401  (loading libseccomp runs ldconfig: not on a sealed thread)
        except (ImportError, OSError) as exc:
            self.unconfined = f"no seccomp filter: {type(exc).__name__}: {exc}"
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="kevolve-kernel", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, answer = job
            try:
                answer.put((True, fn()))
            except BaseException as exc:  # handed to the caller's thread as it was raised
                answer.put((False, exc))

    def run(self, fn: Callable[[], T]) -> T:
        answer: queue.SimpleQueue = queue.SimpleQueue()
        self._jobs.put((fn, answer))
        ok, value = answer.get()
        if not ok:
            raise value
        return value

    def seal(self) -> None:
        """Install the filter on the thread: from here on what it runs cannot start a process."""
        if self.unconfined:
            return
        try:
            self.run(_install_filter)
        except Exception as exc:  # libseccomp fails in several ways (kernel, architecture, permissions)
            self.unconfined = f"no seccomp filter: {type(exc).__name__}: {exc}"

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()


class SameThread:
    """For runners that do not confine their kernels: calls run where they are made."""

    unconfined = ""  # no confinement was asked for, so none is missing

    @staticmethod
    def run(fn: Callable[[], T]) -> T:
        return fn()

    def seal(self) -> None:
        pass

    def close(self) -> None:
        pass


def kernel_thread(confines: bool) -> KernelThread | SameThread:
    """A :class:`KernelThread` where ``confines``, else :class:`SameThread`."""
    return KernelThread() if confines else SameThread()
