"""A whole model end to end: ``kevolve.optimize_model`` on a model file, and the forward's time before and after
beside torch.compile, with the model's memory floor.

    python bench/models.py --target cpu --model examples/ads_ranking.py --set ROWS=20000 --budget 4
    python bench/models.py --target nvidia_h100 --model examples/ads_ranking.py --budget 8 --out bench/results

``--set NAME=VALUE`` overrides the model file's module constants before the model is built (its sizes). The
end-to-end times are the report's: per forward, samples round-robin over eager, kevolve, torch.compile and
kevolve's model inside torch.compile (median [p10..p90]). The memory floor is the bytes a forward must move at
least (every input read once; of a table, a parameter of over a million elements, one row per gathered id at
most, as many as it has at most; every other parameter once; the output written once) over the target's memory
bandwidth. Writes ``<out>/<target>/models.md`` and ``.json`` (``--stem``: another name; see ``layout.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch

import kevolve
from kevolve.plugins import get_manager

sys.path.insert(0, str(Path(__file__).parent))
from layout import result_path  # noqa: E402
from op_overhead import machine  # noqa: E402


def load_model_file(path: Path, settings: dict[str, str]):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, value in settings.items():
        setattr(module, name, type(getattr(module, name))(value))
    return module


def memory_floor_bytes(model: torch.nn.Module, inputs: list[torch.Tensor], output: torch.Tensor) -> int:
    """Inputs once, gathered rows once per id (tables: parameters of more than a million elements, read only where
    gathered), other parameters once, the output once."""
    moved = sum(t.numel() * t.element_size() for t in inputs) + output.numel() * output.element_size()
    ids = sum(t.numel() for t in inputs if not t.is_floating_point() and t.dim() == 1 and t.numel() > inputs[0].shape[0])
    for parameter in model.parameters():
        if parameter.numel() > 1_000_000:  # a table: one row per gathered id
            moved += min(ids, parameter.shape[0]) * parameter[0].numel() * parameter.element_size()
        else:
            moved += parameter.numel() * parameter.element_size()
    return moved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--model", default="examples/ads_ranking.py")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--budget", type=int, default=4)
    parser.add_argument("--max-regions", type=int, default=6)
    parser.add_argument("--min-share", type=float, default=0.03)
    parser.add_argument("--store", default=None)
    parser.add_argument("--out", default="bench/out")
    parser.add_argument("--stem", default="models", help="the files' name in the target's folder under --out (a "
                        "leading target name picks that target's folder: nvidia_h200_models)")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.set)
    registered = get_manager().usable_target(args.target)
    device = registered.backend.runner(registered.spec).device
    module = load_model_file(Path(args.model), settings)
    torch.manual_seed(0)
    model = module.Model().eval().to(device)
    fresh = lambda: [t.to(device) for t in module.get_inputs()]  # noqa: E731
    inputs = fresh()
    fast = kevolve.optimize_model(model, inputs, target=args.target, budget=args.budget, store=args.store,
                                  max_regions=args.max_regions, min_share=args.min_share, fresh_inputs=fresh,
                                  progress=lambda e: print(e, flush=True) if e["kind"] != "stage" else None)
    with torch.no_grad():
        output = model(*inputs)
    floor_bytes = memory_floor_bytes(model, inputs, output)
    bandwidth = registered.spec.facts.memory[-1].bandwidth_bytes_per_s
    info = machine(args.target)
    command = "python bench/models.py " + " ".join(sys.argv[1:])
    lines = [f"# {Path(args.model).stem} on {registered.spec.name}: the whole model with kevolve's kernels", "",
             f"`{command}`", "", "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             f"Settings: {settings or 'the file defaults'}; budget {args.budget} candidates per region.", "",
             "| forward | ms [p10..p90] | vs eager | vs memory floor |", "|---|---|---|---|"]
    floor_s = floor_bytes / bandwidth
    eager = fast.report.end_to_end.get("eager")
    for name, timing in fast.report.end_to_end.items():
        lines.append(f"| {name} | {timing.median * 1e3:.3f} [{timing.p10 * 1e3:.3f}..{timing.p90 * 1e3:.3f}] | "
                     f"{eager.median / timing.median:.2f}x | {timing.median / floor_s:.1f}x |")
    lines += ["", f"Memory floor: {floor_bytes / 1e6:.1f} MB at {bandwidth / 1e9:.0f} GB/s "
              f"({registered.spec.facts.memory[-1].name}) = {floor_s * 1e3:.3f} ms.", "", "Regions:", "",
              "```", fast.report.summary(), "```"]
    result_path(args.out, args.stem, ".md", registered.spec.name).write_text("\n".join(lines) + "\n")
    result_path(args.out, args.stem, ".json", registered.spec.name).write_text(
        json.dumps({"info": info, "command": command, "settings": settings, "floor_bytes": floor_bytes,
                    "report": fast.report.to_json()}, indent=2, default=str))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
