"""Every problem of bench/problems through ``kevolve.optimize`` offline (template synthesizer, no LLM), written as a
committed table: ``bench/results/<target>/programs<suffix>.md`` + ``.json``.

    python bench/programs.py --target cpu --small --budget 2      # CPU-test sizes (each file's SMALL)
    python bench/programs.py --target mtia_sim --small
    python bench/programs.py --target nvidia_h100 --budget 8        # a lent GPU, at the files' own sizes
    python bench/programs.py --target cpu --small --only fused/     # a subset (substring of kind/name)

Per problem: correct or the reason it is not, the speedup over eager and over torch.compile (median with the
10th..90th percentile spread of the per-sample ratios, from kevolve's final re-timing), and a summary (correct
fraction for single and fused problems, geometric means). Both files are rewritten after every problem, so a
crash loses nothing; a rerun with the same settings resumes at the first problem without a row (``--fresh``
starts over, searching again rather than answering from the store; ``--rerun-failed`` runs again only the
problems whose row is not correct). Sessions are kept in a store of the bench's own under bench/out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path

from layout import RESULTS, result_path
from problem_set import KINDS, kind_of, label, problem_files, small_copy

HERE = Path(__file__).resolve().parent
SETTINGS = ("target", "budget", "small", "baselines", "time_budget_s")


def _speedup(speedups: dict, name: str) -> dict | None:
    got = speedups.get(name)
    return {k: got[k] for k in ("median", "low", "high")} if got else None


def _reason(result) -> str:
    """Why a finished search holds no correct kernel: its candidates' failures, most frequent first."""
    counts: dict[str, int] = {}
    for node in result.nodes:
        first_line = node.evaluation.reason.strip().splitlines()[0] if node.evaluation.reason.strip() else ""
        why = f"{node.evaluation.status}: {first_line}"
        counts[why[:200]] = counts.get(why[:200], 0) + 1
    if not counts:
        return f"no candidate evaluated; stopped: {result.stop_reason}"
    return "; ".join(f"{n}x {why}" for why, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def run_one(path: Path, args: argparse.Namespace, store: Path) -> dict:
    """One problem's row: optimize it and keep what the table shows (never raises for the problem's sake)."""
    import kevolve

    started = time.monotonic()
    row: dict = {"problem": label(path), "kind": kind_of(path), "correct": False}
    try:
        result = kevolve.optimize(str(path), target=args.target, budget=args.budget, store=store, again=args.fresh,
                                  baselines=tuple(args.baselines), time_budget_s=args.time_budget_s)
    except Exception as exc:  # a problem kevolve cannot take is a row saying why, not the end of the bench
        row["reason"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    else:
        data = result.to_json()
        row.update(correct=result.correct, session=result.session, candidates=len(result.nodes),
                   from_store=result.from_store, stop_reason=result.stop_reason,
                   recipe=(data["best"] or {}).get("recipe"), kernel_seconds=data["kernel_seconds"],
                   untimed=data["untimed"], timing_note=data["timing_note"],
                   disturbed="unreliable: " in data["timing_note"],
                   vs_eager=_speedup(data["speedups"], "eager"), vs_compile=_speedup(data["speedups"], "compile"),
                   untimed_baselines=data["untimed_baselines"])
        if result.final is not None:  # where the final re-timing's time went (the device lock: its "wait")
            row["final_stage_s"] = {k: round(v, 1) for k, v in result.final.evaluation.stage_s.items()}
        if not result.correct:
            row["reason"] = _reason(result)
        elif result.final is not None and not result.final.evaluation.correct:  # the speedups are the search's
            ev = result.final.evaluation
            row["final_failed"] = f"{ev.status}: {ev.reason.strip().splitlines()[0] if ev.reason.strip() else ''}"
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary(rows: list[dict], total: dict[str, int]) -> dict:
    """Per kind: correct fraction over the whole set (a problem not run yet counts as not correct), and the
    geometric means of the speedups over the problems timed undisturbed (kevolve flags a re-timing whose samples
    spread too far as unreliable: a busy machine, not the kernel)."""
    out = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        timed = [r for r in mine if r.get("correct") and not r.get("disturbed")]
        eager = [r["vs_eager"]["median"] for r in timed if r.get("vs_eager")]
        compiled = [r["vs_compile"]["median"] for r in timed if r.get("vs_compile")]
        out[kind] = {"problems": total.get(kind, 0), "run": len(mine), "correct": sum(r["correct"] for r in mine),
                     "timed_vs_eager": len(eager), "faster_than_eager": sum(v > 1.0 for v in eager),
                     "geomean_vs_eager": geomean(eager), "timed_vs_compile": len(compiled),
                     "geomean_vs_compile": geomean(compiled)}
    return out


def _ratio(s: dict | None) -> str:
    return f"{s['median']:.2f}x ({s['low']:.2f}-{s['high']:.2f})" if s else "-"


def _cell(text: str | None, width: int = 160) -> str:
    text = (text or "").replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def markdown(data: dict) -> str:
    s, total = data["summary"], sum(v["problems"] for v in data["summary"].values())
    fmt = lambda v: f"{v:.2f}x" if v else "-"
    lines = [
        f"# Programs offline on `{data['target']}`: {total} KernelBench-format problems, template synthesizer only",
        "",
        (f"Date: {data['date']} (last row {data['updated']}). Machine: {data['machine']}, {data['cpus']} CPUs, "
        f"GPU: {data['gpu']}. kevolve {data['kevolve']}, torch {data['torch']}, Python {data['python']}."),
        "",
        f"Command: `{data['command']}`. Budget {data['budget']} candidates per problem"
        + (f", search time budget {data['time_budget_s']:g} s" if data["time_budget_s"] else "")
        + f"; sizes: {'each file’s SMALL (CPU-test) sizes' if data['small'] else 'the files’ own sizes'}; "
        f"baselines: {', '.join(data['baselines'])}.",
        "",
        ("Speedups are kevolve's final re-timing of the best kernel: the median of the per-sample ratios baseline "
        "time / kernel time, with the 10th-90th percentile range in brackets. Correct fractions count every "
        "problem of the set, run or not. Geometric means and 'faster than eager' count only the correct problems "
        "whose re-timing kevolve did not flag as unreliable (samples spread too far: the machine was busy); "
        "those rows say so."),
        "",
        "| kind | problems | run | correct | faster than eager | geomean vs eager | geomean vs torch.compile |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, v in s.items():
        lines.append(f"| {kind} | {v['problems']} | {v['run']} | {v['correct']}/{v['problems']} "
                     f"({v['correct'] / max(v['problems'], 1):.0%}) | {v['faster_than_eager']}/{v['timed_vs_eager']} | "
                     f"{fmt(v['geomean_vs_eager'])} | {fmt(v['geomean_vs_compile'])} |")
    lines += ["", "| problem | correct | vs eager | vs torch.compile | kernel | candidates | seconds | reason / note |",
              "|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        kernel = f"{r['kernel_seconds'] * 1e6:.1f} us" if r.get("kernel_seconds") else "-"
        failed = f"the final re-timing failed ({r['final_failed']}); the search's timing shown" \
            if r.get("final_failed") else ""
        note = r.get("reason") or failed or r.get("untimed") or r.get("timing_note") or "; ".join(f"{k}: {v}" for k, v in
                                                                 (r.get("untimed_baselines") or {}).items())
        lines.append(f"| `{r['problem']}` | {'yes' if r['correct'] else 'no'} | {_ratio(r.get('vs_eager'))} | "
                     f"{_ratio(r.get('vs_compile'))} | {kernel} | {r.get('candidates', '-')} | {r['seconds']} | "
                     f"{_cell(note)} |")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Whole or not at all: a crash mid-write leaves the previous version."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _machine() -> dict:
    import kevolve
    import torch

    return {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "cpus": os.cpu_count(),
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
            "python": platform.python_version(), "torch": torch.__version__, "kevolve": kevolve.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--budget", type=int, default=4, help="candidates evaluated per problem")
    parser.add_argument("--small", action="store_true", help="each file at its SMALL (CPU-test) sizes")
    parser.add_argument("--baselines", default="eager,compile", help="comma list: eager, compile, max-autotune")
    parser.add_argument("--time-budget", dest="time_budget_s", type=float, default=None,
                        help="seconds of search per problem (the final re-timing comes on top)")
    parser.add_argument("--rerun-failed", action="store_true", help="run again the problems whose row is not correct")
    parser.add_argument("--only", default="", help="comma list of substrings of kind/name, e.g. fused/,conv")
    parser.add_argument("--fresh", action="store_true",
                        help="drop the existing rows instead of resuming, and search again (no stored session reused)")
    parser.add_argument("--store", default=None, help="default: bench/out/programs/<target>.sqlite")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--suffix", default="", help="appended to the result files' names")
    parser.add_argument("--shard", default="", metavar="K/N",
                        help="run every N-th problem to do, from the K-th (1-based): N runs with --suffix of their "
                             "own share one GPU (the device lock keeps their timings apart); --merge joins them")
    parser.add_argument("--merge", nargs="+", default=[], metavar="JSON",
                        help="first add the rows of these result files (shards of this run, or a re-run of some "
                             "problems whose rows replace the table's; same settings)")
    args = parser.parse_args(argv)
    args.baselines = [b for b in args.baselines.split(",") if b]

    work = HERE / "out" / "programs"
    store = Path(args.store or work / f"{args.target}.sqlite")
    store.parent.mkdir(parents=True, exist_ok=True)
    stem = f"programs{args.suffix}"
    json_path, md_path = (result_path(args.out, stem, suffix, args.target) for suffix in (".json", ".md"))

    files = problem_files()
    wanted = [p for p in files if not args.only or any(s in label(p) for s in args.only.split(","))]
    settings = {k: getattr(args, k) for k in SETTINGS}
    now = lambda: dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    data = {**settings, "date": now(), "command": "python bench/programs.py " + shlex.join(sys.argv[1:] if argv is None
                                                                                         else argv), **_machine(),
            "rows": []}
    if json_path.is_file() and not args.fresh:
        old = json.loads(json_path.read_text())
        differing = [k for k in SETTINGS if old.get(k) != settings[k]]
        if differing:
            print(f"{json_path} was made with other settings ({', '.join(f'{k}={old.get(k)!r}' for k in differing)}); "
                  "rerun with those, or pass --fresh to start over", file=sys.stderr)
            return 2
        data["rows"], data["date"] = old["rows"], old["date"]
        data["command"] = old["command"] if old["command"] == data["command"] else \
            f"{old['command']}; resumed with {data['command']}"
    for path in args.merge:
        other = json.loads(Path(path).read_text())
        differing = [k for k in SETTINGS if other.get(k) != settings[k]]
        if differing:
            print(f"{path} was made with other settings ({', '.join(differing)}); not merged", file=sys.stderr)
            return 2
        merged = {r["problem"] for r in other["rows"]}  # a merged row replaces the table's (a re-run's)
        data["rows"] = [r for r in data["rows"] if r["problem"] not in merged] + other["rows"]
        data["rows"].sort(key=lambda r: (KINDS.index(r["kind"]), r["problem"]))
        data["command"] += f"; merged {other['command']}"
    if args.rerun_failed:  # after a fix: the rows of the wanted problems that were not correct run again
        names = {label(p) for p in wanted}
        data["rows"] = [r for r in data["rows"] if r["correct"] or r["problem"] not in names]
    done = {r["problem"] for r in data["rows"]}
    total = {kind: sum(kind_of(p) == kind for p in files) for kind in KINDS}
    # single and fused problems alternate, so a run cut short still covers both kinds
    todo = sorted((p for p in wanted if label(p) not in done),
                  key=lambda p: (files.index(p) - files.index(problem_files((kind_of(p),))[0]), kind_of(p)))
    if args.shard:
        k, n = (int(v) for v in args.shard.split("/"))
        todo = todo[k - 1::n]
    print(f"{len(wanted) - len(todo)} of {len(wanted)} problems already in {json_path}; {len(todo)} to run",
          file=sys.stderr)
    for i, path in enumerate(todo, 1):
        run_path = small_copy(path, work / "small") if args.small else path
        row = run_one(run_path, args, store)
        row["problem"] = label(path)
        data["rows"].append(row)
        data["rows"].sort(key=lambda r: (KINDS.index(r["kind"]), r["problem"]))
        data["updated"] = now()
        data["summary"] = summary(data["rows"], total)
        _write(json_path, json.dumps(data, indent=1) + "\n")
        _write(md_path, markdown(data))
        verdict = (f"correct, {_ratio(row.get('vs_eager'))} vs eager" if row["correct"]
                   else f"not correct: {_cell(row.get('reason'), 120)}")
        print(f"[{i}/{len(todo)}] {label(path)}: {verdict} ({row['seconds']} s)", file=sys.stderr, flush=True)
    if not todo and data["rows"]:  # nothing run: the table rewritten (the rows of a merge written first)
        data["summary"] = summary(data["rows"], total)
        data.setdefault("updated", now())
        if args.merge:
            _write(json_path, json.dumps(data, indent=1) + "\n")
        _write(md_path, markdown(data))
    for kind, v in (data.get("summary") or {}).items():
        print(f"{kind}: {v['correct']}/{v['problems']} correct; geomean vs eager "
              f"{v['geomean_vs_eager'] or 0:.2f}x over {v['timed_vs_eager']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
