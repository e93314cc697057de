"""ATen conformance of a target, written as a committed table: ``bench/results/<target>/conformance.md`` + ``.json``.

    python bench/conformance.py --target cpu                      # the issue's 160 operators
    python bench/conformance.py --target cpu --ops unary,activation
    python bench/conformance.py --target nvidia_h100 --jobs 8      # ops split over 8 processes (a GPU machine)
    python bench/conformance.py --target nvidia_h100 --jobs 2 --suffix _interpreter   # no GPU: the interpreter

Same run as ``kevolve conformance --target T --json`` (cached per operator in a store of its own under
bench/out unless --store is given), plus the machine and versions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path

from layout import result_path

ROOT = Path(__file__).resolve().parent


def _ratio(value) -> str:
    if value is None:
        return "-"
    if value == "inf":
        return "inf"
    return f"{value:.3g}"


def _reasons(items: list[dict]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        counts[item["reason"]] = counts.get(item["reason"], 0) + item.get("samples", 1)
    return "; ".join(f"{n}x {reason}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1])).replace("|", "\\|")


def _check(job: tuple[str, list[str], str, bool, float]) -> dict:
    """One process's share of the operators, with a store of its own (sqlite caches are per process)."""
    from kevolve.conformance.run import run_conformance

    target, ops, store, refresh, timeout_s = job
    report = run_conformance(target, ops, store=store, refresh=refresh, timeout_s=timeout_s,
                             on_op=lambda r: print(f"{r.op}: {r.passed}/{r.total}{' (cached)' if r.cached else ''}",
                                                   file=sys.stderr, flush=True))
    return {"toolchain": report.toolchain, "ops": report.results}


def main() -> int:
    import multiprocessing

    from kevolve.conformance.cli import parse_ops
    from kevolve.conformance.run import Report
    from kevolve.conformance.table import SUITE, SUITE_GROUPS

    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--ops", help="comma list of OpInfo names or groups (default: all 160)")
    parser.add_argument("--store", default=str(ROOT / "out" / "conformance" / "store.sqlite"))
    parser.add_argument("--refresh", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "results"))
    parser.add_argument("--jobs", type=int, default=1, help="processes the operators are split over")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the isolated worker judging an op's "
                        "samples may take; the Triton interpreter's sort/topk/kthvalue want more")
    parser.add_argument("--suffix", default="", help="appended to the result files' names, e.g. _interpreter for "
                        "a GPU target checked through the Triton interpreter (the plain name is its GPU run)")
    args = parser.parse_args()

    started = dt.datetime.now(dt.timezone.utc)
    names = parse_ops(args.ops) or list(SUITE)
    chunks = [names[i::args.jobs] for i in range(args.jobs) if names[i::args.jobs]]
    jobs = [(args.target, chunk, str(Path(args.store).with_suffix(f".{i}.sqlite")) if len(chunks) > 1 else args.store,
             args.refresh, args.timeout) for i, chunk in enumerate(chunks)]
    if len(jobs) == 1:
        parts = [_check(jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
            parts = pool.map(_check, jobs)
    by_op = {r.op: r for part in parts for r in part["ops"]}
    import torch

    toolchain = "; ".join(sorted({part["toolchain"] for part in parts}))
    report = Report(args.target, toolchain, torch.__version__, [by_op[n] for n in names])

    group_of = {op: group for group, ops in SUITE_GROUPS.items() for op in ops}
    command = "python bench/conformance.py --target " + args.target + (f" --ops {args.ops}" if args.ops else "") \
        + (f" --jobs {args.jobs}" if args.jobs > 1 else "") + (f" --suffix {args.suffix}" if args.suffix else "") \
        + (f" --timeout {args.timeout:g}" if args.timeout != 600.0 else "")
    data = report.to_json()
    for op in data["ops"]:  # the committed JSON: declines as reason counts (`kevolve conformance --json` lists each)
        counts: dict[str, int] = {}
        for item in op["declined"]:
            counts[item["reason"]] = counts.get(item["reason"], 0) + 1
        op["declined"] = [{"reason": reason, "samples": n} for reason, n in counts.items()]
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    data.update(date=started.strftime("%Y-%m-%d %H:%M UTC"), command=command, python=platform.python_version(),
                machine=f"{platform.machine()} {platform.processor() or ''}".strip(), gpu=gpu,
                minutes=round((dt.datetime.now(dt.timezone.utc) - started).total_seconds() / 60, 1))
    stem = f"conformance{args.suffix}"
    result_path(args.out, stem, ".json", args.target).write_text(json.dumps(data, indent=1) + "\n")

    ops = data["ops"]
    implemented = [r for r in ops if r["kernels"]]
    lines = [
        f"# ATen conformance on `{args.target}`: kernels judged by PyTorch's OpInfo samples",
        "",
        (f"Date: {data['date']}. Machine: {data['machine']}, {os.cpu_count()} CPUs, GPU: {data['gpu']}. torch "
        f"{torch.__version__}, Python {data['python']}, toolchain: {report.toolchain}. Run time: {data['minutes']} min."),
        "",
        f"Command: `{command}` (the same run as `kevolve conformance --target {args.target} --json`).",
        "",
        (f"{sum(r['cached'] for r in ops)} of the operators' results came from the result cache: judged by an earlier "
         "run with the same kernel sources, samples, checker version and torch, on the machine named here; the run "
         "time above covers the others."),
        "",
        (f"**{report.passed_ops}/{report.total_ops} operators pass** "
         f"({data['samples_passed']}/{data['samples_total']} samples; {data['samples_declined']} declined). "
         f"Operators with a kernel recipe: {len(implemented)}, of which {sum(r['passed'] for r in implemented)} pass "
         f"({sum(r['samples_passed'] for r in implemented)}/{sum(r['samples_total'] for r in implemented)} samples)."),
        "",
        ("Each operator is checked on every float32 sample of every OpInfo entry of its name (the integer dtype "
         "where no entry supports float32) and, where the target computes bfloat16, on every bfloat16 sample too "
         "(column dtype), plus two larger random samples per dtype (514x1031 and 6x33x129 unless the op needs "
         "other ranks; NaN/Inf/signed zeros planted). An operator passes only if every sample passes; a declined "
         "sample counts against it. Worst err/tol: the largest |kernel - reference| / (atol * max(1, rms(ref)) + "
         "rtol * |ref|) over the samples that ran (float32 rtol 1e-4, atol 1e-5; bfloat16 rtol 1.6e-2, atol "
         "8e-3; <= 1 passes); NaN/Inf positions must match. Where PyTorch itself answers the same values two "
         "ways, either passes, and the samples that passed so are listed below the table: an elementwise op's "
         "element computed alone vs inside its vectorised loop (e.g. gelu(+inf), fmod by FLT_MIN), and a bfloat16 "
         "sample's float32 result vs its bfloat16 loop that rounds along the way."),
        "",
        "| group | op | dtype | samples passed/total | declined | failed | worst err/tol | kernels |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ops:
        lines.append(f"| {group_of.get(r['op'], '')} | `{r['op']}` | {r['dtype']} | "
                     f"{r['samples_passed']}/{r['samples_total']}{'' if r['passed'] else ' ✗'} | "
                     f"{_reasons(r['declined'])} | {_reasons(r['failed'])} | "
                     f"{_ratio(r['worst_error_over_tolerance'])} | {r['kernels']} |")
    otherwise = [(r["op"], m) for r in ops for m in r.get("matched_otherwise", [])]
    if otherwise:
        lines += ["", f"Samples passed by matching PyTorch's other answer for the same values ({len(otherwise)}):", ""]
        lines += [f"- `{op}` {m['sample']}: {m['reason']}" for op, m in otherwise]
    skipped = [(r["op"], s) for r in ops for s in r["skipped_entries"]]
    if skipped:
        lines += ["", "OpInfo entries not drawn (no float32): " + "; ".join(f"`{s}`" for _, s in skipped) + "."]
    md = result_path(args.out, stem, ".md", args.target)
    md.write_text("\n".join(lines) + "\n")
    print(f"{report.passed_ops}/{report.total_ops} operators pass; wrote {md}", file=sys.stderr)
    return 0 if report.passed_ops == report.total_ops else 1


if __name__ == "__main__":
    sys.exit(main())
