"""The C++ matmul recipe through the real harness: default and seeded random schedules are correct for both ops
and both dtypes (edge tiles included: the check shapes are 1x1x1, 33x17x65 and 70x130x9), and a kernel that
skips the last column of C is caught."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("kevolve_cpu")

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate  # noqa: E402
from kevolve.plugins import get_manager  # noqa: E402
from kevolve.problems.catalog import CatalogProblem  # noqa: E402
from kevolve.synthesis.base import Candidate  # noqa: E402
from kevolve_cpu.recipes.cpp_matmul import CppMatmul  # noqa: E402
from kevolve_cpu.toolchain import find_compiler  # noqa: E402

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C++ compiler")

CASES = [(op, dtype) for op in ("matmul", "addmm_relu") for dtype in ("float32", "bfloat16")]


def problem(op: str, dtype: str) -> CatalogProblem:
    return CatalogProblem(get_manager().ops.get(op), dtype=dtype)


def evaluate(source: str, params: dict, prob: CatalogProblem, config: HarnessConfig):
    return evaluate_candidate(Candidate(source, "cpp", params), prob, "cpu", config)


@pytest.mark.parametrize("op,dtype", CASES)
def test_default_and_random_schedules_are_correct(op, dtype, facts, config):
    recipe, prob = CppMatmul(), problem(op, dtype)
    assert recipe.supports(prob)
    space = recipe.space(prob, facts)
    rng = random.Random(f"{op}-{dtype}")
    for params in [space.default(), space.sample(rng), space.sample(rng)]:
        assert space.valid(params)
        source = recipe.render(prob, params)
        assert "torch" not in source.lower()
        e = evaluate(source, params, prob, config)
        assert e.status == "ok", (params, e.status, e.reason, e.evidence)


def test_recipe_is_registered():
    from kevolve_cpu.recipes import all_recipes

    assert any(isinstance(r, CppMatmul) for r in all_recipes())


def test_skipping_the_last_column_is_a_wrong_result(facts, config):
    recipe, prob = CppMatmul(), problem("addmm_relu", "float32")
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    line = "const int nv = (int)std::min<int64_t>(NR, nc - jr);"
    assert line in source
    # the micro-tile that holds column N-1 stores one column fewer: C[:, N-1] keeps the harness's poison
    broken = source.replace(line, "const int nv = (int)std::min<int64_t>(NR, nc - jr) - (j0 + jr + NR >= N ? 1 : 0);")
    e = evaluate(broken, params, prob, config)
    assert e.status == "wrong_result", (e.status, e.reason)
