"""The NVIDIA backend: Triton kernels for Hopper and Ampere on the shared Triton layer. What is NVIDIA's own:
the sm_XX targets, resources read from the cubin, the Nsight Compute profiler and its classifier."""

from __future__ import annotations

import os

from kevolve import diagnosis as d
from kevolve.backend.classifier import Classifier
from kevolve.backend.profiler import Profiler, RooflineProfiler
from kevolve.target import MachineFacts, TargetSpec
from kevolve_triton.backend import TritonBackend, load_specs

SPECS = ("nvidia_h100", "nvidia_h200", "nvidia_a100")


def nvidia_specs() -> list[TargetSpec]:
    return load_specs("kevolve_nvidia", SPECS)


class NvidiaBackend(TritonBackend):
    distribution = "kevolve-nvidia"
    gpu_kind = "CUDA"
    lowest_is_worst = (d.OCCUPANCY, "programs_per_unit", "blocks_per_sm_by_registers",
                       "blocks_per_sm_by_shared_memory", "blocks_per_sm_by_warps", "blocks_per_sm_by_blocks")

    def target_arch(self, target: TargetSpec) -> str:
        return f"sm_{target.facts.extra['gpu']['arch']}"

    def gpu_here(self) -> str | None:
        import torch

        if getattr(torch.version, "hip", None) or not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"

    def profiler(self, target: TargetSpec) -> Profiler:
        """``KEVOLVE_NVIDIA_PROFILER``: "ncu" (default; hardware counters), "proton" (Triton's Proton: each
        launch's device time, lighter) or "roofline" (timing alone); an unavailable choice falls back to the
        roofline."""
        from kevolve_triton.proton import ProtonProfiler

        from kevolve_nvidia.ncu import NcuProfiler

        wanted = os.environ.get("KEVOLVE_NVIDIA_PROFILER", "ncu")
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
