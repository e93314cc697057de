"""``kevolve conformance``: for each operator, draw its OpInfo samples, ask the target's recipes for kernels,
build them, run every sample in an isolated worker, and judge.

Per operator: one kernel per distinct set of (dtypes, attributes), written by the first of the target's recipes
that supports the ``aten_pointwise`` family with its default schedule, scanned and compiled like any candidate
(a kernel that calls PyTorch or a foreign library is rejected), then all samples run in one isolated worker
(timeout, memory cap). An operator passes only if every sample passes; declined samples count against it.

Results are cached per (op, target, toolchain, hash of the kernel sources and the samples drawn) in a SQLite
file next to the store, so a re-run only rebuilds and re-checks what changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kevolve.conformance import samples as sm
from kevolve.conformance.kernel import FAMILY, ConformanceProblem, KernelSpec, kernel_spec
from kevolve.conformance.spec import OpSpec
from kevolve.conformance.table import OPS, SUITE
from kevolve.conformance.worker import DECLINED, FAILED, PASSED
from kevolve.errors import CompileError, KevolveError

#: bump when the judging changes, so cached results are not reused across it
CHECK_VERSION = 6


@dataclass
class SampleResult:
    label: str
    status: str
    reason: str = ""
    worst: float = 0.0


@dataclass
class OpResult:
    op: str
    dtype: str
    entries: list[str]
    skipped_entries: list[str]
    samples: list[SampleResult]
    kernels: dict[str, str] = field(default_factory=dict)  # kernel key -> source
    language: str = ""
    cached: bool = False
    seconds: float = 0.0
    error: str = ""

    @property
    def total(self) -> int:
        return len(self.samples)

    @property
    def passed(self) -> int:
        return sum(s.status == PASSED for s in self.samples)

    @property
    def declined(self) -> list[SampleResult]:
        return [s for s in self.samples if s.status == DECLINED]

    @property
    def failed(self) -> list[SampleResult]:
        return [s for s in self.samples if s.status == FAILED]

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total and not self.error

    @property
    def worst(self) -> float:
        """Worst error relative to tolerance over the samples that ran (passed or failed); <= 1 passes."""
        ran = [s.worst for s in self.samples if s.status in (PASSED, FAILED)]
        return max(ran) if ran else math.nan

    def reasons(self, status: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.samples:
            if s.status == status:
                counts[s.reason] = counts.get(s.reason, 0) + 1
        return counts

    def to_json(self, verbose: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "op": self.op, "passed": self.ok, "dtype": self.dtype, "samples_passed": self.passed,
            "samples_total": self.total, "samples_declined": len(self.declined), "samples_failed": len(self.failed),
            "declined": [{"sample": s.label, "reason": s.reason} for s in self.declined],
            "failed": [{"sample": s.label, "reason": s.reason, "worst_error_over_tolerance": _num(s.worst)}
                       for s in self.failed],
            # passed by matching PyTorch's other answer for the same values (samples.Case.alternatives)
            "matched_otherwise": [{"sample": s.label, "reason": s.reason} for s in self.samples
                                  if s.status == PASSED and s.reason],
            "worst_error_over_tolerance": _num(self.worst), "entries": self.entries,
            "skipped_entries": self.skipped_entries, "kernels": len(self.kernels), "language": self.language,
            "cached": self.cached, "seconds": round(self.seconds, 3),
        }
        if self.error:
            data["error"] = self.error
        if verbose:
            data["samples"] = [{"sample": s.label, "status": s.status, "reason": s.reason,
                                "worst_error_over_tolerance": _num(s.worst)} for s in self.samples]
            data["sources"] = self.kernels
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpResult:
        return cls(data["op"], data["dtype"], data["entries"], data["skipped_entries"],
                   [SampleResult(s["sample"], s["status"], s["reason"], _float(s["worst_error_over_tolerance"]))
                    for s in data["samples"]], data["sources"], data.get("language", ""), error=data.get("error", ""))


def _num(value: float) -> float | str | None:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


def _float(value: Any) -> float:
    if value is None:
        return math.nan
    return math.inf if value == "inf" else float(value)


@dataclass
class Report:
    target: str
    toolchain: str
    torch_version: str
    results: list[OpResult]

    @property
    def passed_ops(self) -> int:
        return sum(r.ok for r in self.results)

    @property
    def total_ops(self) -> int:
        return len(self.results)

    def to_json(self, verbose: bool = False) -> dict[str, Any]:
        return {"target": self.target, "toolchain": self.toolchain, "torch": self.torch_version,
                "passed_ops": self.passed_ops, "total_ops": self.total_ops,
                "samples_passed": sum(r.passed for r in self.results),
                "samples_total": sum(r.total for r in self.results),
                "samples_declined": sum(len(r.declined) for r in self.results),
                "ops": [r.to_json(verbose) for r in self.results]}


class ResultCache:
    """(op, target, toolchain, key) -> an operator's result, in its own SQLite file."""

    SCHEMA = """CREATE TABLE IF NOT EXISTS conformance (
        op TEXT NOT NULL, target TEXT NOT NULL, toolchain TEXT NOT NULL, key TEXT NOT NULL,
        result TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (op, target, toolchain, key))"""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30)
        self.db.execute(self.SCHEMA)
        self.db.commit()

    @classmethod
    def beside(cls, store: str | Path | None) -> ResultCache:
        """Beside the store file; beside the default store's place when the store is on a server (a cache of
        this machine's results, not the team's)."""
        from kevolve.paths import default_store_path
        from kevolve.store.dialect import is_server

        location = store or os.environ.get("KEVOLVE_STORE") or default_store_path()
        store_path = default_store_path() if is_server(str(location)) else Path(location)
        return cls(store_path.with_name(store_path.stem + ".conformance.sqlite"))

    def get(self, op: str, target: str, toolchain: str, key: str) -> OpResult | None:
        row = self.db.execute("SELECT result FROM conformance WHERE op=? AND target=? AND toolchain=? AND key=?",
                              (op, target, toolchain, key)).fetchone()
        return OpResult.from_json(json.loads(row[0])) if row else None

    def put(self, op: str, target: str, toolchain: str, key: str, result: OpResult) -> None:
        self.db.execute("INSERT OR REPLACE INTO conformance VALUES (?, ?, ?, ?, ?, ?)",
                        (op, target, toolchain, key, json.dumps(result.to_json(verbose=True)), time.time()))
        self.db.commit()

    def latest(self, target: str) -> dict[str, OpResult]:
        """The most recent result per operator on ``target`` (any toolchain), for export."""
        rows = self.db.execute("SELECT op, result FROM conformance WHERE target=? ORDER BY created", (target,))
        return {op: OpResult.from_json(json.loads(text)) for op, text in rows}


def synthesize(registered: Any, kernel: KernelSpec) -> tuple[str, str, str]:
    """(source, language, "") from the target's first recipe for the ``aten_pointwise`` family, or
    ("", "", why not)."""
    problem = ConformanceProblem(kernel)
    recipes = [r for r in registered.backend.recipes(registered.spec) if FAMILY in r.families]
    if not recipes:
        return "", "", f"target {registered.spec.name} has no {FAMILY} recipe"
    for recipe in recipes:
        if recipe.supports(problem):
            try:
                params = recipe.space(problem, registered.spec.facts).default()
                return recipe.render(problem, params), recipe.language, ""
            except (ValueError, KeyError) as exc:
                return "", "", f"{recipe.name} cannot write it: {exc}"
    return "", "", f"no {registered.spec.name} recipe supports {kernel.describe()}"


#: dtypes whose samples are drawn besides each operator's own (float32): on the targets that compute them
EXTRA_DTYPES = ("bfloat16",)


def _empty(case: sm.Case) -> bool:
    return any(t.numel() == 0 for t in (*case.inputs, *case.expected))


def extra_dtypes(spec: Any, wanted: tuple[str, ...] | None = None) -> tuple[Any, ...]:
    """The extra dtypes to draw on a target: those its facts list a peak for (it computes them), limited to
    ``wanted`` when given (``--dtypes``)."""
    import torch

    names = [d for d in EXTRA_DTYPES if d in spec.facts.peak_flops and (wanted is None or d in wanted)]
    return tuple(getattr(torch, d) for d in names)


def check_op(name: str, registered: Any, cache: ResultCache | None, db: list[Any], *, timeout_s: float = 600.0,
             refresh: bool = False, spec_override: OpSpec | None = None,
             dtypes: tuple[str, ...] | None = None) -> OpResult:
    from kevolve.harness.isolation import run_isolated
    from kevolve.harness.pipeline import HarnessConfig
    from kevolve.harness.scan import forbidden_uses
    from kevolve.plugins import worker_bootstrap
    from kevolve.synthesis.base import Candidate

    started = time.perf_counter()
    import torch

    spec = spec_override or OPS.get(name)
    drawn = sm.draw(spec, name, db, also=extra_dtypes(registered.spec, dtypes))
    result = OpResult(name, drawn.dtype, drawn.entries, drawn.skipped, [])
    # kernels: one per distinct (dtypes, attributes)
    sources: dict[str, str] = {}
    languages: dict[str, str] = {}
    unwritable: dict[str, str] = {}
    # the call a toolchain compiling ahead of time captures launches on: one with data (an empty sample may
    # launch nothing)
    example: dict[str, sm.Case] = {}
    for case in drawn.cases:
        if case.declined:
            continue
        key = case.kernel_key()
        if key in example and _empty(example[key]) and not _empty(case):
            example[key] = case
        if key in sources or key in unwritable:
            continue
        try:
            source, language, why = synthesize(registered, kernel_spec(case))
        except Exception as exc:  # noqa: BLE001 - an expression the table cannot build for these attributes
            source, language, why = "", "", f"cannot build the expression: {type(exc).__name__}: {exc}"
        if why:
            unwritable[key] = why
        else:
            sources[key], languages[key], example[key] = source, language, case
    toolchains = {lang: registered.backend.toolchain(registered.spec, lang) for lang in set(languages.values())}
    toolchain_version = "; ".join(f"{lang}: {tc.version()}" for lang, tc in sorted(toolchains.items())) or "none"

    cache_key = hashlib.sha256(json.dumps([CHECK_VERSION, torch.__version__, drawn.fingerprint(), sorted(sources.items()),
                                           sorted(unwritable.items())]).encode()).hexdigest()[:24]
    if cache is not None and not refresh:
        hit = cache.get(name, registered.spec.name, toolchain_version, cache_key)
        if hit is not None:
            hit.cached, hit.seconds = True, time.perf_counter() - started
            return hit
    result.kernels = sources
    result.language = ", ".join(sorted(set(languages.values())))
    # scan and build every kernel like any candidate
    config = HarnessConfig()
    builds: dict[str, dict] = {}
    broken: dict[str, str] = {}
    for key, source in sources.items():
        toolchain = toolchains[languages[key]]
        findings = forbidden_uses(source, toolchain.forbidden_patterns, python=toolchain.form.python)
        if findings:
            broken[key] = "rejected: not a kernel: " + "; ".join(findings)
            continue
        workdir = Path(config.workdir) / registered.spec.name / Candidate(source, languages[key]).source_hash
        workdir.mkdir(parents=True, exist_ok=True)
        case = example[key]
        problem = ConformanceProblem.save_example(kernel_spec(case), case.inputs, case.expected,
                                                  workdir / "example.pt")
        try:
            build = toolchain.build(source, workdir, problem)
        except CompileError as exc:
            log = (exc.log or "").strip().splitlines()
            broken[key] = f"compile error: {exc.args[0]}" + (f": {log[0]}" if log else "")
            continue
        if build.foreign_calls:
            broken[key] = "rejected: outside its language's contract: " + "; ".join(build.foreign_calls[:8])
            continue
        builds[key] = asdict(build)
    # run the runnable cases in one isolated worker
    runnable = [(i, c) for i, c in enumerate(drawn.cases) if not c.declined and c.kernel_key() in builds]
    outcomes: dict[int, dict] = {}
    if runnable:
        task = {"entry": "kevolve.conformance.worker:run", "target": registered.spec.name,
                "bootstrap": worker_bootstrap(), "builds": builds,
                "cases": [{"kernel": c.kernel_key(), "inputs": c.inputs, "expected": c.expected,
                           "alternatives": c.alternatives} for _, c in runnable]}
        raw = run_isolated(task, timeout_s=timeout_s, memory_limit_bytes=config.memory_limit_bytes,
                           env=registered.backend.worker_env(registered.spec))
        if "outcomes" in raw:
            outcomes = {i: o for (i, _), o in zip(runnable, raw["outcomes"])}
        else:
            reason = f"worker {raw.get('status')}: {raw.get('reason', '')}"
            outcomes = {i: {"status": FAILED, "reason": reason, "worst": math.inf} for i, _ in runnable}
            result.error = reason
    for i, case in enumerate(drawn.cases):
        if case.declined:
            result.samples.append(SampleResult(case.label, DECLINED, case.declined))
            continue
        key = case.kernel_key()
        if key in unwritable:
            result.samples.append(SampleResult(case.label, DECLINED, unwritable[key]))
        elif key in broken:
            result.samples.append(SampleResult(case.label, FAILED, broken[key], math.inf))
        else:
            o = outcomes[i]
            result.samples.append(SampleResult(case.label, o["status"], o.get("reason", ""), _float(o.get("worst"))))
    result.seconds = time.perf_counter() - started
    if cache is not None and not result.error:
        cache.put(name, registered.spec.name, toolchain_version, cache_key, result)
    return result


def run_conformance(target: str = "cpu", ops: list[str] | None = None, *, store: str | Path | None = None,
                    refresh: bool = False, use_cache: bool = True, dtypes: tuple[str, ...] | None = None,
                    timeout_s: float = 600.0, on_op: Callable[[OpResult], None] = lambda r: None) -> Report:
    """Check ``ops`` (default: the whole suite of :data:`kevolve.conformance.table.SUITE`) on ``target``;
    ``dtypes`` limits the extra dtypes drawn (default: every one the target computes, see :func:`extra_dtypes`);
    ``timeout_s``: the time limit of the isolated worker that judges an op's samples."""
    import torch

    from kevolve.plugins import get_manager

    registered = get_manager().usable_target(target)
    names = list(ops) if ops else list(SUITE)
    unknown = [n for n in names if n not in SUITE and n not in OPS]
    db = sm.op_db()
    known = {e.name for e in db}
    missing = [n for n in unknown if n not in known]
    if missing:
        raise KevolveError(f"not OpInfo names: {', '.join(missing)} (e.g. nn.functional.relu, not relu)")
    cache = ResultCache.beside(store) if use_cache else None
    results = []
    for name in names:
        result = check_op(name, registered, cache, db, refresh=refresh, dtypes=dtypes, timeout_s=timeout_s)
        on_op(result)
        results.append(result)
    languages = sorted({lang.strip() for r in results for lang in r.language.split(",") if lang.strip()})
    toolchain = "; ".join(f"{lang}: {registered.backend.toolchain(registered.spec, lang).version()}"
                          for lang in languages) or "none"
    return Report(registered.spec.name, toolchain, torch.__version__, results)
