"""The backend every GPU vendor's Triton plugin shares: specs from package TOML files, the Triton toolchain,
the runner that fits this machine (the GPU when one is here, else the interpreter), honest timing verdicts,
the static cost model and the shared recipes. A vendor plugin adds its GPU's identity (which architecture is
present here, which one a target is), its resource reader, classifier and profiler."""

from __future__ import annotations

import os
from abc import abstractmethod
from importlib import resources
from pathlib import Path

from kevolve.backend.base import Backend, TimingLanes
from kevolve.backend.estimator import Estimator
from kevolve.backend.runner import Runner
from kevolve.backend.toolchain import Toolchain
from kevolve.errors import TargetUnusableError
from kevolve.synthesis.recipe import Recipe
from kevolve.target import TargetSpec, load_target_spec

from kevolve_triton.device import TritonDevice


def load_specs(package: str, names: tuple[str, ...]) -> list[TargetSpec]:
    """The target specs ``specs/<name>.toml`` shipped in ``package``."""
    specs = []
    for name in names:
        with resources.as_file(resources.files(package).joinpath(f"specs/{name}.toml")) as path:
            specs.append(load_target_spec(path))
    return specs


class TritonBackend(Backend, TritonDevice):
    #: how the vendor's GPUs are called in messages ("CUDA", "ROCm")
    gpu_kind: str = "GPU"
    #: the variable that chooses which of the vendor's GPUs a process sees
    visible_devices_env: str = "CUDA_VISIBLE_DEVICES"

    @abstractmethod
    def target_arch(self, target: TargetSpec) -> str:
        """The architecture a target compiles for, spelled as :meth:`gpu_here` spells it (``sm_90``, ``gfx942``)."""

    @abstractmethod
    def gpu_here(self, index: int = 0) -> str | None:
        """The architecture of this vendor's GPU ``index`` (of those visible to this process), or None when there
        is no such GPU."""

    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        from kevolve_triton.toolchain import triton_version

        if triton_version() == "none":
            return False, "triton is not installed: `pip install triton`"
        return True, ""

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        if language != "triton":
            raise TargetUnusableError(f"{target.name} builds triton kernels, not {language!r}")
        from kevolve_triton.toolchain import TritonToolchain

        return TritonToolchain(target.name, compile_ahead=True, lowest_is_worst=self.lowest_is_worst)

    def worker_env(self, target: TargetSpec) -> dict[str, str]:
        from kevolve_triton.runner import TritonInterpreterRunner

        return {} if self.gpu_here() else dict(TritonInterpreterRunner.ENV)

    def build_env(self, target: TargetSpec) -> dict[str, str]:
        """Triton imported to compile, never to interpret, on any host: the build worker compiles the file ahead of
        time in its own process (:meth:`TritonToolchain._compile_here`)."""
        from kevolve_triton.toolchain import ENV

        return {**ENV, "TRITON_INTERPRET": "0"}

    def timing(self, target: TargetSpec) -> tuple[bool, str]:
        arch, here = self.target_arch(target), self.gpu_here()
        if here is None:
            return False, (f"no {self.gpu_kind} GPU here: compiled for {arch} and checked through the "
                           "Triton interpreter; ranked by the static cost model, not timed on hardware")
        if here != arch:
            return False, (f"the {self.gpu_kind} GPU here is {here}, not the target's {arch}: checked on it, ranked "
                           f"by the static cost model; its timings would not describe {target.name}")
        return True, ""

    def timing_lanes(self, target: TargetSpec) -> TimingLanes:
        """One lane per visible GPU of the target's architecture, each worker seeing only its own; the host may
        build beside a timed kernel. Without a GPU to time on, one lane on the host's cores (the interpreter)."""
        if not self.timing(target)[0]:
            return TimingLanes()
        import torch

        visible = os.environ.get(self.visible_devices_env)
        names = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
        arch = self.target_arch(target)
        lanes = tuple({self.visible_devices_env: name} for index, name in enumerate(names)
                      if self.gpu_here(index) == arch)
        return TimingLanes(envs=lanes, quiet_host=False) if lanes else TimingLanes()

    def gpu_runner_type(self) -> type[Runner]:
        """The runner class for this vendor's GPU (a vendor with more languages than Triton extends it)."""
        from kevolve_triton.runner import TritonGpuRunner

        return TritonGpuRunner

    def runner(self, target: TargetSpec) -> Runner:
        from kevolve_triton.runner import TritonInterpreterRunner

        if self.gpu_here() is None:
            return TritonInterpreterRunner()
        # PyTorch names CUDA and ROCm devices alike "cuda"; evict the largest cache before each timed call
        return self.gpu_runner_type()("cuda", flush_bytes=int(2 * target.facts.memory[-2].capacity_bytes))

    def estimator(self, target: TargetSpec) -> Estimator:
        from kevolve_triton.cost_model import TritonCostModel

        return TritonCostModel()

    def recipes(self, target: TargetSpec) -> list[Recipe]:
        from kevolve_triton.recipes import all_recipes

        return all_recipes()

    def write_standalone(self, target: TargetSpec, source: str, language: str, directory: Path) -> list[str]:
        from kevolve_triton.standalone import write_package

        if language != "triton":
            raise NotImplementedError(f"{type(self).__name__} cannot export {language!r} kernels")
        from kevolve_triton.standalone import replaying

        return write_package(source, language, target.name,
                             "torch and triton (TRITON_INTERPRET=1 runs it on CPU tensors)", directory,
                             *replaying())
