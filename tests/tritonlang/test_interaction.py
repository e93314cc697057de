"""The Triton dot-interaction recipe through the real harness on nvidia_h100: compiled for sm_90 (one launch, no
spills), correct through the interpreter at a small timing shape and at the catalog's check shapes (one
feature and dim 1, a dim that is not a multiple of the slice, more than 32 vectors), in float32 and bfloat16, at
the default point and at points with several samples per program, the narrowest slice and exact float32 dots;
every knob responds to a diagnosis; a kernel that skips the first sub-diagonal (the pairs (i, i - 1)) is caught."""

from __future__ import annotations

import pytest
from kevolve import diagnosis as d
from kevolve_triton.recipes import interaction
from triton_cases import catalog_problem, evaluate, recipe_for

SMALL = {"batch": 40, "features": 26, "dim": 96}


def _evaluate(prob, params, config, source=None):
    recipe = recipe_for(interaction.RECIPES, prob)
    source = recipe.render(prob, params) if source is None else source
    assert "torch" not in source
    return evaluate(source, params, prob, config)


@pytest.mark.parametrize("dtype,change", [
    ("float32", {}),
    ("bfloat16", {}),
    ("float32", {"SAMPLES": 4, "BLOCK_D": 16, "INPUT_PRECISION": "ieee"}),
    ("bfloat16", {"SAMPLES": 2, "BLOCK_D": 128, "num_warps": 8}),
])
def test_points_are_correct_and_compiled(dtype, change, facts, config):
    prob = catalog_problem("dot_interaction", dtype, SMALL)
    space = recipe_for(interaction.RECIPES, prob).space(prob, facts)
    params = {**space.default(), **change}
    assert space.valid(params), params
    e = _evaluate(prob, params, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    assert e.resources["launches"] == 1 and e.resources["num_warps"] == params["num_warps"]
    assert e.resources[d.REGISTERS] > 0 and e.resources.get("spill_bytes", 0) == 0


def test_every_knob_responds_to_a_diagnosis(facts):
    for dtype in ("float32", "bfloat16"):
        for dims in (SMALL, None):
            prob = catalog_problem("dot_interaction", dtype, dims)
            space = recipe_for(interaction.RECIPES, prob).space(prob, facts)
            assert space.valid(space.default()), (dtype, dims)
            for param in space.params:
                assert param.responds_to and set(param.responds_to) <= set(d.KINDS), param.name
                assert param.initial() in param.choices, param.name


def test_a_kernel_that_skips_the_first_subdiagonal_is_caught(facts, config):
    prob = catalog_problem("dot_interaction", "float32", SMALL)
    recipe = recipe_for(interaction.RECIPES, prob)
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    lower = "lower = (i > j) & (i <= features)"
    assert source.count(lower) == 1
    e = _evaluate(prob, params, config, source.replace(lower, "lower = (i > j + 1) & (i <= features)"))
    assert e.status == "wrong_result", (e.status, e.reason)
