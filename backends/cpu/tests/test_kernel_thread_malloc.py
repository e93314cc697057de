"""The cpu target's workers run kernels on a thread of their own (kevolve.harness.confine); started with the
backend's worker environment, that thread allocates from the main malloc arena as a caller's main thread does, so
a large output freed and made again is reused there as it is in the caller's loop, not unmapped and faulted in
again (bucketize's 32 MiB output: 13.2 ms a call against 5.4 ms)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from kevolve.plugins import get_manager

#: a caching setting of the main arena, as the benchmarks run (bench/report.py)
CACHING = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**36),
           "MALLOC_TOP_PAD_": str(512 * 2**20)}
#: a block under the mmap threshold, so that only the arena decides whether it is reused
BLOCK = 16 * 2**20
PAGES = BLOCK // 4096

#: page faults of each of eight allocations of BLOCK on the kernel's thread, after eight to warm the allocator (the
#: main arena's top settles within five: the first ones land at addresses not touched before)
REUSE = f"""
import json, resource, torch
from kevolve.harness.confine import KernelThread

def faults():
    for _ in range(8):
        x = torch.empty({BLOCK // 4}); x.fill_(1); del x
    counts = []
    for _ in range(8):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        x = torch.empty({BLOCK // 4}); x.fill_(1); del x
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return counts

print(json.dumps(KernelThread().run(faults)))
"""


def faults_on_the_kernel_thread(env: dict[str, str]) -> list[int]:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-c", REUSE], env={**base, **CACHING, **env}, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_kernel_thread_reuses_a_freed_output_as_the_main_thread_does():
    registered = get_manager().target("cpu")
    with_worker_env = faults_on_the_kernel_thread(registered.backend.worker_env(registered.spec))
    without = faults_on_the_kernel_thread({})
    # a thread arena of its own gives the block back: every allocation faults its pages in again
    assert statistics.median(without) >= PAGES - 16, without
    assert statistics.median(with_worker_env) < PAGES // 4, with_worker_env
