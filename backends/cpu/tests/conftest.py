"""Fixtures shared by the CPU recipe tests."""

from __future__ import annotations

import pytest

from kevolve.harness.pipeline import HarnessConfig
from kevolve.plugins import get_manager


@pytest.fixture(scope="module")
def facts():
    """The CPU target's measured machine facts (probed once per test session, then cached)."""
    target = get_manager().target("cpu")
    return target.backend.facts(target.spec)


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """Correctness only (no timing), with a build cache private to the test module."""
    return HarnessConfig(time=False, timeout_s=60, workdir=str(tmp_path_factory.mktemp("recipe-builds")))
