"""The toy backend: NumPy kernel files, built by a syntax check, run on the host CPU."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kevolve.backend import Backend, BuildResult, KernelFn, LanguageForm, Runner, Toolchain
from kevolve.backend.runner import load_kernel_module
from kevolve.target import TargetSpec, load_target_spec


def toy_spec() -> TargetSpec:
    with resources.as_file(resources.files("kevolve_toy").joinpath("specs/toy.toml")) as path:
        return load_target_spec(path)


class NumpyToolchain(Toolchain):
    language = "numpy"
    #: how its kernel files look: kevolve tells a `.py` file of this language by its import, and checks an LLM's
    #: answer for the entry point
    form = LanguageForm(imports="import numpy", fences=("python", "py"), entry=r"(?m)^def\s+kernel\s*\(",
                        entry_words="a module-level function `def kernel(inputs, outputs)`", python=True)
    #: regex -> reason: ways of handing the work to a library that this language makes easy
    forbidden_patterns = {r"\bnp\.(dot|matmul|einsum)\b": "hands the work to BLAS"}

    def version(self) -> str:
        import numpy

        return f"numpy {numpy.__version__}"

    def available(self) -> tuple[bool, str]:
        try:
            import numpy  # noqa: F401
        except ImportError:
            return False, "numpy is not installed: `pip install numpy`"
        return True, ""

    def build(self, source: str, workdir: Path, problem=None) -> BuildResult:
        # checks that numpy is here and that the file is Python; a syntax error raises CompileError
        path = self.write_python_file(source, workdir)
        return BuildResult(language=self.language, artifact=str(path), command=f"python -m py_compile {path}")


class NumpyRunner(Runner):
    device = "cpu"
    runtime_packages = ("numpy",)  # the language's runtime: a kernel file's code may call into it

    def load(self, build: BuildResult) -> KernelFn:
        _, fn = load_kernel_module(build.artifact)

        def call(inputs, outputs) -> None:
            fn([t.numpy() for t in inputs], [t.numpy() for t in outputs])

        return call


class ToyBackend(Backend):
    distribution = "kevolve-toy"

    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        return NumpyToolchain().available()

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        return NumpyToolchain()

    def runner(self, target: TargetSpec) -> Runner:
        return NumpyRunner()

    def recipes(self, target: TargetSpec):
        from kevolve_toy.recipes import NumpyPointwise

        return [NumpyPointwise()]
