"""Helpers the Triton recipe tests share (a module of its own: several test folders have a conftest)."""

from __future__ import annotations

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.synthesis.base import Candidate

TARGET = "nvidia_h100"


def catalog_problem(op: str, dtype: str, dims: dict[str, int] | None = None, **attrs) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=dims, dtype=dtype, attrs=attrs or None)


def recipe_for(recipes, prob):
    matches = [r for r in recipes if r.supports(prob)]
    assert len(matches) >= 1, prob.name
    return matches[0]


def evaluate(source: str, params: dict, prob, config: HarnessConfig, target: str = TARGET):
    return evaluate_candidate(Candidate(source, "triton", params), prob, target, config)
