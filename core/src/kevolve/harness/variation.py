"""Inputs that no timed call has seen before: between a sample's back-to-back calls the harness copies one element
of each varied input over another, at places drawn from the OS's randomness.

A timed sample calls the op again and again on one input set. A kernel that remembers its last answer and hands
it back when it sees the same input again (by its address and a value or two) would be timed doing a copy while
every output check passed, since the remembered answer is right for an unchanged input. With one element changed
before each call the input is never the same twice, so a remembered answer is wrong, and the check of the
sample's last call (harness/worker.py) sees it. Copying a value the tensor already holds keeps the input in the
problem's domain (a valid index stays a valid index; a positive tensor stays positive); which inputs may be
varied so is the problem's to say (:meth:`kevolve.problems.problem.Problem.varied_inputs`).
"""

from __future__ import annotations

import random

import torch

from kevolve.harness.checks import BIT_VIEWS


class InputVariation:
    """Call it before each timed call, outside the clock: it changes one element of each varied input."""

    def __init__(self, tensors: list[torch.Tensor], rng: random.Random) -> None:
        self._flat = [_bits(t) for t in tensors if t.numel() > 1 and t.is_contiguous()]
        self._rng = rng

    def __call__(self) -> None:
        for flat in self._flat:
            size = len(flat)
            flat[self._rng.randrange(size)] = flat[self._rng.randrange(size)]


def _bits(tensor: torch.Tensor):
    """The tensor's elements as integers of the same width, sharing its memory: a copy moves the exact bits (NaN
    payloads, bfloat16 included). On the host a numpy view, whose element copy costs well under a microsecond
    (torch indexing costs several); on a device, torch indexing (a copy launched on the current stream)."""
    flat = tensor.view(-1).view(BIT_VIEWS[tensor.element_size()])
    return flat.numpy() if tensor.device.type == "cpu" else _DeviceElements(flat)


class _DeviceElements:
    """Element copies within a device tensor, indexed like a numpy array."""

    def __init__(self, flat: torch.Tensor) -> None:
        self.flat = flat

    def __len__(self) -> int:
        return self.flat.numel()

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.flat[index]

    def __setitem__(self, index: int, value: torch.Tensor) -> None:
        self.flat[index].copy_(value)

