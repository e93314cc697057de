"""A timed call whose outputs are wrong is rejected either way; the reason says which finding the evidence
supports: a few outputs just past the tolerance (numerics at its edge, on inputs the checks did not draw), or a
kernel that stops computing once the checks are behind it."""

from __future__ import annotations

import torch
from kevolve.harness import checks
from kevolve.harness.worker import timed_mismatch_reason
from kevolve.problems.problem import Tolerance

TOL = Tolerance(rtol=1e-5, atol=1e-5)


def reason(out: torch.Tensor, ref: torch.Tensor) -> str:
    bad = checks.compare(out, ref, TOL, 1)
    assert bad is not None
    return timed_mismatch_reason(0, bad)


def test_one_output_just_past_the_tolerance_reads_as_numerics_at_its_edge():
    ref = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    out = ref.clone()
    out[123] += 3e-5 + 2e-5 * ref[123].abs()  # about 1.5-3x the bound
    said = reason(out, ref)
    assert "edge of the tolerance" in said and "1 of 65536" in said, said


def test_wrong_answers_read_as_a_kernel_that_computes_only_while_checked():
    ref = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    assert "computes only while checked" in reason(ref.flip(0), ref)
    slightly_everywhere = ref + 3e-5  # small errors, but in every output: not a rounding edge
    assert "computes only while checked" in reason(slightly_everywhere, ref)


def test_unwritten_outputs_never_read_as_numerics():
    ref = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    out = ref.clone()
    out[7] = checks.poison_value(out.dtype, 1)
    assert "computes only while checked" in reason(out, ref)
