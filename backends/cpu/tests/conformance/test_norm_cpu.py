"""ATen conformance on the CPU target: normalisations and losses (the ``softmax``, ``norm``, ``loss`` and
``cross_entropy`` kernels).

A fast subset: real OpInfo samples (plus the two larger random ones, NaN and infinities planted) passing for an op
of each kernel kind; a wrong kernel reported failing; and hand-built samples (through a stand-in OpInfo entry)
for what the OpInfo samples leave out: hand-computed values, cross entropy's label smoothing with class weights
and an ignored class, weighted mse, bfloat16 inputs.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("expecttest")

from conformance_helpers import HandEntry, every_sample_passes
from kevolve.conformance import OPS
from kevolve.conformance import samples as sm
from kevolve.conformance.run import ResultCache, check_op
from torch.testing._internal.opinfo.core import SampleInput


@pytest.mark.parametrize(("op", "samples", "kernels"), [
    ("log_softmax", 16, 2),  # every dim (negative, 0-dim input, empty) through one kernel; dtype=float64 the other
    ("nn.functional.group_norm", 23, 4),  # eps 0.5 / -0.5 / 1e-5, the larger one in 3 groups
    ("nn.functional.batch_norm", 14, 7),  # training and eval, running stats / weight / bias present or None
    ("nn.functional.cross_entropy", 23, 5),  # class indices and probabilities, weights, ignore_index, reductions
    ("nn.functional.binary_cross_entropy_with_logits", 28, 4),  # broadcast weight and pos_weight, 3 reductions
])
def test_every_sample_passes(db, cpu, tmp_path, op, samples, kernels):
    every_sample_passes(op, cpu, db, tmp_path, samples=samples, kernels=kernels)


def test_a_wrong_kernel_is_reported_failing(db, cpu, tmp_path):
    # softmin's samples through softmax's kernel: only lanes of one element (the 0-dim input) agree
    result = check_op("nn.functional.softmin", cpu, ResultCache(tmp_path / "conformance.sqlite"), db,
                      spec_override=OPS["softmax"])
    assert not result.ok and not result.declined
    assert len(result.failed) >= 10
    assert all("differ from the reference" in s.reason for s in result.failed)
    assert all(s.status == "passed" for s in result.samples if "(tensor(), 0" in s.label)



def _check(cpu, name: str, op: Any, samples: list[SampleInput]) -> None:
    result = check_op(name, cpu, None, [HandEntry(name, op, samples)])
    assert result.passed == result.total == len(samples) + 2, [(s.label, s.reason) for s in result.samples
                                                               if s.status != "passed"]


def _hand(answer: list, real: Any) -> Any:
    """A reference answering the tiny hand-made sample by hand (the larger random ones through the real op)."""
    return lambda t, *a, **k: torch.tensor(answer) if t.numel() <= 4 else real(t, *a, **k)


def test_hand_computed_values(cpu):
    x = torch.tensor([[0.0, math.log(3.0)], [math.inf, 1.0]])
    # softmax along dim 1: [1/4, 3/4]; a row holding +inf is NaN (inf - inf), as ATen
    _check(cpu, "softmax", _hand([[0.25, 0.75], [math.nan, math.nan]], torch.softmax), [SampleInput(x, args=(1,))])
    # two classes, logits (0, 0): log 2 per row; the second row's class is ignored: the mean is over one row
    tiny = SampleInput(torch.zeros(2, 2), args=(torch.tensor([1, 0]),), kwargs={"ignore_index": 0})
    _check(cpu, "nn.functional.cross_entropy", _hand(math.log(2.0), F.cross_entropy), [tiny])
    with pytest.raises(AssertionError, match="differ from the reference"):  # and a wrong answer fails
        _check(cpu, "nn.functional.cross_entropy", _hand(math.log(3.0), F.cross_entropy), [tiny])


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_arguments_the_opinfo_samples_leave_out(cpu):
    torch.manual_seed(0)
    x, target = torch.randn(4, 5, 3), torch.tensor([[0, 1, 4], [2, 2, 1], [1, 3, 0], [4, 4, 4]])
    weight = torch.rand(5) + 0.1
    _check(cpu, "nn.functional.cross_entropy", F.cross_entropy, [
        SampleInput(x, args=(target,), kwargs={"weight": weight, "ignore_index": 1, "label_smoothing": 0.3}),
        SampleInput(x, args=(target,), kwargs={"ignore_index": 4, "label_smoothing": 0.3, "reduction": "sum"}),
        SampleInput(x, args=(target,), kwargs={"weight": weight, "label_smoothing": 0.2, "reduction": "none"}),
        SampleInput(x, args=(x.softmax(1),), kwargs={"weight": weight, "label_smoothing": 0.2}),
        SampleInput(torch.randn(5), args=(torch.tensor(3),), kwargs={"label_smoothing": 0.1}),
        SampleInput(torch.randn(0, 5), args=(torch.zeros(0, dtype=torch.int64),)),  # mean of nothing: NaN
    ])
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    _check(cpu, "nn.functional.mse_loss", F.mse_loss, [
        SampleInput(a, args=(b,), kwargs={"weight": torch.rand(3, 4)}),  # mean over the weights' sum
        SampleInput(a, args=(torch.randn(4),), kwargs={"reduction": "none"}),  # the target broadcasts
    ])
    _check(cpu, "nn.functional.normalize", F.normalize, [
        SampleInput(a, kwargs={"p": math.inf}), SampleInput(a, kwargs={"p": -math.inf, "dim": 0}),
        SampleInput(torch.zeros(3, 4), kwargs={"p": 3.0}),  # the norm clamped to eps
    ])


def test_bfloat16_inputs_round_like_aten(cpu, monkeypatch):
    # BCE with logits is a composite of tensor ops, each rounding to bfloat16: the kernel rounds the same steps
    monkeypatch.setattr(sm, "_choose_dtype", lambda entries: (torch.bfloat16, entries, []))
    torch.manual_seed(0)
    x, t = torch.randn(6, 7).bfloat16(), torch.rand(6, 7).bfloat16()
    _check(cpu, "nn.functional.binary_cross_entropy_with_logits", F.binary_cross_entropy_with_logits, [
        SampleInput(x, args=(t,), kwargs={"pos_weight": torch.rand(7).bfloat16(), "reduction": "none"})])
    _check(cpu, "nn.functional.layer_norm", F.layer_norm, [
        SampleInput(x, args=((7,), torch.randn(7).bfloat16(), torch.randn(7).bfloat16()))])
