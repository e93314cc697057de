"""The Triton row recipes (row_reduce, row_softmax, row_norm, row_scan) through the real harness on nvidia_h100:
compiled for sm_90, correct through the interpreter at the timing shape and at the catalog's check shapes
(which run the looped variant too: 7x1031 is wider than any MAX_BLOCK at this timing shape). Each op's default
point in float32 and one sampled point, forced onto the looped variant, in bfloat16; every knob responds to a
diagnosis; a kernel whose mask skips the last column is caught."""

from __future__ import annotations

import random

import pytest
from triton_cases import catalog_problem, evaluate, recipe_for
from kevolve import diagnosis as d
from kevolve_triton.recipes import rows

SMALL = {"rows": 257, "cols": 300}
OPS = ("sum", "mean", "amax", "softmax", "log_softmax", "layer_norm", "rms_norm", "cumsum")


def _looped(space, params):
    """``params`` moved onto the looped variant at the timing shape (the smaller MAX_BLOCK), when valid."""
    looped = {**params, "MAX_BLOCK": min(space._by_name["MAX_BLOCK"].choices)}
    return looped if space.valid(looped) else params


@pytest.mark.parametrize("op", OPS)
def test_default_and_sampled_points_are_correct_and_compiled(op, facts, config):
    for dtype in ("float32", "bfloat16"):
        prob = catalog_problem(op, dtype, SMALL)
        recipe = recipe_for(rows.RECIPES, prob)
        space = recipe.space(prob, facts)
        params = space.default() if dtype == "float32" else _looped(space, space.sample(random.Random(op)))
        assert space.valid(params), params
        source = recipe.render(prob, params)
        assert "torch" not in source and "numpy" not in source
        e = evaluate(source, params, prob, config)
        assert e.status == "ok", (dtype, params, e.status, e.reason, e.evidence)
        assert e.resources[d.REGISTERS] > 0 and e.resources["num_warps"] == params["num_warps"]
        if dtype == "float32":  # the default spills nothing
            assert e.resources.get("spill_bytes", 0) == 0, e.resources


def test_every_knob_responds_to_a_diagnosis(facts):
    for recipe in rows.RECIPES:
        for op in recipe.ops:
            for dims in (SMALL, None):
                prob = catalog_problem(op, "float32", dims)
                space = recipe.space(prob, facts)
                assert recipe.supports(prob) and space.valid(space.default()), (op, dims)
                for param in space.params:
                    assert param.responds_to, (recipe.name, param.name)
                    assert set(param.responds_to) <= set(d.KINDS)
                    assert param.initial() in param.choices, (op, param.name)


def test_defaults_follow_the_timing_shape(facts):
    narrow = recipe_for(rows.RECIPES, catalog_problem("softmax", "float32", {"rows": 65536, "cols": 64}))
    params = narrow.space(catalog_problem("softmax", "float32", {"rows": 65536, "cols": 64}), facts).default()
    assert params["ROWS"] >= 8 and params["MAX_BLOCK"] == 64  # many narrow rows per program, single pass
    wide_prob = catalog_problem("softmax", "float32", {"rows": 4096, "cols": 65536})
    wide = recipe_for(rows.RECIPES, wide_prob).space(wide_prob, facts).default()
    assert wide["ROWS"] == 1 and wide["MAX_BLOCK"] < 65536  # looped


def test_a_skipped_last_column_is_caught(facts, config):
    prob = catalog_problem("sum", "float32", SMALL)
    recipe = recipe_for(rows.RECIPES, prob)
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    assert source.count("cmask = c < cols\n") == 1
    e = evaluate(source.replace("cmask = c < cols\n", "cmask = c < cols - 1\n"), params, prob, config)
    assert e.status == "wrong_result", (e.status, e.reason)


def test_a_persistent_grid_covers_every_block_of_rows(facts, config):
    """3 programs striding over the blocks (the target's 2-8 per unit would give each block its own program at
    these shapes), through the single-pass and, at the 7 x 1031 check shape, the looped kernel."""
    prob = catalog_problem("layer_norm", "float32", SMALL)
    recipe = recipe_for(rows.RECIPES, prob)
    space = recipe.space(prob, facts)
    programs = 2 * facts.parallel_units
    params = {**space.default(), "ROWS": 2, "PROGRAMS": programs}
    assert space.valid(params), params
    rendered = recipe.render(prob, params)
    source = rendered.replace(f"ROWS=2, PROGRAMS={programs},", "ROWS=2, PROGRAMS=3,").replace(
        f"min(triton.cdiv(rows, 2), {programs})", "min(triton.cdiv(rows, 2), 3)")
    assert source.count("ROWS=2, PROGRAMS=3,") == 2 and source.count("min(triton.cdiv(rows, 2), 3)") == 1
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    stride = "for row0 in range(tl.program_id(0) * ROWS, rows, PROGRAMS * ROWS):"
    assert source.count(stride) == 2
    skipping = source.replace(stride, "for row0 in range(tl.program_id(0) * ROWS, rows - ROWS, PROGRAMS * ROWS):")
    assert evaluate(skipping, params, prob, config).status == "wrong_result"
