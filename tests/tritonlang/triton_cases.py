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


def evaluate_mutant(recipes, prob, facts, config: HarnessConfig, original: str, replacement: str, count: int = 1,
                    change: dict | None = None):
    """The harness's evaluation of the recipe's default point (with ``change``) with ``original`` (found
    ``count`` times in the rendered source) replaced: a plausible mistake the checks must catch."""
    recipe = recipe_for(recipes, prob)
    params = {**recipe.space(prob, facts).default(), **(change or {})}
    source = recipe.render(prob, params)
    assert source.count(original) == count, (original, source.count(original))
    return evaluate(source.replace(original, replacement), params, prob, config)
