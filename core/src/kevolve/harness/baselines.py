"""The PyTorch baselines a kernel is timed against, and a time limit on their compiles.

"eager" runs the op's reference as written; "compile" is ``torch.compile`` in its default mode;
"max-autotune" is Inductor's autotuning mode, which benchmarks its kernel variants while it compiles and can take
minutes per op on a GPU. It runs as ``mode="max-autotune-no-cudagraphs"``: plain "max-autotune" also replays the
op from a CUDA graph, which copies every input that is not the graph's own into the graph's buffers on each
call; for a one-pass op that is a second pass over the inputs (measured on an H100, 2026-11-25: rms_norm and
layer_norm at 4096 and 16384 x 4096 in 1.8-2.4x the default mode's time), a cost of the calling convention, not
of the kernels compared here.

Before a compiled baseline is timed it is compiled once in a child process under ``compile_limit_s``
(:func:`prepare_compiled`), before the worker holds its device: Inductor's on-disk caches then make the worker's own
compile short; an op whose compile runs past the limit is reported as not timed, with the reason, instead of
spending the evaluation's whole time budget; and the compile, host work of 10-30 s a problem on a lent H200 that
the worker did single-threaded while it held the device, no longer keeps other workers off the device. The
child's own device work while another worker may hold it is one call of the op and Inductor's autotuning of
its few kernels, milliseconds against the seconds of a timing.

``python -m kevolve.harness.baselines TASK.json`` is that child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from kevolve.errors import KevolveError

#: baseline name -> torch.compile mode
COMPILE_MODES = {"compile": "default", "max-autotune": "max-autotune-no-cudagraphs"}
BASELINES = ("eager", *COMPILE_MODES)


def any_compiled(baselines: Sequence[str]) -> bool:
    """Whether any of ``baselines`` is compiled (and so compiled first, under ``compile_limit_s``)."""
    return any(name in COMPILE_MODES for name in baselines)


def check_baselines(baselines: Sequence[str]) -> None:
    unknown = set(baselines) - set(BASELINES)
    if unknown:
        raise KevolveError(f"unknown baselines {sorted(unknown)}; choose from {', '.join(BASELINES)}")


def compiled_reference(problem: Any, baseline: str, *, in_process: bool = True) -> Any:
    """The problem's reference under torch.compile in the baseline's mode.

    :param in_process: Inductor compiles in this process rather than in its pool of compile workers (one per
        core), which outlive the compile: in a candidate's worker they count against the memory cap of its
        process group (sixteen of them took a worker past its 8 GiB on a 16-core GPU host, and every final
        re-timing with a torch.compile baseline crashed)
    """
    if in_process:
        import torch._inductor.config as inductor

        inductor.compile_threads = 1
    return torch.compile(lambda *xs: problem.reference(list(xs)), mode=COMPILE_MODES[baseline])


def prepare_compiled(names: Sequence[str], problem: Any, task: dict, runner: Any,
                     limit_s: float) -> tuple[dict[str, Callable], dict[str, str]]:
    """The compiled baselines among ``names``, ready to time, and those that will not be timed, with the reason.
    Each is compiled in a child under ``limit_s`` (:func:`compile_within_limit`), then in this process from
    Inductor's caches, by one call on inputs drawn for it alone (never a timing round's: no answer to those may
    exist in the worker before the kernel's timed calls)."""
    ready: dict[str, Callable] = {}
    untimed: dict[str, str] = {}
    for name in names:
        if name not in COMPILE_MODES:
            continue
        why = compile_within_limit(task["problem"], task["bootstrap"], runner.device, name, limit_s)
        if why:
            untimed[name] = why
            continue
        ready[name] = compiled_reference(problem, name)
        # outputs sized by values: timing rounds differ in size, and a second size makes Inductor compile for
        # any size now, before the worker's kernel thread is sealed (harness/confine.py)
        for seed in (1, 2) if problem.value_sized else (1,):
            ready[name](*[t.to(runner.device) for t in problem.make_inputs(problem.dims,
                                                                          torch.Generator().manual_seed(seed))])
        runner.synchronize()
    return ready, untimed


def compile_within_limit(problem_spec: dict, bootstrap: dict, device: str, baseline: str, limit_s: float) -> str:
    """Compile and run the baseline once in a child process: '' when it finished within ``limit_s``, else why
    it will not be timed. The child gets a process group of its own so that Inductor's compile workers go
    down with it."""
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "task.json"
        task.write_text(json.dumps({"problem": problem_spec, "bootstrap": bootstrap, "device": device,
                                    "baseline": baseline}, default=str))
        child = subprocess.Popen([sys.executable, "-m", "kevolve.harness.baselines", str(task)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            _, err = child.communicate(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return (f"torch.compile(mode={COMPILE_MODES[baseline]!r}) did not finish compiling within "
                    f"{limit_s:.0f} s (HarnessConfig.compile_limit_s)")
    if child.returncode != 0:
        tail = err.strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
        return f"torch.compile(mode={COMPILE_MODES[baseline]!r}) failed: {tail[0][:300]}"
    return ""


def main(path: str) -> int:
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec

    task = json.loads(Path(path).read_text())
    problem = problem_from_spec(task["problem"], adopt_bootstrap(task["bootstrap"]).ops.get)
    inputs = [t.to(task["device"]) for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    compiled_reference(problem, task["baseline"], in_process=False)(*inputs)
    if task["device"].startswith("cuda"):
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
