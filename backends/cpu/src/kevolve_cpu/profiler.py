"""CPU profiler adapter: roofline position from timing, the parallelism the schedule used, and ``perf stat``
hardware counters where the machine allows them (many VMs do not: then the reason is recorded)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from functools import cache

from kevolve import diagnosis as d
from kevolve.backend.profiler import Profiler, ProfileRequest, roofline_metrics

PERF_EVENTS = ("cycles", "instructions", "cache-misses", "cache-references")


@cache
def perf_status() -> tuple[bool, str]:
    perf = shutil.which("perf")
    if perf is None:
        return False, "perf is not installed (`apt-get install linux-perf`)"
    probe = subprocess.run([perf, "stat", "-x,", "-e", "instructions", "true"], capture_output=True, text=True)
    if probe.returncode != 0 or "<not supported>" in probe.stderr or "<not counted>" in probe.stderr:
        return False, "perf stat cannot count hardware events here (no PMU access, typical of VMs)"
    return True, ""


def _perf_counters(run, seconds: float) -> dict[str, float]:
    """Attach ``perf stat`` to this process while the kernel runs repeatedly for about ``seconds``."""
    proc = subprocess.Popen(["perf", "stat", "-x,", "-e", ",".join(PERF_EVENTS), "-p", str(os.getpid())],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.05)
    calls, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        run()
        calls += 1
    proc.send_signal(2)
    _, err = proc.communicate(timeout=10)
    counts = {}
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].replace(".", "").isdigit():
            counts[fields[2]] = float(fields[0]) / max(calls, 1)
    return counts


class CpuProfiler(Profiler):
    name = "roofline+perf"

    def profile(self, request: ProfileRequest) -> d.Metrics:
        metrics = roofline_metrics(request)
        metrics[d.PARALLEL_UNITS_USED] = float(request.parameters.get("threads", request.facts.parallel_units))
        ok, why = perf_status()
        if not ok:
            metrics["counters"] = f"unavailable: {why}"
            return metrics
        counts = _perf_counters(request.run, 0.3)
        if counts.get("cycles"):
            metrics["ipc"] = counts.get("instructions", 0.0) / counts["cycles"]
        if counts.get("cache-references"):
            metrics["cache_miss_rate"] = counts.get("cache-misses", 0.0) / counts["cache-references"]
        metrics["counters"] = "perf"
        return metrics
