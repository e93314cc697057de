"""What a user's call of a kernel costs: the op from ``result.as_torch_op()`` beside the kernel's raw launcher,
eager PyTorch and torch.compile, per call and inside a CUDA graph, and what the harness reports for the same kernel.

    python bench/op_overhead.py --target cpu [--ops relu,softmax] [--sizes tiny,default] [--rounds 15]
    python bench/op_overhead.py --target nvidia_h100 --case layer_norm:bfloat16:rows=32768,cols=1024 ...

Each (op, size) is one kernel: the default point of the target's first recipe for the problem at that size
(``--search N`` searches N candidates instead). ``tiny`` is the op's smallest checked shape, where device time is
negligible and the host side is the whole cost; ``default`` is the op's timing shape. Where outputs are sized by
input values (jagged_truncate), every contender cycles through four input sets, as a caller's batches differ.

Per call: each contender is called back to back ``inner`` times and the device synchronised once; the samples of
all contenders are taken round-robin, ``rounds`` times (medians with [p10..p90]). That is the rate a loop of calls
gets: host-bound where the host side is longer than the device's, device-bound otherwise. ``raw`` is the
kernel's launcher with outputs allocated once beforehand (where output sizes depend on values, each call
reads them from the device and allocates, as any caller must); ``op`` the registered op, with its shape lookup,
output allocation and any read that sizes an output; ``in graph``: the same calls replayed from a CUDA graph
(GPU targets; "-" where capture fails, e.g. a size read back to the host), and how many Triton launches a call of
the op makes from Python (0 once its launches are replayed from C). ``harness`` is the kernel's time and
speedup over eager as ``kevolve evaluate`` reports them (on GPUs: device time, each call on a cold L2). The script
runs under a caching malloc setting (``report.CACHING_MALLOC``), which the harness's workers inherit.
Writes ``<out>/<target>/op_overhead.md`` and ``.json`` (``--stem``: another name; see ``layout.py``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from kevolve.api import resolve_problem
from kevolve.delivery.op import torch_op
from kevolve.harness.baselines import compiled_reference
from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.plugins import get_manager
from kevolve.problems.catalog import parse_dims
from kevolve.synthesis.base import Candidate
from layout import RESULTS, result_path
from report import malloc_setting, with_caching_malloc

CONTENDERS = ("raw", "op", "eager", "compile")


def parse_case(text: str) -> tuple[str, str | None, dict[str, int]]:
    """``op[:dtype[:dim=v,dim=v]]``"""
    op, _, rest = text.partition(":")
    dtype, _, dims = rest.partition(":")
    return op, dtype or None, parse_dims(dims.split(",")) if dims else {}


def kernel_for(problem, target: str, search: int, workdir: Path) -> tuple[str, str, str]:
    """(source, language, how it was chosen) for ``problem``."""
    if search:
        import kevolve

        result = kevolve.optimize(problem, target=target, budget=search, again=True, store=workdir / "store.sqlite",
                                  harness=HarnessConfig(workdir=str(workdir / "builds")))
        return result.source, result.language, f"searched, {search} candidates"
    registered = get_manager().target(target)
    recipe = next(r for r in registered.backend.recipes(registered.spec) if r.supports(problem))
    params = recipe.space(problem, registered.backend.facts(registered.spec)).default()
    return recipe.render(problem, params), recipe.language, f"{recipe.name} default"


def raw_launcher(problem, target: str, source: str, language: str, workdir: Path):
    """The kernel built and loaded (the raw launcher ``kernel(inputs, outputs)``) and the runner that loaded it."""
    registered = get_manager().target(target)
    build = registered.backend.toolchain(registered.spec, language).build(
        source, workdir / registered.spec.name / Candidate(source, language).source_hash, problem)
    runner = registered.backend.runner(registered.spec)
    return runner.load(build), runner


def synchronize(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def per_call(thunks: dict, device: str, rounds: int, sample_s: float) -> dict[str, list[float]]:
    """Per-call seconds of each thunk: ``inner`` calls back to back per sample, samples round-robin."""
    inner = {}
    for name, thunk in thunks.items():
        thunk()
        synchronize(device)
        started = time.perf_counter()
        thunk()
        synchronize(device)
        inner[name] = max(1, min(20_000, int(sample_s / max(time.perf_counter() - started, 1e-7))))
    samples = {name: [] for name in thunks}
    for _ in range(rounds):
        for name, thunk in thunks.items():
            synchronize(device)
            started = time.perf_counter()
            for _ in range(inner[name]):
                thunk()
            synchronize(device)
            samples[name].append((time.perf_counter() - started) / inner[name])
    return samples


def python_launches(thunk, calls: int = 5) -> float | None:
    """Triton launches made from Python per call of ``thunk``: 0 where the op replays its launches from C; None
    without Triton."""
    try:
        from kevolve_triton.replay import python_launches as counting
    except ImportError:
        return None
    with counting() as counted:
        for _ in range(calls):
            thunk()
    return counted[0] / calls


def graph_thunk(thunk, calls: int = 20):
    """``calls`` calls of ``thunk`` captured in one CUDA graph (after warm-up on a side stream), as a thunk that
    replays it and counts ``calls``; None where capture fails."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            thunk()
            thunk()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                thunk()
        graph.replay()
        torch.cuda.synchronize()
    except Exception as exc:  # capture fails in many ways (a host read, a host allocation)
        print(f"  no CUDA graph: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}", flush=True)
        torch.cuda.synchronize()
        return None
    return graph.replay, calls


def measure(op_name: str, dtype: str | None, dims: dict[str, int], size: str, args) -> dict:
    problem = resolve_problem(op_name, dims or None, dtype, None)
    if size == "tiny":
        problem = resolve_problem(op_name, problem.check_dims()[0], dtype, None)
    workdir = Path(args.workdir)
    source, language, chosen = kernel_for(problem, args.target, args.search, workdir)
    raw, runner = raw_launcher(problem, args.target, source, language, workdir / "builds")
    device = runner.device
    op = torch_op(problem, args.target, source, language)
    # outputs sized by values: a caller's batches differ from call to call, so every contender cycles through
    # input sets of different sizes (as the harness draws fresh inputs each round)
    generator = torch.Generator().manual_seed(0)
    sets = [[t.to(device) for t in problem.make_inputs(problem.dims, generator)]
            for _ in range(4 if problem.value_sized else 1)]
    inputs = sets[0]
    n_caller = len(inputs) - len(problem.extra_inputs())
    outputs = [[torch.empty(shape, dtype=dt, device=device) for shape, dt in problem.output_specs(s)] for s in sets]
    compiled = compiled_reference(problem, "compile")

    def rotating(call):
        turn = itertools.cycle(range(len(sets)))
        return lambda: call(next(turn))

    def sized_raw(i):  # what a caller of the raw launcher does where sizes depend on values: read, allocate, launch
        raw(sets[i], [torch.empty(shape, dtype=dt, device=device) for shape, dt in problem.output_specs(sets[i])])

    raw_call = sized_raw if problem.value_sized else (lambda i: raw(sets[i], outputs[i]))
    thunks = {"raw": rotating(raw_call), "op": rotating(lambda i: op(*sets[i][:n_caller])),
              "eager": rotating(lambda i: problem.reference(sets[i])),
              "compile": rotating(lambda i: compiled(*sets[i]))}
    for name in ("op", "eager"):
        replay = graph_thunk(thunks[name]) if device != "cpu" else None
        if replay is not None:
            thunks[f"{name} in graph"] = replay[0]
    samples = per_call(thunks, device, args.rounds, args.sample_s)
    launches = python_launches(thunks["op"]) if device != "cpu" else None
    for name in [n for n in samples if n.endswith("in graph")]:
        samples[name] = [s / 20 for s in samples[name]]  # 20 calls per replay
    harness, status = {}, "not run"
    evaluation = evaluate_candidate(Candidate(source, language), problem, args.target,
                                    HarnessConfig(workdir=str(workdir / "builds"))) if args.harness else None
    if evaluation is not None:
        status = evaluation.status if evaluation.correct else f"{evaluation.status}: {evaluation.reason[:200]}"
    if evaluation is not None and evaluation.correct and evaluation.timings:
        harness = {"kernel_s": evaluation.timings["kernel"].median, "eager_s": evaluation.timings["eager"].median,
                   "speedup": vars(evaluation.speedups["eager"]), "timing_note": evaluation.timing_note}
    ratios = [e / o for e, o in zip(samples["eager"], samples["op"])]
    return {"op": op_name, "size": size, "shape": problem.dims, "dtype": str(problem.dtype).removeprefix("torch."),
            "kernel": chosen, "language": language, "samples": samples, "op_vs_eager": statistics.median(ratios),
            "harness": harness, "harness_status": status, "op_doc": op.__doc__, "python_launches": launches}


def cell(samples: list[float] | None) -> str:
    if not samples:
        return "-"
    tenths = statistics.quantiles(samples, n=10) if len(samples) > 1 else samples * 9
    return f"{statistics.median(samples) * 1e6:.1f} [{tenths[0] * 1e6:.1f}..{tenths[-1] * 1e6:.1f}]"


def table(rows: list[dict], info: dict, command: str) -> list[str]:
    graphs = any("op in graph" in r["samples"] for r in rows)
    head = ["op", "shape", "dtype", "kernel", "raw", "op", "op - raw", "eager", "compile", "eager / op"]
    head += ["op in graph", "eager in graph", "Python launches / op call"] if graphs else []
    head += ["harness kernel", "harness vs eager"]
    lines = [f"# What a call costs: the kernel op against its raw launcher, eager and torch.compile ({info['target']})",
             "", f"`{command}`", "", "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             "Per call, microseconds: median [p10..p90] of back-to-back samples taken round-robin (see the script's "
             "docstring). `op - raw` is the difference of the medians. The harness columns are what `kevolve "
             "evaluate` reports for the same kernel.", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for r in rows:
        s = r["samples"]
        shape = "x".join(str(v) for v in r["shape"].values())
        harness = r["harness"]
        cells = [r["op"], shape, r["dtype"], r["kernel"], cell(s["raw"]), cell(s["op"]),
                 f"{(statistics.median(s['op']) - statistics.median(s['raw'])) * 1e6:+.1f}", cell(s["eager"]),
                 cell(s["compile"]), f"{r['op_vs_eager']:.2f}x"]
        launches = r.get("python_launches")
        cells += [cell(s.get("op in graph")), cell(s.get("eager in graph")),
                  "-" if launches is None else f"{launches:g}"] if graphs else []
        cells += [f"{harness['kernel_s'] * 1e6:.1f}", f"{harness['speedup']['median']:.2f}x"] if harness else \
            [r["harness_status"], "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def machine(target: str) -> dict:
    import datetime
    import platform

    info = {"target": target, "python": platform.python_version(), "torch": torch.__version__}
    if torch.cuda.is_available() and target != "cpu":
        import triton

        info.update(gpu=torch.cuda.get_device_name(0), triton=triton.__version__, cuda=torch.version.cuda)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    info.update(cpu=cpu, cores=len(__import__("os").sched_getaffinity(0)), malloc=malloc_setting(),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    return info


def main() -> int:
    # freed blocks kept (no page faults on each call's fresh outputs), or an op that allocates its outputs and the
    # raw launcher that writes into allocated ones measure different things; the workers inherit the setting
    with_caching_malloc()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--ops", default="", help="comma-separated catalog ops (default: all)")
    parser.add_argument("--case", action="append", default=[], help="op[:dtype[:dim=v,...]] (repeatable)")
    parser.add_argument("--sizes", default="tiny,default")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sample-s", type=float, default=0.002)
    parser.add_argument("--search", type=int, default=0, help="search this many candidates per kernel")
    parser.add_argument("--no-harness", dest="harness", action="store_false",
                        help="skip the harness's evaluation of each kernel (its columns then read 'not run')")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--stem", default="op_overhead", help="the files' name in the target's folder under --out (a "
                        "leading target name picks that target's folder: nvidia_h100_op_overhead)")
    parser.add_argument("--workdir", default=tempfile.mkdtemp(prefix="op-overhead-"))
    args = parser.parse_args()
    cases = [parse_case(c) for c in args.case] or [
        (name, None, {}) for name in (args.ops.split(",") if args.ops else get_manager().ops.names())]
    sizes = ["default"] if args.case else args.sizes.split(",")
    info = machine(args.target)
    command = "python bench/op_overhead.py " + " ".join(sys.argv[1:])
    md, record = (result_path(args.out, args.stem, suffix, args.target) for suffix in (".md", ".json"))
    rows = []
    for op_name, dtype, dims in cases:
        for size in sizes:
            print(f"{op_name} {dtype or ''} {dims or ''} {size}", flush=True)
            try:
                rows.append(measure(op_name, dtype, dims, size, args))
            except Exception as exc:  # one broken row must not lose the others' measurements
                print(f"  failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            lines = table(rows, info, command)  # written after every row: a run cut short keeps what it measured
            md.write_text("\n".join(lines) + "\n")
            record.write_text(json.dumps({"info": info, "command": command, "rows": rows}, default=str))
    print("\n".join(table(rows, info, command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
