"""ATen conformance of the conv group (convolutions, pooling, resizing, padding) on the Triton targets: OpInfo
samples through the kernels of :mod:`kevolve_triton.recipes.aten_conv`, run by the Triton interpreter (no GPU
here), and the same sources compiled ahead of time for sm_90 and gfx942.

A fast subset: real passing results on nvidia_h100 (avg_pool2d, adaptive_avg_pool2d, pad) and mtia_sim
(conv_transpose2d); a wrong divisor reported failing with its worst error; one kernel of every kind compiled for
both GPUs.
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("expecttest")
pytest.importorskip("triton")

from conformance_helpers import compile_ahead, usable_target
from kevolve.cli import main
from kevolve.conformance import OPS
from kevolve.conformance.run import check_op, kernel_spec, synthesize
from kevolve.conformance.samples import draw
from kevolve_triton.recipes import aten_conv


def _conformance(capsys, target: str, ops: str, store) -> dict:
    code = main(["conformance", "--target", target, "--ops", ops, "--json", "--store", str(store)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, [(r["op"], r["failed"][:2], r["declined"][:2]) for r in report["ops"] if not r["passed"]]
    return report


def _all_pass(report: dict) -> None:
    for r in report["ops"]:
        assert r["samples_passed"] == r["samples_total"] > 0 and r["samples_declined"] == 0 and not r["cached"]
        assert r["language"] == "triton" and r["worst_error_over_tolerance"] <= 1.0
    assert report["samples_passed"] == report["samples_total"]


def test_nvidia_subset_passes_every_sample(capsys, store):
    usable_target("nvidia_h100")
    ops = "nn.functional.avg_pool2d,nn.functional.adaptive_avg_pool2d,nn.functional.pad"
    report = _conformance(capsys, "nvidia_h100", ops, store)
    assert (report["passed_ops"], report["total_ops"]) == (3, 3)
    _all_pass(report)
    by_op = {r["op"]: r for r in report["ops"]}
    # every OpInfo sample plus the two larger random ones; pad's four modes are four kernels
    assert by_op["nn.functional.adaptive_avg_pool2d"]["samples_total"] == 12
    assert by_op["nn.functional.pad"]["samples_total"] == 91 and by_op["nn.functional.pad"]["kernels"] == 4
    # the integer arguments are packed into a tensor: one kernel serves every avg_pool2d sample
    assert by_op["nn.functional.avg_pool2d"]["kernels"] == 1


def test_mtia_sim_passes_every_sample(capsys, store):
    usable_target("mtia_sim")
    report = _conformance(capsys, "mtia_sim", "nn.functional.conv_transpose2d", store)
    assert (report["passed_ops"], report["total_ops"]) == (1, 1)
    _all_pass(report)


def test_a_wrong_divisor_fails_with_its_worst_error(db, monkeypatch):
    nvidia = usable_target("nvidia_h100")
    # count_include_pad inverted: windows over the padding divide by the wrong count
    wrong = aten_conv._AVG_POOL_DEVICE.replace("include_pad != 0", "include_pad == 0")
    assert wrong != aten_conv._AVG_POOL_DEVICE
    monkeypatch.setattr(aten_conv, "_AVG_POOL_DEVICE", wrong)
    result = check_op("nn.functional.avg_pool2d", nvidia, None, db)
    assert not result.ok and result.failed and not result.declined
    assert 1.0 < result.worst and math.isfinite(result.worst)
    assert all("differ from the reference" in s.reason for s in result.failed)



@pytest.mark.parametrize("op, label", [
    ("nn.functional.conv_transpose2d", "large"),
    ("nn.functional.max_pool2d", "large"),
    ("nn.functional.adaptive_avg_pool2d", "large"),
    ("nn.functional.interpolate", "bicubic"),
    ("nn.functional.pad", "circular"),
])
def test_every_kernel_kind_compiles_ahead_for_sm90_and_gfx942(db, tmp_path, monkeypatch, op, label):
    nvidia = usable_target("nvidia_h100")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    case = next(c for c in draw(OPS[op], op, db).cases
                if not c.declined and label in c.label and c.expected[0].numel() > 0)
    source, language, why = synthesize(nvidia, kernel_spec(case))
    assert language == "triton" and not why
    assert "libdevice" not in source and "torch" not in source
    assert compile_ahead(source, tmp_path / "kernel.py", case) == ["cuda:90", "hip:gfx942"]


def test_a_mode_without_code_is_an_error_that_names_it():
    """A kernel spec asking for a pad or interpolate mode the recipes have no code for fails at rendering with the
    mode named, rather than rendering a kernel for some other mode."""
    from kevolve.conformance.kernel import KernelSpec

    for recipe, layout, what in ((aten_conv.TritonAtenPad(), "pad", "pad"),
                                 (aten_conv.TritonAtenResize(), "resize", "interpolate")):
        spec = KernelSpec(op="x", inputs=(("x", "float32"),), outputs=("float32",), expr=None, layout=layout,
                          attrs={"mode": "wraparound"})
        with pytest.raises(ValueError, match=f"{what} mode 'wraparound'"):
            recipe.device(spec)
        with pytest.raises(ValueError, match=f"{what} mode 'wraparound'"):
            recipe.launcher(spec, {"BLOCK": 256})
