"""The NVIDIA backend: Triton kernels for Hopper and Ampere on the shared Triton layer, and CUDA C++ kernels
compiled with NVRTC. What is NVIDIA's own: the sm_XX targets, resources read from the cubin, the CUDA C++
toolchain and recipes, the Nsight Compute profiler and its classifier."""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path

from kevolve import diagnosis as d
from kevolve.backend.classifier import Classifier
from kevolve.backend.profiler import Profiler, RooflineProfiler
from kevolve.backend.runner import Runner
from kevolve.backend.toolchain import Toolchain
from kevolve.synthesis.recipe import Recipe
from kevolve.target import MachineFacts, TargetSpec
from kevolve_triton.backend import TritonBackend, load_specs

SPECS = ("nvidia_h100", "nvidia_h200", "nvidia_a100")
#: the environment variable that chooses the profiler (``NvidiaBackend.profiler``)
PROFILER_ENV = "KEVOLVE_NVIDIA_PROFILER"


def nvidia_specs() -> list[TargetSpec]:
    return load_specs("kevolve_nvidia", SPECS)


def is_model(device_name: str, model: str) -> bool:
    """Whether the driver's name for a GPU ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB") names ``model`` as
    a word: a GH200's name holds "H200" but it is no H200."""
    return re.search(rf"\b{re.escape(model)}\b", device_name) is not None


class NvidiaBackend(TritonBackend):
    distribution = "kevolve-nvidia"
    gpu_kind = "CUDA"
    lowest_is_worst = (d.OCCUPANCY, "programs_per_unit", "blocks_per_sm_by_registers",
                       "blocks_per_sm_by_shared_memory", "blocks_per_sm_by_warps", "blocks_per_sm_by_blocks")

    def target_arch(self, target: TargetSpec) -> str:
        return f"sm_{target.facts.extra['gpu']['arch']}"

    def gpu_here(self, index: int = 0) -> str | None:
        import torch

        if getattr(torch.version, "hip", None) or not torch.cuda.is_available() or index >= torch.cuda.device_count():
            return None
        major, minor = torch.cuda.get_device_capability(index)
        return f"sm_{major}{minor}"

    def timing(self, target: TargetSpec) -> tuple[bool, str]:
        """As for any Triton GPU target, and a note when the GPU here is another model of the target's
        architecture (an H200 for nvidia_h100): the code runs the same, but its times are the other chip's, and
        the roofline fractions are taken against the target's peaks."""
        timed, note = super().timing(target)
        if not timed:
            return timed, note
        import torch

        here, model = torch.cuda.get_device_name(0), target.facts.extra["gpu"]["model"]
        if is_model(here, model):
            return True, ""
        fitting = [spec.name for spec in nvidia_specs() if is_model(here, spec.facts.extra["gpu"]["model"])]
        return True, (f"timed on an {here}, not the {model} that {target.name} describes: the same "
                      f"{self.target_arch(target)} code, but its times and the roofline fractions (against "
                      f"{target.name}'s peaks) are not the {model}'s"
                      + (f"; --target {fitting[0]} describes this GPU" if fitting else ""))

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        if language == "cuda":
            from kevolve_nvidia.cuda_toolchain import CudaToolchain

            return CudaToolchain(self.target_arch(target), self.facts(target))
        return super().toolchain(target, language)

    def recipes(self, target: TargetSpec) -> list[Recipe]:
        """The shared Triton recipes, and the CUDA C++ ones where an NVIDIA GPU is here and NVRTC through cupy
        is usable: CUDA C++ has no interpreter, so elsewhere its candidates could be compiled but never checked,
        and without cupy every one would fail to build."""
        from kevolve_nvidia.cuda_recipes import RECIPES
        from kevolve_nvidia.cuda_toolchain import cuda_version

        usable = self.gpu_here() is not None and cuda_version() != "none"
        return super().recipes(target) + (RECIPES if usable else [])

    def gpu_runner_type(self) -> type[Runner]:
        from kevolve_nvidia.cuda_runner import NvidiaGpuRunner

        return NvidiaGpuRunner

    def write_standalone(self, target: TargetSpec, source: str, language: str, directory: Path) -> list[str]:
        if language != "cuda":
            return super().write_standalone(target, source, language, directory)
        from kevolve_triton.standalone import write_package

        from kevolve_nvidia.cuda_toolchain import PACKAGES

        stream = resources.files("kevolve_nvidia").joinpath("cuda_stream.py").read_text()
        return write_package(source, language, target.name, f"torch, an NVIDIA GPU, {PACKAGES}", directory,
                             {"cuda_stream.py": stream}, "from .cuda_stream import on_torch_stream\n"
                             "from .kernel import kernel as _launch\n\nkernel = on_torch_stream(_launch)")

    def worker_env(self, target: TargetSpec) -> dict[str, str]:
        """With the profiler choice: workers fork from a process started once per environment, so a choice
        made after the first evaluation would otherwise never reach them."""
        chosen = os.environ.get(PROFILER_ENV)
        return {**super().worker_env(target), **({PROFILER_ENV: chosen} if chosen else {})}

    def profiler(self, target: TargetSpec) -> Profiler:
        """``KEVOLVE_NVIDIA_PROFILER``: "ncu" (default; hardware counters), "proton" (Triton's Proton: each
        launch's device time, lighter) or "roofline" (timing alone); an unavailable choice falls back to the
        roofline."""
        from kevolve_triton.proton import ProtonProfiler

        from kevolve_nvidia.ncu import NcuProfiler

        wanted = os.environ.get(PROFILER_ENV, "ncu")
        chosen = {"ncu": NcuProfiler, "proton": ProtonProfiler}.get(wanted, RooflineProfiler)()
        return chosen if chosen.available()[0] else RooflineProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        from kevolve_nvidia.classifier import NvidiaClassifier

        return NvidiaClassifier()

    def gpu_target(self, target: TargetSpec):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", int(target.facts.extra["gpu"]["arch"]), 32)

    def read_resources(self, compiled, facts: MachineFacts) -> dict[str, float]:
        from kevolve_nvidia.resources import read_resources

        return read_resources(compiled, facts)
