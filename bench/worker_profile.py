"""Where a candidate's time in its timing worker goes: the worker's task (``kevolve.harness.worker.run_task``) run
in this process under cProfile, twice per op (the first pays the device's start-up), with the time of each stage
the worker reports.

    python bench/worker_profile.py TARGET OP[,OP...] > bench/results/<machine>/worker_profile.txt

Each op is searched at budget 1 (bf16) for a kernel to profile. In this process the search's worker zygote is a
child, so the worker's check for processes a kernel started is switched off here.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import kevolve
from kevolve.delivery.runtime import prepare_native
from kevolve.harness import worker
from kevolve.harness.pipeline import HarnessConfig, build_candidate
from kevolve.plugins import worker_bootstrap
from kevolve.synthesis.base import Candidate


def profile(target: str, op: str, store: Path) -> None:
    result = kevolve.optimize(op, target=target, budget=1, dtype="bfloat16", executor="local:1", again=True,
                              store=store)
    best = result.best
    candidate = Candidate(best.source, best.language, best.parameters)
    config = HarnessConfig()
    built = build_candidate(candidate, result.problem, target, config)
    prepare_native()
    task = {"target": target, "problem": result.problem.to_spec(), "build": asdict(built.build),
            "config": config.for_worker(), "bootstrap": worker_bootstrap(), "parameters": candidate.parameters,
            "source_hash": candidate.source_hash}
    for attempt in range(2):
        marks: list[tuple[float, str]] = []
        start = time.perf_counter()
        profiler = cProfile.Profile()
        profiler.enable()
        outcome = worker.run_task(task, lambda stage: marks.append((time.perf_counter() - start, stage)))
        profiler.disable()
        print(f"== {op}, run {attempt}: {time.perf_counter() - start:.2f} s, {outcome['status']} "
              f"{outcome.get('reason', '')[:200]}")
        last = 0.0
        for at, stage in marks:
            print(f"   {at:7.3f}  +{at - last:6.3f}  {stage[:60]}")
            last = at
        for order in ("cumulative", "tottime"):
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(25)
            print("\n".join(text.getvalue().splitlines()[:40]), flush=True)


def main() -> int:
    worker.watch.children = set  # in-process: the zygote of optimize() is this process's child
    store = Path(tempfile.mkdtemp(prefix="worker-profile-")) / "store.sqlite"
    for op in sys.argv[2].split(","):
        profile(sys.argv[1], op, store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
