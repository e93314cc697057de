"""``python -m kevolve_mtia_sim.simulate WORKDIR``: simulate a Triton kernel file on an mtia_sim target.

The build step of the mtia_sim toolchain, in a process of its own (like the GPU backends' ahead-of-time
compile), so that a kernel whose module code hangs or crashes costs a failed build, never the search.
``WORKDIR/sim.json`` names the target, the problem (simulated at its timing shape, on inputs drawn with a
fixed seed) and the plugins to load. The kernel runs once through the Triton interpreter under the
:class:`~kevolve_mtia_sim.tracer.Tracer`; the timing engine turns the accounts into cycles.
``WORKDIR/simulation.json`` receives the engine's totals and ``WORKDIR/accounts.json`` the per-program accounts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TASK = "sim.json"
REPORT = "simulation.json"
ACCOUNTS = "accounts.json"


def trace_kernel(kernel, inputs, outputs, chip) -> tuple[list, list]:
    """Run ``kernel(inputs, outputs)`` under the tracer; the launches' accounts and grids."""
    from kevolve_mtia_sim.tracer import Tracer

    tracer = Tracer(chip)
    with tracer:
        kernel(inputs, outputs)
    tracer.check_local_memory()
    return tracer.launches, tracer.grids


def simulate_file(workdir: Path, task_name: str = TASK) -> dict[str, Any]:
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from kevolve.backend.runner import load_kernel_module
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec
    from kevolve_triton.capture import require_launch
    from kevolve_triton.runner import _widen_bf16_dots

    from kevolve_mtia_sim import engine
    from kevolve_mtia_sim.chip import Chip

    task = json.loads((workdir / task_name).read_text())
    manager = adopt_bootstrap(task["bootstrap"])
    registered = manager.target(task["target"])
    chip = Chip.from_facts(registered.spec.facts)
    problem = problem_from_spec(task["problem"], manager.ops.get)
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in problem.output_specs(inputs)]
    _widen_bf16_dots()
    _, kernel = load_kernel_module(str(workdir / "kernel.py"))
    launches, grids = trace_kernel(kernel, inputs, outputs, chip)
    require_launch(launches, outputs)
    result = engine.run(chip.params, launches)
    _write(workdir / ACCOUNTS, json.dumps({"grids": grids, "launches": launches}))
    return {"result": result, "grids": grids, "native": engine.native() is not None,
            "seconds": chip.seconds(result["cycles"])}


def _write(path: Path, text: str) -> None:
    """Write a file whole (build directories are shared by concurrent searches of the same source)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m kevolve_mtia_sim.simulate WORKDIR [TASK]  (WORKDIR holds kernel.py and the task, "
              "sim.json by default)", file=sys.stderr)
        return 2
    workdir = Path(argv[0])
    report = simulate_file(workdir, *argv[1:])
    _write(workdir / REPORT, json.dumps(report, indent=1))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
