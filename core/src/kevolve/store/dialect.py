"""What differs between the databases a store can live in; everything else is one code path.

The store speaks one SQL (``?`` placeholders, portable upserts) to a connection whose ``execute`` returns rows.
A :class:`SQLiteFile` is one file (the default); a :class:`PostgreSQLServer` is a database several machines
share, for team-wide warm starts, skills and sessions. Each says how to connect, how to start a write (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: one advisory lock per store, so writers take turns exactly as on SQLite; both
waited out, saying so, while another process writes), how to list tables and columns (to refuse a foreign or
damaged database untouched), and how to spell the migrations' two non-portable types.
"""

from __future__ import annotations

import copy
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from kevolve.errors import StoreError
from kevolve.store.waiting import BUSY_TIMEOUT_S, patiently, until_unlocked

SERVER_SCHEMES = ("postgresql://", "postgres://")
#: the advisory lock every writer of a PostgreSQL store takes for its transaction ("kevolve" in ASCII)
WRITE_LOCK = 0x6B65766F6C7665
TAKE_ANOTHER = "pass another store with --store / store= (or set KEVOLVE_STORE)"


def is_server(location: str) -> bool:
    return location.startswith(SERVER_SCHEMES)


class SQLiteFile:
    kind = "an SQLite database"
    errors: tuple[type[Exception], ...] = (sqlite3.OperationalError,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def begin(self, db: sqlite3.Connection) -> None:
        patiently(lambda: db.execute("BEGIN IMMEDIATE"), self.where)

    def reconnect(self) -> sqlite3.Connection:
        """A second connection in autocommit mode (the heartbeat's thread cannot share the first)."""
        return sqlite3.connect(self.where, timeout=BUSY_TIMEOUT_S, isolation_level=None)

    @staticmethod
    def tables(db: Any) -> set[str]:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    @staticmethod
    def columns(db: Any, table: str) -> set[str]:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}

    @staticmethod
    def ddl(statement: str) -> str:
        return statement


class PostgreSQLServer:
    """A database on a PostgreSQL server, named by a ``postgresql://user:password@host:port/database`` URL (what
    libpq takes, ``PGPASSWORD`` and ``~/.pgpass`` included). The password never appears in a message."""

    kind = "a PostgreSQL database"

    def __init__(self, url: str) -> None:
        self.url = url
        scheme, _, rest = url.partition("://")  # taken apart by hand: a malformed URL still gets its message
        authority, slash, path = rest.partition("/")
        user, _, hostport = authority.rpartition("@")
        user, _, self.password = user.partition(":")
        #: the URL without its password (nor query options, which may hold one), for messages
        self.where = f"{scheme}://{user + '@' if user else ''}{hostport}{slash}{path.partition('?')[0]}"
        psycopg = _psycopg()
        self.errors = (psycopg.OperationalError, psycopg.errors.InsufficientPrivilege,
                       psycopg.errors.ReadOnlySqlTransaction)
        #: how long the server waits for the write lock before each of our attempts gives up
        self.lock_timeout_s = BUSY_TIMEOUT_S
        #: whether the migrations make temporary tables (see :meth:`readers_copy`)
        self.temporary = False

    def connect(self) -> _Connection:
        return _Connection(self)

    reconnect = connect

    def open(self) -> Any:
        """A psycopg connection in autocommit mode: the store says where its transactions begin."""
        psycopg = _psycopg()
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(self._cannot_connect(exc)) from None

    def _cannot_connect(self, exc: Exception) -> str:
        """One line: what the server or libpq said (without the password) and what to do about it."""
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reason = first.rpartition("failed: ")[2].replace("FATAL:", "").strip()
        for secret in (self.url, self.password, unquote(self.password)):
            if secret:
                reason = reason.replace(secret, "***")
        if not isinstance(exc, _psycopg().OperationalError) or "connection option" in reason:
            return (f"{self.where} is not a PostgreSQL URL kevolve can use ({reason}); write it as "
                    "postgresql://user:password@host:port/database")
        if "database" in reason and "does not exist" in reason:
            todo = "create it (createdb, or CREATE DATABASE as a user who may) or name another database in the URL"
        elif "role" in reason or "password" in reason or "authentication" in reason or "pg_hba" in reason:
            todo = ("check the user and password (in the URL, PGPASSWORD or ~/.pgpass) and that the server's "
                    "pg_hba.conf lets this machine in")
        else:
            todo = f"check that the server is running and accepts TCP connections there, or {TAKE_ANOTHER}"
        return f"cannot open the PostgreSQL store {self.where} ({reason}); {todo}"

    def begin(self, db: _Connection) -> None:
        """A transaction holding the store's write lock: waited for in turns of :attr:`lock_timeout_s`, saying
        so, like SQLite's busy store."""
        timeout = _psycopg().errors.LockNotAvailable

        def attempt() -> bool:
            db.execute("BEGIN")
            try:
                db.execute("SELECT set_config('lock_timeout', ?, true)", (f"{int(self.lock_timeout_s * 1000)}ms",))
                db.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
                db.execute("SELECT set_config('lock_timeout', '0', true)")
            except timeout:
                db.execute("ROLLBACK")
                return False
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return True

        until_unlocked(attempt, self.where)

    @staticmethod
    def tables(db: Any) -> set[str]:
        return {row[0] for row in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    @staticmethod
    def columns(db: Any, table: str) -> set[str]:
        return {row[0] for row in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ?", (table,))}

    def ddl(self, statement: str) -> str:
        """SQLite's autoincrementing key is an identity column here, and REAL (single precision here, too coarse
        for a timestamp) is double precision. In a reader's copy, new tables are temporary too."""
        statement = statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT",
                                      "INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        if self.temporary:
            statement = statement.replace("CREATE TABLE ", "CREATE TEMP TABLE ")
        return re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)

    def readers_copy(self, db: _Connection) -> PostgreSQLServer:
        """For a reader of an older or empty store: each table copied into a temporary one of the same name, which
        hides it from this connection alone (PostgreSQL looks temporary tables up first). The migrations then run
        on the copies, as SQLite's reader migrates a copy in memory: the store is neither changed nor locked, and
        a user who may only read it can. Returns the dialect that migrates the copies."""
        schema = db.execute("SELECT current_schema()").fetchone()[0]
        for table in self.tables(db):
            db.execute(f'CREATE TEMP TABLE "{table}" (LIKE "{schema}"."{table}" INCLUDING ALL)')
            db.execute(f'INSERT INTO pg_temp."{table}" SELECT * FROM "{schema}"."{table}"')
        readers = copy.copy(self)
        readers.temporary = True
        return readers


class _Connection:
    """A psycopg connection that takes the store's ``?`` placeholders (the store's SQL has no literal ``%``) and
    outlives the server dropping it between writes (a restart, an idle timeout, a network blip): a statement
    outside a transaction is sent again on a new connection. Dropped in the middle of a write, the write is lost
    (the server rolls it back), and that is one line; everything committed before it is kept."""

    def __init__(self, server: PostgreSQLServer) -> None:
        self.server = server
        self.db = server.open()
        self.writing = False

    def execute(self, sql: str, args: tuple = ()) -> Any:
        sql = sql.replace("?", "%s")
        try:
            cursor = self.db.execute(sql, args or None)
        except _psycopg().OperationalError as exc:
            if not self.db.broken:
                raise
            if sql == "ROLLBACK":  # the server rolled back what the lost connection had begun
                self.writing = False
                return None
            if self.writing:
                self.writing = False
                raise StoreError(f"lost the connection to the PostgreSQL store {self.server.where} in the middle of a "
                                 f"write ({str(exc).strip().splitlines()[0]}); only that write is lost: try again, "
                                 "or resume the search with --resume, once the server answers") from None
            self.db = self.server.open()
            cursor = self.db.execute(sql, args or None)
        if sql in ("BEGIN", "COMMIT", "ROLLBACK"):
            self.writing = sql == "BEGIN"
        return cursor

    def close(self) -> None:
        self.db.close()

    def __del__(self) -> None:
        """Dropped, it closes, as an sqlite3 connection does (psycopg would warn of a connection left open)."""
        try:
            self.db.close()
        except Exception:
            pass


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError("a PostgreSQL store needs psycopg: pip install 'kevolve[postgres]'") from None
    return psycopg
