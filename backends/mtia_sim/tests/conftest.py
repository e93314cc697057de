"""Fixtures for the mtia_sim tests: the simulator runs kernels through the Triton interpreter in this process,
with ``TRITON_INTERPRET=1`` set only while a test that needs it runs (other test folders compile for real)."""

from __future__ import annotations

import pytest

pytest.importorskip("kevolve_triton")
pytest.importorskip("kevolve_mtia_sim")


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from kevolve_triton.runner import _widen_bf16_dots

    _widen_bf16_dots()
    yield
