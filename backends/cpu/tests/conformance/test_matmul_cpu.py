"""ATen conformance on the CPU target for matrix products and attention: the batched GEMM (addmm with its
broadcast input and the beta=0 rule, matmul's 1-D and broadcast batch cases) and scaled dot-product attention
(masks, causal, grouped-query heads, dropout drawn from the seeded generator), on every OpInfo sample; a
hand-computed product and a wrong reference (on cpu and, through the interpreter, nvidia_h100); dropout with
the wrong seed reported failing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

pytest.importorskip("expecttest")

from conformance_helpers import HandEntry, usable_target
from kevolve.conformance import OPS
from kevolve.conformance.ops.matmul import _prep_sdpa
from kevolve.conformance.run import ResultCache, check_op

SDPA = "nn.functional.scaled_dot_product_attention"



@pytest.mark.parametrize(("op", "total"), [("addmm", 14), ("matmul", 17), (SDPA, 27)])
def test_every_sample_passes(db, cpu, tmp_path, op, total):
    result = check_op(op, cpu, ResultCache(tmp_path / "c.sqlite"), db)
    assert result.language == "cpp" and not result.error
    assert result.passed == result.total == total and not result.declined and not result.failed
    assert result.worst <= 1.0
    # the larger samples: addmm's second has beta=0 over a NaN input, attention's first has dropout and a mask
    assert sum(s.label.split(":")[-1].startswith("large") for s in result.samples) == 2


@pytest.mark.parametrize("target_name", ["cpu", "nvidia_h100"])
def test_hand_computed_addmm_and_a_wrong_reference(target_name):
    from torch.testing._internal.opinfo.core import SampleInput

    a, b = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[5.0, 6.0], [7.0, 8.0]])
    right = torch.tensor([[43.0, 54.0], [91.0, 110.0]])  # 2 * [[19, 22], [43, 50]] + 0.5 * [10, 20]
    ignored = torch.tensor([[float("nan"), 1.0]])  # beta=0: the input is not read (ATen's rule)
    samples = [SampleInput(torch.tensor([10.0, 20.0]), args=(a, b), kwargs={"alpha": 2, "beta": 0.5}),
               SampleInput(ignored, args=(a, b), kwargs={"alpha": 1, "beta": 0})]
    refs = {id(samples[0].input): right, id(samples[1].input): torch.tensor([[19.0, 22.0], [43.0, 50.0]])}

    def reference(shift: float) -> Any:  # the hand values for the two samples, PyTorch for the larger ones
        return lambda x, *args, **kwargs: refs[id(x)] + shift if id(x) in refs else torch.addmm(x, *args, **kwargs)

    target = usable_target(target_name)
    result = check_op("addmm", target, None, [HandEntry("addmm", reference(0.0), samples)])
    assert (result.passed, result.total) == (4, 4)
    assert [s.worst for s in result.samples[:2]] == [0.0, 0.0]
    result = check_op("addmm", target, None, [HandEntry("addmm", reference(1.0), samples)])
    assert result.passed == 2 and [s.label[:7] for s in result.failed] == ["addmm#0", "addmm#1"]
    assert all("differ from the reference" in s.reason for s in result.failed)


def test_dropout_from_another_seed_fails(db, cpu):
    def reseeded(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        tensors, options = _prep_sdpa(tensors, attrs)
        return tensors, {**options, "seed": 43} if "seed" in options else options

    result = check_op(SDPA, cpu, None, db, spec_override=dataclasses.replace(OPS[SDPA], prepare=reseeded))
    # the 12 OpInfo samples with dropout_p=0.5 and the first larger one (dropout_p=0.3) draw another mask
    assert len(result.failed) == 13 and result.passed == result.total - 13 == 14
    assert all("dropout_p" in s.label or ":large(2, 3" in s.label for s in result.failed)


@pytest.mark.parametrize("trans_b, bias, batch, m", [(True, True, (), 37), (False, False, (), 37),
                                                      (False, False, (3, 2), 37), (True, False, (5,), 1),
                                                      (False, True, (), 3)])
def test_the_tiled_path_of_the_gemm_kernel_matches_pytorch_at_edge_tiles(cpu, tmp_path, trans_b, bias, batch, m):
    """A linear layer (B stored N x K, a bias row), a plain mm and a bmm over two batch dimensions through the
    catalog's tiled GEMM, at sizes that leave partial register and cache tiles and several K blocks, and matrices
    of 1 and 3 rows through the row-by-row path; the same kernel without ``tiled`` agrees."""
    from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
    from kevolve_cpu.cpp_loader import CppKernel
    from kevolve_cpu.recipes.cpp_aten_matmul import CppAtenGemm
    from kevolve_cpu.toolchain import CppToolchain

    inputs = (("in0", "float32"), ("in1", "float32")) + ((("in2", "float32"),) if bias else ())
    spec = KernelSpec("nn.functional.linear" if trans_b else "bmm" if batch else "mm", inputs, ("float32",), None, "gemm", 0,
                      {"alpha": 1.0, "beta": 1.0, "trans_b": trans_b})
    problem, recipe = ConformanceProblem(spec), CppAtenGemm()
    gen = torch.Generator().manual_seed(1)
    k, n = 300, 50
    a, w = torch.randn(*batch, m, k, generator=gen), torch.randn(*batch, n, k, generator=gen)
    row = torch.randn(1, n, generator=gen)
    args = [a, w if trans_b else w.transpose(-1, -2).contiguous()] + ([row] if bias else [])
    expected = a @ w.transpose(-1, -2) + (row if bias else 0)
    params = {**recipe.space(problem, cpu.backend.facts(cpu.spec)).default(), "tile_m": 24, "tile_n": 48, "tile_k": 64, "micro": "6x16"}
    for tiled in (True, False):
        source = recipe.render(problem, {**params, "tiled": tiled})
        assert ("kv_gemm(" in source) == tiled
        kernel = CppKernel(CppToolchain().build(source, tmp_path / str(tiled), problem).artifact)
        out = torch.full((*batch, m, n), float("nan"))
        kernel(args, [out])
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
