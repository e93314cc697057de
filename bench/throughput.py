"""Candidates per hour and where a search's time goes (build, check, time, profile, search and other), per
problem, from the sessions' own records (kevolve.harness.throughput): the baseline issue 36's pipelined
evaluator is measured against.

    python bench/throughput.py --target cpu --budget 16 [--ops softmax,layer_norm] [--out bench/results]

Each problem is searched afresh (``again=True``) in a store of the script's own; the table is written to
``<out>/<target>/throughput.md`` and ``.json`` with the machine, versions and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import kevolve
import torch
from kevolve.harness.throughput import throughput_line
from layout import RESULTS, result_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--ops", default="softmax,layer_norm,embedding_bag")
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--executor", action="append", default=None,
                        help="local, local:N, ray[:ADDRESS]; repeat to compare executors on each op (default: local)")
    parser.add_argument("--stem", default="throughput")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="throughput-")) / "store.sqlite"
    rows = []
    for op in args.ops.split(","):
        for executor in args.executor or ["local"]:
            result = kevolve.optimize(op, target=args.target, budget=args.budget, again=True, store=store,
                                      dtype=args.dtype, executor=executor)
            rows.append({"op": op, "shape": result.problem.describe(), "executor": executor,
                         "speedup": result.speedup, "throughput": result.throughput})
            print(f"{op} ({executor}): {result.speedup:.2f}x eager; {throughput_line(result.throughput)}", flush=True)
            write(rows, args)  # after each search: a run stopped part way keeps what it measured
    print(result_path(args.out, args.stem, ".md", args.target).read_text())
    return 0


def write(rows: list[dict], args: argparse.Namespace) -> None:
    info = {"target": args.target, "budget": args.budget, "python": platform.python_version(),
            "torch": torch.__version__, "cores": len(os.sched_getaffinity(0)), "gpus": torch.cuda.device_count(),
            "machine": platform.machine(),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    command = "python bench/throughput.py " + " ".join(sys.argv[1:])
    stages = ("build", "check", "time", "profile", "wait", "search and other")
    lines = [f"# Search throughput on `{args.target}`: candidates per hour and where the time goes", "",
             f"`{command}`", "", "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             ("Each stage's share of the session's wall time, from each evaluation's own stage clock "
              "(`kevolve.harness.throughput`); `search and other` is what no evaluation accounts for (proposing "
              "candidates, the store, the final re-timing). Where evaluations overlap (`at once` > 1: builds on the "
              "host's cores beside the device's timing, `kevolve.harness.executor`), the shares are of the "
              "evaluations' summed time; `wait` is a candidate waiting for a timing lane or for its device. `best` "
              "is the best kernel's speedup over eager, re-timed at the end."), "",
             "| problem | executor | candidates | wall | candidates/hour | at once | best | "
             + " | ".join(stages) + " |",
             "|" + "---|" * (7 + len(stages))]
    for row in rows:
        t = row["throughput"]
        lines.append(f"| {row['shape']} | {row['executor']} | {t['candidates']} | {t['elapsed_s']:.0f} s | "
                     f"{t['candidates_per_hour']:.0f} | {t.get('overlap') or 0:.1f} | {row['speedup']:.2f}x | "
                     + " | ".join(f"{t['shares'].get(s, 0):.0%}" for s in stages) + " |")
    result_path(args.out, args.stem, ".md", args.target).write_text("\n".join(lines) + "\n")
    result_path(args.out, args.stem, ".json", args.target).write_text(
        json.dumps({"info": info, "command": command, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
