"""Helpers the Triton recipe tests share (a module of its own: several test folders have a conftest)."""

from __future__ import annotations

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.synthesis.base import Candidate

TARGET = "nvidia_h100"


def catalog_problem(op: str, dtype: str, dims: dict[str, int] | None = None, **attrs) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=dims, dtype=dtype, attrs=attrs or None)


def default_op(name: str, dims: dict, dtype: str):
    """The problem and the op (``torch_op``) of its first recipe's default point on the H100 target."""
    from kevolve.api import resolve_problem
    from kevolve.delivery.op import torch_op

    problem = resolve_problem(name, dims, dtype, None)
    registered = get_manager().target(TARGET)
    recipe = next(r for r in registered.backend.recipes(registered.spec) if r.supports(problem))
    params = recipe.space(problem, registered.backend.facts(registered.spec)).default()
    return problem, torch_op(problem, TARGET, recipe.render(problem, params), recipe.language)


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
