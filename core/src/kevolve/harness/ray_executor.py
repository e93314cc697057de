"""Candidates evaluated on a Ray cluster (``pip install 'kevolve[ray]'``; ``kevolve optimize ... --executor
ray[:ADDRESS]``).

The driver keeps the search and the store; the cluster builds and times. Each candidate is two Ray tasks: its
build, on any node with a free CPU, and its check, timing and profile, on a node with the target's device (a GPU
for GPU targets: Ray gives the task one, and sets ``CUDA_VISIBLE_DEVICES`` for it). The build's files travel with
its result, so the two may run on different nodes. A task whose worker or node dies is run again once elsewhere
(Ray's ``max_retries``); a second death makes the candidate a failure with the reason, and the search goes on:
no evaluated node is lost, since the driver records each one as it comes back.

Each node must have kevolve, the target's backend and the plugins the driver loaded installed; the plugins
found through the driver's ``sys.path`` (:func:`kevolve.plugins.worker_bootstrap`) are loaded in the workers as
in the local isolated workers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kevolve.errors import KevolveError
from kevolve.harness import evaluation as ev
from kevolve.harness.evaluation import Evaluation
from kevolve.harness.executor import WORKERS_PER_LANE, Collect, Executor, OnStage
from kevolve.harness.pipeline import Built, HarnessConfig, build_candidate, finish
from kevolve.harness.throughput import StageClock
from kevolve.problems.problem import Problem
from kevolve.registry import RegisteredTarget
from kevolve.synthesis.base import Candidate

#: runs of a task after its worker or node died, before the candidate is recorded as a failure
RETRIES = 1


class RayExecutor(Executor):
    """Evaluates on the Ray cluster at ``address`` (None: ``RAY_ADDRESS``, else a local cluster started here)."""

    def __init__(self, registered: RegisteredTarget, address: str | None = None,
                 capacity: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise KevolveError("the ray executor needs Ray: pip install 'kevolve[ray]'") from None
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                ray.init(address=address or os.environ.get("RAY_ADDRESS") or None, include_dashboard=False,
                         logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise KevolveError(f"cannot reach the Ray cluster at {address or os.environ.get('RAY_ADDRESS')}: "
                                   f"{exc}; start one with `ray start --head`, or leave the address out for a "
                                   "local one") from None
        lanes = registered.backend.timing_lanes(registered.spec)
        #: GPU targets time on a node's GPU, shared by as many workers as a local lane holds (the workers take
        #: turns on the device); targets timed on the host's cores need none
        self.gpus_per_timing = 0 if lanes.quiet_host else 1 / WORKERS_PER_LANE
        resources = ray.cluster_resources()
        self.capacity = capacity or max(1, int(resources.get("CPU", 1)))
        #: as the local pool's: the next batch builds while the last is timed on the GPUs
        self.depth = 1 if lanes.quiet_host else 2
        self._build = ray.remote(num_cpus=1, max_retries=RETRIES)(_build_task)
        self._time = ray.remote(num_cpus=1, num_gpus=self.gpus_per_timing, max_retries=RETRIES)(_time_task)

    def describe(self) -> str:
        resources = self.ray.cluster_resources()
        return (f"Ray: {len(self.ray.nodes())} node(s), {int(resources.get('CPU', 0))} CPUs, "
                f"{int(resources.get('GPU', 0))} GPUs")

    def submit(self, candidates: list[Candidate], problem: Problem, target_name: str, config: HarnessConfig,
               on_stage: OnStage) -> Collect:
        from kevolve.plugins import worker_bootstrap

        bootstrap, spec = worker_bootstrap(), problem.to_spec()
        built = [self._build.remote(c, spec, target_name, config, bootstrap) for c in candidates]
        for i in range(len(candidates)):
            on_stage(i, "compile on the cluster")
        timed = [self._time.remote(b, spec, config, bootstrap) for b in built]  # each starts once its build is done

        def collect() -> list[Evaluation]:
            results = []
            for i, ref in enumerate(timed):
                try:
                    results.append(self.ray.get(ref))
                except (self.ray.exceptions.WorkerCrashedError, self.ray.exceptions.NodeDiedError,
                        self.ray.exceptions.RayTaskError, self.ray.exceptions.RaySystemError) as exc:
                    results.append(Evaluation(ev.CRASH, "executor", f"the Ray task evaluating it failed "
                                              f"{RETRIES + 1} times: {type(exc).__name__}: {str(exc)[:300]}",
                                              {"error": str(exc)[:2000]}))
                on_stage(i, "timing done on the cluster")
            return results

        return collect

    def close(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()


def _build_task(candidate: Candidate, problem_spec: dict, target_name: str, config: HarnessConfig,
                bootstrap: dict) -> tuple[Built | Evaluation, dict[str, Any], dict[str, bytes]]:
    """On a Ray worker: the candidate's build, its stage clock so far, and its files."""
    problem = _problem(problem_spec, bootstrap)
    clock = StageClock()
    built = build_candidate(candidate, problem, target_name, config, clock)
    files = _pack(Path(built.build.artifact).parent) if isinstance(built, Built) else {}
    return built, clock.seconds, files


def _time_task(built_with_files: tuple[Built | Evaluation, dict[str, float], dict[str, bytes]], problem_spec: dict,
               config: HarnessConfig, bootstrap: dict) -> Evaluation:
    """On a Ray worker with the device: the built candidate checked, timed and profiled."""
    built, seconds, files = built_with_files
    problem = _problem(problem_spec, bootstrap)
    clock = StageClock()
    clock.seconds.update(seconds)
    if isinstance(built, Built):
        _unpack(Path(built.build.artifact).parent, files)
    return finish(built, problem, config, clock)


def _problem(problem_spec: dict, bootstrap: dict) -> Problem:
    from kevolve.plugins import adopt_bootstrap
    from kevolve.problems.rebuild import problem_from_spec

    return problem_from_spec(problem_spec, adopt_bootstrap(bootstrap).ops.get)


def _pack(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def _unpack(directory: Path, files: dict[str, bytes]) -> None:
    """The build's files where the build left them, on a node that did not build it."""
    for name, data in files.items():
        path = directory / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
