"""What the benchmark scripts share: one search-then-retime step and the table cell formats."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import kevolve
from kevolve.harness.pipeline import HarnessConfig

#: glibc malloc keeping freed blocks (up to 32 MiB each) instead of returning them to the OS, as the caching
#: allocators PyTorch recommends for CPU inference (jemalloc, tcmalloc) do: no page faults on each call's fresh
#: buffers. The harness's workers inherit the caller's environment, so these hold for both sides of a table.
CACHING_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**36),
                  "MALLOC_TOP_PAD_": str(512 * 2**20)}


def with_caching_malloc() -> None:
    """Run the calling script under :data:`CACHING_MALLOC` (it re-executes itself once if it is not), so that
    its in-process timings and the workers' are made with one allocator, the one its committed tables were made
    with."""
    if any(os.environ.get(k) != v for k, v in CACHING_MALLOC.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **CACHING_MALLOC})


def malloc_setting() -> str:
    """The allocator this process times with, in words, for a table's machine line."""
    preload = os.environ.get("LD_PRELOAD", "")
    tuned = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    if tuned:
        return "glibc, " + " ".join(f"{k}={v}" for k, v in sorted(tuned.items())) + (f" (LD_PRELOAD {preload})" if preload else "")
    return f"LD_PRELOAD {preload}" if preload else "glibc defaults"


def search_and_time(op: str, target: str, budget: int, store: Path, harness: HarnessConfig, *,
                    dims: dict[str, int] | None = None, dtype: str | None = None) -> dict:
    """Search ``op`` on ``target``, then re-time the best kernel interleaved with eager and torch.compile."""
    started = time.perf_counter()
    result = kevolve.optimize(op, target=target, budget=budget, seed=0, store=store, again=True, dims=dims,
                              dtype=dtype, baselines=("eager", "compile"), harness=harness)
    row = {"op": op, "shape": result.problem.dims, "dtype": str(result.problem.dtype).removeprefix("torch."),
           "correct": result.correct, "candidates": len(result.nodes), "search_s": time.perf_counter() - started,
           "session": result.session}
    if result.final is not None and result.final.evaluation.correct:
        ev = result.final.evaluation
        row.update(
            timings={k: vars(v) for k, v in ev.timings.items()},
            speedups={k: vars(v) for k, v in ev.speedups.items()},
            recipe=result.best.recipe, language=result.language, parameters=result.parameters, source=result.source,
            diagnosis=ev.diagnosis.summary if ev.diagnosis else "",
            diagnosis_kind=ev.diagnosis.kind if ev.diagnosis else "",
            metrics=ev.diagnosis.metrics if ev.diagnosis else {}, resources=ev.resources)
    # the search's best correct nodes (best first, one per parameter point): gpu_bench re-times them quietly
    ranked = sorted((n for n in result.nodes if n.evaluation.correct and n.source),
                    key=lambda n: n.evaluation.fitness, reverse=True)
    seen: set[str] = set()
    row["finalists"] = [{"recipe": n.recipe, "parameters": n.parameters, "language": n.language, "source": n.source,
                         "search_fitness": n.evaluation.fitness}
                        for n in ranked if not (n.source_hash in seen or seen.add(n.source_hash))][:3]
    row["tree"] = [{"node": n.node_id, "parent": n.parent_id, "recipe": n.recipe, "parameters": n.parameters,
                    "status": n.evaluation.status, "fitness": n.evaluation.fitness, "note": n.note,
                    "diagnosis": n.evaluation.diagnosis.kind if n.evaluation.diagnosis else "",
                    "reason": n.evaluation.reason[:300]} for n in result.nodes]
    return row


def fmt_time(t: dict) -> str:
    return f"{t['median'] * 1e3:.3f} [{t['p10'] * 1e3:.3f}..{t['p90'] * 1e3:.3f}]"


def fmt_speedup(s: dict) -> str:
    return f"{s['median']:.2f}x [{s['low']:.2f}..{s['high']:.2f}]"
