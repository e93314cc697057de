"""The cpu target's workers run kernels on a thread of their own (kevolve.harness.confine); started with the
backend's worker environment, that thread allocates from the main malloc arena as a caller's main thread does.
With an arena of its own, a large output freed and made again was unmapped and faulted in again on every call
where the caller's loop reused it (bucketize's 32 MiB output: 13.2 ms a call against 5.4 ms;
bench/notes/kernel_thread.md). glibc's malloc_stats lists the process's arenas."""

from __future__ import annotations

import os
import subprocess
import sys

from kevolve.plugins import get_manager

#: the arenas glibc lists after a 16 MiB tensor is made and filled on the kernel's thread
ARENAS = """
import ctypes, torch
from kevolve.harness.confine import KernelThread

def on_the_kernel_thread():
    x = torch.empty(4 * 2**20)
    x.fill_(1)
    ctypes.CDLL("libc.so.6").malloc_stats()  # to stderr: one "Arena N:" block per arena
    return float(x[0])

KernelThread().run(on_the_kernel_thread)
"""


def arenas(env: dict[str, str]) -> int:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", ARENAS], env={**base, **env}, capture_output=True, text=True,
                          timeout=120, check=True)
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_the_kernel_thread_allocates_from_the_main_arena():
    registered = get_manager().target("cpu")
    assert arenas({}) >= 2  # by default the kernel's thread gets an arena of its own
    assert arenas(registered.backend.worker_env(registered.spec)) == 1
