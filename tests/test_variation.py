"""Between timed calls the harness changes one element of each varied input (kevolve.harness.variation): the
input is never the same twice, its values stay ones it held (so it stays in the problem's domain), and inputs
the problem does not name stay untouched."""

from __future__ import annotations

import random

import pytest
import torch
from kevolve.harness.variation import InputVariation
from kevolve.plugins import get_manager
from kevolve.problems.catalog import CatalogProblem


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float16])
def test_each_call_changes_one_element_to_a_value_the_tensor_held(dtype):
    x = torch.arange(1000).to(dtype).reshape(10, 100)
    vary = InputVariation([x], random.Random(3))
    seen = set()
    for _ in range(50):
        before = x.clone()
        vary()
        changed = (x != before).sum().item()
        assert changed <= 1
        seen.add(changed)
        assert set(x.flatten().tolist()) <= set(before.flatten().tolist())
    assert seen == {0, 1} or seen == {1}
    assert 1 in seen


def test_only_the_problems_varied_inputs_change(tmp_path):
    """bucketize's boundaries are sorted: a copied element would unsort them, so only x is varied."""
    problem = CatalogProblem(get_manager().ops.get("bucketize"), dims={"n": 4096, "boundaries": 64})
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    pristine = [t.clone() for t in inputs]
    assert problem.varied_inputs(inputs) == [0]
    vary = InputVariation([inputs[i] for i in problem.varied_inputs(inputs)], random.Random(1))
    for _ in range(20):
        vary()
    assert not torch.equal(inputs[0], pristine[0])
    assert torch.equal(inputs[1], pristine[1])


def test_every_catalog_op_varies_inputs_it_has_and_keeps_them_valid():
    """Varying an op's named inputs for many calls leaves inputs its reference still takes (indices in range:
    an out-of-range index raises)."""
    ops = get_manager().ops
    for op in map(ops.get, ops.names()):
        problem = CatalogProblem(op, dims={name: min(size, 64) for name, size in op.dims.items()})
        inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
        varied = problem.varied_inputs(inputs)
        assert varied, op.name
        vary = InputVariation([inputs[i] for i in varied], random.Random(2))
        for _ in range(200):
            vary()
        problem.reference(inputs)
