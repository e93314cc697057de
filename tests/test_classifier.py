"""The classifiers' order of judgement: spills first, then a roof the kernel already reaches, then idle units or
low occupancy, then launch latency; each verdict carries the numbers behind it. The roofline classifier (any
target without counters) and the NVIDIA one with Nsight Compute counters agree on that order. The Nsight
Compute adapter's CSV parsing and the Proton profiler's reading of its tree are checked here too, with the
verdicts they feed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kevolve import diagnosis as d
from kevolve.backend.classifier import RooflineClassifier
from kevolve.target import MachineFacts, MemoryLevel
from kevolve_nvidia.classifier import NvidiaClassifier
from kevolve_nvidia.ncu import DRAM_BYTES, DRAM_FRACTION, NCU_DURATION_S, SM_FRACTION, combine, parse_ncu_csv

FACTS = MachineFacts(peak_flops={"float32": 1e12}, memory=(MemoryLevel("DRAM", 1e12, 1 << 34),), parallel_units=100,
                     unit_name="SM")


def _roofline(bw: float, fl: float, *, t: float = 1e-3, used: float = 100, occupancy: float = 1.0,
              spills: float = 0.0) -> d.Diagnosis:
    metrics = {d.BANDWIDTH_FRACTION: bw, d.FLOPS_FRACTION: fl, d.TIME_S: t, d.PARALLEL_UNITS_USED: used,
               d.OCCUPANCY: occupancy, d.SPILL_BYTES: spills, d.ACHIEVED_BANDWIDTH: bw * 1e12,
               d.ACHIEVED_FLOPS: fl * 1e12, d.MEMORY_LEVEL: "DRAM"}
    return RooflineClassifier().classify(metrics, FACTS, "test")


@pytest.mark.parametrize("bw,fl,kind", [(0.89, 0.01, d.MEMORY_BOUND), (0.18, 0.72, d.COMPUTE_BOUND)])
def test_a_reached_roof_names_the_bound_even_at_low_occupancy(bw, fl, kind):
    # a bf16 matmul at 72% of peak on one 8-warp program per SM (occupancy 12.5%)
    diagnosis = _roofline(bw, fl, occupancy=0.125, used=100)
    assert diagnosis.kind == kind
    assert f"{max(bw, fl):.0%} of its roof" in diagnosis.summary
    # a few idle units do not change it either
    assert _roofline(bw, fl, used=40).kind == kind


def test_below_the_roofs_low_occupancy_or_idle_units_come_first():
    assert _roofline(0.55, 0.01, occupancy=0.125).kind == d.OCCUPANCY_LIMITED
    idle = _roofline(0.3, 0.01, used=40)
    assert idle.kind == d.OCCUPANCY_LIMITED and "40 of 100 SMs busy" in idle.summary
    # the same numbers with every unit busy and enough occupancy: memory-bound, below the roofline
    assert _roofline(0.55, 0.01).kind == d.MEMORY_BOUND


def test_spills_outrank_a_reached_roof_and_short_kernels_are_latency_bound():
    assert _roofline(0.9, 0.0, spills=64).kind == d.SPILL_BOUND
    assert _roofline(0.3, 0.0, t=5e-6).kind == d.LATENCY_BOUND
    # a short kernel that still reaches a roof is judged by the roof
    assert _roofline(0.8, 0.0, t=5e-6).kind == d.MEMORY_BOUND


def _ncu(dram: float, sm: float, occupancy: float, duration_s: float = 1e-3) -> d.Diagnosis:
    metrics = {DRAM_FRACTION: dram, SM_FRACTION: sm, d.OCCUPANCY: occupancy, NCU_DURATION_S: duration_s}
    return NvidiaClassifier().classify(metrics, FACTS, "ncu")


def test_ncu_verdicts_follow_the_same_order():
    assert _ncu(0.85, 0.3, 0.2).kind == d.MEMORY_BOUND
    assert _ncu(0.2, 0.75, 0.12).kind == d.COMPUTE_BOUND
    assert _ncu(0.4, 0.3, 0.12).kind == d.OCCUPANCY_LIMITED
    assert _ncu(0.4, 0.3, 0.5, duration_s=5e-6).kind == d.LATENCY_BOUND
    assert "DRAM 85% of peak" in _ncu(0.85, 0.3, 0.2).summary


def _csv_row(launch: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{launch}","1","python","host","{kernel}","1","7","(128, 1, 1)","(4096, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def test_ncu_csv_bytes_add_over_launches_and_reach_the_verdict():
    header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
              '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    rows = [_csv_row(0, "_table", "gpu__time_duration.sum", "nsecond", "4,000"),
            _csv_row(0, "_table", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "10"),
            _csv_row(0, "_table", "dram__bytes_read.sum", "Kbyte", "8"),
            _csv_row(0, "_table", "dram__bytes_write.sum", "byte", "512"),
            _csv_row(1, "_main", "gpu__time_duration.sum", "nsecond", "36,000"),
            _csv_row(1, "_main", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "90"),
            _csv_row(1, "_main", "dram__bytes_read.sum", "Mbyte", "100.5"),
            _csv_row(1, "_main", "dram__bytes_write.sum", "byte", "16000000")]
    text = "==PROF== Connected to process\n" + "\n".join([header, *rows]) + "\n"
    launches = parse_ncu_csv(text)
    assert [launch["kernel"] for launch in launches] == ["_table", "_main"]
    call = combine(launches)
    assert call["duration"] == pytest.approx(40e-6)
    assert call["dram_pct"] == pytest.approx((0.1 * 4 + 0.9 * 36) / 40)
    assert call["dram_bytes"] == pytest.approx(8e3 + 512 + 100.5e6 + 16e6)
    with pytest.raises(ValueError, match="unknown unit"):
        parse_ncu_csv(text.replace('"Mbyte"', '"MiB"'))
    metrics = {DRAM_FRACTION: call["dram_pct"], SM_FRACTION: 0.2, d.OCCUPANCY: 0.5, NCU_DURATION_S: call["duration"],
               DRAM_BYTES: call["dram_bytes"], d.BYTES: 58.25e6}
    assert "116.5 MB through DRAM (2.00x the op's minimum bytes)" in \
        NvidiaClassifier().classify(metrics, FACTS, "ncu").summary


#: the shape of a Proton hatchet tree: ROOT, kernel frames with device metrics, launch metadata below them
_HATCHET = [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [
    {"frame": {"name": "_jagged_tile_totals", "type": "function"},
     "metrics": {"count": 5, "device_id": "0", "device_type": "CUDA", "time (ns)": 17500.0},
     "children": [{"frame": {"name": "__proton_launch_metadata", "type": "function"}, "metrics": {},
                   "children": []}]},
    {"frame": {"name": "_jagged_copy", "type": "function"},
     "metrics": {"count": 5, "device_id": "0", "device_type": "CUDA", "time (ns)": 52500.0}, "children": []},
]}, {"CUDA": {"0": {"arch": "90", "num_sms": 132}}}]


def test_proton_kernel_times_and_the_verdict_they_feed(monkeypatch, tmp_path):
    import sys
    import types

    import torch
    from kevolve.backend.profiler import ProfileRequest
    from kevolve_triton import proton

    assert proton.kernel_times(_HATCHET) == {"_jagged_tile_totals": (17500.0, 5), "_jagged_copy": (52500.0, 5)}
    fake = types.ModuleType("triton.profiler")  # Proton needs a GPU: a stand-in that writes the same tree
    sessions = []
    fake.start = lambda name, context: sessions.append(name) or 7
    fake.finalize = lambda session: Path(sessions[-1] + ".hatchet").write_text(json.dumps(_HATCHET))
    monkeypatch.setitem(sys.modules, "triton.profiler", fake)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    calls = []
    request = ProfileRequest(run=lambda: calls.append(1), time_s=20e-6, flops=0.0, bytes=7e6, dtype="float32",
                             facts=FACTS, parameters={}, resources={}, cold_cache=True)
    metrics = proton.ProtonProfiler().profile(request)
    assert len(calls) == 1 + proton.CALLS  # a warm-up call, then the recorded ones
    assert metrics[d.TIME_S] == pytest.approx(14e-6) and metrics[proton.CALL_TIME_S] == 20e-6
    assert metrics[d.BANDWIDTH_FRACTION] == pytest.approx(0.5)  # 7 MB in 14 us against 1 TB/s
    assert metrics[proton.LAUNCHES] == 2 and metrics[proton.TOP_KERNEL] == "_jagged_copy"
    summary = NvidiaClassifier().classify(metrics, FACTS, "proton").summary
    assert "Proton: 2 launches per call, kernels 14.0 us of the 20.0 us call, _jagged_copy 75%" in summary
    fake.finalize = lambda session: None  # no output: the roofline alone, with the reason
    assert "profiler_error" in proton.ProtonProfiler().profile(request)


def test_the_profiler_chosen_after_workers_started_reaches_the_next_ones(monkeypatch):
    """Workers fork from a process started once per worker environment: the choice has to be part of it."""
    from kevolve.plugins import get_manager
    from kevolve_nvidia.backend import PROFILER_ENV

    registered = get_manager().target("nvidia_h100")
    monkeypatch.delenv(PROFILER_ENV, raising=False)
    default = registered.backend.worker_env(registered.spec)
    monkeypatch.setenv(PROFILER_ENV, "roofline")
    chosen = registered.backend.worker_env(registered.spec)
    assert PROFILER_ENV not in default and chosen == {**default, PROFILER_ENV: "roofline"}
    assert registered.backend.profiler(registered.spec).name == "roofline"


@pytest.mark.parametrize("here,note", [
    ("NVIDIA H100 80GB HBM3", ""),
    ("NVIDIA H200", "timed on an NVIDIA H200, not the H100 that nvidia_h100 describes"),
    ("NVIDIA GH200 480GB", "not the H100 that nvidia_h100 describes: the same sm_90 code"),
])
def test_timing_on_another_model_of_the_architecture_says_so(monkeypatch, here, note):
    """An H200 runs nvidia_h100's code, but its times are not an H100's: every timed result says so, and names
    the target that describes the GPU where there is one."""
    import torch
    from kevolve.harness.evaluation import Evaluation, Timing
    from kevolve.plugins import get_manager

    registered = get_manager().target("nvidia_h100")
    monkeypatch.setattr(type(registered.backend), "gpu_here", lambda self: "sm_90")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: here)
    timed, said = registered.backend.timing(registered.spec)
    assert timed and note in said and (note or said == "")
    assert ("--target nvidia_h200 describes this GPU" in said) == (here == "NVIDIA H200")  # a GH200 is no H200
    lines = Evaluation("ok", "done", timings={"kernel": Timing(1e-5, 1e-5, 1e-5, 15)}, timing_note=said).timing_lines()
    assert (f"note: {said}" in lines) == bool(note)


def test_a_working_set_served_by_a_cache_is_judged_against_that_caches_roof():
    """Issue 39: 94 GB/s on a working set that fits in L2 read "257% of DRAM bandwidth"; it is judged against the
    slowest level fast enough to have served it, and never above 100% of the level it names."""
    from kevolve.backend.profiler import ProfileRequest, roofline_metrics
    from kevolve.llm.prompt import _result
    from kevolve.synthesis.base import HistoryItem

    facts = MachineFacts(peak_flops={"float32": 1e12}, parallel_units=8, memory=(
        MemoryLevel("L2", 400e9, 1 << 20), MemoryLevel("L3", 150e9, 1 << 25), MemoryLevel("DRAM", 36.6e9, 1 << 34)))
    for cold in (False, True):  # cold: the caches were flushed, yet the kernel outran DRAM
        metrics = roofline_metrics(ProfileRequest(run=lambda: None, time_s=8e6 / 94.1e9,
                                                  flops=0.0, bytes=8e6, dtype="float32", facts=facts,
                                                  parameters={}, resources={}, cold_cache=cold))
        assert metrics[d.MEMORY_LEVEL] == "L3" and metrics[d.BANDWIDTH_FRACTION] <= 1.0
    diagnosis = RooflineClassifier().classify(metrics, facts, "roofline")
    assert "of L3 bandwidth" in diagnosis.summary and "%" in diagnosis.summary
    line = _result(HistoryItem(node_id=1, recipe="", language="cpp", parameters={}, fitness=1.0, status="ok",
                               diagnosis=diagnosis, seconds=1e-4))
    assert line.count(diagnosis.kind) == diagnosis.summary.count(diagnosis.kind) == 1, line
