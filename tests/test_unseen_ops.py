"""Ops that compute out of the harness's recording's sight (kevolve.harness.unseen): a C-level guard made before
the call takes PyTorch's Python dispatch key away, and tensor operators then compute with no op the recording
sees and no Python call a profile function reports; the profiler, hooked into the dispatcher below the guard,
still sees them. Views and allocations are not computing."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from kevolve.harness.worker import call_watched

RUNNER = SimpleNamespace(plumbing_modules=(), runtime_packages=(), synchronize=lambda: None)
GUARD = torch._C._DisableTorchDispatch


def _relu_under_guard(inputs, outputs):
    x, y = inputs[0], outputs[0]
    with GUARD():
        y[...] = x * (x > 0)


def _views_only(inputs, outputs):
    x = inputs[0].view(-1)
    outputs[0].as_strided((x.numel(),), (1,), 0)
    torch.empty(4)


def test_operators_under_a_dispatch_guard_are_seen():
    x = torch.randn(64)
    ops, calls = call_watched(_relu_under_guard, RUNNER, [x], [torch.empty(64)])
    assert "aten::mul (out of the recording's sight)" in ops and "aten::gt (out of the recording's sight)" in ops
    assert calls == []


def test_views_and_allocations_are_not_computing():
    ops, _ = call_watched(_views_only, RUNNER, [torch.randn(64)], [torch.empty(64)])
    assert ops == []
