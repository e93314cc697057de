"""Per-call time of a device copy by the alignment of its length, for the table's `copy, same bytes` column.

    python bench/copy_length.py --out $OUT [--results bench/results/nvidia_h100/kernels.json]

Why: ``gpu_bench.same_bytes_copy`` times a ``copy_`` of half a row's minimum bytes beside the row's kernel. The
rows whose byte count is not a multiple of 512 (keyed_feature_hash, jagged_truncate, embedding_bag) had copies
that ran slower than their size predicts, so their kernels looked faster than a copy of their bytes. This times,
interleaved in one run with the GPU runner's flush and spin, each such row's copy at its exact length and rounded
up to 16 bytes, 256 bytes and ``gpu_bench.COPY_GRANULE`` (the length ``same_bytes_copy`` now uses). Writes
``<out>/nvidia_h100/copy_length.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

import torch
from gpu_bench import (COPY_GRANULE, copy_bandwidth, copy_thunk, gpu_runner, interleaved_samples, per_call_cell,
                       round_up, write_report)
from layout import RESULTS, result_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--results", default=str(result_path(RESULTS, "kernels", ".json", "nvidia_h100")))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = json.loads(Path(args.results).read_text())["rows"]
    halves = sorted({int(r["bytes"]) // 2 for r in rows if (int(r["bytes"]) // 2) % 256})
    lengths = {}
    for half in halves:
        for label, granule in (("exact", 1), ("16 B", 16), ("256 B", 256), (f"{COPY_GRANULE} B", COPY_GRANULE)):
            lengths[f"{half} {label}"] = round_up(half, granule)
    thunks = {name: copy_thunk(length) for name, length in lengths.items()}
    copy = copy_bandwidth()
    samples = interleaved_samples(gpu_runner(), thunks, args.rounds)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Device copy time by the alignment of its length ({torch.cuda.get_device_name()})", "",
             f"torch {torch.__version__}. Date: {when}. Command: `python bench/copy_length.py --out $OUT`.", "",
             ("Each row's copy (half its minimum bytes, read and written by `copy_`) at the exact length and "
              "rounded up; every call behind the GPU runner's flush and spin, between two device events, ten calls "
              f"a sample, 11 samples a round, {args.rounds} rounds, all lengths interleaved. `BW`: bytes read plus "
              f"written over the median, against a 1 GiB copy in this run ({copy / 1e12:.3f} TB/s)."), "",
             "| half of the row's bytes | rounded to | bytes copied | us [p10..p90] | BW |", "|---|---|---|---|---|"]
    for name, length in lengths.items():
        half, label = name.split(" ", 1)
        median, cell = per_call_cell(samples[name])
        lines.append(f"| {half} | {label} | {length} | {cell} | {2 * length / median / copy:.0%} |")
    write_report(out, "copy_length", lines, {"device": torch.cuda.get_device_name(), "date": when,
                                             "torch": torch.__version__, "copy_bytes_per_s": copy,
                                             "lengths": lengths, "samples_s": samples})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
