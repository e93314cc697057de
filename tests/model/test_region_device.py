"""A region exported on a GPU keeps that device in its graph (factory calls, weights), while a build compiling for
the GPU draws the region's inputs on the host: its output shapes must still be traced (an H200 run failed every
candidate of two regions on "found two different devices cuda:0, cpu")."""

from __future__ import annotations

import torch

from kevolve.problems.module import ModuleProblem


class _MakesOnTheGpu(torch.nn.Module):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.ones(ids.shape[0], 3, device="cuda:0") * ids.sum()


class _Region(ModuleProblem):
    name = "region"

    def __init__(self, device: str) -> None:
        self.device = device
        self._adopt(_MakesOnTheGpu(), [torch.arange(5)])

    def make_inputs(self, dims, gen):
        return [torch.arange(5)]

    def to_spec(self):
        return {}


def test_output_shapes_are_traced_on_the_modules_device_whatever_device_the_inputs_are_on():
    assert _Region("cuda:0").output_specs([torch.arange(5)]) == [((5, 3), torch.float32)]
