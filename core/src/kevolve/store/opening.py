"""Opening a store: a file for writing (creating its folder, migrating it) or for reading only, or a server.

Nothing is written to a file before it is known to be a kevolve store kevolve can use: a foreign SQLite file, a
newer or damaged store, or random bytes are refused as they are. Reading needs no write access, so a store a
team shares read-only can still be listed and shown; an older store opened for reading is migrated in a copy
(in memory; on a server, in temporary tables).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kevolve.errors import StoreError
from kevolve.store import schema
from kevolve.store.dialect import TAKE_ANOTHER, PostgreSQLServer, SQLiteFile
from kevolve.store.waiting import BUSY_TIMEOUT_S, patiently


def open_for_writing(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store {path}: its folder {path.parent} cannot be made "
                         f"({exc.strerror}); {TAKE_ANOTHER}") from None
    try:
        db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        version = schema.stored_version(db, SQLiteFile(path))
        if version < schema.SCHEMA_VERSION:
            patiently(lambda: db.execute("BEGIN IMMEDIATE"), str(path))
            try:
                schema.migrate(db, SQLiteFile(path))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        patiently(lambda: db.execute("PRAGMA journal_mode=WAL"), str(path))
        db.execute("PRAGMA foreign_keys=ON")
        return db
    except sqlite3.DatabaseError as exc:
        raise unusable(path, exc) from None


def open_for_reading(path: Path) -> sqlite3.Connection:
    """A connection that never writes the file. A missing store reads as an empty one."""
    if not path.exists():
        return _in_memory(None, path)
    try:
        db = _read_only(path)
        version = schema.stored_version(db, SQLiteFile(path))
        return db if version == schema.SCHEMA_VERSION else _in_memory(db, path)
    except sqlite3.DatabaseError as exc:
        if "unable to open" in str(exc):
            raise StoreError(f"cannot read the store {path} ({exc}); {TAKE_ANOTHER}") from None
        raise unusable(path, exc) from None


def _read_only(path: Path) -> sqlite3.Connection:
    """Read-only; a WAL store whose shared-memory file cannot be created (a folder nobody may write) is read as
    immutable, which needs no such file."""
    uri = f"file:{quote(str(path.resolve()))}"
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


def _in_memory(source: sqlite3.Connection | None, path: Path) -> sqlite3.Connection:
    """A copy of ``source`` (or an empty store) in memory, at the current schema."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    if source is not None:
        source.backup(db)
        source.close()
    db.execute("BEGIN")
    schema.migrate(db, SQLiteFile(path))
    db.execute("COMMIT")
    return db


def open_server(server: PostgreSQLServer, readonly: bool) -> Any:
    """A PostgreSQL store, migrated under the write lock; for reading only, an older or empty store is migrated
    in a copy this connection alone sees (:meth:`~kevolve.store.dialect.PostgreSQLServer.readers_copy`)."""
    db = server.connect()
    version = schema.stored_version(db, server)
    if version == schema.SCHEMA_VERSION:
        return db
    if readonly:
        try:
            schema.migrate(db, server.readers_copy(db))
        except server.errors as exc:
            state = "empty" if version == 0 else f"at schema {version}"
            raise StoreError(f"cannot read the store {server.where} ({state}) through a private copy at schema "
                             f"{schema.SCHEMA_VERSION} ({exc}); a search on it by a user who may write brings it up "
                             f"to date, or {TAKE_ANOTHER}") from None
        return db
    server.begin(db)
    try:
        schema.migrate(db, server)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return db


def unusable(path: Path | str, exc: Exception) -> StoreError:
    if read_only(exc) or "unable to open" in str(exc):
        return cannot_write(path, exc)
    return StoreError(f"{path} is not a usable kevolve store ({exc}). It was left untouched; move it aside or "
                      f"{TAKE_ANOTHER}.")


def read_only(exc: Exception) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "permission denied" in text


def write_failure(path: Path | str, exc: Exception) -> Exception:
    """What to raise when a write fails: one line for a store nobody may write, else the database's own error."""
    return cannot_write(path, exc) if read_only(exc) else exc


def cannot_write(path: Path | str, exc: Exception) -> StoreError:
    return StoreError(f"cannot write to the store {path} ({exc}); {TAKE_ANOTHER}. Reading needs no write access: "
                      "`kevolve sessions` and `kevolve show` work on it as it is.")
