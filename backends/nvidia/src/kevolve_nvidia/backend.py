"""The NVIDIA backend: Triton kernels for Hopper and Ampere, compiled ahead of time for the target's sm_XX
on any machine, checked through the Triton interpreter where no GPU is present, timed and profiled on one."""

from __future__ import annotations

import os
from importlib import resources

from kevolve.backend.base import Backend
from kevolve.backend.classifier import Classifier
from kevolve.backend.estimator import Estimator
from kevolve.backend.profiler import Profiler, RooflineProfiler
from kevolve.backend.runner import Runner
from kevolve.backend.toolchain import Toolchain
from kevolve.errors import TargetUnusableError
from kevolve.synthesis.recipe import Recipe
from kevolve.target import MachineFacts, TargetSpec, load_target_spec
from kevolve_triton.device import TritonDevice

SPECS = ("nvidia_h100", "nvidia_h200", "nvidia_a100")


def nvidia_specs() -> list[TargetSpec]:
    specs = []
    for name in SPECS:
        with resources.as_file(resources.files("kevolve_nvidia").joinpath(f"specs/{name}.toml")) as path:
            specs.append(load_target_spec(path))
    return specs


def _arch(target: TargetSpec) -> int:
    return int(target.facts.extra["gpu"]["arch"])


class NvidiaBackend(Backend, TritonDevice):
    distribution = "kevolve-nvidia"

    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        from kevolve_triton.toolchain import triton_version

        if triton_version() == "none":
            return False, "triton is not installed: `pip install triton`"
        return True, ""

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        if language != "triton":
            raise TargetUnusableError(f"{target.name} builds triton kernels, not {language!r}")
        from kevolve_triton.toolchain import TritonToolchain

        return TritonToolchain(target.name, compile_ahead=True)

    def timing(self, target: TargetSpec) -> tuple[bool, str]:
        import torch

        if not torch.cuda.is_available():
            return False, (f"no CUDA GPU on this machine: compiled for sm_{_arch(target)} and checked through the "
                           "Triton interpreter; timing and profiling need the GPU")
        major, minor = torch.cuda.get_device_capability()
        if major * 10 + minor != _arch(target):
            return False, (f"the GPU here ({torch.cuda.get_device_name()}, sm_{major}{minor}) is not the target's "
                           f"sm_{_arch(target)}: timings would not describe {target.name}")
        return True, ""

    def runner(self, target: TargetSpec) -> Runner:
        import torch
        from kevolve_triton.runner import TritonGpuRunner, TritonInterpreterRunner

        if torch.cuda.is_available():
            return TritonGpuRunner("cuda", flush_bytes=int(2 * target.facts.memory[-2].capacity_bytes))
        return TritonInterpreterRunner()

    def estimator(self, target: TargetSpec) -> Estimator:
        from kevolve_triton.cost_model import TritonCostModel

        return TritonCostModel()

    def profiler(self, target: TargetSpec) -> Profiler:
        from kevolve_nvidia.ncu import NcuProfiler

        ncu = NcuProfiler()
        wanted = os.environ.get("KEVOLVE_NVIDIA_PROFILER", "ncu")
        return ncu if wanted == "ncu" and ncu.available()[0] else RooflineProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        from kevolve_nvidia.classifier import NvidiaClassifier

        return NvidiaClassifier()

    def recipes(self, target: TargetSpec) -> list[Recipe]:
        from kevolve_triton.recipes import all_recipes

        return all_recipes()

    def gpu_target(self, target: TargetSpec):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", _arch(target), 32)

    def read_resources(self, compiled, facts: MachineFacts) -> dict[str, float]:
        from kevolve_nvidia.resources import read_resources

        return read_resources(compiled, facts)
