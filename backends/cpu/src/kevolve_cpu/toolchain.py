"""Toolchains of the CPU backend: C++ with OpenMP through the system compiler, and numba."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kevolve.backend.toolchain import BuildResult, LanguageForm, Toolchain
from kevolve.errors import CompileError

from kevolve_cpu.linkage import outside_contract

INCLUDE_DIR = str(resources.files("kevolve_cpu").joinpath("include"))
# -fno-trapping-math and -fno-math-errno change no computed value; they let branch-free float code vectorize
CXXFLAGS = ("-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC", "-fno-trapping-math",
            "-fno-math-errno", "-fstack-usage", "-fvisibility=hidden")
COMPILE_TIMEOUT_S = 120



def find_compiler() -> str | None:
    for candidate in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


@cache
def _compiler_version(compiler: str) -> str:
    out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0].strip() if out else compiler


def assemble_program(program: Any, sources: list[str]) -> str:
    """A lowered PyTorch program as one C++ kernel file (:mod:`kevolve_cpu.program_file`, imported on first use)."""
    from kevolve_cpu.program_file import assemble

    return assemble(program, sources)


class CppToolchain(Toolchain):
    language = "cpp"
    form = LanguageForm(
        suffixes=(".cpp", ".cc", ".cxx", ".c"), fences=("cpp", "c++", "cxx", "cc", "c"), entry=r"\bkevolve_kernel\s*\(",
        entry_words="an exported function `kevolve_kernel(const kv_tensor*, int64_t, kv_tensor*, int64_t)`",
        assemble_program=assemble_program)
    forbidden_patterns = {
        r"\bcblas_|\bsgemm_?\b|\bdgemm_?\b|<mkl|\bEigen\b|<dnnl|\bopenblas\b": "calls a BLAS/math library",
        r"#\s*include\s*<(?:torch|ATen|c10)/": "includes PyTorch headers",
    }

    def __init__(self) -> None:
        self.compiler = find_compiler()

    def available(self) -> tuple[bool, str]:
        if self.compiler is None:
            return False, "no C++ compiler found (g++, c++ or clang++; or set CXX): `apt-get install g++`"
        return True, ""

    def version(self) -> str:
        if self.compiler is None:
            return "none"
        return f"{_compiler_version(self.compiler)} {' '.join(CXXFLAGS)}"

    def build(self, source: str, workdir: Path, problem=None) -> BuildResult:
        ok, why = self.available()
        if not ok:
            raise CompileError(why)
        workdir.mkdir(parents=True, exist_ok=True)
        src, lib, stamp = workdir / "kernel.cpp", workdir / "kernel.so", workdir / "kernel.cmd"
        repro = shlex.join([self.compiler, *CXXFLAGS, f"-I{INCLUDE_DIR}", str(src), "-o", str(lib)])
        fresh = lib.exists() and src.exists() and src.read_text() == source and stamp.exists() \
            and stamp.read_text() == f"{self.version()}\n{repro}"
        if not fresh:
            self._compile_into(workdir, source, repro)
        _prepare_launch()
        return BuildResult(language=self.language, artifact=str(lib), command=repro,
                           resources=_resources(workdir, lib), foreign_calls=outside_contract(lib))

    def _compile_into(self, workdir: Path, source: str, repro: str) -> None:
        """Compile in a private directory, then move the results in (the stamp last): builds of the same source
        by concurrent processes (two searches, parallel tests) never see each other's half-written files."""
        with tempfile.TemporaryDirectory(dir=workdir, prefix=".build-") as private:
            tmp = Path(private)
            (tmp / "kernel.cpp").write_text(source)
            command = [self.compiler, *CXXFLAGS, f"-I{INCLUDE_DIR}", "kernel.cpp", "-o", "kernel.so"]
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, cwd=tmp)
            except subprocess.TimeoutExpired:
                raise CompileError(f"compiler ran past {COMPILE_TIMEOUT_S} s", repro=repro) from None
            if proc.returncode != 0:  # the source stays where the repro command looks for it
                os.replace(tmp / "kernel.cpp", workdir / "kernel.cpp")
                raise CompileError(f"C++ compile failed (exit {proc.returncode})", log=proc.stderr, repro=repro)
            (workdir / "kernel.cmd").unlink(missing_ok=True)
            for old in workdir.glob("*.su"):
                old.unlink(missing_ok=True)
            for made in tmp.iterdir():
                os.replace(made, workdir / made.name)
            (tmp / "kernel.cmd").write_text(f"{self.version()}\n{repro}")
            os.replace(tmp / "kernel.cmd", workdir / "kernel.cmd")


def _prepare_launch() -> None:
    """Build the op's C launch (``cpp_loader.launch_library``) here, once per torch version, rather than in the
    first worker that registers an op. A failure is remembered by the build and the op says so; the candidate
    is unaffected."""
    from kevolve.delivery.runtime import build_torch_library

    from kevolve_cpu.cpp_loader import launch_library

    try:
        launch_library(build_torch_library)
    except (OSError, subprocess.SubprocessError):
        pass


def _resources(workdir: Path, lib: Path) -> dict[str, float]:
    """Largest stack frame (a proxy for register pressure spilling to the stack) and library size."""
    frames = [0]
    for su in workdir.glob("*.su"):
        for line in su.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1].strip().isdigit():
                frames.append(int(parts[1]))
    return {"max_stack_frame_bytes": float(max(frames)), "library_bytes": float(lib.stat().st_size)}


class NumbaToolchain(Toolchain):
    """numba compiles at first call, inside the worker; building here checks the file and fixes its path."""

    language = "numba"
    form = LanguageForm(imports="import numba", fences=("python", "py"), entry=r"(?m)^def\s+kernel\s*\(",
                        entry_words="a module-level function `def kernel(*arrays)`", python=True)
    forbidden_patterns = {
        r"np\.(?:dot|matmul|einsum|linalg)|\bscipy\b|(?<=[\w)\]])[ \t]*@[ \t]*[\w(]":
            "hands the computation to BLAS/numpy routines",
    }

    def available(self) -> tuple[bool, str]:
        try:
            import numba  # noqa: F401
        except ImportError:
            return False, "numba is not installed: `pip install numba`"
        return True, ""

    def version(self) -> str:
        try:
            import numba

            return f"numba {numba.__version__}"
        except ImportError:
            return "none"

    def build(self, source: str, workdir: Path, problem=None) -> BuildResult:
        path = self.write_python_file(source, workdir, "kernel_numba.py")
        return BuildResult(language=self.language, artifact=str(path), command=f"python -m py_compile {path}")
