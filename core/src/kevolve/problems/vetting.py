"""A problem file is tried in a worker, under a time limit, before kevolve imports it.

A KernelBench-format file runs its own code when imported and when its model is built and run: it may never
return, call ``sys.exit``, crash the interpreter, or define a forward that fails. Tried first in an isolated
worker (:mod:`kevolve.harness.isolation`), each of these becomes one line saying what is wrong with the file,
instead of a hang, a silent exit, or an error that later blames a kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kevolve.errors import ProblemError
from kevolve.harness import evaluation as ev
from kevolve.problems.kernelbench import KernelBenchProblem

#: importing the file, building Model(*get_init_inputs()), get_inputs() and one forward must end within this
LOAD_TIMEOUT_S = 120.0


def load_problem_file(path: Path) -> KernelBenchProblem:
    """The problem in ``path``, once a worker has loaded it and run its model once."""
    from kevolve.harness.isolation import run_isolated
    from kevolve.harness.pipeline import HarnessConfig

    path = Path(path).resolve()
    outcome = run_isolated({"entry": f"{__name__}:try_file", "path": str(path)}, timeout_s=LOAD_TIMEOUT_S,
                           memory_limit_bytes=HarnessConfig().memory_limit_bytes)
    status, stage = outcome["status"], outcome.get("stage", "")
    if status == ev.TIMEOUT:
        raise ProblemError(f"{path} did not finish loading within {LOAD_TIMEOUT_S:.0f} s (stuck in {stage}): "
                           "importing it, building its Model, get_inputs() and one forward must return")
    if status == ev.CRASH:
        raise ProblemError(f"loading {path} killed its process during {stage}: {outcome['reason']}")
    if status != ev.OK:
        raise ProblemError(outcome["reason"])
    return KernelBenchProblem(path)


def try_file(task: dict[str, Any], report: Callable[[str], None]) -> dict[str, Any]:
    """In the worker: load the file and run its model once."""
    try:
        report("import")
        problem = KernelBenchProblem(Path(task["path"]))
        report("forward")
        problem.check_forward()
    except ProblemError as exc:
        return {"status": ev.REJECTED, "stage": "load", "reason": str(exc)}
    return {"status": ev.OK, "stage": "load"}
