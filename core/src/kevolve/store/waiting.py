"""Waiting for a store another process is writing to.

SQLite lets one writer at a time and gives up after its busy timeout with "database is locked"; a PostgreSQL
store's writers take turns on one lock the same way (see :mod:`~kevolve.store.dialect`). A search must not lose
the candidate it just evaluated because another search (or a person's query) held the lock longer, so writes
wait for as long as it takes, with growing pauses between attempts, and say that they are waiting.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: how long the database itself waits for the lock before each of our attempts gives up
BUSY_TIMEOUT_S = 2.0
#: the pause between attempts doubles up to this
MAX_PAUSE_S = 10.0


def say(message: str) -> None:
    print(f"kevolve: {message}", file=sys.stderr, flush=True)


def is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def patiently(action: Callable[[], T], where: str, tell: Callable[[str], None] = say) -> T:
    """``action()``, attempted again while the store is locked by another connection."""
    done: list[T] = []

    def attempt() -> bool:
        try:
            done.append(action())
        except sqlite3.OperationalError as exc:
            if not is_locked(exc):
                raise
            return False
        return True

    until_unlocked(attempt, where, tell)
    return done[0]


def until_unlocked(attempt: Callable[[], bool], where: str, tell: Callable[[str], None] = say) -> None:
    """Calls ``attempt()`` until it returns True (it got the write lock), pausing longer each time it did not."""
    pause, waited = 0.1, 0.0
    while not attempt():
        tell(f"the store {where} is locked by another process; waiting to write (retrying in {pause:.1f} s, "
             f"{waited:.0f} s so far)")
        time.sleep(pause)
        waited += pause
        pause = min(pause * 2, MAX_PAUSE_S)
