"""ATen conformance on the CPU target: reductions and scans (the ``reduce`` and ``scan`` kernels).

A fast subset: real OpInfo samples (plus the two larger random ones) passing for ops of each kind (a sum, max
with its indices and its binary variant, argmin, all's bool output, the scans cummax and logcumsumexp); a wrong
kernel reported failing; and kernels called directly on hand-computed cases for PyTorch's tie, NaN, infinity,
correction and empty-row rules.
"""

from __future__ import annotations

import hashlib
import math

import pytest
import torch

pytest.importorskip("expecttest")

from conformance_helpers import every_sample_passes
from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import ResultCache, check_op

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("op", "samples", "kernels"), [
    ("sum", 22, 1),  # every dim / dim-list / keepdim form through one (outer, R) kernel
    ("max", 17, 3),  # values + indices, values only, and the binary (pointwise) variant
    ("argmin", 15, 1),
    ("all", 22, 1),  # bool output, dim=() reducing nothing
    ("cummax", 5, 1),  # two outputs, ties move the index forward
    ("logcumsumexp", 8, 1),
])
def test_every_sample_passes(db, cpu, tmp_path, op, samples, kernels):
    every_sample_passes(op, cpu, db, tmp_path, samples=samples, kernels=kernels)


def test_a_wrong_kernel_is_reported_failing(db, cpu, tmp_path):
    # argmax's samples through argmin's kernel: only reductions over one element (0-dim, a size-1 dim) agree
    result = check_op("argmax", cpu, ResultCache(tmp_path / "conformance.sqlite"), db, spec_override=OPS["argmin"])
    assert not result.ok and not result.declined
    assert len(result.failed) >= 10
    assert all("differ from the reference" in s.reason for s in result.failed)
    assert all(s.status == "passed" for s in result.samples if s.label.startswith("argmax#") and "(tensor()" in s.label)


def _kernel(cpu, tmp_path, op: str, layout: str, outputs: tuple[str, ...], attrs: dict):
    """The CPU recipe's kernel for ``op`` on float32, built and loaded in this process."""
    from kevolve_cpu.recipes.cpp_aten_reduction import RECIPES

    problem = ConformanceProblem(KernelSpec(op, (("in0", "float32"),), outputs, None, layout, 0, attrs))
    recipe = next(r for r in RECIPES if r.supports(problem))
    source = recipe.render(problem, recipe.space(problem, cpu.spec.facts).default())
    # one folder per source: the loader would hand back an already-loaded library of the same path
    workdir = tmp_path / hashlib.sha256(source.encode()).hexdigest()[:16]
    build = cpu.backend.toolchain(cpu.spec, "cpp").build(source, workdir, None)
    return cpu.backend.runner(cpu.spec).load(build)


def _call(kernel, x: torch.Tensor, *outputs: tuple[tuple[int, ...], torch.dtype]) -> list[torch.Tensor]:
    outs = [torch.full(shape, 7, dtype=dtype) for shape, dtype in outputs]
    kernel([x], outs)
    return outs


def test_hand_computed_ties_nans_corrections_and_empty_rows(cpu, tmp_path):
    rows = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, NAN, 5.0, NAN], [-INF, -INF, -INF, -INF]])
    # max over rows: the first of equal values, the first NaN
    values, indices = _call(_kernel(cpu, tmp_path, "max", "reduce", ("float32", "int64"), {"indices": True}), rows,
                            ((3,), torch.float32), ((3,), torch.int64))
    torch.testing.assert_close(values, torch.tensor([3.0, NAN, -INF]), equal_nan=True)
    assert indices.tolist() == [1, 1, 0]
    # an empty row: PyTorch raises, the kernel declines
    with pytest.raises(RuntimeError, match="declined"):
        _call(_kernel(cpu, tmp_path, "max", "reduce", ("float32", "int64"), {"indices": True}),
              torch.zeros(2, 0), ((2,), torch.float32), ((2,), torch.int64))
    # var: divisor max(0, N - correction): 0.5 / 3 for correction -1, 0.5 / 0 for 2; NaN for an empty row
    for correction, expected in ((-1.0, 0.5 / 3), (2.0, INF)):
        var = _kernel(cpu, tmp_path, "var", "reduce", ("float32",), {"correction": correction})
        (out,) = _call(var, torch.tensor([[1.0, 2.0]]), ((1,), torch.float32))
        assert out.item() == pytest.approx(expected)
    (out,) = _call(var, torch.zeros(1, 0), ((1,), torch.float32))
    assert math.isnan(out.item())
    # cummax: a NaN takes over and each later NaN moves the index; ties move it forward
    line = torch.tensor([1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0]).reshape(1, 7, 1)
    values, indices = _call(_kernel(cpu, tmp_path, "cummax", "scan", ("float32", "int64"), {}), line,
                            ((7,), torch.float32), ((7,), torch.int64))
    torch.testing.assert_close(values, torch.tensor([1.0, 3.0, 3.0, NAN, NAN, NAN, NAN]), equal_nan=True)
    assert indices.tolist() == [0, 1, 2, 3, 3, 5, 5]
    # logcumsumexp: equal infinities stay, a NaN propagates
    (out,) = _call(_kernel(cpu, tmp_path, "logcumsumexp", "scan", ("float32",), {}),
                   torch.tensor([-INF, INF, 1.0, INF, NAN, 2.0]).reshape(1, 6, 1), ((6,), torch.float32))
    torch.testing.assert_close(out, torch.tensor([-INF, INF, INF, INF, NAN, NAN]), equal_nan=True)
