"""The synthesis interface shared by the template synthesizer and LLM synthesizers: propose(context)."""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kevolve.backend.toolchain import LanguageForm
from kevolve.diagnosis import Diagnosis
from kevolve.knowledge import Passage
from kevolve.problems.problem import Problem
from kevolve.target import MachineFacts, TargetSpec

if TYPE_CHECKING:
    from kevolve.problems.catalog import OpDef
    from kevolve.skills import Skill
    from kevolve.synthesis.recipe import Recipe

INHERIT, SIBLINGS, COMBINE, RESTART, SEED = "inherit", "siblings", "combine", "restart", "seed"
MEMORY_OPERATORS = (INHERIT, SIBLINGS, COMBINE, RESTART)


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:20]


@dataclass
class Candidate:
    source: str
    language: str
    parameters: dict[str, Any] = field(default_factory=dict)
    recipe: str = ""
    synthesizer: str = ""
    #: why it was proposed, in words (e.g. "threads 1 -> 2 after occupancy-limited")
    note: str = ""
    #: set when synthesis itself failed (no code in an LLM's answer, a request that failed): the search records
    #: a failed node with this reason, which later prompts see, instead of evaluating anything
    error: str = ""
    #: what produced it, for the store and trajectory export: the prompt, the raw response, tokens used
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def source_hash(self) -> str:
        return source_hash(self.source)


@dataclass(frozen=True)
class HistoryItem:
    """One evaluated node as a synthesizer sees it."""

    node_id: int
    recipe: str
    language: str
    parameters: dict[str, Any]
    fitness: float
    status: str
    diagnosis: Diagnosis | None
    source: str = ""
    #: why it failed (compile error, wrong result, malformed answer, ...), empty when it passed
    reason: str = ""
    #: the failure's evidence in text: the compiler's output, the first mismatches, ...
    detail: str = ""
    note: str = ""
    #: median kernel seconds when timed (0 when not)
    seconds: float = 0.0
    synthesizer: str = ""


@dataclass
class Context:
    problem: Problem
    target: TargetSpec
    facts: MachineFacts
    memory_op: str
    rng: random.Random
    n: int = 1
    knowledge: list[Passage] = field(default_factory=list)
    hints: dict[str, Any] = field(default_factory=dict)
    #: the history the node's memory operator selected (parent trajectory, siblings, both, or none)
    history: list[HistoryItem] = field(default_factory=list)
    parent: HistoryItem | None = None
    diagnosis: Diagnosis | None = None
    #: the best node of the whole tree, for crossover ("combine")
    best: HistoryItem | None = None
    recipes: list[Recipe] = field(default_factory=list)
    #: parameters that won on the nearest solved problems in the store
    seeds: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: lessons distilled from earlier sessions on similar problems (see :mod:`kevolve.skills`)
    skills: list[Skill] = field(default_factory=list)
    #: the kernel file contract for the target and language, in full (docs passages marked ``contract``)
    contract: list[Passage] = field(default_factory=list)
    #: language -> how its kernel files look, from the target's toolchains (see backend.toolchain.LanguageForm)
    forms: dict[str, LanguageForm] = field(default_factory=dict)
    #: the catalog's ops (a program that one of them computes gets that op's recipes: kevolve.program.catalog_twin)
    ops: list[OpDef] = field(default_factory=list)

    def form(self, language: str) -> LanguageForm:
        return self.forms.get(language, LanguageForm())


class Synthesizer(ABC):
    name: str = ""
    #: expansions in a row that bring nothing new (only candidates the tree has) before the search ends
    patience: int = 20

    @abstractmethod
    def propose(self, context: Context) -> list[Candidate]:
        """Up to ``context.n`` candidates. May return fewer (e.g. nothing new left to try)."""

    def stop_reason(self) -> str:
        """Why this synthesizer can propose nothing more (e.g. its token budget is spent); empty while it can."""
        return ""

    def replay(self, candidate: Candidate) -> None:
        """See a candidate of an earlier run of a resumed session (e.g. to count the tokens it cost)."""
