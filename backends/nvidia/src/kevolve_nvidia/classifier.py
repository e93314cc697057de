"""The NVIDIA classifier: with Nsight Compute counters it judges by what the hardware saw (DRAM and SM
throughput as % of peak, achieved occupancy); without them it falls back to the roofline classifier."""

from __future__ import annotations

from dataclasses import replace

from kevolve import diagnosis as d
from kevolve.backend.classifier import RooflineClassifier
from kevolve.target import MachineFacts
from kevolve_triton.proton import proton_summary

from kevolve_nvidia.ncu import DRAM_BYTES, DRAM_FRACTION, L2_HIT, NCU_DURATION_S, SM_FRACTION


class NvidiaClassifier(RooflineClassifier):
    low_occupancy = 0.25
    short_s = 15e-6
    #: without counters, "too short for either roof to matter" below this many seconds (the core's default is
    #: 50 us). On an H100 a launch costs ~3 us and a 64 MiB row kernel that streams at 80-90% of the copy rate
    #: takes ~28 us: that is memory-bound, and judging it by its bandwidth is what tells the search to move
    #: bytes rather than to add rows per program. Same bound as the ncu path's short_s.
    latency_s = short_s

    def classify(self, metrics: d.Metrics, facts: MachineFacts, source: str) -> d.Diagnosis:
        if DRAM_FRACTION not in metrics:
            found = super().classify(metrics, facts, source)
            return replace(found, summary=found.summary + proton_summary(metrics))
        dram, sm = float(metrics[DRAM_FRACTION]), float(metrics[SM_FRACTION])
        occupancy = float(metrics.get(d.OCCUPANCY, 1.0))
        spills = float(metrics.get(d.SPILL_BYTES, 0.0))
        duration = float(metrics[NCU_DURATION_S])
        numbers = (f"ncu: DRAM {dram:.0%} of peak, SM {sm:.0%}, achieved occupancy {occupancy:.0%}, "
                   f"{float(metrics.get(d.REGISTERS, 0)):.0f} registers/thread, {spills:.0f} spill bytes/thread, "
                   f"L2 hit {float(metrics.get(L2_HIT, 0)):.0%}, {duration * 1e6:.1f} us")
        moved, needed = float(metrics.get(DRAM_BYTES, 0.0)), float(metrics.get(d.BYTES, 0.0))
        if moved and needed:  # DRAM moves whole sectors: scattered accesses fetch more than the op needs
            numbers += f", {moved / 1e6:.1f} MB through DRAM ({moved / needed:.2f}x the op's minimum bytes)"
        if spills > 0:
            kind, why = d.SPILL_BOUND, "registers spill to local memory"
        elif dram >= self.roof_at and dram >= sm:
            kind, why = d.MEMORY_BOUND, "DRAM throughput near its peak"
        elif sm >= self.roof_at:
            kind, why = d.COMPUTE_BOUND, "SM pipelines near their peak"
        elif occupancy < self.low_occupancy:
            kind, why = d.OCCUPANCY_LIMITED, "too few warps resident to hide latency"
        elif duration < self.short_s:
            kind, why = d.LATENCY_BOUND, "too short for either unit to reach its peak"
        else:
            kind = d.MEMORY_BOUND if dram >= sm else d.COMPUTE_BOUND
            why = "below both peaks; the larger one names the limiter"
        return d.Diagnosis(kind, f"{kind}: {why}; {numbers}", metrics, source)
