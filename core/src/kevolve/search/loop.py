"""The search loop: select -> propose -> evaluate -> record -> backpropagate, until a stop condition."""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kevolve.harness import evaluation as ev
from kevolve.harness.evaluation import Evaluation, evidence_text
from kevolve.harness.executor import Collect, Executor, LocalExecutor
from kevolve.harness.pipeline import HarnessConfig
from kevolve.knowledge import KnowledgeBase, Signals
from kevolve.problems.catalog import OpDef
from kevolve.problems.problem import Problem, dtype_name
from kevolve.registry import RegisteredTarget
from kevolve.search.strategy import Strategy
from kevolve.search.tree import ROOT, Tree
from kevolve.skills import Skill
from kevolve.store import NodeRecord, Store
from kevolve.synthesis import base
from kevolve.synthesis.base import Candidate, Context, Synthesizer

Progress = Callable[[dict[str, Any]], None]


@dataclass
class _Batch:
    """Candidates out for evaluation together, and where they go in the tree."""

    parent_id: int
    memory_op: str
    ids: list[int]
    candidates: list[Candidate]
    #: the candidates' indices that are evaluated (a failed synthesis is recorded as it is)
    runnable: list[int]
    collect: Collect


@dataclass
class Budget:
    #: evaluated candidates (duplicates are not evaluated and do not count)
    candidates: int = 30
    time_s: float | None = None
    #: stop once the best speedup over eager reaches this
    target_speedup: float | None = None
    #: evaluated candidates without a 1% improvement before the search restarts; a second stall ends it
    stall: int = 12
    #: candidates proposed per expansion
    batch: int = 2


class Search:
    def __init__(self, *, problem: Problem, target: RegisteredTarget, synthesizer: Synthesizer, strategy: Strategy,
                 budget: Budget, harness: HarnessConfig, store: Store, session_id: str, seed: int,
                 docs: KnowledgeBase, seeds: list[tuple[str, dict]] | None = None, skills: list[Skill] | None = None,
                 knowledge: bool = True, progress: Progress = lambda event: None,
                 executor: Executor | None = None, ops: list[OpDef] | None = None) -> None:
        self.problem, self.target, self.synthesizer, self.strategy = problem, target, synthesizer, strategy
        self.budget, self.harness, self.store, self.session_id, self.seed = budget, harness, store, session_id, seed
        self.docs, self.seeds, self.skills = docs, seeds or [], skills or []
        #: evaluates the candidates, several at once where it can (evaluations of a batch report from its threads)
        self.executor = executor or LocalExecutor()
        reporting = threading.Lock()

        def report(event: dict[str, Any]) -> None:
            with reporting:
                progress(event)

        self.progress = report
        #: False: no retrieved passages or hints reach the synthesizer (the kernel file contract still does)
        self.knowledge = knowledge
        self.facts = target.backend.facts(target.spec)
        self.recipes = target.backend.recipes(target.spec)
        self.forms = target.language_forms()
        #: the catalog's ops: a program that one of them computes gets its recipes (kevolve.program.catalog_twin)
        self.ops = ops or []
        self.tree = Tree()
        self.best_fitness = 0.0
        self.since_improvement = 0
        self.stalls = 0
        self.duplicates = 0

    # --- resuming ---------------------------------------------------------------------------------------

    def replay(self, records: list[NodeRecord]) -> None:
        """Rebuild the tree from stored nodes, in the order they were evaluated."""
        for record in records:
            candidate = Candidate(record.source, record.language, record.parameters, record.recipe,
                                  record.synthesizer, record.note, trace=record.trace,
                                  error=record.evaluation.reason if record.evaluation.status == ev.SYNTHESIS_ERROR
                                  else "")
            node = self.tree.add(record.parent_id if record.parent_id in self.tree.nodes else ROOT, candidate,
                                 record.evaluation, record.memory_op, node_id=record.node_id)
            self.synthesizer.replay(candidate)
            self._account(node.id, record.evaluation)

    # --- the loop ---------------------------------------------------------------------------------------

    def evaluated_count(self) -> int:
        return len(self.tree.nodes) - 1

    def run(self) -> str:
        """Propose batches and record their evaluations until a stop condition. Up to ``executor.depth`` batches
        are evaluated at once: a batch is proposed from the tree as it stands when the one before it is submitted,
        and batches are recorded in the order they were proposed, so the tree depends on the seed, the executor's
        depth and the measured fitness, never on which evaluation finished first."""
        started = time.monotonic()
        self._next_id = self.store.next_node_id(self.session_id)  # past a resumed session's final re-timings too
        in_flight: deque[_Batch] = deque()
        queued: deque[tuple[int, str, list[Candidate]]] = deque()  # proposed groups not yet submitted
        empty_rounds = 0
        stop = ""
        while True:
            while not stop and len(in_flight) < self.executor.depth:
                stop = self._should_stop(started)
                if stop or self._counted(in_flight) >= self.budget.candidates:
                    break
                if not queued:
                    proposed = self._propose(empty_rounds, in_flight)
                    if isinstance(proposed, str):
                        stop = proposed
                        break
                    if not proposed:
                        if in_flight:  # the batches still out may give the synthesizer something new
                            break
                        empty_rounds += 1
                        if empty_rounds >= self.synthesizer.patience:
                            stop = f"exhausted: the synthesizer proposed nothing new in {empty_rounds} expansions in a row"
                        self.since_improvement += 1
                        continue
                    empty_rounds = 0
                    queued.extend(proposed)
                parent_id, memory_op, candidates = queued.popleft()
                group = self._unseen(candidates, in_flight)[:self.budget.candidates - self._counted(in_flight)]
                if group:
                    in_flight.append(self._submit(parent_id, memory_op, group))
            if not in_flight:
                return stop
            self._record_batch(in_flight.popleft())

    def _propose(self, empty_rounds: int, in_flight: deque[_Batch]) -> list[tuple[int, str, list[Candidate]]] | str:
        """The next expansion's new candidates in groups as wide as the executor evaluates at once, or why the
        search ends."""
        # the rng follows the tree's size once the batches out are recorded: two proposals never share a seed
        step = self._counted(in_flight) + 1 + empty_rounds * 7919
        stalled = self.since_improvement >= self.budget.stall
        if stalled:
            self.stalls += 1
            self.since_improvement = 0
            if self.stalls >= 2:
                return f"stalled: no 1% improvement in {self.budget.stall} candidates, twice"
        parent_id, memory_op = self.strategy.select(self.tree, random.Random(self.seed * 1_000_003 + 2 * step), stalled)
        context = self._context(parent_id, memory_op, random.Random(self.seed * 1_000_003 + 2 * step + 1),
                                room=self.budget.candidates - self._counted(in_flight))
        self.progress({"kind": "expand", "parent": parent_id, "memory_op": memory_op})
        # a failed synthesis is recorded every time (its reason feeds the next prompt); code is evaluated once
        fresh = self._unseen(self.synthesizer.propose(context), in_flight)
        self.duplicates += context.n - len(fresh)
        width = self.executor.capacity
        return [(parent_id, memory_op, fresh[i:i + width]) for i in range(0, len(fresh), width)]

    def _unseen(self, candidates: list[Candidate], in_flight: deque[_Batch]) -> list[Candidate]:
        """The candidates whose code is neither in the tree, nor out for evaluation, nor earlier in the list
        (failed syntheses all stay)."""
        seen = set(self.tree.by_hash) | {c.source_hash for batch in in_flight for c in batch.candidates}
        unseen = []
        for candidate in candidates:
            if candidate.error or candidate.source_hash not in seen:
                unseen.append(candidate)
                seen.add(candidate.source_hash)
        return unseen

    def _counted(self, in_flight: deque[_Batch]) -> int:
        """Candidates evaluated or out for evaluation: what the budget counts."""
        return self.evaluated_count() + sum(len(batch.candidates) for batch in in_flight)

    def _should_stop(self, started: float) -> str:
        if self.evaluated_count() >= self.budget.candidates:
            return f"budget: {self.budget.candidates} candidates evaluated"
        if self.budget.time_s is not None and time.monotonic() - started >= self.budget.time_s:
            return f"time budget of {self.budget.time_s:.0f} s spent"
        if self.budget.target_speedup is not None and self.best_fitness >= self.budget.target_speedup:
            return f"target speedup {self.budget.target_speedup:g}x reached"
        return self.synthesizer.stop_reason()

    def _submit(self, parent_id: int, memory_op: str, candidates: list[Candidate]) -> _Batch:
        """Start evaluating the candidates (as many at once as the executor can); node ids follow the proposal
        order."""
        ids = list(range(self._next_id, self._next_id + len(candidates)))
        self._next_id += len(candidates)
        for node_id, candidate in zip(ids, candidates):
            self.progress({"kind": "evaluate", "node": node_id, "note": candidate.note})
        runnable = [i for i, c in enumerate(candidates) if not c.error]
        # a costly profile (hardware counters) only for kernels that reach the best so far: the first batch has
        # none, and the final re-timing profiles a best it left unprofiled (api._run)
        harness = replace(self.harness, counters_from=self.best_fitness or math.inf)
        collect = self.executor.submit(
            [candidates[i] for i in runnable], self.problem, self.target.spec.name, harness,
            on_stage=lambda i, stage: self.progress({"kind": "stage", "node": ids[runnable[i]], "stage": stage}))
        return _Batch(parent_id, memory_op, ids, candidates, runnable, collect)

    def _record_batch(self, batch: _Batch) -> None:
        """Wait for a batch's evaluations and record them in their order: node ids, the store and the tree do not
        depend on which evaluation finished first."""
        evaluated = dict(zip(batch.runnable, batch.collect()))
        for i, (node_id, candidate) in enumerate(zip(batch.ids, batch.candidates)):
            evaluation = evaluated.get(i) or Evaluation(ev.SYNTHESIS_ERROR, "synthesis", candidate.error,
                                                        {"response": candidate.trace.get("response", "")})
            self._record(batch.parent_id, batch.memory_op, node_id, candidate, evaluation)

    def _record(self, parent_id: int, memory_op: str, node_id: int, candidate: Candidate,
                evaluation: Evaluation) -> None:
        self.store.add_node(self.session_id, NodeRecord(
            node_id=node_id, parent_id=parent_id, memory_op=memory_op, synthesizer=candidate.synthesizer,
            recipe=candidate.recipe, language=candidate.language, parameters=candidate.parameters,
            source=candidate.source, source_hash=candidate.source_hash, note=candidate.note, evaluation=evaluation,
            trace=candidate.trace))
        self.tree.add(parent_id, candidate, evaluation, memory_op, node_id=node_id)
        self._account(node_id, evaluation)
        self.progress({"kind": "node", "node": node_id, "status": evaluation.status, "fitness": evaluation.fitness,
                       "best": self.best_fitness, "reason": evaluation.reason, "evaluated": self.evaluated_count(),
                       "diagnosis": evaluation.diagnosis.kind if evaluation.diagnosis else "",
                       "untimed": evaluation.untimed, "tokens": _tokens(candidate.trace)})

    def _account(self, node_id: int, evaluation: Evaluation) -> None:
        fitness = evaluation.fitness
        if fitness > self.best_fitness * 1.01:
            self.since_improvement = 0
        else:
            self.since_improvement += 1
        self.best_fitness = max(self.best_fitness, fitness)
        self.tree.backpropagate(node_id, fitness / self.best_fitness if self.best_fitness > 0 else 0.0)

    def _context(self, parent_id: int, memory_op: str, rng: random.Random, room: int) -> Context:
        tree = self.tree
        parent = tree.nodes[parent_id] if parent_id != ROOT else None
        if memory_op == base.INHERIT and parent is not None:
            history = [n.history_item() for n in tree.trajectory(parent_id)]
        elif memory_op == base.SIBLINGS and parent is not None:
            history = [tree.nodes[c].history_item() for c in parent.children] or \
                      [n.history_item() for n in tree.siblings(parent_id)]
        elif memory_op == base.COMBINE and parent is not None:
            history = [n.history_item() for n in tree.trajectory(parent_id)]
            history += [tree.nodes[c].history_item() for c in parent.children]
        else:
            history = [n.history_item() for n in tree.evaluated()] if memory_op == base.RESTART else []
        diagnosis = parent.evaluation.diagnosis if parent is not None and parent.evaluation else None
        language = parent.candidate.language if parent is not None and parent.candidate else self.target.spec.languages[0]
        # the words of a failure (a compile error, a wrong result) pull in the passages that explain it
        failure = f"{parent.evaluation.reason} {evidence_text(parent.evaluation)}" \
            if parent is not None and parent.evaluation else ""
        signals = Signals(target=self.target.spec.name, language=language, family=self.problem.family,
                          dtype=dtype_name(self.problem.dtype),
                          diagnosis=diagnosis.kind if diagnosis else "",
                          query=f"{self.problem.name} {failure[:2000]}")
        best = tree.best()
        return Context(
            problem=self.problem, target=self.target.spec, facts=self.facts, memory_op=memory_op, rng=rng,
            # as wide as the executor evaluates at once, none paid for unused
            n=max(1, min(max(self.budget.batch, self.executor.capacity), room)),
            knowledge=self.docs.retrieve(signals) if self.knowledge else [],
            hints=self.docs.hints(signals) if self.knowledge else {},
            history=history, parent=parent.history_item() if parent is not None else None, diagnosis=diagnosis,
            best=best.history_item() if best is not None else None, recipes=self.recipes, seeds=self.seeds,
            skills=self.skills, contract=self.docs.contract(self.target.spec.name, language), forms=self.forms,
            ops=self.ops,
        )


def _tokens(trace: dict[str, Any]) -> int:
    usage = trace.get("usage") or {}
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
