"""Correctness checks: poisoned outputs, unmodified inputs, tolerance scaled to dtype and magnitude."""

from __future__ import annotations

from typing import Any

import torch

from kevolve.problems.problem import Tolerance

#: an integer type of each element width: views that move and compare a tensor's exact bits
BIT_VIEWS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def poison_value(dtype: torch.dtype, round_: int) -> float | int | bool:
    """Alternate two poisons so a kernel cannot pass by writing a value that happens to equal one of them: NaN
    and a huge finite number for floats, two unlikely patterns for integers."""
    if dtype.is_floating_point:
        return float("nan") if round_ % 2 == 0 else -3.0e38 if dtype != torch.float16 else -6.0e4
    if dtype == torch.bool:
        return round_ % 2 == 0
    info = torch.iinfo(dtype)
    return info.min + 7 if round_ % 2 == 0 else info.max - 12345


def allocate_poisoned(like: list[torch.Tensor], round_: int, device: str) -> list[torch.Tensor]:
    outs = []
    for ref in like:
        out = torch.empty(ref.shape, dtype=ref.dtype, device=device)
        out.fill_(poison_value(ref.dtype, round_))
        outs.append(out)
    return outs


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise bitwise equality (NaN payloads included)."""
    view = BIT_VIEWS[a.element_size()]
    return a.contiguous().view(view) == b.contiguous().view(view)


def changed_inputs(before: list[torch.Tensor], after: list[torch.Tensor], names: list[str]) -> str:
    for i, (b, a) in enumerate(zip(before, after)):
        same = bits_equal(b, a)
        if not bool(same.all()):
            name = names[i] if i < len(names) else f"#{i}"
            return f"input {i} ({name}) was modified at {int((~same).sum())} of {a.numel()} positions"
    return ""


def expected(problem: Any, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The reference's answer in full float32: on NVIDIA GPUs cuDNN convolutions run in TF32 by default (a 10-bit
    mantissa), and a kernel that computes in float32 was judged against that rounding (conv2d 3x3 on an H200:
    75% of the outputs off by more than float32's tolerance). Matmuls are held to float32 the same way. What the
    eager baseline is timed at stays the user's default."""
    cudnn = torch.backends.cudnn
    precision = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                         allow_tf32=False):
            return problem.reference(inputs)
    finally:
        torch.set_float32_matmul_precision(precision)


def first_mismatch(outputs: list[torch.Tensor], expected: list[torch.Tensor], tol: Tolerance,
                   poison_round: int) -> tuple[int, dict[str, Any]] | None:
    """The first output that does not match its reference (moved to the output's device), with :func:`compare`'s
    evidence; None when all match."""
    for index, (out, ref) in enumerate(zip(outputs, expected)):
        bad = compare(out, ref.to(out.device), tol, poison_round)
        if bad is not None:
            return index, bad
    return None


def compare(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, poison_round: int) -> dict[str, Any] | None:
    """None when ``out`` matches ``ref``; otherwise the evidence of the mismatch.

    Floats: where the reference is finite, |out - ref| <= atol * max(1, rms(ref)) + rtol * |ref| and out is
    finite; where it is NaN or +-inf, out must be the same special value.
    """
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return {"reason": f"shape/dtype {tuple(out.shape)}/{out.dtype} != expected {tuple(ref.shape)}/{ref.dtype}"}
    if out.numel() == 0:
        return None
    poison = poison_value(ref.dtype, poison_round)
    if ref.dtype.is_floating_point:
        o, r = (out, ref) if ref.dtype in (torch.float32, torch.float64) else (out.float(), ref.float())
        finite = torch.isfinite(r)
        finite_values = torch.where(finite, r, torch.zeros((), dtype=r.dtype))
        rms = float(torch.linalg.vector_norm(finite_values, dtype=torch.float64)) / max(1, int(finite.sum())) ** 0.5
        bound = tol.atol * max(1.0, rms) + tol.rtol * r.abs()
        err = (o - r).abs()
        same_special = (o == r) | (torch.isnan(o) & torch.isnan(r))
        ok = torch.where(finite, (err <= bound) & torch.isfinite(o), same_special)
        if bool(ok.all()):
            return None
        unwritten = (torch.isnan(o) if poison != poison else (o == float(poison))) & ~ok
        ratio = torch.where(finite & torch.isfinite(o), err / bound.clamp_min(1e-30), torch.full_like(err, float("inf")))
        worst = float(ratio.max())
    else:
        ok = out == ref
        if bool(ok.all()):
            return None
        unwritten = (out == poison) & ~ok
        worst = float("inf")
    bad = (~ok).nonzero()
    first = tuple(int(i) for i in bad[0])
    evidence = {
        "mismatched": int((~ok).sum()),
        "total": ref.numel(),
        "unwritten": int(unwritten.sum()),
        "worst_error_over_tolerance": worst,
        "first_mismatch": {"index": first, "got": out[first].item(), "expected": ref[first].item()},
    }
    if evidence["unwritten"]:
        evidence["reason"] = (f"{evidence['unwritten']} of {ref.numel()} outputs were never written "
                              f"(they still hold the poison value)")
    else:
        evidence["reason"] = f"{evidence['mismatched']} of {ref.numel()} outputs differ from the reference"
    return evidence
