"""What varying the inputs between timed calls costs honest kernels (issue 32): each catalog op's default kernel
timed by the harness's own timing (``kevolve.harness.worker.time_candidate``) with the variation on (one element of
each varied input copied over another before each timed call, ``kevolve.harness.variation``) and off, the two
arms alternating in one process, ``--rounds`` times each.

    python bench/variation_cost.py --target cpu [--ops softmax,relu] [--rounds 3]

Each arm's number is the harness's speedup over eager (median of its ``repeats`` samples); the table shows the
median over rounds with [min..max], and on/off per round. Both arms time call by call; off leaves the inputs as
they are. The kernel is loaded in this process (no isolated worker: these are the target's own honest kernels).
Writes ``<out>/<target>/variation_cost.md`` and ``.json`` (``layout.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from kevolve.api import resolve_problem
from kevolve.harness import worker
from kevolve.harness.pipeline import HarnessConfig
from kevolve.plugins import get_manager, worker_bootstrap
from kevolve.synthesis.base import Candidate
from layout import RESULTS, result_path
from op_overhead import kernel_for, machine, raw_launcher
from report import with_caching_malloc

ARMS = ("on", "off")


def timed(problem, kernel, runner, task: dict, config: dict, arm: str) -> float:
    """The harness's speedup over eager for one arm."""
    varied = worker.InputVariation
    if arm == "off":
        worker.InputVariation = lambda tensors, rng: (lambda: None)
    try:
        op = worker.register_timed_op(problem, kernel, runner, task)
        _, speedups, *_ = worker.time_candidate(problem, kernel, op, runner, config,
                                                worker.TimingInputs(problem, config["repeats"] + 1), {})
    finally:
        worker.InputVariation = varied
    return speedups["eager"].median


def measure(op_name: str, args) -> dict:
    problem = resolve_problem(op_name, None, None, None)
    workdir = Path(args.workdir)
    source, language, chosen = kernel_for(problem, args.target, 0, workdir)
    kernel, runner = raw_launcher(problem, args.target, source, language, workdir)
    runner.start_device()
    task = {"target": get_manager().target(args.target).spec.name,
            "source_hash": Candidate(source, language).source_hash, "problem": problem.to_spec(),
            "bootstrap": worker_bootstrap()}
    config = HarnessConfig(baselines=("eager",)).for_worker()
    speedups: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for round_ in range(args.rounds):
        for arm in ARMS if round_ % 2 == 0 else ARMS[::-1]:
            speedups[arm].append(timed(problem, kernel, runner, task, config, arm))
    return {"op": op_name, "shape": problem.dims, "dtype": str(problem.dtype).removeprefix("torch."),
            "kernel": chosen, "speedups": speedups,
            "on_over_off": [on / off for on, off in zip(speedups["on"], speedups["off"])],
            "varied": varied_names(problem)}


def varied_names(problem) -> list[str]:
    inputs = problem.make_inputs(problem.check_dims()[0], torch.Generator().manual_seed(0))
    caller = inputs[: len(inputs) - len(problem.extra_inputs())]
    names = problem.input_names(len(caller))
    return [names[i] for i in problem.varied_inputs(caller)]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}..{max(values):.2f}]"


def table(rows: list[dict], info: dict, command: str) -> list[str]:
    head = ["op", "shape", "dtype", "kernel", "varied", "speedup, varied", "speedup, not varied", "varied / not varied"]
    lines = [f"# What varying the inputs between timed calls costs honest kernels ({info['target']})", "",
             f"`{command}`", "", "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             ("The harness's speedup over eager (each the median of its samples), median over rounds [min..max]; the "
             "two arms alternate in one process (see the script's docstring)."), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["op"], "x".join(str(v) for v in r["shape"].values()), r["dtype"], r["kernel"], ", ".join(r["varied"]),
            spread(r["speedups"]["on"]), spread(r["speedups"]["off"]), spread(r["on_over_off"])]) + " |")
    ratios = [statistics.median(r["on_over_off"]) for r in rows]
    if ratios:
        lines += ["", (f"Over {len(rows)} ops, varied / not varied: median {statistics.median(ratios):.3f}, "
                  f"min {min(ratios):.3f}, max {max(ratios):.3f}.")]
    return lines


def main() -> int:
    with_caching_malloc()  # the allocator the other tables were timed with (report.CACHING_MALLOC)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--ops", default="", help="comma-separated catalog ops (default: all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--workdir", default=tempfile.mkdtemp(prefix="variation-cost-"))
    args = parser.parse_args()
    names = args.ops.split(",") if args.ops else get_manager().ops.names()
    info = machine(args.target)
    command = "python bench/variation_cost.py " + " ".join(sys.argv[1:])
    md, record = (result_path(args.out, "variation_cost", suffix, args.target) for suffix in (".md", ".json"))
    rows = []
    for name in names:
        print(name, flush=True)
        try:
            rows.append(measure(name, args))
        except Exception as exc:  # one broken row must not lose the others' measurements
            print(f"  failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        print(f"  {spread(rows[-1]['on_over_off'])}", flush=True)
        md.write_text("\n".join(table(rows, info, command)) + "\n")
        record.write_text(json.dumps({"info": info, "command": command, "rows": rows}, default=str))
    print("\n".join(table(rows, info, command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
