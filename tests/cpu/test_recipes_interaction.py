"""The C++ dot-interaction recipe: the default bfloat16 point and a seeded random float32 point pass the
harness's correctness checks (which include the catalog's check shapes: one feature of dim 1, more vectors than
the register blocking, dims that are not a multiple of the vector width), and the checks catch a kernel that
stores each row of the triangle one slot late."""

from __future__ import annotations

import random

import pytest
from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.synthesis.base import Candidate
from kevolve_cpu.recipes.cpp_interaction import CppDotInteraction

RECIPE = CppDotInteraction()


def _problem(dtype):
    return CatalogProblem(get_manager().ops.get("dot_interaction"), dims={"batch": 300}, dtype=dtype)


def _space(problem):
    target = get_manager().target("cpu")
    return RECIPE.space(problem, target.backend.facts(target.spec))


def _evaluate(problem, params, source):
    return evaluate_candidate(Candidate(source, "cpp", params), problem, "cpu", HarnessConfig(time=False))


@pytest.mark.parametrize("dtype,point", [("bfloat16", "default"), ("float32", "sampled")])
def test_points_are_correct(dtype, point):
    problem = _problem(dtype)
    space = _space(problem)
    params = space.default() if point == "default" else space.sample(random.Random(dtype))
    assert space.valid(params) and all(p.responds_to for p in space.params)
    source = RECIPE.render(problem, params)
    assert "torch" not in source
    result = _evaluate(problem, params, source)
    assert result.status == "ok", (params, result.status, result.reason, result.evidence.get("log", "")[:2000])


def test_a_triangle_one_slot_late_is_caught():
    problem = _problem("float32")
    params = _space(problem).default()
    source = RECIPE.render(problem, params)
    row = "tri = ob + dim + i * (i - 1) / 2;"
    assert source.count(row) == 1
    result = _evaluate(problem, params, source.replace(row, "tri = ob + dim + i * (i - 1) / 2 + (i < features);"))
    assert result.status == "wrong_result", (result.status, result.reason)
