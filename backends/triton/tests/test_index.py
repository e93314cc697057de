"""The Triton indexing and hashing recipes (gather, embedding_bag, bucketize, feature_hash, keyed_feature_hash,
jagged_truncate) through the real harness on nvidia_h100: compiled for sm_90, correct through the interpreter at a
small timing shape and at the catalog's check shapes (empty bags, features and sequences, exact boundary hits,
negative ids), in float32 and bfloat16 where the op has both; the hashes bit-exact, feature_hash also with a
power-of-two bucket count, keyed_feature_hash with every lookup and remainder and on table sizes at the edges.
Each op's default point and its alternative code paths (global, shared-memory and grid search, plain remainder,
serial scan) or a sampled point; the grid search also on boundaries chosen to defeat it; every knob responds to a
diagnosis; a jagged kernel that keeps k - 1 items is caught."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest
import torch
from kevolve import diagnosis as d
from kevolve_triton.recipes import hashing, index
from triton_cases import catalog_problem, evaluate, evaluate_mutant, recipe_for

SMALL = {
    "gather": {"rows": 64, "cols": 100, "k": 300},
    "embedding_bag": {"vocab": 1000, "dim": 64, "bags": 50, "pool": 5},
    "bucketize": {"n": 5000, "boundaries": 1024},
    "feature_hash": {"n": 5000},
    "keyed_feature_hash": {"features": 26, "batch": 16, "pool": 20},
    "jagged_truncate": {"batch": 300, "max_len": 70},
}
DTYPES = {
    "gather": ("float32", "bfloat16"), "embedding_bag": ("float32", "bfloat16"), "bucketize": ("float32",),
    "feature_hash": ("int64",), "keyed_feature_hash": ("int64",), "jagged_truncate": ("float32", "bfloat16"),
}
RECIPES = index.RECIPES + hashing.RECIPES


def _check(prob, params, config, facts):
    recipe = recipe_for(RECIPES, prob)
    space = recipe.space(prob, facts)
    assert space.valid(params), params
    source = recipe.render(prob, params)
    assert "torch" not in source and "numpy" not in source
    e = evaluate(source, params, prob, config)
    assert e.status == "ok", (prob.name, params, e.status, e.reason, e.evidence)
    assert e.resources[d.REGISTERS] > 0
    # the worst launch's: jagged's single-program scans pick their own num_warps
    assert e.resources["num_warps"] == params["num_warps"] if e.resources["launches"] == 1 \
        else e.resources["num_warps"] >= params["num_warps"]
    assert e.resources.get("spill_bytes", 0) == 0
    return e


@pytest.mark.parametrize("op,dtype", [(op, dt) for op, dts in DTYPES.items() for dt in dts])
def test_default_point_is_correct_and_compiled(op, dtype, facts, config):
    prob = catalog_problem(op, dtype, SMALL[op])
    recipe = recipe_for(RECIPES, prob)
    e = _check(prob, recipe.space(prob, facts).default(), config, facts)
    if torch.cuda.is_available():  # compiled for the GPU here, and timed
        assert e.timings["kernel"].median > 0 and not e.untimed
    else:
        assert e.untimed and "interpreter" in e.untimed and not e.timings


@pytest.mark.parametrize("op,dtype,change", [
    ("bucketize", "float32", {"SEARCH": "shared", "ITEMS": 2}),
    ("bucketize", "float32", {"SEARCH": "global", "BLOCK": 256}),
    ("bucketize", "float32", {"SEARCH": "grid", "CELLS": 1, "ITEMS": 4}),
    ("feature_hash", "int64", {"MOD": "div", "ITEMS": 4}),
    ("keyed_feature_hash", "int64", {"LOOKUP": "search", "MOD": "div", "PDL": False}),
    ("keyed_feature_hash", "int64", {"LOOKUP": "search", "BLOCK": 256, "num_warps": 2}),
    ("keyed_feature_hash", "int64", {"MOD": "div", "BLOCK": 4096, "num_warps": 8, "PDL": False}),
    ("keyed_feature_hash", "int64", {"LOOKUP": "table", "PDL": False}),
    ("jagged_truncate", "bfloat16", {"SCAN": "serial", "TILE_B": 32, "num_warps": 2}),
    ("gather", "float32", None),
    ("gather", "bfloat16", {"X": "direct", "BLOCK_ROWS": 2, "BLOCK_K": 128}),
    ("jagged_truncate", "float32", None),
    # 263 tiles: the last tiles' lookback sums the totals before them in two blocks of 256
    ("jagged_truncate", "float32", {"SCAN": "lookback", "TILE_B": 8, "SCAN_BLOCK": 256, "K_CHUNK": 32,
                                    "num_warps": 1}),
])
def test_alternative_and_sampled_points_are_correct(op, dtype, change, facts, config):
    dims = {"batch": 2100, "max_len": 40} if change and change.get("SCAN") == "lookback" else SMALL[op]
    prob = catalog_problem(op, dtype, dims)
    space = recipe_for(RECIPES, prob).space(prob, facts)
    params = {**space.default(), **change} if change else space.sample(random.Random(op))
    assert params != space.default()
    e = _check(prob, params, config, facts)
    if op == "jagged_truncate":
        assert e.resources["launches"] == (3 if params["SCAN"] == "tiled" else 2)


def _run_on_awkward_inputs(script: str, op: str, dtype: str, change: dict, facts, tmp_path):
    """Render the recipe's default point with ``change`` into a kernel file and run ``script`` on it in a fresh
    process: compiled on a GPU where there is one, through the interpreter otherwise."""
    prob = catalog_problem(op, dtype, SMALL[op])
    recipe = recipe_for(RECIPES, prob)
    kernel_file = tmp_path / f"{op}.py"
    kernel_file.write_text(recipe.render(prob, {**recipe.space(prob, facts).default(), **change}))
    interpret = "0" if torch.cuda.is_available() else "1"
    script_file = tmp_path / "check.py"  # a file: Triton compiles a @jit function from its source file
    script_file.write_text(script)
    return subprocess.run([sys.executable, str(script_file), str(kernel_file)], capture_output=True, check=False,
                          text=True, timeout=600, env={**os.environ, "TRITON_INTERPRET": interpret})


#: boundaries the catalog's generator never draws, each against x with planted hits, NaN and infinities
_AWKWARD_BUCKETIZE = textwrap.dedent("""
    import importlib.util, sys, torch
    spec = importlib.util.spec_from_file_location("kernel_file", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = torch.Generator().manual_seed(0)
    inf = float("inf")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cases = {
        "clustered": torch.cat([torch.randn(1000, generator=g) * 1e-3, torch.randn(24, generator=g) * 100]),
        "ties": torch.randn(40, generator=g).round().repeat_interleave(25),
        "infinite ends": torch.cat([torch.tensor([-inf]), torch.randn(30, generator=g), torch.tensor([inf])]),
        "all equal": torch.full((64,), 1.5),
        "one": torch.tensor([0.25]),
        "none": torch.empty(0),
    }
    for name, boundaries in cases.items():
        boundaries = boundaries.sort().values
        x = torch.randn(3000, generator=g) * 3
        if boundaries.numel():
            x[::7] = boundaries[torch.randint(0, boundaries.numel(), (x[::7].numel(),), generator=g)]
        x[:4] = torch.tensor([float("nan"), inf, -inf, 0.0])
        out = torch.full(x.shape, -1, dtype=torch.int64, device=device)
        module.kernel([x.to(device), boundaries.to(device)], [out])
        expected = torch.bucketize(x, boundaries)
        assert torch.equal(out.cpu(), expected), (name, (out.cpu() != expected).nonzero()[:5].flatten().tolist())
    print("all cases match")
""")


@pytest.mark.parametrize("cells", [1, 2])
def test_grid_bucketize_is_exact_on_boundaries_that_defeat_the_grid(cells, facts, tmp_path):
    """Clustered and tied boundaries put most of them in one cell; infinite ends and equal boundaries leave no
    grid to lay (every x searches all of them); an empty list puts every x in bucket 0. One cell per boundary
    makes a one-boundary grid one cell wide, which Triton compiles as a constant."""
    run = _run_on_awkward_inputs(_AWKWARD_BUCKETIZE, "bucketize", "float32",
                                 {"SEARCH": "grid", "BLOCK": 512, "CELLS": cells}, facts, tmp_path)
    assert run.returncode == 0 and "all cases match" in run.stdout, run.stderr[-3000:]


def test_feature_hash_with_a_power_of_two_bucket_count_is_exact(facts, config):
    prob = catalog_problem("feature_hash", "int64", SMALL["feature_hash"], num_buckets=1 << 20)
    recipe = recipe_for(RECIPES, prob)
    params = recipe.space(prob, facts).default()
    assert f"h & {(1 << 20) - 1}" in recipe.render(prob, params)
    _check(prob, params, config, facts)


def test_a_persistent_feature_hash_grid_strides_over_every_tile(facts, config):
    """Three times as many tiles as programs, the last one partial: a program that took only its own tile, or
    strode past one, would leave poisoned outputs behind."""
    prob = catalog_problem("feature_hash", "int64", {"n": 3 * facts.parallel_units * 128 + 77})
    space = recipe_for(RECIPES, prob).space(prob, facts)
    params = {**space.default(), "BLOCK": 128, "num_warps": 1, "PROGRAMS": facts.parallel_units}
    e = _check(prob, params, config, facts)
    assert e.resources["programs"] == facts.parallel_units


def test_magic_remainder_constants():
    for divisor in (3, 7, 1000, 1_000_003, (1 << 40) + 15, (1 << 62) + 1):
        m, s = hashing.magic_divisor(divisor)
        assert m < 1 << 64
        for a in (0, 1, divisor - 1, divisor, (1 << 63) - 1, (1 << 63) - 2, 123456789123456789, divisor * 977 + 5):
            assert (a * m >> 64) >> s == a // divisor, (divisor, a)


def test_every_knob_responds_to_a_diagnosis(facts):
    for op, dtypes in DTYPES.items():
        for dtype in dtypes:
            for dims in (SMALL[op], None):
                prob = catalog_problem(op, dtype, dims)
                space = recipe_for(RECIPES, prob).space(prob, facts)
                assert space.valid(space.default()), (op, dtype, dims)
                for param in space.params:
                    assert param.responds_to, (op, param.name)
                    assert set(param.responds_to) <= set(d.KINDS)
                    assert set(param.responds_to.values()) <= {-1, 1}
                    assert param.initial() in param.choices, (op, param.name)


def test_a_jagged_kernel_that_keeps_k_minus_one_items_is_caught(facts, config):
    prob = catalog_problem("jagged_truncate", "float32", SMALL["jagged_truncate"])
    # in the serial scan, the tile totals and the copy
    e = evaluate_mutant(RECIPES, prob, facts, config, "keep = tl.minimum(hi - lo, K)",
                        "keep = tl.minimum(hi - lo, K - 1)", count=3)
    assert e.status == "wrong_result", (e.status, e.reason)


#: table sizes the catalog never draws, each on a feature of many blocks (one divisor a block) and again on one
#: shorter than a block (a divisor per id); features that are empty; ids at the int64 edges
_AWKWARD_KEYED = textwrap.dedent("""
    import importlib.util, sys, torch
    from kevolve.plugins import get_manager
    from kevolve.problems.catalog import CatalogProblem
    spec = importlib.util.spec_from_file_location("kernel_file", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reference = CatalogProblem(get_manager().ops.get("keyed_feature_hash")).reference
    g = torch.Generator().manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sizes = torch.randint(1, 1 << 62, (5,), generator=g).tolist()
    sizes += [1, 2, 3, 4, 5, 255, 256, 257, 4095, 4097, (1 << 31) - 1, 1 << 31, (1 << 32) + 1, 3 ** 39, 10 ** 18,
              (1 << 62) - 1, 1 << 62, (1 << 62) + 1, (1 << 63) - 2, (1 << 63) - 1]
    sizes += torch.randint(1, 1 << 62, (150 - len(sizes),), generator=g).tolist()
    sizes += sizes
    batch = 3
    long = torch.randint(1, 400, (150 * batch,), generator=g)
    lengths = torch.cat([long, torch.randint(0, 40, (150 * batch,), generator=g)])
    lengths[: 5 * batch] = 0  # five empty features first, with random sizes
    lengths[-batch:] = 0  # and an empty last one
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    ids = torch.randint(-(1 << 62), 1 << 62, (int(offsets[-1]),), generator=g) * 2 + 1
    ids[:40] = torch.tensor([0, -1, 1, (1 << 63) - 1, -(1 << 63)] * 8)
    inputs = [ids, offsets, torch.tensor(sizes)]
    out = torch.full(ids.shape, -7, dtype=torch.int64, device=device)
    module.kernel([t.to(device) for t in inputs], [out])
    expected = reference(inputs)[0]
    assert torch.equal(out.cpu(), expected), (out.cpu() != expected).nonzero()[:5].flatten().tolist()
    print("all ids match")
""")


# each lookup, each modulus and both launch modes once (each case takes about two minutes in the interpreter)
@pytest.mark.parametrize("change", [{"LOOKUP": "table", "MOD": "magic", "PDL": False},
                                    {"LOOKUP": "search", "MOD": "div", "PDL": False},
                                    {"LOOKUP": "scan", "MOD": "fp64", "PDL": True}])
def test_keyed_hash_is_exact_on_table_sizes_and_ids_at_the_edges(change, facts, tmp_path):
    """Sizes 1, powers of two and their neighbours, up to 2**63 - 1 (the reciprocals' long division at its
    limits), each on a feature of many blocks and on one shorter than a block; 300 features (nine search steps,
    a scan of 512), empty features at the start and the end, ids of 0 and the int64 extremes. On a GPU the last
    case runs the hash kernel as a dependent launch of the first."""
    run = _run_on_awkward_inputs(_AWKWARD_KEYED, "keyed_feature_hash", "int64",
                                 {**change, "BLOCK": 256, "num_warps": 2}, facts, tmp_path)
    assert run.returncode == 0 and "all ids match" in run.stdout, run.stderr[-3000:]


#: the first launch's reciprocals against exact integer arithmetic, for divisors of every bit length
_KEYED_RECIPROCALS = textwrap.dedent("""
    import importlib.util, random, sys, torch
    spec = importlib.util.spec_from_file_location("kernel_file", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = random.Random(0)
    divisors = [d for k in range(1, 64) for d in range((1 << k) - 3, (1 << k) + 4) if 2 <= d < 1 << 63]
    divisors += [rng.randrange(1 << (k - 1), 1 << k) for k in range(2, 64) for _ in range(20)]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    num_buckets = torch.tensor(divisors, device=device)
    features = len(divisors)
    magic = torch.empty(2 * features, dtype=torch.int64, device=device)
    groups = -(-features // 128)
    module._keyed_tables[(groups,)](num_buckets, num_buckets, magic, num_buckets, 0, 1, features, 0, groups,
                                    BLOCK=256, STEPS=1, PDL=False, num_warps=4)
    got = [(m % (1 << 64), s) for m, s in zip(magic[:features].tolist(), magic[features:].tolist())]
    exact = [(-(-(1 << (63 + (d - 1).bit_length())) // d), (d - 1).bit_length() - 1) for d in divisors]
    wrong = [(d, g, e) for d, g, e in zip(divisors, got, exact) if g != e]
    assert not wrong, (len(wrong), wrong[:3])
    print(len(divisors), "reciprocals exact")
""")


def test_the_first_launchs_reciprocals_are_exact_for_divisors_of_every_bit_length(facts, tmp_path):
    """ceil(2**(63 + l) / d) from a float64 estimate and two integer corrections: compared with Python's
    integers for each power of two and its three neighbours either side, and 20 random divisors of each bit
    length, up to 2**63 - 1."""
    run = _run_on_awkward_inputs(_KEYED_RECIPROCALS, "keyed_feature_hash", "int64",
                                 {"LOOKUP": "table", "MOD": "magic", "PDL": False}, facts, tmp_path)
    assert run.returncode == 0 and "reciprocals exact" in run.stdout, run.stderr[-3000:]


#: the remainders of the one-launch kinds, called on (h, d) pairs at their edges through a probe kernel
_KEYED_REMAINDERS = textwrap.dedent("""
    import importlib.util, random, sys, torch, triton
    import triton.language as tl
    spec = importlib.util.spec_from_file_location("kernel_file", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _bucket = module._bucket

    @triton.jit
    def _probe(h_ptr, d_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = offs < n
        h = tl.load(h_ptr + offs, mask=inside, other=0)
        tl.store(out_ptr + offs, _bucket(h, tl.where(inside, offs, 0), d_ptr, d_ptr, 0), mask=inside)

    rng = random.Random(0)
    top = (1 << 63) - 1
    divisors = [1, 2, 3, 7, (1 << 31) - 1, (1 << 32) + 1, (1 << 53) - 1, (1 << 53) + 1, 10 ** 18, (1 << 62) - 1,
                1 << 62, (1 << 62) + 1, (1 << 62) + 135, 6148914691236517205, (1 << 63) - 2, top]
    divisors += [rng.randrange(1 << (k - 1), 1 << k) for k in range(2, 64) for _ in range(3)]
    pairs = []
    for d in divisors:
        ids = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, top, top - 1, top - 1023, top - 1024, (1 << 62) - 1]
        ids += [k * d + e for k in (top // d, top // d - 1, rng.randrange(1, top // d + 1)) for e in (-1, 0, 1)]
        ids += [rng.randrange(0, 1 << 63) for _ in range(40)]
        pairs += [(h, d) for h in ids if 0 <= h <= top]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    h = torch.tensor([p[0] for p in pairs], device=device)
    d = torch.tensor([p[1] for p in pairs], device=device)
    out = torch.full_like(h, -7)
    _probe[(triton.cdiv(len(pairs), 256),)](h, d, out, len(pairs), BLOCK=256)
    wrong = [(hh, dd, got) for (hh, dd), got in zip(pairs, out.tolist()) if got != hh % dd]
    assert not wrong, (len(wrong), wrong[:3])
    print(len(pairs), "remainders exact")
""")


@pytest.mark.parametrize("mod", ["fp64", "div"])
def test_the_one_launch_remainders_are_exact_at_the_edges(mod, facts, tmp_path):
    """The float64 remainder against Python's integers: sizes 1 (whose quotient estimate passes int64), around
    2**53 (where float64 stops being exact) and 2**62 (above which 2d passes int64), up to 2**63 - 1, 3 random
    ones of each bit length, each with dividends at d, 2d, the top of the 63-bit range, at and beside large
    multiples of d (where a rounded quotient is one off), and random ones."""
    run = _run_on_awkward_inputs(_KEYED_REMAINDERS, "keyed_feature_hash", "int64",
                                 {"LOOKUP": "scan", "MOD": mod, "PDL": False}, facts, tmp_path)
    assert run.returncode == 0 and "remainders exact" in run.stdout, run.stderr[-3000:]


def test_a_dependent_launch_is_offered_on_hopper_only_and_needs_a_first_launch(facts):
    """Programmatic dependent launch is sm_90's: the A100 and AMD targets do not offer it, and a hash kernel with
    no first launch before it (no table, no reciprocals) would depend on whatever ran before."""
    from kevolve.plugins import get_manager

    prob = catalog_problem("keyed_feature_hash", "int64", SMALL["keyed_feature_hash"])
    recipe = recipe_for(RECIPES, prob)
    space = recipe.space(prob, facts)
    default = space.default()  # the scan and the float64 remainder: one launch, nothing to depend on
    assert (default["LOOKUP"], default["MOD"], default["PDL"]) == ("scan", "fp64", False)
    assert "_keyed_tables" not in recipe.render(prob, default)
    assert not space.valid({**default, "PDL": True}) and not space.valid({**default, "MOD": "div", "PDL": True})
    assert space.valid({**default, "MOD": "magic", "PDL": True})
    table = {**default, "LOOKUP": "table", "PDL": True}
    assert space.valid(table) and space.valid({**table, "MOD": "div"})
    source = recipe.render(prob, table)
    assert source.count("tl.extra.cuda.gdc_wait()") == 3 and "launch_pdl" in source  # each hash kernel path waits
    assert "gdc_wait" not in recipe.render(prob, {**table, "PDL": False})
    many = catalog_problem("keyed_feature_hash", "int64", {"features": 512, "batch": 16, "pool": 2})
    many_default = recipe.space(many, facts).default()  # the table's first launch: the hash kernel depends on it
    assert (many_default["LOOKUP"], many_default["MOD"], many_default["PDL"]) == ("table", "magic", True)
    for target in ("nvidia_a100", "amd_mi300"):
        other = get_manager().target(target).spec.facts
        assert "PDL" not in {p.name for p in recipe.space(prob, other).params}, target


@pytest.mark.parametrize("lookup,original,replacement", [
    ("table", "return tl.where(end >= tl.minimum(first + BLOCK, n), f, -1)", "return tl.where(end >= first, f, -1)"),
    ("scan", "return tl.where(at_last == at_first, at_first, -1)", "return at_first"),
])
def test_a_keyed_hash_that_gives_a_block_its_first_ids_feature_is_caught(lookup, original, replacement, facts,
                                                                          config):
    """Blocks that span features exist at the check shapes (40 features of about 200 ids): taking the feature
    of a block's first id for all of them is a wrong result, not a pass."""
    prob = catalog_problem("keyed_feature_hash", "int64", SMALL["keyed_feature_hash"])
    e = evaluate_mutant(RECIPES, prob, facts, config, original, replacement, change={"LOOKUP": lookup})
    assert e.status == "wrong_result", (e.status, e.reason)
