"""Fixtures every test folder shares: the core's tests in ``tests/`` and each backend's in ``backends/<name>/tests/``
(a conftest at the repository root reaches both). The helper modules the tests import by name (``fake_backend``,
``problem_fns``, ``conformance_helpers``, ...) live in ``tests/``, which the ``pythonpath`` setting of
``pyproject.toml`` puts on ``sys.path`` whichever folder pytest runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kevolve.harness.pipeline import HarnessConfig


def _share_cpu_facts(tmp_path_factory) -> None:
    """Under pytest-xdist every worker would probe the CPU at the same moment, each slowed by the others; a probe
    that reads half the peak raises the roofline floor until honest kernels are rejected as implausible (seen in
    CI: the C++ matmul at 1.2 ms against a 2.8 ms floor). One worker probes while the others wait on a lock, and
    every worker copies that result into its own home."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    try:
        import kevolve_cpu  # noqa: F401
    except ImportError:
        return
    import shutil

    from filelock import FileLock
    from kevolve.paths import cache_dir
    from kevolve.plugins import get_manager

    shared = tmp_path_factory.getbasetemp().parent / "kevolve-facts-home"
    own = os.environ["KEVOLVE_HOME"]
    with FileLock(f"{shared}.lock"):
        os.environ["KEVOLVE_HOME"] = str(shared)
        try:
            registered = get_manager().target("cpu")
            registered.backend.facts(registered.spec)
            measured = sorted(cache_dir("cpu").glob("facts-*.json"))
        finally:
            os.environ["KEVOLVE_HOME"] = own
    for path in measured:
        shutil.copy(path, cache_dir("cpu") / path.name)


@pytest.fixture(scope="session", autouse=True)
def kevolve_home(tmp_path_factory):
    """One kevolve home for the test session (machine facts are measured once), never the user's."""
    home = tmp_path_factory.mktemp("kevolve-home")
    old = os.environ.get("KEVOLVE_HOME")
    os.environ["KEVOLVE_HOME"] = str(home)
    _share_cpu_facts(tmp_path_factory)
    yield home
    if old is None:
        os.environ.pop("KEVOLVE_HOME", None)
    else:
        os.environ["KEVOLVE_HOME"] = old


@pytest.fixture(autouse=True)
def store_path(tmp_path, monkeypatch):
    """Each test has its own store: nothing a test stores can answer another test's question."""
    path = tmp_path / "store.sqlite"
    monkeypatch.setenv("KEVOLVE_STORE", str(path))
    return path


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server on 127.0.0.1 for this test session (each xdist worker starts its own)."""
    import postgres_server as pg

    why = pg.missing()
    if why:
        pytest.skip(f"no PostgreSQL server for the PostgreSQL store tests: {why}")
    server = pg.Server().start()
    yield server
    server.stop()


@pytest.fixture
def postgres_store(postgres_server):
    """The URL of a new, empty database on the test server, dropped after the test."""
    name = postgres_server.new_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, store_path, monkeypatch):
    """The store-focused tests run on both kinds of store: this test's SQLite file, or a database of its own on
    the test PostgreSQL server. ``$KEVOLVE_STORE`` points at it."""
    if request.param == "sqlite":
        return store_path
    url = request.getfixturevalue("postgres_store")
    monkeypatch.setenv("KEVOLVE_STORE", url)
    return url


@pytest.fixture
def fast_harness(tmp_path):
    return HarnessConfig(timeout_s=60, repeats=5, sample_s=0.0005, workdir=str(tmp_path / "builds"))


@pytest.fixture
def fake_plugin():
    """The fake backend registered in-process, for this test only."""
    import fake_backend

    from kevolve.plugins import get_manager, reset_manager

    reset_manager()
    get_manager().register(fake_backend, name="fake_backend")
    yield get_manager()
    reset_manager()


#: test functions the fast tier leaves out, measured (tests/list_slow_tests.py writes the list)
SLOW = set((Path(__file__).parent / "tests" / "slow_tests.txt").read_text().split())


def pytest_collection_modifyitems(config, items):
    """``pytest -m "not slow"`` is the edit-test loop; the full suite (CI) runs everything."""
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
