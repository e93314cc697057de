"""A module that computes what one catalog op computes gets that op's tuned recipes as candidates besides its
lowered program (kevolve.program.catalog_twin), its tensors' extra leading axes folded into the op's first; one
that computes something else on the same shapes does not."""

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
    def __init__(self):
        super().__init__()
        {init}

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


def module_file(tmp_path, name: str, args: str, body: str, inputs: str, init: str = "pass"):
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE.format(args=args, body=body, inputs=inputs, init=init))
    return path


@pytest.mark.parametrize("name, args, body, inputs, init, op, dims, reshaped", [
    ("softmax_rows", "x", "torch.softmax(x, dim=-1)", "torch.randn(48, 200)", "pass", "softmax",
     {"rows": 48, "cols": 200}, False),
    ("log_softmax_rows", "x", "torch.log_softmax(x, dim=1)", "torch.randn(48, 200)", "pass", "log_softmax",
     {"rows": 48, "cols": 200}, False),
    ("plain_matmul", "a, b", "a @ b", "torch.randn(40, 24), torch.randn(24, 56)", "pass", "matmul",
     {"m": 40, "k": 24, "n": 56}, False),
    # leading axes fold into the op's first: a matrix's rows and columns into n, a batch into the rows
    ("relu_matrix", "x", "torch.relu(x)", "torch.randn(48, 200)", "pass", "relu", {"n": 9600}, True),
    ("cumsum_3d", "x", "torch.cumsum(x, dim=-1)", "torch.randn(4, 12, 40)", "pass", "cumsum",
     {"rows": 48, "cols": 40}, True),
    ("batched_matmul_shared_weight", "a, b", "a @ b", "torch.randn(4, 10, 24), torch.randn(24, 56)", "pass",
     "matmul", {"m": 40, "k": 24, "n": 56}, True),
    # a module that fixes its hidden size (normalized_shape) is compared on a corner of its rows alone
    ("layer_norm_3d", "x", "self.norm(x)", "torch.randn(4, 12, 40)", "self.norm = nn.LayerNorm(40)", "layer_norm",
     {"rows": 48, "cols": 40}, True),
])
def test_a_module_computing_a_catalog_op_has_it_as_twin_at_the_modules_sizes(tmp_path, name, args, body, inputs, init,
                                                                            op, dims, reshaped):
    twin = catalog_twin(KernelBenchProblem(module_file(tmp_path, name, args, body, inputs, init)), catalog_ops())
    assert twin is not None and twin.problem.name == op and twin.problem.dims == dims
    assert twin.reshaped == reshaped


@pytest.mark.parametrize("name, args, body, inputs", [
    ("softmax_columns", "x", "torch.softmax(x, dim=0)", "torch.randn(48, 200)"),  # a softmax's shapes, not its sums
    ("matmul_b_transposed", "a, b", "a @ b.t()", "torch.randn(32, 32), torch.randn(32, 32)"),  # a matmul's shapes
    ("scaled_softmax", "x", "torch.softmax(x * 2, dim=-1)", "torch.randn(48, 200)"),
    # folding is for axes the op computes as rows: not a middle axis's scan, nor a batch of matrices on both sides
    ("cumsum_middle_axis", "x", "torch.cumsum(x, dim=1)", "torch.randn(4, 12, 40)"),
    ("bmm", "a, b", "a @ b", "torch.randn(4, 10, 24), torch.randn(4, 24, 56)"),
])
def test_a_module_computing_something_else_on_the_same_shapes_has_no_twin(tmp_path, name, args, body, inputs):
    assert catalog_twin(KernelBenchProblem(module_file(tmp_path, name, args, body, inputs)), catalog_ops()) is None


@pytest.mark.parametrize("target, name, args, body, inputs, init, recipe", [
    ("cpu", "softmax_module", "x", "torch.softmax(x, dim=-1)", "torch.randn(64, 256)", "pass", "cpp.row_softmax"),
    # reshaped twins: the op's kernel inside a one-step program that views the module's tensors
    ("cpu", "layer_norm_module", "x", "self.norm(x)", "torch.randn(4, 16, 64)", "self.norm = nn.LayerNorm(64)",
     "cpp.row_norm"),
    ("nvidia_h100", "relu_module", "x", "torch.relu(x)", "torch.randn(24, 40)", "pass", "triton.pointwise"),
])
def test_the_search_tries_the_twins_recipes_and_their_kernels_are_right(tmp_path, check_only, target, name, args,
                                                                        body, inputs, init, recipe):
    if target != "cpu":
        pytest.importorskip("triton")
    path = module_file(tmp_path, name, args, body, inputs, init)
    result = kevolve.optimize(str(path), target=target, budget=4, harness=check_only)
    recipes = {n.recipe for n in result.nodes}
    assert recipe in recipes and any(r.startswith("program.") for r in recipes), recipes
    assert all(n.evaluation.correct for n in result.nodes), [(n.recipe, n.evaluation.reason) for n in result.nodes]
