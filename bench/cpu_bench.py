"""CPU benchmark: search each catalog op, then re-time the best kernel interleaved with PyTorch eager and
torch.compile, and write a table with machine, versions and date.

    python bench/cpu_bench.py [--ops softmax layer_norm ...] [--budget 16] [--out bench/results]

Writes ``<out>/cpu/kernels.md`` and ``.json``.

Speedups are medians of per-sample ratios (kernel and baselines sampled round-robin in one process), with
their 10th..90th percentile spread. Every number in the table comes from this script's own run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import kevolve
import torch
from kevolve.harness.pipeline import HarnessConfig
from kevolve.plugins import get_manager
from layout import RESULTS, result_path
from report import fmt_speedup, fmt_time, malloc_setting, search_and_time, with_caching_malloc


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    import numba

    registered = get_manager().target("cpu")
    facts = registered.backend.facts(registered.spec)
    return {"cpu": model, "cores": facts.parallel_units, "python": platform.python_version(),
            "torch": torch.__version__, "numba": numba.__version__, "g++": gxx, "kevolve": kevolve.__version__,
            "dram_copy_gbps": round(facts.memory[-1].bandwidth_bytes_per_s / 1e9, 1),
            "peak_fp32_gflops": round(facts.peak_flops["float32"] / 1e9, 1),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def table(rows: list[dict], info: dict, budget: int, command: str) -> str:
    lines = [
        "# kevolve on the CPU target: best kernel found vs PyTorch eager and torch.compile", "",
        f"Machine: {info['cpu']}, {info['cores']} cores (measured: DRAM copy {info['dram_copy_gbps']} GB/s, "
        f"FMA peak {info['peak_fp32_gflops']} GFLOP/s fp32). Python {info['python']}, torch {info['torch']}, "
        f"numba {info['numba']}, {info['g++']}, malloc: {malloc_setting()}. Date: {info['date']}.", "",
        f"Command: `{command}`. Search budget {budget} candidates per op (seed 0); "
        "then the best kernel is re-timed with eager and torch.compile (default mode) interleaved in one worker "
        "process. Times in ms per call: median [p10..p90]; speedups: median of per-sample ratios [p10..p90]. "
        "Output allocation is timed on every side.", "",
        "| op | shape | dtype | eager ms | torch.compile ms | kevolve ms | vs eager | vs compile | candidates | best |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        if "timings" not in r:
            lines.append(f"| {r['op']} | {shape} | {r['dtype']} | | | no correct kernel | | | {r['candidates']} | |")
            continue
        t, s = r["timings"], r["speedups"]
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
        lines.append(f"| {r['op']} | {shape} | {r['dtype']} | {fmt_time(t['eager'])} | {fmt_time(t['compile'])} | "
                     f"{fmt_time(t['kernel'])} | {fmt_speedup(s['eager'])} | {fmt_speedup(s['compile'])} | "
                     f"{r['candidates']} | {r['recipe']}: {params} |")
    lines += ["", "Diagnoses of the best kernels:", ""]
    lines += [f"- {r['op']}: {r.get('diagnosis', '')}" for r in rows if "timings" in r]
    return "\n".join(lines) + "\n"


def main() -> int:
    with_caching_malloc()  # as the committed table was made: see report.CACHING_MALLOC
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", nargs="*", default=get_manager().ops.names())
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    info = machine()
    harness = HarnessConfig(repeats=21, timeout_s=600)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for op in args.ops:
            rows.append(search_and_time(op, "cpu", args.budget, Path(tmp) / "bench.sqlite", harness))
            r = rows[-1]
            print(op, r["correct"], {k: round(v["median"], 2) for k, v in r.get("speedups", {}).items()},
                  f"{r['search_s']:.0f}s", file=sys.stderr, flush=True)
    command = " ".join(["python", "bench/cpu_bench.py", *sys.argv[1:]])
    result_path(args.out, "kernels", ".json", "cpu").write_text(
        json.dumps({"machine": info, "budget": args.budget, "command": command, "rows": rows}, indent=1))
    text = table(rows, info, args.budget, command)
    result_path(args.out, "kernels", ".md", "cpu").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
