"""Fusion: a pointwise chain is one kernel; each fusion is a knob, and both sides of every knob are correct."""

from __future__ import annotations

from program_problems import PROBLEMS

from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.program.capture import capture
from kevolve.program.fuse import PREFIX, fusable
from kevolve.program.graph import build
from kevolve.program.lower import lower
from kevolve.synthesis.expr import variables


def _graph(name: str):
    return build(capture(KernelBenchProblem(PROBLEMS / f"{name}.py")), name)


def test_a_pointwise_chain_is_one_kernel_and_each_edge_is_a_knob():
    graph = _graph("pointwise_chain")
    edges = fusable(graph)
    assert set(edges) == {"mul", "add", "sigmoid", "mul_1"}  # into add, mul_1, mul_1, clamp
    assert len(lower(graph).steps) == 1
    assert len(lower(graph, {PREFIX + e: False for e in edges}).steps) == 5
    split = lower(graph, {PREFIX + "sigmoid": False})
    assert [s.name for s in split.steps] == ["sigmoid", "clamp"]
    assert split.scratch_bytes > 0  # the sigmoid's result now lives in scratch
    fused = lower(graph).steps[0].kernel
    assert variables(fused.expr) == {"in0", "in1", "in2"}  # x, the shift, y.t(): one variable per distinct view


def test_a_producer_with_two_readers_or_a_broadcast_reader_stays_a_kernel():
    graph = _graph("conv_bias_relu_maxpool")
    # conv -> (+ bias) -> relu -> maxpool: add fuses into relu; the conv and the pool are kernels of their own
    assert fusable(graph) == {"add": "relu"}
    assert [s.kernel.layout for s in lower(graph).steps] == ["conv", "broadcast", "pool"]


def test_both_sides_of_every_fusion_knob_are_correct(cpu, check_only):
    from kevolve.harness.pipeline import evaluate_candidate
    from kevolve.program.recipe import ProgramRecipe
    from kevolve.synthesis.base import Candidate

    problem = KernelBenchProblem(PROBLEMS / "pointwise_chain.py")
    recipe = ProgramRecipe(cpu.backend.recipes(cpu.spec), "cpp", cpu.language_forms()["cpp"].assemble_program)
    space = recipe.space(problem, cpu.backend.facts(cpu.spec))
    fused = space.default()
    split = {**fused, **{name: False for name in fused if name.startswith(PREFIX)}}
    for params in (fused, split):
        source = recipe.render(problem, params)
        evaluation = evaluate_candidate(Candidate(source, "cpp", params), problem, "cpu", check_only)
        assert evaluation.correct, evaluation.reason


def test_a_rounding_to_16_bits_is_not_fused_into_a_wider_consumer_and_conversions_stay_exact():
    import torch

    from kevolve.program.capture import capture_module

    class Model(torch.nn.Module):
        def forward(self, x):
            return x.to(torch.bfloat16).float() * 2 + x.bool().float()

    graph = build(capture_module(Model(), [torch.randn(4, 5)]), "casts")
    conversions = [n for n in graph.nodes if n.name.startswith("_to_copy")]
    edges = fusable(graph)
    narrow = next(n for n in conversions if n.out.dtype == torch.bfloat16)
    assert narrow.name not in edges  # its consumer is float32: the bf16 rounding must be stored
    to_bool = next(n for n in conversions if n.out.dtype == torch.bool)
    assert to_bool.name in edges and "ne" in repr(to_bool.expr)  # x.bool() is x != 0, even when inlined
