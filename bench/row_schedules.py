"""Schedules of the shared Triton row / index recipes on the GPU, timed three ways, against eager and the copy.

    python bench/row_schedules.py [--out DIR] [--ops softmax rms_norm ...] [--max-variants 8]
        [--cases '[["matmul", {"m": 4096, "n": 4096, "k": 4096}, "bfloat16"], ...]']
        [--params '{"matmul": [{"LOADS": "tma"}, ...]}'] [--files '{"matmul": ["my_kernel.py", ...]}']

For each case (the row / index cases below, or ``--cases``: any catalog op) it renders the recipe's default and
neighbouring schedules (ROWS x num_warps), the ``--params`` points and the ``--files`` kernels, checks each against
the PyTorch reference on fresh random inputs with the op's tolerance, and times it with:

* ``harness``: as kevolve's GPU runner does: L2 evicted by the runner's own flush before each call, the call
  (host launch and output allocation included) between two device events;
* ``graph1``: the same cold L2, but the call replayed from a one-call CUDA graph (no host launch);
* ``stream``: device time per call of back-to-back calls in one CUDA graph, cycling over enough input/output
  sets (> 4x L2) that every call reads from and writes to DRAM: the steady-state rate, comparable with the
  device-to-device copy, which is measured the same way (a large copy, back to back).

Eager is timed the same three ways. ``BW`` columns are minimum bytes over time as a fraction of the copy.
Rows go to ``<out>/nvidia_h100/row_schedules.json`` as they are timed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from pathlib import Path

import torch
from gpu_bench import (capture, copy_bandwidth, dram_sets, gpu_runner, graph_sets, load_kernel_file, stream_time,
                       when_capturable)
from layout import result_path

_RUNNER = None


def flush() -> None:
    """The eviction of the target's own GPU runner, sized by its backend, so that ``harness`` times calls as
    kevolve's searches do."""
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = gpu_runner()
    _RUNNER.flush_cache()


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def time_harness(fn, repeats: int = 60) -> float:
    fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(repeats):
        flush()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    return median([s.elapsed_time(e) / 1e3 for s, e in events])


def time_graph1(fn, repeats: int = 60) -> float:
    graph = capture(lambda i: fn(), 1)
    graph.replay()
    events = []
    for _ in range(repeats):
        flush()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    return median([s.elapsed_time(e) / 1e3 for s, e in events])


CASES = [
    ("softmax", {"rows": 16384, "cols": 1024}, "float32"),
    ("softmax", {"rows": 65536, "cols": 256}, "bfloat16"),
    ("softmax", {"rows": 4096, "cols": 4096}, "bfloat16"),
    ("layer_norm", {"rows": 16384, "cols": 1024}, "float32"),
    ("layer_norm", {"rows": 65536, "cols": 256}, "bfloat16"),
    ("layer_norm", {"rows": 4096, "cols": 4096}, "bfloat16"),
    ("rms_norm", {"rows": 16384, "cols": 1024}, "float32"),
    ("rms_norm", {"rows": 65536, "cols": 256}, "bfloat16"),
    ("rms_norm", {"rows": 4096, "cols": 4096}, "bfloat16"),
    ("sum", {"rows": 16384, "cols": 2048}, "float32"),
    ("amax", {"rows": 16384, "cols": 2048}, "float32"),
    ("log_softmax", {"rows": 16384, "cols": 1024}, "float32"),
    ("cumsum", {"rows": 16384, "cols": 1024}, "float32"),
    ("gather", {"rows": 16384, "cols": 1024, "k": 256}, "float32"),
    ("bucketize", {"n": 1 << 24, "boundaries": 1024}, "float32"),
    ("exp", {"n": 1 << 25}, "float32"),
]


def variants(space, knobs: dict[str, tuple], limit: int) -> list[dict]:
    base = space.default()
    out = [base]
    names = [k for k in knobs if k in base]
    for values in itertools.product(*(knobs[k] for k in names)):
        p = {**base, **dict(zip(names, values))}
        if p not in out and space.valid(p) and all(v in dict((q.name, q.choices) for q in space.params)[k]
                                                     for k, v in p.items()):
            out.append(p)
    # keep the default and the points nearest to it (fewest knobs changed, then smallest moves)
    def distance(p):
        return sum(abs(math.log2(p[k]) - math.log2(base[k])) for k in names if isinstance(p[k], int) and p[k] > 0)
    return [base] + sorted(out[1:], key=distance)[:limit - 1]


def main() -> int:
    from kevolve.api import resolve_problem
    from kevolve.harness import checks
    from kevolve.plugins import get_manager
    from kevolve_triton.recipes import all_recipes

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--ops", nargs="*")
    parser.add_argument("--max-variants", type=int, default=8)
    parser.add_argument("--params", default="", help="JSON {op: [params, ...]} tried besides the variants")
    parser.add_argument("--files", default="", help="JSON {op: [kernel file, ...]} timed beside the variants")
    parser.add_argument("--cases", default="", help="JSON [[op, dims, dtype], ...] instead of the row cases")
    args = parser.parse_args()
    extra = json.loads(args.params) if args.params else {}
    files = json.loads(args.files) if args.files else {}
    cases = [tuple(case) for case in json.loads(args.cases)] if args.cases else CASES
    registered = get_manager().target("nvidia_h100")
    facts = registered.backend.facts(registered.spec)
    copy = copy_bandwidth()
    print(f"copy {copy / 1e12:.3f} TB/s, {torch.cuda.get_device_name()}", flush=True)
    results = []
    tmp = Path(tempfile.mkdtemp())
    knobs = {"ROWS": (1, 2, 4, 8, 16, 32), "num_warps": (1, 2, 4, 8, 16), "BLOCK_ROWS": (1, 2, 4, 8),
             "BLOCK_K": (64, 128, 256), "BLOCK": (512, 1024, 2048), "ITEMS": (1, 2, 4), "SEARCH": ("global", "shared")}
    for op, dims, dtype in cases:
        if args.ops and op not in args.ops:
            continue
        problem = resolve_problem(op, dims, dtype, None)
        recipe = next(r for r in all_recipes() if r.supports(problem))
        space = recipe.space(problem, facts)
        gen = torch.Generator().manual_seed(1)
        inputs = [t.cuda() for t in problem.make_inputs(problem.dims, gen)]
        expected = [t.cuda() for t in problem.reference(inputs)]
        nbytes = problem.bytes_moved(problem.dims, inputs, expected, facts.memory_granule_bytes)
        sets = dram_sets(nbytes)
        in_sets, out_sets = graph_sets(problem, inputs, gen, sets)
        eager = {"harness": time_harness(lambda: problem.reference(inputs)),
                 "graph1": when_capturable(time_graph1, lambda: problem.reference(inputs)),
                 "stream": when_capturable(stream_time, lambda i: problem.reference(in_sets[i]), sets)}
        row = {"op": op, "dims": dims, "dtype": dtype, "bytes": nbytes, "eager": eager, "variants": []}
        print(f"\n== {op} {dims} {dtype}: {nbytes / 1e6:.1f} MB, floor {nbytes / copy * 1e6:.1f} us; eager "
              + " ".join(f"{k} {v * 1e6:.1f}us ({nbytes / v / copy:.0%})" for k, v in eager.items() if v), flush=True)
        points = variants(space, knobs, args.max_variants) + [space.fix(p) for p in extra.get(op, [])]
        sources = [(params, recipe.render(problem, params)) for params in points]
        sources += [({"file": path}, Path(path).read_text()) for path in files.get(op, [])]
        for idx, (params, source) in enumerate(sources):
            try:
                kernel = load_kernel_file(source, tmp, f"k_{op}_{idx}_{len(results)}")
                out = checks.allocate_poisoned(expected, 0, "cuda")
                kernel(inputs, out)
                torch.cuda.synchronize()
                ok = all(checks.compare(o, e, problem.tolerance(problem.dtype), 0) is None
                         for o, e in zip(out, expected))
                t = {"harness": time_harness(lambda: kernel(inputs, [torch.empty_like(e) for e in expected])),
                     "graph1": time_graph1(lambda: kernel(inputs, out_sets[0])),
                     "stream": stream_time(lambda i: kernel(in_sets[i], out_sets[i]), sets)}
            except Exception as exc:  # noqa: BLE001
                print(f"  {params}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                continue
            row["variants"].append({"params": params, "ok": ok, "times": t})
            print(f"  {'ok ' if ok else 'BAD'} {params}: " + " ".join(
                f"{k} {v * 1e6:.1f}us ({nbytes / v / copy:.0%})" for k, v in t.items()), flush=True)
        results.append(row)
        result_path(args.out, "row_schedules", ".json", "nvidia_h100").write_text(
            json.dumps({"copy": copy, "rows": results}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
