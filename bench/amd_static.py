"""AMD targets without AMD hardware: every catalog op searched on each AMD target (compiled for its gfx
architecture, checked through the Triton interpreter, ranked by the static cost model), in one table.

    python bench/amd_static.py [--targets amd_mi300 amd_mi350] [--budget 1] [--out bench/results]

Writes ``<out>/any/amd_static.md`` and ``.json`` (several targets in one table; see ``layout.py``).

Shapes are reduced (the interpreter runs every program of every checked shape on the CPU); the resource
counts describe the kernel compiled at that shape. Nothing here is a timing: the "modeled" columns are the
static cost model's ranking aid, as every result says.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

import kevolve
from kevolve.harness.pipeline import HarnessConfig
from kevolve.plugins import get_manager
from layout import RESULTS, result_path

ROWS = {"rows": 64, "cols": 1024}
SHAPES = {
    **{op: {"n": 65536} for op in ("exp", "sigmoid", "tanh", "relu", "gelu", "silu", "add", "mul", "feature_hash")},
    **{op: ROWS for op in ("sum", "mean", "amax", "softmax", "log_softmax", "layer_norm", "rms_norm", "cumsum")},
    "matmul": {"m": 128, "n": 128, "k": 128}, "addmm_relu": {"m": 128, "n": 128, "k": 128},
    "gather": {"rows": 64, "cols": 1024, "k": 256},
    "embedding_bag": {"vocab": 1000, "dim": 128, "bags": 64, "pool": 20},
    "bucketize": {"n": 65536, "boundaries": 1024},
    "jagged_truncate": {"batch": 256, "max_len": 128},
    "dot_interaction": {"batch": 64, "features": 26, "dim": 128},
    "target_attention": {"batch": 64, "history": 128, "dim": 64},
    "keyed_feature_hash": {"features": 26, "batch": 64, "pool": 20},
}
SHOWN = ("vgprs", "sgprs", "vgpr_spills", "scratch_bytes", "lds_bytes", "waves_per_simd", "occupancy", "launches")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", nargs="*", default=["amd_mi300", "amd_mi350"])
    parser.add_argument("--ops", nargs="*", default=get_manager().ops.names())
    parser.add_argument("--budget", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.targets:
            for op in args.ops:
                started = time.perf_counter()
                result = kevolve.optimize(op, target=target, budget=args.budget, dims=SHAPES.get(op), again=True,
                                          store=Path(tmp) / "store.sqlite", harness=HarnessConfig(timeout_s=900))
                node = result.best
                ev = node.evaluation if node else None
                rows.append({"target": target, "op": op, "shape": result.problem.dims, "correct": result.correct,
                             "recipe": node.recipe if node else "", "parameters": result.parameters,
                             "resources": ev.resources if ev else {}, "estimate": ev.estimate if ev else {},
                             "untimed": ev.untimed if ev else "", "diagnosis": ev.diagnosis.summary
                             if ev and ev.diagnosis else "", "reason": "" if result.correct else
                             "; ".join(n.evaluation.reason[:200] for n in result.nodes),
                             "seconds": time.perf_counter() - started})
                print(target, op, result.correct, f"{rows[-1]['seconds']:.0f}s", flush=True)
    info = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    result_path(args.out, "amd_static", ".json").write_text(json.dumps({"info": info, "rows": rows}, indent=1,
                                                                       default=str))
    lines = ["# AMD targets on a machine without AMD GPUs: compile + interpreter correctness + static ranking", "",
             f"Python {info['python']}, torch {info['torch']}, triton {info['triton']}, {info['date']}. Command: "
             f"`{' '.join(['python', 'bench/amd_static.py', *sys.argv[1:]])}`. Every kernel below was compiled for the target's "
             "architecture and checked through the Triton interpreter at the op's check shapes and the shape shown. "
             f"Not timed on hardware: {rows[0]['untimed'] if rows else ''}", "",
             "| target | op | shape | correct | " + " | ".join(SHOWN) + " | modeled us | of roofline | diagnosis |",
             "|---|---|---|---|" + "---|" * len(SHOWN) + "---|---|---|"]
    for r in rows:
        res, est = r["resources"], r["estimate"]
        cells = [f"{res[k]:g}" if isinstance(res.get(k), (int, float)) else "" for k in SHOWN]
        modeled = est.get("modeled_time_s")
        fraction = est.get("roofline_floor_s", 0) / modeled if modeled else 0
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        lines.append(f"| {r['target']} | {r['op']} | {shape} | {'yes' if r['correct'] else 'NO: ' + r['reason']} | "
                     + " | ".join(cells) + f" | {modeled * 1e6 if modeled else 0:.1f} | {fraction:.0%} | "
                     f"{r['diagnosis'].split(';')[0]} |")
    correct = sum(r["correct"] for r in rows)
    lines += ["", f"{correct} of {len(rows)} (target, op) pairs correct."]
    result_path(args.out, "amd_static", ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if correct == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
