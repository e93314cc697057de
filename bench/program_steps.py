"""Where a lowered region's time goes on the CPU target: each step of its program timed inside the kernel, beside
the region's module in eager, on the model's own values.

    python bench/program_steps.py --model examples/ads_ranking.py --set ROWS=20000 --region hash --region history

The region's inputs are recorded from one forward of the model (a forward pre-hook); the region is exported and
lowered at its default knobs (the search's first candidate), and a copy of the program's C++ file gets a steady
clock around each step's call. Each round calls the kernel, then the module; the table gives each step's median
over the rounds [p10..p90], the kernel's and the module's. The kernel's outputs are checked against the module's.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from kevolve.plugins import get_manager
from kevolve.problems.exported import ExportedProblem
from kevolve.program.recipe import ProgramRecipe

sys.path.insert(0, str(Path(__file__).parent))
from models import load_model_file  # noqa: E402
from op_overhead import machine  # noqa: E402

#: each step's block in the assembled file (program_file.assemble): "    {  // name: op, layout ..." to "    }"
STEP = re.compile(r"    \{  // (\S+):.*?\n    \}", re.S)


def timed_source(source: str) -> str:
    """The program's file with each step's call between two reads of a steady clock, printed to stderr."""
    def wrap(found: re.Match) -> str:
        return ("    { auto kv_t0 = std::chrono::steady_clock::now();\n" + found.group(0) + "\n"
                f'    fprintf(stderr, "STEP {found.group(1)} %.6f\\n", std::chrono::duration<double>('
                "std::chrono::steady_clock::now() - kv_t0).count()); }")
    head = '#include "kevolve_kernel.h"\n#include <chrono>\n#include <cstdio>'
    return STEP.sub(wrap, source.replace('#include "kevolve_kernel.h"', head, 1))


def region_inputs(model: torch.nn.Module, inputs: list[torch.Tensor], path: str) -> list[torch.Tensor]:
    module, seen = model.get_submodule(path), []
    handle = module.register_forward_pre_hook(lambda _m, args: seen.append([a.detach() for a in args]))
    with torch.no_grad():
        model(*inputs)
    handle.remove()
    return seen[0]


def measure(model: torch.nn.Module, inputs: list[torch.Tensor], path: str, rounds: int) -> list[tuple[str, list[float]]]:
    from kevolve_cpu.cpp_loader import CppKernel
    from kevolve_cpu.toolchain import CppToolchain

    cpu = get_manager().usable_target("cpu")
    module, args = model.get_submodule(path), region_inputs(model, inputs, path)
    problem = ExportedProblem.create(module, args, path)
    recipe = ProgramRecipe(cpu.backend.recipes(cpu.spec), "cpp", cpu.language_forms()["cpp"].assemble_program)
    params = recipe.space(problem, cpu.backend.facts(cpu.spec)).default()
    source = timed_source(recipe.render(problem, params))
    kernel = CppKernel(CppToolchain().build(source, Path(tempfile.mkdtemp()), problem).artifact)
    with torch.no_grad():
        expected = module(*args)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    outputs = [torch.empty(e.shape, dtype=e.dtype) for e in expected]
    caller = [a.contiguous() for a in args] + problem.extra_inputs()  # as the harness and the op pass them
    samples: dict[str, list[float]] = {}
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    saved = os.dup(2)
    for _ in range(rounds + 1):  # the first round warms up
        with open(log, "w") as sink:  # the steps' clocks go to stderr
            os.dup2(sink.fileno(), 2)
            try:
                start = time.perf_counter()
                kernel(caller, outputs)
                kernel_s = time.perf_counter() - start
            finally:
                os.dup2(saved, 2)
        start = time.perf_counter()
        with torch.no_grad():
            module(*args)
        eager_s = time.perf_counter() - start
        for name, seconds in re.findall(r"STEP (\S+) ([\d.]+)", log.read_text()):
            samples.setdefault(name, []).append(float(seconds))
        samples.setdefault(" kernel", []).append(kernel_s)
        samples.setdefault(" eager", []).append(eager_s)
    for got, want in zip(outputs, expected):
        torch.testing.assert_close(got, want.contiguous(), rtol=1e-4, atol=1e-4)
    return [(name, values[1:]) for name, values in samples.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="examples/ads_ranking.py")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--region", action="append", required=True, help="a submodule's path, e.g. hash")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    module = load_model_file(Path(args.model), dict(item.split("=", 1) for item in args.set))
    torch.manual_seed(0)
    model, inputs = module.Model().eval(), module.get_inputs()
    print(f"`python bench/program_steps.py {' '.join(sys.argv[1:])}`\n")
    print("Machine: " + ", ".join(f"{k} {v}" for k, v in machine("cpu").items()) + "\n")
    for path in args.region:
        print(f"| {path}: step | ms [p10..p90] |\n|---|---|")
        for name, values in measure(model, inputs, path, args.rounds):
            deciles = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
            print(f"| {name.strip()} | {statistics.median(values) * 1e3:.3f} "
                  f"[{deciles[0] * 1e3:.3f}..{deciles[-1] * 1e3:.3f}] |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
