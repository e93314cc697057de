"""Capture: a KernelBench file, a callable problem and a module become an ATen graph; what export cannot trace
fails in one line that names the construct and the user's line, and the problem stays usable."""

from __future__ import annotations

import pytest
import torch
from program_problems import PROBLEMS

import kevolve
from kevolve.errors import NoRecipeError
from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.program.capture import CaptureError, capture
from kevolve.program.graph import Kernel, Pointwise, build


def test_a_kernelbench_file_is_captured_and_decomposed_to_core_aten():
    captured = capture(KernelBenchProblem(PROBLEMS / "linear_gelu_layernorm.py"))
    targets = {str(n.target) for n in captured.program.graph.nodes if n.op == "call_function"}
    assert {"aten.addmm.default", "aten.gelu.default", "aten.native_layer_norm.default"} <= targets
    # weights follow the caller's inputs, in named_parameters order
    assert sorted(captured.input_index.values()) == [0, 1, 2, 3, 4]
    assert captured.input_index["x"] == 0


def test_a_callable_problem_is_captured():
    from problem_fns import twice_tanh

    problem = kevolve.problem_from_callable(twice_tanh, [torch.randn(8, 16)])
    graph = build(capture(problem), problem.name)
    assert [type(n) for n in graph.nodes] == [Pointwise, Pointwise]


def test_graph_binds_norms_and_matmuls_onto_the_conformance_table():
    graph = build(capture(KernelBenchProblem(PROBLEMS / "linear_gelu_layernorm.py")), "chain")
    kernels = {n.spec.name: n.spec.layout for n in graph.nodes if isinstance(n, Kernel)}
    assert kernels == {"nn.functional.linear": "gemm", "nn.functional.layer_norm": "norm"}


def test_data_dependent_control_flow_is_one_line_naming_the_source_line():
    problem = KernelBenchProblem(PROBLEMS / "data_dependent.py")
    with pytest.raises(CaptureError) as info:
        capture(problem)
    message = str(info.value)
    assert "\n" not in message
    assert "data-dependent control flow" in message
    assert "data_dependent.py:7 (if x.sum() > 0:)" in message
    # the problem itself still works for synthesizers that write free-form code
    x = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    assert torch.equal(problem.reference(x)[0], x[0] * 2 if x[0].sum() > 0 else x[0])


def test_the_template_synthesizer_says_why_a_program_cannot_be_lowered(check_only):
    with pytest.raises(NoRecipeError, match=r"data_dependent.py:7"):
        kevolve.optimize(str(PROBLEMS / "data_dependent.py"), target="cpu", budget=1, harness=check_only)


def test_a_module_with_example_inputs_is_captured_with_its_weights_after_the_inputs():
    from kevolve.program.capture import capture_module
    from kevolve.program.lower import INPUT, lower

    module = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    captured = capture_module(module, [torch.randn(3, 8)], "seq")
    assert [tuple(t.shape) for t in captured.examples] == [(3, 8), (4, 8), (4,)]
    program = lower(build(captured, "seq"))
    read = {program.buffers[v.buffer].index for s in program.steps for v in s.inputs
            if program.buffers[v.buffer].kind == INPUT}
    assert read == {0, 1, 2}
