"""The mtia_sim backend: Triton kernels (the shared recipes of kevolve-triton, with this chip's knobs from its
TOML spec) run functionally through the Triton interpreter, and timed by the simulator: the toolchain's build
traces the kernel at the timing shape and the timing engine turns the accounts into cycles. The simulated time
is deterministic; the search ranks candidates by it (fitness: roofline floor / simulated time)."""

from __future__ import annotations

from kevolve.backend.classifier import Classifier
from kevolve.backend.estimator import Estimator
from kevolve.backend.profiler import Profiler
from kevolve.backend.toolchain import Toolchain
from kevolve.errors import TargetUnusableError
from kevolve.target import MachineFacts, TargetSpec
from kevolve_triton.backend import TritonBackend, load_specs

SPECS = ("mtia_sim", "mtia_sim_next")


def mtia_specs() -> list[TargetSpec]:
    return load_specs("kevolve_mtia_sim", SPECS)


class MtiaSimBackend(TritonBackend):
    distribution = "kevolve-mtia-sim"
    gpu_kind = "MTIA"

    def target_arch(self, target: TargetSpec) -> str:
        return target.name

    def gpu_here(self, index: int = 0) -> str | None:
        return None  # a simulator: there is never a device to run on

    def gpu_target(self, target: TargetSpec):
        raise NotImplementedError("mtia_sim kernels are simulated, not compiled for a device")

    def read_resources(self, compiled, facts: MachineFacts) -> dict[str, float]:
        raise NotImplementedError("mtia_sim kernels are simulated, not compiled for a device")

    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        if language != "triton":
            raise TargetUnusableError(f"{target.name} builds triton kernels, not {language!r}")
        from kevolve_mtia_sim.toolchain import MtiaSimToolchain

        return MtiaSimToolchain(target.name)

    def timing(self, target: TargetSpec) -> tuple[bool, str]:
        return False, (f"{target.name} is simulated: checked through the Triton interpreter, timed by the "
                       "mtia_sim timing engine (deterministic cycle counts), not on hardware")

    def estimator(self, target: TargetSpec) -> Estimator:
        from kevolve_mtia_sim.insight import SimEstimator

        return SimEstimator()

    def profiler(self, target: TargetSpec) -> Profiler:
        from kevolve_mtia_sim.insight import InsightProfiler

        return InsightProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        from kevolve_mtia_sim.classifier import MtiaClassifier

        return MtiaClassifier()
