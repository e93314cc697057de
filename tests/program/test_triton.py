"""Programs on the Triton targets, through the Triton interpreter: one file of every step's Triton kernels plus a
launcher that views the harness's scratch buffers; and the scratch contract for Python launchers."""

from __future__ import annotations

import pytest
from program_problems import PROBLEMS

pytest.importorskip("triton")

import kevolve  # noqa: E402
from kevolve.harness.pipeline import evaluate_candidate  # noqa: E402
from kevolve.problems.kernelbench import KernelBenchProblem  # noqa: E402
from kevolve.synthesis.base import Candidate  # noqa: E402


@pytest.mark.parametrize("target,name,folds", [
    ("mtia_sim", "linear_gelu_layernorm", ()), ("mtia_sim", "pointwise_chain", ()),
    ("mtia_sim", "causal_attention", ("prologue.logical_not",)),
    ("nvidia_h100", "conv_bias_relu_maxpool", ()), ("nvidia_h100", "conv_implicit_gemm", ()),
    ("nvidia_h100", "keyed_hash_pool", ()),
    # the Triton reductions read a leading or middle dim in place, and compute a loss's terms themselves
    # (test_lower.py): no copy kernels, no kernels for the terms
    ("nvidia_h100", "reductions", ("fold.amax", "fold.sum_1")), ("mtia_sim", "reductions", ("fold.amax", "fold.sum_1")),
    ("nvidia_h100", "loss_terms", ("prologue.abs_1", "prologue.mul")), ("nvidia_h100", "batchnorm_eval_relu", ())])
def test_program_is_correct_offline_on_a_triton_target(target, name, folds, check_only):
    result = kevolve.optimize(str(PROBLEMS / f"{name}.py"), target=target, budget=1, harness=check_only)
    evaluations = [n.evaluation for n in result.nodes]
    assert evaluations and all(e.correct for e in evaluations), [(e.status, e.reason[:300]) for e in evaluations]
    source = result.nodes[0].source
    assert result.nodes[0].recipe == "program.triton" and "def kernel(inputs, outputs, buffers)" in source
    assert "torch" not in source.split("def kernel(inputs, outputs, buffers)")[1]
    parameters = result.nodes[0].parameters
    assert sorted(k for k, v in parameters.items() if k.startswith(("fold.", "prologue.")) and v) == list(folds), \
        parameters


SCRATCH_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def scratch(inputs, outputs):
    return [("float32", inputs[0].numel()), ("int64", [7, 8])]


def kernel(inputs, outputs, buffers):
    x, out = inputs[0], outputs[0]
    n = x.numel()
    if buffers[1].shape != (2,) or buffers[0].numel() != n:
        raise RuntimeError("declined: the scratch it asked for")
    tmp = buffers[0].as_strided(tuple(x.shape), tuple(x.stride()), 0)
    _relu[(triton.cdiv(n, 1024),)](x, tmp, n, BLOCK=1024)
    _relu[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
'''


def test_a_python_launcher_gets_the_buffers_it_asks_for(check_only):
    problem = KernelBenchProblem(PROBLEMS / "relu_model.py")
    evaluation = evaluate_candidate(Candidate(SCRATCH_KERNEL, "triton"), problem, "mtia_sim", check_only)
    assert evaluation.correct, evaluation.reason
    wrong = SCRATCH_KERNEL.replace('("int64", [7, 8])', '("int64", [7])')
    evaluation = evaluate_candidate(Candidate(wrong, "triton"), problem, "mtia_sim", check_only)
    assert not evaluation.correct and "the scratch it asked for" in evaluation.reason


def program_knob(name: str, knob: str, value):
    """A problem's lowered Triton program on nvidia_h100: (the problem, its default point, that point with every
    ``<node>.<knob>`` set to ``value``, that point's source, the program recipe)."""
    from kevolve.plugins import get_manager
    from kevolve.program.recipe import ProgramRecipe

    target = get_manager().usable_target("nvidia_h100")
    problem = KernelBenchProblem(PROBLEMS / f"{name}.py")
    recipe = ProgramRecipe(target.backend.recipes(target.spec), "triton",
                           target.language_forms()["triton"].assemble_program)
    default = recipe.space(problem, target.backend.facts(target.spec)).default()
    knobs = [k for k in default if k.endswith(f".{knob}")]
    assert knobs, default
    point = {**default, **dict.fromkeys(knobs, value)}
    return problem, default, point, recipe.render(problem, point), recipe


def test_both_orders_of_the_conv_gemm_reduction_are_correct(check_only):
    """ORDER "flat" (the default, checked by the test above) and "taps" (the channels inside each tap, where they
    fill whole K tiles)."""
    problem, default, taps, source, recipe = program_knob("conv_implicit_gemm", "ORDER", "taps")
    assert all(v == "flat" for k, v in default.items() if k.endswith(".ORDER")), default
    assert "TAPS_OUTER=True and cin_g" not in recipe.render(problem, default)
    assert "TAPS_OUTER=True and cin_g" in source
    evaluation = evaluate_candidate(Candidate(source, "triton", taps), problem, "nvidia_h100", check_only)
    assert evaluation.correct, evaluation.reason


def test_a_transposed_weight_read_along_its_rows_is_correct(check_only):
    """B_TILE "nk": nn.Linear's weight (read as (N, K), trans_b) loaded along its contiguous K and transposed in
    registers, as well as the (K, N) tile (the default, checked by the programs above)."""
    problem, _, nk, source, _ = program_knob("linear_gelu_layernorm", "B_TILE", "nk")
    assert "tl.trans(tl.load(b_ptr" in source
    evaluation = evaluate_candidate(Candidate(source, "triton", nk), problem, "nvidia_h100", check_only)
    assert evaluation.correct, evaluation.reason
