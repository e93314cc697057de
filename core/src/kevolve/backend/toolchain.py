"""Toolchain: builds one candidate's source into something a runner can load."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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
    #: external functions the artifact calls that do computation for it (BLAS, libtorch, ...): grounds to reject
    foreign_calls: list[str] = field(default_factory=list)


class Toolchain(ABC):
    language: str = ""
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
