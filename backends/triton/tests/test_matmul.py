"""The Triton matmul recipe (matmul, addmm_relu) through the real harness on nvidia_h100: compiled for sm_90,
correct through the interpreter at a small timing shape and the catalog's check shapes (1x1x1, 33x17x65,
70x130x9: M, N and K edges), in float32 (default tf32x3 and a sampled point) and bfloat16 (the interpreter
runner widens bf16 dot operands, which Triton's interpreter would multiply as raw bit patterns).
Every knob responds to a diagnosis; a kernel that skips the last K tile is caught."""

from __future__ import annotations

import random

import pytest
from triton_cases import catalog_problem, evaluate, evaluate_mutant, recipe_for
from kevolve import diagnosis as d
from kevolve_triton.recipes import matmul

SMALL = {"m": 70, "n": 130, "k": 65}


@pytest.mark.parametrize("op", ["matmul", "addmm_relu"])
def test_float32_default_point_is_correct_and_compiled(op, facts, config):
    prob = catalog_problem(op, "float32", SMALL)
    recipe = recipe_for(matmul.RECIPES, prob)
    space = recipe.space(prob, facts)
    params = space.default()
    assert space.valid(params) and params["INPUT_PRECISION"] == "tf32x3", params
    source = recipe.render(prob, params)
    assert "torch" not in source and "numpy" not in source and 'input_precision="tf32x3"' in source
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    assert e.resources[d.REGISTERS] > 0 and e.resources["num_warps"] == params["num_warps"]
    assert e.resources.get("spill_bytes", 0) == 0
    assert e.untimed and "interpreter" in e.untimed and not e.timings


def test_a_sampled_float32_point_is_correct(facts, config):
    prob = catalog_problem("matmul", "float32", SMALL)
    recipe = recipe_for(matmul.RECIPES, prob)
    space = recipe.space(prob, facts)
    params = {**space.sample(random.Random("matmul")), "INPUT_PRECISION": "ieee"}
    assert space.valid(params) and params != space.default(), params
    e = evaluate(recipe.render(prob, params), params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)


def test_a_persistent_grid_covers_every_tile(facts, config):
    """Fewer programs than tiles (32 x 32 tiles of a 70 x 130 output: 15 tiles for the target's 132 or 264
    programs would each get one), so a check shape where programs walk several tiles is forced: 4 programs."""
    prob = catalog_problem("addmm_relu", "float32", SMALL)
    recipe = recipe_for(matmul.RECIPES, prob)
    space = recipe.space(prob, facts)
    params = {**space.default(), "BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 2, "PROGRAMS": facts.parallel_units}
    assert space.valid(params), params
    rendered = recipe.render(prob, params)
    source = rendered.replace(f"== 0, PROGRAMS={facts.parallel_units},", "== 0, PROGRAMS=4,").replace(
        f"min(tiles, {facts.parallel_units})", "min(tiles, 4)")
    assert source.count("== 0, PROGRAMS=4,") == 1 and source.count("min(tiles, 4)") == 1, rendered[-500:]
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    skipping = source.replace("for tile in range(tl.program_id(0), tiles, PROGRAMS):",
                              "for tile in range(tl.program_id(0), tiles - 1, PROGRAMS):")
    assert skipping != source
    assert evaluate(skipping, params, prob, config).status == "wrong_result"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_split_k_sums_every_split_and_applies_the_epilogue_once(dtype, facts, config):
    """addmm_relu (bias, then relu on the whole sum) with K = 65 in 16-wide steps over 4 splits: splits of 2, 2,
    and 1 masked steps and one past K's end; bfloat16 output through a float32 workspace."""
    prob = catalog_problem("addmm_relu", dtype, SMALL)
    recipe = recipe_for(matmul.RECIPES, prob)
    space = recipe.space(prob, facts)
    params = {**space.default(), "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "num_warps": 2, "SPLIT_K": 4}
    assert space.valid(params), params
    assert not space.valid({**params, "PROGRAMS": facts.parallel_units})
    source = recipe.render(prob, params)
    assert "torch" not in source and "_matmul_reduce[" in source
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    assert e.resources["launches"] == 2
    first_split_lost = source.replace("for s in tl.static_range(SPLIT_K):", "for s in tl.static_range(1, SPLIT_K):")
    assert first_split_lost != source
    assert evaluate(first_split_lost, params, prob, config).status == "wrong_result"


def test_tma_loads_compile_for_sm_90_and_are_correct_with_edges(facts, config):
    """Tensor descriptors at a 16-byte aligned shape (70 x 128 x 96: an M edge and a K step past the end,
    both zero-filled by the descriptor); the catalog's check shapes are not aligned and take the pointer kernel
    the file keeps. Only targets whose facts say tma offer the knob."""
    from kevolve.plugins import get_manager

    prob = catalog_problem("addmm_relu", "bfloat16", {"m": 70, "n": 128, "k": 96})
    recipe = recipe_for(matmul.RECIPES, prob)
    space = recipe.space(prob, facts)
    params = {**space.default(), "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64, "num_warps": 4, "LOADS": "tma"}
    assert space.valid(params), params
    source = recipe.render(prob, params)
    assert "a_desc.load(" in source and "_matmul_kernel[" in source
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason, e.evidence)
    assert e.resources[d.REGISTERS] > 0
    loop = "for k0 in range(0, K, BLOCK_K):\n        acc = tl.dot(a_desc"
    assert source.count(loop) == 1
    short = source.replace(loop, "for k0 in range(0, K - BLOCK_K, BLOCK_K):\n        acc = tl.dot(a_desc")
    assert evaluate(short, params, prob, config).status == "wrong_result"
    a100 = get_manager().target("nvidia_a100").spec.facts
    assert "LOADS" not in {p.name for p in recipe.space(prob, a100).params}


@pytest.mark.parametrize("op", ["matmul", "addmm_relu"])
def test_bfloat16_default_point_through_the_harness(op, facts, config):
    """Triton's interpreter multiplies bf16 ``tl.dot`` operands as raw uint16 patterns (triton-lang/triton#11584);
    the interpreter runner widens them, so this holds through the harness."""
    prob = catalog_problem(op, "bfloat16", SMALL)
    recipe = recipe_for(matmul.RECIPES, prob)
    params = recipe.space(prob, facts).default()
    source = recipe.render(prob, params)
    assert "input_precision" not in source  # bfloat16 goes to the tensor cores as it is, accumulating in float32
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (params, e.status, e.reason)


def test_every_knob_responds_to_a_diagnosis(facts):
    for op in ("matmul", "addmm_relu"):
        for dtype in ("float32", "bfloat16"):
            for dims in (SMALL, None):
                prob = catalog_problem(op, dtype, dims)
                recipe = recipe_for(matmul.RECIPES, prob)
                space = recipe.space(prob, facts)
                assert space.valid(space.default()), (op, dtype, dims)
                names = {p.name for p in space.params}
                assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "PROGRAMS", "SPLIT_K", "num_warps",
                        "num_stages"} <= names
                assert ("INPUT_PRECISION" in names) == (dtype == "float32")
                for param in space.params:
                    assert param.responds_to, (op, param.name)
                    assert set(param.responds_to) <= set(d.KINDS)
                    assert set(param.responds_to.values()) <= {-1, 1}
                    assert param.initial() in param.choices, (op, param.name)


def test_defaults_follow_the_timing_shape(facts):
    def default(dtype, n):
        prob = catalog_problem("matmul", dtype, {"m": n, "n": n, "k": n})
        space = recipe_for(matmul.RECIPES, prob).space(prob, facts)
        params = space.default()
        assert space.valid(params), params
        return params

    # 512^3 has few tiles for 132 SMs: small tiles (fastest on an H100, about cuBLAS's time in bfloat16)
    assert (default("bfloat16", 512)["BLOCK_M"], default("bfloat16", 512)["BLOCK_N"]) == (64, 32)
    assert default("float32", 512)["INPUT_PRECISION"] == "tf32x3"
    big = default("bfloat16", 4096)
    assert big["BLOCK_M"] * big["BLOCK_N"] >= 128 * 128 and big["num_warps"] == 8
    # tiles never far larger than a tiny problem
    assert default("float32", 1)["BLOCK_M"] == 16


def test_a_kernel_that_skips_the_last_k_tile_is_caught(facts, config):
    prob = catalog_problem("matmul", "float32", SMALL)
    e = evaluate_mutant(matmul.RECIPES, prob, facts, config, "for k0 in range(k_lo, k_hi, BLOCK_K):",
                        "for k0 in range(k_lo, k_hi - BLOCK_K, BLOCK_K):")
    assert e.status == "wrong_result", (e.status, e.reason)
