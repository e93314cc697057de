"""A store a team shares (issue 33): several processes writing at once lose nothing, a writer killed inside a
transaction loses no committed node and leaves the store usable, a connection the server drops is made again,
and a PostgreSQL URL that cannot be used is one line that says what to do and never shows the password.

The writers are separate processes (tests/store_writer.py); each test runs on SQLite and on PostgreSQL where
both apply (the ``store_location`` fixture)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kevolve.cli import main
from kevolve.errors import StoreError
from kevolve.store import Store
from postgres_server import free_port
from store_writer import new_session, node

TESTS = Path(__file__).parent
PASSWORD = "s3cret-word"


def writer(location: Path | str, nodes: int, *options: str) -> subprocess.Popen:
    """A store_writer process, imported and waiting for its go."""
    proc = subprocess.Popen([sys.executable, str(TESTS / "store_writer.py"), str(location), str(nodes), *options],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS),
                                                                              os.environ.get("PYTHONPATH", "")])})
    assert proc.stdout.readline() == "READY\n", proc.stderr.read()
    return proc


def go(*procs: subprocess.Popen) -> None:
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()


def lines_until(proc: subprocess.Popen, marker: str) -> list[str]:
    """What ``proc`` printed before ``marker``."""
    lines = []
    for line in proc.stdout:
        if line.strip() == marker:
            return lines
        lines.append(line.strip())
    raise AssertionError(f"the writer ended before printing {marker}: {proc.stderr.read()}")


def test_two_processes_writing_at_once_lose_nothing(store_location):
    """Both open a new store at the same moment (one creates it, neither breaks the other), then commit one
    node at a time; both pause half-way, so their writes interleave whatever the scheduler does."""
    procs = [writer(store_location, 60, "30"), writer(store_location, 60, "30")]
    go(*procs)
    sessions = []
    for proc in procs:
        lines = lines_until(proc, "PAUSED")
        assert lines[1:] == [f"NODE {n}" for n in range(1, 31)]
        sessions.append(lines[0].split()[1])
    go(*procs)
    for proc in procs:
        assert lines_until(proc, "DONE") == [f"NODE {n}" for n in range(31, 61)]
        assert proc.wait(60) == 0, proc.stderr.read()
    store = Store(store_location)
    assert sorted(s.id for s in store.all_sessions()) == sorted(sessions)
    for session in sessions:
        record = store.session(session)
        assert (record.status, record.best_node, record.best_fitness) == ("done", 60, 61.0)
        assert [n.node_id for n in store.nodes(session)] == list(range(1, 61))
    assert sorted(skill["lesson"] for skill in store.skills("fake", "pyfake 1")) == sorted(sessions)


def test_a_writer_killed_inside_a_transaction_loses_no_committed_node(store_location):
    """SIGKILL while a node is half written, holding the write lock: the committed nodes stay, the half-written
    one is not there, the session shows as dead, and another process resumes writing at once."""
    proc = writer(store_location, 3, "--stall")
    go(proc)
    lines = lines_until(proc, "STALLED")
    proc.kill()
    proc.wait(30)
    assert lines[1:] == ["NODE 1", "NODE 2", "NODE 3"]
    session = lines[0].split()[1]
    store = Store(store_location)
    assert store.session(session).status == "dead"
    assert [n.node_id for n in store.nodes(session)] == [1, 2, 3]
    store.claim(session)  # the store is usable: the killed writer's lock and half a node are gone
    store.add_node(session, node(4))
    store.finish_session(session, "done", "resumed by hand")
    assert [n.node_id for n in store.nodes(session)] == [1, 2, 3, 4]
    assert store.session(session).status == "done"


def test_a_connection_the_server_drops_is_made_again(postgres_server, postgres_store):
    """Dropped between writes (a server restart, an idle timeout), the next write connects again; dropped in the
    middle of a write, that write is one line and rolled back, and the next one connects again."""
    database = postgres_store.rpartition("/")[2]

    def drop() -> None:  # waits until the store's connection has ended
        postgres_server.sql("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname ="
                            f" '{database}'")

    store = Store(postgres_store)
    session = new_session(store)
    store.add_node(session, node(1))
    drop()
    store.add_node(session, node(2))
    with pytest.raises(StoreError, match="lost the connection .* in the middle of a write"):
        with store.transaction() as db:
            db.execute("UPDATE sessions SET stop_reason='half' WHERE id=?", (session,))
            drop()
            db.execute("UPDATE sessions SET status='half' WHERE id=?", (session,))
    store.add_node(session, node(3))
    assert [n.node_id for n in store.nodes(session)] == [1, 2, 3]
    assert store.session(session).stop_reason == ""


#: (id, the store URL given the test server (None: no server is needed), what the one line must say)
BAD_URLS = [
    ("nothing-listening", None, lambda _: f"postgresql://kevolve:{PASSWORD}@127.0.0.1:{free_port()}/store",
     "server is running"),
    ("no-such-database", True, lambda server: server.url("nodb", user=f"postgres:{PASSWORD}"), "create it"),
    ("no-such-user", True, lambda server: server.url("postgres", user=f"nobody:{PASSWORD}"),
     "check the user and password"),
    ("not-a-url", None, lambda _: f"postgresql://kevolve:{PASSWORD}@[::1/store", "postgresql://user:password@host"),
    ("bad-port", None, lambda _: f"postgresql://kevolve:{PASSWORD}@127.0.0.1:port/store", "not a PostgreSQL URL"),
]


@pytest.mark.parametrize("needs_server,make_url,says", [c[1:] for c in BAD_URLS], ids=[c[0] for c in BAD_URLS])
def test_a_store_url_that_cannot_be_used_is_one_line_without_the_password(request, fake_plugin, capsys,
                                                                          needs_server, make_url, says):
    pytest.importorskip("psycopg")
    url = make_url(request.getfixturevalue("postgres_server") if needs_server else None)
    for argv in (["sessions", "--store", url], ["optimize", "relu", "--target", "fake", "--quiet", "--store", url]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert says in err and PASSWORD not in err, err


def test_a_postgresql_store_without_psycopg_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(StoreError, match=r"pip install 'kevolve\[postgres\]'"):
        Store("postgresql://kevolve@127.0.0.1/store")


def test_the_conformance_cache_stays_on_this_machine(tmp_path):
    """Beside a store file; for a server store, beside the default store's place (never a path made of the URL)."""
    from kevolve.conformance.run import ResultCache
    from kevolve.paths import default_store_path

    assert ResultCache.beside(tmp_path / "team.sqlite").path == tmp_path / "team.conformance.sqlite"
    cache = ResultCache.beside("postgresql://alice@db.example.com/kevolve")
    assert cache.path == default_store_path().with_name("kevolve.conformance.sqlite")
