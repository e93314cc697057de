"""Does the mtia_sim docs pack pay? For each op, the same search (template synthesizer, same seed and budget)
on the simulated accelerator with and without the chip's documents; the table says how many candidates each
needed to reach its best simulated time, and how many the search with the documents needed to reach a kernel
at least as fast as the best found without them.

    python bench/mtia_sim_knowledge.py [--budget 10] [--jobs 2] [--ops add,softmax] [--out FILE.md]
                                       [--cache bench/out/mtia_sim_knowledge]

"Without the documents" leaves the mtia_sim pack out (``KEVOLVE_DISABLE_DOCS_PACKS=mtia_sim``); the generic
Triton and core packs stay, so the comparison isolates what the chip's own documents are worth. Each search runs in a process of its own, with a fresh store.
Simulated times are deterministic: one search per op and mode is an exact measurement of that search. Writes
``bench/results/mtia_sim/knowledge.md`` and ``.json`` unless ``--out`` names another file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from layout import RESULTS, result_path

#: ops and the (reduced) shapes they are searched at: the interpreter runs every candidate, so the shapes are
#: a quarter of the catalog defaults or less
OPS = {
    "add": {"n": 1 << 20},
    "gelu": {"n": 1 << 20},
    "softmax": {"rows": 1024, "cols": 1024},
    "layer_norm": {"rows": 1024, "cols": 1024},
    "sum": {"rows": 1024, "cols": 2048},
    "cumsum": {"rows": 1024, "cols": 1024},
    "gather": {"rows": 1024, "cols": 1024, "k": 256},
}
TARGET = "mtia_sim"


def one(op: str, docs: bool, budget: int, seed: int) -> dict:
    """One search, in this process: every evaluated candidate's simulated time, in evaluation order."""
    import kevolve
    from kevolve.backend.estimator import MODELED_TIME_S

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = kevolve.optimize(op, target=TARGET, budget=budget, seed=seed, dims=OPS[op], again=True,
                                  store=str(Path(tmp) / "store.sqlite"))
        wall = time.perf_counter() - started
    times = []
    for node in sorted(result.nodes, key=lambda n: n.node_id):
        ev = node.evaluation
        t = ev.estimate.get(MODELED_TIME_S) if ev.correct else None
        times.append({"node": node.node_id, "time_s": float(t) if isinstance(t, (int, float)) else None,
                      "params": node.parameters, "note": node.note})
    return {"op": op, "docs": docs, "times": times, "wall_s": wall}


def run_child(op: str, docs: bool, budget: int, seed: int, cache: Path) -> dict:
    """One search in a process of its own; its result is kept in ``cache`` (a rerun skips finished searches)."""
    kept = cache / f"{op}-{'docs' if docs else 'nodocs'}-b{budget}-s{seed}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    env = dict(os.environ)
    if not docs:
        env["KEVOLVE_DISABLE_DOCS_PACKS"] = "mtia_sim"
    proc = subprocess.run([sys.executable, __file__, "--child", op, "1" if docs else "0", str(budget), str(seed)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{op} docs={docs} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    cache.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(result))
    return result


def first_reaching(times: list[dict], bound: float) -> int | None:
    for index, entry in enumerate(times, start=1):
        if entry["time_s"] is not None and entry["time_s"] <= bound * (1 + 1e-12):
            return index
    return None


def best(times: list[dict]) -> float:
    return min((t["time_s"] for t in times if t["time_s"] is not None), default=float("inf"))


def versions() -> str:
    import kevolve_mtia_sim.engine as engine
    import torch
    import triton

    native = "C++ engine" if engine.native() is not None else "pure-Python engine"
    return f"Python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}, {native}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        op, docs, budget, seed = argv[1], argv[2] == "1", int(argv[3]), int(argv[4])
        print(json.dumps(one(op, docs, budget, seed)))
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--out", default=str(result_path(RESULTS, "knowledge", ".md", "mtia_sim")))
    parser.add_argument("--cache", default="bench/out/mtia_sim_knowledge",
                        help="finished searches are kept here; delete it to search anew")
    args = parser.parse_args(argv)
    ops = args.ops.split(",")
    tasks = [(op, docs) for op in ops for docs in (True, False)]
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(lambda t: run_child(t[0], t[1], args.budget, args.seed, Path(args.cache)), tasks))
    by = {(r["op"], r["docs"]): r for r in runs}
    rows, wins = [], 0
    for op in ops:
        with_docs, without = by[(op, True)]["times"], by[(op, False)]["times"]
        b_with, b_without = best(with_docs), best(without)
        n_without = first_reaching(without, b_without)
        n_with_best = first_reaching(with_docs, b_with)
        n_with = first_reaching(with_docs, b_without)
        ok = n_with is not None and n_without is not None and 2 * n_with <= n_without
        wins += ok
        rows.append(f"| {op} | {', '.join(f'{k}={v}' for k, v in OPS[op].items())} | {b_with * 1e6:.2f} | "
                    f"{n_with_best} | {b_without * 1e6:.2f} | {n_without} | {n_with if n_with else '-'} | "
                    f"{'yes' if ok else 'no'} |")
    lines = [
        "# mtia_sim: knowledge injection",
        "",
        f"- date: {dt.date.today().isoformat()}; machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.release()}",
        f"- versions: {versions()}",
        f"- command: `python bench/mtia_sim_knowledge.py --budget {args.budget} --seed {args.seed} --jobs {args.jobs}"
        f"{'' if args.ops == ','.join(OPS) else ' --ops ' + args.ops}` (the {len(runs)} searches took "
        f"{sum(r['wall_s'] for r in runs):.0f} s of wall time in all)",
        f"- search: `kevolve.optimize(op, target='mtia_sim', budget={args.budget}, seed={args.seed}, dims=...)`, "
        "template synthesizer, MCTS; float32; without the documents: `KEVOLVE_DISABLE_DOCS_PACKS=mtia_sim` (the "
        "mtia_sim pack left out; core's generic packs stay)",
        "- times are simulated (the mtia_sim cycle model, deterministic), in microseconds; candidates count "
        "evaluated candidates in evaluation order, 1-based",
        "- the first round is the same two-candidate seed round in both: the recipe default, then (with docs) the "
        "point the docs pack's hints choose or (without) a random restart point; later rounds mutate the best "
        "by its diagnosis",
        "",
        "| op | shape | best with docs (us) | candidates to it | best without docs (us) | candidates to it | "
        "candidates with docs to reach the best without | with docs in at most half |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"{wins} of {len(ops)} ops: the search with the docs pack reached a kernel at least as fast as the best "
        "found without it, in at most half the candidates.",
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    (Path(args.out).with_suffix(".json")).write_text(json.dumps(runs, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
