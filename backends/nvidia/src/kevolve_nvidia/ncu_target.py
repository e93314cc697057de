"""``python -m kevolve_nvidia.ncu_target TASK.json``: the one kernel call Nsight Compute profiles.

Rebuilds the call from the task (artifact, problem spec, plugins), calls the kernel once to warm up (Triton
compiles at first launch), then once more inside the NVTX range ``kevolve`` that the profiler is limited to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> int:
    import torch
    from kevolve.backend.toolchain import BuildResult
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec

    from kevolve_nvidia.cuda_runner import NvidiaGpuRunner

    task = json.loads(Path(path).read_text())
    problem = problem_from_spec(task["problem"], adopt_bootstrap(task["bootstrap"]).ops.get)
    inputs = [t.cuda() for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    outputs = [torch.empty(shape, dtype=dtype, device="cuda") for shape, dtype in problem.output_specs(inputs)]
    kernel = NvidiaGpuRunner().load(BuildResult(language=task["language"], artifact=task["artifact"]))
    kernel(inputs, outputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("kevolve")
    kernel(inputs, outputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
