"""ATen conformance on the Triton targets: reductions and scans (:mod:`kevolve_triton.recipes.aten_reduction`).

A fast subset: real OpInfo samples (plus the two larger random ones, NaN/inf/±0 planted) through the Triton
interpreter on nvidia_h100 for ops of each kernel shape (a tl.sum reduction, max with its indices, a two-pass
variance, the scans cummax and cumprod), one op on mtia_sim; a wrong kernel reported failing; kernels called
directly on hand-computed ties, NaNs, empty rows and bfloat16 rounding; the same sources compiled ahead of time
for sm_90 and gfx942.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("expecttest")
pytest.importorskip("triton")

from conformance_helpers import every_sample_passes, usable_target
from kevolve.backend.runner import load_kernel_module
from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import ResultCache, check_op
from kevolve_triton.recipes.aten_reduction import RECIPES

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("op", "kernels"), [
    ("sum", 1),  # every dim / dim-list / keepdim form through one (outer, R) kernel
    ("max", 3),  # values + indices, values only, and the binary (pointwise recipe) variant
    ("amin", 1),  # the extreme value alone, no index kept
    ("var", 7),  # one kernel per correction
    ("cummax", 1),  # two outputs, ties move the index forward
    ("cumprod", 1),  # float64 accumulation: overflows where ATen's does
])
def test_every_float32_sample_passes_on_nvidia(db, tmp_path, op, kernels):
    every_sample_passes(op, usable_target("nvidia_h100"), db, tmp_path, kernels=kernels, language="triton",
                        dtypes=("float32",))


def test_mtia_sim_runs_a_reduction(db, tmp_path):
    every_sample_passes("argmin", usable_target("mtia_sim"), db, tmp_path, samples=15, dtypes=("float32",))


def test_a_wrong_kernel_is_reported_failing(db, tmp_path):
    # argmax's samples through argmin's kernel: only reductions over one element (0-dim, a size-1 dim) agree
    nvidia = usable_target("nvidia_h100")
    result = check_op("argmax", nvidia, ResultCache(tmp_path / "conformance.sqlite"), db,
                      spec_override=OPS["argmin"], dtypes=("float32",))
    assert not result.ok and not result.declined
    assert len(result.failed) >= 10
    assert all("differ from the reference" in s.reason for s in result.failed)


def _in_interpreter(check: str, folder) -> None:
    """Run ``check(folder)`` of this file in a fresh Python started with TRITON_INTERPRET=1: Triton makes its
    own @jit helpers (tl.sum, tl.cumprod, ...) interpreted or compiled once, when it is first imported."""
    code = f"import runpy; runpy.run_path({__file__!r})[{check!r}]({str(folder)!r})"
    helpers = str(Path(inspect.getfile(every_sample_passes)).parent)  # tests/, where this file's helpers are
    path = os.pathsep.join(filter(None, [helpers, os.environ.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr[-3000:]


def _kernel(tmp_path, op: str, layout: str, inputs: str, outputs: tuple[str, ...], attrs: dict):
    """This module's kernel for ``op``, loaded in this (interpreted) process."""
    tmp_path = Path(tmp_path)
    problem = ConformanceProblem(KernelSpec(op, (("in0", inputs),), outputs, None, layout, 0, attrs))
    recipe = next(r for r in RECIPES if r.supports(problem))
    source = recipe.render(problem, {"BLOCK": 256, "num_warps": 4})
    path = tmp_path / f"k{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
    path.write_text(source)
    return load_kernel_module(str(path))[1]


def _call(kernel, x: torch.Tensor, *outputs: tuple[tuple[int, ...], torch.dtype]) -> list[torch.Tensor]:
    outs = [torch.full(shape, 7, dtype=dtype) for shape, dtype in outputs]
    kernel([x], outs)
    return outs


def test_hand_computed_ties_nans_corrections_and_empty_rows(tmp_path):
    _in_interpreter("_hand_computed", tmp_path)


def test_bfloat16_sums_round_to_nearest_like_a_gpu(tmp_path):
    _in_interpreter("_bfloat16_rounding", tmp_path)


def test_few_long_rows_are_reduced_in_pieces(tmp_path):
    _in_interpreter("_pieces", tmp_path)


class _Launches:
    """Stands in for a @triton.jit kernel of a loaded file and counts its launches."""

    def __init__(self, jit) -> None:
        self.jit, self.grids = jit, []

    def __getitem__(self, grid):
        self.grids.append(grid)
        return self.jit[grid]


def _pieces(tmp_path) -> None:
    # 3 rows of 70001 at BLOCK 256: a program per row, each row in 69 pieces of 1024 and a join; sums, means and
    # norms accumulate in float64 (a piece's result is kept unrounded), counts in integers
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 70001, generator=gen)
    x[2, ::7] = 0.0
    cases = [("sum", "float32", ("float32",), {"dtype": None}, x, x.double().sum(1)),
             ("mean", "float32", ("float32",), {"dtype": None}, x, x.double().mean(1)),
             ("linalg.vector_norm", "float32", ("float32",), {"ord": 2.0}, x, x.double().norm(dim=1)),
             ("count_nonzero", "float32", ("int64",), {}, x, (x != 0).sum(1)),
             ("any", "bool", ("bool",), {}, x[:, :-1] > 3.5, (x[:, :-1] > 3.5).any(1)),
             ("sum", "bfloat16", ("bfloat16",), {"dtype": None}, x.bfloat16(), x.bfloat16().float().sum(1))]
    for op, dtype, outputs, attrs, data, expected in cases:
        problem = ConformanceProblem(KernelSpec(op, (("in0", dtype),), outputs, None, "reduce", 0, attrs))
        recipe = next(r for r in RECIPES if r.supports(problem))
        path = Path(tmp_path) / f"pieces_{op}_{dtype}.py"
        path.write_text(recipe.render(problem, {"BLOCK": 256, "num_warps": 4}))
        module, kernel = load_kernel_module(str(path))
        pieces = module._kv_reduce_piece_kernel = _Launches(module._kv_reduce_piece_kernel)
        (out,) = _call(kernel, data, ((3,), getattr(torch, outputs[0])))
        assert pieces.grids == [(3, 1, 69)], (op, pieces.grids)
        rtol = 8e-3 if dtype == "bfloat16" else 1e-6  # a float32 sum in another order may round to another bf16
        torch.testing.assert_close(out, expected.to(out.dtype), rtol=rtol, atol=0, msg=op)
    # many rows, or short ones, stay one program per block of rows
    sum_kernel = load_kernel_module(str(Path(tmp_path) / "pieces_sum_float32.py"))
    sum_kernel[0]._kv_reduce_piece_kernel = pieces = _Launches(sum_kernel[0]._kv_reduce_piece_kernel)
    short = x[:, :2000].contiguous()
    (out,) = _call(sum_kernel[1], short, ((3,), torch.float32))
    assert pieces.grids == [] and torch.allclose(out, short.sum(1))


def test_a_strided_view_is_reduced_in_place(tmp_path):
    _in_interpreter("_in_place", tmp_path)


def _in_place(tmp_path) -> None:
    # a program's reduction over a leading or middle dimension reads the tensor as a view (A, R, I) of its own
    # memory (kevolve.conformance.ops.reduction.rows_in_place): output a * I + i reduces view[a, :, i]
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(5, 300, 7, generator=gen)
    x[1, 17, 3] = NAN
    cases = [("sum", ("float32",), {"dtype": None}, x, [x.double().sum(1)]),  # the middle dim: groups along A
             ("amax", ("float32",), {}, x.reshape(5, 2100).t().unsqueeze(-1), [x.reshape(5, 2100).amax(0)]),
             ("argmax", ("int64",), {}, x, [x.argmax(1)]),
             ("var", ("float32",), {"correction": 1.0}, x, [x.double().var(1)])]
    for op, outputs, attrs, view, expected in cases:
        kernel = _kernel(tmp_path, op, "reduce", "float32", outputs, attrs)
        got = _call(kernel, view, *((tuple(e.shape), getattr(torch, d)) for e, d in zip(expected, outputs)))
        for out, want in zip(got, expected):
            torch.testing.assert_close(out, want.to(out.dtype), equal_nan=True, msg=op)
    # two groups of three lines 9000 long: each line in 141 pieces of 64 (tiles of 4 lines by 16), the groups on
    # the grid's second axis
    problem = ConformanceProblem(KernelSpec("sum", (("in0", "float32"),), ("float32",), None, "reduce", 0,
                                            {"dtype": None}))
    path = Path(tmp_path) / "in_place_sum.py"
    path.write_text(next(r for r in RECIPES if r.supports(problem)).render(problem, {"BLOCK": 256, "num_warps": 4}))
    module, sum_kernel = load_kernel_module(str(path))
    module._kv_reduce_piece_kernel = pieces = _Launches(module._kv_reduce_piece_kernel)
    long = torch.randn(2, 9000, 3, generator=gen)
    (out,) = _call(sum_kernel, long, ((2, 3), torch.float32))
    assert pieces.grids == [(1, 2, 141)], pieces.grids
    torch.testing.assert_close(out, long.double().sum(1).float())


def _hand_computed(tmp_path) -> None:
    # rows longer than one tile (BLOCK 256): a lane's first extremum, then the first across lanes
    rows = torch.zeros(4, 300)
    rows[0, 7], rows[0, 263] = 3.0, 3.0  # equal maxima in two lanes' tiles: the first index
    rows[1, 290], rows[1, 5] = NAN, NAN  # the first NaN, wherever it lies
    rows[2] = -INF
    rows[3, 299] = 1.0
    max_kernel = _kernel(tmp_path, "max", "reduce", "float32", ("float32", "int64"), {"indices": True})
    values, indices = _call(max_kernel, rows, ((4,), torch.float32), ((4,), torch.int64))
    torch.testing.assert_close(values, torch.tensor([3.0, NAN, -INF, 1.0]), equal_nan=True)
    assert indices.tolist() == [7, 5, 0, 299]
    with pytest.raises(RuntimeError, match="declined"):  # an empty row: PyTorch raises, the kernel declines
        _call(max_kernel, torch.zeros(2, 0), ((2,), torch.float32), ((2,), torch.int64))
    # var: divisor max(0, N - correction); NaN for an empty row
    for correction, expected in ((-1.0, 0.5 / 3), (2.0, INF)):
        var = _kernel(tmp_path, "var", "reduce", "float32", ("float32",), {"correction": correction})
        (out,) = _call(var, torch.tensor([[1.0, 2.0]]), ((1,), torch.float32))
        assert out.item() == pytest.approx(expected)
    (out,) = _call(var, torch.zeros(1, 0), ((1,), torch.float32))
    assert math.isnan(out.item())
    # logsumexp: an infinite maximum is not subtracted, NaN propagates
    lse = _kernel(tmp_path, "logsumexp", "reduce", "float32", ("float32",), {})
    (out,) = _call(lse, torch.tensor([[INF, 1.0], [-INF, -INF], [NAN, INF], [0.0, 0.0]]), ((4,), torch.float32))
    torch.testing.assert_close(out, torch.tensor([INF, -INF, NAN, math.log(2.0)]), equal_nan=True)
    # cummax: a NaN takes over and each later NaN moves the index; ties move it forward
    line = torch.tensor([1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0]).reshape(1, 7, 1)
    cummax = _kernel(tmp_path, "cummax", "scan", "float32", ("float32", "int64"), {})
    values, indices = _call(cummax, line, ((7,), torch.float32), ((7,), torch.int64))
    torch.testing.assert_close(values, torch.tensor([1.0, 3.0, 3.0, NAN, NAN, NAN, NAN]), equal_nan=True)
    assert indices.tolist() == [0, 1, 2, 3, 3, 5, 5]
    # logcumsumexp: equal infinities stay, a NaN propagates
    lcse = _kernel(tmp_path, "logcumsumexp", "scan", "float32", ("float32",), {})
    (out,) = _call(lcse, torch.tensor([-INF, INF, 1.0, INF, NAN, 2.0]).reshape(1, 6, 1), ((6,), torch.float32))
    torch.testing.assert_close(out, torch.tensor([-INF, INF, INF, INF, NAN, NAN]), equal_nan=True)
    # integer cumsum, exact past 2**53 (a float accumulator would round): lines in tiles longer than one
    # BLOCK, a few long lines scanned tile by tile in parallel (each tile offset by the sums of those before it,
    # summed in BLOCK-wide steps past 256 tiles), and the element-by-element walk where lines are not contiguous
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.int64, torch.int32):
        cumsum = _kernel(tmp_path, "cumsum", "scan", str(dtype).split(".")[1], ("int64",), {"dtype": None})
        big = 2 ** 40 if dtype == torch.int64 else 2 ** 20
        for shape in ((1, 700, 1), (3, 5, 1), (2, 300, 3), (2, 2300, 1), (1, 70000, 1)):
            x = torch.randint(-big, big, shape, generator=gen, dtype=dtype)
            (out,) = _call(cumsum, x, (shape, torch.int64))
            assert torch.equal(out, x.cumsum(1)), (dtype, shape)
    x = torch.tensor([2 ** 62, 3, 5, -(2 ** 62)]).reshape(1, 4, 1)
    (out,) = _call(_kernel(tmp_path, "cumsum", "scan", "int64", ("int64",), {"dtype": None}), x, ((1, 4, 1), torch.int64))
    assert out.flatten().tolist() == [2 ** 62, 2 ** 62 + 3, 2 ** 62 + 8, 8]


def _bfloat16_rounding(tmp_path) -> None:
    # 2^127 * (1 + 127/128) is bfloat16's largest finite value; adding 2^119 reaches the halfway point to
    # the next (infinite) one, which round-to-nearest-even takes; the interpreter's plain cast truncates
    big = torch.tensor([[2.0 ** 127 * (1 + 127 / 128), 2.0 ** 119, 0.0]], dtype=torch.bfloat16)
    total = _kernel(tmp_path, "sum", "reduce", "bfloat16", ("bfloat16",), {"dtype": None})
    (out,) = _call(total, big, ((1,), torch.bfloat16))
    assert out.item() == big.float().sum().bfloat16().item() == INF
    small = torch.tensor([[1.0, 2.0 ** -8, 2.0 ** -9]], dtype=torch.bfloat16)  # 1 + 3/512: rounds up to 1 + 1/128
    (out,) = _call(total, small, ((1,), torch.bfloat16))
    assert out.item() == small.float().sum().bfloat16().item() == 1 + 1 / 128


def test_the_same_sources_compile_ahead_for_sm90_and_gfx942(tmp_path, monkeypatch):
    import triton
    from kevolve_triton.capture import capture_launches
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    cases = [("max", "reduce", ("float32", "int64"), {"indices": True}, (33, 70), [(33,), (33,)]),
             ("prod", "reduce", ("bfloat16",), {"dtype": None}, (5, 300), [(5,)]),
             ("logcumsumexp", "scan", ("float32",), {}, (2, 9, 5), [(2, 9, 5)]),
             ("mean", "reduce", ("float32",), {"dtype": None}, (2, 70000), [(2,)])]  # in pieces
    for op, layout, outputs, attrs, shape, out_shapes in cases:
        problem = ConformanceProblem(KernelSpec(op, (("in0", outputs[0]),), outputs, None, layout, 0, attrs))
        recipe = next(r for r in RECIPES if r.supports(problem))
        path = tmp_path / f"{op}.py"
        path.write_text(recipe.render(problem, {"BLOCK": 4096, "num_warps": 4}))
        os.environ.pop("TRITON_INTERPRET", None)
        _, kernel = load_kernel_module(str(path))
        x = torch.randn(shape).to(getattr(torch, outputs[0]))
        outs = [torch.empty(s, dtype=getattr(torch, d)) for s, d in zip(out_shapes, outputs)]
        for launch in capture_launches(kernel, [x], outs):
            for target in (GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx942", 64)):
                source = ASTSource(launch.fn, launch.signature, constexprs=launch.constexprs, attrs=launch.attrs)
                assert triton.compile(source, target=target, options=launch.options).asm, (op, target)
