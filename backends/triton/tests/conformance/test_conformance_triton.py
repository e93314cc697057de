"""ATen conformance on the Triton targets: OpInfo samples through generated Triton kernels, run by the Triton
interpreter (no GPU here), and the same sources compiled ahead of time for sm_90 and gfx942.

A fast subset: real passing results on nvidia_h100 (ops of each layout and dtype kind), amd_mi300 and mtia_sim;
the device-function library against torch on edge values (NaN, infinities, signed zeros, domain edges); a
wrong helper reported failing with its worst error; every expression function spelled.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

pytest.importorskip("expecttest")
pytest.importorskip("triton")

from conformance_helpers import compile_ahead, usable_target
from kevolve.backend.runner import load_kernel_module
from kevolve.cli import main
from kevolve.conformance import OPS
from kevolve.conformance.kernel import ConformanceProblem, KernelSpec
from kevolve.conformance.run import check_op, kernel_spec, synthesize
from kevolve.conformance.samples import draw
from kevolve.conformance.worker import error_ratio
from kevolve.problems.problem import Tolerance
from kevolve.synthesis import expr as E
from kevolve_triton.recipes import tl_math
from kevolve_triton.recipes.aten_pointwise import TritonAtenPointwise, kernel_expr

BINARY = ("max", "min", "pow", "fmod", "copysign", "atan2", "hypot", "fmax", "bitand", "bitxor", "lt", "le", "gt", "ge", "eq",
          "ne", "and", "or")
EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.5, 1e-30, -1e-30, 1e-6,
         -1e-6, 0.99999994, -0.99999994, 1.0000001, 0.49999997, 20.0, -20.0, 88.0, -88.0, 100.0, 1e10, -1e10,
         -3.0, 4096.5, 1e30, -1e30, 3.3e38, -3.3e38]


def _conformance(capsys, target: str, ops: str, store) -> dict:
    code = main(["conformance", "--target", target, "--ops", ops, "--json", "--store", str(store)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, [(r["op"], r["failed"][:2], r["declined"][:2]) for r in report["ops"] if not r["passed"]]
    return report


def test_every_expression_function_has_a_triton_spelling():
    x = E.Var("x")
    for fn in (*E.FUNCTIONS, *E.MORE_FUNCTIONS):
        arity = 3 if fn == "where" else 2 if fn in BINARY else 1
        text = kernel_expr(E.Call(fn, (x,) * arity), "tl.float32")
        assert "x" in text, fn
    with pytest.raises(ValueError, match="no Triton spelling for frexp"):
        kernel_expr(E.Call("frexp", (x,)), "tl.float32")


def test_a_kernel_file_holds_only_the_helpers_it_calls():
    spec = KernelSpec("atan2", (("x", "float32"), ("other", "float32")), ("float32",), E.atan2(E.Var("x"), 1.0),
                      "broadcast")
    source = TritonAtenPointwise().render(ConformanceProblem(spec), {"BLOCK": 1024})
    defined = {line[4:].split("(")[0] for line in source.splitlines() if line.startswith("def _kv_")}
    assert defined == {"_kv_aten_kernel", "_kv_atan2", "_kv_atan_unit", "_kv_signbit", "_kv_copysign", "_kv_isnan"}
    assert "tl.full([], 1.0, tl.float32)" in source  # a constant argument of a device function is a 0-d tensor
    assert "libdevice" not in source and "torch" not in source


def _run_expr(tmp_path, monkeypatch, expr: E.Expr, tensors: list[torch.Tensor], out_dtype: str = "float32"):
    """Render ``expr`` as a ``same`` kernel, load it under the Triton interpreter, run it on ``tensors``."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    names = ("x", "y")[:len(tensors)]
    spec = KernelSpec("t", tuple((n, str(t.dtype).split(".")[-1]) for n, t in zip(names, tensors)), (out_dtype,),
                      expr)
    path = tmp_path / f"k{abs(hash(repr(spec.describe())))}_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(TritonAtenPointwise().render(ConformanceProblem(spec), {"BLOCK": 256}))
    _, kernel = load_kernel_module(str(path))
    out = torch.empty(tensors[0].shape, dtype=getattr(torch, out_dtype))
    kernel(tensors, [out])
    return out


UNARY = {"expm1": torch.expm1, "log1p": torch.log1p, "log10": torch.log10, "tan": torch.tan, "asin": torch.asin,
         "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
         "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erfc": torch.erfc,
         "erfinv": torch.erfinv, "lgamma": torch.lgamma, "trunc": torch.trunc, "nearbyint": torch.round}
BINARY_REF = {"pow": torch.pow, "fmod": torch.fmod, "copysign": torch.copysign, "atan2": torch.atan2,
              "hypot": torch.hypot, "fmax": torch.fmax}


def test_math_helpers_match_torch_on_edge_values(tmp_path, monkeypatch):
    torch.manual_seed(0)
    edges = torch.tensor(EDGES, dtype=torch.float32)
    x = torch.cat([edges, torch.randn(600) * 4, torch.rand(300) * 2 - 1, torch.randn(100) * 1e-3])
    # sinh/cosh from 88.7 on: torch's vectorised path overflows exp(x) before sinh does; C's sinh (ours) does not
    near_overflow = x.abs() > 88.5
    tol = Tolerance.for_dtype(torch.float32)
    worst = {}
    for fn, ref in UNARY.items():
        out = _run_expr(tmp_path, monkeypatch, E.Call(fn, (E.Var("x"),)), [x])
        keep = ~near_overflow if fn in ("sinh", "cosh") else torch.ones_like(x, dtype=torch.bool)
        worst[fn] = error_ratio(out[keep], ref(x)[keep], tol)
    a = edges.repeat_interleave(len(EDGES))  # every pair of edge values, then random pairs
    b = edges.repeat(len(EDGES))
    a, b = torch.cat([a, torch.randn(500) * 3]), torch.cat([b, torch.randn(500) * 3])
    # fmod of a finite x by a y so small that x / y overflows: torch's vectorised fmod gives NaN there (its
    # scalar tail, C's fmod and ours the exact remainder)
    overflowing = torch.isinf(a / b) & torch.isfinite(a) & (b != 0)
    for fn, ref in BINARY_REF.items():
        out = _run_expr(tmp_path, monkeypatch, E.Call(fn, (E.Var("x"), E.Var("y"))), [a, b])
        keep = ~overflowing if fn == "fmod" else torch.ones_like(a, dtype=torch.bool)
        worst[fn] = error_ratio(out[keep], ref(a, b)[keep], tol)
    assert all(w <= 1.0 for w in worst.values()), {k: v for k, v in worst.items() if not v <= 1.0}
    isnan = _run_expr(tmp_path, monkeypatch, E.isnan(E.Var("x")), [x], "bool")
    assert torch.equal(isnan, torch.isnan(x))
    # signed zeros and poles where they decide the result: atan2's quadrant, pow's sign, lgamma's poles
    zeros = torch.tensor([0.0, -0.0, 0.0, -0.0])
    atan2 = _run_expr(tmp_path, monkeypatch, E.atan2(E.Var("x"), E.Var("y")), [zeros, zeros.flip(0)])
    assert torch.equal(atan2, torch.atan2(zeros, zeros.flip(0)))
    pow_ = _run_expr(tmp_path, monkeypatch, E.power(E.Var("x"), E.Var("y")),
                     [torch.tensor([-0.0, -0.0, -8.0, -1.0]), torch.tensor([-3.0, -2.0, 1 / 3, math.inf])])
    assert pow_.tolist()[:2] == [-math.inf, math.inf] and math.isnan(pow_[2]) and pow_[3] == 1.0
    poles = torch.tensor([0.0, -0.0, -1.0, -2.0, -1e10, -math.inf, math.inf])
    assert torch.equal(_run_expr(tmp_path, monkeypatch, E.lgamma(E.Var("x")), [poles]), torch.lgamma(poles))


def test_a_wrong_helper_fails_with_its_worst_error(db, tmp_path, monkeypatch):
    nvidia = usable_target("nvidia_h100")
    # atan's unit-interval series cut after u^5: wrong by up to ~3e-4 near tan(pi/8)
    right = tl_math._helpers()["_kv_atan_unit"][0]
    wrong = right.replace("p = 1.0 / 5.0 + z * p", "p = 1.0 / 5.0 + z * p * 0.0")
    assert wrong != right
    table = dict(tl_math._helpers())
    table["_kv_atan_unit"] = (wrong, table["_kv_atan_unit"][1])
    monkeypatch.setattr(tl_math, "_helpers", lambda: table)
    result = check_op("atan", nvidia, None, db)
    assert not result.ok and result.failed
    assert 1.0 < result.worst < 1e3 and math.isfinite(result.worst)
    assert all("differ from the reference" in s.reason for s in result.failed)


def test_nvidia_subset_passes_every_sample(capsys, store):
    usable_target("nvidia_h100")
    ops = "lgamma,erfinv,nn.functional.glu,atan2,pow,bitwise_xor,where,eq"
    report = _conformance(capsys, "nvidia_h100", ops, store)
    assert (report["passed_ops"], report["total_ops"]) == (8, 8)
    by_op = {r["op"]: r for r in report["ops"]}
    assert by_op["nn.functional.glu"]["samples_total"] == 48  # every OpInfo sample plus the two large ones
    assert by_op["bitwise_xor"]["dtype"] == "int64" and by_op["eq"]["samples_total"] >= 10
    for r in report["ops"]:
        assert r["samples_passed"] == r["samples_total"] > 0 and r["samples_declined"] == 0 and not r["cached"]
        assert r["language"] == "triton" and r["worst_error_over_tolerance"] <= 1.0 and not r["cached"]
    assert report["samples_passed"] == report["samples_total"]


@pytest.mark.parametrize("target", ["amd_mi300", "mtia_sim"])
def test_other_triton_targets_pass_every_sample(capsys, store, target):
    usable_target(target)
    report = _conformance(capsys, target, "nn.functional.prelu,masked_fill", store)
    assert (report["passed_ops"], report["total_ops"]) == (2, 2)
    for r in report["ops"]:
        assert r["samples_passed"] == r["samples_total"] > 0 and r["samples_declined"] == 0 and not r["cached"]



def test_the_same_sources_compile_ahead_for_sm90_and_gfx942(db, tmp_path, monkeypatch):
    nvidia = usable_target("nvidia_h100")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    for op in ("lgamma", "where", "nn.functional.glu"):
        case = next(c for c in draw(OPS[op], op, db).cases if not c.declined and "large" in c.label)
        source, language, why = synthesize(nvidia, kernel_spec(case))
        assert language == "triton" and not why
        assert compile_ahead(source, tmp_path / f"{op}.py", case) == ["cuda:90", "hip:gfx942"]


@pytest.mark.bfloat16
def test_bfloat16_samples_round_to_nearest_even_in_the_interpreter(db):
    # the interpreter's float32 -> bfloat16 cast truncates; the runner makes it round as the GPU does, so the
    # bfloat16 samples of a transcendental (tanh) and of div's rounding modes match PyTorch bit for bit or
    # within bfloat16's tolerance
    h100 = usable_target("nvidia_h100")
    for op in ("tanh", "div"):
        result = check_op(op, h100, None, db)
        assert result.dtype == "float32+bfloat16" and any(s.label.startswith("bfloat16:") for s in result.samples)
        assert result.ok and not result.declined, (op, [(s.label, s.reason) for s in result.failed[:3]])


def test_a_call_with_nothing_to_write_may_launch_nothing():
    from kevolve_triton.capture import capture_launches

    def lazy(inputs, outputs):  # launches only when there is something to write
        return None

    params = torch.zeros(3, dtype=torch.int64)  # packed arguments are not data to write
    assert capture_launches(lazy, [torch.empty(0), params], [torch.empty(0)]) == []
    with pytest.raises(ValueError, match="launched no @triton.jit function"):
        capture_launches(lazy, [torch.empty(0), params], [torch.empty(2)])


def test_an_empty_batch_builds_and_passes_on_the_gpu_and_simulated_targets(db):
    # batch_norm's eval sample of an empty batch has a kernel of its own, built on that sample: it launches
    # nothing, which the ahead-of-time capture (nvidia) and the simulator's trace (mtia_sim) both accept
    for name in ("nvidia_h100", "mtia_sim"):
        result = check_op("nn.functional.batch_norm", usable_target(name), None, db)
        empty = [s for s in result.samples if "tensor(0,)" in s.label]
        assert empty and all(s.status == "passed" for s in empty), (name, [(s.label, s.reason) for s in empty])
