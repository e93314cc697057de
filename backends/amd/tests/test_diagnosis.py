"""Hand-written kernels through the real harness on amd_mi300 (compiled for gfx942, checked through the
interpreter, ranked by the static cost model): one that spills gets the spill-bound diagnosis with the
compiler's numbers, one whose LDS binds gets occupancy-limited naming the LDS, one over the LDS hard limit
gets a compile error that says what to change."""

from __future__ import annotations

import re

from amd_helpers import catalog_problem, kernel_source
from kevolve import diagnosis as d
from kevolve.harness.pipeline import evaluate_candidate
from kevolve.synthesis.base import Candidate

TARGET = "amd_mi300"
UNTIMED = "no ROCm GPU here: compiled for gfx942"


def evaluate(source, problem, harness):
    return evaluate_candidate(Candidate(source, "triton", synthesizer="user"), problem, TARGET, harness)


def test_register_tile_too_big_for_the_vgpr_file_is_spill_bound(harness):
    e = evaluate(kernel_source("relu_spills.py"), catalog_problem("relu", {"n": 1 << 20}), harness)
    assert e.status == "ok", (e.status, e.reason)
    r = e.resources
    assert r["vgprs"] == 512 and r["vgpr_spills"] > 0 and r["scratch_bytes"] > 0, r
    assert r[d.SPILL_BYTES] == r["scratch_bytes"] and r[d.REGISTERS] == r["vgprs"]
    assert r["waves_per_simd"] == 1 and r[d.OCCUPANCY] == 1 / 8
    assert e.untimed.startswith(UNTIMED) and not e.timings and e.estimate["modeled_spill_s"] > 0
    assert e.diagnosis.kind == d.SPILL_BOUND, e.diagnosis.summary
    numbers = re.search(r"(\d+) VGPR spills, (\d+) bytes scratch per lane \((\d+) VGPRs of 512", e.diagnosis.summary)
    assert numbers, e.diagnosis.summary
    assert [int(n) for n in numbers.groups()] == [r["vgpr_spills"], r["scratch_bytes"], r["vgprs"]]


def test_lds_heavy_matmul_is_occupancy_limited_by_lds(harness):
    e = evaluate(kernel_source("matmul_lds.py"), catalog_problem("matmul", {"m": 256, "n": 256, "k": 256}), harness)
    assert e.status == "ok", (e.status, e.reason)
    r = e.resources
    assert r[d.SPILL_BYTES] == 0 and r["lds_bytes"] > 65536 / 2, r
    assert r["workgroups_per_cu_by_lds"] == 1 < r["workgroups_per_cu_by_waves"], r
    assert r["waves_per_simd"] == 1 and r["programs_per_unit"] == 1
    assert e.diagnosis.kind == d.OCCUPANCY_LIMITED, e.diagnosis.summary
    assert (f"limited by LDS: {r['lds_bytes']:.0f} bytes per workgroup, 1 workgroup(s) in the CU's 65536 bytes"
            in e.diagnosis.summary), e.diagnosis.summary
    assert "limited by VGPRs" not in e.diagnosis.summary


def test_lds_over_the_workgroup_limit_is_a_compile_error_saying_what_to_change(harness):
    e = evaluate(kernel_source("matmul_lds.py", BK=256), catalog_problem("matmul", {"m": 256, "n": 256, "k": 256}),
                 harness)
    assert e.status == "compile_error" and e.stage == "compile"
    assert re.search(r"needs \d+ bytes of LDS \(shared memory\) per workgroup; gfx942 allows 65536: use smaller "
                     r"tiles .*num_stages", e.reason), e.reason
    assert "kevolve_triton.aot" in e.build_command
