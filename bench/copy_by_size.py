"""Time of a device copy by its size, against the 1 GiB copy's rate: the fraction of that rate a call of a given
size reaches at all.

    python bench/copy_by_size.py --out $OUT

Why: the GPU table's 80% goal compares each kernel with a 1 GiB copy, which spreads its fixed costs (the launch
reaching the SMs, the first reads' latency, the last writes' drain) over 360 us. A call of 16 MB pays them over
6 us of transfer. This times a ``copy_`` of each size and an empty Triton kernel (the fixed costs alone, with one
program and with as many as a copy of 16 MB has) two ways: per call, interleaved behind the GPU runner's flush and
spin between two device events as the table's rows are, and back to back from a CUDA graph over enough buffers
that each call reads from DRAM (the 1 GiB copy's own condition). Writes ``<out>/nvidia_h100/copy_by_size.md`` and
``.json``.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import torch
import triton
from gpu_bench import (copy_bandwidth, copy_thunk, dram_sets, gpu_runner, interleaved_samples, per_call_cell,
                       stream_time, write_report)

#: bytes read plus written, MiB
SIZES_MIB = (4, 8, 16, 32, 64, 128, 256, 1024)
#: programs of the many-program empty launch: a 16 MiB copy's at 4096 bytes a program
MANY_PROGRAMS = (8 << 20) // 4096


@triton.jit
def _nothing(x_ptr):
    pass


def empty_thunk(programs: int):
    x = torch.empty(1, device="cuda")
    return lambda: _nothing[(programs,)](x, num_warps=4)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # per size, copies of as many buffer pairs as a graph needs to read from DRAM; per call, the first
    copies = {mib: [copy_thunk((mib << 20) // 2) for _ in range(dram_sets(mib << 20))] for mib in SIZES_MIB}
    thunks = {f"copy_ {mib} MiB": each[0] for mib, each in copies.items()}
    thunks.update({"empty, 1 program": empty_thunk(1), f"empty, {MANY_PROGRAMS} programs": empty_thunk(MANY_PROGRAMS)})
    copy = copy_bandwidth()
    samples = interleaved_samples(gpu_runner(), thunks, args.rounds)
    graph = {f"copy_ {mib} MiB": stream_time(lambda i, each=each: each[i](), len(each))
             for mib, each in copies.items()}
    graph.update({name: stream_time(lambda i, t=thunks[name]: t(), 2) for name in thunks if name.startswith("empty")})
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Device copy time by size ({torch.cuda.get_device_name()})", "",
             f"torch {torch.__version__}, Triton {triton.__version__}. Date: {when}. Command: "
             "`python bench/copy_by_size.py --out $OUT`.", "",
             ("`per call`: behind the GPU runner's flush and spin, between two device events, ten calls a sample, "
              f"11 samples a round, {args.rounds} rounds, all interleaved (median [p10..p90]). `graph`: device time "
              "per call back to back from a CUDA graph over buffers larger than 4x L2 together. `BW`: bytes read "
              f"plus written over the time, against a 1 GiB copy in this run ({copy / 1e12:.3f} TB/s, timed as in "
              "the GPU table)."), "",
             "| call | per call us | BW per call | graph us | BW graph |", "|---|---|---|---|---|"]
    for name in thunks:
        median, cell = per_call_cell(samples[name])
        nbytes = int(name.split()[1]) << 20 if name.startswith("copy_") else 0
        fractions = (f"{nbytes / median / copy:.0%}", f"{nbytes / graph[name] / copy:.0%}") if nbytes else ("", "")
        lines.append(f"| {name} | {cell} | {fractions[0]} | {graph[name] * 1e6:.1f} | {fractions[1]} |")
    write_report(out, "copy_by_size", lines, {"device": torch.cuda.get_device_name(), "date": when,
                                              "torch": torch.__version__, "copy_bytes_per_s": copy,
                                              "samples_s": samples, "graph_s": graph})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
