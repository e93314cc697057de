"""Which side of a region's two speedups is right: the harness's, or the caller's? For each named region of the
ads model, times in this process, round-robin, its user submodule, its exported module (the harness's eager)
and its op, on the region's own inputs and on inputs drawn as the harness draws them, with and without a cache
flush before each sample; prints the harness's own medians beside them (bench/notes/harness_vs_caller.md).

    python bench/region_probe.py cpu history,interaction,hash,bottom STORE.db
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
from kevolve import api
from kevolve.model import regions
from kevolve.plugins import get_manager
from kevolve.problems.exported import ExportedProblem
from models import load_model_file


def timed(thunks: dict, runner, flush: bool, rounds: int = 11, sample_s: float = 0.01) -> dict[str, float]:
    """Median microseconds per call of each thunk."""
    inner = {}
    for name, thunk in thunks.items():
        runner.synchronize()
        began = time.perf_counter()
        thunk()
        runner.synchronize()
        inner[name] = max(1, min(1000, int(sample_s / max(time.perf_counter() - began, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in thunks}
    for _ in range(rounds):
        for name, thunk in thunks.items():
            if flush:
                runner.flush_cache()
            runner.synchronize()
            began = time.perf_counter()
            for _ in range(inner[name]):
                thunk()
            runner.synchronize()
            samples[name].append((time.perf_counter() - began) / inner[name])
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


def main() -> int:
    target, names, store = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    registered = get_manager().usable_target(target)
    runner = registered.backend.runner(registered.spec)
    model_file = load_model_file(Path("examples/ads_ranking.py"), {"ROWS": "20000"} if target == "cpu" else {})
    torch.manual_seed(0)
    model = model_file.Model().eval().to(runner.device)
    inputs = [t.to(runner.device) for t in model_file.get_inputs()]
    for entry in regions.profile(model, inputs, runner.synchronize):
        if entry.path not in names:
            continue
        problem = ExportedProblem.create(entry.module, entry.inputs, entry.path)
        result = api.optimize(problem, target, 2, 0, store)
        if not result.correct:
            print(entry.path, "no correct kernel")
            continue
        op, n = result.as_torch_op(), len(entry.inputs)
        drawn = [t.to(runner.device) for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(1))][:n]
        thunks = {f"{who}/{which}": (lambda f=f, xs=xs: f(*xs))
                  for which, xs in (("own", entry.inputs), ("drawn", drawn))
                  for who, f in (("module", entry.module), ("exported", problem.model), ("op", op))}
        with torch.no_grad():
            for thunk in thunks.values():
                thunk()
            for flush in (False, True):
                med = timed(thunks, runner, flush)
                print(f"{entry.path} flush={flush} " + " ".join(f"{k}={v:.0f}us" for k, v in med.items()),
                      f"| module/op own {med['module/own'] / med['op/own']:.2f}x, exported/op drawn "
                      f"{med['exported/drawn'] / med['op/drawn']:.2f}x", flush=True)
        measured = result.final if result.final is not None and result.final.evaluation.correct else result.best
        harness = measured.evaluation.timings
        print(entry.path, f"harness {result.speedup:.2f}x, medians us",
              {k: round(v.median * 1e6) for k, v in harness.items()}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
