"""Several candidates evaluated at once (kevolve.harness.executor): the same tree as one at a time where one batch
is out, a pipelined tree that does not depend on which lane was slow, each timing lane used by one candidate at
a time, a host that times on its own cores kept quiet while it times, builds niced, and a costly profiler kept
for the kernels that reach the best."""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from pathlib import Path

import kevolve
import pytest
from kevolve.backend import TimingLanes
from kevolve.errors import KevolveError
from kevolve.harness.build import BUILD_NICENESS
from kevolve.harness.executor import NOT_EVALUATED, LocalExecutor, QuietHost
from kevolve.harness.executors import make_executor
from kevolve.harness.isolation import GroupMemory, RunningClock, run_isolated
from test_search import tree_shape


def test_builds_at_once_on_a_quiet_host_grow_the_same_tree_as_one_candidate_at_a_time(fake_plugin, tmp_path,
                                                                                      fast_harness):
    one = kevolve.optimize("relu", target="fake", budget=6, seed=3, store=tmp_path / "a.sqlite", batch=3,
                           harness=fast_harness, executor=LocalExecutor(TimingLanes(), builders=1))
    many_builds = LocalExecutor(TimingLanes(), builders=3)
    assert many_builds.depth == 1  # a host that times on its own cores builds nothing while it times
    many = kevolve.optimize("relu", target="fake", budget=6, seed=3, store=tmp_path / "b.sqlite", batch=3,
                            harness=fast_harness, executor=many_builds)
    assert tree_shape(one) == tree_shape(many)
    assert [n.evaluation.fitness for n in one.nodes] == [n.evaluation.fitness for n in many.nodes]


def _pipelined_search(store, harness, slow_lane: str, events: list[dict]):
    lanes = TimingLanes(tuple({"FAKE_LANE": lane, "FAKE_TIMING_DELAY_S": "0.4" if lane == slow_lane else "0"}
                              for lane in "01"), quiet_host=False)
    executor = LocalExecutor(lanes, builders=2)
    assert executor.depth == 2
    return kevolve.optimize("relu", target="fake", budget=8, seed=3, store=store, batch=2, harness=harness,
                            executor=executor, progress=events.append)


def test_the_next_batch_builds_while_the_last_is_timed_and_the_tree_does_not_depend_on_which_lane_was_slow(
        fake_plugin, tmp_path, fast_harness):
    slow_first, slow_second = [], []
    one = _pipelined_search(tmp_path / "a.sqlite", fast_harness, "0", slow_first)
    other = _pipelined_search(tmp_path / "b.sqlite", fast_harness, "1", slow_second)
    assert len(one.nodes) == 8
    assert tree_shape(one) == tree_shape(other)
    assert [n.evaluation.fitness for n in one.nodes] == [n.evaluation.fitness for n in other.nodes]
    for events in (slow_first, slow_second):
        submitted = [e["node"] for e in events if e["kind"] == "evaluate"]
        recorded = [e["node"] for e in events if e["kind"] == "node"]
        assert recorded == sorted(recorded) == submitted  # recorded in proposal order, each once
        # a second batch went out before the first batch (its first two nodes) was recorded
        first_record = next(i for i, e in enumerate(events) if e["kind"] == "node")
        assert len([e for e in events[:first_record] if e["kind"] == "evaluate"]) > 2, events


def test_each_lane_times_one_candidate_at_a_time_and_the_lanes_time_together(fake_plugin, tmp_path, fast_harness):
    """Two workers per lane: one on the device, the other ready and waiting for it."""
    log = tmp_path / "events.log"
    lanes = TimingLanes(tuple({"FAKE_LANE": lane, "FAKE_EVENT_LOG": str(log), "FAKE_TIMING_DELAY_S": "3"}
                              for lane in "01"), quiet_host=False)
    result = kevolve.optimize("relu", target="fake", budget=4, seed=0, store=tmp_path / "s.sqlite", batch=4,
                              harness=fast_harness, executor=LocalExecutor(lanes, builders=4))
    assert len(result.nodes) == 4 and all(n.evaluation.correct for n in result.nodes), \
        [n.evaluation.reason for n in result.nodes]
    waited = sorted(n.evaluation.stage_s.get("wait", 0.0) for n in result.nodes)
    assert waited[0] < 1 and waited[-1] > 2, waited  # the second on each lane waited for the first's timing
    events = [(lane, float(a), float(b)) for lane, a, b in (line.split() for line in log.read_text().splitlines())]
    assert {lane for lane, _, _ in events} == {"0", "1"}
    for lane in "01":
        spans = sorted((a, b) for name, a, b in events if name == lane)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans
    assert any(a0 < b1 and a1 < b0 for l0, a0, b0 in events for l1, a1, b1 in events if l0 != l1), events
    assert "evaluations at once" in result.summary()


def test_a_timed_kernel_waits_for_running_builds_and_holds_back_new_ones():
    host, order = QuietHost(), []
    started, release = threading.Event(), threading.Event()

    def first_build():
        with host.building():
            order.append("build 1")
            started.set()
            release.wait(10)
            order.append("build 1 done")

    def timing():
        with host.timing():
            order.append("timing")
            time.sleep(0.05)
            order.append("timing done")

    def second_build():
        with host.building():
            order.append("build 2")

    threads = [threading.Thread(target=first_build)]
    threads[0].start()
    started.wait(10)
    threads.append(threading.Thread(target=timing))
    threads[1].start()
    while not host._waiting:  # the timing is queued behind the running build
        time.sleep(0.001)
    threads.append(threading.Thread(target=second_build))
    threads[2].start()
    time.sleep(0.05)
    assert order == ["build 1"]  # neither the timing nor a new build runs beside the first build
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["build 1", "build 1 done", "timing", "timing done", "build 2"]


def test_an_executor_that_cannot_be_made_says_what_to_write(fake_plugin):
    registered = fake_plugin.target("fake")
    with pytest.raises(KevolveError, match="local:4"):
        make_executor("local:many", registered)
    with pytest.raises(KevolveError, match="choose local, local:N, ray or ray:ADDRESS"):
        make_executor("dask", registered)
    assert make_executor("local:3", registered).capacity == 3
    assert make_executor(None, registered).capacity == 1  # the fake target times on the host's cores


def test_a_worker_waits_for_its_device_off_its_clock_but_not_forever():
    clock = RunningClock(max_pause_s=0.3)
    time.sleep(0.05)
    clock.pause(True)
    time.sleep(0.2)
    assert 0.04 <= clock.elapsed() < 0.15  # the wait is forgiven
    time.sleep(0.3)  # 0.5 s waited: past the 0.3 s forgiven, waiting counts again
    assert 0.24 <= clock.elapsed() < 0.4
    clock.pause(False)
    time.sleep(0.05)
    assert 0.29 <= clock.elapsed() < 0.5


def test_an_isolated_task_waiting_for_its_device_is_not_timed_out_for_it():
    answer = run_isolated({"entry": "waiting_task:run", "wait_s": 5, "work_s": 0.5}, timeout_s=3,
                          memory_limit_bytes=2**30)
    assert answer["status"] == "ok", answer


def test_a_task_that_claims_to_wait_forever_is_timed_out():
    started = time.monotonic()
    answer = run_isolated({"entry": "waiting_task:run", "wait_s": 60, "work_s": 0}, timeout_s=2,
                          memory_limit_bytes=2**30)
    assert answer["status"] == "timeout" and time.monotonic() - started < 30, answer


def test_a_costly_profiler_runs_only_on_kernels_that_reach_the_best_so_far(fake_plugin, tmp_path, fast_harness):
    """Hardware counters cost seconds of the device a candidate (Nsight Compute on a GPU): a search asks for them
    on the kernels at least as fast as its best when they were submitted, and the final re-timing profiles a
    best kernel the search diagnosed from the roofline alone."""
    result = kevolve.optimize("relu", target="fake_counters", budget=10, seed=3, store=tmp_path / "s.sqlite",
                              harness=fast_harness)
    best, sources = math.inf, []
    for node in result.nodes:  # one candidate at a time here: each is submitted once the one before is recorded
        fitness = node.evaluation.fitness
        sources.append(node.evaluation.diagnosis.source)
        assert sources[-1] == ("fake-counters" if fitness >= best else "roofline"), (fitness, best, sources)
        best = fitness if best == math.inf else max(best, fitness)
    assert {"fake-counters", "roofline"} <= set(sources), sources
    assert result.final.evaluation.diagnosis.source == "fake-counters"


def test_builds_run_nicer_than_the_timing_they_overlap(fake_plugin, tmp_path, fast_harness):
    kevolve.optimize("relu", target="fake", budget=2, seed=0, store=tmp_path / "s.sqlite", harness=fast_harness)
    seen = [int(p.read_text()) for p in Path(fast_harness.workdir).rglob("built_at_niceness")]
    assert seen and set(seen) == {min(19, os.nice(0) + BUILD_NICENESS)}, seen


def test_a_closed_executor_starts_no_build_or_timing_it_was_still_holding(fake_plugin, fast_harness):
    """An interrupted search closes its executor with two batches out: what has not started building or timing
    comes back not evaluated at once, instead of holding the exit for every queued candidate."""
    import fake_backend
    from kevolve.api import resolve_problem
    from kevolve.synthesis.base import Candidate

    problem = resolve_problem("relu", None, None, None)
    recipe = fake_backend.FakeRelu()
    candidates = [Candidate(recipe.render(problem, {"speed": s, "style": "a"}), "pyfake", {"speed": s})
                  for s in range(1, 5)]
    lanes = TimingLanes(({"FAKE_LANE": "0", "FAKE_TIMING_DELAY_S": "0.5"},), quiet_host=False)
    executor = LocalExecutor(lanes, builders=2)  # two builds at a time: two wait for them
    collect = executor.submit(candidates, problem, "fake", fast_harness, lambda i, stage: None)
    executor.close()
    reasons = [e.reason for e in collect()]
    assert sum(r == NOT_EVALUATED.reason for r in reasons) >= 2, reasons


def test_a_candidate_waiting_for_a_build_slot_is_charged_wait_not_check(fake_plugin, fast_harness):
    """The next batch's candidates wait for the last batch's builds: executor time, which the session's time split
    must not show as the candidates' correctness checks."""
    import fake_backend
    from kevolve.api import resolve_problem
    from kevolve.synthesis.base import Candidate

    problem = resolve_problem("relu", None, None, None)
    recipe = fake_backend.FakeRelu()
    candidates = [Candidate(recipe.render(problem, {"speed": s, "style": "a"}), "pyfake", {"speed": s})
                  for s in range(1, 4)]
    stages: list[tuple[int, str, float]] = []
    lanes = TimingLanes(({"FAKE_LANE": "0"}, {"FAKE_LANE": "1"}), quiet_host=False)
    executor = LocalExecutor(lanes, builders=1)
    try:
        evaluations = executor.submit(candidates, problem, "fake", fast_harness,
                                      lambda i, stage: stages.append((i, stage, time.perf_counter())))()
    finally:
        executor.close()
    waited = {i for i, stage, _ in stages if stage == "waiting for a build slot"}
    assert len(waited) == 2, stages  # one built at a time: the other two waited
    for i in waited:
        mine = [(stage, at) for j, stage, at in stages if j == i]
        assert [stage for stage, _ in mine[:2]] == ["waiting for a build slot", "scan"], mine
        assert evaluations[i].stage_s["wait"] >= 0.9 * (mine[1][1] - mine[0][1]) > 0, (mine, evaluations[i].stage_s)

def test_watchers_share_one_scan_of_the_process_groups_memory(monkeypatch):
    """Thirty workers watched at once read one scan of /proc, not one each, and a group's memory is its members'."""
    import subprocess

    child = subprocess.Popen(["sleep", "30"], start_new_session=True)  # leads a group of its own
    try:
        memory = GroupMemory(max_age_s=60)
        scans = []
        scan = memory._scan
        monkeypatch.setattr(memory, "_scan", lambda: scans.append(1) or scan())
        threads = [threading.Thread(target=memory.of, args=(child.pid,)) for _ in range(30)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(scans) == 1
        assert memory.of(child.pid) > 0 and memory.of(os.getpid() + 10**7) == 0
        memory.max_age_s = 0
        memory.of(child.pid)
        assert len(scans) == 2  # an old scan is made again
    finally:
        child.kill()
        child.wait()
