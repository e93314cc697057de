"""The cpu target's workers run kernels on a thread of their own (kevolve.harness.confine); started with the
backend's worker environment, that thread allocates from the main malloc arena as a caller's main thread does, so
a large output freed and made again is reused there as it is in the caller's loop, not unmapped and faulted in
again (bucketize's 32 MiB output: 13.2 ms a call against 5.4 ms)."""

from __future__ import annotations

import os
import subprocess
import sys

from kevolve.plugins import get_manager

#: a caching setting of the main arena, as the benchmarks run (bench/report.py)
CACHING = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**36),
           "MALLOC_TOP_PAD_": str(512 * 2**20)}
PAGES = 32 * 2**20 // 4096

#: page faults of four 32 MiB allocations on the kernel's thread, after three to warm the allocator
REUSE = f"""
import resource, torch
from kevolve.harness.confine import KernelThread

def faults():
    for _ in range(3):
        x = torch.empty({32 * 2**20 // 4}); x.fill_(1); del x
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(4):
        x = torch.empty({32 * 2**20 // 4}); x.fill_(1); del x
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

print(KernelThread().run(faults))
"""


def faults_on_the_kernel_thread(env: dict[str, str]) -> int:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", REUSE], env={**base, **CACHING, **env}, capture_output=True,
                          text=True, timeout=120, check=True)
    return int(done.stdout.split()[-1])


def test_the_kernel_thread_reuses_a_freed_output_as_the_main_thread_does():
    registered = get_manager().target("cpu")
    with_worker_env = faults_on_the_kernel_thread(registered.backend.worker_env(registered.spec))
    without = faults_on_the_kernel_thread({})
    assert without >= 4 * PAGES - 64, without  # a thread arena of its own: every allocation faults its pages in
    assert with_worker_env < PAGES // 4, with_worker_env
