"""The search loop: select -> propose -> evaluate -> record -> backpropagate, until a stop condition."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kevolve.harness import evaluation as ev
from kevolve.harness.evaluation import Evaluation, evidence_text
from kevolve.harness.executor import Executor, LocalExecutor
from kevolve.harness.pipeline import HarnessConfig
from kevolve.knowledge import KnowledgeBase, Signals
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
                 executor: Executor | None = None) -> None:
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
        started = time.monotonic()
        empty_rounds = 0
        while True:
            reason = self._should_stop(started)
            if reason:
                return reason
            step = len(self.tree.nodes) + empty_rounds * 7919
            stalled = self.since_improvement >= self.budget.stall
            if stalled:
                self.stalls += 1
                self.since_improvement = 0
                if self.stalls >= 2:
                    return f"stalled: no 1% improvement in {self.budget.stall} candidates, twice"
            parent_id, memory_op = self.strategy.select(self.tree, random.Random(self.seed * 1_000_003 + 2 * step),
                                                        stalled)
            context = self._context(parent_id, memory_op, random.Random(self.seed * 1_000_003 + 2 * step + 1))
            self.progress({"kind": "expand", "parent": parent_id, "memory_op": memory_op})
            # a failed synthesis is recorded every time (its reason feeds the next prompt); code is evaluated once
            fresh = [c for c in self.synthesizer.propose(context) if c.error or c.source_hash not in self.tree.by_hash]
            self.duplicates += context.n - len(fresh)
            if not fresh:
                empty_rounds += 1
                if empty_rounds >= self.synthesizer.patience:
                    return (f"exhausted: the synthesizer proposed nothing new in {empty_rounds} expansions in a row")
                self.since_improvement += 1
                continue
            empty_rounds = 0
            width = self.executor.capacity
            for start in range(0, len(fresh), width):
                if self._should_stop(started):
                    break
                group: list[Candidate] = []
                for candidate in fresh[start:start + width]:
                    if candidate.error or (candidate.source_hash not in self.tree.by_hash
                                           and all(c.error or c.source_hash != candidate.source_hash for c in group)):
                        group.append(candidate)
                room = self.budget.candidates - self.evaluated_count()
                if group:
                    self._evaluate(parent_id, memory_op, group[:room])

    def _should_stop(self, started: float) -> str:
        if self.evaluated_count() >= self.budget.candidates:
            return f"budget: {self.budget.candidates} candidates evaluated"
        if self.budget.time_s is not None and time.monotonic() - started >= self.budget.time_s:
            return f"time budget of {self.budget.time_s:.0f} s spent"
        if self.budget.target_speedup is not None and self.best_fitness >= self.budget.target_speedup:
            return f"target speedup {self.budget.target_speedup:g}x reached"
        return self.synthesizer.stop_reason()

    def _evaluate(self, parent_id: int, memory_op: str, candidates: list[Candidate]) -> None:
        """Evaluate the candidates together (as many at once as the executor can) and record them in their
        order: node ids, the store and the tree do not depend on which evaluation finished first."""
        first = self.store.next_node_id(self.session_id)  # past a resumed session's final re-timings too
        ids = [first + i for i in range(len(candidates))]
        for node_id, candidate in zip(ids, candidates):
            self.progress({"kind": "evaluate", "node": node_id, "note": candidate.note})
        runnable = [i for i, c in enumerate(candidates) if not c.error]
        evaluated = dict(zip(runnable, self.executor.evaluate(
            [candidates[i] for i in runnable], self.problem, self.target.spec.name, self.harness,
            on_stage=lambda i, stage: self.progress({"kind": "stage", "node": ids[runnable[i]], "stage": stage}))))
        for i, (node_id, candidate) in enumerate(zip(ids, candidates)):
            evaluation = evaluated.get(i) or Evaluation(ev.SYNTHESIS_ERROR, "synthesis", candidate.error,
                                                        {"response": candidate.trace.get("response", "")})
            self._record(parent_id, memory_op, node_id, candidate, evaluation)

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

    def _context(self, parent_id: int, memory_op: str, rng: random.Random) -> Context:
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
            n=max(1, min(max(self.budget.batch, self.executor.capacity), self.budget.candidates - self.evaluated_count())),
            knowledge=self.docs.retrieve(signals) if self.knowledge else [],
            hints=self.docs.hints(signals) if self.knowledge else {},
            history=history, parent=parent.history_item() if parent is not None else None, diagnosis=diagnosis,
            best=best.history_item() if best is not None else None, recipes=self.recipes, seeds=self.seeds,
            skills=self.skills, contract=self.docs.contract(self.target.spec.name, language), forms=self.forms,
        )


def _tokens(trace: dict[str, Any]) -> int:
    usage = trace.get("usage") or {}
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
