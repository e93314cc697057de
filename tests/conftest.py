from __future__ import annotations

import os

import pytest

from kevolve.harness.pipeline import HarnessConfig


@pytest.fixture(scope="session", autouse=True)
def kevolve_home(tmp_path_factory):
    """One kevolve home for the test session (machine facts are measured once), never the user's."""
    home = tmp_path_factory.mktemp("kevolve-home")
    old = os.environ.get("KEVOLVE_HOME")
    os.environ["KEVOLVE_HOME"] = str(home)
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
