"""Triton's Proton as the lighter profiler: the device time of every kernel a call launches (CUPTI on NVIDIA),
recorded in the worker's own process, with no kernel replays and no extra permissions.

What it adds to the roofline: the roofline is judged on the kernels' own device time (launch gaps and host work
left out), and the metrics say how many launches a call makes and which one takes most of the time, the
numbers a multi-launch kernel (a scan before a copy, a table before a search) needs.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from kevolve import diagnosis as d
from kevolve.backend.profiler import Profiler, ProfileRequest, roofline_metrics

#: calls recorded per profile; times are per call
CALLS = 5
#: metric keys this profiler adds
CALL_TIME_S, LAUNCHES, TOP_KERNEL, TOP_SHARE = "call_time_s", "launches_per_call", "top_kernel", "top_kernel_share"


def kernel_times(tree: Any) -> dict[str, tuple[float, int]]:
    """Kernel name -> (device nanoseconds, launches) summed over a Proton hatchet tree. Kernel frames are the
    ones whose metrics name a device; scope frames and launch metadata carry none."""
    found: dict[str, tuple[float, int]] = {}
    stack = list(tree) if isinstance(tree, list) else [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        metrics = node.get("metrics", {})
        if "device_type" in metrics and "time (ns)" in metrics:
            name = node.get("frame", {}).get("name", "?")
            ns, count = found.get(name, (0.0, 0))
            found[name] = (ns + float(metrics["time (ns)"]), count + int(metrics.get("count", 1)))
        stack.extend(node.get("children", []))
    return found


class ProtonProfiler(Profiler):
    name = "proton"

    def available(self) -> tuple[bool, str]:
        try:
            import triton.profiler  # noqa: F401 - present in Triton's wheels since 3.0
        except ImportError as exc:
            return False, f"Triton's Proton is not importable ({exc}): use the ncu or roofline profiler"
        return True, ""

    def profile(self, request: ProfileRequest) -> d.Metrics:
        try:
            kernels = self._record(request)
        except Exception as exc:  # noqa: BLE001 - a profiler that fails leaves the roofline, with the reason
            metrics = roofline_metrics(request)
            metrics["profiler_error"] = f"Proton failed, roofline only: {type(exc).__name__}: {exc}"[:500]
            return metrics
        if not kernels:
            metrics = roofline_metrics(request)
            metrics["profiler_error"] = "Proton recorded no kernel: roofline only"
            return metrics
        device_s = sum(ns for ns, _ in kernels.values()) / CALLS / 1e9
        top = max(kernels, key=lambda name: kernels[name][0])
        metrics = roofline_metrics(replace(request, time_s=device_s))
        metrics.update({CALL_TIME_S: request.time_s, LAUNCHES: sum(n for _, n in kernels.values()) / CALLS,
                        TOP_KERNEL: top, TOP_SHARE: kernels[top][0] / (device_s * CALLS * 1e9)})
        return metrics

    @staticmethod
    def _record(request: ProfileRequest) -> dict[str, tuple[float, int]]:
        import torch
        import triton.profiler as proton

        request.run()  # compiled and warm before recording
        torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as tmp:
            session = proton.start(str(Path(tmp) / "call"), context="shadow")
            for _ in range(CALLS):
                request.run()
            torch.cuda.synchronize()
            proton.finalize(session)
            return kernel_times(json.loads((Path(tmp) / "call.hatchet").read_text()))


def proton_summary(metrics: d.Metrics) -> str:
    """The verdict's addendum when Proton profiled the call ('' otherwise)."""
    if LAUNCHES not in metrics:
        return ""
    return (f"; Proton: {float(metrics[LAUNCHES]):.0f} launches per call, kernels "
            f"{float(metrics[d.TIME_S]) * 1e6:.1f} us of the {float(metrics[CALL_TIME_S]) * 1e6:.1f} us call, "
            f"{metrics[TOP_KERNEL]} {float(metrics[TOP_SHARE]):.0%}")
