"""kevolve's decompositions (kevolve.program.decompositions): each program below captures to overloads the
conformance kernels cover and computes what PyTorch computes; where a decomposition's condition fails the
overload stays, for the lowering to name."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from kevolve.program.capture import capture_module
from kevolve.program.decompositions import _convolution
from kevolve.program.overloads import CHECKS, COPIES, FACTORIES, OVERLOADS, SCALARS, VIEWS
from torch import nn


class Program(nn.Module):
    def __init__(self, fn, *weights: torch.Tensor) -> None:
        super().__init__()
        self.fn = fn
        self.weights = nn.ParameterList(weights)

    def forward(self, x):
        return self.fn(x, *self.weights)


PROGRAMS = {
    "min and max values": (lambda x: torch.min(x, dim=2).values[..., None] + torch.max(x, dim=1, keepdim=True).values,
                           (2, 3, 8)),
    "chunk and split": (lambda x: sum(x.chunk(2, dim=-1)) * x.split(3, dim=1)[-1].sum(), (2, 5, 8)),
    "instance norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (2, 4, 5, 6)),
    "batch norm, training": (lambda x: F.batch_norm(x, None, None, training=True), (3, 4, 5)),
    "repeat": (lambda x: x.repeat(2, 1, 3) + 1, (2, 3, 4)),
    "global max pool": (lambda x: F.adaptive_max_pool2d(x, 1) + F.adaptive_max_pool2d(x, (2, 7)), (2, 3, 6, 7)),
    "avg pool 3d": (lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False).sum() + F.avg_pool3d(
        x, 2, ceil_mode=True).sum() + F.avg_pool3d(x, (1, 2, 3), padding=(0, 1, 1)).sum(), (2, 3, 7, 6, 5)),
    "max pool 3d": (lambda x: F.max_pool3d(x, 3, 2, 1, dilation=(1, 2, 1), ceil_mode=True, return_indices=True),
                    (2, 3, 7, 9, 8)),
    "max pool 3d, ties take the first": (lambda x: F.max_pool3d(torch.round(x), (2, 3, 2), return_indices=True)[1],
                                         (1, 2, 6, 6, 6)),
    "conv3d": (lambda x, w: F.conv3d(x, w, stride=2, padding=1, dilation=(1, 2, 1)), (1, 4, 6, 7, 8)),
    "pairs, x[:, i, j]": (lambda x: x[:, *torch.triu_indices(5, 5, 1)], (2, 5, 5)),
    "negative, broadcast indices": (lambda x: x[torch.arange(4)[:, None] - 2, torch.arange(3)[None, :]] + 1, (5, 6)),
    "runs, repeat_interleave": (lambda x: x[torch.repeat_interleave(torch.arange(3) + 1, output_size=6)] * 2, (3, 4)),
    "runs, some empty": (lambda x, runs: x[torch.repeat_interleave(runs, output_size=6)], (7, 2)),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=1, output_padding=1),
                         (1, 4, 3, 4, 5)),
}
WEIGHTS = {"instance norm": [(4,), (4,)], "conv3d": [(6, 4, 3, 2, 3)], "conv_transpose3d": [(4, 6, 3, 2, 3)],
           "runs, some empty": [torch.tensor([0, 2, 0, 0, 3, 1, 0])]}
COVERED = set(OVERLOADS) | VIEWS | SCALARS | FACTORIES | CHECKS | COPIES


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_program_captures_to_covered_overloads_and_computes_what_pytorch_does(name):
    fn, shape = PROGRAMS[name]
    generator = torch.Generator().manual_seed(0)
    weights = [nn.Parameter(s, requires_grad=False) if isinstance(s, torch.Tensor)
               else nn.Parameter(torch.randn(s, generator=generator)) for s in WEIGHTS.get(name, [])]
    module, x = Program(fn, *weights), torch.randn(shape, generator=generator)
    program = capture_module(module, [x], name).program
    called = {n.target for n in program.graph.nodes if n.op == "call_function" and n.target.__module__ != "_operator"}
    assert called <= COVERED, called - COVERED
    with torch.no_grad():
        torch.testing.assert_close(program.module()(x), module(x), rtol=1e-4, atol=1e-5)


def test_an_adaptive_max_pool_whose_output_does_not_divide_its_input_stays_for_the_lowering_to_name():
    program = capture_module(Program(lambda x: F.adaptive_max_pool2d(x, 4)), [torch.randn(1, 2, 6, 7)]).program
    assert torch.ops.aten.adaptive_max_pool2d.default in {n.target for n in program.graph.nodes}


@pytest.mark.parametrize("transposed, stride, padding, dilation, groups",
                         list(itertools.product([False, True], [1, 2], [0, 1], [1, 2], [1, 2])))
def test_convolutions_over_three_dimensions_match_pytorch(transposed, stride, padding, dilation, groups):
    generator = torch.Generator().manual_seed(stride * 7 + padding * 3 + dilation + groups)
    x = torch.randn(2, 4, 5, 6, 7, dtype=torch.float64, generator=generator)
    bias = torch.randn(6, dtype=torch.float64, generator=generator)
    if transposed:
        weight = torch.randn(4, 6 // groups, 3, 2, 3, dtype=torch.float64, generator=generator)
        extra = [1] * 3 if stride > 1 else [0] * 3  # output padding must be below stride or dilation
        expected = F.conv_transpose3d(x, weight, bias, stride, padding, extra, groups, dilation)
    else:
        weight = torch.randn(6, 4 // groups, 3, 2, 3, dtype=torch.float64, generator=generator)
        extra = [0] * 3
        expected = F.conv3d(x, weight, bias, stride, padding, dilation, groups)
    got = _convolution(x, weight, bias, [stride] * 3, [padding] * 3, [dilation] * 3, transposed, extra, groups)
    torch.testing.assert_close(got, expected)


def test_indices_split_by_a_slice_stay_for_the_lowering_to_name():
    """PyTorch moves such indexed dimensions first; the decomposition covers consecutive ones only."""
    program = capture_module(Program(lambda x: x[torch.arange(2), :, torch.arange(2)]), [torch.randn(3, 4, 5)]).program
    assert torch.ops.aten.index.Tensor in {n.target for n in program.graph.nodes}
