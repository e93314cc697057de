"""Per-call times behind the two ways of evicting L2 before a timed call: a write over a buffer (kevolve's GPU
runner until 2026-11-26) and a read over it (since then), interleaved in one run.

    python bench/flush_methods.py --out $OUT [--results bench/results/nvidia_h100/kernels.json]

Why: after a write, L2 holds the flush's own dirty lines, and the timed call pays to write them back before its
data has room; the cost is fixed per call, so it weighs most on calls of tens of MB, which is where the table's
kernels and a ``copy_`` of their bytes fell furthest below the 1 GiB copy's bandwidth. A read evicts as well and
leaves nothing to write back. Times ``copy_`` at sizes from 8 MB to 512 MB (bytes read plus written) and the
committed table's kernels for a few rows (with eager beside them), each with the runner's spin and events, in
rounds that alternate the flushes; both flushes cover the same bytes (twice the L2, as the backend sizes it).
Writes ``<out>/nvidia_h100/flush_methods.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from gpu_bench import (copy_bandwidth, gpu_runner, interleaved_samples, load_kernel_file, memory_granule,
                       per_call_cell, same_bytes_copy, write_report)
from layout import RESULTS, result_path

#: rows of the committed table timed here: the three below 80% of the copy per call on 2026-11-26 and three
#: that were not, small to large
ROWS = [("keyed_feature_hash", {"features": 26, "batch": 4096, "pool": 20}, "int64"),
        ("layer_norm", {"rows": 4096, "cols": 4096}, "bfloat16"),
        ("gather", {"rows": 16384, "cols": 1024, "k": 256}, "float32"),
        ("feature_hash", {"n": 1 << 20}, "int64"),
        ("softmax", {"rows": 4096, "cols": 4096}, "bfloat16"),
        ("rms_norm", {"rows": 16384, "cols": 4096}, "bfloat16")]
COPY_MB = (8, 16, 34, 64, 128, 512)


def flushing_runner():
    """The target's GPU runner with a ``mode`` switch between the write flush and its own read flush, both over
    the bytes its backend sizes the flush to."""
    base = gpu_runner()

    class Runner(type(base)):
        mode = "read"

        def flush_cache(self) -> None:
            if self.mode == "read":
                super().flush_cache()
                return
            if getattr(self, "_written", None) is None:
                self._written = torch.empty(self.flush_bytes, dtype=torch.int8, device=self.device)
            self._written.zero_()

    return Runner(base.device, flush_bytes=base.flush_bytes)


def thunks_for_rows(results: Path) -> tuple[dict, dict]:
    import kevolve

    rows = json.loads(results.read_text())["rows"]
    tmp = Path(tempfile.mkdtemp())
    thunks, nbytes = {}, {}
    granule = memory_granule()
    for i, (op, dims, dtype) in enumerate(ROWS):
        row = next(r for r in rows if (r["op"], r["shape"], r["dtype"]) == (op, dims, dtype))
        problem = kevolve.api.resolve_problem(op, dims, dtype, None)
        inputs = [t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(1))]
        expected = [t.cuda() for t in problem.reference(inputs)]
        kernel = load_kernel_file(row["source"], tmp, f"k{i}")
        name = f"{op} {'x'.join(map(str, dims.values()))} {dtype}"
        thunks[name] = lambda k=kernel, inputs=inputs, expected=expected: k(inputs, [torch.empty_like(e)
                                                                                  for e in expected])
        thunks[name + " eager"] = lambda p=problem, inputs=inputs: p.reference(inputs)
        nbytes[name] = nbytes[name + " eager"] = problem.bytes_moved(problem.dims, inputs, expected, granule)
    for mb in COPY_MB:
        thunks[f"copy_ {mb} MB"] = same_bytes_copy(mb << 20)
        nbytes[f"copy_ {mb} MB"] = mb << 20
    return thunks, nbytes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--results", default=str(result_path(RESULTS, "kernels", ".json", "nvidia_h100")))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    thunks, nbytes = thunks_for_rows(Path(args.results))
    for thunk in thunks.values():
        thunk()
    torch.cuda.synchronize()
    copy = copy_bandwidth()
    runner = flushing_runner()
    modes = ("write", "read")
    samples = {mode: {name: [] for name in thunks} for mode in modes}
    for _ in range(args.rounds):
        for mode in modes:
            runner.mode = mode
            for name, values in interleaved_samples(runner, thunks, 1).items():
                samples[mode][name] += values
    device = torch.cuda.get_device_name()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Per-call times behind a write flush and a read flush ({device})", "",
             (f"Python {platform.python_version()}, torch {torch.__version__}, triton {_triton_version()}. "
              f"Date: {when}. Command: `python bench/flush_methods.py --out $OUT`."), "",
             (f"Both flushes cover {runner.flush_bytes >> 20} MiB (twice the L2). Each call: the flush, the runner's "
              "GPU spin, the call between two device events; ten calls a sample, 11 samples a round, "
              f"{args.rounds} rounds a flush, the flushes alternating. `BW`: the minimum bytes (for `copy_`, read "
              f"plus written) over the median, as a fraction of a 1 GiB copy's bandwidth measured in this run "
              f"({copy / 1e12:.3f} TB/s). Kernels are the committed table's "
              f"(`{Path(args.results).parent.name}/{Path(args.results).name}`)."), "",
             "| call | MB | write: us [p10..p90] | BW | read: us [p10..p90] | BW | write / read |",
             "|---|---|---|---|---|---|---|"]
    for name in thunks:
        cells = []
        for mode in modes:
            median, cell = per_call_cell(samples[mode][name])
            cells += [cell, f"{nbytes[name] / median / copy:.0%}"]
        ratio = statistics.median(samples["write"][name]) / statistics.median(samples["read"][name])
        lines.append(f"| {name} | {nbytes[name] / 1e6:.1f} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    write_report(out, "flush_methods", lines, {
        "device": device, "date": when, "torch": torch.__version__, "copy_bytes_per_s": copy,
        "flush_bytes": runner.flush_bytes, "bytes": nbytes, "samples_s": samples})
    return 0


def _triton_version() -> str:
    import triton

    return triton.__version__


if __name__ == "__main__":
    sys.exit(main())
