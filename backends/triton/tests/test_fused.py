"""The Triton recipes of the fused long-tail ops (dot_interaction, target_attention) through the real harness on
nvidia_h100: compiled for sm_90 (one launch, no spills), correct through the interpreter at a small timing shape
and at the catalog's check shapes (one vector of dim 1, dims that are not a multiple of the tile, more than 32
vectors, empty, full and single-entry histories), in float32 and bfloat16, at the default point and at other
points (several samples per program, the narrowest slices, exact float32 dots, shorter history steps; the
dense vector stacked on the sparse tile or its dots taken beside it, sparse slices by pointers or by tensor
descriptors, which the small shape's aligned rows take and the check shapes' unaligned ones fall back from);
every knob responds to a diagnosis; a plausible mistake in each is caught (a triangle that skips the first
sub-diagonal, a history that also reads its first padding row, the dense dots stored one row late, a stacked
descriptor box that starts at the first sparse row)."""

from __future__ import annotations

import pytest
from kevolve import diagnosis as d
from kevolve_triton.recipes import attention, interaction
from triton_cases import catalog_problem, evaluate, recipe_for

RECIPES = {"dot_interaction": interaction.RECIPES, "target_attention": attention.RECIPES}
SMALL = {"dot_interaction": {"batch": 40, "features": 26, "dim": 96},
         "target_attention": {"batch": 16, "history": 64, "dim": 48}}
#: (text in the default source, its mistaken replacement)
MISTAKES = {
    "dot_interaction": ("lower = (i > j) & (i <= features)", "lower = (i > j + 1) & (i <= features)"),
    "target_attention": ("n = tl.minimum(tl.load(lengths_ptr + b), history)",
                         "n = tl.minimum(tl.load(lengths_ptr + b) + 1, history)"),
}


def _evaluate(prob, params, config, source=None):
    recipe = recipe_for(RECIPES[prob.name], prob)
    source = recipe.render(prob, params) if source is None else source
    assert "torch" not in source
    return evaluate(source, params, prob, config)


@pytest.mark.parametrize("op,dtype,change", [
    ("dot_interaction", "float32", {}),
    ("dot_interaction", "bfloat16", {}),
    ("dot_interaction", "float32", {"SAMPLES": 4, "BLOCK_D": 32, "INPUT_PRECISION": "ieee"}),
    ("dot_interaction", "bfloat16", {"SAMPLES": 2, "BLOCK_D": 128, "num_warps": 8}),
    ("dot_interaction", "float32", {"INPUT_PRECISION": "tf32x3"}),
    ("dot_interaction", "float32", {"INPUT_PRECISION": "tf32x3_gram", "SAMPLES": 2, "BLOCK_D": 32, "num_warps": 2}),
    ("dot_interaction", "float32", {"DENSE": "stacked", "LOADS": "pointers", "BLOCK_D": 16, "num_stages": 1}),
    ("dot_interaction", "bfloat16", {"DENSE": "stacked", "LOADS": "tma", "SAMPLES": 2, "BLOCK_D": 32, "num_warps": 2}),
    ("dot_interaction", "bfloat16", {"DENSE": "separate", "LOADS": "pointers"}),
    ("target_attention", "float32", {}),
    ("target_attention", "bfloat16", {}),
    ("target_attention", "float32", {"CHUNK": 16, "num_warps": 4}),
])
def test_points_are_correct_and_compiled(op, dtype, change, facts, config):
    prob = catalog_problem(op, dtype, SMALL[op])
    space = recipe_for(RECIPES[op], prob).space(prob, facts)
    params = {**space.default(), **change}
    assert space.valid(params), params
    e = _evaluate(prob, params, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    assert e.resources["launches"] == 1 and e.resources["num_warps"] == params["num_warps"]
    assert e.resources[d.REGISTERS] > 0 and e.resources.get("spill_bytes", 0) == 0


@pytest.mark.parametrize("op", sorted(RECIPES))
def test_every_knob_responds_to_a_diagnosis(op, facts):
    for dtype in ("float32", "bfloat16"):
        for dims in (SMALL[op], None):
            prob = catalog_problem(op, dtype, dims)
            space = recipe_for(RECIPES[op], prob).space(prob, facts)
            assert space.valid(space.default()), (dtype, dims)
            for param in space.params:
                assert param.responds_to and set(param.responds_to) <= set(d.KINDS), param.name
                assert param.initial() in param.choices, param.name


@pytest.mark.parametrize("op", sorted(RECIPES))
def test_a_plausible_mistake_is_caught(op, facts, config):
    prob = catalog_problem(op, "float32", SMALL[op])
    recipe = recipe_for(RECIPES[op], prob)
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    right, wrong = MISTAKES[op]
    assert source.count(right) == 1
    e = _evaluate(prob, params, config, source.replace(right, wrong))
    assert e.status == "wrong_result", (e.status, e.reason)


def test_gram_split_needs_both_cross_terms(facts, config):
    """tf32x3_gram adds the cross term and its transpose; with the transpose left out the triangle is off by
    about 2^-11 of its values, past float32's tolerance."""
    prob = catalog_problem("dot_interaction", "float32", SMALL["dot_interaction"])
    recipe = recipe_for(RECIPES["dot_interaction"], prob)
    params = {**recipe.space(prob, facts).default(), "INPUT_PRECISION": "tf32x3_gram"}
    source = recipe.render(prob, params)
    right = "gram += cross + tl.trans(cross)"
    assert source.count(right) == 1
    e = _evaluate(prob, params, config, source.replace(right, "gram += cross"))
    assert e.status == "wrong_result", (e.status, e.reason)


@pytest.mark.parametrize("change,right,wrong", [
    ({"DENSE": "separate"}, "dim + (t * (t - 1)) // 2, dense_dots", "dim + (t * (t + 1)) // 2, dense_dots"),
    ({"DENSE": "stacked", "LOADS": "tma"}, "sparse.load([b, -1, d0])", "sparse.load([b, 0, d0])"),
])
def test_dense_placement_mistakes_are_caught(change, right, wrong, facts, config):
    prob = catalog_problem("dot_interaction", "float32", SMALL["dot_interaction"])
    recipe = recipe_for(RECIPES["dot_interaction"], prob)
    params = {**recipe.space(prob, facts).default(), **change}
    source = recipe.render(prob, params)
    assert source.count(right) == 1
    assert _evaluate(prob, params, config).status == "ok"
    e = _evaluate(prob, params, config, source.replace(right, wrong))
    assert e.status == "wrong_result", (e.status, e.reason)
