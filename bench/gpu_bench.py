"""GPU benchmark for the NVIDIA targets: the whole evaluation in one call, tables written under --out.

    python bench/gpu_bench.py --target nvidia_h100 --out $OUT [--cases key|catalog|verdicts|all] [--deadline-s 540]
    (--shapes '[[op, dims, dtype], ...]' searches those cases instead)

1. Device-to-device copy bandwidth, measured first (a 1 GiB tensor copied with ``copy_``; bytes read plus
   written over the median of 30 event-timed copies): the yardstick for memory-bound kernels.
2. Searches: each case (op, shape, dtype) is searched on the target, then its best kernel is re-timed
   interleaved with PyTorch eager and torch.compile (default mode) in one worker process: medians of
   per-sample ratios with their p10..p90 spread. Each timed call starts with L2 evicted.
3. Verdicts: a few searches profiled with Nsight Compute, keeping every node's diagnosis and what the search
   changed next (the child's note), to show the search acting on ncu verdicts.
4. Quiet re-timing: once every search has finished (and the torch.compile warmers are gone), the search's best
   three kernels of each case are verified again on fresh inputs and timed one case at a time in this process,
   with the GPU runner's own ``time_interleaved`` (cold L2, each call between two device events after a GPU
   pre-roll that hides its host launch, round-robin with eager and torch.compile); the fastest is the row's kernel.
   During the searches the timing stage holds the GPU lock, but the other searches' correctness checks,
   compiles and torch.compile warm-ups still run on the GPU and CPUs, and a ~30 us kernel then measures up to
   2x slow (seen 2026-11-24: 28 us alone, 55-60 us in the search; the 2026-11-22 table had such numbers).
   ``retime`` also records each kernel's and eager's device time per call in a CUDA graph (``device_s``), and
   times a ``copy_`` of the row's minimum bytes in the same rounds (``same_bytes_copy``).
   The search-time numbers stay in the JSON (``search``). ``--no-retime`` skips this phase. With
   ``--retime-from DIR --add-finalists RECIPE ...`` an earlier run's rows are re-timed with those recipes'
   default points among their finalists (e.g. the CUDA C++ recipes, which searches before 2026-11-25 never ran).
5. DRAM traffic (``--traffic-from DIR``, a run of its own): each row's kernel and a copy kernel profiled once
   under Nsight Compute; ``--combine ... --traffic OUT [OUT ...]`` adds the table's `BW ncu` column (see
   ``traffic``). With ``--traffic-compile`` torch.compile's kernels are profiled the same way, and the run
   writes ``traffic.md``: each one's share of DRAM's peak beside the kernel's and the copy's.

torch.compile baselines are compiled once ahead, in parallel worker processes (warming Inductor's caches), so
that the re-timing does not spend minutes compiling. Rows are appended to ``gpu_rows.jsonl`` as they finish:
a run cut short keeps what it measured.

The tables go to ``<out>/<target>/kernels.md`` and ``.json`` (and ``verdicts.md``), as in ``bench/results``
(``layout.py``); a run's working files (``gpu_rows.jsonl``, ``gpu_device.json``, ``traffic.json``) stay in
``<out>`` itself.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from kevolve import diagnosis as d
from kevolve.harness.baselines import COMPILE_MODES
from kevolve.harness.pipeline import HarnessConfig
from kevolve_nvidia.backend import PROFILER_ENV
from layout import result_path
from report import fmt_speedup, fmt_time, search_and_time

#: the last two (a 16K-token batch at a 4096 hidden size, 128-256 MiB per tensor, more than L2 holds) added
#: 2026-11-24 after a probe of 7 shapes x 2 dtypes for rms_norm: the row ops' gains over torch.compile grow with
#: rows of 2K-4K elements when the matrix outgrows L2
ROWS = [({"rows": 16384, "cols": 1024}, "float32"), ({"rows": 65536, "cols": 256}, "bfloat16"),
        ({"rows": 4096, "cols": 4096}, "bfloat16"), ({"rows": 16384, "cols": 4096}, "bfloat16"),
        ({"rows": 16384, "cols": 4096}, "float32")]
#: the issue's headline ops at production-like shapes
KEY = [(op, dims, dtype) for op in ("softmax", "layer_norm", "rms_norm") for dims, dtype in ROWS] + [
    # 2^20 and 2^22 ids: 16384 and 65536 samples of 64 id features (added 2026-11-25)
    ("feature_hash", {"n": 1 << 20}, "int64"),
    ("feature_hash", {"n": 1 << 22}, "int64"),
    ("feature_hash", {"n": 1 << 24}, "int64"),
    ("feature_hash", {"n": 1 << 26}, "int64"),
    # a KeyedJaggedTensor hashed into per-feature tables (added 2026-11-26): 26 features (Criteo's count) of 20 ids
    # a sample on average at 4096-65536 samples (2-34 million ids), and 128 features of 8
    ("keyed_feature_hash", {"features": 26, "batch": 4096, "pool": 20}, "int64"),
    ("keyed_feature_hash", {"features": 26, "batch": 16384, "pool": 20}, "int64"),
    ("keyed_feature_hash", {"features": 26, "batch": 65536, "pool": 20}, "int64"),
    ("keyed_feature_hash", {"features": 128, "batch": 16384, "pool": 8}, "int64"),
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
    ("dot_interaction", {"batch": 65536, "features": 26, "dim": 128}, "bfloat16"),
    ("dot_interaction", {"batch": 16384, "features": 26, "dim": 128}, "float32"),
    ("target_attention", {"batch": 16384, "history": 128, "dim": 128}, "bfloat16"),
    ("target_attention", {"batch": 16384, "history": 128, "dim": 64}, "float32"),
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
    os.environ[PROFILER_ENV] = profiler
    with tempfile.TemporaryDirectory() as tmp:
        row = search_and_time(op, target, budget, Path(tmp) / "store.sqlite", HarnessConfig(repeats=21, timeout_s=600),
                              dims=dims, dtype=dtype)
    row["profiler"] = profiler
    return row


def bandwidth_fraction(row: dict, copy_bps: float) -> float | None:
    achieved = row.get("metrics", {}).get(d.ACHIEVED_BANDWIDTH)
    return achieved / copy_bps if isinstance(achieved, (int, float)) else None


def copy_fraction(row: dict, copy_bps: float) -> float | None:
    """The rate of the row's same-bytes ``copy_``, timed in its rounds, as a fraction of its run's copy bandwidth:
    what a call of the row's size reaches when it only moves its bytes, beside a row below the 80% goal."""
    copy, nbytes = row["timings"].get("copy"), row.get("bytes")
    if not copy or not nbytes:
        return None
    return 2 * copy_length(int(nbytes)) / copy["median"] / row.get("copy_bytes_per_s", copy_bps)


def ncu_fraction(row: dict, copy_ncu: dict | None) -> float | None:
    """The row's DRAM traffic rate under ncu over the copy's (see ``traffic``). The bytes are the larger of what
    DRAM counted and the op's minimum: output lines still dirty in L2 when a kernel ends are written back after
    it, uncounted (up to ~40 MB on an H100), while sectors fetched whole for scattered reads count in full."""
    found = row.get("traffic")
    copy_ncu = found and found.get("copy") or copy_ncu  # the copy profiled in the row's own traffic run
    if not found or not copy_ncu:
        return None
    return _ncu_rate(found, row.get("bytes") or 0.0) / _ncu_rate(copy_ncu, copy_ncu["bytes"])


def _ncu_rate(found: dict, minimum: float) -> float:
    return max(found["dram_bytes"], minimum) / found["duration_s"]


def _copy_note(copy_ncu: dict, when: str) -> str:
    return f"{_ncu_rate(copy_ncu, copy_ncu['bytes']) / 1e12:.2f} TB/s, measured {when}"


def table(rows: list[dict], info: dict, copy_bps: float, budgets: dict) -> str:
    copy_ncu = info.get("copy_ncu")
    autotune = any("max-autotune" in r.get("speedups", {}) or "max-autotune" in r.get("untimed_baselines", {})
                   for r in rows)
    same_size = any("copy" in r.get("timings", {}) for r in rows)
    lines = [
        f"# kevolve on {info['target']}: best kernel (Triton or CUDA C++) vs PyTorch eager and torch.compile", "",
        f"GPU: {info['gpu']} ({info['sms']} SMs, {info['memory_gib']} GiB). Python {info['python']}, torch "
        f"{info['torch']}, triton {info['triton']}, CUDA {info['cuda']}. Date: {info['date']}.", "",
        f"Device-to-device copy measured in the same run: {copy_bps / 1e12:.2f} TB/s (bytes read + written, a "
        "1 GiB copy, median of 30).", "",
        f"Command: `{info.get('command', 'python bench/gpu_bench.py --target ' + info['target'] + ' --cases all')}`. "
        f"Budgets (candidates per search, seed 0): {budgets}. "
        "Times in ms per call, median [p10..p90], each call on a cold, clean L2 (a read over twice the L2 before it; "
        "runs before 2026-11-26 20:20 UTC evicted with a write over it, whose dirty lines then cost each call up to "
        "6 us of write-back: bench/results/nvidia_h100/flush.md) and between "
        "two device events, its host launch hidden behind a GPU spin before the first event (TritonGpuRunner: a "
        "fixed 200k cycles in runs before 2026-11-25 07:20 UTC, since then at least twice the call's measured host "
        "side, and never less than 200k cycles before 2026-11-25 15:00 UTC, 800k since) so that the events time the "
        "device; speedups are medians of per-sample ratios [p10..p90], kernel and "
        "baselines sampled round-robin in one worker. Rows marked `q` were re-timed after all searches, one at a "
        "time with nothing else running (the search-time numbers are in the JSON); for them torch.compile is "
        "timed in a process of its own and `vs compile` is the ratio of the medians. `BW` is the kernel's minimum "
        "bytes (each input read once, each output written once; of what a gather picks, each distinct 32-byte "
        "sector, the least the memory moves, since 2026-11-27: the target's memory granule) over its median time, "
        "as a fraction of the copy "
        "bandwidth (above 100% where a call's last writes still sit in L2 when its end event fires, while the 1 GiB "
        "copy's rate includes all of its write-back); the 80% goal applies to the rows whose verdict is "
        "memory-bound. `BW graph` is the same bytes "
        "over the kernel's device time per call when replayed back to back from a CUDA graph over input sets "
        "larger than 4x L2 (no launch gap, no flush: the condition the copy itself is measured in); `vs eager, "
        "graph` is eager's device time over the kernel's, both measured that way." + (
            f" `BW ncu` is the DRAM traffic Nsight Compute counted for one call of the kernel (whole sectors, "
            f"caches flushed before it; never less than the op's minimum bytes: writes still in L2 at the end go "
            f"uncounted) over that call's duration, as a fraction of a 1 GiB copy kernel profiled the "
            f"same way in the same run ({info.get('traffic_copies') or _copy_note(copy_ncu, info['traffic_from'])}); "
            "blank where no run profiled the row's kernel."
            if copy_ncu else "") + (
            " `copy, same bytes` is the time per call of a `copy_` of the row's minimum bytes (half read, half "
            "written), timed in the same rounds as the kernel, over the kernel's: the kernel against moving its bytes "
            "and nothing else at that size (blank for rows of runs made before 2026-11-25 09:14 UTC). Since "
            f"2026-11-26 22:30 UTC the copy's length is rounded up to whole {COPY_GRANULE} bytes: a copy of another "
            "length takes a slower path (up to 40% slower on the H100, bench/results/nvidia_h100/copy_length.md), so "
            "in rows of earlier runs whose half-bytes are not such a multiple this column reads high."
            if same_size else "") + (
            f" `vs max-autotune` is torch.compile(mode=\"{COMPILE_MODES['max-autotune']}\") timed like "
            "torch.compile, where its autotuning finished within kevolve's compile-time limit (else the reason is "
            "in the JSON, `untimed_baselines`); with --combine, from the run that timed it." if autotune else ""), "",
        "| op | shape | dtype | eager ms | torch.compile ms | kevolve ms | vs eager | vs compile | "
        + ("vs max-autotune | " if autotune else "") + "BW | BW graph | BW ncu | "
        + ("copy, same bytes | " if same_size else "") + "vs eager, graph | verdict | best |",
        "|---" * (14 + autotune + same_size) + "|",
    ]
    for r in rows:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        if "timings" not in r:
            lines.append(f"| {r['op']} | {shape} | {r['dtype']} | | | no correct kernel |"
                         + " |" * (8 + autotune + same_size))
            continue
        t, s = r["timings"], r["speedups"]
        frac = bandwidth_fraction(r, r.get("copy_bytes_per_s", copy_bps))
        bw = f"{frac:.0%}" if frac is not None else ""
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
        quiet = " q" if r.get("timed") == "quiet" else ""
        device = r.get("device_s", {}).get("kernel")
        graph = f"{r['bytes'] / device / r.get('copy_bytes_per_s', copy_bps):.0%}" if device and r.get("bytes") else ""
        eager_device = r.get("device_s", {}).get("eager")
        graph_eager = f"{eager_device / device:.2f}x" if device and eager_device else ""
        dram = ncu_fraction(r, copy_ncu)
        tuned = ""
        if autotune:
            tuned = (fmt_speedup(s["max-autotune"]) if "max-autotune" in s else "not timed") + " | "
        copied = ""
        if same_size:
            copied = (f"{t['copy']['median'] / t['kernel']['median']:.0%}" if "copy" in t else "") + " | "
        compiled = (fmt_time(t["compile"]), fmt_speedup(s["compile"])) if "compile" in s else ("not timed",) * 2
        lines.append(f"| {r['op']} | {shape} | {r['dtype']} | {fmt_time(t['eager'])} | {compiled[0]} | "
                     f"{fmt_time(t['kernel'])}{quiet} | {fmt_speedup(s['eager'])} | {compiled[1]} | "
                     f"{tuned}{bw} | {graph} | {'' if dram is None else f'{dram:.0%}'} | {copied}{graph_eager} | "
                     f"{r.get('diagnosis_kind', '')} | {r['recipe']}: {params} |")
    timed = [r for r in rows if "speedups" in r]
    if timed:
        geo = lambda key: statistics.geometric_mean(r["speedups"][key]["median"] for r in timed  # noqa: E731
                                                    if key in r["speedups"])
        untimed = sum("compile" not in r["speedups"] for r in timed)
        lines += ["", f"Geometric mean over {len(timed)} rows: {geo('compile'):.2f}x vs torch.compile"
                      + (f" (over the {len(timed) - untimed} where it was timed)" if untimed else "")
                      + f", {geo('eager'):.2f}x vs eager."]
        tuned_rows = [r["speedups"]["max-autotune"]["median"] for r in timed if "max-autotune" in r["speedups"]]
        if tuned_rows:
            lines.append(f"Over the {len(tuned_rows)} rows where max-autotune was timed: "
                         f"{statistics.geometric_mean(tuned_rows):.2f}x vs max-autotune.")
        memory = [(r, bandwidth_fraction(r, r.get("copy_bytes_per_s", copy_bps))) for r in timed
                  if r.get("diagnosis_kind") == d.MEMORY_BOUND]
        memory = [(r, f) for r, f in memory if f is not None]
        name = lambda r: f"{r['op']} {r['dtype']} {'x'.join(str(v) for v in r['shape'].values())}"  # noqa: E731

        def below(pairs: list[tuple[dict, float]], note=lambda r: "") -> list[str]:
            # one decimal: a row at 79.9% is below the goal and must not read 80%
            return [f"{name(r)} ({f:.1%}{note(r)})" for r, f in pairs if f < 0.8]

        def same_bytes_note(r: dict) -> str:
            fraction = copy_fraction(r, copy_bps)
            return f"; a `copy_` of its bytes {fraction:.1%}" if fraction else ""

        if memory:
            low = below(memory, same_bytes_note)
            lines += ["", f"Memory-bound rows (classifier verdict) at >= 80% of the copy bandwidth, per call (`BW`): "
                          f"{len(memory) - len(low)} of {len(memory)}" + (f"; below: {', '.join(low)}." if low else ".")]
            graphed = [(r, r["bytes"] / r["device_s"]["kernel"] / r.get("copy_bytes_per_s", copy_bps))
                       for r, _ in memory if r.get("device_s", {}).get("kernel") and r.get("bytes")]
            if graphed:
                low = below(graphed)
                lines.append(f"By device time in a CUDA graph (`BW graph`): {len(graphed) - len(low)} of {len(graphed)}"
                             + (f"; below: {', '.join(low)}." if low else "."))
            counted = [(r, f) for r, _ in memory if (f := ncu_fraction(r, copy_ncu)) is not None]
            if counted:
                low = below(counted)
                lines.append(f"By the DRAM traffic ncu counted (`BW ncu`): {len(counted) - len(low)} of "
                             f"{len(counted)}" + (f"; below: {', '.join(low)}." if low else "."))
        at_copy = [name(r) for r in timed if "copy" in r["timings"] and "compile" in r["timings"]
                   and r["timings"]["compile"]["median"] <= 1.05 * r["timings"]["copy"]["median"]]
        if at_copy:
            lines += ["", f"torch.compile within 5% of a copy of the same bytes per call, or faster ({len(at_copy)} "
                          f"rows; a kernel that beats it there has to move its bytes faster than `copy_` does): "
                          f"{', '.join(at_copy)}."]
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
        text += "\nThis table joins these runs, each row's `BW` against its own run's copy: " + "; ".join(
            f"{p['device']['date']}: {len(p['rows'])} row{'' if len(p['rows']) == 1 else 's'}"
            + (f" (`{p['device']['command']}`)" if p["device"].get("command") else "") + ", copy "
            + ("not recorded in that run, the next run's value used" if p.get("borrowed")
               else f"{p['copy_bytes_per_s'] / 1e12:.2f} TB/s") for p in parts) + ".\n"
    text += runs_listing(rows)
    result_path(out, "kernels", ".md", target).write_text(text)
    result_path(out, "kernels", ".json", target).write_text(json.dumps(
        {"device": info, "copy_bytes_per_s": copy_bps, "rows": rows, "verdicts": verdict_rows, "budgets": budgets,
         "parts": parts or []}, default=str))
    if verdict_rows:
        result_path(out, "verdicts", ".md", target).write_text(verdict_table(verdict_rows, info))
    return text


def runs_listing(rows: list[dict]) -> str:
    """Each re-timing run's ratio for the rows that ``combine`` took as a median of several, so that a merged
    table keeps them too."""
    combined = [r for r in rows if r.get("runs_vs_compile")]
    if not combined:
        return ""
    lines = ["", "vs torch.compile in each run (in run order; the row above is the median run's):", ""]
    lines += [f"- {r['op']} {' '.join(f'{k}={v}' for k, v in r['shape'].items())} {r['dtype']}: "
              + ", ".join(f"{x:.2f}x" for x in r["runs_vs_compile"]) for r in combined]
    return "\n".join(lines) + "\n"


def load_part(path: Path, target: str) -> dict:
    """One run's results: its final JSON, or, for a run cut short, the rows it appended as it went (and the
    device facts it wrote first, where the run got that far). Also a results file itself, or one of the tables
    of a file that keeps several (``FILE.json#TABLE``, as bench/results/nvidia_h100/narrow_rows.json), so that
    committed tables can be re-timed without the run directories they were joined from. A directory's table is
    ``<target>/kernels.json`` in it (``bench/results`` too), or ``<target>.json`` in a run made before that
    layout."""
    file, _, table = str(path).partition("#")
    if file.endswith(".json"):
        loaded = json.loads(Path(file).read_text())
        if table and table not in loaded:
            raise SystemExit(f"{file} has no table {table!r}; it has: {', '.join(loaded)}")
        return loaded[table] if table else loaded
    for final in (result_path(path, "kernels", ".json", target, make=False), path / f"{target}.json"):
        if final.exists():
            return json.loads(final.read_text())
    read = lambda name: [json.loads(line) for line in (path / name).read_text().splitlines()  # noqa: E731
                         if line.strip()] if (path / name).exists() else []
    device = json.loads((path / "gpu_device.json").read_text()) if (path / "gpu_device.json").exists() else {}
    return {"device": device.get("device"), "copy_bytes_per_s": device.get("copy_bytes_per_s"),
            "rows": read("gpu_rows.jsonl"), "verdicts": read("gpu_verdicts.jsonl"), "budgets": {}}


def _case(row: dict) -> tuple[str, str, str]:
    return row["op"], json.dumps(row["shape"], sort_keys=True), row["dtype"]


def _case_of(case: tuple[str, dict, str]) -> tuple[str, str, str]:
    """The key of a case list's (op, dims, dtype) entry, the same as ``_case`` of its row."""
    op, dims, dtype = case
    return _case({"op": op, "shape": dims, "dtype": dtype})


def _catalog_order(rows: list[dict]) -> None:
    """Sort rows as the case lists run them (key ops first)."""
    order = {_case_of(case): i for i, case in enumerate(KEY + CATALOG)}
    rows.sort(key=lambda r: order.get(_case(r), len(order)))


def _measured(row: dict) -> bool:
    """Whether a re-timing run measured this row against torch.compile: one whose re-timing failed keeps the
    search-time numbers it was loaded with, which are not that run's."""
    return "compile" in row.get("speedups", {}) and "retime_error" not in row


def combine(paths: list[Path], out: Path, target: str, traffic_paths: list[Path] | None = None) -> int:
    """Several re-timings of the same rows (``--retime-from`` runs) -> one table. Per case, the row of the run
    whose speedup over torch.compile is the median of the runs' is shown, whole (its times, its run's copy
    bandwidth): a run disturbed by something else on the GPU moves single rows by up to 3x (seen 2026-11-24:
    layer_norm at 26% of the copy bandwidth in one run, 79-84% in the others), and the median of three is robust
    to one such run. Every run's ratio is listed under the table."""
    runs = [load_part(p, target) for p in paths]
    by_case: dict[tuple, list[dict]] = {}
    for run in runs:
        for row in run["rows"]:
            if _measured(row):
                by_case.setdefault(_case(row), []).append({**row, "copy_bytes_per_s": run["copy_bytes_per_s"]})
    rows = []
    for case_rows in by_case.values():
        ranked = sorted(case_rows, key=lambda r: r["speedups"]["compile"]["median"])
        row = {**ranked[(len(ranked) - 1) // 2],
               "runs_vs_compile": [r["speedups"]["compile"]["median"] for r in case_rows]}
        # max-autotune may be timed in one run only (minutes of autotuning per op): its ratio comes from that run
        tuned = next((r for r in case_rows if "max-autotune" in r["speedups"]), None)
        if tuned and "max-autotune" not in row["speedups"]:
            row["speedups"] = {**row["speedups"], "max-autotune": tuned["speedups"]["max-autotune"]}
            row["timings"] = {**row["timings"], "max-autotune": tuned["timings"]["max-autotune"]}
        rows.append(row)
    _catalog_order(rows)
    info = {**runs[-1]["device"], "command": "python bench/gpu_bench.py --combine " + " ".join(map(str, paths))
            + (" --traffic " + " ".join(map(str, traffic_paths)) if traffic_paths else "")}
    if traffic_paths:
        attach_traffic(rows, info, traffic_paths)
    summary = [{"device": r["device"], "copy_bytes_per_s": r["copy_bytes_per_s"], "rows": r["rows"]} for r in runs]
    text = write_tables(out, target, info, runs[-1]["copy_bytes_per_s"], rows, [], runs[-1].get("budgets") or {},
                        summary)
    run_means = [statistics.geometric_mean(x["speedups"]["compile"]["median"] for x in run["rows"] if _measured(x))
                 for run in runs]
    means = ("\nGeometric mean vs torch.compile of each run alone: "
             + ", ".join(f"{mean:.3f}x ({run['device']['date']})" for mean, run in zip(run_means, runs)) + ".\n")
    with result_path(out, "kernels", ".md", target).open("a") as md:
        md.write(means)
    print(text + means)
    return 0


def merge(paths: list[Path], out: Path, target: str, keep_cases: bool = False) -> int:
    """Join parts of one evaluation; a case searched in more than one part keeps the latest part's row (a
    re-search after a recipe changed). With ``keep_cases`` the table has the first part's cases only, and later
    parts just replace some of them (a re-search of a few rows that also searched other cases). A row that
    carries its own run's copy bandwidth (one ``combine`` took from one of several runs) keeps it. A part without
    its own device record (a run cut short before writing it) borrows the nearest part's and says so in the
    table."""
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
            row.setdefault("copy_bytes_per_s", part["copy_bytes_per_s"])
        if keep_cases and rows:
            first_cases = {_case(old) for old in rows}
            part["rows"] = [r for r in part["rows"] if _case(r) in first_cases]
        replaced = {_case(new) for new in part["rows"]}
        rows = [r for r in rows if _case(r) not in replaced] + part["rows"]
        verdicts += part["verdicts"]
    _catalog_order(rows)
    budgets = {f"part {i + 1}": p.get("budgets") or "see note" for i, p in enumerate(parts)}
    summary = [{"device": p["device"], "copy_bytes_per_s": p["copy_bytes_per_s"], "rows": p["rows"],
                "borrowed": p.get("borrowed", False)} for p in parts]
    info = {**known[0]["device"], "command": "python bench/gpu_bench.py --merge " + " ".join(map(str, paths))
            + (" --keep-cases" if keep_cases else "")}
    copies = [p["device"]["traffic_copies"] for p in known if p["device"].get("traffic_copies")]
    if copies:  # each part's rows keep the copy profiled in their own run: the header names them all
        info["traffic_copies"] = "; ".join(dict.fromkeys(copies))
    print(write_tables(out, target, info, known[0]["copy_bytes_per_s"], rows, verdicts, budgets, summary))
    return 0


def gpu_runner(target: str = "nvidia_h100"):
    """The target's GPU runner as its backend makes it (its flush sized from the target's caches), for the
    scripts that time kernels outside a search."""
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    return registered.backend.runner(registered.spec)


def memory_granule(target: str = "nvidia_h100") -> int:
    """The target's memory granule (Problem.bytes_moved), for the scripts that count a row's minimum bytes
    outside a search."""
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    return registered.backend.facts(registered.spec).memory_granule_bytes


def load_kernel_file(source: str, tmp: Path, name: str):
    """Write a kernel file under ``tmp`` and load its launcher ``kernel`` as the NVIDIA runner does (a CUDA C++
    file's launcher then runs on PyTorch's current stream, else graph capture on a side stream fails)."""
    from kevolve.api import guess_language
    from kevolve.backend.toolchain import BuildResult
    from kevolve.plugins import get_manager
    from kevolve_nvidia.cuda_runner import NvidiaGpuRunner

    path = tmp / f"{name}.py"
    path.write_text(source)
    language = guess_language(path, source, get_manager().target("nvidia_h100"))
    return NvidiaGpuRunner().load(BuildResult(language=language, artifact=str(path)))


def capture(fn, calls: int = 1) -> torch.cuda.CUDAGraph:
    """A CUDA graph of ``fn(0) .. fn(calls - 1)``, after two warm-up calls on a side stream."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn(0)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    torch.cuda.synchronize()
    return graph


def stream_time(fn, sets: int, calls: int = 24, repeats: int = 15) -> float:
    """Device time per call of back-to-back calls replayed from one CUDA graph, call i on input/output set
    i % sets (sets sized so that every call reads from and writes to DRAM): the steady-state rate, as the
    copy bandwidth is measured (back-to-back copies, no flush)."""
    calls = sets * max(1, calls // sets)
    graph = capture(lambda i: fn(i % sets), calls)
    graph.replay()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / calls)
    return sorted(times)[len(times) // 2]


def dram_sets(nbytes: float) -> int:
    """How many input/output sets a graph of back-to-back calls cycles over (``stream_time``) so that every call
    reads from and writes to DRAM: together more than 4x L2, and never fewer than two."""
    return max(2, -(-4 * torch.cuda.get_device_properties(0).L2_cache_size // int(nbytes)) + 1)


def graph_sets(problem, inputs: list[torch.Tensor], gen: torch.Generator, sets: int,
               device: str = "cuda") -> tuple[list[list[torch.Tensor]], list[list[torch.Tensor]]]:
    """``sets`` input sets for back-to-back graph timing (``inputs``, then fresh draws from ``gen``) and an output
    set for each, sized for that set's own inputs. A jagged op's output length depends on its inputs' values (a
    keyed hash's ids, a truncation's kept items), so outputs sized for the first set let a kernel on another set
    write past their end: before 2026-11-27 that overwrote neighbouring memory, and a later row of the same
    process read corrupt inputs."""
    in_sets = [inputs] + [[t.to(device) for t in problem.make_inputs(problem.dims, gen)] for _ in range(sets - 1)]
    out_sets = [[torch.empty(shape, dtype=dtype, device=device) for shape, dtype in problem.output_specs(each)]
                for each in in_sets]
    return in_sets, out_sets


def when_capturable(timer, *args) -> float | None:
    """``timer(*args)``, or None where the function it times cannot be captured in a CUDA graph (a reference that
    reads a value-dependent size back to the host, as jagged_truncate's does): its quiet timing still stands."""
    try:
        return timer(*args)
    except RuntimeError as exc:
        print(f"  no CUDA graph: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
        torch.cuda.synchronize()
        return None


def graph_time(fn, sets: int) -> float | None:
    """stream_time where ``fn`` can be captured in a CUDA graph, else None."""
    return when_capturable(stream_time, fn, sets)


def same_bytes_copy(nbytes: int):
    """A thunk copying about ``nbytes`` // 2 bytes (read plus written: the row's minimum bytes) with ``copy_``,
    the copy the bandwidth yardstick uses: timed per call beside a row's kernel, it shows what moving that many
    bytes costs under the same flush, spin and launch, which the 1 GiB copy's rate says nothing about for rows
    of tens of MB (ramp-up, tail). Not a hard floor: below ~20 MB a fused kernel has been measured faster than
    ``copy_`` (bench/notes/nvidia_h100_more_shapes.md)."""
    return copy_thunk(copy_length(nbytes))


def copy_thunk(length: int):
    """A thunk that copies ``length`` bytes with ``copy_``."""
    # filled without the CUDA generator: a failed graph capture before (graph_time) leaves it unusable
    src = torch.full((length,), 7, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def interleaved_samples(runner, thunks: dict, rounds: int) -> dict[str, list[float]]:
    """Per-call samples (seconds) of each thunk from the runner's ``time_interleaved``, every thunk in every
    round: ten calls a sample, 11 samples a round."""
    samples = {name: [] for name in thunks}
    for _ in range(rounds):
        for name, values in runner.time_interleaved(thunks, repeats=11, inner={n: 10 for n in thunks}).items():
            samples[name] += values
    return samples


def write_report(out: Path, stem: str, lines: list[str], record: dict, target: str = "nvidia_h100") -> None:
    """``stem``.md (the lines) and ``stem``.json (the record) in ``target``'s folder under ``out``; the lines
    printed too."""
    result_path(out, stem, ".md", target).write_text("\n".join(lines) + "\n")
    result_path(out, stem, ".json", target).write_text(json.dumps(record))
    print("\n".join(lines))


def per_call_cell(samples: list[float]) -> tuple[float, str]:
    """The median of per-call samples (seconds) and its table cell: microseconds, median [p10..p90]."""
    tenths = statistics.quantiles(samples, n=10)
    median = statistics.median(samples)
    return median, f"{median * 1e6:.1f} [{tenths[0] * 1e6:.1f}..{tenths[-1] * 1e6:.1f}]"


def round_up(n: int, granule: int) -> int:
    return -(-n // granule) * granule


COPY_GRANULE = 4096


def copy_length(nbytes: int) -> int:
    """The bytes ``same_bytes_copy`` copies: half of ``nbytes``, rounded up to whole ``COPY_GRANULE``s. A device
    copy of another length can take a slower path: on the lent H100 a copy of 16,990,068 bytes (keyed_feature_hash
    at 2 million ids) took 15.1 us per call and one of 16,990,208 12.6 us; 7,843,172 bytes took 11.2 us, and 8.0
    only once rounded to whole 4 KiB (bench/results/nvidia_h100/copy_length.md). Rows with such byte counts then
    looked faster than a copy of their bytes; a few KiB more changes nothing else."""
    return max(1, round_up(nbytes // 2, COPY_GRANULE))


def target_recipe(problem, target: str, recipe_name: str | None = None):
    """The named recipe, or the target's first that supports ``problem`` (a Triton one), and the target's facts."""
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    recipes = registered.backend.recipes(registered.spec)
    recipe = next((r for r in recipes if r.supports(problem) and recipe_name in (None, r.name)), None)
    if recipe is None:
        raise SystemExit(f"no recipe {recipe_name or ''} for {problem.describe()} on {target} here: "
                         f"{', '.join(r.name for r in recipes if r.supports(problem)) or 'none supports it'}")
    return recipe, registered.backend.facts(registered.spec)


def default_point(problem, target: str, recipe_name: str | None = None) -> dict:
    """A finalist (recipe, parameters, source) at the default point of the named recipe, or of the target's
    first recipe that supports ``problem`` (a Triton one), rendered for ``target``."""
    recipe, facts = target_recipe(problem, target, recipe_name)
    params = recipe.space(problem, facts).default()
    return {"recipe": recipe.name, "parameters": params, "source": recipe.render(problem, params)}


def with_source(finalist: dict, problem, target: str) -> dict:
    """The finalist with its kernel source: a table joined by --combine keeps each finalist's recipe and
    parameters only, and the source is a function of them (rendered by today's recipe, which is what a
    re-timing is meant to measure)."""
    if not finalist.get("source"):
        recipe, _ = target_recipe(problem, target, finalist["recipe"])
        finalist["source"] = recipe.render(problem, finalist["parameters"])
    return finalist


def default_rows(cases: list[list], target: str) -> list[dict]:
    """Rows for ``retime`` without a search: per case ``[op, dims, dtype]`` or ``[op, dims, dtype, recipe]``, the
    ``default_point``. For shapes outside the case lists (where torch.compile stands against a copy of the
    same bytes there) and for recipes the searches did not pick, at the cost of a re-timing, not a search."""
    import kevolve

    rows = []
    for op, dims, dtype, *named in cases:
        point = default_point(kevolve.api.resolve_problem(op, dims, dtype, None), target, *named)
        rows.append({"op": op, "shape": dims, "dtype": dtype, "timings": {}, "recipe": point["recipe"],
                     "parameters": point["parameters"], "finalists": [point]})
    return rows


def add_finalists(rows: list[dict], target: str, recipe_names: list[str]) -> None:
    """Each named recipe's default point joins the finalists of every row it supports: an earlier run's
    searches re-timed against recipes they could not try (CUDA C++ before it ran on a GPU), the fastest
    finalist still the row's kernel. Rows made from a bare ``source`` keep it as their first finalist."""
    import kevolve
    from kevolve.plugins import get_manager

    registered = get_manager().target(target)
    recipes = {r.name: r for r in registered.backend.recipes(registered.spec)}
    missing = [name for name in recipe_names if name not in recipes]
    if missing:
        raise SystemExit(f"no recipe {', '.join(missing)} on {target} here (offered: {', '.join(recipes)})")
    for row in rows:
        problem = kevolve.api.resolve_problem(row["op"], row["shape"], row["dtype"], None)
        for name in recipe_names:
            if recipes[name].supports(problem):
                row["finalists"] = (row.get("finalists") or [{k: row[k] for k in ("recipe", "parameters", "source")}]) \
                    + [default_point(problem, target, name)]


def finalist_keys(finalists: list[dict]) -> list[str]:
    """Each finalist's name in a row's ``finalist_medians_s``: its parameters, and where another finalist has the
    same ones (``--add-finalists`` adds today's rendering of a point a search already timed), its place too, so
    that neither's time hides the other's."""
    names = [str(f["parameters"]) for f in finalists]
    return [f"{name} (finalist {j})" if names.count(name) > 1 else name for j, name in enumerate(names)]


def retime(rows: list[dict], target: str, stop_at: float, repeats: int = 41, inner: int = 10) -> None:
    """Phase 4 (module docstring): in this process, with no search running, verify the search's best few
    kernels (``finalists``) on fresh inputs and time them, eager and torch.compile with the GPU runner's own
    ``time_interleaved`` (L2 evicted before every call, each call between two device events after a GPU pre-roll
    that hides its host launch, round-robin), ``repeats`` samples of ``inner`` calls each. The fastest finalist
    is the row's kernel; its verdict is the target's classifier on the roofline metrics of that time. Also
    records each kernel's and eager's device time in a CUDA graph (``device_s``, see stream_time), and times a
    copy of the row's minimum bytes in the same rounds (``same_bytes_copy``)."""
    import kevolve
    from kevolve.backend.profiler import ProfileRequest, roofline_metrics
    from kevolve.delivery.op import op_name, register_kernel
    from kevolve.harness import checks
    from kevolve.harness.evaluation import Speedup, Timing
    from kevolve.plugins import get_manager
    from kevolve.problems.problem import dtype_name
    from kevolve.synthesis.base import source_hash

    registered = get_manager().target(target)
    backend, spec = registered.backend, registered.spec
    facts, classifier, runner = backend.facts(spec), backend.classifier(spec), backend.runner(spec)
    tmp = Path(tempfile.mkdtemp())
    for index, row in enumerate(rows):
        finalists = row.get("finalists") or ([{"recipe": row["recipe"], "parameters": row["parameters"],
                                               "source": row["source"]}] if row.get("source") else [])
        if "timings" not in row or not finalists:
            continue
        row.pop("timed", None)
        if time.time() > stop_at:
            print(f"retime deadline: {row['op']} {row['shape']} keeps its search-time numbers", flush=True)
            continue
        try:
            problem = kevolve.api.resolve_problem(row["op"], row["shape"], row["dtype"], None)
            gen = torch.Generator().manual_seed(index + 1)
            inputs = [t.cuda() for t in problem.make_inputs(problem.dims, gen)]
            expected = [t.cuda() for t in problem.reference(inputs)]
            tol = problem.tolerance(problem.dtype)
            kernels = {}
            for j, fin in enumerate(finalists):
                kernel = load_kernel_file(with_source(fin, problem, target)["source"], tmp, f"k{index}_{j}")
                for round_ in range(2):  # fresh inputs, poisoned outputs, as the harness checks
                    fresh = [t.cuda() for t in problem.make_inputs(problem.dims, gen)]
                    ref = [t.cuda() for t in problem.reference(fresh)]
                    out = checks.allocate_poisoned(ref, round_, "cuda")
                    kernel(fresh, out)
                    torch.cuda.synchronize()
                    bad = [checks.compare(o, r, tol, round_) for o, r in zip(out, ref)]
                    if any(b is not None for b in bad):
                        raise RuntimeError(f"finalist {j} ({fin['parameters']}) is wrong: {bad}")
                kernels[f"kernel{j}"] = kernel
            # each kernel as the op a user calls (result.as_torch_op()): its per-call path, output allocation and
            # any read that sizes an output (jagged_truncate's) included, as the harness times it.
            # No torch.compile in this process: once Inductor has run in a process, Triton launches there
            # measured slower per call (see compile_baselines); torch.compile is timed in a process of its own
            caller = len(inputs) - len(problem.extra_inputs())
            ops = {name: register_kernel(problem, k, "cuda", op_name(problem, target, source_hash(
                       with_source(finalists[int(name.removeprefix("kernel"))], problem, target)["source"])),
                       graphs="not checked (gpu_bench)") for name, k in kernels.items()}
            thunks = {name: (lambda op=op: op(*inputs[:caller])) for name, op in ops.items()}
            thunks.update(eager=lambda: problem.reference(inputs))
            nbytes = problem.bytes_moved(problem.dims, inputs, expected, facts.memory_granule_bytes)
            thunks["copy"] = same_bytes_copy(int(nbytes))
            for thunk in thunks.values():
                thunk()
            torch.cuda.synchronize()
            # as the harness: a call that reads the device to size its outputs is timed by the host's clock
            samples = runner.time_interleaved(thunks, repeats=repeats, inner={name: inner for name in thunks},
                                              host_clock=problem.value_sized)
            timings = {name: Timing.of(v) for name, v in samples.items()}
            best = min(kernels, key=lambda name: timings[name].median)
            fin = finalists[int(best.removeprefix("kernel"))]
            sets = dram_sets(nbytes)
            in_sets, _ = graph_sets(problem, inputs, gen, sets)
            device_s = {"kernel": graph_time(lambda i: ops[best](*in_sets[i][:caller]), sets),
                        "eager": graph_time(lambda i: problem.reference(in_sets[i]), sets)}
            request = ProfileRequest(run=thunks[best], time_s=timings[best].median, flops=problem.flops(problem.dims),
                                     bytes=nbytes, dtype=dtype_name(problem.dtype), facts=facts,
                                     parameters=fin["parameters"], resources=row.get("resources") or {},
                                     cold_cache=True)
            metrics = roofline_metrics(request)
            diagnosis = classifier.classify(metrics, facts, "roofline")
        except Exception as exc:  # noqa: BLE001 - the search-time numbers stay, with the reason
            row["retime_error"] = f"{type(exc).__name__}: {exc}"[:500]
            print(f"retime failed: {row['op']} {row['shape']}: {row['retime_error']}", flush=True)
            continue
        row.setdefault("search", {k: row.get(k) for k in ("timings", "speedups", "diagnosis", "diagnosis_kind", "metrics",
                                                 "recipe", "parameters")})
        if (row.get("traffic") or {}).get("source") != fin["source"]:
            row.pop("traffic", None)  # ncu profiled another kernel: its `BW ncu` is not this one's
        row.pop("runs_vs_compile", None)  # the earlier runs' ratios, timed another way
        row.update(timings={"kernel": vars(timings[best]), "eager": vars(timings["eager"]),
                            "copy": vars(timings["copy"])},
                   speedups={"eager": vars(Speedup.of(samples["eager"], samples[best]))},
                   finalist_medians_s={key: timings[f"kernel{j}"].median
                                       for j, key in enumerate(finalist_keys(finalists)) if f"kernel{j}" in timings},
                   recipe=fin["recipe"], parameters=fin["parameters"], source=fin["source"],
                   diagnosis=diagnosis.summary, diagnosis_kind=diagnosis.kind, metrics=metrics,
                   device_s=device_s, bytes=nbytes, timed="quiet")
        searched = row["search"]["timings"].get("kernel")  # none for rows made by hand from kernel sources
        print("retimed", row["op"], row["shape"], row["dtype"],
              f"{searched['median'] * 1e6 if searched else float('nan'):.1f} -> {timings[best].median * 1e6:.1f} us "
              f"(device {device_s['kernel'] or 0:.2e} s, eager {timings['eager'].median * 1e6:.1f} us / "
              f"{device_s['eager'] or 0:.2e} s)", fin["parameters"], diagnosis.summary[:120], flush=True)


def compile_baselines(rows_path: Path, out_path: Path, repeats: int = 41, inner: int = 10) -> None:
    """torch.compile of each row's reference, in each asked baseline mode ("compile", and "max-autotune" after
    kevolve's compile-time limit allowed it), timed alone in this process with the GPU runner's method; run in
    a child process so that Inductor never runs where the kernels are timed."""
    import kevolve
    from kevolve.harness.baselines import compile_within_limit, compiled_reference
    from kevolve.harness.evaluation import Timing
    from kevolve.harness.pipeline import HarnessConfig
    from kevolve.plugins import worker_bootstrap

    rows = json.loads(rows_path.read_text())
    runner = gpu_runner(rows["target"])
    limit_s = HarnessConfig().compile_limit_s
    results = {}
    for index, row in enumerate(rows["rows"]):
        results[str(index)] = {}
        for mode in row["modes"]:
            try:
                problem = kevolve.api.resolve_problem(row["op"], row["shape"], row["dtype"], None)
                if mode == "max-autotune":
                    why = compile_within_limit(problem.to_spec(), worker_bootstrap(), "cuda", mode, limit_s)
                    if why:
                        results[str(index)][mode] = {"error": why}
                        continue
                gen = torch.Generator().manual_seed(index + 1)
                inputs = [t.cuda() for t in problem.make_inputs(problem.dims, gen)]
                compiled = compiled_reference(problem, mode)
                compiled(*inputs)
                torch.cuda.synchronize()
                samples = runner.time_interleaved({mode: lambda compiled=compiled, inputs=inputs: compiled(*inputs)},
                                                  repeats=repeats, inner={mode: inner},
                                                  host_clock=problem.value_sized)
                results[str(index)][mode] = vars(Timing.of(samples[mode]))
            except Exception as exc:  # noqa: BLE001 - that row keeps its search-time numbers for this mode
                results[str(index)][mode] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            torch._dynamo.reset()
            out_path.write_text(json.dumps(results))  # after each timing: a run cut short keeps what it timed


def add_compile_baselines(rows: list[dict], target: str, max_autotune: list[str] | None = None) -> None:
    """Time torch.compile for the re-timed rows in a child process (compile_baselines) and add the columns:
    kernel and compile are then timed in different processes, so the speedup is the ratio of the medians,
    with [compile p10 / kernel p90 .. compile p90 / kernel p10] as its spread. With ``max_autotune`` (a list
    of ops; empty: all) the max-autotune mode too; a row whose autotuning passes kevolve's compile-time limit
    says so in ``untimed_baselines``."""
    import subprocess

    quiet = [r for r in rows if r.get("timed") == "quiet"]
    if not quiet:
        return

    def modes(row: dict) -> list[str]:
        tuned = max_autotune is not None and (not max_autotune or row["op"] in max_autotune)
        return ["compile", "max-autotune"] if tuned else ["compile"]

    with tempfile.TemporaryDirectory() as tmp:
        rows_path, out_path = Path(tmp) / "rows.json", Path(tmp) / "compile.json"
        rows_path.write_text(json.dumps({"target": target, "rows": [
            {**{k: r[k] for k in ("op", "shape", "dtype")}, "modes": modes(r)} for r in quiet]}))
        subprocess.run([sys.executable, __file__, "--compile-baselines", str(rows_path), str(out_path)], check=False)
        results = json.loads(out_path.read_text()) if out_path.exists() else {}
    for index, row in enumerate(quiet):
        for mode in modes(row):
            t = results.get(str(index), {}).get(mode, {"error": "no result"})
            if "error" in t:
                row.setdefault("untimed_baselines", {})[mode] = t["error"]
                if mode == "compile" and "compile" in row["search"]["timings"]:  # the search-time numbers stand in
                    row["timings"]["compile"] = row["search"]["timings"]["compile"]
                    row["speedups"]["compile"] = row["search"]["speedups"]["compile"]
                continue
            k = row["timings"]["kernel"]
            row["timings"][mode] = t
            row["speedups"][mode] = {"median": t["median"] / k["median"], "low": t["p10"] / k["p90"],
                                     "high": t["p90"] / k["p10"]}
            print(mode, row["op"], row["shape"], row["dtype"], f"{t['median'] * 1e6:.1f} us", flush=True)


#: the traffic phase's yardstick: torch's ``copy_`` between same-dtype tensors is a cudaMemcpy, which Nsight
#: Compute does not profile, so the copy is a kernel (16 KiB per program)
COPY_KERNEL = """import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def kernel(inputs, outputs):
    n = inputs[0].numel()
    _copy[(triton.cdiv(n, 4096),)](inputs[0], outputs[0], n, BLOCK=4096, num_warps=8)
"""


#: the traffic phase's torch.compile baseline as a kernel file, so that ncu profiles Inductor's kernels for one call
#: exactly as it profiles the row's kernel (the file calls PyTorch: a yardstick, never a candidate)
COMPILE_FILE = '''"""torch.compile (default mode) of {op} {shape} {dtype}: its kernels for one call"""
import kevolve
from kevolve.harness.baselines import compiled_reference

_compiled = compiled_reference(kevolve.api.resolve_problem({op!r}, {shape!r}, {dtype!r}, None), "compile")


def kernel(inputs, outputs):
    _compiled(*inputs)
'''


def traffic(rows: list[dict], target: str, compiled: bool = False) -> dict:
    """Phase 5 (``--traffic-from``): each row's kernel, and a 1 GiB copy, once each under Nsight Compute through
    the NVIDIA profiler adapter (caches flushed before the profiled call, clocks as they are): the DRAM bytes
    the call actually moved (whole 32-byte sectors) and its duration. Their rate over the copy's, measured the
    same way, is the table's `BW ncu`: where the minimum bytes undercount what DRAM must move (gather's random
    picks counted as elements, before the minimum counted the target's memory granule), it says how close the
    kernel keeps DRAM to the copy's pace.
    With ``compiled`` (``--traffic-compile``), torch.compile's kernels for the same call too (``COMPILE_FILE``):
    where a kernel only ties torch.compile, whether Inductor already keeps DRAM as busy as the copy does."""
    import kevolve
    from kevolve.backend.profiler import ProfileRequest
    from kevolve.plugins import get_manager, worker_bootstrap
    from kevolve.problems.problem import dtype_name
    from kevolve_nvidia.ncu import DRAM_BYTES, DRAM_FRACTION, NCU_DURATION_S, NcuProfiler

    profiler = NcuProfiler()
    ok, why = profiler.available()
    if not ok:
        raise SystemExit(f"--traffic-from needs Nsight Compute: {why}")
    registered = get_manager().target(target)
    facts = registered.backend.facts(registered.spec)
    tmp = Path(tempfile.mkdtemp())

    def measure(name: str, source: str, op: str, shape: dict, dtype: str, time_s: float) -> dict:
        problem = kevolve.api.resolve_problem(op, shape, dtype, None)
        (tmp / name).mkdir()
        artifact = tmp / name / "kernel.py"
        artifact.write_text(source)
        request = ProfileRequest(run=lambda: None, time_s=time_s, flops=problem.flops(problem.dims), bytes=0.0,
                                 dtype=dtype_name(problem.dtype), facts=facts, parameters={}, resources={},
                                 cold_cache=True, artifact=str(artifact), problem_spec=problem.to_spec(),
                                 bootstrap=worker_bootstrap())
        metrics = profiler.profile(request)
        if DRAM_BYTES not in metrics:
            return {"error": metrics.get("profiler_error", "ncu reported no DRAM bytes")}
        return {"dram_bytes": metrics[DRAM_BYTES], "duration_s": metrics[NCU_DURATION_S],
                "dram_fraction": metrics[DRAM_FRACTION], "source": source}

    if compiled:
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile workers for ncu to follow
    copy = measure("copy", COPY_KERNEL, "relu", {"n": 1 << 28}, "float32", 1e-3)
    measured = {"copy": {**copy, "bytes": 2.0 * 2**30}}  # 1 GiB read, 1 GiB written
    print("ncu copy", measured["copy"], flush=True)
    for index, row in enumerate(rows):
        if row.get("source"):
            case = (row["op"], row["shape"], row["dtype"])
            measured[json.dumps(_case(row))] = found = measure(f"k{index}", row["source"], *case,
                                                               row["timings"]["kernel"]["median"])
            if compiled:
                found["compile"] = measure(f"c{index}", COMPILE_FILE.format(op=row["op"], shape=row["shape"],
                                                                            dtype=row["dtype"]), *case,
                                           row["timings"]["kernel"]["median"])
            print("ncu", *case, {k: v for k, v in found.items() if k != "source"}, flush=True)
    return measured


def traffic_table(measured: dict, rows: list[dict], info: dict) -> str:
    """The traffic phase's own table: per row, the DRAM throughput ncu reports as a share of the GPU's peak
    (``dram__throughput``, the busiest DRAM unit) and the bytes counted over the duration, for the row's kernel,
    torch.compile where it was profiled, and the copy kernel: how far from DRAM's pace each one runs."""
    copy = measured["copy"]

    def cells(found: dict | None) -> tuple[str, str]:
        if not found:
            return "", ""
        if "error" in found:
            return "failed", found["error"][:80].replace("|", "/")
        rate = found["dram_bytes"] / found["duration_s"]
        return f"{found['duration_s'] * 1e6:.1f} us", f"{found['dram_fraction']:.0%}, {rate / 1e12:.2f} TB/s"

    lines = [f"# DRAM under Nsight Compute on {info['target']}", "",
             f"GPU: {info['gpu']}, torch {info['torch']}, triton {info['triton']}, {info['date']}. Command: "
             f"`{info.get('command', '')}`. One call each, caches flushed before it, clocks as they are; "
             "`DRAM` is `dram__throughput.avg.pct_of_peak_sustained_elapsed` and the DRAM bytes counted (read + "
             "written, whole sectors) over the call's duration (`gpu__time_duration`, summed over the call's "
             "launches).", "",
             "Copy kernel, 1 GiB read and written: {}, DRAM {}.".format(*cells(copy)), "",
             "| op | shape | dtype | kernel | kernel DRAM | torch.compile | torch.compile DRAM |", "|---" * 7 + "|"]
    for row in rows:
        found = measured.get(json.dumps(_case(row)))
        if not found:
            continue
        shape = " ".join(f"{k}={v}" for k, v in row["shape"].items())
        lines.append(f"| {row['op']} | {shape} | {row['dtype']} | "
                     + " | ".join((*cells(found), *cells(found.get("compile")))) + " |")
    return "\n".join(lines) + "\n"


def attach_traffic(rows: list[dict], info: dict, paths: list[Path]) -> None:
    """Join ``--traffic-from`` runs' measurements (their traffic.json) to the rows of the same cases whose
    kernel is the one measured (a re-timing may pick another finalist than the run it started from); where
    several runs profiled a row's kernel the last one listed counts. Each row keeps its run's copy, the yardstick
    of its fraction."""
    notes = []
    for path in paths:
        measured = json.loads((path / "traffic.json").read_text())
        if "error" in measured["copy"]:
            raise SystemExit(f"{path}: the copy was not profiled, so no traffic column: {measured['copy']['error']}")
        info["copy_ncu"] = measured["copy"]
        notes.append(_copy_note(measured["copy"], measured.get("device", {}).get("date", str(path))))
        for row in rows:
            found = measured.get(json.dumps(_case(row)))
            if found and "error" not in found and found["source"] == row.get("source"):
                row["traffic"] = {**found, "copy": measured["copy"]}
    info["traffic_copies"] = "; ".join(notes)


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--compile-baselines":
        compile_baselines(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="nvidia_h100")
    parser.add_argument("--out", default=os.environ.get("OUT", str(Path(__file__).parent / "results")))
    parser.add_argument("--cases", default="all", choices=("key", "catalog", "verdicts", "all"))
    parser.add_argument("--ops", nargs="*", help="only cases of these ops")
    parser.add_argument("--shapes", help="JSON [[op, dims, dtype], ...]: search these cases instead of --cases")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--verdict-budget", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=4, help="searches run at once (timing is exclusive)")
    parser.add_argument("--combine", nargs="*", help="several --retime-from runs of the same rows: one table of "
                        "each case's median run (see combine)")
    parser.add_argument("--merge", nargs="*", help="combine the JSON results of earlier runs (one per part) into "
                        "one table under --out, instead of running")
    parser.add_argument("--keep-cases", action="store_true", help="with --merge: only the first part's cases; "
                        "later parts replace rows of them and add none")
    parser.add_argument("--deadline-s", type=float, default=1e9, help="start no new case after this many seconds")
    parser.add_argument("--retime-deadline-s", type=float, default=1e9,
                        help="re-time no further kernel after this many seconds from the start")
    parser.add_argument("--no-retime", action="store_true", help="keep the search-time numbers (see docstring)")
    parser.add_argument("--no-verdicts", action="store_true", help="skip the ncu searches")
    parser.add_argument("--max-autotune", nargs="*", metavar="OP", help="also time kevolve's max-autotune baseline "
                        "in the quiet re-timing (each op's autotuning under kevolve's compile-time limit), for the "
                        "rows of these ops (none named: every row)")
    parser.add_argument("--retime-from", help="a directory with an earlier run's results, a results JSON file, or "
                        "FILE.json#TABLE: only re-time its rows (phase 4) and write the tables under --out")
    parser.add_argument("--defaults", help="JSON [[op, dims, dtype(, recipe)], ...]: no search, re-time a recipe's "
                        "default kernel for each case as phase 4 does (see default_rows)")
    parser.add_argument("--add-finalists", nargs="*", metavar="RECIPE", help="with --retime-from: these "
                        "recipes' default points join each row's finalists (see add_finalists)")
    parser.add_argument("--traffic-from", help="a directory with an earlier run's results: profile each row's "
                        "kernel and a copy once under ncu (phase 5) and write traffic.json under --out")
    parser.add_argument("--traffic-compile", action="store_true", help="with --traffic-from: torch.compile's "
                        "kernels for each row profiled too (see traffic)")
    parser.add_argument("--traffic", nargs="*", help="with --combine: --traffic-from runs whose DRAM traffic the "
                        "table shows (a row profiled in several: the last listed)")
    parser.add_argument("--skip-done", help="a directory with an earlier run's results: cases that have a row "
                        "there are not searched again (a run that adds cases; join the parts with --merge)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        return merge([Path(m) for m in args.merge], out, args.target, args.keep_cases)
    if args.combine:
        return combine([Path(m) for m in args.combine], out, args.target, [Path(t) for t in args.traffic or []])
    started = time.time()
    info = device_info(args.target)
    info["command"] = "python bench/gpu_bench.py " + " ".join("$OUT" if a == str(out) else a for a in sys.argv[1:])
    copy_bps = copy_bandwidth()
    (out / "gpu_device.json").write_text(json.dumps({"device": info, "copy_bytes_per_s": copy_bps}))
    print(f"{info}\ncopy {copy_bps / 1e12:.2f} TB/s", flush=True)
    if args.traffic_from:
        rows = load_part(Path(args.traffic_from), args.target)["rows"]
        rows = [r for r in rows if not args.ops or r["op"] in args.ops]
        measured = traffic(rows, args.target, args.traffic_compile)
        (out / "traffic.json").write_text(json.dumps({**measured, "device": info}))
        print(text := traffic_table(measured, rows, info))
        (out / "traffic.md").write_text(text)
        return 0
    if args.retime_from or args.defaults:
        if args.defaults:
            rows, origin = default_rows(json.loads(args.defaults), args.target), "none: each recipe's default point"
        else:
            rows, origin = load_part(Path(args.retime_from), args.target)["rows"], "as in " + args.retime_from
        rows = [r for r in rows if not args.ops or r["op"] in args.ops]
        if args.add_finalists:
            add_finalists(rows, args.target, args.add_finalists)
            origin += f"; plus the default points of {', '.join(args.add_finalists)} as finalists"
        for row in rows:
            row.pop("copy_bytes_per_s", None)  # this run's copy is the yardstick
        retime(rows, args.target, started + args.retime_deadline_s)
        add_compile_baselines(rows, args.target, args.max_autotune)
        print(write_tables(out, args.target, info, copy_bps, rows, [], {"search": origin}))
        return 0
    if args.shapes:
        cases, verdicts = [(op, dims, dtype) for op, dims, dtype in json.loads(args.shapes)], []
    else:
        cases = {"key": KEY, "catalog": CATALOG, "verdicts": [], "all": KEY + CATALOG}[args.cases]
        verdicts = VERDICTS if args.cases in ("verdicts", "all") and not args.no_verdicts else []
    if args.ops:
        cases = [c for c in cases if c[0] in args.ops]
        verdicts = [c for c in verdicts if c[0] in args.ops]
    if args.skip_done:
        done = {_case(row) for row in load_part(Path(args.skip_done), args.target)["rows"]}
        cases = [c for c in cases if _case_of(c) not in done]
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
    warm_pool.join()
    if not args.no_retime:
        retime(rows, args.target, started + args.retime_deadline_s)
        add_compile_baselines(rows, args.target, args.max_autotune)
        with (out / "gpu_rows_retimed.jsonl").open("w") as fh:
            fh.writelines(json.dumps(row, default=str) + "\n" for row in rows)
    order = {(op, json.dumps(dims), dtype): i for i, (op, dims, dtype) in enumerate(cases + verdicts)}
    for collected in (rows, verdict_rows):
        collected.sort(key=lambda r: order.get((r["op"], json.dumps(r["shape"]), r["dtype"]), 0))
    budgets = {"search": args.budget, "ncu searches": args.verdict_budget}
    print(write_tables(out, args.target, info, copy_bps, rows, verdict_rows, budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
