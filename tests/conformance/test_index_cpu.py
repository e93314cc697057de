"""ATen conformance of the indexing operators on the CPU target (gather/scatter, index_put, embedding_bag,
bucketize/searchsorted): real OpInfo samples through the generated C++ kernels, a deliberately wrong variant
reported failing, and a scatter kernel run by hand on a case whose answer is written out (repeated targets: the
order of the writes shows).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("expecttest")

from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import ResultCache, check_op


# OpInfo samples plus the two larger random ones, each kernel kind once
@pytest.mark.parametrize(("op", "samples"), [("gather", 9), ("scatter_add", 9), ("index_put", 6),
                                             ("nn.functional.embedding", 12), ("bucketize", 26)])
def test_index_ops_pass_every_sample(db, cpu, tmp_path, op, samples):
    result = check_op(op, cpu, ResultCache(tmp_path / "c.sqlite"), db, refresh=True)
    assert result.language == "cpp" and not result.declined and not result.failed
    assert result.passed == result.total == samples and result.ok
    assert result.worst <= 1.0


def test_wrong_side_of_the_search_fails(db, cpu, tmp_path):
    def flipped(tensors, attrs):
        tensors, attrs = OPS["bucketize"].prepare(tensors, attrs)
        return [*tensors[:-1], 1 - tensors[-1]], attrs  # right <-> left

    wrong = dataclasses.replace(OPS["bucketize"], prepare=flipped)
    result = check_op("bucketize", cpu, ResultCache(tmp_path / "c.sqlite"), db, spec_override=wrong)
    assert not result.ok and not result.declined
    # the samples with no value on a boundary still agree; the large sample (zeros, infinities on both sides) cannot
    assert result.failed and result.passed < result.total
    assert any(s.label.endswith("large(514, 1031)") for s in result.failed)


def _scatter_kernel(cpu, tmp_path, reduce: str, include_self: bool):
    from kevolve_cpu.recipes.cpp_aten_index import CppAtenScatter

    kernel = KernelSpec("scatter_reduce", (("in0", "float32"), ("in1", "int64"), ("in2", "float32"),
                                           ("in3", "int64")), ("float32",), None, "scatter",
                        attrs={"reduce": reduce, "include_self": include_self, "alpha": 1.0})
    problem = ConformanceProblem(kernel)
    recipe = CppAtenScatter()
    assert recipe.supports(problem)
    source = recipe.render(problem, recipe.space(problem, cpu.spec.facts).default())
    build = cpu.backend.toolchain(cpu.spec, "cpp").build(source, tmp_path / reduce, None)
    return cpu.backend.runner(cpu.spec).load(build)


@pytest.mark.parametrize(("reduce", "include_self", "expected"), [
    ("none", True, [[30.0, 20.0, 7.0], [-1.0, 10.0, 7.0]]),  # the last write along dim 0 wins
    ("sum", True, [[47.0, 47.0, 7.0], [6.0, 17.0, 7.0]]),
    ("mean", False, [[20.0, 20.0, 7.0], [-1.0, 10.0, 7.0]]),  # untouched elements keep the input
    ("amax", False, [[30.0, float("nan"), 7.0], [-1.0, 10.0, 7.0]]),  # NaN from the source propagates
])
def test_scatter_by_hand(cpu, tmp_path, reduce, include_self, expected):
    x = torch.full((2, 3), 7.0)
    index = torch.tensor([[0, 0], [0, 1], [1, 0]])  # column 0: targets 0, 0, 1; column 1: targets 0, 1, 0
    src = torch.tensor([[10.0, 20.0], [30.0, 10.0], [-1.0, float("nan") if reduce == "amax" else 20.0]])
    params = torch.tensor([0, 0], dtype=torch.int64)  # dim 0, one update per index element
    out = torch.full((2, 3), -123.0)
    kernel = _scatter_kernel(cpu, tmp_path, reduce, include_self)
    kernel([x, index, src, params], [out])
    torch.testing.assert_close(out, torch.tensor(expected), equal_nan=True)
    # and PyTorch agrees with the written-out answer
    reference = x.scatter(0, index, src) if reduce == "none" else \
        x.scatter_reduce(0, index, src, reduce, include_self=include_self)
    torch.testing.assert_close(reference, torch.tensor(expected), equal_nan=True)
