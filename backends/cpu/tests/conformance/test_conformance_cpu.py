"""ATen conformance on the CPU target: real OpInfo samples through generated C++ kernels in isolated workers.

A fast subset (a handful of kernels to compile): real passing results, a wrong expression reported failing
with its worst error, declined samples listed with their reasons, the JSON totals, the cache.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math

import pytest
import torch

pytest.importorskip("expecttest")

from kevolve.cli import main
from kevolve.conformance import OPS, SUITE, SUITE_GROUPS
from kevolve.conformance import samples as sm
from kevolve.conformance.cli import parse_ops
from kevolve.conformance.run import ResultCache, check_op
from kevolve.synthesis import expr as E


def test_suite_is_the_issues_160_opinfo_names(db):
    assert len(SUITE) == len(set(SUITE)) == 160
    names = {e.name for e in db}
    assert not [n for n in SUITE if n not in names]
    assert set(OPS) <= set(SUITE)
    assert parse_ops("unary,nn.functional.glu,abs") == [*SUITE_GROUPS["unary"], "nn.functional.glu"]


def test_cli_json_totals_cache_and_backendbench_export(capsys, cpu, tmp_path):
    ops = "neg,isnan,where,nn.functional.glu,nn.functional.prelu"
    assert main(["conformance", "--target", "cpu", "--ops", ops, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["passed_ops"], report["total_ops"]) == (5, 5)
    by_op = {r["op"]: r for r in report["ops"]}
    # glu: every OpInfo sample (46) plus the two larger random shapes, all of them
    assert by_op["nn.functional.glu"]["samples_total"] == 48 == by_op["nn.functional.glu"]["samples_passed"]
    assert by_op["nn.functional.prelu"]["samples_total"] >= 27
    for r in report["ops"]:
        assert r["passed"] and r["samples_declined"] == 0 and r["worst_error_over_tolerance"] <= 1.0
        assert r["language"] == "cpp" and not r["cached"]
    assert report["samples_passed"] == report["samples_total"] == sum(r["samples_total"] for r in report["ops"])
    # a re-run answers from the cache, with the same numbers
    assert main(["conformance", "--target", "cpu", "--ops", ops, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert all(r["cached"] for r in again["ops"])
    assert [r["samples_passed"] for r in again["ops"]] == [r["samples_passed"] for r in report["ops"]]
    # the passing kernels in BackendBench's layout, each verified on the ATen-level calls
    assert main(["export", "--format", "backendbench", str(tmp_path / "bb")]) == 0
    assert "covering 5 of 5 operators" in capsys.readouterr().err
    # prelu's kernel serves the helper op ATen dispatches it to
    assert {"neg__default", "isnan__default", "glu__default", "_prelu_kernel__default"} <= {
        p.name for p in (tmp_path / "bb").iterdir()}
    path = tmp_path / "bb" / "glu__default" / "glu__default_implementation_v1.py"
    module_spec = importlib.util.spec_from_file_location("glu_impl", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    x = torch.randn(3, 8, 5)
    torch.testing.assert_close(module.glu__default_kernel_impl(x, 1), torch.nn.functional.glu(x, 1))


def test_wrong_expression_fails_with_its_worst_error(db, cpu, tmp_path):
    wrong = dataclasses.replace(OPS["sin"], build=lambda x, a: E.sin(x) + 1e-3)
    result = check_op("sin", cpu, ResultCache(tmp_path / "c.sqlite"), db, spec_override=wrong)
    assert not result.ok and result.failed
    assert 1.0 < result.worst < 1e3 and math.isfinite(result.worst)
    assert all("differ from the reference" in s.reason for s in result.failed)


def test_declined_samples_count_against_the_op_with_their_reason(db, cpu, tmp_path, capsys, monkeypatch):
    # a kernel written without the decimals argument: the host declines those samples
    no_decimals = dataclasses.replace(OPS["round"], args=(), build=lambda x, a: E.nearbyint(x))
    result = check_op("round", cpu, None, db, spec_override=no_decimals)
    assert not result.ok
    assert result.passed == result.total - len(result.declined) > 0
    assert {s.reason for s in result.declined} == {"unsupported argument decimals=0", "unsupported argument decimals=3",
                                                   "unsupported argument decimals=-3"}
    # a kernel without broadcasting: the kernel itself declines the samples whose weight differs in size
    flat = dataclasses.replace(OPS["nn.functional.prelu"], layout="same", prepare=None)
    result = check_op("nn.functional.prelu", cpu, None, db, spec_override=flat)
    assert not result.ok and result.declined and result.passed
    assert all("the kernel declined these arguments" in s.reason for s in result.declined)
    # an op without a table entry: every sample declined, and the CLI exits non-zero
    monkeypatch.delitem(OPS, "cumsum")
    assert main(["conformance", "--target", "cpu", "--ops", "cumsum", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["passed_ops"], report["total_ops"]) == (0, 1)
    (cumsum,) = report["ops"]
    assert cumsum["samples_declined"] == cumsum["samples_total"] > 0
    assert cumsum["declined"][0]["reason"] == "no kernel recipe for this operator yet"


def test_expression_printers_spell_or_refuse_the_new_functions():
    from kevolve_cpu.recipes.cpp_common import cpp_expr
    from kevolve_cpu.recipes.numba_recipes import numba_expr

    x = E.Var("x")
    for fn in E.MORE_FUNCTIONS:
        binary = ("pow", "fmod", "copysign", "atan2", "hypot", "fmax", "bitand", "bitxor", "lt", "le", "gt", "ge",
                  "eq", "ne", "and", "or")
        arity = 3 if fn == "where" else 2 if fn in binary else 1
        expression = E.Call(fn, (x,) * arity)
        assert "x" in cpp_expr(expression, "libm")
        with pytest.raises(ValueError, match=f"no numba spelling for {fn}"):
            numba_expr(expression)


def test_a_kernel_that_hands_its_work_to_torch_is_rejected(db, cpu, monkeypatch):
    from kevolve.conformance import run

    real = run.synthesize

    def cheating(registered, kernel):
        source, language, why = real(registered, kernel)
        return source.replace("#include <cmath>", "#include <cmath>\n#include <torch/extension.h>"), language, why

    monkeypatch.setattr(run, "synthesize", cheating)
    result = check_op("neg", cpu, None, db)
    assert not result.ok and len(result.failed) == result.total
    assert all(s.reason.startswith("rejected: not a kernel: uses torch") for s in result.failed)


@pytest.mark.bfloat16
def test_bfloat16_samples_where_the_target_computes_bfloat16(db, cpu):
    # float32 and bfloat16 samples of each op; the bfloat16 ones follow ATen's rounding: div's trunc rounds the
    # quotient to bfloat16 first (its vectorised loop), scatter_add sums in float and rounds once, cumprod
    # accumulates in float (ATen's CPU acc_type), nan_to_num's default +-inf replacements are bfloat16's limits
    for op in ("div", "scatter_add", "cumprod", "nan_to_num"):
        result = check_op(op, cpu, None, db)
        labels = [s.label for s in result.samples]
        bf16 = [label for label in labels if label.startswith("bfloat16:")]
        assert result.dtype == "float32+bfloat16" and 0 < len(bf16) < len(labels), op
        assert result.ok and not result.declined, (op, [(s.label, s.reason) for s in result.failed[:3]])
    # without the bfloat16 ones, only float32 samples
    assert not any(s.label.startswith("bfloat16:") for s in check_op("neg", cpu, None, db, dtypes=()).samples)


def test_pytorchs_one_element_answer_is_accepted_at_planted_specials(db, cpu):
    # gelu(+inf) is NaN in PyTorch's vectorised CPU loop and inf alone; the kernel's inf is accepted there only
    result = check_op("nn.functional.gelu", cpu, None, db)
    assert result.ok
    planted = [s for s in result.samples if "large" in s.label]
    assert planted and all(s.reason == sm.ONE_ELEMENT for s in planted)
    assert all(s.reason == "" for s in result.samples if "large" not in s.label)


def test_one_element_answers_are_the_alternative_where_the_vectorised_loop_differs(db):
    # fmod(-8.4375, FLT_MIN): ATen's vector fmod (Sleef) overflows its quotient to NaN; alone (std::fmod) it is -0
    from torch.testing._internal.opinfo.core import SampleInput

    entry = next(e for e in db if e.name == "fmod")
    a = torch.full((64,), -8.4375)
    b = torch.full((64,), torch.finfo(torch.float32).tiny)
    b[1:] = 3.0
    case = sm._with_alternative(sm._case(OPS["fmod"], entry, "t", SampleInput(a, args=(b,)), torch.float32),
                                entry, SampleInput(a, args=(b,)), torch.float32, 64)
    if torch.isnan(case.expected[0][0]):  # a CPU with a vectorised fmod
        [(reason, [alone])] = case.alternatives
        assert reason == sm.ONE_ELEMENT
        assert alone[0] == 0 and torch.signbit(alone[0])
        assert torch.equal(alone[1:], case.expected[0][1:])
    else:
        assert not case.alternatives
    # a broadcast argument has no element of its own: no alternative
    broadcast = SampleInput(a, args=(b[:1],))
    case = sm._with_alternative(sm._case(OPS["fmod"], entry, "t", broadcast, torch.float32), entry, broadcast,
                                torch.float32, 64)
    assert not case.alternatives


@pytest.mark.bfloat16
def test_float32_answer_is_the_alternative_of_a_bfloat16_sample_where_they_differ(db):
    # binary_cross_entropy_with_logits is composite: its bfloat16 loop rounds every step, its float32 one does
    # not, and at a cancellation they differ by more than a rounding; abs is exact either way
    from torch.testing._internal.opinfo.core import SampleInput

    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4096, generator=g) * 8).bfloat16()
    y = torch.rand(4096, generator=g).bfloat16()
    name = "nn.functional.binary_cross_entropy_with_logits"
    entry = next(e for e in db if e.name == name)
    sample = SampleInput(x, args=(y,), kwargs={"reduction": "none"})
    case = sm._case(OPS[name], entry, "t", sample, torch.bfloat16)
    [(reason, [wide])] = case.alternatives
    assert reason == sm.IN_FLOAT32.format(dtype="bfloat16")
    exact = torch.nn.functional.binary_cross_entropy_with_logits(x.float(), y.float(), reduction="none")
    assert torch.equal(wide, exact.bfloat16()) and not torch.equal(wide, case.expected[0])
    entry = next(e for e in db if e.name == "abs")
    assert not sm._case(OPS["abs"], entry, "t", SampleInput(x), torch.bfloat16).alternatives

