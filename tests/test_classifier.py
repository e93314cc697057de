"""The classifiers' order of judgement: spills first, then a roof the kernel already reaches, then idle units or
low occupancy, then launch latency; each verdict carries the numbers behind it. The roofline classifier (any
target without counters) and the NVIDIA one with Nsight Compute counters agree on that order."""

from __future__ import annotations

import pytest
from kevolve import diagnosis as d
from kevolve.backend.classifier import RooflineClassifier
from kevolve.target import MachineFacts, MemoryLevel
from kevolve_nvidia.classifier import NvidiaClassifier
from kevolve_nvidia.ncu import DRAM_FRACTION, NCU_DURATION_S, SM_FRACTION

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
