"""Build a candidate the way it will run: in an isolated worker, under the same time limit, memory cap (counted
over the whole process tree) and process-group teardown as its evaluation.

A toolchain's build may run the kernel file's own code (a Triton file's launcher runs to capture its launches
for the ahead-of-time compile), so a file that hangs, holds memory, exits the process or leaves a process
behind while built costs a failed candidate with its reason, never the search or ``kevolve evaluate``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kevolve.backend.toolchain import BuildResult
from kevolve.errors import CompileError
from kevolve.harness import evaluation as ev
from kevolve.harness import watch
from kevolve.harness.isolation import run_isolated

#: the zygote's entry for a build task (see harness/zygote.py)
ENTRY = "kevolve.harness.build:run"
#: a build runs this much nicer than the rest: builds overlap the timing lanes' workers (harness/executor.py),
#: whose start-up and correctness check took 4-5 s a candidate instead of 1.3-1.8 s beside 30 builds at once on
#: a lent 32-core H200 host (bench/notes/search_throughput.md); the builds only have to keep ahead of the lanes
BUILD_NICENESS = 10


class BuildFailed(Exception):
    """The build step's process was stopped or died: the candidate fails with this status and reason."""

    def __init__(self, status: str, reason: str, evidence: dict[str, Any]) -> None:
        super().__init__(reason)
        self.status, self.reason, self.evidence = status, reason, evidence


def build_isolated(registered: Any, language: str, source: str, workdir: Path, problem: Any, *, timeout_s: float,
                   memory_limit_bytes: int, on_stage: Callable[[str], None] = lambda s: None) -> BuildResult:
    """The toolchain's build of ``source``, run in an isolated worker. Raises :class:`CompileError` for what the
    toolchain reports, :class:`BuildFailed` when the build's process was killed or died."""
    from kevolve.plugins import worker_bootstrap

    task = {"entry": ENTRY, "target": registered.spec.name, "language": language, "source": source,
            "workdir": str(workdir), "problem": problem.to_spec(), "bootstrap": worker_bootstrap()}
    raw = run_isolated(task, timeout_s=timeout_s, memory_limit_bytes=memory_limit_bytes, on_stage=on_stage,
                       env=registered.backend.build_env(registered.spec))
    if raw["status"] == ev.OK:
        return BuildResult(**raw["build"])
    if raw["status"] == ev.COMPILE_ERROR:
        raise CompileError(raw["reason"], log=raw.get("log", ""), repro=raw.get("repro", ""))
    raise BuildFailed(raw["status"], raw["reason"], raw.get("evidence", {}))


def run(task: dict[str, Any], report: Callable[[str], None]) -> dict[str, Any]:
    """In the worker: build, then make sure the build left no process of its own running."""
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec

    report("build")
    os.nice(BUILD_NICENESS)
    manager = adopt_bootstrap(task["bootstrap"])
    registered = manager.target(task["target"])
    problem = problem_from_spec(task["problem"], manager.ops.get)
    toolchain = registered.backend.toolchain(registered.spec, task["language"])
    try:
        build = toolchain.build(task["source"], Path(task["workdir"]), problem)
    except CompileError as exc:
        return {"status": ev.COMPILE_ERROR, "stage": "compile", "reason": str(exc.args[0]), "log": exc.log,
                "repro": exc.repro}
    left = watch.group_members()
    if left:
        return {"status": ev.REJECTED, "stage": "compile", "evidence": {"pids": sorted(left)},
                "reason": f"the build left processes running (pids {sorted(left)}); they were killed"}
    return {"status": ev.OK, "stage": "compile", "build": asdict(build)}
