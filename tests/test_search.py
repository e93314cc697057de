"""Search behaviour on the deterministic fake backend: reproducibility, dedupe, stop conditions, store reuse,
resuming a killed session. The tests of the store (reuse, keying, a killed writer) run on SQLite and on
PostgreSQL (the ``store_location`` fixture); the others on SQLite only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kevolve
from kevolve.store import Store


def tree_shape(result):
    return [(n.node_id, n.parent_id, n.memory_op, json.dumps(n.parameters, sort_keys=True)) for n in result.nodes]


@pytest.mark.parametrize("search", ["mcts", "evolution"])
def test_same_seed_same_tree(fake_plugin, tmp_path, fast_harness, search):
    a = kevolve.optimize("relu", target="fake", budget=6, seed=3, store=tmp_path / "a.sqlite", search=search,
                         harness=fast_harness)
    b = kevolve.optimize("relu", target="fake", budget=6, seed=3, store=tmp_path / "b.sqlite", search=search,
                         harness=fast_harness)
    c = kevolve.optimize("relu", target="fake", budget=6, seed=4, store=tmp_path / "c.sqlite", search=search,
                         harness=fast_harness)
    assert tree_shape(a) == tree_shape(b)
    assert tree_shape(a) != tree_shape(c)
    assert a.correct and a.speedup > 1


def test_search_finds_the_best_point_and_never_repeats_a_source(fake_plugin, fast_harness):
    result = kevolve.optimize("relu", target="fake", budget=16, seed=0, harness=fast_harness)
    sources = [n.source_hash for n in result.nodes]
    assert len(sources) == len(set(sources))
    # fitness = speed * bonus (bonus 0.5, 1 or 1.5): the space's best point is 24x; a decent search passes 8x
    assert result.speedup >= 8
    memory_ops = {n.memory_op for n in result.nodes}
    assert "seed" in memory_ops and memory_ops & {"inherit", "siblings", "combine"}


def test_target_speedup_stops_early(fake_plugin, fast_harness):
    result = kevolve.optimize("relu", target="fake", budget=40, target_speedup=2.0, harness=fast_harness)
    assert "target speedup" in result.stop_reason
    assert len(result.nodes) < 40


def test_stall_triggers_restart_then_stop(fake_plugin, fast_harness):
    result = kevolve.optimize("relu", target="fake", budget=200, stall=3, harness=fast_harness)
    assert "stalled" in result.stop_reason or "exhausted" in result.stop_reason
    assert "restart" in {n.memory_op for n in result.nodes}


def test_second_optimize_returns_stored_best_at_once(fake_plugin, fast_harness, store_location):
    first = kevolve.optimize("relu", target="fake", budget=6, harness=fast_harness)
    started = time.perf_counter()
    second = kevolve.optimize("relu", target="fake", budget=6, harness=fast_harness)
    assert time.perf_counter() - started < 1.0
    assert second.from_store and second.session == first.session and second.source == first.source
    again = kevolve.optimize("relu", target="fake", budget=2, again=True, harness=fast_harness)
    assert not again.from_store and again.session != first.session


def test_results_do_not_leak_across_targets_or_shapes(fake_plugin, fast_harness, store_location):
    kevolve.optimize("relu", target="fake", budget=3, harness=fast_harness)
    other_shape = kevolve.optimize("relu", target="fake", budget=3, dims={"n": 4096}, harness=fast_harness)
    assert not other_shape.from_store
    # the other shape was seeded from the neighbour's winner
    assert any(n.note == "won on a similar problem" for n in other_shape.nodes)


def test_killed_session_resumes_without_losing_nodes(fast_harness, store_location):
    store = store_location
    env = {**os.environ, "KEVOLVE_PLUGINS": "fake_backend",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    script = ("import kevolve, sys\n"
              "from kevolve.harness.pipeline import HarnessConfig\n"
              "kevolve.optimize('relu', target='fake', budget=10, seed=1, store=sys.argv[1], stall=100,\n"
              "    harness=HarnessConfig(timeout_s=60, repeats=5, sample_s=0.0005, workdir=sys.argv[2]),\n"
              "    progress=lambda e: print('NODE', e['node'], flush=True) if e['kind'] == 'node' else None)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(store), str(fast_harness.workdir)],
                            stdout=subprocess.PIPE, text=True, env=env)
    seen = 0
    for line in proc.stdout:
        if line.startswith("NODE"):
            seen += 1
        if seen == 4:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    db = Store(store)
    session = db.sessions()[0]
    assert session.status == "dead"  # stored as running, but its process is gone
    before = db.nodes(session.id)
    assert len(before) >= 4

    os.environ["KEVOLVE_PLUGINS"] = "fake_backend"
    try:
        from kevolve.plugins import reset_manager

        reset_manager()
        resumed = kevolve.resume(session.id, store=store, harness=fast_harness)
    finally:
        os.environ.pop("KEVOLVE_PLUGINS")
        reset_manager()
    after = Store(store).nodes(session.id)
    assert [(n.node_id, n.source_hash) for n in after[: len(before)]] == [(n.node_id, n.source_hash) for n in before]
    assert len(resumed.nodes) == 10 and Store(store).session(session.id).status == "done"


def test_a_part_with_no_recipe_lends_the_mixed_search_no_patience():
    """``LLM+template`` on a problem no recipe covers: the template seeds nothing, so the search's patience for
    rounds that bring nothing new is the LLM's (each of those rounds is a paid request), not the template's 20."""
    import random

    from kevolve.errors import NoRecipeError
    from kevolve.synthesis import base
    from kevolve.synthesis.base import Candidate, Context, Synthesizer
    from kevolve.synthesis.mixed import MixedSynthesizer

    class NoRecipe(Synthesizer):
        name, patience = "template", 20

        def propose(self, context):
            raise NoRecipeError("no recipe")

    class Writer(Synthesizer):
        name, patience = "llm", 3

        def propose(self, context):
            return [Candidate("// kernel", "cpp", synthesizer=self.name)]

    mixed = MixedSynthesizer([NoRecipe(), Writer()], tuners={"template"})
    assert mixed.patience == 20  # before the template was asked
    # the stubs read nothing of the context but its operator and count
    context = Context(problem=None, target=None, facts=None, memory_op=base.SEED, rng=random.Random(0), n=2)
    assert [c.synthesizer for c in mixed.propose(context)] == ["llm"]
    assert mixed.patience == 3
