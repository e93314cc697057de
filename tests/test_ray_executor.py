"""Candidates evaluated on a real local Ray cluster (kevolve.harness.ray_executor): the same tree as the local
pool for the same seed (the fake backend's timings are synthetic), and a Ray worker killed mid-task loses
nothing: its candidate runs again elsewhere, and one killed again is a failure that says so."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import kevolve
import pytest
from kevolve.backend import TimingLanes
from kevolve.harness.executor import LocalExecutor
from kevolve.harness.ray_executor import RayExecutor
from test_search import tree_shape

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of two CPUs for this module; each timing takes 0.5 s, long enough to be killed."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"FAKE_TIMING_DELAY_S": "0.5"}})
    yield
    ray.shutdown()


def _tasks_running(name: str) -> list[int]:
    """Pids of the Ray workers now running the task ``name`` (Ray titles a worker's process ``ray::NAME``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(f"ray::{name}".encode()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_a_search_on_ray_grows_the_same_tree_as_the_local_pool(cluster, fake_plugin, tmp_path, fast_harness):
    registered = fake_plugin.target("fake")
    on_ray = kevolve.optimize("relu", target="fake", budget=4, seed=3, store=tmp_path / "ray.sqlite",
                              harness=fast_harness, executor=RayExecutor(registered, capacity=2))
    local = kevolve.optimize("relu", target="fake", budget=4, seed=3, store=tmp_path / "local.sqlite",
                             harness=fast_harness, executor=LocalExecutor(TimingLanes(), builders=2))
    assert len(on_ray.nodes) == 4 and on_ray.correct
    assert tree_shape(on_ray) == tree_shape(local)
    assert [n.evaluation.fitness for n in on_ray.nodes] == [n.evaluation.fitness for n in local.nodes]


def _search_killing_timing_workers(times: int, budget: int, store: Path, harness, registered):
    """A search on the cluster while the first ``times`` Ray workers seen timing a candidate are killed; the
    search's result and the pids killed."""
    killed: list[int] = []
    done = threading.Event()

    def kill_timing_workers():
        while not done.is_set() and len(killed) < times:
            for pid in _tasks_running("_time_task"):
                if pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    break
            time.sleep(0.02)

    killer = threading.Thread(target=kill_timing_workers)
    killer.start()
    try:
        result = kevolve.optimize("relu", target="fake", budget=budget, seed=1, store=store, harness=harness,
                                  executor=RayExecutor(registered, capacity=2))
    finally:
        done.set()
        killer.join(10)
    return result, killed


def test_a_ray_worker_killed_mid_task_loses_no_node(cluster, fake_plugin, tmp_path, fast_harness):
    result, killed = _search_killing_timing_workers(1, 4, tmp_path / "s.sqlite", fast_harness,
                                                    fake_plugin.target("fake"))
    assert killed, "no Ray worker was seen running a timing task"
    stored = kevolve.session_result(result.session, store=tmp_path / "s.sqlite")
    assert len(stored.nodes) == 4 and stored.final is not None
    assert all(n.evaluation.correct for n in stored.nodes)  # the killed one ran again


def test_a_candidate_whose_worker_dies_twice_is_recorded_as_a_failure_with_the_reason(cluster, fake_plugin, tmp_path,
                                                                                     fast_harness):
    result, killed = _search_killing_timing_workers(2, 1, tmp_path / "s.sqlite", fast_harness,
                                                    fake_plugin.target("fake"))
    assert len(killed) == 2, killed
    stored = kevolve.session_result(result.session, store=tmp_path / "s.sqlite")
    [node] = stored.nodes
    assert node.evaluation.status == "crash" and "failed 2 times" in node.evaluation.reason, node.evaluation.reason
