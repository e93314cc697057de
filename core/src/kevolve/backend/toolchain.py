"""Toolchain: builds one candidate's source into something a runner can load."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kevolve.errors import CompileError

if TYPE_CHECKING:
    from kevolve.problems.problem import Problem


@dataclass
class BuildResult:
    language: str
    #: what the runner loads: a shared library, a source file, a binary
    artifact: str
    #: the exact command that built it, so a person can reproduce it
    command: str = ""
    log: str = ""
    #: resource usage the toolchain can see (registers, spills, stack or shared memory bytes, ...)
    resources: dict[str, float] = field(default_factory=dict)
    #: what the artifact links or defines outside its language's contract, in words ("links dlsym", "defines
    #: clock_gettime"): a library doing the work for it or reaching outside the harness; grounds to reject
    foreign_calls: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LanguageForm:
    """What a language's kernel files look like, so that core can tell a file's language and check an LLM's
    answer without naming any language itself: the backend's toolchain declares it."""

    #: file suffixes of this language's kernel files (".cpp")
    suffixes: tuple[str, ...] = ()
    #: for a language embedded in Python (".py" files): the statement its files contain ("import triton")
    imports: str = ""
    #: fence tags an LLM's answer may use for it; the first is the one prompts ask for
    fences: tuple[str, ...] = ()
    #: a regex a kernel file must match: its entry point, as the kernel file contract names it ...
    entry: str = ""
    #: ... and in words, for the reason a malformed answer is given
    entry_words: str = "the entry point the kernel file contract names"
    #: whether its files are Python (an answer must then parse)
    python: bool = False
    #: writes a lowered PyTorch program (:class:`kevolve.program.lower.Program`, with one source per step as the
    #: target's recipes wrote them) as one kernel file of this language; None: programs are not lowered to it
    assemble_program: Callable[[Any, list[str]], str] | None = None


class Toolchain(ABC):
    language: str = ""
    #: how this language's kernel files look (see :class:`LanguageForm`)
    form: LanguageForm = LanguageForm()
    #: regex -> reason: language-specific ways of handing the work to a library, added to core's list
    forbidden_patterns: dict[str, str] = {}

    @abstractmethod
    def version(self) -> str:
        """The compiler's identity and version; part of store keys."""

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether the compiler is here; if not, the reason and what to install."""

    def write_python_file(self, source: str, workdir: Path, name: str = "kernel.py") -> Path:
        """The first steps of building a kernel file of a Python-embedded language (Triton, numba, CUDA C++
        carried in Python): the compiler must be here, and the file, written into ``workdir``, must be Python."""
        ok, why = self.available()
        if not ok:
            raise CompileError(why)
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / name
        path.write_text(source)
        try:
            compile(source, str(path), "exec")
        except SyntaxError as exc:
            raise CompileError(f"syntax error in the kernel file: {exc}", log=str(exc),
                               repro=f"python -m py_compile {path}") from None
        return path

    @abstractmethod
    def build(self, source: str, workdir: Path, problem: Problem | None = None) -> BuildResult:
        """Build ``source`` in ``workdir``. Raises :class:`kevolve.errors.CompileError` with the compiler's
        output verbatim and the command that reproduces the failure. ``problem`` is given when the build
        depends on the launch (languages that specialise on arguments, like Triton, compile per launch)."""
