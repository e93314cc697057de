"""ATen conformance on the CPU target: convolutions, pooling, resizing and padding (``conv``, ``pool``,
``adaptive_pool``, ``resize`` and ``pad`` kernels).

A fast subset: real OpInfo samples (plus the two larger random ones) passing for an op of each kind, each through
one kernel per mode and input count (the integer arguments travel in a packed tensor); a wrong kernel reported
failing; and kernels called directly (bound through the table, as the suite binds them) on hand-computed cases
for PyTorch's rules: max_pool2d's NaN and tie indices, avg_pool2d's divisors, conv_transpose2d's scatter, 2-D
nearest's copy shortcut that 1-D lacks, and pads that crop.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import pytest
import torch

pytest.importorskip("expecttest")

from conformance_helpers import every_sample_passes
from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import ResultCache, check_op
from kevolve.conformance.samples import bind
from kevolve.problems.problem import dtype_name
from torch.testing._internal.opinfo.core import SampleInput

NAN = math.nan


@pytest.mark.parametrize(("op", "samples", "kernels"), [
    ("nn.functional.conv2d", 32, 2),  # strides, paddings incl. same/valid, dilations, groups: with and without bias
    ("nn.functional.max_pool2d", 1442, 1),  # 1440 argument combinations, with and without indices, one kernel
    ("nn.functional.adaptive_avg_pool2d", 12, 1),
    ("nn.functional.interpolate", 160, 5),  # nearest, nearest-exact, linear (1-3 dims), cubic, area
    ("nn.functional.pad", 91, 4),  # constant, reflect, replicate (also negative), circular
])
def test_every_sample_passes(db, cpu, tmp_path, op, samples, kernels):
    every_sample_passes(op, cpu, db, tmp_path, samples=samples, kernels=kernels)


def test_a_wrong_kernel_is_reported_failing(db, cpu, tmp_path):
    # max_pool2d's parameters packed with every dilation 1: the samples dilated (1, 2) fail, the others pass
    real = OPS["nn.functional.max_pool2d"].prepare

    def undilated(tensors, attrs):
        return real(tensors, {**attrs, "dilation": 1})

    wrong = dataclasses.replace(OPS["nn.functional.max_pool2d"], prepare=undilated)
    result = check_op("nn.functional.max_pool2d", cpu, ResultCache(tmp_path / "c.sqlite"), db, spec_override=wrong)
    assert not result.ok and not result.declined
    assert len(result.failed) >= 500
    assert all("dilation=(1, 2)" in s.label or ":large" in s.label for s in result.failed)
    assert all(s.status == "passed" for s in result.samples if "dilation=1," in s.label)


def _run(cpu, tmp_path, op: str, x: torch.Tensor, *args, outputs=((), torch.float32), variant: str = "",
         **kwargs) -> list[torch.Tensor]:
    """``op`` on one sample, bound through the table and run by the CPU recipe's kernel built in this process;
    ``outputs``: the output shape and dtype (or a list of them)."""
    from kevolve_cpu.recipes.cpp_aten_conv import RECIPES

    outputs = [outputs] if isinstance(outputs[1], torch.dtype) else list(outputs)
    spec = OPS[op].for_entry(variant)
    inputs, attrs = bind(spec, SampleInput(x, args=args, kwargs=kwargs), torch.float32)
    kernel_spec = KernelSpec(op, tuple((f"in{i}", dtype_name(t.dtype)) for i, t in enumerate(inputs)),
                             tuple(dtype_name(d) for _, d in outputs), None, spec.layout, 0, attrs)
    problem = ConformanceProblem(kernel_spec)
    recipe = next(r for r in RECIPES if r.supports(problem))
    source = recipe.render(problem, recipe.space(problem, cpu.spec.facts).default())
    # one folder per source: the loader would hand back an already-loaded library of the same path
    workdir = tmp_path / hashlib.sha256(source.encode()).hexdigest()[:16]
    kernel = cpu.backend.runner(cpu.spec).load(cpu.backend.toolchain(cpu.spec, "cpp").build(source, workdir, None))
    outs = [torch.full(shape, 7, dtype=dtype) for shape, dtype in outputs]
    kernel(inputs, outs)
    return outs


def test_hand_computed_pooling(cpu, tmp_path):
    # max_pool2d: a NaN always wins, so the last NaN's index; of equal values the first
    plane = torch.tensor([[[[1.0, NAN, 3.0], [NAN, 2.0, 0.0]]], [[[5.0, 5.0, 4.0], [5.0, 1.0, 5.0]]]])
    values, indices = _run(cpu, tmp_path, "nn.functional.max_pool2d", plane, (2, 3), return_indices=True,
                           outputs=[((2, 1, 1, 1), torch.float32), ((2, 1, 1, 1), torch.int64)])
    torch.testing.assert_close(values.flatten(), torch.tensor([NAN, 5.0]), equal_nan=True)
    assert indices.flatten().tolist() == [3, 0]
    # avg_pool2d on ones, 2x2 windows at stride 2 padded by 1: each window holds one element of the input
    ones = torch.ones(1, 1, 2, 2)
    for count_include_pad, divisor, expected in ((True, None, 0.25), (False, None, 1.0), (True, -2, -0.5)):
        (out,) = _run(cpu, tmp_path, "nn.functional.avg_pool2d", ones, 2, 2, 1, False, count_include_pad, divisor,
                      outputs=((1, 1, 2, 2), torch.float32))
        assert out.flatten().tolist() == [expected] * 4


def test_hand_computed_transposed_convolution_and_nearest(cpu, tmp_path):
    # conv_transpose2d at stride 2: each input element scatters the (1 x 2) weight, then the bias
    x, w = torch.tensor([[[[1.0, 2.0]]]]), torch.tensor([[[[10.0, 1.0]]]])
    (out,) = _run(cpu, tmp_path, "nn.functional.conv_transpose2d", x, w, torch.tensor([0.5]), stride=2,
                  outputs=((1, 1, 1, 4), torch.float32))
    assert out.flatten().tolist() == [10.5, 1.5, 20.5, 2.5]
    # nearest at scale 1.3 keeping size 2: 2-D copies, 1-D scales the index by 1 / 1.3 (source 0, 0)
    line = torch.tensor([[[0.0, 1.0]]])
    (out,) = _run(cpu, tmp_path, "nn.functional.interpolate", line, scale_factor=1.3, outputs=((1, 1, 2), torch.float32))
    assert out.flatten().tolist() == [0.0, 0.0]
    square = torch.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    (out,) = _run(cpu, tmp_path, "nn.functional.interpolate", square, scale_factor=1.3,
                  outputs=((1, 1, 2, 2), torch.float32))
    assert out.flatten().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_hand_computed_pads_that_crop(cpu, tmp_path):
    x = torch.arange(5.0).reshape(1, 1, 5)
    cases = {
        "circular": ((-1, 2), [1.0, 2.0, 3.0, 4.0, 1.0, 2.0]),  # wraps within the cropped input
        "reflect": ((-1, 1), [1.0, 2.0, 3.0, 4.0, 3.0]),
        "replicate": ((-2, 1), [2.0, 3.0, 4.0, 4.0]),
        "constant": ((2, -4), [9.0, 9.0, 0.0]),
    }
    for mode, (pad, expected) in cases.items():
        extra = (9.0,) if mode == "constant" else ()
        (out,) = _run(cpu, tmp_path, "nn.functional.pad", x, pad, mode, *extra,
                      outputs=((1, 1, len(expected)), torch.float32))
        assert out.flatten().tolist() == expected, mode
        reference = torch.nn.functional.pad(x, pad, mode, *extra)
        assert reference.flatten().tolist() == expected, mode
