"""The C++ recipes of the fused long-tail ops (dot_interaction, target_attention): the default bfloat16 point
and a seeded random float32 point pass the harness's correctness checks (which include the catalog's check
shapes: one vector of dim 1, more vectors than the register blocking, dims that are not a multiple of the vector
width, empty and full histories), and the checks catch a plausible mistake in each: a triangle row stored one
slot late, a history that also reads its first padding row."""

from __future__ import annotations

import random

import pytest
from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.synthesis.base import Candidate
from kevolve_cpu.recipes.cpp_attention import CppTargetAttention
from kevolve_cpu.recipes.cpp_interaction import CppDotInteraction

RECIPES = {"dot_interaction": CppDotInteraction(), "target_attention": CppTargetAttention()}
DIMS = {"dot_interaction": {"batch": 300}, "target_attention": {"batch": 300, "history": 40}}
#: (text in the default source, its mistaken replacement)
MISTAKES = {
    "dot_interaction": ("tri = ob + dim + i * (i - 1) / 2;", "tri = ob + dim + i * (i - 1) / 2 + (i < features);"),
    "target_attention": ("std::max<int64_t>(lengths[b], 0), history)",
                         "std::max<int64_t>(lengths[b] + 1, 0), history)"),
}


def _problem(op, dtype):
    return CatalogProblem(get_manager().ops.get(op), dims=DIMS[op], dtype=dtype)


def _space(op, problem):
    target = get_manager().target("cpu")
    return RECIPES[op].space(problem, target.backend.facts(target.spec))


def _evaluate(problem, params, source):
    return evaluate_candidate(Candidate(source, "cpp", params), problem, "cpu", HarnessConfig(time=False))


@pytest.mark.parametrize("op", sorted(RECIPES))
@pytest.mark.parametrize("dtype,point", [("bfloat16", "default"), ("float32", "sampled")])
def test_points_are_correct(op, dtype, point):
    problem = _problem(op, dtype)
    space = _space(op, problem)
    params = space.default() if point == "default" else space.sample(random.Random(dtype))
    assert space.valid(params) and all(p.responds_to for p in space.params)
    source = RECIPES[op].render(problem, params)
    assert "torch" not in source
    result = _evaluate(problem, params, source)
    assert result.status == "ok", (params, result.status, result.reason, result.evidence.get("log", "")[:2000])


@pytest.mark.parametrize("op", sorted(RECIPES))
def test_a_plausible_mistake_is_caught(op):
    problem = _problem(op, "float32")
    params = _space(op, problem).default()
    source = RECIPES[op].render(problem, params)
    right, wrong = MISTAKES[op]
    assert source.count(right) == 1
    result = _evaluate(problem, params, source.replace(right, wrong))
    assert result.status == "wrong_result", (result.status, result.reason)
