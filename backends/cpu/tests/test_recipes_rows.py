"""The C++ row recipes (row_reduce, row_softmax, row_norm, row_scan) through the real harness: the default and two
seeded random schedules are correct for every op and both dtypes, and a kernel that skips the last column is
caught.

Correctness runs at the catalog's check shapes (1x1, 7x1031, 129x64) plus a smaller stand-in for the timing
shape (the 4096-row timing shape only adds seconds of reference work per candidate, not coverage: rows and cols
are read at run time)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("kevolve_cpu")

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate  # noqa: E402
from kevolve.plugins import get_manager  # noqa: E402
from kevolve.problems.catalog import CatalogProblem  # noqa: E402
from kevolve.synthesis.base import Candidate  # noqa: E402
from kevolve_cpu.recipes import cpp_rows  # noqa: E402
from kevolve_cpu.toolchain import find_compiler  # noqa: E402

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C++ compiler")

OPS = ("sum", "mean", "amax", "softmax", "log_softmax", "layer_norm", "rms_norm", "cumsum")
CASES = [(op, dtype) for op in OPS for dtype in ("float32", "bfloat16")]
#: large enough for the kernels' parallel path (they run single-threaded below 32768 elements), with row and task
#: counts that leave remainders (257 rows: 16 tasks of 16 and one of 1) and rows that are not 64-byte aligned
SMALL_TIMING_DIMS = {"rows": 257, "cols": 300}


def problem(op: str, dtype: str) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dims=SMALL_TIMING_DIMS, dtype=dtype)


def recipe_for(prob: CatalogProblem):
    matches = [r for r in cpp_rows.RECIPES if r.supports(prob)]
    assert len(matches) == 1, [r.name for r in matches]
    return matches[0]


def evaluate(source: str, params: dict, prob: CatalogProblem, config: HarnessConfig):
    return evaluate_candidate(Candidate(source, "cpp", params), prob, "cpu", config)


@pytest.mark.parametrize("op,dtype", CASES)
def test_default_and_random_schedules_are_correct(op, dtype, facts, config):
    prob = problem(op, dtype)
    recipe = recipe_for(prob)
    space = recipe.space(prob, facts)
    rng = random.Random(f"{op}-{dtype}")
    schedules = [space.default(), space.sample(rng), space.sample(rng)]
    sources = []
    for params in schedules:
        assert space.valid(params)
        source = recipe.render(prob, params)
        assert "torch" not in source.lower()
        sources.append(source)
    for params, source in zip(schedules, sources):
        e = evaluate(source, params, prob, config)
        assert e.status == "ok", (params, e.status, e.reason, e.evidence)


def test_every_knob_responds_to_some_diagnosis(facts):
    for op in OPS:
        prob = problem(op, "float32")
        for param in recipe_for(prob).space(prob, facts).params:
            assert param.responds_to, (op, param.name)
            assert param.initial() in param.choices, (op, param.name)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_eps_is_baked_in(op, facts):
    prob = CatalogProblem(get_manager().ops.get(op), attrs={"eps": 0.125})
    recipe = recipe_for(prob)
    assert "(ct_t)0.125" in recipe.render(prob, recipe.space(prob, facts).default())


def test_recipes_are_registered():
    from kevolve_cpu.recipes import all_recipes

    names = {r.name for r in all_recipes()}
    assert {r.name for r in cpp_rows.RECIPES} <= names


def test_skipping_the_last_column_is_caught(facts, config):
    prob = problem("softmax", "float32")
    recipe = recipe_for(prob)
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    write = "for (int64_t j = 0; j < cols; ++j) { yw[j] ="
    assert source.count(write) == (2 if params["threads"] > 1 else 1)  # under OpenMP, and without for small calls
    broken = source.replace(write, "for (int64_t j = 0; j < cols - 1; ++j) { yw[j] =")
    e = evaluate(broken, params, prob, config)
    assert e.status == "wrong_result", (e.status, e.reason)
