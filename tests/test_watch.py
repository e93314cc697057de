"""The worker's watch of the other threads after a kernel's timed calls (harness/watch.py): work handed to many
threads, each using a small share of the CPU, is as busy as one thread using it all (issue 32, class 1)."""

from __future__ import annotations

import threading
import time

import pytest

from kevolve.harness import watch

pytestmark = pytest.mark.skipif(not watch.threads(), reason="needs /proc's per-thread run times")


def _bursts(stop: threading.Event, burst_s: float, pause_s: float) -> None:
    """Short bursts of CPU with pauses between: at most burst_s / (burst_s + pause_s) of any window."""
    while not stop.is_set():
        end = time.thread_time() + burst_s
        while time.thread_time() < end:
            pass
        time.sleep(pause_s)


def _busy_with(threads: int, window_s: float) -> float:
    stop = threading.Event()
    workers = [threading.Thread(target=_bursts, args=(stop, 0.002, 0.010), daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        return watch.other_threads_busy(window_s)
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def test_many_threads_each_using_little_of_a_window_are_busy_together():
    """Eight threads, each at most a sixth of a window (less than BUSY_SHARE alone), hold a core together."""
    assert _busy_with(8, 0.01) > 0.0


def test_threads_that_settle_are_quiet():
    assert _busy_with(0, 0.01) == 0.0
