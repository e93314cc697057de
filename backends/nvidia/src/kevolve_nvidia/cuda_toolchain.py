"""The CUDA C++ toolchain: a kernel file is Python that carries its CUDA C++ as a string literal (``SOURCE``,
compiler flags in ``OPTIONS``) and launches it through cupy's ``RawModule``. Here that source is compiled ahead
of time with NVRTC (cupy's binding) for the target's architecture, no GPU needed: compile errors come back
verbatim with a command that repeats them, and ptxas's own report gives registers, spills, stack and shared
memory per kernel, with the occupancy that follows where a kernel declares ``__launch_bounds__``.

    python -m kevolve_nvidia.cuda_toolchain KERNEL.py --arch sm_90     # the repro command: compile, print the log
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kevolve import diagnosis as d
from kevolve.backend.toolchain import BuildResult, LanguageForm, Toolchain
from kevolve.errors import CompileError

from kevolve_nvidia.resources import occupancy

if TYPE_CHECKING:
    from kevolve.problems.problem import Problem
    from kevolve.target import MachineFacts

PACKAGES = "cupy-cuda12x and nvidia-cuda-nvrtc-cu12"
INSTALL = f"pip install 'kevolve-nvidia[cuda]' ({PACKAGES})"

#: the launcher is Python and cupy is there to compile and launch, not to compute; the CUDA C++ must not hand
#: its work to NVIDIA's libraries either
FORBIDDEN = {
    r"\bnumpy\b|\bnp\.": "computes with numpy",
    r"\.(?:tolist|item|numpy|cpu|cuda)\s*\(": "reads tensor values back into Python",
    r"__class__|__subclasses__|__globals__|\bgetattr\b|\beval\b|\bexec\b": "reaches for objects indirectly",
    r"\bimport\s+cupy\s+as\b|\bfrom\s+cupy\b|\bcupyx\b": "imports cupy under another name (write `import cupy`)",
    r"\bcupy\.(?!(?:RawModule|u?int(?:8|16|32|64)|float(?:32|64))\b)\w+":
        "uses cupy for more than compiling and launching (RawModule and scalar types only)",
    r"\bnumba\b|\bjax\b|\btriton\b": "hands the computation to another library",
    r"\bcublas|\bcudnn|\bcufft|\bcusparse|\bcusolver|\bcurand|\bthrust::|\bcub::Device|\bcutlass\b|\bcute::":
        "calls an NVIDIA library to compute",
}

#: ptxas -v, per entry function (NVRTC prints it with --ptxas-options=-v)
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*(\d+)[^)]*\)\s*(\w+)\s*\(")


@cache
def cuda_version() -> str:
    try:
        import cupy
        from cupy_backends.cuda.libs import nvrtc

        major, minor = nvrtc.getVersion()
        return f"nvrtc {major}.{minor} (cupy {cupy.__version__})"
    except Exception:  # noqa: BLE001 - cupy missing, or no NVRTC library for it to load
        return "none"


def kernel_file_parts(source: str) -> tuple[str, list[str]]:
    """The CUDA C++ (``SOURCE``) and NVRTC flags (``OPTIONS``) of a kernel file, read without running it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CompileError("a CUDA kernel file is Python that carries its CUDA C++ in SOURCE and launches it with "
                           f"cupy (see the docs pack's CUDA kernel contract); this one is not Python: {exc}") from None
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("SOURCE", "OPTIONS"):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                raise CompileError(f"{node.targets[0].id} must be a literal (line {node.lineno})") from None
    code, options = found.get("SOURCE"), found.get("OPTIONS", ())
    if not isinstance(code, str):
        raise CompileError("a CUDA kernel file sets SOURCE = r'''...''' (the CUDA C++, a string literal) at module "
                           "level; see the docs pack's CUDA kernel contract")
    if not isinstance(options, (tuple, list)) or not all(isinstance(o, str) for o in options):
        raise CompileError("OPTIONS must be a tuple of NVRTC flag strings")
    return code, list(options)


def compile_cuda(code: str, options: list[str], arch: str) -> tuple[bytes, str]:
    """NVRTC: CUDA C++ -> cubin for ``arch`` (``sm_90``), with ptxas's verbose report in the log."""
    from cupy_backends.cuda.libs import nvrtc

    program = nvrtc.createProgram(code, "kernel.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [f"--gpu-architecture={arch}", "--ptxas-options=-v", *options])
        except nvrtc.NVRTCError as exc:
            raise CompileError(f"NVRTC could not compile the CUDA C++ for {arch} ({exc})",
                               log=nvrtc.getProgramLog(program)) from None
        return nvrtc.getCUBIN(program), nvrtc.getProgramLog(program)
    finally:
        nvrtc.destroyProgram(program)


def ptxas_report(log: str) -> dict[str, dict[str, int]]:
    """Per entry function: registers, stack frame, spill stores and loads, static shared memory."""
    report: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in log.splitlines():
        if entry := _ENTRY.search(line):
            current = report.setdefault(entry.group(1), {"registers": 0, "stack": 0, "spill_stores": 0,
                                                         "spill_loads": 0, "shared": 0})
        elif current is not None:
            if frame := _FRAME.search(line):
                current.update(stack=int(frame.group(1)), spill_stores=int(frame.group(2)),
                               spill_loads=int(frame.group(3)))
            if used := _USED.search(line):
                current["registers"] = int(used.group(1))
                if smem := _SMEM.search(line):
                    current["shared"] = int(smem.group(1))
    return report


def resources(report: dict[str, dict[str, int]], code: str, facts: MachineFacts) -> dict[str, float]:
    """The worst kernel of the file on each count; occupancy from the kernels that declare their block size
    with ``__launch_bounds__`` (a kernel without it could be launched with any block)."""
    if not report:
        return {}
    worst = {key: max(entry[key] for entry in report.values()) for key in next(iter(report.values()))}
    summary = {d.REGISTERS: float(worst["registers"]),
               d.SPILL_BYTES: float(worst["spill_stores"] + worst["spill_loads"]),
               "stack_bytes": float(worst["stack"]), "shared_bytes": float(worst["shared"]),
               "kernels": float(len(report))}
    bounds = {name: int(threads) for threads, name in _BOUNDS.findall(code)}
    gpu = facts.extra.get("gpu", {})
    declared = [(max(1, -(-bounds[name] // 32)), entry) for name, entry in report.items() if name in bounds]
    if gpu and declared:
        worst = min(({"num_warps": float(warps), **occupancy(entry["registers"], warps, entry["shared"], gpu)}
                     for warps, entry in declared), key=lambda counts: counts[d.OCCUPANCY])
        summary.update(worst)
    return summary


class CudaToolchain(Toolchain):
    language = "cuda"
    form = LanguageForm(imports="import cupy", fences=("python", "py"), entry=r"(?m)^def\s+kernel\s*\(",
                        entry_words="a module-level launcher `def kernel(inputs, outputs)` compiling CUDA C++ "
                                    "through cupy", python=True)
    forbidden_patterns = FORBIDDEN

    def __init__(self, arch: str, facts: MachineFacts) -> None:
        self.arch = arch
        self.facts = facts

    def version(self) -> str:
        return cuda_version()

    def available(self) -> tuple[bool, str]:
        if cuda_version() == "none":
            return False, f"CUDA C++ kernels are compiled with NVRTC through cupy, which is not usable here: {INSTALL}"
        return True, ""

    def _repro(self, path: Path) -> str:
        return shlex.join([sys.executable, "-m", "kevolve_nvidia.cuda_toolchain", str(path), "--arch", self.arch])

    def build(self, source: str, workdir: Path, problem: Problem | None = None) -> BuildResult:
        try:
            code, options = kernel_file_parts(source)
        except CompileError as exc:  # told what to change, with the command that shows it again
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "kernel.py").write_text(source)
            raise CompileError(exc.args[0], repro=self._repro(workdir / "kernel.py")) from None
        path = self.write_python_file(source, workdir)
        repro = self._repro(path)
        try:
            cubin, log = compile_cuda(code, options, self.arch)
        except CompileError as exc:
            raise CompileError(exc.args[0], log=exc.log, repro=repro) from None
        (workdir / "kernel.cubin").write_bytes(cubin)
        return BuildResult(language=self.language, artifact=str(path), command=repro, log=log,
                           resources=resources(ptxas_report(log), code, self.facts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="compile a kevolve CUDA kernel file's SOURCE with NVRTC")
    parser.add_argument("kernel_file")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args(argv)
    try:
        code, options = kernel_file_parts(Path(args.kernel_file).read_text())
        _, log = compile_cuda(code, options, args.arch)
    except CompileError as exc:
        print(exc.args[0], file=sys.stderr)
        print(exc.log, file=sys.stderr)
        return 1
    print(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
