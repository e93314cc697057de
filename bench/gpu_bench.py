"""GPU benchmark for the NVIDIA targets: the whole evaluation in one call, tables written under --out.

    python bench/gpu_bench.py --target nvidia_h100 --out $OUT [--cases key|catalog|verdicts|all] [--deadline-s 540]

1. Device-to-device copy bandwidth, measured first (a 1 GiB tensor copied with ``copy_``; bytes read plus
   written over the median of 30 event-timed copies): the yardstick for memory-bound kernels.
2. Searches: each case (op, shape, dtype) is searched on the target, then its best kernel is re-timed
   interleaved with PyTorch eager and torch.compile (default mode) in one worker process: medians of
   per-sample ratios with their p10..p90 spread. Each timed call starts with L2 evicted.
3. Verdicts: a few searches profiled with Nsight Compute, keeping every node's diagnosis and what the search
   changed next (the child's note), to show the search acting on ncu verdicts.

torch.compile baselines are compiled once ahead, in parallel worker processes (warming Inductor's caches), so
that the re-timing does not spend minutes compiling. Rows are appended to ``gpu_rows.jsonl`` as they finish:
a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch
from kevolve import diagnosis as d
from kevolve.harness.pipeline import HarnessConfig
from report import fmt_speedup, fmt_time, search_and_time

ROWS = [({"rows": 16384, "cols": 1024}, "float32"), ({"rows": 65536, "cols": 256}, "bfloat16"),
        ({"rows": 4096, "cols": 4096}, "bfloat16")]
#: the issue's headline ops at production-like shapes
KEY = [(op, dims, dtype) for op in ("softmax", "layer_norm", "rms_norm") for dims, dtype in ROWS] + [
    ("feature_hash", {"n": 1 << 24}, "int64"),
    ("jagged_truncate", {"batch": 65536, "max_len": 128}, "float32"),
    ("embedding_bag", {"vocab": 1_000_000, "dim": 128, "bags": 65536, "pool": 20}, "float32"),
]
#: every other catalog op once, at a size that fills the GPU
CATALOG = [(op, {"n": 1 << 25}, "float32") for op in ("exp", "sigmoid", "tanh", "relu", "gelu", "silu", "add", "mul")] + [
    (op, {"rows": 16384, "cols": 2048}, "float32") for op in ("sum", "mean", "amax")] + [
    ("log_softmax", {"rows": 16384, "cols": 1024}, "float32"),
    ("cumsum", {"rows": 16384, "cols": 1024}, "float32"),
    ("matmul", {"m": 4096, "n": 4096, "k": 4096}, "bfloat16"),
    ("addmm_relu", {"m": 4096, "n": 4096, "k": 4096}, "bfloat16"),
    ("gather", {"rows": 16384, "cols": 1024, "k": 256}, "float32"),
    ("bucketize", {"n": 1 << 24, "boundaries": 1024}, "float32"),
]
#: searched with ncu as the profiler, for its verdicts
VERDICTS = [("softmax", {"rows": 16384, "cols": 4096}, "float32"),
            ("matmul", {"m": 4096, "n": 4096, "k": 4096}, "bfloat16"),
            ("rms_norm", {"rows": 256, "cols": 1024}, "float32")]


def device_info(target: str) -> dict:
    import triton

    props = torch.cuda.get_device_properties(0)
    return {"target": target, "gpu": props.name, "sms": props.multi_processor_count,
            "memory_gib": round(props.total_memory / 2**30, 1), "python": platform.python_version(),
            "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 30) -> float:
    """Bytes read plus written per second by a device-to-device copy (median of ``repeats``)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * nbytes / sorted(times)[len(times) // 2]


def warm_compile(case: tuple[str, dict, str]) -> str:
    """Compile the case's torch.compile baseline once, in a worker process, so later runs hit the cache."""
    from kevolve.api import resolve_problem

    op, dims, dtype = case
    problem = resolve_problem(op, dims, dtype, None)
    inputs = [t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    compiled = torch.compile(lambda *xs: problem.reference(list(xs)))
    started = time.perf_counter()
    try:
        compiled(*inputs)
        torch.cuda.synchronize()
    except Exception as exc:  # the re-timing reports it; warming is only a head start
        return f"{op} {dtype}: torch.compile failed: {type(exc).__name__}: {str(exc)[:200]}"
    return f"{op} {dtype}: compiled in {time.perf_counter() - started:.1f} s"


def run_case(job: tuple) -> dict | None:
    """One search in a pool worker, with its own store. Searches overlap their compiles and correctness
    checks; the harness gives each timing and profiling stage the GPU alone."""
    (op, dims, dtype), target, budget, profiler, deadline = job
    if time.time() > deadline:
        print(f"deadline: skipped {op} {dims} {dtype}", flush=True)
        return None
    os.environ["KEVOLVE_NVIDIA_PROFILER"] = profiler
    with tempfile.TemporaryDirectory() as tmp:
        row = search_and_time(op, target, budget, Path(tmp) / "store.sqlite", HarnessConfig(repeats=21, timeout_s=600),
                              dims=dims, dtype=dtype)
    row["profiler"] = profiler
    return row


def bandwidth_fraction(row: dict, copy_bps: float) -> float | None:
    achieved = row.get("metrics", {}).get(d.ACHIEVED_BANDWIDTH)
    return achieved / copy_bps if isinstance(achieved, (int, float)) else None


def table(rows: list[dict], info: dict, copy_bps: float, budgets: dict) -> str:
    lines = [
        f"# kevolve on {info['target']}: best Triton kernel vs PyTorch eager and torch.compile", "",
        f"GPU: {info['gpu']} ({info['sms']} SMs, {info['memory_gib']} GiB). Python {info['python']}, torch "
        f"{info['torch']}, triton {info['triton']}, CUDA {info['cuda']}. Date: {info['date']}.", "",
        f"Device-to-device copy measured in the same run: {copy_bps / 1e12:.2f} TB/s (bytes read + written).", "",
        f"Command: `python bench/gpu_bench.py --target {info['target']} --cases all`. Budgets: {budgets}. "
        "Times in ms per call, median [p10..p90], each call on a cold L2; speedups are medians of per-sample "
        "ratios [p10..p90], kernel and baselines sampled round-robin in one worker. `BW` is the kernel's "
        "minimum bytes over its median time as a fraction of the copy bandwidth (memory-bound kernels only).", "",
        "| op | shape | dtype | eager ms | torch.compile ms | kevolve ms | vs eager | vs compile | BW | verdict | "
        "best |", "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        if "timings" not in r:
            lines.append(f"| {r['op']} | {shape} | {r['dtype']} | | | no correct kernel | | | | | |")
            continue
        t, s = r["timings"], r["speedups"]
        frac = bandwidth_fraction(r, r.get("copy_bytes_per_s", copy_bps))
        bw = f"{frac:.0%}" if frac is not None and r.get("diagnosis_kind") == d.MEMORY_BOUND else ""
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
        lines.append(f"| {r['op']} | {shape} | {r['dtype']} | {fmt_time(t['eager'])} | {fmt_time(t['compile'])} | "
                     f"{fmt_time(t['kernel'])} | {fmt_speedup(s['eager'])} | {fmt_speedup(s['compile'])} | {bw} | "
                     f"{r.get('diagnosis_kind', '')} | {r['recipe']}: {params} |")
    timed = [r for r in rows if "speedups" in r]
    if timed:
        geo = lambda key: math.exp(sum(math.log(r["speedups"][key]["median"]) for r in timed) / len(timed))
        lines += ["", f"Geometric mean over {len(timed)} rows: {geo('compile'):.2f}x vs torch.compile, "
                      f"{geo('eager'):.2f}x vs eager."]
    return "\n".join(lines) + "\n"


def verdict_table(rows: list[dict], info: dict) -> str:
    lines = ["# ncu verdicts and what the search did next", "",
             f"GPU: {info['gpu']}, torch {info['torch']}, triton {info['triton']}, {info['date']}. Searches run with "
             "Nsight Compute as the profiler (`KEVOLVE_NVIDIA_PROFILER=ncu`); each node's verdict is the NVIDIA "
             "classifier's reading of its counters, and a child's note says which knob the search moved and, when "
             "the move answered a verdict, which one (`after <verdict>`).", ""]
    for r in rows:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        lines += [f"## {r['op']} {shape} {r['dtype']}", "", f"Best kernel: {r.get('diagnosis', 'none')}", "",
                  "| node | parent | recipe | status | fitness | ncu verdict | what changed (note) |",
                  "|---|---|---|---|---|---|---|"]
        for n in r["tree"]:
            lines.append(f"| {n['node']} | {n['parent']} | {n['recipe']} | {n['status']} | {n['fitness']:.2f} | "
                         f"{n['diagnosis']} | {n['note']} |")
        lines.append("")
    return "\n".join(lines)


def write_tables(out: Path, target: str, info: dict, copy_bps: float, rows: list[dict], verdict_rows: list[dict],
                 budgets: dict, parts: list[dict] | None = None) -> str:
    text = table(rows, info, copy_bps, budgets)
    if parts:
        text += "\nThis table joins runs made back to back on one leased machine: " + "; ".join(
            f"{p['device']['date']}: {len(p['rows'])} rows, copy "
            + ("not recorded in that run, the next run's value used" if p.get("borrowed")
               else f"{p['copy_bytes_per_s'] / 1e12:.2f} TB/s") for p in parts) + ".\n"
    (out / f"{target}.md").write_text(text)
    (out / f"{target}.json").write_text(json.dumps({"device": info, "copy_bytes_per_s": copy_bps, "rows": rows,
                                                     "verdicts": verdict_rows, "budgets": budgets, "parts": parts or []}, default=str))
    if verdict_rows:
        (out / f"{target}_verdicts.md").write_text(verdict_table(verdict_rows, info))
    return text


def load_part(path: Path, target: str) -> dict:
    """One run's results: its final JSON, or, for a run cut short, the rows it appended as it went (and the
    device facts it wrote first, where the run got that far)."""
    final = path / f"{target}.json"
    if final.exists():
        return json.loads(final.read_text())
    read = lambda name: [json.loads(line) for line in (path / name).read_text().splitlines()  # noqa: E731
                         if line.strip()] if (path / name).exists() else []
    device = json.loads((path / "gpu_device.json").read_text()) if (path / "gpu_device.json").exists() else {}
    return {"device": device.get("device"), "copy_bytes_per_s": device.get("copy_bytes_per_s"),
            "rows": read("gpu_rows.jsonl"), "verdicts": read("gpu_verdicts.jsonl"), "budgets": {}}


def merge(paths: list[Path], out: Path, target: str) -> int:
    """Join parts of one evaluation. A part without its own device record (a run cut short before writing
    it) borrows the nearest part's and says so in the table."""
    parts = [load_part(p, target) for p in paths]
    known = [p for p in parts if p["device"]]
    rows, verdicts = [], []
    for part in parts:
        if not part["device"]:
            part["device"] = {**known[0]["device"], "date": "not recorded (same lease as " +
                              known[0]["device"]["date"] + ")"}
            part["copy_bytes_per_s"] = known[0]["copy_bytes_per_s"]
            part["borrowed"] = True
        for row in part["rows"] + part["verdicts"]:
            row["copy_bytes_per_s"] = part["copy_bytes_per_s"]
        rows += part["rows"]
        verdicts += part["verdicts"]
    budgets = {f"part {i + 1}": p.get("budgets") or "see note" for i, p in enumerate(parts)}
    summary = [{"device": p["device"], "copy_bytes_per_s": p["copy_bytes_per_s"], "rows": p["rows"],
                "borrowed": p.get("borrowed", False)} for p in parts]
    print(write_tables(out, target, known[0]["device"], known[0]["copy_bytes_per_s"], rows, verdicts, budgets,
                       summary))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="nvidia_h100")
    parser.add_argument("--out", default=os.environ.get("OUT", str(Path(__file__).parent / "results")))
    parser.add_argument("--cases", default="all", choices=("key", "catalog", "verdicts", "all"))
    parser.add_argument("--ops", nargs="*", help="only cases of these ops")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--verdict-budget", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=4, help="searches run at once (timing is exclusive)")
    parser.add_argument("--merge", nargs="*", help="combine the JSON results of earlier runs (one per part) into "
                        "one table under --out, instead of running")
    parser.add_argument("--deadline-s", type=float, default=1e9, help="start no new case after this many seconds")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        return merge([Path(m) for m in args.merge], out, args.target)
    info = device_info(args.target)
    copy_bps = copy_bandwidth()
    (out / "gpu_device.json").write_text(json.dumps({"device": info, "copy_bytes_per_s": copy_bps}))
    print(f"{info}\ncopy {copy_bps / 1e12:.2f} TB/s", flush=True)
    cases = {"key": KEY, "catalog": CATALOG, "verdicts": [], "all": KEY + CATALOG}[args.cases]
    verdicts = VERDICTS if args.cases in ("verdicts", "all") else []
    if args.ops:
        cases = [c for c in cases if c[0] in args.ops]
        verdicts = [c for c in verdicts if c[0] in args.ops]
    context = multiprocessing.get_context("spawn")
    warm_pool = context.Pool(min(8, len(cases) or 1))
    warming = warm_pool.map_async(warm_compile, cases)
    deadline = time.time() + args.deadline_s
    jobs = [(case, args.target, args.verdict_budget, "ncu", deadline) for case in verdicts]
    jobs += [(case, args.target, args.budget, "roofline", deadline) for case in cases]
    rows, verdict_rows = [], []
    with context.Pool(args.jobs) as pool:
        for row in pool.imap_unordered(run_case, jobs):
            if row is None:
                continue
            verdict = row.pop("profiler") == "ncu"
            (verdict_rows if verdict else rows).append(row)
            with (out / ("gpu_verdicts.jsonl" if verdict else "gpu_rows.jsonl")).open("a") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
            print(row["op"], row["shape"], row["dtype"], row["correct"],
                  {k: round(v["median"], 2) for k, v in row.get("speedups", {}).items()}, f"{row['search_s']:.0f}s",
                  row.get("diagnosis", "")[:200], flush=True)
    try:
        print("\n".join(warming.get(timeout=120)), flush=True)
    except Exception as exc:  # noqa: BLE001 - warming is a head start, never a reason to lose the table
        print(f"warming torch.compile baselines: {type(exc).__name__}: {exc}", flush=True)
    warm_pool.terminate()
    order = {(op, json.dumps(dims), dtype): i for i, (op, dims, dtype) in enumerate(cases + verdicts)}
    for collected in (rows, verdict_rows):
        collected.sort(key=lambda r: order.get((r["op"], json.dumps(r["shape"]), r["dtype"]), 0))
    budgets = {"search": args.budget, "ncu searches": args.verdict_budget}
    print(write_tables(out, args.target, info, copy_bps, rows, verdict_rows, budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
