"""Run one task in an isolated child process with a wall-clock timeout and a memory cap.

Children come from the zygote (:mod:`kevolve.harness.zygote`). A candidate that hangs, crashes, or grows
past the memory cap is killed and reported as such; the search carries on.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from kevolve.harness import confine
from kevolve.harness import evaluation as ev
from kevolve.harness.protocol import receive, send
from kevolve.harness.throughput import stage_of

_inside_worker = False


def inside_worker() -> bool:
    """Whether this process is a worker the harness forked for one task (harness/zygote.py). Code there may run a
    candidate's own code in-process (a Triton file's launcher, captured for its build): a crash, hang or memory
    blow-up costs only the task. Elsewhere, such code needs a process of its own."""
    return _inside_worker


def mark_inside_worker() -> None:
    global _inside_worker
    _inside_worker = True


def worker_environment(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's own environment, with its import path and what the backend asks for (``extra_env``).

    Nothing else is added: the allocator a worker times with is the caller's (glibc's defaults, or the
    ``MALLOC_*`` settings and a preloaded jemalloc/tcmalloc of the shell that runs kevolve), so the harness's
    speedups are what a call in the caller's process gets. Workers once kept freed blocks on their own; on the ads
    model's regions that made eager 2-3x faster in the harness than in the caller's process and reversed which
    side won (bench/notes/harness_vs_caller.md)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(extra_env or {})}


class Zygote:
    def __init__(self, extra_env: dict[str, str] | None = None) -> None:
        env = worker_environment(extra_env)
        # a session of its own: a terminal's Ctrl-C reaches this process alone, which stops its workers itself
        self.proc = subprocess.Popen([sys.executable, "-m", "kevolve.harness.zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        self.exits: dict[int, int] = {}
        self.replies: list[dict] = []
        self.cond = threading.Condition()
        self.fork_lock = threading.Lock()  # one request in flight: replies are matched to requests by order
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            message = receive(self.proc.stdout)
            with self.cond:
                if message is None:
                    self.replies.append({"dead": True})
                elif "exit" in message:
                    self.exits[message["exit"]] = message["status"]
                else:
                    self.replies.append(message)
                self.cond.notify_all()
            if message is None:
                return

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, task: dict, log: str) -> int:
        with self.fork_lock, self.cond:
            send(self.proc.stdin, {"task": task, "log": log})
            if not self.cond.wait_for(lambda: self.replies, timeout=120):
                raise RuntimeError("the kevolve worker zygote did not answer within 120 s")
            reply = self.replies.pop(0)
        if "pid" not in reply:
            raise RuntimeError("the kevolve worker zygote died; see the messages above")
        return reply["pid"]

    def exit_status(self, pid: int) -> int | None:
        with self.cond:
            return self.exits.pop(pid, None)

    def finish(self, pid: int, timeout: float = 10.0) -> None:
        """Kill the child and its process group unless its exit was already reported (then its pid may belong
        to someone else), wait for the report and drop it, so that a later child reusing the pid is not taken
        for dead."""
        with self.cond:
            if pid not in self.exits:
                _kill(pid)
            self.cond.wait_for(lambda: pid in self.exits or not self.alive(), timeout=timeout)
            self.exits.pop(pid, None)


_zygotes: dict[tuple[tuple[str, str], ...], Zygote] = {}
_zygotes_lock = threading.Lock()  # evaluations run on several threads at once (harness/executor.py)


def zygote(env: dict[str, str] | None = None) -> Zygote:
    """The zygote for a worker environment: one per distinct ``env`` (a backend's
    :meth:`~kevolve.backend.Backend.worker_env`), since what a process imports at start depends on it."""
    key = tuple(sorted((env or {}).items()))
    with _zygotes_lock:
        if key not in _zygotes or not _zygotes[key].alive():
            _zygotes[key] = Zygote(dict(key))
        return _zygotes[key]


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: how old a scan of /proc may be when a worker's process group is checked against its memory cap: the scan
#: reads every process's stat, too costly to run every 20 ms beside a timed kernel; the worker's own memory is
#: read every poll
GROUP_SCAN_MAX_AGE_S = 0.5


class GroupMemory:
    """Resident memory of each process group, from one scan of /proc that every watching thread shares. With 30
    workers at once (builds beside the timing lanes, harness/executor.py), a scan per worker every 0.5 s cost the
    search's own process 1.3-1.8 CPU-seconds over 5 s of watching on a 2-core VM; one shared scan, 0.6-0.9."""

    def __init__(self, max_age_s: float = GROUP_SCAN_MAX_AGE_S) -> None:
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._at = -math.inf
        self._by_group: dict[int, int] = {}

    def of(self, leader: int) -> int:
        """Bytes resident in the group ``leader`` leads: the worker and whatever it started (a child holding
        memory counts against the cap as the worker's own would)."""
        with self._lock:
            if time.monotonic() - self._at > self.max_age_s:
                self._by_group = self._scan()
                self._at = time.monotonic()
            return self._by_group.get(leader, 0)

    @staticmethod
    def _scan() -> dict[int, int]:
        from kevolve.harness.watch import processes

        page, by_group = os.sysconf("SC_PAGE_SIZE"), {}
        for _, fields in processes():
            if len(fields) > 21:
                by_group[int(fields[2])] = by_group.get(int(fields[2]), 0) + int(fields[21]) * page
        return by_group


_group_memory = GroupMemory()


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def run_isolated(task: dict[str, Any], *, timeout_s: float, memory_limit_bytes: int,
                 on_stage: Callable[[str], None] = lambda s: None, env: dict[str, str] | None = None) -> dict[str, Any]:
    fd, log_path = tempfile.mkstemp(prefix="kevolve-task-", suffix=".jsonl")
    os.close(fd)
    z = zygote(env)
    pid = leader = z.fork(task, log_path)
    clock = RunningClock(max_pause_s=timeout_s)  # from here: the zygote's own start-up is not the candidate's time
    stage, offset = "start", 0
    try:
        while True:
            # the exit status is taken before the log is read: a child that wrote its result and then exited
            # is never mistaken for a crash
            status = z.exit_status(pid)
            if status is not None:
                pid = 0  # reaped: nothing is left to kill or wait for, and its pid may be another process's now
            with open(log_path) as log:
                log.seek(offset)
                for line in log:
                    if not line.endswith("\n"):
                        break
                    offset += len(line)
                    message = json.loads(line)
                    if "result" in message:
                        return message["result"]
                    stage = message["stage"]
                    clock.pause(stage_of(stage) == "wait")
                    on_stage(stage)
            elapsed = clock.elapsed()
            if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS:
                return {"status": ev.REJECTED, "stage": stage, "reason": f"during {stage}, the kernel {confine.RULE}",
                        "evidence": {"wait_status": status}, "wall_s": elapsed}
            if status is not None:
                return {"status": ev.CRASH, "stage": stage,
                        "reason": f"the kernel's process died during {stage}: {_describe_exit(status)}",
                        "evidence": {"wait_status": status}, "wall_s": elapsed}
            if elapsed > timeout_s:  # the child is killed on the way out (finally)
                return {"status": ev.TIMEOUT, "stage": stage,
                        "reason": f"no result after {timeout_s:.0f} s (stuck in {stage}); the process was killed",
                        "evidence": {"timeout_s": timeout_s}, "wall_s": elapsed}
            rss = max(_rss_bytes(pid), _group_memory.of(pid))
            if rss > memory_limit_bytes:
                return {"status": ev.CRASH, "stage": stage,
                        "reason": f"memory blow-up: {rss / 2**30:.1f} GiB resident (its process group) exceeds the "
                                  f"{memory_limit_bytes / 2**30:.1f} GiB cap during {stage}; the process was killed",
                        "evidence": {"rss_bytes": rss}, "wall_s": elapsed}
            time.sleep(0.02)
    finally:
        if pid:
            z.finish(pid)
        else:  # it exited: what it left running in its group goes (a pid still in use as a group id is given
            _kill_group(leader)  # to no new process, so the group is the child's leftovers, if any)
        os.unlink(log_path)


class RunningClock:
    """Seconds a worker has run, less those it spent paused, up to ``max_pause_s`` of them: waiting for another
    candidate to leave the device is not this one's time, and a queue of them must not time out the last. The
    pause is bounded because the worker's own process says when it waits: a kernel that claimed to wait forever
    would never time out."""

    def __init__(self, max_pause_s: float) -> None:
        self.max_pause_s = max_pause_s
        self.paused = False
        self._started = self._last = time.monotonic()
        self._paused_s = 0.0

    def pause(self, paused: bool) -> None:
        self.elapsed()  # what ran until now is charged as it ran
        self.paused = paused

    def elapsed(self) -> float:
        now = time.monotonic()
        if self.paused:
            self._paused_s += now - self._last
        self._last = now
        return now - self._started - min(self._paused_s, self.max_pause_s)


def _kill(pid: int) -> None:
    """Kill the child and anything it started (it leads its own process group)."""
    _kill_group(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(leader: int) -> None:
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
