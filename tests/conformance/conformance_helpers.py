"""Helpers the conformance tests share (imported by name: pytest puts this directory on the path)."""

from __future__ import annotations

import pytest
from kevolve.plugins import get_manager


def usable_target(name: str):
    """The registered target, or the test skipped with the reason it cannot run here."""
    registered = get_manager().target(name)
    ok, why = registered.backend.usable(registered.spec)
    if not ok:
        pytest.skip(why)
    return registered
