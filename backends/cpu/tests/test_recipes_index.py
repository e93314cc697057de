"""The C++ index recipes (gather, embedding_bag, bucketize, feature_hash, keyed_feature_hash, jagged_truncate):
every listed dtype, the default point and two seeded random points of each space pass the harness's correctness
checks; and the checks do catch a plausible mistake (an arithmetic shift in the hash, features bounded by bag
offsets, the first k items kept instead of the last)."""

from __future__ import annotations

import random

import pytest

from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.synthesis.base import Candidate

from kevolve_cpu.recipes import cpp_index
from kevolve_cpu.recipes.cpp_index import lemire_constant, magic_divisor, mod_reference

OPS = ("gather", "embedding_bag", "bucketize", "feature_hash", "keyed_feature_hash", "jagged_truncate")
CASES = [(op, dtype) for op in OPS for dtype in get_manager().ops.get(op).dtypes]


def _facts():
    target = get_manager().target("cpu")
    return target.backend.facts(target.spec)


def _recipe(problem):
    matches = [r for r in cpp_index.RECIPES if r.supports(problem)]
    assert len(matches) == 1, [r.name for r in matches]
    return matches[0]


def _evaluate(recipe, problem, params, source=None):
    source = recipe.render(problem, params) if source is None else source
    return evaluate_candidate(Candidate(source, recipe.language, params), problem, "cpu", HarnessConfig(time=False))


@pytest.mark.parametrize("op,dtype", CASES)
def test_default_and_random_points_are_correct(op, dtype):
    problem = CatalogProblem(get_manager().ops.get(op), dtype=dtype)
    recipe = _recipe(problem)
    space = recipe.space(problem, _facts())
    rng = random.Random(f"{op}/{dtype}")
    for params in [space.default(), space.sample(rng), space.sample(rng)]:
        assert space.valid(params)
        source = recipe.render(problem, params)
        assert "torch" not in source
        result = _evaluate(recipe, problem, params, source)
        assert result.status == "ok", (params, result.status, result.reason, result.evidence.get("log", "")[:2000])


def test_every_op_has_exactly_one_recipe_and_threads_knob():
    facts = _facts()
    for op, dtype in CASES:
        problem = CatalogProblem(get_manager().ops.get(op), dtype=dtype)
        space = _recipe(problem).space(problem, facts)
        names = [p.name for p in space.params]
        assert "threads" in names
        assert all(p.responds_to for p in space.params), op
        assert space.valid(space.default()), op


def _status_of_mutant(op: str, edits: dict[str, str]) -> str:
    """The harness's verdict on the op's default C++ kernel with each ``edits`` key replaced wherever it is (a
    loop body is written twice, under OpenMP and without it for small calls: both copies)."""
    problem = CatalogProblem(get_manager().ops.get(op))
    recipe = _recipe(problem)
    params = recipe.space(problem, _facts()).default()
    source = broken = recipe.render(problem, params)
    for original, replacement in edits.items():
        assert original in source, original
        broken = broken.replace(original, replacement)
    return _evaluate(recipe, problem, params, broken).status


def test_feature_hash_arithmetic_shift_is_caught():
    assert _status_of_mutant("feature_hash", {f"h ^= h >> {s};": f"h ^= (uint64_t)((int64_t)h >> {s});"
                                              for s in (29, 32)}) == "wrong_result"


def test_keyed_hash_with_features_bounded_by_bag_offsets_is_caught():
    """Reading offsets[f + 1] as the end of feature f (it is the end of bag f) hashes ids into the wrong tables."""
    assert _status_of_mutant("keyed_feature_hash", {"off[(g + 1) * batch]": "off[g + 1]"}) == "wrong_result"


def test_jagged_truncate_keeping_the_first_k_is_caught():
    assert _status_of_mutant("jagged_truncate", {"const st_t* __restrict src = v + (off[b + 1] - keep);":
                                                 "const st_t* __restrict src = v + off[b];"}) == "wrong_result"


def test_reciprocal_remainders_are_exact_at_the_edges():
    rng = random.Random(7)
    for divisor in (1, 2, 3, 7, 4095, 4097, 1 << 20, 1_000_003, (1 << 31) - 1, (1 << 32) + 15, (1 << 62) + 1,
                    (1 << 63) - 25):
        values = [0, 1, divisor - 1, divisor, divisor + 1, (1 << 63) - 1, (1 << 63) - 2, (1 << 62)]
        values += [k * divisor + r for k in ((1 << 63) // divisor, ((1 << 63) - 1) // divisor - 1)
                   for r in (0, 1, divisor - 1)]
        values += [rng.getrandbits(63) for _ in range(2000)]
        values = [v for v in values if 0 <= v < 1 << 63]
        if divisor & (divisor - 1):
            m, _ = magic_divisor(divisor)
            assert m < 1 << 64 and lemire_constant(divisor) < 1 << 128
        for v in values:
            assert mod_reference(v, divisor, "magic") == v % divisor, (divisor, v)
            assert mod_reference(v, divisor, "fastmod") == v % divisor, (divisor, v)
            assert mod_reference(v, divisor, "fp") == v % divisor, (divisor, v)
