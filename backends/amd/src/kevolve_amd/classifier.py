"""The AMD classifier: the compiler's resource counts first (scratch spills, waves per SIMD and what limits
them), then the roofline classifier on time (measured or modeled) against the target's peaks."""

from __future__ import annotations

from kevolve import diagnosis as d
from kevolve.backend.classifier import RooflineClassifier
from kevolve.target import MachineFacts


def _num(metrics: d.Metrics, key: str, default: float = 0.0) -> float:
    value = metrics.get(key, default)
    return float(value) if isinstance(value, (int, float)) else default


class AmdClassifier(RooflineClassifier):
    #: fewer resident waves per SIMD than this leaves memory latency exposed (one wave cannot overlap its own
    #: loads with another wave's math)
    min_waves_per_simd = 2.0
    low_occupancy = 0.25

    def classify(self, metrics: d.Metrics, facts: MachineFacts, source: str) -> d.Diagnosis:
        numbers = self._numbers(metrics)
        gpu = facts.extra.get("gpu", {})
        scratch = _num(metrics, "scratch_bytes", _num(metrics, d.SPILL_BYTES))
        vgpr_spills = _num(metrics, "vgpr_spills")
        vgprs = _num(metrics, "vgprs", _num(metrics, d.REGISTERS))
        if scratch > 0 or vgpr_spills > 0 or _num(metrics, d.SPILL_BYTES) > 0:
            asked = _num(metrics, "waves_per_eu")
            request = (f"; waves_per_eu={asked:.0f} caps VGPRs at {self._vgpr_cap(asked, gpu):.0f}"
                       if asked > 0 else "")
            summary = (f"spill-bound: {vgpr_spills:.0f} VGPR spills, {scratch:.0f} bytes scratch per lane "
                       f"({vgprs:.0f} VGPRs of {gpu.get('vgprs_per_simd', 512)} per lane{request}); {numbers}")
            return d.Diagnosis(d.SPILL_BOUND, summary, metrics, source)
        if "waves_per_simd" in metrics:
            waves = _num(metrics, "waves_per_simd")
            occupancy = _num(metrics, d.OCCUPANCY, 1.0)
            if waves < self.min_waves_per_simd or occupancy < self.low_occupancy:
                summary = (f"occupancy-limited: {waves:.3g} waves per SIMD of {gpu.get('max_waves_per_simd', 8)} "
                           f"({occupancy:.0%}); {self._limiter(metrics, gpu)}; {numbers}")
                return d.Diagnosis(d.OCCUPANCY_LIMITED, summary, metrics, source)
        return super().classify(metrics, facts, source)

    @staticmethod
    def _numbers(metrics: d.Metrics) -> str:
        """The roofline classifier's numbers: where the (measured or modeled) time puts the kernel."""
        level = metrics.get(d.MEMORY_LEVEL, "memory")
        return (f"{_num(metrics, d.ACHIEVED_BANDWIDTH) / 1e9:.1f} GB/s = {_num(metrics, d.BANDWIDTH_FRACTION):.0%} "
                f"of {level} bandwidth, {_num(metrics, d.ACHIEVED_FLOPS) / 1e9:.1f} GFLOP/s = "
                f"{_num(metrics, d.FLOPS_FRACTION):.0%} of peak, {_num(metrics, d.TIME_S) * 1e6:.1f} us")

    @staticmethod
    def _vgpr_cap(waves_per_eu: float, gpu: dict) -> float:
        granule = gpu.get("vgpr_granularity", 8)
        return (gpu.get("vgprs_per_simd", 512) // max(1, int(waves_per_eu))) // granule * granule

    @staticmethod
    def _limiter(metrics: d.Metrics, gpu: dict) -> str:
        """Which resource binds the workgroups per CU, with its numbers (all that tie are named)."""
        warps = max(1.0, _num(metrics, "num_warps", 1.0))
        simds = gpu.get("simds_per_cu", 4)
        limits = {
            "VGPRs": _num(metrics, "workgroups_per_cu_by_waves", 1e9),
            "LDS": _num(metrics, "workgroups_per_cu_by_lds", 1e9),
            "barriers": _num(metrics, "workgroups_per_cu_by_barriers", 1e9),
        }
        by_vgprs, by_sgprs = _num(metrics, "waves_per_simd_by_vgprs", 1e9), _num(metrics, "waves_per_simd_by_sgprs", 1e9)
        if by_sgprs < by_vgprs:
            limits["SGPRs"] = limits.pop("VGPRs")
        binding = min(limits.values())
        words = []
        for name, count in limits.items():
            if count != binding:
                continue
            if name == "VGPRs":
                words.append(f"limited by VGPRs: {_num(metrics, 'vgprs'):.0f} VGPRs per lane allow {by_vgprs:.0f} "
                             f"waves per SIMD, {count:.0f} workgroups of {warps:.0f} waves per CU")
            elif name == "SGPRs":
                words.append(f"limited by SGPRs: {_num(metrics, 'sgprs'):.0f} SGPRs allow {by_sgprs:.0f} waves per "
                             f"SIMD, {count:.0f} workgroups of {warps:.0f} waves per CU")
            elif name == "LDS":
                words.append(f"limited by LDS: {_num(metrics, 'lds_bytes'):.0f} bytes per workgroup, "
                             f"{count:.0f} workgroup(s) in the CU's {gpu.get('lds_bytes_per_cu', 65536)} bytes "
                             f"(= {count * warps / simds:.3g} waves per SIMD at num_warps={warps:.0f})")
            else:
                words.append(f"limited by barriers: {count:.0f} workgroups of {warps:.0f} waves per CU")
        return "; ".join(words) or "limited by the workgroup size"
