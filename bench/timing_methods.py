"""One case's kernel files timed by each per-call method the GPU benches use, in a fresh process.

    python bench/timing_methods.py --case '["dot_interaction", {"batch": 16384, "features": 26, "dim": 128},
        "float32"]' [--default] [--compile] [KERNEL.py ...]

Why: gpu_bench's re-timing (the runner's ``time_interleaved``: flush, GPU spin, ten calls a sample) and
row_schedules' ``harness`` (flush, the call between two events) should agree for one kernel; where a table's
per-call time sits far above a probe's, this separates the method (the runner's measured spin or a fixed one,
calls a sample) from the process the table was timed in. Also prints each call's host cost (back-to-back calls,
no synchronisation), which the spin must outlast. A copy of the op's largest input is timed beside the kernels
as a yardstick. ``--default`` adds the target recipe's default kernel for the case (``gpu_bench.default_rows``),
``--compile`` torch.compile of the reference, in this same process (gpu_bench times it in a process of its own:
this shows whether that matters).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from gpu_bench import default_rows, load_kernel_file
from row_schedules import time_harness


def main() -> int:
    from kevolve.api import resolve_problem
    from kevolve_triton.runner import TritonGpuRunner

    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True, help="JSON [op, dims, dtype]")
    parser.add_argument("--default", action="store_true", help="also the target recipe's default kernel")
    parser.add_argument("--compile", action="store_true", help="also torch.compile of the reference, here")
    parser.add_argument("--target", default="nvidia_h100")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    op, dims, dtype = json.loads(args.case)
    problem = resolve_problem(op, dims, dtype, None)
    inputs = [t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(1))]
    specs = [(e.shape, e.dtype) for e in problem.reference(inputs)]
    largest = max(inputs, key=lambda t: t.numel() * t.element_size())
    tmp = Path(tempfile.mkdtemp())
    sources = {Path(f).name: Path(f).read_text() for f in args.files}
    if args.default:
        row = default_rows([[op, dims, dtype]], args.target)[0]
        sources[f"default {row['parameters']}"] = row["finalists"][0]["source"]
    kernels = {name: load_kernel_file(source, tmp, f"k{i}") for i, (name, source) in enumerate(sources.items())}
    thunks = {name: (lambda k=k: k(inputs, [torch.empty(s, dtype=d, device="cuda") for s, d in specs]))
              for name, k in kernels.items()}
    thunks["copy"] = largest.clone
    if args.compile:
        from kevolve.harness.baselines import compiled_reference

        compiled = compiled_reference(problem, "compile")
        thunks["compile"] = lambda: compiled(*inputs)
    for thunk in thunks.values():
        thunk()
    torch.cuda.synchronize()
    for name, thunk in thunks.items():
        print(f"{name}: harness {time_harness(thunk) * 1e6:.1f} us", flush=True)
    runner = TritonGpuRunner()
    print(f"the runner's own spin here: {runner._preroll(thunks)} cycles", flush=True)
    for spin in (None, 200_000, 0, 800_000):
        runner = TritonGpuRunner()
        if spin is not None:  # a fixed spin instead of the runner's measured one
            runner._preroll = lambda thunks, spin=spin: spin
        for inner in (10, 1):
            samples = runner.time_interleaved(thunks, repeats=21, inner={name: inner for name in thunks})
            print(f"runner spin {'measured' if spin is None else spin} inner {inner}: " + ", ".join(
                f"{name} {statistics.median(v) * 1e6:.1f}" for name, v in samples.items()), flush=True)
    for name, thunk in thunks.items():
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(200):
            thunk()
        host = (time.perf_counter() - start) / 200
        torch.cuda.synchronize()
        wall = (time.perf_counter() - start) / 200
        print(f"{name}: host {host * 1e6:.1f} us/call, wall {wall * 1e6:.1f} us/call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
