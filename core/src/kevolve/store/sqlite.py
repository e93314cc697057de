"""The store: every session, node and evaluation, in one SQLite file (the default) or a PostgreSQL database a
team shares (``postgresql://...``); one code path serves both, :mod:`~kevolve.store.dialect` holds what differs.

Rows are keyed by problem key (op signature + shapes + dtypes), target and toolchain version, so results never
leak across targets or compiler versions. Each node is committed with its evaluation in one transaction as
soon as it is evaluated: a session killed at any point loses no evaluated node and can be resumed. A session
records its owner, so a running one is never resumed twice and a killed one shows as dead.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kevolve.errors import StoreError
from kevolve.harness.evaluation import Evaluation
from kevolve.search.config import SearchConfig
from kevolve.store.dialect import PostgreSQLServer, SQLiteFile, is_server
from kevolve.store.opening import open_for_reading, open_server, open_for_writing, write_failure
from kevolve.store.owner import Heartbeat, Owner, owner_alive
from kevolve.store.records import NodeRecord, SessionRecord

SESSION_COLUMNS = ("id", "created", "updated", "problem_key", "problem_name", "family", "problem_spec", "target",
                   "toolchain", "seed", "config", "status", "stop_reason", "best_node", "best_fitness", "owner_pid",
                   "owner_host", "heartbeat")
_SESSIONS = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions"


class Store:
    """``readonly=True`` never writes the store (nor needs the right to): for listing and showing. ``path`` is a
    file or a ``postgresql://user:password@host:port/database`` URL."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.readonly = readonly
        self.dialect: SQLiteFile | PostgreSQLServer
        if is_server(str(path)):
            self.path: Path | str = str(path)
            self.dialect = PostgreSQLServer(self.path)
            self.db: Any = open_server(self.dialect, readonly)
        else:
            self.path = Path(path).expanduser()
            self.dialect = SQLiteFile(self.path)
            self.db = open_for_reading(self.path) if readonly else open_for_writing(self.path)
        #: where the store is, for messages (a server's URL without its password)
        self.where = self.dialect.where

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        if self.readonly:
            raise StoreError(f"the store {self.where} was opened for reading only")
        try:
            self.dialect.begin(self.db)
        except self.dialect.errors as exc:
            raise write_failure(self.where, exc) from None
        try:
            yield self.db
        except self.dialect.errors as exc:
            self.db.execute("ROLLBACK")
            raise write_failure(self.where, exc) from None
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- sessions ---------------------------------------------------------------------------------------

    def create_session(self, *, problem_key: str, problem_name: str, family: str, problem_spec: dict, target: str,
                       toolchain: str, seed: int, config: SearchConfig) -> str:
        """A new session, running and owned by this process."""
        session_id = uuid.uuid4().hex[:12]
        now = time.time()
        me = Owner.me()
        values = (session_id, now, now, problem_key, problem_name, family, json.dumps(problem_spec), target,
                  toolchain, seed, json.dumps(config.to_dict()), "running", "", None, 0.0, me.pid, me.host, now)
        with self.transaction() as db:
            db.execute(f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) VALUES "
                       f"({', '.join('?' * len(SESSION_COLUMNS))})", values)
        return session_id

    def claim(self, session_id: str) -> None:
        """Make this process the owner of a session it will resume; refused while its owner is alive."""
        me = Owner.me()
        with self.transaction() as db:
            status, pid, host, beat = db.execute(
                "SELECT status, owner_pid, owner_host, heartbeat FROM sessions WHERE id=?", (session_id,)).fetchone()
            now = time.time()
            if status == "running" and (pid, host) != (me.pid, me.host) and owner_alive(pid, host, beat, now):
                raise StoreError(f"session {session_id} is still running (pid {pid} on {host}, alive "
                                 f"{now - beat:.0f} s ago); let it finish, or stop that process, then resume it")
            db.execute("UPDATE sessions SET status='running', stop_reason='', owner_pid=?, owner_host=?, heartbeat=?"
                       " WHERE id=?", (me.pid, me.host, now, session_id))

    def beating(self, session_id: str) -> Heartbeat:
        """A ``with`` block during which this process tells the store it still runs ``session_id``."""
        me = Owner.me()

        def beat() -> None:  # its own connection: one belongs to the thread that opened it
            db = self.dialect.reconnect()
            try:
                db.execute("UPDATE sessions SET heartbeat=? WHERE id=? AND owner_pid=? AND owner_host=?",
                           (time.time(), session_id, me.pid, me.host))
            finally:
                db.close()

        return Heartbeat(beat)

    def finish_session(self, session_id: str, status: str, stop_reason: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sessions SET status=?, stop_reason=?, updated=? WHERE id=?",
                       (status, stop_reason, time.time(), session_id))

    def session(self, session_id: str) -> SessionRecord:
        rows = self.db.execute(f"{_SESSIONS} WHERE id=? OR id LIKE ?", (session_id, f"{session_id}%")).fetchall()
        if not rows:
            raise StoreError(f"no session {session_id!r} in {self.where}; `kevolve sessions` lists them")
        if len(rows) > 1:
            raise StoreError(f"session prefix {session_id!r} is ambiguous; give more characters")
        return _session(rows[0])

    def sessions(self, limit: int = 50) -> list[SessionRecord]:
        return [_session(r) for r in self.db.execute(f"{_SESSIONS} ORDER BY created DESC LIMIT ?", (limit,))]

    def all_sessions(self) -> list[SessionRecord]:
        return [_session(r) for r in self.db.execute(f"{_SESSIONS} ORDER BY created")]

    # --- nodes --------------------------------------------------------------------------------------------

    def next_node_id(self, session_id: str) -> int:
        """The id the session's next node takes: past every stored one, final re-timings included."""
        return self.db.execute("SELECT COALESCE(MAX(node_id), 0) + 1 FROM nodes WHERE session_id=?",
                               (session_id,)).fetchone()[0]

    def add_node(self, session_id: str, node: NodeRecord) -> None:
        """Node and evaluation land together; the session's best is updated in the same transaction."""
        evaluation = node.evaluation
        with self.transaction() as db:
            db.execute("INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                       (session_id, node.node_id, node.parent_id, node.memory_op, node.synthesizer, node.recipe,
                        node.language, json.dumps(node.parameters), node.source, node.source_hash, node.note,
                        time.time()))
            db.execute("INSERT INTO evaluations VALUES (?,?,?,?,?,?)",
                       (session_id, node.node_id, evaluation.status, evaluation.stage, evaluation.fitness,
                        json.dumps(evaluation.to_dict(), default=str)))
            if node.trace:
                db.execute("INSERT INTO traces VALUES (?,?,?)",
                           (session_id, node.node_id, json.dumps(node.trace, default=str)))
            now = time.time()
            db.execute("UPDATE sessions SET updated=?, heartbeat=?,"
                       " best_node=CASE WHEN ? > best_fitness THEN ? ELSE best_node END,"
                       " best_fitness=CASE WHEN ? > best_fitness THEN ? ELSE best_fitness END WHERE id=?",
                       (now, now, evaluation.fitness, node.node_id, evaluation.fitness, evaluation.fitness,
                        session_id))

    def nodes(self, session_id: str, node_id: int | None = None) -> list[NodeRecord]:
        """A session's nodes with their evaluations, in order; only ``node_id`` when given."""
        where, args = ("AND n.node_id=?", (session_id, node_id)) if node_id is not None else ("", (session_id,))
        rows = self.db.execute(
            "SELECT n.node_id, n.parent_id, n.memory_op, n.synthesizer, n.recipe, n.language, n.parameters, n.source,"
            " n.source_hash, n.note, e.data, t.data FROM nodes n JOIN evaluations e USING (session_id, node_id)"
            f" LEFT JOIN traces t USING (session_id, node_id) WHERE session_id=? {where} ORDER BY n.node_id",
            args).fetchall()
        return [NodeRecord(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7], r[8], r[9],
                           Evaluation.from_dict(json.loads(r[10])), json.loads(r[11]) if r[11] else {}) for r in rows]

    def node(self, session_id: str, node_id: int) -> NodeRecord:
        found = self.nodes(session_id, node_id)
        if not found:
            raise StoreError(f"session {session_id} has no node {node_id}")
        return found[0]

    # --- lookups across sessions ------------------------------------------------------------------------

    def best_for(self, problem_key: str, target: str, toolchain: str) -> tuple[SessionRecord, NodeRecord] | None:
        """The best correct kernel of a finished session for exactly this problem on this target and toolchain
        (a failed, interrupted or still running session has not answered the question)."""
        row = self.db.execute(
            f"{_SESSIONS} WHERE problem_key=? AND target=? AND toolchain=? AND status='done' AND best_fitness > 0"
            " ORDER BY best_fitness DESC LIMIT 1", (problem_key, target, toolchain)).fetchone()
        if row is None:
            return None
        session = _session(row)
        return session, self.node(session.id, session.best_node)

    def neighbours(self, problem_name: str, problem_key: str, target: str,
                   toolchain: str) -> list[tuple[dict[str, Any], NodeRecord]]:
        """Winners on the same op at other shapes/dtypes on this target: (their problem spec, best node)."""
        rows = self.db.execute(
            f"{_SESSIONS} WHERE problem_name=? AND problem_key<>? AND target=? AND toolchain=?"
            " AND best_fitness > 0 ORDER BY updated DESC LIMIT 50", (problem_name, problem_key, target, toolchain),
        ).fetchall()
        sessions = [_session(row) for row in rows]
        return [(s.problem_spec, self.node(s.id, s.best_node)) for s in sessions]

    # --- skills -------------------------------------------------------------------------------------------

    def add_skill(self, session_id: str, target: str, toolchain: str, family: str, problem_name: str,
                  data: dict[str, Any]) -> None:
        """One distilled lesson; a session's earlier skill is replaced (a resumed session distils anew)."""
        with self.transaction() as db:
            db.execute("DELETE FROM skills WHERE session_id=?", (session_id,))
            db.execute("INSERT INTO skills (created, session_id, target, toolchain, family, problem_name, data)"
                       " VALUES (?,?,?,?,?,?,?)", (time.time(), session_id, target, toolchain, family, problem_name,
                                                   json.dumps(data, default=str)))

    def skills(self, target: str, toolchain: str, family: str | None = None,
               limit: int = 50) -> list[dict[str, Any]]:
        """Skills learnt on this target and toolchain (of one op family when given), newest first."""
        where, args = ("AND family=?", (target, toolchain, family)) if family else ("", (target, toolchain))
        rows = self.db.execute(f"SELECT data FROM skills WHERE target=? AND toolchain=? {where}"
                               " ORDER BY created DESC, id DESC LIMIT ?", (*args, limit)).fetchall()
        return [json.loads(r[0]) for r in rows]


def _session(row: tuple) -> SessionRecord:
    """A stored row; "running" becomes "dead" when its owner is gone."""
    record = SessionRecord(**dict(zip(SESSION_COLUMNS, row)))
    record.problem_spec = json.loads(record.problem_spec)
    record.config = SearchConfig.from_dict(json.loads(record.config))
    if record.status == "running" and not owner_alive(record.owner_pid, record.owner_host, record.heartbeat,
                                                      time.time()):
        owner = f"pid {record.owner_pid} on {record.owner_host}" if record.owner_pid else "an older kevolve"
        record.status = "dead"
        record.stop_reason = (f"its process ({owner}) is gone; `kevolve optimize --resume {record.id}` "
                              "continues it")
    return record
