"""ATen conformance of the indexing operators on the CPU target (gather/scatter, index_put, embedding_bag,
bucketize/searchsorted): real OpInfo samples through the generated C++ kernels, a deliberately wrong variant
reported failing, and a scatter kernel run by hand on a case whose answer is written out (repeated targets: the
order of the writes shows).
"""

from __future__ import annotations

import pytest

pytest.importorskip("expecttest")

from conformance_helpers import (
    SCATTER_BY_HAND,
    bucketize_with_sides_swapped_fails,
    check_scatter_by_hand,
    every_sample_passes,
)
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec


# OpInfo samples plus the two larger random ones, each kernel kind once
@pytest.mark.parametrize(("op", "samples"), [("gather", 9), ("scatter_add", 9), ("index_put", 6),
                                             ("nn.functional.embedding", 12), ("bucketize", 26)])
def test_index_ops_pass_every_sample(db, cpu, tmp_path, op, samples):
    every_sample_passes(op, cpu, db, tmp_path, samples=samples, language="cpp")


def test_wrong_side_of_the_search_fails(db, cpu, tmp_path):
    bucketize_with_sides_swapped_fails(cpu, db, tmp_path)


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


@pytest.mark.parametrize(("reduce", "include_self", "expected"), SCATTER_BY_HAND)
def test_scatter_by_hand(cpu, tmp_path, reduce, include_self, expected):
    check_scatter_by_hand(_scatter_kernel(cpu, tmp_path, reduce, include_self), reduce, include_self, expected)
