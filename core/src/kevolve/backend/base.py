"""Backend: what serves one or more targets. It hands out the per-target pieces of the pipeline."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kevolve.target import MachineFacts, TargetSpec

if TYPE_CHECKING:
    from kevolve.backend.classifier import Classifier
    from kevolve.backend.estimator import Estimator
    from kevolve.backend.profiler import Profiler
    from kevolve.backend.runner import Runner
    from kevolve.backend.toolchain import Toolchain
    from kevolve.synthesis.recipe import Recipe


@dataclass(frozen=True)
class TimingLanes:
    """Where a backend's candidates can be checked and timed at the same time: one worker environment per lane
    (each placing its workers on one device, e.g. ``{"CUDA_VISIBLE_DEVICES": "1"}``), and whether a timed kernel
    needs the host quiet (its cores are the device: no build may run beside it)."""

    envs: tuple[dict[str, str], ...] = ({},)
    quiet_host: bool = True


class Backend(ABC):
    #: the pip distribution that ships this backend, named in errors
    distribution: str = ""

    @abstractmethod
    def usable(self, target: TargetSpec) -> tuple[bool, str]:
        """Whether candidates for ``target`` can be built and run here, and if not, why and what to do."""

    def facts(self, target: TargetSpec) -> MachineFacts:
        """Machine facts for the roofline. A backend that measures its machine overrides this."""
        return target.facts

    @abstractmethod
    def toolchain(self, target: TargetSpec, language: str) -> Toolchain:
        """The toolchain that builds ``language`` sources for ``target``."""

    @abstractmethod
    def runner(self, target: TargetSpec) -> Runner:
        """Loads built kernels and times them. Called inside the isolated worker process."""

    def worker_env(self, target: TargetSpec) -> dict[str, str]:
        """Environment variables the isolated worker processes for ``target`` must start with, for runtimes
        that read them once at import (e.g. ``TRITON_INTERPRET`` where no GPU is present). Called in the
        parent; workers with different environments come from different zygotes."""
        return {}

    def build_env(self, target: TargetSpec) -> dict[str, str]:
        """Environment variables the isolated build workers for ``target`` start with: by default those of the
        workers that run kernels (:meth:`worker_env`); a backend whose build needs its runtime in another mode
        says so here."""
        return self.worker_env(target)

    def timing_lanes(self, target: TargetSpec) -> TimingLanes:
        """Where candidates for ``target`` are timed at once (see :class:`TimingLanes`). The default: one lane,
        the host quiet while it times; a backend whose devices are not the host's cores says otherwise."""
        return TimingLanes()

    def timing(self, target: TargetSpec) -> tuple[bool, str]:
        """Whether kernels for ``target`` can be timed on this machine, and a line shown with every result: if
        not, the reason (e.g. a GPU target compiled and checked on a machine without the GPU); if so, what to
        keep in mind about the timings, or nothing (e.g. the device here is another model of the target's
        architecture, whose times do not describe the target's)."""
        return True, ""

    def estimator(self, target: TargetSpec) -> Estimator | None:
        """A static cost model ranking candidates when :meth:`timing` says no; None: such candidates are only
        checked for correctness."""
        return None

    def profiler(self, target: TargetSpec) -> Profiler:
        from kevolve.backend.profiler import RooflineProfiler

        return RooflineProfiler()

    def classifier(self, target: TargetSpec) -> Classifier:
        from kevolve.backend.classifier import RooflineClassifier

        return RooflineClassifier()

    def recipes(self, target: TargetSpec) -> list[Recipe]:
        """Recipes the template synthesizer may use for ``target``."""
        return []

    def write_standalone(self, target: TargetSpec, source: str, language: str, directory: Path) -> list[str]:
        """Write a standalone module for a kernel into ``directory`` (source, support files, a loader that
        needs no kevolve); returns the files written. Backends that cannot export raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot export standalone modules")

    def toolchain_version(self, target: TargetSpec) -> str:
        """Part of every store key, so results never leak across compiler versions."""
        return ";".join(f"{lang}={self.toolchain(target, lang).version()}" for lang in target.languages)
