"""ATen conformance of the indexing operators on the Triton targets (gather/scatter, index_put, embedding_bag,
bucketize/searchsorted): real OpInfo samples through the generated Triton kernels (run by the Triton interpreter
here), a deliberately wrong variant reported failing, a scatter kernel run by hand on a case whose answer is
written out (repeated targets: the order of the writes shows), and the same sources compiled ahead of time for
sm_90 and gfx942.
"""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("expecttest")
pytest.importorskip("triton")

from conformance_helpers import (
    SCATTER_BY_HAND,
    bucketize_with_sides_swapped_fails,
    check_scatter_by_hand,
    compile_ahead,
    every_sample_passes,
    usable_target,
)
from kevolve.backend.runner import load_kernel_module
from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import kernel_spec, synthesize
from kevolve.conformance.samples import draw
from kevolve_triton.recipes.aten_index import TritonAtenScatter


# OpInfo samples plus the two larger random ones, one op of each kernel kind but the search (below)
@pytest.mark.parametrize(("op", "samples"), [("take_along_dim", 7), ("scatter_add", 9), ("index_put", 6),
                                             ("nn.functional.embedding", 12)])
def test_index_ops_pass_every_sample_on_nvidia(db, tmp_path, op, samples):
    every_sample_passes(op, usable_target("nvidia_h100"), db, tmp_path, samples=samples, language="triton")


def test_index_put_passes_on_mtia_sim(db, tmp_path):
    every_sample_passes("index_put", usable_target("mtia_sim"), db, tmp_path, samples=6, language="triton")


def test_bucketize_passes_and_the_wrong_side_fails(db, tmp_path):
    nvidia = usable_target("nvidia_h100")
    every_sample_passes("bucketize", nvidia, db, tmp_path, samples=26)
    bucketize_with_sides_swapped_fails(nvidia, db, tmp_path)


def _scatter_kernel(tmp_path, monkeypatch, reduce: str, include_self: bool, dtype: str = "float32",
                    source: list[str] | None = None):
    """The Triton scatter kernel for these attributes, loaded under the interpreter (its text in ``source``)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    kernel = KernelSpec("scatter_reduce", (("in0", dtype), ("in1", "int64"), ("in2", dtype),
                                           ("in3", "int64")), (dtype,), None, "scatter",
                        attrs={"reduce": reduce, "include_self": include_self, "alpha": 1.0})
    problem = ConformanceProblem(kernel)
    recipe = TritonAtenScatter()
    assert recipe.supports(problem)
    path = tmp_path / f"{reduce}_{include_self}_{dtype}.py"
    path.write_text(recipe.render(problem, {"BLOCK": 64}))
    if source is not None:
        source.append(path.read_text())
    return load_kernel_module(str(path))[1]


def test_an_integer_scatter_add_adds_every_element_at_once_and_matches_pytorch(tmp_path, monkeypatch):
    """One lane per index element, added atomically (a 1-D scatter was one lane walking all of them: 29 ms for
    the ads model's 106k marks on an H200), with duplicates, out-of-range-free targets and both dims."""
    source: list[str] = []
    kernel = _scatter_kernel(tmp_path, monkeypatch, "sum", True, "int64", source)
    assert "tl.atomic_add" in source[0]
    gen = torch.Generator().manual_seed(0)
    for dim, x, index in ((0, torch.randint(-5, 5, (700,), generator=gen), torch.randint(0, 700, (3000,), generator=gen)),
                          (1, torch.randint(-5, 5, (3, 40), generator=gen), torch.randint(0, 40, (3, 90), generator=gen))):
        src = torch.randint(-9, 9, index.shape, generator=gen)
        out = torch.full_like(x, -123)
        kernel([x, index, src, torch.tensor([dim, 0])], [out])
        assert torch.equal(out, x.scatter_add(dim, index, src)), dim


@pytest.mark.parametrize(("reduce", "include_self", "expected"), SCATTER_BY_HAND)
def test_scatter_by_hand(tmp_path, monkeypatch, reduce, include_self, expected):
    check_scatter_by_hand(_scatter_kernel(tmp_path, monkeypatch, reduce, include_self), reduce, include_self, expected)


def test_the_same_sources_compile_ahead_for_sm90_and_gfx942(db, tmp_path, monkeypatch):
    nvidia = usable_target("nvidia_h100")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    for op, label in (("scatter_reduce", "mean"), ("nn.functional.embedding_bag", "max_norm=1.0")):
        case = next(c for c in draw(OPS[op], op, db).cases if not c.declined and label in c.label)
        source, language, why = synthesize(nvidia, kernel_spec(case))
        assert language == "triton" and not why
        compiled = compile_ahead(source, tmp_path / f"{op}.py", case)
        # every launch of the file: the copy, the walk along dim, the division (scatter mean); one (embedding_bag)
        assert len(compiled) == (6 if op == "scatter_reduce" else 2), compiled
