"""Lowering: every ATen overload the table lists binds to an existing conformance entry; graphs lower to kernels
of the target's recipes, views fold into the kernels' strides, intermediates land in scratch."""

from __future__ import annotations

import pytest
import torch
from program_problems import PROBLEMS

from kevolve.conformance.table import OPS
from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.program.capture import capture
from kevolve.program.graph import LoweringError, build
from kevolve.program.fuse import GATHER, PROLOGUE, gather_edges
from kevolve.program.lower import CONST, FOLD, INPUT, OUTPUT, SCRATCH, lower
from kevolve.program.overloads import OVERLOADS, Overload


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(shape, device="meta")


def test_every_overload_binds_to_a_conformance_entry():
    x = _meta(2, 3, 4, 4)
    samples = {  # arguments per overload that needs more than a tensor
        torch.ops.aten.convolution.default: (x, _meta(5, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        torch.ops.aten.max_pool2d_with_indices.default: (x, [2, 2]),
        torch.ops.aten.native_layer_norm.default: (x, [4], None, None, 1e-5),
        torch.ops.aten._softmax.default: (x, -1, False),
    }
    for overload, args in samples.items():
        name, *_ = OVERLOADS[overload].adapt(*args)
        assert name in OPS, overload
    for overload, entry in OVERLOADS.items():
        assert isinstance(entry, Overload)
        try:
            name = entry.adapt(x, x)[0]
        except (TypeError, NotImplementedError, AttributeError, IndexError):
            continue  # needs other arguments: covered above or by the programs
        assert name in OPS, f"{overload} binds to {name!r}, not a conformance entry"


def test_views_fold_into_strides_and_intermediates_go_to_scratch():
    graph = build(capture(KernelBenchProblem(PROBLEMS / "pointwise_chain.py")), "chain")
    program = lower(graph)
    assert len(program.steps) == 1 and program.scratch_bytes == 0
    step = program.steps[0]
    # y.t() is read through its strides (a transposed view of input 1), the shift through a broadcast stride 0
    strides = {program.buffers[v.buffer].index: v.strides for v in step.inputs
               if program.buffers[v.buffer].kind == INPUT}
    assert strides[1] == (1, 33) and strides[2] == (0, 1)
    assert program.buffers[step.outputs[0].buffer].kind == OUTPUT


def test_a_fold_knob_reads_a_reduction_in_place_instead_of_copying_it():
    """sum over the middle dim and amax over the first: prepare's permuted copies are kernels of their own,
    unless the fold knob lets the reduction read the input as a strided (A, R, I) view (no scratch then)."""
    graph = build(capture(KernelBenchProblem(PROBLEMS / "reductions.py")), "reductions")
    copied = lower(graph)
    assert [s.name for s in copied.steps] == ["sum_1_prep0", "sum_1", "mean", "amax_prep0", "amax", "argmax"]
    folded = lower(graph, {FOLD + "sum_1": True, FOLD + "amax": True})
    assert [s.name for s in folded.steps] == ["sum_1", "mean", "amax", "argmax"] and folded.scratch_bytes == 0
    views = {s.name: (s.inputs[0].shape, s.inputs[0].strides) for s in folded.steps}
    # x is (6, 10, 12): sum(dim=1) reads lines of 10 twelve apart, amax(dim=0) lines of 6 across 120 outputs
    assert views["sum_1"] == ((6, 10, 12), (120, 12, 1)) and views["amax"] == ((120, 6, 1), (1, 120, 120))


def test_a_prologue_knob_computes_a_reductions_elements_from_its_producers_leaves():
    """Each loss term feeds one reduction: with its prologue knob on, the reduction reads the term's leaves (the
    weight through its broadcast stride) and the term's kernel and buffer are gone; the total over every element
    keeps its producer, whose broadcast weight cannot be viewed as one row."""
    graph = build(capture(KernelBenchProblem(PROBLEMS / "loss_terms.py")), "losses")
    # the conversions to bfloat16 keep their rounding: kernels of their own (fuse.py's _keeps_rounding)
    assert [s.name for s in lower(graph).steps] == ["mul", "mean", "_to_copy", "_to_copy_1", "abs_1", "sum_1",
                                                      "mul_1", "sum_2"]
    program = lower(graph, {PROLOGUE + name: True for name in ("mul", "abs_1", "mul_1")})
    steps = {s.name: s for s in program.steps}
    assert list(steps) == ["mean", "_to_copy", "_to_copy_1", "sum_1", "mul_1", "sum_2"]
    mean, rows = steps["mean"], steps["sum_1"]
    assert mean.kernel.expr is not None and [v.strides for v in mean.inputs] == [(70, 1), (70, 1), (0, 1)]
    # the bfloat16 terms: |a - b| of the rounded operands, itself rounded to bfloat16 before the sum
    assert rows.kernel.inputs == (("in0", "bfloat16"), ("in1", "bfloat16")) and rows.kernel.attrs["element"] == \
        "bfloat16"
    assert steps["sum_2"].kernel.expr is None


def test_a_gather_knob_loads_a_small_table_through_its_index():
    """The hashed sparse arm: each id's feature (a gather from the repeated feature numbers) and its salt (a gather
    from the salt buffer) feed only pointwise work. With their gather knobs on, those kernels load through the
    indices, and neither gather is a kernel nor its result a buffer (test_programs.py checks the numbers)."""
    graph = build(capture(KernelBenchProblem(PROBLEMS / "keyed_hash_pool.py")), "hash")
    assert sorted(gather_edges(graph)) == ["index_select", "index_select_1"]
    kept = lower(graph)
    folded = lower(graph, {GATHER + name: True for name in gather_edges(graph)})
    assert {"index_select", "index_select_1"} <= {s.name for s in kept.steps}
    assert not {"index_select", "index_select_1"} & {s.name for s in folded.steps}
    through = {s.name: s.kernel.attrs["gathers"] for s in folded.steps if s.kernel.attrs.get("gathers")}
    assert through and all(len(s.kernel.inputs) == len(s.inputs) for s in folded.steps)
    for name, gathers in through.items():
        step = next(s for s in folded.steps if s.name == name)
        names = [n for n, _ in step.kernel.inputs]
        for leaf, (table, wrap) in gathers.items():  # the index is viewed at the output's shape, the table whole
            assert step.inputs[names.index(leaf)].shape == step.outputs[0].shape and not wrap
            assert len(step.inputs[names.index(table)].shape) == 1 and names.index(table) > names.index(leaf)
    assert folded.scratch_bytes < kept.scratch_bytes


def test_batch_norm_in_eval_mode_is_one_pointwise_kernel_with_what_follows():
    """Running statistics make batch norm elementwise: with the ReLU after it, one kernel over the input, the
    statistics and the affine map read through broadcast strides (test_programs.py checks its numbers)."""
    program = lower(build(capture(KernelBenchProblem(PROBLEMS / "batchnorm_eval_relu.py")), "bn"))
    assert [(s.kernel.layout, len(s.inputs)) for s in program.steps] == [("broadcast", 5)]
    assert sorted(v.strides for v in program.steps[0].inputs)[:4] == [(0, 1, 0, 0)] * 4


def test_a_chain_with_kernels_between_keeps_intermediates_in_aligned_scratch():
    program = lower(build(capture(KernelBenchProblem(PROBLEMS / "linear_gelu_layernorm.py")), "chain"))
    # addmm over the transposed weight is linear's gemm (reading the weight's rows, no copy), gelu, layer norm
    assert [(s.kernel.op, s.kernel.layout) for s in program.steps] == [
        ("nn.functional.linear", "gemm"), ("fused[gelu]", "broadcast"), ("nn.functional.layer_norm", "norm")]
    scratch = [b for b in program.buffers.values() if b.kind == SCRATCH]
    assert scratch and all(b.index % 64 == 0 for b in scratch)
    assert program.scratch_bytes >= sum(b.numel * 4 for b in scratch)
    assert any(b.kind == CONST for b in program.buffers.values())  # the norm's packed geometry


def test_an_unsupported_op_names_the_overload_and_the_line():
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).real

    from kevolve.program.capture import Captured

    exported = torch.export.export(Model(), (torch.randn(8),)).run_decompositions()
    with pytest.raises(LoweringError, match=r"no ATen kernel covers aten\._fft_r2c\.default.*test_lower\.py"):
        build(Captured(exported, {"x": 0}, [torch.randn(8)]), "fft")
