"""The public entry points: optimize, resume, evaluate, targets, and loading a kernel as a torch op."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from kevolve import arguments
from kevolve.errors import KernelFileError, KevolveError, SearchInterrupted
from kevolve.harness.baselines import check_baselines
from kevolve.harness.capacity import check_fits
from kevolve.harness.evaluation import Evaluation
from kevolve.harness.executor import Executor
from kevolve.harness.executors import make_executor
from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
from kevolve.paths import default_store_path
from kevolve.plugins import get_manager
from kevolve.problems.problem import Problem
from kevolve.problems.rebuild import problem_from_spec
from kevolve.registry import RegisteredTarget
from kevolve.result import OptimizeResult
from kevolve.search.config import SearchConfig
from kevolve.search.loop import Budget, Progress, Search
from kevolve.search.strategy import STRATEGIES
from kevolve.skills import record as record_skill
from kevolve.skills import relevant as relevant_skills
from kevolve.store import NodeRecord, Store
from kevolve.synthesis.base import Candidate

ProblemLike = Any  # a catalog op name, a KernelBench file path, or a Problem


def resolve_problem(op: ProblemLike, dims: dict[str, int] | None = None, dtype: str | None = None,
                    attrs: dict[str, Any] | None = None) -> Problem:
    if isinstance(op, Problem):
        return op
    if isinstance(op, (str, os.PathLike)) and (str(op).endswith(".py") or os.path.sep in str(op)):
        from kevolve.problems.vetting import load_problem_file

        return load_problem_file(Path(op))
    if isinstance(op, str):
        from kevolve.problems.catalog import CatalogProblem

        return CatalogProblem(get_manager().ops.get(op), dims, dtype, attrs)
    raise KevolveError(f"cannot make a problem from {op!r}: give a catalog op name, a KernelBench .py file, or a "
                       "kevolve Problem (e.g. kevolve.problem_from_callable(fn, example_inputs))")


def _open_store(store: str | Path | Store | None, readonly: bool = False) -> Store:
    """The store to use; ``readonly`` for commands that only read it (they need no write access)."""
    if isinstance(store, Store):
        return store
    return Store(store or os.environ.get("KEVOLVE_STORE") or default_store_path(), readonly=readonly)


def _result(store: Store, problem: Problem, target: str, session_id: str, from_store: bool) -> OptimizeResult:
    session = store.session(session_id)
    nodes = store.nodes(session_id)
    searched = [n for n in nodes if n.memory_op != "final"]
    final = next((n for n in reversed(nodes) if n.memory_op == "final"), None)
    best = max((n for n in searched if n.evaluation.fitness > 0), key=lambda n: n.evaluation.fitness, default=None)
    return OptimizeResult(problem=problem, target=target, session=session_id, best=best, nodes=searched,
                          stop_reason=session.stop_reason, from_store=from_store, final=final,
                          elapsed_s=max(0.0, session.updated - session.created))


def _shape_distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    dims_a, dims_b = a.get("dims", {}), b.get("dims", {})
    distance = sum(abs(math.log2(max(dims_a.get(k, 1), 1)) - math.log2(max(dims_b.get(k, 1), 1)))
                   for k in set(dims_a) | set(dims_b))
    return distance + (0 if a.get("dtype") == b.get("dtype") else 4)


def _neighbour_seeds(store: Store, problem: Problem, target: str, toolchain: str) -> list[tuple[str, dict]]:
    """Parameters that won on the nearest solved problems (same op, other shapes or dtypes)."""
    spec = problem.to_spec()
    found = store.neighbours(problem.name, problem.key(), target, toolchain)
    found.sort(key=lambda item: _shape_distance(spec, item[0]))
    seeds, seen = [], set()
    for _, node in found:
        marker = (node.recipe, tuple(sorted(node.parameters.items())))
        if marker not in seen:
            seen.add(marker)
            seeds.append((node.recipe, node.parameters))
    return seeds[:3]


def optimize(op: ProblemLike, target: str = "cpu", budget: int = 30, seed: int = 0,
             store: str | Path | Store | None = None, *, dims: dict[str, int] | None = None,
             dtype: str | torch.dtype | None = None, attrs: dict[str, Any] | None = None,
             time_budget_s: float | None = None, target_speedup: float | None = None, search: str = "mcts",
             synthesizer: str = "template",
             again: bool = False, baselines: Sequence[str] = ("eager",), batch: int = 2, stall: int = 12,
             knowledge: bool = True, skills: bool = True, harness: HarnessConfig | None = None,
             progress: Progress | None = None, executor: str | Executor | None = None) -> OptimizeResult:
    """Search for a fast, correct kernel for ``op`` on ``target``.

    A problem already solved on this target and toolchain returns the stored best at once unless ``again``.
    ``budget`` counts evaluated candidates; the search also stops at ``time_budget_s``, at ``target_speedup``
    over eager, or when it stalls twice. The best kernel is re-timed at the end against ``baselines``
    ("eager", "compile", "max-autotune"). ``synthesizer`` is ``template`` (offline), a provider's
    ``NAME:MODEL[,option=value]`` (e.g. ``anthropic:claude-sonnet-4-5``), or several joined by ``+`` sharing one
    search. ``knowledge=False`` withholds the docs packs' passages and hints; ``skills=False`` withholds what
    earlier sessions learnt: their distilled lessons and the winners on the same op at other shapes (every
    finished session still records its own).

    :param op: what to optimize: a catalog op name (``kevolve ops``), the path of a KernelBench-format file, or a
        :class:`~kevolve.Problem` (e.g. from :func:`kevolve.problem_from_callable`)
    :param target: a target name or alias (``kevolve targets``)
    :param budget: how many candidates to evaluate (duplicates are not evaluated and do not count)
    :param seed: the search's seed: the same seed on the same store proposes the same candidates
    :param store: the store's path, a ``postgresql://`` URL (a store a team shares), a ``Store``, or None for
        ``$KEVOLVE_STORE`` or the default
    :param dims: the problem's sizes by name (``{"rows": 8192}``), over the op's defaults
    :param dtype: the element type (``"bfloat16"`` or a ``torch.dtype``), over the op's default
    :param attrs: the op's attributes (``{"dim": 0}``), over its defaults
    :param time_budget_s: stop after this many seconds of search
    :param target_speedup: stop once the best kernel is this many times faster than eager
    :param search: the tree policy, ``"mcts"`` or ``"evolution"``
    :param synthesizer: who proposes candidates: ``"template"``, ``"NAME:MODEL[,option=value]"``, or several
        joined by ``+``
    :param again: search even where the store already holds a solution
    :param baselines: what the best kernel is re-timed against at the end: ``"eager"``, ``"compile"``,
        ``"max-autotune"``
    :param batch: candidates proposed per expansion of the tree
    :param stall: evaluated candidates without a 1% improvement before the search restarts (a second stall ends
        it)
    :param knowledge: False withholds the docs packs' passages and hints from the synthesizer
    :param skills: False withholds what earlier sessions learnt
    :param harness: how candidates are checked and timed (time limit, memory cap, samples); None for the
        defaults
    :param progress: called with one event dict per step (``kind``: expand, evaluate, stage, node, ...)
    :param executor: where candidates are evaluated: ``"local"`` (default; on a GPU host, builds on the host's
        cores while each GPU times one candidate at a time), ``"local:N"`` (N builds at once), ``"ray"`` or
        ``"ray:ADDRESS"`` (a Ray cluster, ``pip install 'kevolve[ray]'``), or an
        :class:`~kevolve.harness.executor.Executor`
    """
    dtype = arguments.problem_settings(target=target, store=store, dims=dims, dtype=dtype, attrs=attrs,
                                       baselines=baselines)
    arguments.search_settings(budget=budget, seed=seed, time_budget_s=time_budget_s, target_speedup=target_speedup,
                              synthesizer=synthesizer, batch=batch, stall=stall)
    if search not in STRATEGIES:
        raise KevolveError(f"unknown search {search!r}; choose one of {', '.join(STRATEGIES)}")
    check_baselines(baselines)
    registered = get_manager().usable_target(target)
    problem = resolve_problem(op, dims, dtype, attrs)
    check_fits(problem, registered, harness or HarnessConfig())
    st = _open_store(store)
    toolchain = registered.backend.toolchain_version(registered.spec)
    name = registered.spec.name
    if not again:
        hit = st.best_for(problem.key(), name, toolchain)
        if hit is not None:
            return _result(st, problem, name, hit[0].id, from_store=True)
    manager = get_manager()
    manager.synthesizers.create(synthesizer)  # a missing key or plugin fails here, before a session exists
    runs_on = make_executor(executor, registered)  # so does an executor that cannot start
    config = SearchConfig(budget=budget, time_budget_s=time_budget_s, target_speedup=target_speedup, search=search,
                          synthesizer=synthesizer, baselines=tuple(baselines), batch=batch, stall=stall,
                          knowledge=knowledge, skills=skills)
    session_id = st.create_session(problem_key=problem.key(), problem_name=problem.name, family=problem.family,
                                   problem_spec=problem.to_spec(), target=name, toolchain=toolchain, seed=seed,
                                   config=config)
    seeds = _neighbour_seeds(st, problem, name, toolchain) if skills else []
    return _run(st, problem, registered, session_id, seed, config, [], harness or HarnessConfig(), progress, seeds,
                runs_on)


def resume(session_id: str, store: str | Path | Store | None = None, *, budget: int | None = None,
           harness: HarnessConfig | None = None, progress: Progress | None = None,
           executor: str | Executor | None = None) -> OptimizeResult:
    """Continue a session that was interrupted (or extend a finished one with a larger ``budget``).

    :param session_id: the session's id, or a unique prefix of it (``kevolve sessions`` lists them)
    :param store: the store holding it (path, ``postgresql://`` URL or ``Store``); None for ``$KEVOLVE_STORE`` or
        the default
    :param budget: the session's new total of evaluated candidates; None keeps its own
    :param harness: how candidates are checked and timed; None for the defaults
    :param progress: called with one event dict per step, as in :func:`optimize`
    :param executor: where candidates are evaluated, as in :func:`optimize`
    """
    arguments.name("session_id", session_id, "3f2a9c1b7d4e")
    arguments.store_like(store)
    if budget is not None:
        arguments.count("budget", budget, 20)
    st = _open_store(store)
    session = st.session(session_id)
    registered = get_manager().usable_target(session.target)
    toolchain = registered.backend.toolchain_version(registered.spec)
    if toolchain != session.toolchain:
        raise KevolveError(f"session {session.id} was run with toolchain {session.toolchain!r}, this machine has "
                           f"{toolchain!r}; its timings do not carry over. Start a new session instead.")
    problem = problem_from_spec(session.problem_spec, get_manager().ops.get)
    config = session.config if budget is None else replace(session.config, budget=budget)
    records = [n for n in st.nodes(session.id) if n.memory_op != "final"]
    runs_on = make_executor(executor, registered)
    st.claim(session.id)
    return _run(st, problem, registered, session.id, session.seed, config, records, harness or HarnessConfig(),
                progress, [], runs_on)


def session_result(session_id: str, store: str | Path | Store | None = None) -> OptimizeResult:
    """A stored session's result (best kernel, search tree, final timings), as :func:`optimize` returned it.

    :param session_id: the session's id, or a unique prefix of it
    :param store: the store holding it (path, ``postgresql://`` URL or ``Store``); None for ``$KEVOLVE_STORE`` or
        the default; it is opened read-only
    """
    st = _open_store(store, readonly=True)
    session = st.session(session_id)
    return _result(st, problem_from_spec(session.problem_spec, get_manager().ops.get), session.target, session.id,
                   from_store=True)


def _run(st: Store, problem: Problem, registered: RegisteredTarget, session_id: str, seed: int,
         config: SearchConfig, records: list[NodeRecord], harness: HarnessConfig, progress: Progress | None,
         seeds: list[tuple[str, dict]], executor: Executor) -> OptimizeResult:
    manager = get_manager()
    budget = Budget(candidates=config.budget, time_s=config.time_budget_s, target_speedup=config.target_speedup,
                    batch=config.batch, stall=config.stall)
    toolchain = registered.backend.toolchain_version(registered.spec)
    lessons = relevant_skills(st, problem.name, problem.family, registered.spec.name, toolchain) \
        if config.skills else []
    seeds = seeds + [(s.recipe, s.parameters) for s in lessons if s.recipe]
    search = Search(problem=problem, target=registered, synthesizer=manager.synthesizers.create(config.synthesizer),
                    strategy=STRATEGIES[config.search](), budget=budget, harness=harness, store=st,
                    session_id=session_id, seed=seed, docs=manager.knowledge, seeds=seeds, skills=lessons,
                    knowledge=config.knowledge, progress=progress or (lambda event: None), executor=executor,
                    ops=[manager.ops.get(name) for name in manager.ops.names()])
    search.replay(records)
    with st.beating(session_id):  # the store can tell this session runs, not killed
        try:
            reason = search.run()
        except KeyboardInterrupt:
            st.finish_session(session_id, "interrupted", "interrupted; `kevolve optimize --resume "
                                                         f"{session_id}` continues it")
            raise SearchInterrupted(session_id) from None
        except BaseException as exc:
            st.finish_session(session_id, "failed", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            executor.close()
        best = search.tree.best()
        if best is not None:
            (progress or (lambda e: None))({"kind": "final", "node": best.id})
            # the same kernel at the same shape: its profile from the search (on a GPU, 10-17 s a problem of the
            # device held again for an answer the search has), unless the search diagnosed it from the roofline
            # alone (a costly profiler runs only on kernels that beat the best so far, search/loop.py)
            diagnosis = best.evaluation.diagnosis
            profiled = diagnosis is not None and diagnosis.source == registered.backend.profiler(registered.spec).name
            final = evaluate_candidate(best.candidate, problem, registered.spec.name,
                                       replace(harness, baselines=config.baselines,
                                               repeats=harness.repeats * 2, profile=not profiled))
            final.diagnosis = final.diagnosis or diagnosis
            st.add_node(session_id, NodeRecord(
                node_id=st.next_node_id(session_id), parent_id=best.id, memory_op="final",
                synthesizer=best.candidate.synthesizer, recipe=best.candidate.recipe, language=best.candidate.language,
                parameters=best.candidate.parameters, source=best.candidate.source,
                source_hash=best.candidate.source_hash, note="final re-timing against all baselines", evaluation=final))
    st.finish_session(session_id, "done", reason)
    record_skill(st, session_id)
    return _result(st, problem, registered.spec.name, session_id, from_store=False)


# --- user-written kernels ---------------------------------------------------------------------------------

@dataclass
class EvaluateResult:
    """What :func:`evaluate` returns: the kernel file's evaluation by the harness, with what it was judged on.

    :ivar problem: the problem it was checked against
    :ivar target: the target's canonical name
    :ivar language: the language it was built as
    :ivar source: the kernel file's text
    :ivar evaluation: the verdict: status, reason and evidence, timings and speedups, resources, diagnosis
    """

    problem: Problem
    target: str
    language: str
    source: str
    evaluation: Evaluation

    def to_json(self) -> dict[str, Any]:
        """The result as ``kevolve evaluate --json`` prints it (the same keys as an optimize result's)."""
        ev = self.evaluation
        speedup = ev.timings["eager"].median / ev.timings["kernel"].median if ev.correct and ev.timings else 0.0
        return {
            "problem": self.problem.name, "problem_spec": self.problem.to_spec(), "target": self.target,
            "correct": ev.correct, "status": ev.status, "speedup": speedup,
            "speedups": {k: vars(v) for k, v in ev.speedups.items()},
            "baselines": {k: v.median for k, v in ev.timings.items() if k != "kernel"},
            "untimed_baselines": ev.untimed_baselines,
            "kernel_seconds": ev.timings["kernel"].median if "kernel" in ev.timings else None,
            "best": {"language": self.language, "parameters": {}, "source": self.source},
            "diagnosis": ev.diagnosis.to_dict() if ev.diagnosis else None, "session": None,
            "rejected_reason": None if ev.correct else ev.reason, "evidence": ev.evidence,
            "resources": ev.resources,
        }


def guess_language(path: Path, source: str, registered: RegisteredTarget) -> str | None:
    """The language of a kernel file, as the target's toolchains describe their files: the one whose suffixes
    name the file's; for a Python file, the embedded language whose import it has, or the only one there is."""
    forms = registered.language_forms()
    named = [language for language, form in forms.items() if path.suffix in form.suffixes]
    if named:
        return named[0]
    if path.suffix != ".py":
        return None
    embedded = [language for language, form in forms.items() if form.python]
    return next((language for language in embedded if forms[language].imports and forms[language].imports in source),
                embedded[0] if len(embedded) == 1 else None)


def evaluate(kernel_file: str | Path, op: ProblemLike, target: str = "cpu", *, language: str | None = None,
             dims: dict[str, int] | None = None, dtype: str | torch.dtype | None = None,
             attrs: dict[str, Any] | None = None, baselines: Sequence[str] = ("eager",),
             harness: HarnessConfig | None = None) -> EvaluateResult:
    """Verify and time a hand-written kernel with the same harness the search uses.

    :param kernel_file: the kernel file (its contract per language: the docs' "Kernel files" page)
    :param op: the problem it computes, as for :func:`optimize`
    :param target: the target to build and run it on
    :param language: the kernel's language; None tells it from the file (suffix, or the import of a language
        embedded in Python)
    :param dims: the problem's sizes by name, over the op's defaults
    :param dtype: the element type, over the op's default
    :param attrs: the op's attributes, over its defaults
    :param baselines: what it is timed against: ``"eager"``, ``"compile"``, ``"max-autotune"``
    :param harness: how it is checked and timed; None for the defaults
    """
    path = arguments.path("kernel_file", kernel_file)
    dtype = arguments.problem_settings(target=target, store=None, dims=dims, dtype=dtype, attrs=attrs,
                                       baselines=baselines)
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelFileError(f"cannot read kernel file {path}: {exc}") from None
    registered = get_manager().usable_target(target)
    language = language or guess_language(path, source, registered)
    if language not in registered.spec.languages:
        raise KernelFileError(
            f"{path}: cannot tell its language from the suffix {path.suffix!r} or {language!r} is not one "
            f"{registered.spec.name} builds; pass --language one of {', '.join(registered.spec.languages)}")
    check_baselines(baselines)
    problem = resolve_problem(op, dims, dtype, attrs)
    config = replace(harness or HarnessConfig(), baselines=tuple(baselines))
    check_fits(problem, registered, config)
    evaluation = evaluate_candidate(Candidate(source, language, synthesizer="user"), problem, registered.spec.name,
                                    config)
    return EvaluateResult(problem, registered.spec.name, language, source, evaluation)


@dataclass
class TargetStatus:
    """One installed target, as :func:`targets` and ``kevolve targets`` report it.

    :ivar name: its canonical name
    :ivar aliases: other names it answers to
    :ivar description: the hardware in words
    :ivar plugin: the plugin that registers it
    :ivar distribution: the pip distribution that ships the plugin
    :ivar languages: the kernel languages it builds, first the default
    :ivar usable: whether it can build and run kernels on this machine
    :ivar reason: why not, with what to do (empty when usable)
    """

    name: str
    aliases: tuple[str, ...]
    description: str
    plugin: str
    distribution: str
    languages: tuple[str, ...]
    usable: bool
    reason: str


def targets() -> list[TargetStatus]:
    """Installed targets and whether each is usable here (and if not, why). It takes no parameters."""
    statuses = []
    for registered in get_manager().targets.all():
        try:
            ok, why = registered.backend.usable(registered.spec)
        except Exception as exc:  # a backend's probe failing is itself the answer
            ok, why = False, f"usability check failed: {type(exc).__name__}: {exc}"
        spec = registered.spec
        statuses.append(TargetStatus(spec.name, spec.aliases, spec.description, registered.plugin,
                                     registered.backend.distribution, spec.languages, ok, why))
    return statuses
