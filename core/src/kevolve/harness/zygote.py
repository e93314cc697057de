"""The zygote: a clean interpreter that has imported torch and kevolve but run nothing, and forks one child
per candidate.

Why not multiprocessing: its forkserver and spawn modes re-import the user's ``__main__`` in every child
(breaking scripts without a ``__main__`` guard), and plain fork from the user's process can deadlock when that
process already ran parallel torch code. A forked zygote child starts in milliseconds with a pristine
runtime.

Protocol on stdin/stdout: length-prefixed pickles. Request ``{"task": ..., "log": path}`` -> reply
``{"pid": pid}``; when a child ends, ``{"exit": pid, "status": waitstatus}``. The child appends JSON lines to
``log``: ``{"stage": name}`` markers, then one ``{"result": {...}}``.

Nothing outlives the process that started the zygote: when it dies (even by ``kill -9``) the zygote reads the end
of its stdin and kills its children, and each child is killed by the kernel when the zygote itself exits. A hung
kernel never spins on past its parent.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
import threading

import torch._dynamo  # noqa: F401  (imported lazily by dispatch modes otherwise: seconds in every child)

from kevolve.harness import isolation, worker
from kevolve.harness.protocol import receive, send


def _child(task: dict, log_path: str) -> None:
    with open(log_path, "a", buffering=1) as log:
        def report(stage: str) -> None:
            log.write(json.dumps({"stage": stage}) + "\n")

        try:
            run = worker.run_task
            if task.get("entry"):  # another kind of harness task, e.g. "kevolve.conformance.worker:run"
                module, _, name = task["entry"].partition(":")
                run = getattr(importlib.import_module(module), name)
            result = run(task, report)
        except BaseException as exc:  # the harness failed, not the kernel: still an answer, never silence
            result = {"status": "runtime_error", "stage": "worker", "reason": f"{type(exc).__name__}: {exc}"}
        log.write(json.dumps({"result": result}) + "\n")


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this child when its parent (the zygote) exits, however it exits."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the zygote died before that took effect
        os._exit(1)


#: this zygote's children not yet reaped (their pids cannot be reused while so), guarded by _lock
_children: set[int] = set()
_lock = threading.Lock()


def _reap(out) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            threading.Event().wait(0.02)
            continue
        with _lock:
            _children.discard(pid)
        try:
            send(out, {"exit": pid, "status": status})
        except OSError:  # the parent is gone: main() is ending the other children
            return


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    threading.Thread(target=_reap, args=(out,), daemon=True).start()
    try:
        while True:
            request = receive(inp)
            if request is None:  # the parent is gone
                return
            zygote = os.getpid()
            with _lock:  # a child reaped at once is discarded only after it was added
                pid = os.fork()
                if pid == 0:
                    code = 0
                    try:
                        os.setpgid(0, 0)
                        _die_with(zygote)
                        isolation.mark_inside_worker()
                        _child(request["task"], request["log"])
                    except BaseException:
                        code = 1
                    finally:
                        os._exit(code)
                _children.add(pid)
            send(out, {"pid": pid})
    finally:
        with _lock:
            for pid in _children:  # each leads its own process group: whatever it started goes too
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


if __name__ == "__main__":
    main()
