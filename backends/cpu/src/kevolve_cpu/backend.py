"""The CPU backend: the host's cores, C++/OpenMP and numba kernels, measured machine facts."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from kevolve.backend.base import Backend
from kevolve.backend.classifier import Classifier, RooflineClassifier
from kevolve.backend.profiler import Profiler
from kevolve.backend.runner import Runner
from kevolve.backend.toolchain import Toolchain
from kevolve.errors import TargetUnusableError
from kevolve.synthesis.recipe import Recipe
from kevolve.target import MachineFacts, TargetSpec, load_target_spec

from kevolve_cpu.toolchain import CppToolchain, NumbaToolchain


def cpu_spec() -> TargetSpec:
    with resources.as_file(resources.files("kevolve_cpu").joinpath("specs/cpu.toml")) as path:
        return load_target_spec(path)


class CpuBackend(Backend):
    distribution = "kevolve-cpu"

    def __init__(self) -> None:
        self._toolchains: dict[str, Toolchain] = {"cpp": CppToolchain(), "numba": NumbaToolchain()}
        self._facts: MachineFacts | None = None

    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        return self._toolchains["cpp"].available()

    def facts(self, target: TargetSpec) -> MachineFacts:
        if self._facts is None:
            from kevolve_cpu.facts import measured_facts

            self._facts = measured_facts(target.facts)
        return self._facts

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        if language not in self._toolchains:
            raise TargetUnusableError(f"the cpu target builds {', '.join(self._toolchains)}, not {language!r}")
        return self._toolchains[language]

    def worker_env(self, target: TargetSpec) -> dict[str, str]:
        from kevolve.harness.confine import worker_env

        return worker_env()  # CpuRunner confines its kernels to a thread of their own

    def runner(self, target: TargetSpec) -> Runner:
        from kevolve_cpu.runner import CpuRunner

        return CpuRunner()

    def profiler(self, target: TargetSpec) -> Profiler:
        from kevolve_cpu.profiler import CpuProfiler

        return CpuProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        return RooflineClassifier()

    def write_standalone(self, target: TargetSpec, source: str, language: str, directory: Path) -> list[str]:
        from kevolve_cpu.standalone import write_standalone

        return write_standalone(source, language, directory)

    def recipes(self, target: TargetSpec) -> list[Recipe]:
        from kevolve_cpu.recipes import all_recipes

        return all_recipes()
