"""The store's schema as explicit, numbered migrations.

A store records the version it is at (``meta.schema``). Opening an older store applies each later step, all in
one transaction; a new store is built by the same steps from nothing, so a migrated store and a new one are the
same by construction, and every step is tested from every earlier version (tests/store_schemas holds a store of
each). Before anything is applied, the tables are compared with what their version must have: a damaged store
is refused untouched rather than migrated half-way, and a file kevolve did not write is never changed.

The statements are plain SQL that a server database takes as well, so another backend can replay the same
list; :mod:`~kevolve.store.dialect` spells SQLite's ``INTEGER PRIMARY KEY AUTOINCREMENT`` and ``REAL`` for
PostgreSQL (an identity column, double precision).
"""

from __future__ import annotations

import sqlite3
from functools import cache
from typing import TYPE_CHECKING, Any

from kevolve.errors import StoreError
from kevolve.store.dialect import TAKE_ANOTHER

if TYPE_CHECKING:
    from kevolve.store.dialect import PostgreSQLServer, SQLiteFile

    Dialect = SQLiteFile | PostgreSQLServer

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: sessions, their nodes and each node's evaluation
    (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY, created REAL, updated REAL,
            problem_key TEXT NOT NULL, problem_name TEXT, family TEXT, problem_spec TEXT,
            target TEXT NOT NULL, toolchain TEXT NOT NULL, seed INTEGER, config TEXT,
            status TEXT, stop_reason TEXT, best_node INTEGER, best_fitness REAL)""",
        "CREATE INDEX sessions_by_key ON sessions (problem_key, target, toolchain)",
        "CREATE INDEX sessions_by_name ON sessions (problem_name, target, toolchain)",
        """CREATE TABLE nodes (
            session_id TEXT NOT NULL REFERENCES sessions(id), node_id INTEGER NOT NULL, parent_id INTEGER,
            memory_op TEXT, synthesizer TEXT, recipe TEXT, language TEXT, parameters TEXT, source TEXT,
            source_hash TEXT, note TEXT, created REAL,
            PRIMARY KEY (session_id, node_id))""",
        """CREATE TABLE evaluations (
            session_id TEXT NOT NULL, node_id INTEGER NOT NULL, status TEXT, stage TEXT, fitness REAL, data TEXT,
            PRIMARY KEY (session_id, node_id),
            FOREIGN KEY (session_id, node_id) REFERENCES nodes(session_id, node_id))""",
    ),
    # 2: the synthesizer's trace per node (prompts, responses, tokens) and distilled skills
    (
        """CREATE TABLE traces (
            session_id TEXT NOT NULL, node_id INTEGER NOT NULL, data TEXT,
            PRIMARY KEY (session_id, node_id),
            FOREIGN KEY (session_id, node_id) REFERENCES nodes(session_id, node_id))""",
        """CREATE TABLE skills (
            id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL, session_id TEXT REFERENCES sessions(id),
            target TEXT NOT NULL, toolchain TEXT NOT NULL, family TEXT, problem_name TEXT, data TEXT)""",
        "CREATE INDEX skills_by_family ON skills (target, family)",
    ),
    # 3: who runs a session: a live owner is not resumed twice, a dead one shows as dead
    (
        "ALTER TABLE sessions ADD COLUMN owner_pid INTEGER",
        "ALTER TABLE sessions ADD COLUMN owner_host TEXT",
        "ALTER TABLE sessions ADD COLUMN heartbeat REAL",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def stored_version(db: Any, dialect: Dialect) -> int:
    """The schema version of an open database: 0 when it is empty (a new store). A database kevolve did not
    write, or one written by a newer kevolve, is refused before anything is written to it."""
    where = dialect.where
    tables = dialect.tables(db)
    if not tables:
        return 0
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() if "meta" in tables else None
    if row is None or not str(row[0]).isdigit():
        raise StoreError(f"{where} is not a kevolve store ({dialect.kind} with tables "
                         f"{', '.join(sorted(tables))}). It was left untouched; {TAKE_ANOTHER}.")
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise StoreError(f"{where} was written by a newer kevolve (schema {version}, this one knows "
                         f"{SCHEMA_VERSION}); it was left untouched. Upgrade kevolve (pip install -U kevolve).")
    check_columns(db, version, dialect)
    return version


def migrate(db: Any, dialect: Dialect) -> None:
    """Bring the store to :data:`SCHEMA_VERSION`; call inside a write transaction (another process may have
    migrated it since it was opened, so the version is read again here)."""
    version = stored_version(db, dialect)
    for step in MIGRATIONS[version:]:
        for statement in step:
            db.execute(dialect.ddl(statement))
    db.execute("INSERT INTO meta VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
               (str(SCHEMA_VERSION),))


def check_columns(db: Any, version: int, dialect: Dialect) -> None:
    """Every table and column the version must have is there (more is allowed)."""
    where = dialect.where
    for table, columns in expected_columns(version).items():
        have = dialect.columns(db, table)
        missing = [c for c in columns if c not in have]
        if missing:
            what = f"has no table {table}" if not have else f"has a table {table} without {', '.join(missing)}"
            raise StoreError(f"{where} says it is a kevolve store at schema {version} but {what}: it is damaged "
                             f"and was left untouched. Move it aside or {TAKE_ANOTHER}.")


@cache
def expected_columns(version: int) -> dict[str, tuple[str, ...]]:
    """Table -> columns after the first ``version`` migrations, read back from a scratch database."""
    scratch = sqlite3.connect(":memory:")
    for step in MIGRATIONS[:version]:
        for statement in step:
            scratch.execute(statement)
    tables = [row[0] for row in scratch.execute("SELECT name FROM sqlite_master WHERE type='table'")
              if row[0] != "sqlite_sequence"]
    columns = {t: tuple(row[1] for row in scratch.execute(f"PRAGMA table_info({t})")) for t in tables}
    scratch.close()
    return columns
