"""A static cost model for Triton kernels compiled ahead of time: ranks candidates where none can be timed.

It combines the problem's roofline counts with what the compiler reported for the kernel. Each term is a
first-order effect a GPU programmer would name:

- machine fill: ``programs`` spread over ``units x programs_per_unit`` slots in whole waves; a grid smaller
  than the machine, or a last wave mostly empty, leaves bandwidth and FLOP/s unused;
- latency hiding: bandwidth needs bytes in flight; below ``full_occupancy`` (Little's law rule of thumb,
  0.5) the achievable bandwidth falls with occupancy;
- spills: every spilled byte is stored and loaded once per thread, through the memory system;
- launches: each launch costs the target's launch latency.

The result is a ranking aid with its breakdown, reported as modeled, never as a measurement.
"""

from __future__ import annotations

import math

from kevolve import diagnosis as d
from kevolve.backend.estimator import MODEL, MODELED_TIME_S, Estimator
from kevolve.backend.profiler import ProfileRequest, roofline_floor, roofline_metrics

from kevolve_triton.device import triton_facts


class TritonCostModel(Estimator):
    name = "triton-static-cost-model"
    full_occupancy = 0.5

    def estimate(self, request: ProfileRequest) -> d.Metrics:
        facts, res = request.facts, request.resources
        knobs = triton_facts(facts)
        units = facts.parallel_units
        programs = max(1.0, res.get("programs", units))
        per_unit = res.get("programs_per_unit", 1.0)
        if per_unit <= 0:  # does not fit on a unit at all: it could never launch
            per_unit = 1e-6
        slots = units * per_unit
        waves = math.ceil(programs / slots)
        fill = programs / (waves * slots)
        occupancy = res.get(d.OCCUPANCY, 1.0)
        hiding = min(1.0, occupancy / self.full_occupancy) if occupancy > 0 else 1e-3
        dtype_peak = facts.peak_flops_for(request.dtype)
        floor_memory = roofline_floor(0.0, request.bytes, request.dtype, facts)
        memory_s = floor_memory / max(1e-6, fill * hiding)
        compute_s = request.flops / dtype_peak / max(1e-6, fill * min(1.0, occupancy / 0.25 if occupancy else 1.0))
        threads = programs * res.get("num_warps", 4) * knobs.get("warp_size", 32)
        spill_s = 2 * res.get(d.SPILL_BYTES, 0.0) * threads / facts.memory[-1].bandwidth_bytes_per_s
        launch_s = res.get("launches", 1.0) * knobs.get("launch_latency_us", 3.0) * 1e-6
        modeled = max(memory_s, compute_s) + spill_s + launch_s
        request.time_s = modeled
        metrics = roofline_metrics(request)
        metrics.update({
            MODELED_TIME_S: modeled, MODEL: self.name,
            d.FLOOR_S: roofline_floor(request.flops, request.bytes, request.dtype, facts),
            d.PARALLEL_UNITS_USED: min(float(units), programs), "machine_fill": fill, "waves": float(waves),
            "latency_hiding": hiding, "modeled_memory_s": memory_s, "modeled_compute_s": compute_s,
            "modeled_spill_s": spill_s, "modeled_launch_s": launch_s,
        })
        return metrics
