"""What the worker watches in its own process while a candidate runs: the other threads' CPU time, child
processes, and the clocks the timing reads. Mechanisms, not word lists: a kernel that leaves work running after
its call returned, starts a process, or replaces a clock is caught by what it does, however it is spelled.

Linux's /proc gives each thread's run time in nanoseconds (``schedstat``); where it is missing, nothing is
watched there and the timed calls' output checks still hold.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

#: the threads other than the one that called the kernel, busy together for more than this share of a quiet
#: window after the kernel's timed calls, are still working for it, unless a later window is quiet. OpenMP and
#: PyTorch thread pools spin for a few milliseconds of CPU after a parallel region before they sleep (3-4 ms on
#: the 2-core dev VM; spread over more wall time when other processes load the machine), so a pool settles within
#: a window or two; work handed to a thread keeps it busy in every window. (The last timed call's outputs are copied the
#: moment the clock stops and checked, so work left running can only be a later call's or someone else's.)
BUSY_SHARE = 0.3

#: how many windows the other threads may stay busy before they count as working
BUSY_WINDOWS = 6


def threads() -> set[int]:
    """Thread ids of this process (empty where /proc is missing)."""
    task = Path("/proc/self/task")
    return {int(entry.name) for entry in task.iterdir()} if task.exists() else set()


def _thread_run_ns() -> dict[int, int]:
    """Run time in ns of each thread of this process but the calling one."""
    me = threading.get_native_id()
    times = {}
    for task in Path("/proc/self/task").iterdir() if Path("/proc/self/task").exists() else []:
        if int(task.name) == me:
            continue
        try:
            times[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return times


def other_threads_busy(window_s: float) -> float:
    """Seconds of CPU the other threads of this process used together in each of :data:`BUSY_WINDOWS` windows
    of ``window_s`` (after as long a settling wait), if more than :data:`BUSY_SHARE` of every one; 0.0 as soon as
    one window is quiet. Summed, not the busiest thread's: many threads sharing the work (or the GIL) each use a
    small share of a window, and together hold the CPU all the same."""
    time.sleep(window_s)
    busy = 0.0
    for _ in range(BUSY_WINDOWS):
        before = _thread_run_ns()
        time.sleep(window_s)
        after = _thread_run_ns()
        busy = sum(after[tid] - before.get(tid, 0) for tid in after) / 1e9
        if busy <= BUSY_SHARE * window_s:
            return 0.0
    return busy


def group_members() -> set[int]:
    """Pids of the other live processes of this process's group: what it started, however deep (a grandchild
    whose parent exited is re-parented away but stays in the group)."""
    me, group = os.getpid(), os.getpgid(0)
    return {pid for pid, fields in processes() if pid != me and len(fields) > 2 and int(fields[2]) == group
            and fields[0] != "Z"}


def processes() -> list[tuple[int, list[str]]]:
    """Each process's pid and the fields of its /proc stat after the command name (state, ppid, pgrp, ...)."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").exists() else []:
        if entry.name.isdigit():
            try:
                found.append((int(entry.name), (entry / "stat").read_text().rpartition(")")[2].split()))
            except OSError:
                continue
    return found


def children() -> set[int]:
    """Pids of this process's live children (zombies included: they were started all the same)."""
    me = os.getpid()
    return {pid for pid, fields in processes() if len(fields) > 1 and int(fields[1]) == me}


def clock_identity() -> dict[str, Any]:
    """The clock functions the timing reads, by name: a candidate that replaces one (``time.perf_counter =
    ...``) makes its time whatever it likes."""
    clocks: dict[str, Any] = {f"time.{name}": getattr(time, name)
                              for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time",
                                           "time_ns", "process_time", "thread_time")}
    import torch

    clocks.update({"torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
                   "torch.cuda.Event.record": torch.cuda.Event.record,
                   "torch.cuda.synchronize": torch.cuda.synchronize})
    return clocks


def changed_clocks(before: dict[str, Any]) -> list[str]:
    """The clocks of ``before`` that are no longer the same objects."""
    now = clock_identity()
    return [name for name, clock in before.items() if now.get(name) is not clock]
