"""The AMD backend: Triton kernels for AMD Instinct GPUs (CDNA2/3/4), compiled ahead of time for the target's
gfx architecture on any machine, checked through the Triton interpreter where no ROCm GPU is present and
ranked there by the static cost model; timed on a ROCm GPU of the target's architecture.

Nothing here imports the NVIDIA backend: the Triton layer (kevolve-triton) is all it shares with it.
"""

from __future__ import annotations

import importlib.util

from kevolve.backend.classifier import Classifier
from kevolve.backend.profiler import Profiler, RooflineProfiler
from kevolve.target import MachineFacts, TargetSpec
from kevolve_triton.backend import TritonBackend, load_specs

from kevolve_amd.resources import LOWEST_IS_WORST

SPECS = ("amd_mi300", "amd_mi325", "amd_mi350", "amd_mi250")


def amd_specs() -> list[TargetSpec]:
    return load_specs("kevolve_amd", SPECS)


class AmdBackend(TritonBackend):
    distribution = "kevolve-amd"
    gpu_kind = "ROCm"
    visible_devices_env = "HIP_VISIBLE_DEVICES"
    lowest_is_worst = LOWEST_IS_WORST

    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        ok, why = super().usable(target)
        if ok and importlib.util.find_spec("triton.backends.amd") is None:
            return False, ("this Triton has no HIP backend (triton.backends.amd), so it cannot compile for "
                           f"{self.target_arch(target)}: install a Triton wheel that ships it (PyPI's does)")
        return ok, why

    def target_arch(self, target: TargetSpec) -> str:
        return str(target.facts.extra["gpu"]["arch"])

    def gpu_here(self, index: int = 0) -> str | None:
        """The gfx architecture of the ROCm GPU ``index`` this process sees (``gfx942``), or None without one."""
        import torch

        if not getattr(torch.version, "hip", None) or not torch.cuda.is_available() or index >= torch.cuda.device_count():
            return None
        return str(torch.cuda.get_device_properties(index).gcnArchName).split(":")[0]

    def profiler(self, target: TargetSpec) -> Profiler:
        from kevolve_amd.rocprof import RocprofProfiler

        rocprof = RocprofProfiler()
        return rocprof if rocprof.available()[0] else RooflineProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        from kevolve_amd.classifier import AmdClassifier

        return AmdClassifier()

    def gpu_target(self, target: TargetSpec):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("hip", self.target_arch(target), int(target.facts.extra["gpu"]["wavefront_size"]))

    def read_resources(self, compiled, facts: MachineFacts) -> dict[str, float]:
        from kevolve_amd.resources import read_resources

        return read_resources(compiled, facts)
