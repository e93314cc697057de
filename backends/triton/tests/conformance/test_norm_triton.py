"""ATen conformance on the Triton targets: normalisations and losses (the ``softmax``, ``norm``, ``loss`` and
``cross_entropy`` kernels of :mod:`kevolve_triton.recipes.aten_norm`), run by the Triton interpreter.

A fast subset: real OpInfo samples (plus the two larger random ones, NaN and infinities planted) passing for an op
of several kernel kinds on nvidia_h100 and one on mtia_sim; a wrong kernel reported failing; hand-built samples
for arguments the OpInfo samples leave out (infinite-p normalize with a NaN, label smoothing with class
weights and probability targets); and the same source compiled ahead of time for sm_90 and gfx942.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("expecttest")
pytest.importorskip("triton")

from conformance_helpers import HandEntry, compile_ahead, every_sample_passes, usable_target
from kevolve.conformance import OPS
from kevolve.conformance.run import ResultCache, check_op, kernel_spec, synthesize
from kevolve.conformance.samples import draw
from kevolve.conformance.spec import Arg
from torch.testing._internal.opinfo.core import SampleInput


@pytest.mark.parametrize(("target", "op", "samples", "kernels"), [
    # every dim (negative, 0-dim input, empty) through one kernel; dtype=float64 the other, computed in float64
    ("nvidia_h100", "log_softmax", 16, 2),
    ("nvidia_h100", "nn.functional.batch_norm", 14, 7),  # training and eval, stats / weight / bias or None
    ("nvidia_h100", "nn.functional.cross_entropy", 23, 5),  # indices and probabilities, weights, ignore_index
    ("mtia_sim", "nn.functional.smooth_l1_loss", 10, 4),  # beta 0 / 0.75 / 1 / 5, the three reductions
])
def test_every_sample_passes(db, tmp_path, target, op, samples, kernels):
    every_sample_passes(op, usable_target(target), db, tmp_path, samples=samples, kernels=kernels, language="triton")


def test_a_wrong_kernel_is_reported_failing(db, tmp_path):
    # mse's samples through smooth L1's kernel (beta 1): every element whose difference is not 0 disagrees
    nvidia = usable_target("nvidia_h100")
    mse = OPS["nn.functional.mse_loss"]
    wrong = dataclasses.replace(OPS["nn.functional.smooth_l1_loss"], args=(*mse.args, Arg("beta", 1.0)),
                                large=mse.large)
    result = check_op("nn.functional.mse_loss", nvidia, ResultCache(tmp_path / "conformance.sqlite"), db,
                      spec_override=wrong)
    assert not result.ok and not result.declined
    # (a mean over a planted NaN is NaN either way: that sample may agree)
    assert result.total == 8 and len(result.failed) >= 7
    assert all("differ from the reference" in s.reason for s in result.failed)
    assert 1.0 < result.worst



@pytest.mark.filterwarnings("ignore:Using a target size")
def test_arguments_the_opinfo_samples_leave_out():
    nvidia = usable_target("nvidia_h100")
    torch.manual_seed(0)
    x, target = torch.randn(4, 5, 3), torch.tensor([[0, 1, 4], [2, 2, 1], [1, 3, 0], [4, 4, 4]])
    a = torch.randn(3, 4)
    a[1, 2] = math.nan
    cases = {
        "nn.functional.cross_entropy": (F.cross_entropy, [
            SampleInput(x, args=(target,), kwargs={"weight": torch.rand(5) + 0.1, "ignore_index": 1,
                                                   "label_smoothing": 0.3}),
            SampleInput(x, args=(x.softmax(1),), kwargs={"weight": torch.rand(5), "label_smoothing": 0.2}),
            SampleInput(torch.randn(0, 5), args=(torch.zeros(0, dtype=torch.int64),)),  # mean of nothing: NaN
        ]),
        "nn.functional.normalize": (F.normalize, [
            SampleInput(a, kwargs={"p": math.inf}),  # the NaN makes its row's norm NaN on every target
            SampleInput(a, kwargs={"p": -math.inf, "dim": 0}),
            SampleInput(torch.zeros(3, 4), kwargs={"p": 3.0}),  # the norm clamped to eps
        ]),
    }
    for name, (op, samples) in cases.items():
        result = check_op(name, nvidia, None, [HandEntry(name, op, samples)])
        assert result.passed == result.total == len(samples) + 2, [(s.label, s.reason) for s in result.samples
                                                                   if s.status != "passed"]


def test_the_same_source_compiles_ahead_for_sm90_and_gfx942(db, tmp_path, monkeypatch):
    nvidia = usable_target("nvidia_h100")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    op = "nn.functional.group_norm"  # the norm kernel: run-time geometry, grid-stride and column loops
    case = next(c for c in draw(OPS[op], op, db).cases if not c.declined and "large" in c.label)
    source, language, why = synthesize(nvidia, kernel_spec(case))
    assert language == "triton" and not why
    assert "libdevice" not in source and "torch" not in source.split("def kernel")[1]
    assert compile_ahead(source, tmp_path / "group_norm.py", case) == ["cuda:90", "hip:gfx942"]
