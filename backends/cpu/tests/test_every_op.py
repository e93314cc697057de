"""Every catalog op gets a correct C++ kernel from the search on the CPU target."""

from __future__ import annotations

import pytest

import kevolve
from kevolve.plugins import get_manager

OPS = get_manager().ops.names()


@pytest.mark.parametrize("op", OPS)
def test_optimize_finds_a_correct_cpp_kernel(op, fast_harness):
    result = kevolve.optimize(op, target="cpu", budget=1, batch=1, harness=fast_harness)
    assert result.correct, [(n.recipe, n.evaluation.status, n.evaluation.reason) for n in result.nodes]
    assert result.language == "cpp"
    assert result.diagnosis is not None and result.speedup > 0
