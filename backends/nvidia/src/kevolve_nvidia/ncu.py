"""Nsight Compute adapter: hardware counters of one kernel call, read in a process of its own.

ncu profiles whole processes, so the call is rebuilt in a child (``python -m kevolve_nvidia.ncu_target``)
from the artifact and the problem spec: one warm-up call (Triton compiles at first launch), then the
profiled call inside an NVTX range named ``kevolve``, the only one ncu profiles. Clocks are left as they are
(``--clock-control none``) so durations match normal runs.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kevolve import diagnosis as d
from kevolve.backend.profiler import Profiler, ProfileRequest, roofline_metrics

METRICS = {
    "gpu__time_duration.sum": "duration",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "launch__registers_per_thread": "registers",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
}
#: ncu scales byte counts to a readable unit per value unless told ``--print-units base``
BYTE_UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
TIMEOUT_S = 180
#: metric keys this adapter adds to the vendor-neutral ones
DRAM_FRACTION, SM_FRACTION, NCU_DURATION_S, L2_HIT = "dram_fraction", "sm_fraction", "ncu_duration_s", "l2_hit_rate"
#: bytes read from plus written to DRAM, as counted (whole sectors, whatever the kernel used of them)
DRAM_BYTES = "dram_bytes"


def find_ncu() -> str | None:
    for candidate in (os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def parse_ncu_csv(text: str) -> list[dict[str, float]]:
    """One dict per profiled launch, metric values in SI units (durations in seconds, percentages 0..1)."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError(f"ncu printed no metrics table:\n{text[-2000:]}")
    launches: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        name = METRICS.get(row.get("Metric Name", ""))
        if name is None:
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "")
        if name == "duration":
            value *= {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}.get(unit, 1e-9)
        elif name.endswith("_pct"):
            value /= 100.0
        elif name.endswith("_bytes"):
            if unit not in BYTE_UNITS:
                raise ValueError(f"ncu reported {row['Metric Name']} in an unknown unit {unit!r}")
            value *= BYTE_UNITS[unit]
        launches.setdefault(row["ID"], {"kernel": row.get("Kernel Name", "")})[name] = value
    return list(launches.values())


def combine(launches: list[dict]) -> dict[str, float]:
    """A call's counters from its launches: durations and bytes add, rates are duration-weighted."""
    total = sum(launch.get("duration", 0.0) for launch in launches) or 1e-12
    out = {"duration": sum(launch.get("duration", 0.0) for launch in launches)}
    for key in ("dram_pct", "sm_pct", "occupancy_pct", "l2_hit_pct"):
        out[key] = sum(launch.get(key, 0.0) * launch.get("duration", 0.0) for launch in launches) / total
    out["registers"] = max(launch.get("registers", 0.0) for launch in launches)
    out["dram_bytes"] = sum(launch.get("dram_read_bytes", 0.0) + launch.get("dram_write_bytes", 0.0)
                            for launch in launches)
    return out


class NcuProfiler(Profiler):
    name = "ncu"
    #: a process started under ncu and its replayed passes: 8-15 s of the device a candidate on a lent H200
    costly = True

    def available(self) -> tuple[bool, str]:
        if find_ncu() is None:
            return False, "Nsight Compute (ncu) not found: install it with the CUDA toolkit or set NCU=/path/to/ncu"
        return True, ""

    def profile(self, request: ProfileRequest) -> d.Metrics:
        metrics = roofline_metrics(request)
        workdir = Path(request.artifact).parent
        task = workdir / "ncu_task.json"
        task.write_text(json.dumps({"artifact": request.artifact, "language": request.language or "triton",
                                    "problem": request.problem_spec,
                                    "bootstrap": request.bootstrap}, default=str))
        command = [find_ncu(), "--csv", "--print-units", "base", "--clock-control", "none",
                   "--metrics", ",".join(METRICS), "--nvtx", "--nvtx-include", "kevolve/",
                   sys.executable, "-m", "kevolve_nvidia.ncu_target", str(task)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
            counters = combine(parse_ncu_csv(proc.stdout))
        except (subprocess.TimeoutExpired, ValueError, OSError) as exc:
            metrics["profiler_error"] = f"ncu failed, roofline only: {exc}"[:500]
            return metrics
        metrics.update({
            NCU_DURATION_S: counters["duration"], DRAM_FRACTION: counters["dram_pct"],
            SM_FRACTION: counters["sm_pct"], d.OCCUPANCY: counters["occupancy_pct"], L2_HIT: counters["l2_hit_pct"],
            d.REGISTERS: counters["registers"], DRAM_BYTES: counters["dram_bytes"],
        })
        return metrics
