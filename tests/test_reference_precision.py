"""The answer a kernel is judged against is computed in full float32, whatever the process's defaults: cuDNN's
TF32 convolutions (on by default) and a lowered matmul precision would judge a float32 kernel against their
rounding. The defaults come back afterwards, for the eager baseline the user gets."""

from __future__ import annotations

import torch
from kevolve.harness import checks


class _Recording:
    def __init__(self) -> None:
        self.seen: list[tuple[bool, str]] = []

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        self.seen.append((torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()))
        return [inputs[0] * 2]


def test_expected_runs_the_reference_in_full_float32_and_restores_the_defaults():
    problem = _Recording()
    cudnn = torch.backends.cudnn
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                         allow_tf32=True):
            out = checks.expected(problem, [torch.ones(3)])
            assert (cudnn.allow_tf32, torch.get_float32_matmul_precision()) == (True, "high")
        assert problem.seen == [(False, "highest")]
        assert torch.equal(out[0], torch.full((3,), 2.0))
    finally:
        torch.set_float32_matmul_precision(precision)
