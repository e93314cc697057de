"""Who runs a session: its owner's pid and host, and a heartbeat.

A session stored as running may be running right now (then a second process must not resume it: both would
add the same nodes) or its process may have been killed (then it is dead and may be resumed). The owner
process beats every few seconds; on the owner's own host a pid that no longer exists settles it at once,
elsewhere a heartbeat older than :data:`STALE_S` does.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

HEARTBEAT_S = 5.0
#: a heartbeat this old means the owner is gone: many missed beats, not one delayed by a locked store
STALE_S = 120.0


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str

    @classmethod
    def me(cls) -> Owner:
        return cls(os.getpid(), socket.gethostname())


def owner_alive(pid: int | None, host: str | None, heartbeat: float | None, now: float) -> bool:
    if heartbeat is None or now - heartbeat > STALE_S:
        return False
    if pid and host == socket.gethostname():
        return _pid_running(pid)
    return True


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"  # a zombie has finished
    except (OSError, IndexError):
        return True


class Heartbeat:
    """Calls ``beat`` every :data:`HEARTBEAT_S` on a daemon thread while the ``with`` block runs. A beat that
    fails (a store locked for a moment) is skipped: the next one will do."""

    def __init__(self, beat: Callable[[], None], every: float = HEARTBEAT_S) -> None:
        self.beat, self.every = beat, every
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="kevolve-heartbeat", daemon=True)

    def _run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.beat()
            except Exception:
                pass

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stopped.set()
        self.thread.join()
