"""What every conformance test shares: PyTorch's OpInfo database (read once) and the targets that run here.

The conformance tests live in three folders (tests/conformance, backends/cpu/tests/conformance,
backends/triton/tests/conformance); the conftest.py of each imports these fixtures by name."""

from __future__ import annotations

import pytest

pytest.importorskip("expecttest")  # the OpInfo database imports it

from conformance_helpers import usable_target
from kevolve.conformance.samples import op_db


@pytest.fixture(autouse=True)
def float32_only(request, monkeypatch):
    """The fast subsets check the float32 samples (their counts are float32's); a test marked ``bfloat16`` draws
    the bfloat16 samples too, as the command does on targets that compute bfloat16."""
    if "bfloat16" not in request.keywords:
        from kevolve.conformance import run

        monkeypatch.setattr(run, "EXTRA_DTYPES", ())


@pytest.fixture(scope="session")
def db():
    return op_db()


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A store of the test's own, through KEVOLVE_STORE (the CLI and the conformance cache read it)."""
    path = tmp_path / "kevolve.sqlite"
    monkeypatch.setenv("KEVOLVE_STORE", str(path))
    return path


@pytest.fixture(scope="module")
def cpu():
    return usable_target("cpu")
