"""Do skills compound? A second, similar problem searched with and without the lessons of the first.

For each pair (first op, second op of the same family) and each seed, in a fresh store:
1. search the first op with ``budget`` candidates; its best fitness is the quality bar;
2. search the second op with skills off, then with skills on (the first op's lesson available);
3. count the candidates each needed before its running best reached the bar (within ``tolerance``).

The default target is ``nvidia_h100`` on a machine without its GPU: kernels are compiled for sm_90, checked
through the Triton interpreter and ranked by the static cost model, so fitness is the modeled fraction of the
roofline: deterministic, which makes "reached the bar" a fact rather than a timing accident. It is a ranking,
not a measurement of the GPU.

    python bench/skills_bench.py [--target nvidia_h100] [--budget 8] [--seeds 0 1] [--out FILE.md]

Writes ``bench/results/<target>/skills.md`` and ``.json`` unless ``--out`` names another file.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import kevolve
from kevolve.store import Store
from layout import RESULTS, result_path

PAIRS = [("layer_norm", "rms_norm"), ("softmax", "log_softmax")]
DIMS = {"rows": 4096, "cols": 512}


def running_best_reach(fitnesses: list[float], bar: float) -> int | None:
    """1-based count of candidates until the running best reached ``bar``; None if it never did."""
    best = 0.0
    for i, f in enumerate(fitnesses, 1):
        best = max(best, f)
        if best >= bar:
            return i
    return None


def search(op: str, store: Store, target: str, budget: int, seed: int, skills: bool) -> list[float]:
    result = kevolve.optimize(op, target=target, budget=budget, seed=seed, store=store, dims=DIMS, again=True,
                              skills=skills)
    return [n.evaluation.fitness for n in result.nodes]


def run(target: str, budget: int, seeds: list[int], tolerance: float) -> list[dict]:
    rows = []
    for first, second in PAIRS:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                store = Store(Path(tmp) / "store.sqlite")
                started = time.perf_counter()
                bar = max(search(first, store, target, budget, seed, skills=True)) * tolerance
                off = search(second, store, target, budget, seed, skills=False)
                on = search(second, store, target, budget, seed, skills=True)
                rows.append({"first": first, "second": second, "seed": seed, "bar": bar,
                             "off_reach": running_best_reach(off, bar), "on_reach": running_best_reach(on, bar),
                             "off_best": max(off), "on_best": max(on), "off": off, "on": on,
                             "wall_s": time.perf_counter() - started})
                print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("off", "on")}), flush=True)
    return rows


def table(rows: list[dict], args: argparse.Namespace) -> str:
    import torch
    import triton

    fmt = lambda reach, n: str(reach) if reach is not None else f"not in {n}"
    lines = [
        "# Skills: a second, similar problem with and without the first problem's lesson", "",
        f"Machine: {platform.node()} ({platform.machine()}, {platform.processor() or 'cpu'}), Python "
        f"{platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}, kevolve "
        f"{kevolve.__version__ if hasattr(kevolve, '__version__') else '0.1.0'}. Date: "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
        f"Command: `python bench/skills_bench.py --target {args.target} --budget {args.budget} --seeds "
        f"{' '.join(map(str, args.seeds))} --tolerance {args.tolerance}`", "",
        f"Target {args.target} without its GPU: every kernel compiled for the target and checked through the Triton "
        "interpreter; fitness is the static cost model's modeled fraction of the roofline (deterministic; a "
        f"ranking, not a GPU measurement). Shapes {DIMS}, float32. The bar is {args.tolerance:g} x the first "
        "problem's best fitness in its own search; 'candidates to the bar' counts evaluated candidates of the "
        "second problem's search until its running best reached the bar.", "",
        "| first -> second | seed | bar | skills off: candidates to the bar | skills on: candidates to the bar | "
        "best off | best on |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['first']} -> {r['second']} | {r['seed']} | {r['bar']:.4f} | "
                     f"{fmt(r['off_reach'], len(r['off']))} | {fmt(r['on_reach'], len(r['on']))} | "
                     f"{r['off_best']:.4f} | {r['on_best']:.4f} |")
    reach = lambda key: [r[key] if r[key] is not None else args.budget + 1 for r in rows]
    lines += ["", f"Median candidates to the bar (a search that never reached it counts as budget + 1 = "
                  f"{args.budget + 1}): skills off {statistics.median(reach('off_reach')):g}, skills on "
                  f"{statistics.median(reach('on_reach')):g}; fewer with skills on in "
                  f"{sum(a < b for a, b in zip(reach('on_reach'), reach('off_reach')))} of {len(rows)} runs, "
                  f"equal in {sum(a == b for a, b in zip(reach('on_reach'), reach('off_reach')))}.", "",
              "Per-candidate fitness of each second search (evaluation order):", ""]
    for r in rows:
        lines.append(f"- {r['second']} seed {r['seed']}: off {[round(f, 4) for f in r['off']]}; "
                     f"on {[round(f, 4) for f in r['on']]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="nvidia_h100")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--tolerance", type=float, default=0.95)
    parser.add_argument("--out", default=None, help="default: bench/results/<target>/skills.md")
    args = parser.parse_args(argv)
    args.out = args.out or str(result_path(RESULTS, "skills", ".md", args.target))
    rows = run(args.target, args.budget, args.seeds, args.tolerance)
    Path(args.out).write_text(table(rows, args))
    Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
