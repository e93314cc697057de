"""The store: the shared data foundation. Every session, node and evaluation is kept, keyed so results never
leak across targets or toolchain versions.

:mod:`~kevolve.store.schema` holds the tables as numbered migrations that any backend replays;
:mod:`~kevolve.store.owner` says whether a session's process is alive; :mod:`~kevolve.store.waiting` waits out
another writer's lock; :mod:`~kevolve.store.opening` opens a file for writing or for reading only, or a server;
:mod:`~kevolve.store.dialect` holds what differs between SQLite and PostgreSQL; and :mod:`~kevolve.store.sqlite`
is the store itself, one code path for both.
"""

from kevolve.store.records import NodeRecord, SessionRecord
from kevolve.store.schema import SCHEMA_VERSION
from kevolve.store.sqlite import Store

__all__ = ["SCHEMA_VERSION", "NodeRecord", "SessionRecord", "Store"]
