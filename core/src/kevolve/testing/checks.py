"""The backend contract, one check per promise a backend makes to core, each runnable on its own.

A check takes a :class:`~kevolve.testing.subject.Subject` and a target name, returns nothing when the target
keeps the promise, raises :class:`ContractFailure` with the evidence when it does not, and raises
:class:`NotApplicable` with the reason when the promise cannot be checked here (a toolchain that is not
installed on this machine). The checks call the backend's pieces directly, in this process, except the runner,
which runs in the harness's isolated worker as every kernel does.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from kevolve import diagnosis as d
from kevolve.backend import Backend, BuildResult, Classifier, Runner, Toolchain
from kevolve.errors import CompileError
from kevolve.registry import RegisteredTarget
from kevolve.target import MachineFacts
from kevolve.testing.subject import BROKEN_SOURCE, Subject


class ContractFailure(AssertionError):
    """A target broke a promise of the backend contract; the message names the target, the promise and the
    evidence."""


class NotApplicable(Exception):
    """A check that cannot run on this machine (its toolchain or device is missing); the message says why."""


def _fail(registered: RegisteredTarget, what: str) -> ContractFailure:
    return ContractFailure(f"target {registered.spec.name} ({type(registered.backend).__name__}): {what}")


def _answer(registered: RegisteredTarget, who: str, answer: object) -> tuple[bool, str]:
    """A ``(bool, str)`` answer whose reason is given when it says no."""
    if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool)
            and isinstance(answer[1], str)):
        raise _fail(registered, f"{who} must return (bool, str), returned {answer!r}")
    if not answer[0] and not answer[1].strip():
        raise _fail(registered, f"{who} says no without a reason: say why, and what to install")
    return answer


def _usable_here(registered: RegisteredTarget) -> None:
    ok, why = _answer(registered, "Backend.usable()", registered.backend.usable(registered.spec))
    if not ok:
        raise NotApplicable(f"target {registered.spec.name} is not usable here: {why}")


def _toolchain(registered: RegisteredTarget, language: str) -> tuple[Toolchain, str]:
    """The language's toolchain, checked to be one and to answer ``available()``; with why it is not here ('' when
    it is)."""
    toolchain = registered.backend.toolchain(registered.spec, language)
    if not isinstance(toolchain, Toolchain) or toolchain.language != language:
        raise _fail(registered, f"toolchain(target, {language!r}) returned {toolchain!r}, not a "
                    f"kevolve.backend.Toolchain whose language is {language!r}")
    ok, why = _answer(registered, f"the {language} toolchain's available()", toolchain.available())
    return toolchain, "" if ok else f"the {language} toolchain of {registered.spec.name} is not here: {why}"


def _toolchain_here(registered: RegisteredTarget, language: str) -> Toolchain:
    """The language's toolchain, or :class:`NotApplicable` when it is not on this machine."""
    toolchain, missing = _toolchain(registered, language)
    if missing:
        raise NotApplicable(missing)
    return toolchain


def _workdir(subject: Subject, registered: RegisteredTarget, what: str) -> Path:
    """A new folder for one build of one check."""
    path = subject.workdir / registered.spec.name / what
    path.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=path))


def good_kernel(subject: Subject, registered: RegisteredTarget, language: str) -> str:
    """A correct kernel for the subject's op in ``language``: the author's, or the default point of the first of
    the target's recipes that supports the op."""
    if language in subject.kernels:
        return subject.kernels[language]
    problem = subject.problem()
    backend, spec = registered.backend, registered.spec
    for recipe in backend.recipes(spec):
        if recipe.language == language and recipe.supports(problem):
            return recipe.render(problem, recipe.space(problem, backend.facts(spec)).default())
    raise _fail(registered, f"no known-good {subject.op} kernel in {language}: none of its recipes supports "
                f"{problem.describe()}; give one (`kernels = {{{language!r}: SOURCE}}`) or choose another `op`")


# --- the checks ----------------------------------------------------------------------------------------------

def check_usable(subject: Subject, target: str) -> None:
    """``Backend.usable()`` answers ``(bool, str)``, with the reason and the next step when it says no, and
    names its distribution for error messages."""
    registered = subject.target(target)
    if not isinstance(registered.backend, Backend):
        raise _fail(registered, f"the backend {registered.backend!r} is not a kevolve.backend.Backend")
    _answer(registered, "Backend.usable()", registered.backend.usable(registered.spec))
    if not registered.backend.distribution:
        raise _fail(registered, "Backend.distribution is empty: name the pip distribution that ships it")


def check_facts(subject: Subject, target: str) -> None:
    """The machine facts load and can give a roofline floor: a positive peak for some dtype, memory levels with
    positive bandwidth and capacity, at least one parallel unit."""
    registered = subject.target(target)
    facts = registered.backend.facts(registered.spec)
    if not isinstance(facts, MachineFacts):
        raise _fail(registered, f"Backend.facts() returned {facts!r}, not kevolve.target.MachineFacts")
    problems = []
    if not any(v > 0 for v in facts.peak_flops.values()):
        problems.append(f"no positive peak FLOP/s ({facts.peak_flops})")
    if not facts.memory:
        problems.append("no memory level")
    problems += [f"memory level {m.name}: bandwidth {m.bandwidth_bytes_per_s} B/s, capacity {m.capacity_bytes} B"
                 for m in facts.memory if not (m.bandwidth_bytes_per_s > 0 and m.capacity_bytes > 0)]
    if facts.parallel_units < 1:
        problems.append(f"parallel_units = {facts.parallel_units}")
    if problems:
        raise _fail(registered, "machine facts cannot give a roofline floor: " + "; ".join(problems))


def check_toolchains(subject: Subject, target: str) -> None:
    """Every language the target lists has a toolchain that names its version (part of every store key) and
    says whether it is here, with the reason when not."""
    registered = subject.target(target)
    if not registered.spec.languages:
        raise _fail(registered, "its spec lists no language")
    for language in registered.spec.languages:
        toolchain, missing = _toolchain(registered, language)
        if missing:
            continue  # a compiler that is not here may not be able to say its version
        version = toolchain.version()
        if not (isinstance(version, str) and version.strip()):
            raise _fail(registered, f"the {language} toolchain's version() returned {version!r}")


def check_builds(subject: Subject, target: str) -> None:
    """Each toolchain builds a known-good kernel of a simple catalog op into a ``BuildResult`` with an artifact,
    and the kernel matches the language's form (the entry point ``kevolve evaluate`` and LLM answers are
    checked for)."""
    registered = subject.target(target)
    _usable_here(registered)
    for language in registered.spec.languages:
        toolchain = _toolchain_here(registered, language)
        source = good_kernel(subject, registered, language)
        if toolchain.form.entry and not re.search(toolchain.form.entry, source):
            raise _fail(registered, f"the known-good {language} kernel lacks the entry point its form names "
                        f"({toolchain.form.entry_words}: /{toolchain.form.entry}/)")
        try:
            build = toolchain.build(source, _workdir(subject, registered, "good"), subject.problem())
        except CompileError as exc:
            raise _fail(registered, f"the known-good {language} kernel failed to build: {exc}") from exc
        if not (isinstance(build, BuildResult) and build.language == language and build.artifact):
            raise _fail(registered, f"build() returned {build!r}, not a BuildResult of {language} with an artifact")


def check_broken_source(subject: Subject, target: str) -> None:
    """A source that cannot build raises ``CompileError`` carrying a command that reproduces the failure (the
    user sees it as ``repro:``)."""
    registered = subject.target(target)
    _usable_here(registered)
    for language in registered.spec.languages:
        toolchain = _toolchain_here(registered, language)
        source = subject.broken_sources.get(language, BROKEN_SOURCE)
        try:
            toolchain.build(source, _workdir(subject, registered, "broken"), subject.problem())
        except CompileError as exc:
            if not exc.repro.strip() or exc.repro not in str(exc):
                raise _fail(registered, f"the {language} toolchain's CompileError carries no repro command: "
                            f"raise CompileError(message, log=..., repro=COMMAND); got {str(exc)!r}") from exc
            continue
        except Exception as exc:
            raise _fail(registered, f"a broken {language} source raised {type(exc).__name__}: {exc}; raise "
                        "kevolve.errors.CompileError with the compiler's output and a repro command") from exc
        raise _fail(registered, f"a broken {language} source built without error: {source!r}")


def check_runner(subject: Subject, target: str) -> None:
    """The runner loads a build of the known-good kernel in the harness's isolated worker and computes the op's
    reference answer at every correctness shape (the harness's own correctness checks, without timing)."""
    from kevolve.harness.pipeline import HarnessConfig, evaluate_candidate
    from kevolve.synthesis.base import Candidate

    registered = subject.target(target)
    _usable_here(registered)
    runner = registered.backend.runner(registered.spec)
    if not isinstance(runner, Runner):
        raise _fail(registered, f"runner() returned {runner!r}, not a kevolve.backend.Runner")
    config = HarnessConfig(timeout_s=120, calls_per_shape=1, time=False,
                           workdir=str(_workdir(subject, registered, "runner")))
    for language in registered.spec.languages:
        _toolchain_here(registered, language)
        source = good_kernel(subject, registered, language)
        evaluation = evaluate_candidate(Candidate(source, language), subject.problem(), registered.spec.name, config)
        if evaluation.status != "ok":
            evidence = {k: v for k, v in evaluation.evidence.items() if k != "traceback"}
            raise _fail(registered, f"the known-good {language} kernel of {subject.op}: {evaluation.status} at "
                        f"{evaluation.stage}: {evaluation.reason} {evidence or ''}\n"
                        f"{evaluation.evidence.get('traceback', '')}".rstrip())


def sample_metrics(facts: MachineFacts) -> dict[str, d.Metrics]:
    """Metrics of the vendor-neutral schema, as a profiler would report them on a machine with these facts, for
    five kinds of kernel (memory-bound, compute-bound, short, spilling, leaving units idle)."""

    def metrics(bw: float, fl: float, time_s: float, **more: float) -> d.Metrics:
        level = facts.memory[0] if facts.memory else None
        return {d.TIME_S: time_s, d.BANDWIDTH_FRACTION: bw, d.FLOPS_FRACTION: fl,
                d.ACHIEVED_BANDWIDTH: bw * (level.bandwidth_bytes_per_s if level else 1e9),
                d.ACHIEVED_FLOPS: fl * max(facts.peak_flops.values(), default=1e12),
                d.MEMORY_LEVEL: level.name if level else "memory", d.PARALLEL_UNITS: facts.parallel_units,
                d.PARALLEL_UNITS_USED: facts.parallel_units, d.OCCUPANCY: 1.0, **more}

    return {"memory-bound": metrics(0.9, 0.05, 1e-3), "compute-bound": metrics(0.05, 0.9, 1e-3),
            "short": metrics(0.01, 0.01, 2e-6), "spilling": metrics(0.3, 0.1, 1e-3, **{d.SPILL_BYTES: 4096.0}),
            "idle units": metrics(0.2, 0.1, 1e-3, **{d.PARALLEL_UNITS_USED: 1.0, d.OCCUPANCY: 0.1})}


def check_classifier(subject: Subject, target: str) -> None:
    """The classifier names one of :data:`kevolve.diagnosis.KINDS` (or ``unknown``), with a summary, for sample
    metrics of the vendor-neutral schema (a backend's own counters may be missing from them)."""
    registered = subject.target(target)
    classifier = registered.backend.classifier(registered.spec)
    if not isinstance(classifier, Classifier):
        raise _fail(registered, f"classifier() returned {classifier!r}, not a kevolve.backend.Classifier")
    facts = registered.backend.facts(registered.spec)
    known = (*d.KINDS, d.UNKNOWN)
    for name, metrics in sample_metrics(facts).items():
        try:
            diagnosis = classifier.classify(dict(metrics), facts, "contract")
        except Exception as exc:
            raise _fail(registered, f"the classifier raised {type(exc).__name__} on {name} metrics {metrics}: "
                        f"{exc}") from exc
        if not isinstance(diagnosis, d.Diagnosis) or diagnosis.kind not in known or not diagnosis.summary:
            raise _fail(registered, f"on {name} metrics the classifier returned {diagnosis!r}: a kevolve.diagnosis."
                        f"Diagnosis with a summary and a kind among {', '.join(known)} was expected")


def check_docs_pack(subject: Subject, target: str) -> None:
    """The docs packs load (every file has valid TOML front matter) and every language the target builds has
    a kernel file contract passage (``contract = true``), which every LLM prompt for it carries."""
    registered = subject.target(target)
    docs = subject.manager.docs
    if docs.errors:
        raise _fail(registered, "docs pack files that do not load: " + "; ".join(docs.errors))
    missing = [lang for lang in registered.spec.languages if not subject.manager.knowledge.contract(target, lang)]
    if missing:
        raise _fail(registered, f"no kernel file contract for {', '.join(missing)}: give its docs pack a passage "
                    f"with `contract = true` whose targets and languages include {target} and the language "
                    "(docs/plugins/docs-packs.md)")


def check_recipes(subject: Subject, target: str) -> None:
    """The recipes (a target may have none) build in the target's languages, at least one supports a catalog
    op at its default dims and dtype, and each renders its default point of the schedule space for every catalog
    op it supports. (Recipes for the conformance suite's ATen kernels support no catalog op; that is fine.)"""
    from kevolve.problems.catalog import CatalogProblem
    from kevolve.synthesis.recipe import Recipe

    registered = subject.target(target)
    backend, spec = registered.backend, registered.spec
    recipes = backend.recipes(spec)
    if not recipes:
        return
    problems = [CatalogProblem(subject.manager.ops.get(name)) for name in subject.manager.ops.names()]
    facts = backend.facts(spec)
    rendered = 0
    for recipe in recipes:
        if not isinstance(recipe, Recipe) or recipe.language not in spec.languages:
            raise _fail(registered, f"recipe {recipe!r} is not a kevolve Recipe in one of {spec.languages}")
        for problem in filter(recipe.supports, problems):
            source = recipe.render(problem, recipe.space(problem, facts).default())
            if not (isinstance(source, str) and source.strip()):
                raise _fail(registered, f"recipe {recipe.name} rendered {source!r} for {problem.describe()}")
            rendered += 1
    if not rendered:
        raise _fail(registered, f"none of its {len(recipes)} recipes supports a catalog op at its default dims and "
                    f"dtype (`kevolve ops` lists them): the template synthesizer has nothing to start from")


#: the contract, by name, in the order the suite runs it
CHECKS: dict[str, Callable[[Subject, str], None]] = {
    "usable": check_usable, "facts": check_facts, "toolchains": check_toolchains, "builds": check_builds,
    "broken_source": check_broken_source, "runner": check_runner, "classifier": check_classifier,
    "docs_pack": check_docs_pack, "recipes": check_recipes,
}
