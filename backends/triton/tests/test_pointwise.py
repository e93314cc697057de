"""The Triton pointwise recipe through the real harness on nvidia_h100: compiled for sm_90 (resource report),
correct through the interpreter in float32 and bfloat16, ranked by the static cost model with the reason it
was not timed; a kernel that drops the tail mask's last element is caught."""

from __future__ import annotations

import random

import pytest

from kevolve import diagnosis as d
from kevolve_triton.recipes import pointwise

from triton_cases import catalog_problem, evaluate, evaluate_mutant, recipe_for

SMALL = {"n": 70_001}


@pytest.mark.parametrize("op,dtype", [("gelu", "float32"), ("silu", "bfloat16"), ("mul", "float32"),
                                      ("tanh", "float32")])
def test_default_and_random_points_are_correct_and_compiled(op, dtype, facts, config):
    prob = catalog_problem(op, dtype, SMALL)
    recipe = recipe_for(pointwise.RECIPES, prob)
    space = recipe.space(prob, facts)
    for params in (space.default(), space.sample(random.Random(op))):
        e = evaluate(recipe.render(prob, params), params, prob, config)
        assert e.status == "ok", (params, e.status, e.reason, e.evidence)
        assert e.resources[d.REGISTERS] > 0 and e.resources["num_warps"] == params["num_warps"]
        assert e.untimed and "interpreter" in e.untimed and not e.timings
        assert e.estimate["model"] and e.fitness == pytest.approx(e.modeled_fraction) and 0 < e.fitness <= 1


def test_a_missed_tail_is_caught(facts, config):
    prob = catalog_problem("relu", "float32", SMALL)
    e = evaluate_mutant(pointwise.RECIPES, prob, facts, config, "mask = offs < n", "mask = offs < n - 1")
    assert e.status == "wrong_result", (e.status, e.reason)


def test_float_division_is_ieee_in_conformance_kernels():
    """Triton's ``/`` on float32 is the GPU's approximate division: ``round(z / scale)`` then crossed a half on
    15 of 33M elements against eager on an H200 (the interpreter divides exactly, so only the spelling can be
    checked here). Integer kernels keep their own operators."""
    from kevolve.synthesis.expr import BinOp, Call, Const, Var
    from kevolve_triton.recipes.aten_pointwise import kernel_expr

    rounded = Call("nearbyint", (BinOp("/", Var("z"), BinOp("/", Var("m"), Const(127.0))),))
    spelled = kernel_expr(rounded, "tl.float32")
    assert spelled.count("tl.div_rn(") == 2 and " / " not in spelled
    assert "div_rn" not in kernel_expr(BinOp("//", Var("a"), Var("b")), "tl.int64")
