"""A module that computes what one catalog op computes gets that op's tuned recipes as candidates besides its
lowered program (kevolve.program.catalog_twin); one that computes something else on the same shapes does not."""

from __future__ import annotations

import kevolve
import pytest
from kevolve.plugins import get_manager
from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.program.catalog_twin import catalog_twin

MODULE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, {args}):
        return {body}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def catalog_ops():
    ops = get_manager().ops
    return [ops.get(name) for name in ops.names()]


def module_file(tmp_path, name: str, args: str, body: str, inputs: str):
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE.format(args=args, body=body, inputs=inputs))
    return path


@pytest.mark.parametrize("name, args, body, inputs, op, dims", [
    ("softmax_rows", "x", "torch.softmax(x, dim=-1)", "torch.randn(48, 200)", "softmax", {"rows": 48, "cols": 200}),
    ("log_softmax_rows", "x", "torch.log_softmax(x, dim=1)", "torch.randn(48, 200)", "log_softmax",
     {"rows": 48, "cols": 200}),
    ("plain_matmul", "a, b", "a @ b", "torch.randn(40, 24), torch.randn(24, 56)", "matmul",
     {"m": 40, "k": 24, "n": 56}),
])
def test_a_module_computing_a_catalog_op_has_it_as_twin_at_the_modules_sizes(tmp_path, name, args, body, inputs, op,
                                                                            dims):
    twin = catalog_twin(KernelBenchProblem(module_file(tmp_path, name, args, body, inputs)), catalog_ops())
    assert twin is not None and twin.name == op and {k: twin.dims[k] for k in dims} == dims


@pytest.mark.parametrize("name, args, body, inputs", [
    ("softmax_columns", "x", "torch.softmax(x, dim=0)", "torch.randn(48, 200)"),  # a softmax's shapes, not its sums
    ("matmul_b_transposed", "a, b", "a @ b.t()", "torch.randn(32, 32), torch.randn(32, 32)"),  # a matmul's shapes
    ("scaled_softmax", "x", "torch.softmax(x * 2, dim=-1)", "torch.randn(48, 200)"),
])
def test_a_module_computing_something_else_on_the_same_shapes_has_no_twin(tmp_path, name, args, body, inputs):
    assert catalog_twin(KernelBenchProblem(module_file(tmp_path, name, args, body, inputs)), catalog_ops()) is None


def test_the_search_tries_the_twins_recipes_and_their_kernels_are_right(tmp_path, check_only):
    path = module_file(tmp_path, "softmax_module", "x", "torch.softmax(x, dim=-1)", "torch.randn(64, 256)")
    result = kevolve.optimize(str(path), target="cpu", budget=4, harness=check_only)
    recipes = {n.recipe for n in result.nodes}
    assert "cpp.row_softmax" in recipes and any(r.startswith("program.") for r in recipes), recipes
    assert all(n.evaluation.correct for n in result.nodes), [(n.recipe, n.evaluation.reason) for n in result.nodes]
