"""A throwaway PostgreSQL server for the store tests: the PostgreSQL store is tested against a real server, not
a mock, because what can go wrong (locks, transactions, types, dropped connections) is the server's behaviour.

The server lives in a temporary folder, listens on a free port of 127.0.0.1 only, lets anyone in without a
password (trust) and is stopped and deleted at the end. PostgreSQL refuses to run as root, so under root it
runs as the ``postgres`` user (the Debian package creates it). :func:`missing` says why no server can be
started here, for the tests to skip with that reason.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

BINARIES = ("initdb", "pg_ctl", "postgres")
#: the server runs as this user when the tests run as root
RUN_AS = "postgres"


def bin_dir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: on PATH, else the Debian package's."""
    found = shutil.which("initdb")
    candidates = [Path(os.path.realpath(found)).parent] if found else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if all((folder / name).exists() for name in BINARIES):
            return folder
    return None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install './core[postgres]')"
    if bin_dir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl, postgres); apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            return f"running as root and there is no {RUN_AS!r} user to run the server as (useradd --system {RUN_AS})"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server; :meth:`new_database` gives each test a database of its own."""

    def __init__(self) -> None:
        self.bin = bin_dir()
        self.folder = Path(tempfile.mkdtemp(prefix="kevolve-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.admin = f"postgresql://{RUN_AS}@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", RUN_AS, "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def start(self) -> Server:
        if os.geteuid() == 0:
            shutil.chown(self.folder, RUN_AS)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", RUN_AS, "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w",
                  "-t", "60", "-o", options, "start")
        return self

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str, user: str = RUN_AS) -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as db:
            db.execute(statement)

    def new_database(self) -> str:
        name = f"store_{uuid.uuid4().hex[:12]}"
        self.sql(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        """Dropped even while connections (a killed process's, a test's open store) are still on it."""
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
