"""Every catalog op runs correctly on mtia_sim: each Triton recipe that supports it, at its default point and
at the point the docs pack's hints choose, traced by the simulator (in this process, through the Triton
interpreter) on small, awkward shapes, outputs checked against PyTorch with the harness's tolerances."""

from __future__ import annotations

import pytest
import torch
from kevolve.harness import checks
from kevolve.knowledge import Signals
from kevolve.plugins import get_manager
from mtia_helpers import TARGET, catalog_problem, chip, trace

#: small timing shapes (the ops' awkward check shapes are run too)
SMALL = {
    "pointwise": {"n": 5000}, "matmul": {"m": 96, "n": 64, "k": 64},
    "row_reduce": {"rows": 40, "cols": 300}, "row_scan": {"rows": 40, "cols": 300},
    "row_norm": {"rows": 40, "cols": 300}, "row_softmax": {"rows": 40, "cols": 300},
    "bucketize": {"n": 5000, "boundaries": 64}, "feature_hash": {"n": 5000},
    "keyed_hash": {"features": 26, "batch": 8, "pool": 10},
    "embedding_bag": {"vocab": 500, "dim": 32, "bags": 24, "pool": 5},
    "gather": {"rows": 40, "cols": 100, "k": 17}, "jagged": {"batch": 64, "max_len": 16},
    "interaction": {"batch": 24, "features": 26, "dim": 64}, "attention": {"batch": 24, "history": 40, "dim": 32},
}

OPS = get_manager().ops.names()


def _check_dims(problem) -> list[dict[str, int]]:
    small = [d for d in problem.check_dims() if all(v <= 1 << 14 for v in d.values())]
    return small[:2] + [problem.dims]


@pytest.mark.parametrize("op", OPS)
def test_op_correct_and_simulated(op, interpret):
    manager = get_manager()
    registered = manager.target(TARGET)
    family = manager.ops.get(op).family
    problem = catalog_problem(op, dims=SMALL.get(family))
    recipes = [r for r in registered.backend.recipes(registered.spec) if r.supports(problem)]
    assert recipes, f"no Triton recipe supports {op}"
    hints = manager.knowledge.hints(Signals(target=TARGET, language="triton", family=problem.family))
    gen = torch.Generator().manual_seed(1)
    for recipe in recipes:
        space = recipe.space(problem, registered.spec.facts)
        for params in {repr(p): p for p in (space.default(), space.prefer(hints))}.values():
            source = recipe.render(problem, params)
            for dims in _check_dims(problem):
                inputs = problem.make_inputs(dims, gen)
                expected = problem.reference([t.clone() for t in inputs])
                outputs = checks.allocate_poisoned(expected, 0, "cpu")
                _, _, totals = trace(source, inputs, outputs)
                for out, ref in zip(outputs, expected):
                    bad = checks.compare(out, ref, problem.tolerance(problem.dtype), 0)
                    assert bad is None, (recipe.name, params, dims, bad)
                assert totals["cycles"] > chip().params["launch_cycles"] and totals["programs"] >= 1
