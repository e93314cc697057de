"""A process writing to a store, for the tests of a store that several processes share (test_store_sharing.py):
only separate processes show what two writers or a killed one do to a store, threads share too much.

``python store_writer.py LOCATION NODES [PAUSE] [--stall]`` prints ``READY`` once imported and waits for a line
on stdin, so that several writers start at the same moment; then it opens the store (whichever comes first
creates and migrates a new one), creates a session (``SESSION <id>``), adds NODES nodes, each in a transaction of
its own and printed as ``NODE <n>`` once committed, distils a skill, finishes the session and prints ``DONE``.
After node PAUSE it prints ``PAUSED`` and waits for another line: writers paused half-way have written at the same
time, whatever the scheduler did. With ``--stall`` it adds one more node instead of finishing but stops inside
that node's transaction, holding the write lock, and prints ``STALLED``: to be killed there, mid-session.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from kevolve.harness.evaluation import Evaluation, Speedup, Timing
from kevolve.search.config import SearchConfig
from kevolve.store import NodeRecord, Store


def node(node_id: int, fitness: float = 2.0) -> NodeRecord:
    timing = Timing(1.0 / fitness, 1.0 / fitness, 1.0 / fitness, 5)
    evaluation = Evaluation("ok", "done", timings={"kernel": timing, "eager": Timing(1.0, 1.0, 1.0, 5)},
                            speedups={"eager": Speedup(fitness, fitness, fitness)})
    return NodeRecord(node_id, 0, "seed", "template", "fake.relu", "pyfake", {}, f"COST = {1 / fitness}",
                      f"hash{node_id}", "", evaluation)


def new_session(store: Store) -> str:
    return store.create_session(problem_key="relu:k", problem_name="relu", family="pointwise",
                                problem_spec={"kind": "catalog", "op": "relu"}, target="fake",
                                toolchain="pyfake 1", seed=0, config=SearchConfig(budget=1))


class _Stalling:
    """The store's connection, which stops the process once a node's evaluation is written, before the commit."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def execute(self, sql: str, *args: Any) -> Any:
        result = self.db.execute(sql, *args)
        if sql.startswith("INSERT INTO evaluations"):
            print("STALLED", flush=True)
            time.sleep(3600)
        return result


def main(location: str, nodes: int, pause: int, stall: bool) -> None:
    print("READY", flush=True)
    sys.stdin.readline()
    store = Store(location)
    session = new_session(store)
    print("SESSION", session, flush=True)
    for node_id in range(1, nodes + 1):
        store.add_node(session, node(node_id, fitness=1.0 + node_id))
        print("NODE", node_id, flush=True)
        if node_id == pause:
            print("PAUSED", flush=True)
            sys.stdin.readline()
    if stall:
        store.db = _Stalling(store.db)
        store.add_node(session, node(nodes + 1))
    store.add_skill(session, "fake", "pyfake 1", "pointwise", "relu", {"lesson": session})
    store.finish_session(session, "done", "budget")
    print("DONE", flush=True)


if __name__ == "__main__":
    numbers = [int(arg) for arg in sys.argv[2:] if arg.isdigit()]
    main(sys.argv[1], numbers[0], numbers[1] if len(numbers) > 1 else 0, "--stall" in sys.argv[3:])
