"""The Triton toolchain: checks a kernel file and, for GPU targets, compiles every launch it makes ahead of
time for the target's architecture (no device needed) to report registers, spills, shared memory and the
occupancy that follows."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import traceback
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kevolve import diagnosis as d
from kevolve.backend.toolchain import BuildResult, LanguageForm, Toolchain
from kevolve.errors import CompileError
from kevolve.harness.isolation import inside_worker

from kevolve_triton.aot import REPORT, TASK

if TYPE_CHECKING:
    from kevolve.problems.problem import Problem

COMPILE_TIMEOUT_S = 300
#: Triton 3.9 warns when FP fusion is left to its default; fix it to the documented default (fusion on) so
#: every supported version compiles the same way
ENV = {"TRITON_DEFAULT_FP_FUSION": "1"}

#: the launcher is Python: these would let it compute outside Triton (numpy on host views, Python loops over
#: values read back from the device)
FORBIDDEN = {
    r"\bnumpy\b|\bnp\.": "computes with numpy",
    r"\.(?:tolist|item|numpy|cpu|cuda)\s*\(": "reads tensor values back into Python",
    r"__class__|__subclasses__|__globals__|\bgetattr\b|\beval\b|\bexec\b": "reaches for objects indirectly",
    r"\bcupy\b|\bnumba\b|\bjax\b": "hands the computation to another array library",
}


@cache
def triton_version() -> str:
    try:
        import triton

        return f"triton {triton.__version__}"
    except ImportError:
        return "none"


def summarize(report: list[dict[str, Any]], lowest_is_worst: tuple[str, ...] = (d.OCCUPANCY,)) -> dict[str, float]:
    """One resource dict for a kernel file from its per-launch report: the worst launch on each count (most
    registers, most spills; the least of the ``lowest_is_worst`` counts such as occupancy), plus how many
    launches one call makes."""
    summary: dict[str, float] = {"launches": float(len(report))}
    for entry in report:
        for key, value in entry.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            worse = min if key in lowest_is_worst else max
            summary[key] = float(worse(summary[key], value)) if key in summary else float(value)
    return summary


def assemble_program(program: Any, sources: list[str]) -> str:
    """A lowered PyTorch program as one Triton kernel file (:mod:`kevolve_triton.program_file`, imported on first use)."""
    from kevolve_triton.program_file import assemble

    return assemble(program, sources)


class TritonToolchain(Toolchain):
    language = "triton"
    form = LanguageForm(imports="import triton", fences=("python", "py"), entry=r"(?m)^def\s+kernel\s*\(",
                        entry_words="a module-level launcher `def kernel(inputs, outputs)` and @triton.jit kernels",
                        python=True, assemble_program=assemble_program)
    forbidden_patterns = FORBIDDEN

    def __init__(self, target_name: str, compile_ahead: bool = True,
                 lowest_is_worst: tuple[str, ...] = (d.OCCUPANCY,)) -> None:
        self.target_name = target_name
        self.compile_ahead = compile_ahead
        self.lowest_is_worst = lowest_is_worst

    def version(self) -> str:
        return triton_version()

    def available(self) -> tuple[bool, str]:
        if triton_version() == "none":
            return False, "triton is not installed: `pip install triton`"
        return True, ""

    def build(self, source: str, workdir: Path, problem: Problem | None = None) -> BuildResult:
        path = self.write_python_file(source, workdir)
        if not self.compile_ahead or problem is None:
            return BuildResult(language=self.language, artifact=str(path), command=f"python -m py_compile {path}")
        report, repro = self._compile_ahead(source, workdir, problem)
        return BuildResult(language=self.language, artifact=str(path), command=repro,
                           log=json.dumps(report), resources=summarize(report, self.lowest_is_worst))

    def _compile_ahead(self, source: str, workdir: Path, problem: Problem) -> tuple[list[dict], str]:
        from kevolve.plugins import worker_bootstrap

        task = {"target": self.target_name, "problem": problem.to_spec(), "bootstrap": worker_bootstrap()}
        stamp = json.dumps({"source": source, "version": self.version(), "target": self.target_name,
                            "problem": problem.to_spec()}, sort_keys=True, default=str)
        report_path, stamp_path = workdir / REPORT, workdir / "aot.stamp"
        command = [sys.executable, "-m", "kevolve_triton.aot", str(workdir)]
        repro = " ".join(f"{k}={v}" for k, v in ENV.items()) + " " + shlex.join(command)
        if report_path.exists() and stamp_path.exists() and stamp_path.read_text() == stamp:
            return json.loads(report_path.read_text()), repro
        report_path.unlink(missing_ok=True)
        (workdir / TASK).write_text(json.dumps(task, default=str))
        report = self._compile_here(workdir, repro) if compiles_here() else self._compile_apart(workdir, command, repro)
        stamp_path.write_text(stamp)
        return report, repro

    def _compile_here(self, workdir: Path, repro: str) -> list[dict]:
        """In the harness's build worker, which is isolated already: no interpreter to start and no torch to
        import again (0.6 s instead of 3.1 s for a softmax build on a 2-core machine)."""
        from kevolve_triton.aot import compile_launches

        os.environ.update(ENV)  # read when compiling: the worker is this build's alone
        try:
            report = compile_launches(workdir)
        except (Exception, SystemExit) as exc:
            raise CompileError(f"Triton compile for {self.target_name} failed: {type(exc).__name__}: {exc}"[:400],
                               log=traceback.format_exc(), repro=repro) from None
        (workdir / REPORT).write_text(json.dumps(report, indent=1))
        return report

    def _compile_apart(self, workdir: Path, command: list[str], repro: str) -> list[dict]:
        """In a process of its own (``python -m kevolve_triton.aot``), where nothing isolates the caller from the
        kernel file's code."""
        report_path = workdir / REPORT
        log_path = workdir / "aot.log"  # a file, not a pipe: a process the file's code leaves behind holds no
        try:                              # pipe open that the build would wait on
            env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compiles for real
            with open(log_path, "w") as log:
                proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=log, timeout=COMPILE_TIMEOUT_S,
                                      env={**env, **ENV})
        except subprocess.TimeoutExpired:
            raise CompileError(f"Triton compile ran past {COMPILE_TIMEOUT_S} s", repro=repro) from None
        stderr = log_path.read_text(errors="replace")
        if proc.returncode != 0:
            raise CompileError(f"Triton compile for {self.target_name} failed: {_last_error(stderr)}",
                               log=stderr, repro=repro)
        if not report_path.exists():  # the file's own code ended the process (os._exit) before the report
            raise CompileError(f"Triton compile for {self.target_name} exited without its report: the kernel "
                               "file's code ended the process", log=stderr, repro=repro)
        return json.loads(report_path.read_text())


def compiles_here() -> bool:
    """Whether a build may compile in this process: a harness worker (isolated, so the kernel file's code costs
    only the task) whose Triton compiles for real, as the build workers' does (``TritonBackend.build_env``); a
    Triton imported to interpret cannot compile (its standard library is interpreted)."""
    from triton import knobs

    return inside_worker() and not knobs.runtime.interpret


def _last_error(stderr: str) -> str:
    """The line of a Python traceback that says what went wrong (the compiler's own message follows in the
    log, verbatim)."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if not line.startswith(" ") and ("Error" in line or "error" in line):
            return line.strip()[:300]
    return lines[-1][:300] if lines else "no output"
