"""The evaluation pipeline for one candidate: scan -> compile -> (isolated) correctness -> timing -> profile
-> diagnose."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kevolve.backend.toolchain import BuildResult
from kevolve.delivery.runtime import prepare_native
from kevolve.diagnosis import Diagnosis
from kevolve.errors import CompileError
from kevolve.harness import evaluation as ev
from kevolve.harness.baselines import any_compiled
from kevolve.harness.build import BuildFailed, build_isolated
from kevolve.harness.evaluation import Evaluation
from kevolve.harness.isolation import run_isolated
from kevolve.harness.scan import forbidden_uses
from kevolve.harness.throughput import StageClock
from kevolve.problems.problem import Problem
from kevolve.synthesis.base import Candidate


@dataclass
class HarnessConfig:
    timeout_s: float = 120.0
    memory_limit_bytes: int = 8 * 2**30
    #: each correctness shape is called this many times with fresh inputs (catches cached results)
    calls_per_shape: int = 2
    #: interleaved timing samples per contender
    repeats: int = 15
    #: minimum length of one timing sample
    sample_s: float = 0.002
    #: after each round's timed kernel calls, how long the worker watches its other threads for work still
    #: going on (see harness/watch.py)
    quiet_s: float = 0.01
    baselines: tuple[str, ...] = ("eager",)
    #: a correct candidate whose timings were disturbed (see evaluation.DISTURBED_SPREAD) is evaluated again up
    #: to this many times
    remeasure: int = 2
    #: a torch.compile baseline that takes longer than this to compile is reported untimed (see baselines.py);
    #: an evaluation that asks for one may run this much longer than ``timeout_s``
    compile_limit_s: float = 300.0
    #: a median below roofline floor x this is rejected as implausible. The slack covers measured peaks that
    #: are themselves estimates and caches that beat the level's bandwidth; a kernel that skips its work is
    #: off by far more.
    plausibility: float = 0.5
    time: bool = True
    #: profile a timed kernel for its diagnosis (off for the final re-timing of a kernel the search profiled)
    profile: bool = True
    #: a costly profiler (Profiler.costly) runs only on kernels at least this many times faster than eager;
    #: slower ones are diagnosed from the roofline. None: every kernel. A search sets it to its best so far.
    counters_from: float | None = None
    workdir: str = field(default_factory=lambda: os.path.join(tempfile.gettempdir(), "kevolve-builds"))

    def for_worker(self) -> dict:
        data = asdict(self)
        data["baselines"] = list(self.baselines)
        return data


def evaluate_candidate(candidate: Candidate, problem: Problem, target_name: str, config: HarnessConfig,
                       on_stage: Callable[[str], None] = lambda s: None) -> Evaluation:
    """The candidate's evaluation; one whose timings were disturbed is evaluated again (see :func:`steady`). Its
    ``stage_s`` holds the seconds each stage took, re-measures included."""
    clock = StageClock(on_stage)
    return finish(build_candidate(candidate, problem, target_name, config, clock), problem, config, clock)


@dataclass
class Built:
    """A candidate past its build, which a worker may now check, time and profile."""

    candidate: Candidate
    target_name: str
    build: BuildResult
    #: seconds the scan and the build took
    build_s: float


def build_candidate(candidate: Candidate, problem: Problem, target_name: str, config: HarnessConfig,
                    on_stage: Callable[[str], None] = lambda s: None) -> Built | Evaluation:
    """The source scan and the build, in an isolated worker: what needs no device. A candidate that fails either
    comes back as its :class:`Evaluation`."""
    from kevolve.plugins import get_manager

    started = time.perf_counter()
    on_stage("scan")
    registered = get_manager().target(target_name)
    toolchain = registered.backend.toolchain(registered.spec, candidate.language)
    problems = forbidden_uses(candidate.source, toolchain.forbidden_patterns, python=toolchain.form.python)
    if problems:
        return Evaluation(ev.REJECTED, "scan", "not a kernel: " + "; ".join(problems), {"findings": problems},
                          wall_s=time.perf_counter() - started)
    on_stage("compile")
    workdir = Path(config.workdir) / registered.spec.name / candidate.source_hash
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        build = build_isolated(registered, candidate.language, candidate.source, workdir, problem,
                               timeout_s=config.timeout_s, memory_limit_bytes=config.memory_limit_bytes,
                               on_stage=on_stage)
    except CompileError as exc:
        return Evaluation(ev.COMPILE_ERROR, "compile", str(exc.args[0]), {"log": exc.log, "repro": exc.repro},
                          build_command=exc.repro, wall_s=time.perf_counter() - started)
    except BuildFailed as exc:
        return Evaluation(exc.status, "compile", exc.reason, exc.evidence, wall_s=time.perf_counter() - started)
    if build.foreign_calls:
        return Evaluation(ev.REJECTED, "compile",
                          "not a kernel: outside its language's contract: " + "; ".join(build.foreign_calls[:8]),
                          {"foreign_calls": build.foreign_calls}, build_command=build.command,
                          resources=build.resources, wall_s=time.perf_counter() - started)
    return Built(candidate, registered.spec.name, build, time.perf_counter() - started)


def finish(built: Built | Evaluation, problem: Problem, config: HarnessConfig, clock: StageClock,
           lane_env: dict[str, str] | None = None) -> Evaluation:
    """A built candidate checked, timed and profiled in an isolated worker (again while its timings are
    disturbed, see :func:`steady`); a failed build's evaluation as it is. ``lane_env`` places the worker (e.g.
    on one GPU of several); ``clock`` gives the evaluation its ``stage_s``."""
    evaluation = built if isinstance(built, Evaluation) else \
        steady(lambda: _run_built(built, problem, config, clock, lane_env or {}), config.remeasure, clock)
    evaluation.stage_s = clock.split()
    return evaluation


def steady(evaluate: Callable[[], Evaluation], remeasure: int, on_stage: Callable[[str], None]) -> Evaluation:
    """A correct evaluation whose timings spread too wide to be a measurement is made again, up to ``remeasure``
    more times, and the steadiest kept (a failure in any is the result: a kernel correct only sometimes is not
    correct). When every one was disturbed, its note says its timings are unreliable."""
    evaluation, made = evaluate(), 1
    while evaluation.correct and evaluation.disturbed and made <= remeasure:
        on_stage("timing again: the last timing was disturbed")
        again, made = evaluate(), made + 1
        if not again.correct or again.spread < evaluation.spread:
            evaluation = again
    if evaluation.correct and evaluation.disturbed:
        unreliable = (f"unreliable: timed {made} times, each disturbed (samples spread up to {evaluation.spread:.1f}x);"
                      " the machine was busy, re-time on an idle one")
        evaluation.timing_note = "; ".join(n for n in (evaluation.timing_note, unreliable) if n)
    return evaluation


def lane_worker_env(registered, lane_env: dict[str, str]) -> dict[str, str]:
    """The environment a timing lane's workers start with: the backend's, and the lane's (e.g. its GPU)."""
    return {**registered.backend.worker_env(registered.spec), **lane_env}


def _run_built(built: Built, problem: Problem, config: HarnessConfig, on_stage: Callable[[str], None],
               lane_env: dict[str, str]) -> Evaluation:
    from kevolve.plugins import get_manager, worker_bootstrap

    started = time.perf_counter()
    registered = get_manager().target(built.target_name)
    build, candidate = built.build, built.candidate
    prepare_native()  # built once here, not in each worker's timed evaluation
    task = {"target": registered.spec.name, "problem": problem.to_spec(), "build": asdict(build),
            "config": config.for_worker(), "bootstrap": worker_bootstrap(), "parameters": candidate.parameters,
            "source_hash": candidate.source_hash}
    compile_s = config.compile_limit_s if any_compiled(config.baselines) else 0.0
    raw = run_isolated(task, timeout_s=config.timeout_s + compile_s, memory_limit_bytes=config.memory_limit_bytes,
                       on_stage=on_stage, env=lane_worker_env(registered, lane_env))
    return Evaluation(
        status=raw["status"], stage=raw.get("stage", ""), reason=raw.get("reason", ""),
        evidence=raw.get("evidence", {}),
        timings={k: ev.Timing(**v) for k, v in raw.get("timings", {}).items()},
        speedups={k: ev.Speedup(**v) for k, v in raw.get("speedups", {}).items()},
        resources=raw.get("resources", build.resources), diagnosis=Diagnosis.from_dict(raw.get("diagnosis")),
        build_command=build.command, wall_s=built.build_s + time.perf_counter() - started,
        untimed=raw.get("untimed", ""), untimed_baselines=raw.get("untimed_baselines", {}),
        timing_note=raw.get("timing_note", ""),
        estimate=raw.get("estimate", {}),
    )
