"""Where a search's candidates are evaluated, several at once.

A candidate's build (the source scan, the ahead-of-time compile, the resource report) needs no device: on a GPU
host most of an evaluation's time (two thirds of it on a lent H200, bench/results/nvidia_h200/throughput.md) is
spent where the host's other cores sit idle. :class:`LocalExecutor` builds up to ``builders`` candidates at once
and hands each built one to a free timing lane (one per GPU the target can be timed on, see
:class:`~kevolve.backend.base.TimingLanes`), where an isolated worker checks, times and profiles it alone on its
device. Where the device is the host's own cores, a timed kernel waits for running builds to end and no new build
starts until it is done. Evaluations come back in the candidates' order, so the tree a search grows depends on
the candidates and their measured fitness, never on which finished first.
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext

from kevolve.backend.base import TimingLanes
from kevolve.harness import evaluation as ev
from kevolve.harness.evaluation import Evaluation
from kevolve.harness.isolation import zygote
from kevolve.harness.pipeline import HarnessConfig, build_candidate, finish, lane_worker_env
from kevolve.harness.throughput import StageClock
from kevolve.problems.problem import Problem
from kevolve.synthesis.base import Candidate

#: (candidate's index in the batch, stage report)
OnStage = Callable[[int, str], None]
#: waits for a submitted batch and gives its evaluations, in the candidates' order
Collect = Callable[[], list[Evaluation]]
#: what a candidate still waiting to build or to be timed gets once the executor is closed (never recorded: the
#: search that submitted it has ended)
NOT_EVALUATED = Evaluation(ev.CRASH, "executor", "not evaluated: the search ended first")

#: workers a timing lane holds at once where the host need not be quiet: one on the device, and one starting its
#: runtime, loading its kernel and drawing its timing inputs meanwhile; a worker holds the device itself from its
#: correctness check on (harness/worker.py), which took 1.4 s of a softmax candidate's 3 s there on a lent H200
WORKERS_PER_LANE = 2


class Executor(ABC):
    """Evaluates batches of candidates. ``capacity``: how many it evaluates at once; the search proposes batches at
    least this wide so that none of it idles."""

    capacity: int = 1
    #: batches evaluated at once: 2 where a batch can build while the one before it is timed, so that a search
    #: proposes the next batch before the last one's results are in (from the tree as it was one batch earlier)
    depth: int = 1

    @abstractmethod
    def submit(self, candidates: list[Candidate], problem: Problem, target_name: str, config: HarnessConfig,
               on_stage: OnStage) -> Collect:
        """Start evaluating the candidates; the returned call waits for their evaluations."""

    def evaluate(self, candidates: list[Candidate], problem: Problem, target_name: str, config: HarnessConfig,
                 on_stage: OnStage) -> list[Evaluation]:
        """Each candidate's evaluation, in the candidates' order."""
        return self.submit(candidates, problem, target_name, config, on_stage)()

    def describe(self) -> str:
        """What it runs on, in words, for the progress display and the session's record."""
        return type(self).__name__

    def close(self) -> None:
        """Release what it holds (worker pools, cluster connections)."""


class LocalExecutor(Executor):
    """This host: builds on up to ``builders`` threads (each build is an isolated worker process), check and
    timing one candidate at a time per lane."""

    def __init__(self, lanes: TimingLanes | None = None, builders: int = 1) -> None:
        self.lanes = lanes or TimingLanes()
        self.builders = max(1, builders)
        self.capacity = max(self.builders, len(self.lanes.envs))
        #: one at a time stays one at a time; a quiet host builds nothing while it times, so it has no overlap to win
        self.depth = 1 if self.lanes.quiet_host or self.capacity == 1 else 2
        self._builds = threading.BoundedSemaphore(self.builders)
        self._pool: ThreadPoolExecutor | None = None
        #: set by close(): evaluations not yet building or timing end at once (an interrupted search waits only
        #: for the workers already running, not for two batches)
        self._stopping = threading.Event()
        self._free: queue.Queue[dict[str, str]] = queue.Queue()
        for _ in range(1 if self.lanes.quiet_host else WORKERS_PER_LANE):
            for env in self.lanes.envs:
                self._free.put(env)
        self._quiet = QuietHost() if self.lanes.quiet_host else None

    def describe(self) -> str:
        lanes = len(self.lanes.envs)
        return (f"this host: {self.builders} build{'s' if self.builders > 1 else ''} at once, {lanes} timing "
                f"lane{'s' if lanes > 1 else ''}" + (" (the host quiet while timing)" if self._quiet else ""))

    def submit(self, candidates: list[Candidate], problem: Problem, target_name: str, config: HarnessConfig,
               on_stage: OnStage) -> Collect:
        self._start_lanes(target_name)

        def one(index: int) -> Evaluation:
            return self._evaluate_one(candidates[index], problem, target_name, config,
                                      lambda stage: on_stage(index, stage))

        if self.capacity == 1 or (self.depth == 1 and len(candidates) == 1):
            evaluations = [one(i) for i in range(len(candidates))]  # in the caller's thread: Ctrl-C reaches it
            return lambda: evaluations
        if self._pool is None:  # builds beyond ``builders`` wait for the semaphore, not for a thread
            self._stopping.clear()
            self._pool = ThreadPoolExecutor(max_workers=self.capacity * self.depth, thread_name_prefix="kevolve-eval")
        futures = [self._pool.submit(one, i) for i in range(len(candidates))]
        return lambda: [future.result() for future in futures]

    def close(self) -> None:
        self._stopping.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _evaluate_one(self, candidate: Candidate, problem: Problem, target_name: str, config: HarnessConfig,
                      on_stage: Callable[[str], None]) -> Evaluation:
        clock = StageClock(on_stage)
        with self._build_slot(clock), self._quiet.building() if self._quiet else nullcontext():
            if self._stopping.is_set():
                return NOT_EVALUATED
            built = build_candidate(candidate, problem, target_name, config, clock)
        if isinstance(built, Evaluation):
            return finish(built, problem, config, clock)
        with self._lane(clock) as env, self._quiet.timing() if self._quiet else nullcontext():
            if self._stopping.is_set():
                return NOT_EVALUATED
            return finish(built, problem, config, clock, env)

    def _start_lanes(self, target_name: str) -> None:
        """Start each lane's worker zygote now, beside the batch's builds: its start (importing torch) is otherwise
        paid when the first candidate is built, with every lane idle."""
        from kevolve.plugins import get_manager

        registered = get_manager().target(target_name)
        for env in self.lanes.envs:
            zygote(lane_worker_env(registered, env))

    @contextmanager
    def _build_slot(self, clock: StageClock) -> Iterator[None]:
        """One of the ``builders`` slots. A candidate of the next batch may wait here for the last batch's builds:
        that time is the executor's, not its check's (the session's time split charges it to ``wait``)."""
        if not self._builds.acquire(blocking=False):
            clock("waiting for a build slot")
            self._builds.acquire()
        try:
            yield
        finally:
            self._builds.release()

    @contextmanager
    def _lane(self, clock: StageClock) -> Iterator[dict[str, str]]:
        try:
            env = self._free.get_nowait()
        except queue.Empty:
            clock("waiting for a timing lane")
            env = self._free.get()
        try:
            yield env
        finally:
            self._free.put(env)


class QuietHost:
    """Builds share the host; a timed kernel has it alone. A kernel waiting to be timed goes before builds that
    have not started, so a stream of builds cannot hold the timing back."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._builds = self._waiting = 0
        self._timing = False

    @contextmanager
    def building(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._timing and not self._waiting)
            self._builds += 1
        try:
            yield
        finally:
            with self._cond:
                self._builds -= 1
                self._cond.notify_all()

    @contextmanager
    def timing(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._timing and not self._builds)
            self._waiting -= 1
            self._timing = True
        try:
            yield
        finally:
            with self._cond:
                self._timing = False
                self._cond.notify_all()

