"""What the program tests share: a harness that checks without timing, and the cpu target."""

from __future__ import annotations

import pytest

from kevolve.harness.pipeline import HarnessConfig


@pytest.fixture
def check_only(tmp_path):
    """Correctness only: these tests judge lowering, not speed."""
    return HarnessConfig(timeout_s=120, time=False, workdir=str(tmp_path / "builds"))


@pytest.fixture(scope="module")
def cpu():
    from kevolve.plugins import get_manager

    return get_manager().usable_target("cpu")
