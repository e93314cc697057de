"""The ``kevolve`` command: targets, ops, optimize, evaluate, show, sessions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kevolve.errors import KevolveError

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise KevolveError(f"bad {what} {item!r}: write NAME=VALUE")
        try:
            result[name] = json.loads(value)
        except json.JSONDecodeError:
            result[name] = value
    return result


def _shapes(items: list[str] | None) -> dict[str, int] | None:
    from kevolve.problems.catalog import parse_dims

    return parse_dims(items) if items else None


def cmd_targets(args: argparse.Namespace) -> int:
    import kevolve
    from kevolve.plugins import get_manager

    statuses = kevolve.targets()
    failures = get_manager().failures
    if args.json:
        print(json.dumps({"targets": [vars(s) for s in statuses],
                          "plugin_errors": [{"plugin": f.plugin, "error": f.error} for f in failures]}, indent=2))
        return 0
    if statuses:
        table = Table(title="installed targets")
        for column in ("target", "aliases", "distribution", "languages", "usable here"):
            table.add_column(column)
        for s in statuses:
            table.add_row(s.name, ", ".join(s.aliases), s.distribution, ", ".join(s.languages),
                          "yes" if s.usable else f"no: {s.reason}")
        out.print(table)
    else:
        out.print("no targets installed: kevolve needs a backend plugin, e.g. `pip install kevolve-cpu`")
    for f in failures:
        err.print(f"[red]plugin {f.plugin} failed to load[/red]: {f.error}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from kevolve.plugins import get_manager

    ops = get_manager().ops
    rows = [ops.get(name) for name in ops.names()]
    if args.json:
        print(json.dumps([{"name": o.name, "family": o.family, "inputs": o.inputs, "dims": o.dims,
                           "dtypes": o.dtypes, "attrs": o.attrs, "description": o.description} for o in rows],
                         indent=2))
        return 0
    table = Table(title="catalog ops")
    for column in ("op", "family", "inputs", "default shape", "dtypes", "description"):
        table.add_column(column)
    for o in rows:
        table.add_row(o.name, o.family, ", ".join(o.inputs), " ".join(f"{k}={v}" for k, v in o.dims.items()),
                      ", ".join(o.dtypes), o.description)
    out.print(table)
    return 0


class _ProgressView:
    """A progress bar over evaluated candidates, with the current node's stage and the best speedup."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=err,
                                 disable=not enabled)
        self.task = self.progress.add_task("searching", total=total, status="")
        self.best = 0.0
        self.tokens = 0
        self.started = False

    def __enter__(self) -> _ProgressView:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            self.progress.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.started:  # only once the search really runs: errors print without a bar
            self.started = True
            self.progress.start()
        kind = event["kind"]
        if kind == "stage":
            self.progress.update(self.task, status=f"node {event['node']}: {event['stage']}")
        elif kind == "node":
            self.best = event["best"]
            # untimed targets rank by the modeled fraction of the roofline, which is not a speedup
            fmt = (lambda f: f"{f:.0%} of roofline (modeled)") if event.get("untimed") else (lambda f: f"{f:.2f}x")
            self.progress.update(self.task, completed=event["evaluated"], description=f"searching (best {fmt(self.best)})",
                                 status=f"node {event['node']}: {event['status']} {fmt(event['fitness'])}")
            if event.get("tokens"):
                self.tokens += event["tokens"]
                self.progress.update(self.task, status=f"node {event['node']}: {event['status']} "
                                                       f"{fmt(event['fitness'])}, {self.tokens} tokens so far")
        elif kind == "final":
            self.progress.update(self.task, status=f"re-timing best node {event['node']} against all baselines")


def cmd_optimize(args: argparse.Namespace) -> int:
    import kevolve

    view = _ProgressView(args.budget, enabled=not args.quiet)
    with view:
        if args.resume:
            result = kevolve.resume(args.resume, store=args.store, budget=args.budget if args.budget_given else None,
                                    progress=view, executor=args.executor)
        else:
            if not args.op:
                raise KevolveError("name an op (see `kevolve ops`) or a KernelBench PROBLEM.py, or --resume SESSION")
            result = kevolve.optimize(
                args.op, target=args.target, budget=args.budget, seed=args.seed, store=args.store,
                dims=_shapes(args.shape), dtype=args.dtype, attrs=_pairs(args.attr, "attribute") or None,
                time_budget_s=args.time_budget, target_speedup=args.target_speedup, search=args.search,
                synthesizer=args.synthesizer, again=args.again, baselines=args.baselines.split(","),
                knowledge=not args.no_knowledge, skills=not args.no_skills, progress=view, executor=args.executor)
    if args.save and result.correct:
        result.save(args.save)
    if args.report:
        result.report(args.report)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        out.print(result.summary())
        if result.correct:
            out.print(f"\n[bold]best kernel ({result.language})[/bold]")
            out.print(result.source, markup=False, highlight=False)
        if args.save and result.correct:
            out.print(f"saved standalone module to {args.save}")
        if args.report:
            out.print(f"wrote report {args.report}")
    return 0 if result.correct else 1


def cmd_optimize_model(args: argparse.Namespace) -> int:
    import kevolve
    from kevolve.plugins import get_manager
    from kevolve.problems.vetting import load_problem_file

    registered = get_manager().usable_target(args.target)
    device = registered.backend.runner(registered.spec).device
    problem = load_problem_file(Path(args.file))
    model = problem.model.to(device)
    fresh = lambda: [t.to(device) for t in problem.module.get_inputs()]  # noqa: E731

    def say(event: dict[str, Any]) -> None:
        if args.quiet:
            return
        if event["kind"] == "region":
            err.print(f"region {event['index']} of at most {event['of']}: {event['path']} ({event['share']:.0%} of "
                      f"the forward), {event['elapsed_s']:.0f} s in")
        elif event["kind"] in ("profile", "check", "time"):
            err.print({"profile": "profiling the model by submodule", "check": "checking the whole model's outputs",
                       "time": "timing the whole model"}[event["kind"]])

    fast = kevolve.optimize_model(model, fresh(), target=args.target, budget=args.budget, seed=args.seed,
                                  store=args.store, time_budget_s=args.time_budget, synthesizer=args.synthesizer,
                                  max_regions=args.max_regions, min_share=args.min_share,
                                  fresh_inputs=fresh,
                                  compare_compile=not args.no_compile, progress=say)
    if args.save:
        fast.save(args.save)
    if args.json:
        print(json.dumps(fast.report.to_json(), indent=2, default=str))
    else:
        out.print(fast.report.summary(), markup=False, highlight=False)
        if args.save:
            out.print(f"saved the region kernels to {args.save} (kevolve.load_model(model, DIR))")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import kevolve

    result = kevolve.evaluate(args.file, args.op, target=args.target, language=args.language,
                              dims=_shapes(args.shape), dtype=args.dtype,
                              attrs=_pairs(args.attr, "attribute") or None, baselines=args.baselines.split(","))
    ev = result.evaluation
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        out.print(f"{result.problem.describe()} on {result.target}: [bold]{ev.status}[/bold] (stage {ev.stage})")
        if not ev.correct:
            out.print(f"rejected: {ev.reason}", markup=False)
            if ev.evidence.get("log"):
                out.print(ev.evidence["log"], markup=False, highlight=False)
            if ev.evidence.get("repro"):  # the toolchain's own command, to rerun the failure outside kevolve
                out.print(f"repro: {ev.evidence['repro']}", markup=False, highlight=False)
        for line in ev.timing_lines():
            out.print(line, markup=False)
        if ev.resource_line():
            out.print(ev.resource_line(), markup=False)
        if ev.diagnosis:
            out.print(f"diagnosis: {ev.diagnosis.summary}", markup=False)
    return 0 if ev.correct else 1


def cmd_show(args: argparse.Namespace) -> int:
    from kevolve.api import _open_store, session_result

    store = _open_store(args.store, readonly=True)
    session = store.session(args.session)
    result = session_result(session.id, store)
    if args.json:
        print(json.dumps({**result.to_json(), "status": session.status}, indent=2, default=str))
        return 0
    out.print(result.summary().replace(", from the store", f", {session.status}"))
    table = Table(title="search tree")
    tokens = [sum(int((n.trace.get("usage") or {}).get(k, 0)) for k in ("input_tokens", "output_tokens"))
              for n in result.nodes]
    columns = ["node", "parent", "memory op", "synthesizer", "recipe", "status", "fitness", "diagnosis / reason",
               "note"] + (["tokens"] if any(tokens) else [])
    for column in columns:
        table.add_column(column)
    for n, used in zip(result.nodes, tokens):
        ev = n.evaluation
        table.add_row(str(n.node_id), str(n.parent_id), n.memory_op, n.synthesizer, n.recipe, ev.status,
                      f"{ev.fitness:.2f}", (ev.diagnosis.kind if ev.diagnosis else ev.reason)[:70], n.note[:50],
                      *([str(used)] if any(tokens) else []))
    out.print(table)
    if any(tokens):
        out.print(f"{sum(tokens)} tokens used by the search's LLM requests")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from kevolve.api import session_result
    from kevolve.report import report_data, write_compare, write_report

    sessions = args.compare or [args.session]
    if not sessions[0]:
        raise KevolveError("name a session (`kevolve sessions` lists them), or several with --compare")
    reports = [report_data(session_result(s, args.store)) for s in sessions]
    path = args.output or ("compare" if args.compare else reports[0].session[:12]) + ".html"
    written = write_compare(reports, path) if args.compare else write_report(reports[0], path)
    out.print(f"wrote report {written}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    from kevolve.api import _open_store

    sessions = _open_store(args.store, readonly=True).sessions(args.limit)
    if args.json:
        print(json.dumps([{**vars(s), "config": s.config.to_dict()} for s in sessions], indent=2, default=str))
        return 0
    table = Table(title="sessions")
    for column in ("session", "problem", "target", "status", "best", "stop reason"):
        table.add_column(column)
    for s in sessions:
        table.add_row(s.id, s.problem_key.rsplit(":", 1)[0], s.target, s.status, f"{s.best_fitness:.2f}x", s.stop_reason)
    out.print(table)
    return 0


def cmd_docs_search(args: argparse.Namespace) -> int:
    from kevolve.knowledge import CATEGORIES, Signals
    from kevolve.plugins import get_manager

    manager = get_manager()
    target = manager.target(args.target).spec.name if args.target else ""
    signals = Signals(target=target, language=args.language or "", family=args.family or "",
                      diagnosis=args.diagnosis or "", query=args.query)
    categories = tuple(args.category) if args.category else CATEGORIES
    hits = manager.knowledge.search(signals, limit=args.limit, categories=categories)
    contract = manager.knowledge.contract(target, args.language) if target and args.language else []
    if args.json:
        print(json.dumps({"ranking": manager.knowledge.ranking, "contract": [f"{p.pack}/{p.path}" for p in contract],
                          "hits": [{"pack": h.passage.pack, "path": h.passage.path, "title": h.passage.title,
                                    "category": h.passage.category, "score": h.score, "bm25": h.bm25,
                                    "similarity": h.similarity, "matched_tags": list(h.matched_tags),
                                    "matched_words": list(h.matched_words)} for h in hits]}, indent=2))
        return 0
    out.print(f"ranking: {manager.knowledge.ranking}; {len(manager.knowledge.passages)} passages in "
              f"{len(manager.docs.packs)} packs ({', '.join(manager.docs.packs)})")
    if contract:
        out.print("always sent with prompts (kernel file contract): "
                  + ", ".join(f"{p.pack}/{p.path}" for p in contract), markup=False)
    if not hits:
        out.print("nothing selected: no passage applies to these signals")
        return 0
    table = Table(title=f"what would be retrieved for {args.query!r}")
    for column in ("#", "score", "passage", "category", "why"):
        table.add_column(column)
    for i, h in enumerate(hits, 1):
        why = [f"tags: {', '.join(h.matched_tags)}" if h.matched_tags else "untagged (applies everywhere)",
               f"BM25 {h.bm25:.2f}" + (f" on {', '.join(h.matched_words[:8])}" if h.matched_words else "")]
        if h.similarity is not None:
            why.append(f"embedding similarity {h.similarity:.2f}")
        table.add_row(str(i), f"{h.score:.2f}", f"{h.passage.title}\n{h.passage.pack}/{h.passage.path}",
                      h.passage.category, "; ".join(why))
    out.print(table)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from kevolve.api import _open_store

    if args.format == "trajectories":
        from kevolve.trajectories import export_file

        count = export_file(_open_store(args.store, readonly=True), args.path, sessions=args.session,
                            target=args.target)
        err.print(f"wrote {count} trajectory records to {args.path}")
        return 0
    if args.format == "backendbench":
        from kevolve.conformance.export import export_backendbench

        export = export_backendbench(args.path, args.target or "cpu", store=args.store)
        for op, why in export.uncovered.items():
            err.print(f"not covered {op}: {why}", highlight=False)
        ops = len(export.covered) + len(export.uncovered)
        err.print(f"wrote {len(export.written)} BackendBench overload directories to {args.path}, covering "
                  f"{len(export.covered)} of {ops} operators (kevolve_export.json there says which)")
        return 0
    raise KevolveError(f"unknown export format {args.format!r}; choose trajectories or backendbench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kevolve", description="Find fast, correct kernels by search.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("targets", help="installed targets and whether each is usable here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_targets)

    p = sub.add_parser("ops", help="the problem catalog")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_ops)

    def problem_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--target", default="cpu")
        p.add_argument("--dtype", help="float32, bfloat16, ... (default: the op's first)")
        p.add_argument("--shape", nargs="*", metavar="DIM=INT", help="override the timing shape, e.g. rows=8192")
        p.add_argument("--attr", nargs="*", metavar="NAME=VALUE", help="op attributes, e.g. k=16")
        p.add_argument("--baselines", default="eager",
                       help="comma list of eager, compile, max-autotune (compiled under a time limit first)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("--store", help="store path or postgresql:// URL (default $KEVOLVE_STORE or "
                       "~/.kevolve/kevolve.sqlite)")

    p = sub.add_parser("optimize", help="search for a fast kernel")
    p.add_argument("op", nargs="?", help="catalog op name or KernelBench PROBLEM.py")
    problem_args(p)
    p.add_argument("--budget", type=int, default=20, help="candidates to evaluate (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, help="seconds")
    p.add_argument("--target-speedup", type=float, help="stop once this speedup over eager is reached")
    p.add_argument("--search", default="mcts", choices=["mcts", "evolution"])
    p.add_argument("--synthesizer", default="template",
                   help="template (offline), PROVIDER:MODEL[,option=value] (e.g. anthropic:claude-sonnet-4-5, "
                        "openai:MODEL for OpenAI-compatible servers), or several joined by +")
    p.add_argument("--no-knowledge", action="store_true", help="withhold the docs packs' passages and hints")
    p.add_argument("--no-skills", action="store_true", help="withhold what earlier sessions learnt (skills, winners at other shapes)")
    p.add_argument("--again", action="store_true", help="search even if the store has a solution")
    p.add_argument("--resume", metavar="SESSION", help="continue an interrupted session")
    p.add_argument("--executor", default=None, metavar="local[:N]|ray[:ADDRESS]",
                   help="where candidates are evaluated: this host (default; N builds at once) or a Ray cluster "
                        "(pip install 'kevolve[ray]')")
    p.add_argument("--save", metavar="DIR", help="write the best kernel as a standalone module")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--report", metavar="FILE.html", help="write the search as a self-contained HTML report")
    p.set_defaults(run=cmd_optimize)

    p = sub.add_parser("optimize-model", help="optimize a model's hot regions and swap their kernels in")
    p.add_argument("file", help="a file with Model, get_inputs() and get_init_inputs() (KernelBench format)")
    p.add_argument("--target", default="cpu")
    p.add_argument("--budget", type=int, default=8, help="candidates to evaluate per region (default 8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, help="seconds for all regions together")
    p.add_argument("--synthesizer", default="template", help="as for optimize")
    p.add_argument("--max-regions", type=int, default=4, help="regions to optimize at most (default 4)")
    p.add_argument("--min-share", type=float, default=0.05,
                   help="leave regions under this share of the forward's time alone (default 0.05)")
    p.add_argument("--no-compile", action="store_true", help="do not time torch.compile of the model")
    p.add_argument("--save", metavar="DIR", help="write the region kernels (kevolve.load_model(model, DIR))")
    p.add_argument("--store", help="store path or postgresql:// URL")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=cmd_optimize_model)

    p = sub.add_parser("evaluate", help="verify and time a kernel file with the search's harness")
    p.add_argument("file")
    p.add_argument("--op", required=True)
    p.add_argument("--language", help="cpp, numba, ... (default: from the file suffix)")
    problem_args(p)
    p.set_defaults(run=cmd_evaluate)

    p = sub.add_parser("show", help="a session's result and search tree")
    p.add_argument("session")
    p.add_argument("--json", action="store_true")
    p.add_argument("--store")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("report", help="a session as a self-contained HTML report (tree, roofline, timings)")
    p.add_argument("session", nargs="?", help="session id or unique prefix")
    p.add_argument("-o", "--output", metavar="FILE.html", help="where to write it (default SESSION.html)")
    p.add_argument("--compare", nargs="+", metavar="SESSION",
                   help="one problem's sessions on several targets, side by side")
    p.add_argument("--store")
    p.set_defaults(run=cmd_report)

    p = sub.add_parser("docs", help="the knowledge base")
    docs = p.add_subparsers(dest="docs_command", required=True)
    p = docs.add_parser("search", help="what would be retrieved for a query and signals, and why")
    p.add_argument("query")
    p.add_argument("--target", help="target whose hardware passages apply (default: none)")
    p.add_argument("--language")
    p.add_argument("--family", help="op family, e.g. row_softmax (see `kevolve ops`)")
    p.add_argument("--diagnosis", help="memory-bound, compute-bound, occupancy-limited, latency-bound, spill-bound")
    p.add_argument("--category", action="append", choices=["correctness", "guidance", "hardware"])
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_docs_search)

    p = sub.add_parser("export", help="write stored results in another format")
    p.add_argument("--format", required=True, choices=["trajectories", "backendbench"])
    p.add_argument("path", help="output file (trajectories: JSON lines) or directory (backendbench: the passing "
                                "conformance kernels of --target, default cpu)")
    p.add_argument("--session", action="append", help="only this session (repeatable; default: all)")
    p.add_argument("--target", help="only sessions on this target")
    p.add_argument("--store")
    p.set_defaults(run=cmd_export)

    from kevolve.conformance.cli import add_parser as add_conformance_parser

    add_conformance_parser(sub)

    p = sub.add_parser("sessions", help="recent sessions in the store")
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--json", action="store_true")
    p.add_argument("--store")
    p.set_defaults(run=cmd_sessions)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.command == "optimize":
        args.budget_given = any(a == "--budget" or a.startswith("--budget=") for a in argv)
    try:
        return args.run(args)
    except KevolveError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        return 2
    except KeyboardInterrupt as exc:  # a search's says how to resume it
        err.print(str(exc) or "interrupted", markup=False, highlight=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
