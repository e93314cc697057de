"""``python -m kevolve_triton.aot WORKDIR``: compile a Triton kernel file ahead of time for its target.

Runs in its own process (the toolchain's build step), so that a kernel file whose module code hangs or
crashes costs a failed build, never the search. ``WORKDIR/aot.json`` names the target, the problem (its
launches are captured at the problem's timing shape) and the plugins to load; the per-launch resource report
is written to ``WORKDIR/resources.json`` and printed. The command line is the build's repro command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPORT = "resources.json"
TASK = "aot.json"


def compile_launches(workdir: Path) -> list[dict[str, Any]]:
    import torch
    import triton
    from kevolve.backend.runner import load_kernel_module
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec
    from triton.compiler import ASTSource

    from kevolve_triton.capture import capture_launches

    task = json.loads((workdir / TASK).read_text())
    manager = adopt_bootstrap(task["bootstrap"])
    registered = manager.target(task["target"])
    backend, spec = registered.backend, registered.spec
    problem = problem_from_spec(task["problem"], manager.ops.get)
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in problem.output_specs(inputs)]
    _, kernel = load_kernel_module(str(workdir / "kernel.py"))
    target = backend.gpu_target(spec)
    report, seen = [], {}
    for launch in capture_launches(kernel, inputs, outputs):
        key = (launch.name, repr(launch.signature), repr(launch.constexprs), repr(sorted(launch.options.items())))
        if key not in seen:
            source = ASTSource(launch.fn, launch.signature, constexprs=launch.constexprs, attrs=launch.attrs)
            compiled = triton.compile(source, target=target, options=launch.options)
            seen[key] = backend.read_resources(compiled, spec.facts)
        report.append({"kernel": launch.name, "grid": list(launch.grid), "programs": launch.programs,
                       "options": launch.options, "constexprs": {k: repr(v) for k, v in launch.constexprs.items()},
                       **seen[key]})
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kevolve_triton.aot WORKDIR  (WORKDIR holds kernel.py and aot.json)", file=sys.stderr)
        return 2
    workdir = Path(argv[0])
    report = compile_launches(workdir)
    (workdir / REPORT).write_text(json.dumps(report, indent=1))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
