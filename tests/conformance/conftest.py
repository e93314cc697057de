"""What every conformance test shares: PyTorch's OpInfo database (read once) and the targets that run here."""

from __future__ import annotations

import pytest

pytest.importorskip("expecttest")  # the OpInfo database imports it

from kevolve.conformance.samples import op_db
from kevolve.plugins import get_manager


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


def usable_target(name: str):
    """The registered target, or the test skipped with the reason it cannot run here."""
    registered = get_manager().target(name)
    ok, why = registered.backend.usable(registered.spec)
    if not ok:
        pytest.skip(why)
    return registered


@pytest.fixture(scope="module")
def cpu():
    return usable_target("cpu")
