"""The AMD targets, their facts and knobs, the resource reader's arithmetic and the classifier's wording; and,
compiled for real (in process, no device), that every launch knob a spec lists is one its gfx architecture
takes."""

from __future__ import annotations

from importlib import resources

import pytest
import tomllib
from amd_helpers import catalog_problem, compile_in_process, kernel_source
from kevolve import diagnosis as d
from kevolve.plugins import get_manager
from kevolve_amd.classifier import AmdClassifier
from kevolve_amd.resources import occupancy, parse_amdgcn, usage
from kevolve_triton.recipes.common import launch_params

TARGETS = {"amd_mi300": "gfx942", "amd_mi325": "gfx942", "amd_mi350": "gfx950", "amd_mi250": "gfx90a"}


def spec(name):
    return get_manager().target(name).spec


def gpu(name):
    return spec(name).facts.extra["gpu"]


@pytest.mark.parametrize("alias,name", [("mi300", "amd_mi300"), ("MI300X", "amd_mi300"), ("gfx942", "amd_mi300"),
                                        ("mi325x", "amd_mi325"), ("MI350X", "amd_mi350"), ("gfx950", "amd_mi350"),
                                        ("mi250x", "amd_mi250"), ("gfx90a", "amd_mi250")])
def test_aliases(alias, name):
    assert get_manager().target(alias).spec.name == name


def test_core_knows_the_distribution_of_every_target():
    known = tomllib.loads(resources.files("kevolve").joinpath("known_backends.toml").read_text())["distributions"]
    assert set(TARGETS) <= set(known["kevolve-amd"])


@pytest.mark.parametrize("name,arch", TARGETS.items())
def test_facts_and_untimed_reason(name, arch):
    target = get_manager().target(name)
    facts = target.spec.facts
    assert facts.extra["gpu"]["arch"] == arch and facts.extra["triton"]["warp_size"] == 64
    assert [m.bandwidth_bytes_per_s for m in facts.memory] == sorted((m.bandwidth_bytes_per_s for m in facts.memory),
                                                                     reverse=True)
    assert facts.peak_flops_for("bfloat16") > facts.peak_flops_for("float32") > 0
    assert target.backend.usable(target.spec) == (True, "")
    timed, why = target.backend.timing(target.spec)
    assert not timed and why == (f"no ROCm GPU here: compiled for {arch} and checked through the Triton interpreter; "
                                 "ranked by the static cost model, not timed on hardware")
    gpu_target = target.backend.gpu_target(target.spec)
    assert (gpu_target.backend, gpu_target.arch, gpu_target.warp_size) == ("hip", arch, 64)
    assert type(target.backend.runner(target.spec)).__name__ == "TritonInterpreterRunner"
    ok, why = __import__("kevolve_amd.rocprof", fromlist=["x"]).RocprofProfiler().available()
    assert not ok and "rocprofv3" in why
    assert target.backend.profiler(target.spec).name == "roofline"


def test_launch_knobs_by_family():
    pointwise = {p.name: p for p in launch_params(spec("amd_mi300").facts, "pointwise")}
    assert set(pointwise) == {"num_warps", "waves_per_eu"}
    assert pointwise["waves_per_eu"].responds_to == {d.OCCUPANCY_LIMITED: 1, d.SPILL_BOUND: -1}
    assert pointwise["waves_per_eu"].initial() == 0 and pointwise["num_warps"].initial() == 4
    matmul = {p.name: p.initial() for p in launch_params(spec("amd_mi300").facts, "matmul")}
    assert matmul == {"num_warps": 4, "waves_per_eu": 0, "num_stages": 2, "matrix_instr_nonkdim": 16, "kpack": 1}
    # Triton overwrites kpack to 1 on gfx950 (deprecated there): the spec does not offer a dead knob
    assert "kpack" not in {p.name for p in launch_params(spec("amd_mi350").facts, "matmul")}


# --- the resource reader -------------------------------------------------------------------------------------

ASM = """
; TotalNumSgprs: 106
; NumVgprs: 256
; NumAgprs: 53
; TotalNumVgprs: 312
; ScratchSize: 64
; LDSByteSize: 0 bytes/workgroup (compile time only)
; Occupancy: 1
amdhsa.kernels:
  - .agpr_count:     53
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 64
    .sgpr_count:     106
    .sgpr_spill_count: 9
    .vgpr_count:     312
    .vgpr_spill_count: 15
"""


def test_parse_amdgcn():
    assert parse_amdgcn(ASM)["compiler_occupancy"] == 1
    assert usage(ASM) == {"vgprs": 312, "agprs": 53, "sgprs": 106, "vgpr_spills": 15, "sgpr_spills": 9,
                          "scratch_bytes": 64, "static_lds_bytes": 0, "compiler_waves_per_simd": 1}
    with pytest.raises(ValueError, match="no VGPR count"):
        parse_amdgcn("; nothing here")


def test_occupancy_rules():
    g = gpu("amd_mi300")
    # 217 VGPRs round up to 224: two waves per SIMD, two 4-wave workgroups per CU
    o = occupancy(217, 40, 0, 4, g)
    assert (o["waves_per_simd_by_vgprs"], o["programs_per_unit"], o["waves_per_simd"], o[d.OCCUPANCY]) == (2, 2, 2, 0.25)
    # 40 KB of LDS: one workgroup per CU although VGPRs would allow eight
    o = occupancy(64, 40, 40_000, 4, g)
    assert (o["workgroups_per_cu_by_lds"], o["workgroups_per_cu_by_waves"], o["waves_per_simd"]) == (1, 8, 1)
    # few VGPRs, small multi-wave workgroups: 16 barrier slots bind, single-wave workgroups take none
    assert occupancy(16, 16, 0, 2, g)["programs_per_unit"] == 16
    assert occupancy(16, 16, 0, 1, g)["programs_per_unit"] == 32
    # 106 SGPRs (112 allocated) allow 7 waves per SIMD out of 800
    assert occupancy(16, 106, 0, 4, g)["waves_per_simd_by_sgprs"] == 7
    # gfx950's 160 KB LDS holds two 64 KB workgroups where gfx942's holds one
    assert occupancy(64, 40, 65536, 4, gpu("amd_mi350"))["workgroups_per_cu_by_lds"] == 2
    assert occupancy(64, 40, 65536, 4, g)["workgroups_per_cu_by_lds"] == 1


# --- the classifier ------------------------------------------------------------------------------------------

def _metrics(**resources):
    g = gpu("amd_mi300")
    base = {d.TIME_S: 1e-4, d.BANDWIDTH_FRACTION: 0.3, d.FLOPS_FRACTION: 0.01, d.PARALLEL_UNITS_USED: 304.0}
    o = occupancy(resources.pop("vgprs_"), 40, resources.get("lds_bytes", 0), resources["num_warps"], g)
    return {**base, **o, **resources}


def test_classifier_names_spills_with_numbers():
    m = _metrics(vgprs_=168, vgprs=168, num_warps=4, vgpr_spills=15, scratch_bytes=64, waves_per_eu=3,
                 **{d.SPILL_BYTES: 64})
    diag = AmdClassifier().classify(m, spec("amd_mi300").facts, "test")
    assert diag.kind == d.SPILL_BOUND
    assert "15 VGPR spills, 64 bytes scratch per lane (168 VGPRs of 512 per lane; waves_per_eu=3 caps VGPRs " \
           "at 168)" in diag.summary


def test_classifier_names_the_occupancy_limiter():
    facts = spec("amd_mi300").facts
    by_vgprs = AmdClassifier().classify(_metrics(vgprs_=300, vgprs=300, num_warps=4), facts, "test")
    assert by_vgprs.kind == d.OCCUPANCY_LIMITED
    assert "1 waves per SIMD of 8" in by_vgprs.summary and "limited by VGPRs: 300 VGPRs per lane allow 1" in \
        by_vgprs.summary
    by_lds = AmdClassifier().classify(_metrics(vgprs_=64, vgprs=64, num_warps=4, lds_bytes=40_000), facts, "test")
    assert by_lds.kind == d.OCCUPANCY_LIMITED and "limited by LDS: 40000 bytes per workgroup, 1 workgroup(s)" in \
        by_lds.summary and "VGPRs" not in by_lds.summary
    fine = AmdClassifier().classify(_metrics(vgprs_=64, vgprs=64, num_warps=4), facts, "test")
    assert fine.kind == d.MEMORY_BOUND or fine.kind == d.COMPUTE_BOUND


# --- knobs the specs list compile for their architecture ---------------------------------------------------------

def _knob_points(name):
    """The defaults, then each launch knob moved to each of its other choices, one at a time."""
    params = {p.name: p for p in launch_params(spec(name).facts, "matmul")}
    default = {n: p.initial() for n, p in params.items()}
    yield default
    for n, p in params.items():
        for choice in p.choices:
            if choice != default[n] and n != "num_warps":
                yield {**default, n: choice}


@pytest.mark.parametrize("name", ["amd_mi300", "amd_mi350", "amd_mi250"])
def test_every_listed_knob_compiles_for_its_arch(name, recwarn):
    problem = catalog_problem("matmul", {"m": 128, "n": 128, "k": 128}, "bfloat16")
    base = kernel_source("matmul_lds.py", BM=32, BN=32, BK=32)
    for point in _knob_points(name):
        launch = ", ".join(f"{k}={v!r}" for k, v in point.items())
        source = base.replace("num_warps=NUM_WARPS, num_stages=NUM_STAGES)", f"{launch})")
        assert launch in source
        (report,) = compile_in_process(source, problem, name)
        assert report["vgprs"] > 0 and report["num_warps"] == point["num_warps"], (point, report)
    assert not [w for w in recwarn if "deprecated" in str(w.message)], "a listed knob is deprecated here"
