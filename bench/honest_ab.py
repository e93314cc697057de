"""Do the harness's anti-cheat rules slow honest kernels? The same kernel files judged by two harnesses, interleaved.

    python bench/honest_ab.py --target cpu --before 55f1600^ [--reps 3] [--ops softmax,matmul]
    python bench/honest_ab.py --target nvidia_h100 --table bench/results/nvidia_h100/kernels.json --before-tree DIR

Issue 32 asks that honest kernels are not slowed or rejected by the rules that catch cheating (checked timed
calls, watched threads and children, seccomp, the runner's audit, ...). A search re-run changes the kernel as well
as the harness, so this holds the kernels still: each row of a kernel table (its best kernel's source, op, shape
and dtype) is written to a file and judged by ``kevolve evaluate --json`` from the tree under test ("after", the
installed kevolve) and from an older tree ("before": a git revision's ``core/src`` and ``backends/*/src`` put first
on ``PYTHONPATH``, the installed plugins' entry points resolving to them). The two alternate per repetition
(before/after, then after/before), each in its own process, so drift on the machine falls on both. A row reports
each harness's speedup over eager (median over the repetitions, with their range), their ratio, and the kernel's
time; "rejected" where a harness refused the kernel, with its reason. Beside them, what a caller's loop gets: the
kernel as the torch op a user calls (``kevolve.delivery.op.torch_op``) and eager, each called back to back on one
input set, results dropped, samples round-robin (``op_overhead.per_call``), in this process.
``--from JSON`` takes the harnesses' judgments from an earlier run and measures only the caller's loop.

The default ``--before`` is the parent of 55f1600, the first commit of issue 32's rules.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

from layout import result_path
from op_overhead import machine, per_call
from report import with_caching_malloc

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = {"cpp": ".cpp", "cuda": ".cu"}
SIDES = ("before", "after")


def before_tree(rev: str, into: Path) -> Path:
    """``rev``'s sources (``core/src`` and ``backends``), extracted from git into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "core/src", "backends"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def side_env(tree: Path | None) -> dict[str, str]:
    """The environment of one side: the installed kevolve (``tree`` None) or ``tree``'s sources first."""
    env = dict(os.environ)
    if tree is not None:
        paths = [tree / "core" / "src", *sorted((tree / "backends").glob("*/src"))]
        env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def evaluate(path: Path, row: dict, target: str, env: dict[str, str], timeout_s: float) -> dict:
    """One ``kevolve evaluate --json`` of ``path`` as ``row``'s problem: speedup over eager and kernel seconds,
    or the harness's reason for rejecting it."""
    shape = [f"{k}={v}" for k, v in row["shape"].items()]
    cmd = [sys.executable, "-m", "kevolve", "evaluate", str(path), "--op", row["op"], "--target", target,
           "--language", row["language"], "--dtype", row["dtype"], "--json", "--shape", *shape]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer in {timeout_s:g} s"}
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    if not out.get("correct"):
        return {"error": f"{out.get('status')}: {out.get('rejected_reason')}"[:300]}
    eager_s = out["baselines"]["eager"]
    return {"speedup": eager_s / out["kernel_seconds"], "kernel_s": out["kernel_seconds"], "eager_s": eager_s}


def caller_loop(row: dict, target: str, rounds: int = 9, sample_s: float = 0.005) -> dict:
    """The op a user calls against eager in a loop of calls on one input set: speedup, the median of per-round
    ratios with their range, and each one's seconds a call."""
    import torch
    from kevolve.api import resolve_problem
    from kevolve.delivery.op import torch_op

    problem = resolve_problem(row["op"], row["shape"], row["dtype"], None)
    op = torch_op(problem, target, row["source"], row["language"])
    device = "cpu" if target == "cpu" else "cuda"
    inputs = [t.to(device) for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    caller = inputs[: len(inputs) - len(problem.extra_inputs())]
    samples = per_call({"op": lambda: op(*caller), "eager": lambda: problem.reference(inputs)}, device, rounds,
                       sample_s)
    ratios = [e / o for e, o in zip(samples["eager"], samples["op"])]
    return {"speedup": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
            "kernel_s": statistics.median(samples["op"]), "eager_s": statistics.median(samples["eager"])}


def judged(path: Path, row: dict, target: str, trees: dict[str, Path | None], reps: int,
           timeout_s: float) -> dict[str, list[dict]]:
    """Each side's ``reps`` evaluations of the kernel file, the sides alternating (before first, then after)."""
    got: dict[str, list[dict]] = {side: [] for side in SIDES}
    for rep in range(reps):
        for side in (SIDES if rep % 2 == 0 else SIDES[::-1]):
            got[side].append(evaluate(path, row, target, side_env(trees[side]), timeout_s))
    return got


def run(rows: list[dict], target: str, trees: dict[str, Path | None], reps: int, work: Path,
        timeout_s: float, save: Callable[[list[dict]], object], prior: dict[str, dict]) -> list[dict]:
    """Every row judged (or its judgments taken from ``prior``, by op and shape) and timed in a caller's loop;
    ``save`` is given the rows so far after each one (a run cut short keeps them)."""
    results: list[dict] = []
    for i, row in enumerate(rows):
        path = work / f"{i}_{row['op']}{SUFFIX.get(row['language'], '.py')}"
        path.write_text(row["source"])
        earlier = prior.get(_key(row))
        got = earlier["runs"] if earlier else judged(path, row, target, trees, reps, timeout_s)
        result = {"op": row["op"], "shape": row["shape"], "dtype": row["dtype"], "runs": got}
        for side in SIDES:
            ok = [g for g in got[side] if "speedup" in g]
            result[side] = {"speedup": statistics.median(g["speedup"] for g in ok),
                            "low": min(g["speedup"] for g in ok), "high": max(g["speedup"] for g in ok),
                            "kernel_s": statistics.median(g["kernel_s"] for g in ok),
                            "eager_s": statistics.median(g["eager_s"] for g in ok)} if ok else None
            result[f"{side}_errors"] = sorted({g["error"] for g in got[side] if "error" in g})
        if result["before"] and result["after"]:
            result["ratio"] = result["after"]["speedup"] / result["before"]["speedup"]
        result["caller"] = caller_loop(row, target)
        results.append(result)
        save(results)
        print(f"[{i + 1}/{len(rows)}] {row['op']} {row['shape']}: " + ", ".join(
            f"{side} {cell(result[side], result.get(f'{side}_errors', []))}" for side in (*SIDES, "caller")),
            flush=True)
    return results


def _key(row: dict) -> str:
    return json.dumps([row["op"], row["shape"], row["dtype"]], sort_keys=True)


def cell(side: dict | None, errors: list[str]) -> str:
    if side is None:
        return "rejected: " + "; ".join(errors)
    note = f" ({len(errors)} runs rejected: {'; '.join(errors)})" if errors else ""
    return f"{side['speedup']:.2f}x [{side['low']:.2f}..{side['high']:.2f}]{note}"


def write(results: list[dict], info: dict, out: str, stem: str, target: str) -> Path:
    ratios = [r["ratio"] for r in results if "ratio" in r]
    geo = math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else float("nan")
    lines = [
        f"# Honest kernels judged by the harness before and after issue 32's rules ({target})", "",
        f"`{info['command']}`", "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info["machine"].items()), "",
        (f"Before: `{info['before']}`; after: the working tree (`{info['after']}`). Each kernel file (a row of "
         f"`{info['table']}`) is judged by `kevolve evaluate --json` from each tree, alternating, {info['reps']} "
         "times each; speedup over eager as each harness reports it, median [min..max] of the runs."), "",
        (f"Geometric mean of after / before: **{geo:.3f}** over {len(ratios)} kernels "
         f"(range {min(ratios, default=0):.2f}..{max(ratios, default=0):.2f})."), "",
        ("| op | shape | dtype | before vs eager | after vs eager | caller's loop vs eager | after / before | "
         "kernel ms, before / after / caller | eager ms, before / after / caller |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        ms = {key: " / ".join(f"{r[s][key] * 1e3:.3f}" if r[s] else "-" for s in (*SIDES, "caller"))
              for key in ("kernel_s", "eager_s")}
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "-"
        lines.append(f"| {r['op']} | {shape} | {r['dtype']} | {cell(r['before'], r['before_errors'])} | "
                     f"{cell(r['after'], r['after_errors'])} | {cell(r['caller'], [])} | {ratio} | {ms['kernel_s']} | "
                     f"{ms['eager_s']} |")
    md = result_path(out, stem, ".md", target)
    md.write_text("\n".join(lines) + "\n")
    result_path(out, stem, ".json", target).write_text(json.dumps({**info, "rows": results}, indent=1))
    return md


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--table", help="a kernel table's JSON (default: bench/results/<target>/kernels.json)")
    parser.add_argument("--before", default="55f1600^", help="the git revision judged against (default: %(default)s)")
    parser.add_argument("--before-tree", help="a folder holding that revision's core/src and backends/*/src instead")
    parser.add_argument("--ops", default="", help="comma-separated ops (default: every row)")
    parser.add_argument("--per-op", type=int, default=0, help="at most this many rows of each op (default: all)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--from", dest="prior", help="an earlier run's JSON: its harness judgments, the caller's "
                        "loop measured again")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--stem", default="honest_ab")
    args = parser.parse_args()
    with_caching_malloc()  # as the kernel tables were made; the workers of both sides inherit it
    table = Path(args.table or ROOT / "bench" / "results" / args.target / "kernels.json")
    wanted = set(filter(None, args.ops.split(",")))
    rows = [r for r in json.loads(table.read_text())["rows"]
            if r.get("correct") and r.get("source") and (not wanted or r["op"] in wanted)]
    if args.per_op:
        rows = [r for i, r in enumerate(rows) if sum(q["op"] == r["op"] for q in rows[:i]) < args.per_op]
    work = Path(tempfile.mkdtemp(prefix="honest-ab-"))
    tree = Path(args.before_tree) if args.before_tree else before_tree(args.before, work / "before")
    after = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, check=False).stdout.strip()
    info = {"command": "python bench/honest_ab.py " + " ".join(sys.argv[1:]), "machine": machine(args.target),
            "before": args.before_tree or args.before, "after": after or "unknown", "table": str(table.relative_to(ROOT))
            if table.is_relative_to(ROOT) else str(table), "reps": args.reps}
    earlier = json.loads(Path(args.prior).read_text()) if args.prior else {"rows": []}
    prior = {_key(r): r for r in earlier["rows"]}
    if args.prior:
        info["command"] += f" (harness judgments from {earlier['command']})"
    run(rows, args.target, {"before": tree, "after": None}, args.reps, work, args.timeout_s,
        lambda results: write(results, info, args.out, args.stem, args.target), prior)
    print(result_path(args.out, args.stem, ".md", args.target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
