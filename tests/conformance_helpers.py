"""Helpers the conformance tests share, in tests/, backends/cpu/tests and backends/triton/tests (imported by name:
pytest's ``pythonpath`` setting puts tests/ on the path)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kevolve.plugins import get_manager


def usable_target(name: str):
    """The registered target, or the test skipped with the reason it cannot run here."""
    registered = get_manager().target(name)
    ok, why = registered.backend.usable(registered.spec)
    if not ok:
        pytest.skip(why)
    return registered


def every_sample_passes(op: str, registered: Any, db: Any, path: Any, *, samples: int | None = None,
                        kernels: int | None = None, language: str | None = None, **options: Any) -> Any:
    """``check_op`` of ``op`` on a fresh cache under ``path``, asserting that every sample ran and passed within
    tolerance (and, where given, how many samples and kernels there were and in which language); the result, for
    the assertions a test adds."""
    from kevolve.conformance.run import ResultCache, check_op

    result = check_op(op, registered, ResultCache(path / "conformance.sqlite"), db, refresh=True, **options)
    assert result.total == result.passed > 0, [(s.label, s.reason) for s in result.failed + result.declined]
    assert samples is None or result.total == samples, result.total
    assert not result.declined and not result.failed and not result.error and result.ok
    assert kernels is None or len(result.kernels) == kernels, len(result.kernels)
    assert language is None or result.language == language, result.language
    assert result.worst <= 1.0
    return result


def bucketize_with_sides_swapped_fails(registered: Any, db: Any, path: Any) -> None:
    """bucketize checked with ``right`` flipped before the kernel sees it: the samples with no value on a boundary
    still agree, the large sample (zeros, infinities on both sides) cannot, so the check must report failures."""
    import dataclasses

    from kevolve.conformance import OPS
    from kevolve.conformance.run import ResultCache, check_op

    def flipped(tensors, attrs):
        tensors, attrs = OPS["bucketize"].prepare(tensors, attrs)
        return [*tensors[:-1], 1 - tensors[-1]], attrs  # right <-> left

    wrong = dataclasses.replace(OPS["bucketize"], prepare=flipped)
    result = check_op("bucketize", registered, ResultCache(path / "wrong.sqlite"), db, spec_override=wrong)
    assert not result.ok and not result.declined
    assert result.failed and result.passed < result.total
    assert any(s.label.endswith("large(514, 1031)") for s in result.failed)


class HandEntry:
    """A one-op OpInfo stand-in: the given samples (the two larger random ones are added by the draw), judged
    against the given reference."""

    def __init__(self, name: str, op: Any, samples: list[Any]) -> None:
        self.name, self.variant_test_name, self.op, self.samples = name, "", op, samples
        self.domain = (None, None)

    def supported_dtypes(self, device: str) -> set[torch.dtype]:
        return {torch.float32}

    def sample_inputs(self, device: str, dtype: torch.dtype) -> list[Any]:
        return list(self.samples)


#: scatter / scatter_reduce along dim 0 of a 2x3 input, worked out by hand: (reduce, include_self, expected)
SCATTER_BY_HAND = [
    ("none", True, [[30.0, 20.0, 7.0], [-1.0, 10.0, 7.0]]),  # the last write along dim 0 wins
    ("sum", True, [[47.0, 47.0, 7.0], [6.0, 17.0, 7.0]]),
    ("mean", False, [[20.0, 20.0, 7.0], [-1.0, 10.0, 7.0]]),  # untouched elements keep the input
    ("amax", False, [[30.0, float("nan"), 7.0], [-1.0, 10.0, 7.0]]),  # NaN from the source propagates
]


def check_scatter_by_hand(kernel: Any, reduce: str, include_self: bool, expected: list) -> None:
    """A scatter kernel's answer on the hand-worked case, and PyTorch's agreeing with it."""
    x = torch.full((2, 3), 7.0)
    index = torch.tensor([[0, 0], [0, 1], [1, 0]])  # column 0: targets 0, 0, 1; column 1: targets 0, 1, 0
    src = torch.tensor([[10.0, 20.0], [30.0, 10.0], [-1.0, float("nan") if reduce == "amax" else 20.0]])
    params = torch.tensor([0, 0], dtype=torch.int64)  # dim 0, one update per index element
    out = torch.full((2, 3), -123.0)
    kernel([x, index, src, params], [out])
    torch.testing.assert_close(out, torch.tensor(expected), equal_nan=True)
    reference = x.scatter(0, index, src) if reduce == "none" else \
        x.scatter_reduce(0, index, src, reduce, include_self=include_self)
    torch.testing.assert_close(reference, torch.tensor(expected), equal_nan=True)


def compile_ahead(source: str, path: Any, case: Any) -> list[str]:
    """Compile every launch of a kernel file for sm_90 and gfx942 (no device needed), as the toolchain's AOT
    step does; returns the targets compiled."""
    import os

    import triton
    from kevolve.backend.runner import load_kernel_module
    from kevolve_triton.capture import capture_launches
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path.write_text(source)
    os.environ.pop("TRITON_INTERPRET", None)
    _, kernel = load_kernel_module(str(path))
    outputs = [torch.empty_like(t) for t in case.expected]
    compiled = []
    for launch in capture_launches(kernel, case.inputs, outputs):
        for target in (GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx942", 64)):
            source_ = ASTSource(launch.fn, launch.signature, constexprs=launch.constexprs, attrs=launch.attrs)
            triton.compile(source_, target=target, options=launch.options)
            compiled.append(f"{target.backend}:{target.arch}")
    return compiled


def tied(shape: tuple[int, ...]) -> torch.Tensor:
    """Few distinct values, NaN, infinity and both zeros: most sort keys tie."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(-3, 4, shape, generator=gen).float()
    pick = torch.rand(shape, generator=gen)
    x[pick < 0.1] = float("nan")
    x[(pick > 0.1) & (pick < 0.2)] = -0.0
    x[(pick > 0.2) & (pick < 0.25)] = float("inf")
    return x
