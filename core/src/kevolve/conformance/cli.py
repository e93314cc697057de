"""The ``kevolve conformance`` subcommand (registered by :mod:`kevolve.cli`)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="kernels for ATen operators, judged by PyTorch's OpInfo samples")
    p.add_argument("--target", default="cpu")
    p.add_argument("--ops", help="comma list of OpInfo names or groups (unary, activation, binary, reduction, "
                                 "norm, matmul, conv, index, other); default: all 160")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true", help="list every failed and declined sample (JSON: every "
                                                          "sample and each kernel's source)")
    p.add_argument("--refresh", action="store_true", help="re-check even what the cache holds")
    p.add_argument("--dtypes", help="comma list limiting the dtypes checked besides float32 (default: every one the "
                   "target computes, e.g. bfloat16); `--dtypes float32` checks float32 only")
    p.add_argument("--store", help="store path; the cache is a .conformance.sqlite file beside it")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds the isolated worker judging an op's samples may take (default 600; a GPU "
                        "target's larger samples through the Triton interpreter may want more)")
    p.set_defaults(run=cmd_conformance)


def parse_ops(text: str | None) -> list[str] | None:
    from kevolve.conformance.table import SUITE_GROUPS

    if not text:
        return None
    names: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        names.extend(SUITE_GROUPS.get(item, (item,)))
    return list(dict.fromkeys(names))


def _ratio(value: float) -> str:
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}"


def _summary(counts: dict[str, int], limit: int = 2) -> str:
    items = sorted(counts.items(), key=lambda kv: -kv[1])
    text = "; ".join(f"{n}x {reason}" for reason, n in items[:limit])
    return text + (f"; +{len(items) - limit} more reasons" if len(items) > limit else "")


def cmd_conformance(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from kevolve.conformance.run import run_conformance
    from kevolve.errors import KevolveError

    out, err = Console(soft_wrap=True), Console(stderr=True, soft_wrap=True)

    def progress(result: Any) -> None:
        if not args.json:
            mark = "ok" if result.ok else "FAIL"
            err.print(f"{result.op}: {result.passed}/{result.total} {mark}"
                      f"{' (cached)' if result.cached else ''}", highlight=False)

    dtypes = tuple(d.strip() for d in args.dtypes.split(",") if d.strip()) if args.dtypes else None
    if args.timeout <= 0:
        raise KevolveError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    report = run_conformance(args.target, parse_ops(args.ops), store=args.store, refresh=args.refresh, dtypes=dtypes,
                             timeout_s=args.timeout, on_op=progress)
    if args.json:
        print(json.dumps(report.to_json(verbose=args.verbose), indent=1))
        return 0 if report.passed_ops == report.total_ops else 1
    table = Table(title=f"conformance on {report.target} ({report.toolchain}; torch {report.torch_version})")
    table.add_column("op", no_wrap=True)
    table.add_column("samples", no_wrap=True)
    for column in ("declined", "failed", "worst err/tol"):
        table.add_column(column, overflow="fold")
    for r in report.results:
        style = "" if r.ok else "red"
        table.add_row(r.op, f"{r.passed}/{r.total}", _summary(r.reasons("declined")) if r.declined else "",
                      _summary(r.reasons("failed")) if r.failed else "", _ratio(r.worst), style=style)
    out.print(table)
    if args.verbose:
        for r in report.results:
            for s in [*r.failed, *r.declined]:
                out.print(f"{r.op}  {s.status}  {s.label}: {s.reason}", highlight=False)
    samples = sum(r.passed for r in report.results), sum(r.total for r in report.results)
    out.print(f"{report.passed_ops}/{report.total_ops} operators pass; {samples[0]}/{samples[1]} samples",
              highlight=False)
    return 0 if report.passed_ops == report.total_ops else 1
