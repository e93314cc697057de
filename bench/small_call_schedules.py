"""feature_hash's schedules at a small call, against copies of the same bytes and empty launches: is a row that
misses 80% of the 1 GiB copy's rate short of what its schedule could do, or of what a call of its size can do?

    python bench/small_call_schedules.py --out $OUT [--n 1048576] [--rounds 5]

Why: at 2^20 ids (16 MiB read plus written) the GPU table's feature_hash row reaches 68% of the 1 GiB copy's rate
per call, at the pace of a ``copy_`` of its bytes (``copy_by_size.md``: no copy of 16 MiB reached 80%). This times
the recipe's points that could change that, every one correct against the reference first: one program per tile
at the tile and warp counts around the default, several tiles per program, and persistent grids of one to eight
programs per SM striding over the tiles. Beside them: ``copy_`` and the traffic phase's Triton copy of the same
bytes, and empty launches of one program, one per SM and as many as the default's tiles (what a call costs before
it moves a byte). All timed per call as the table's rows are (behind the GPU runner's flush and spin, between two
device events), interleaved round-robin. Writes ``<out>/<target>/small_call_schedules.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch
from copy_by_size import empty_thunk
from gpu_bench import (
    COPY_KERNEL,
    copy_bandwidth,
    device_info,
    gpu_runner,
    interleaved_samples,
    load_kernel_file,
    per_call_cell,
    same_bytes_copy,
    target_recipe,
    write_report,
)

#: (BLOCK, num_warps) of the one-program-per-tile points, and of the persistent grids' tiles
TILES = ((512, 1), (512, 2), (1024, 2), (1024, 4), (2048, 4), (2048, 8), (4096, 8))
PERSISTENT_TILES = ((1024, 2), (1024, 4), (2048, 8))
PROGRAMS_PER_SM = (1, 2, 4, 8)


def points(space, sms: int) -> dict[str, dict]:
    """The recipe's points to time, by label: each valid in the recipe's own space, and each once."""
    base = space.default()
    chosen = {"default": base}
    for block, warps in TILES:
        chosen[f"BLOCK={block} num_warps={warps}"] = {**base, "BLOCK": block, "num_warps": warps}
    for items in (2, 4):
        chosen[f"default, ITEMS={items}"] = {**base, "ITEMS": items}
    for per_sm in PROGRAMS_PER_SM:
        for block, warps in PERSISTENT_TILES:
            chosen[f"PROGRAMS={per_sm}x{sms} BLOCK={block} num_warps={warps}"] = {
                **base, "BLOCK": block, "num_warps": warps, "PROGRAMS": per_sm * sms}
    unique = {}
    for label, p in chosen.items():
        if space.valid(p) and space.fix(p) not in unique.values():
            unique[label] = space.fix(p)
    return unique


def main() -> int:
    from kevolve.api import resolve_problem

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="nvidia_h100")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problem = resolve_problem("feature_hash", {"n": args.n}, "int64", None)
    recipe, facts = target_recipe(problem, args.target, "triton.feature_hash")
    space = recipe.space(problem, facts)
    gen = torch.Generator().manual_seed(1)
    inputs = [t.cuda() for t in problem.make_inputs(problem.dims, gen)]
    expected = [t.cuda() for t in problem.reference(inputs)]
    nbytes = int(problem.bytes_moved(problem.dims, inputs, expected, facts.memory_granule_bytes))
    outputs = [torch.empty_like(e) for e in expected]
    tmp = Path(tempfile.mkdtemp())
    sms = facts.parallel_units
    thunks, chosen = {}, points(space, sms)
    for idx, (label, params) in enumerate(chosen.items()):
        kernel = load_kernel_file(recipe.render(problem, params), tmp, f"point_{idx}")
        check = [torch.full_like(e, -1) for e in expected]
        kernel(inputs, check)
        if not torch.equal(check[0], expected[0]):
            raise SystemExit(f"{label}: wrong buckets; nothing timed")
        thunks[label] = lambda kernel=kernel: kernel(inputs, outputs)
    copy_kernel = load_kernel_file(COPY_KERNEL, tmp, "triton_copy")
    thunks["Triton copy, same bytes (4096 ids a program)"] = lambda: copy_kernel(inputs, outputs)
    thunks["copy_, same bytes"] = same_bytes_copy(nbytes)
    default_tiles = -(-args.n // (chosen["default"]["BLOCK"] * chosen["default"]["ITEMS"]))
    for programs in sorted({1, sms, default_tiles}):
        thunks[f"empty launch, {programs} programs"] = empty_thunk(programs)
    copy = copy_bandwidth()
    samples = interleaved_samples(gpu_runner(args.target), thunks, args.rounds)
    info = device_info(args.target)
    copy_median = statistics.median(samples["copy_, same bytes"])
    lines = [f"# feature_hash at {args.n} ids: schedules against copies of its bytes ({info['gpu']})", "",
             (f"torch {info['torch']}, Triton {info['triton']}, CUDA {info['cuda']}, Python {info['python']}. "
              f"Date: {info['date']}. Command: `python bench/small_call_schedules.py --out $OUT --n {args.n} "
              f"--rounds {args.rounds}`."), "",
             (f"{nbytes} bytes (ids read, buckets written). Per call: behind the GPU runner's flush and spin, "
              "between two device events, ten calls a sample, 11 samples a round, "
              f"{args.rounds} rounds, every row in every round (median [p10..p90]). `BW`: the bytes over the "
              f"median, against a 1 GiB copy in this run ({copy / 1e12:.3f} TB/s); 80% of it is "
              f"{nbytes / (0.8 * copy) * 1e6:.2f} us. `vs copy_`: the median of `copy_` of the same bytes over "
              "the row's. Fastest first."), "",
             "| call | per call us | BW | vs copy_ |", "|---|---|---|---|"]
    for label in sorted(thunks, key=lambda name: statistics.median(samples[name])):
        median, cell = per_call_cell(samples[label])
        moved = "" if label.startswith("empty") else f"{nbytes / median / copy:.1%}"
        lines.append(f"| {label} | {cell} | {moved} | {copy_median / median:.2f}x |")
    write_report(out, "small_call_schedules", lines, {**info, "n": args.n, "bytes": nbytes, "copy_bytes_per_s": copy,
                                                      "points": chosen, "samples_s": samples}, args.target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
