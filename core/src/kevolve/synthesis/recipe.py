"""Recipes: per op family and language, turn (problem, schedule parameters) into kernel source."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from kevolve.problems.problem import Problem
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts


class Recipe(ABC):
    name: str = ""
    language: str = ""
    families: tuple[str, ...] = ()
    #: the element types the recipe has code for (empty: any); recipes with further limits override supports
    dtypes: tuple[torch.dtype, ...] = ()
    #: conformance layouts (:mod:`kevolve.conformance.spec`) whose host-side copies this recipe's kernels can
    #: skip, reading the tensor in place through a strided view: a lowered program then offers a ``fold.<node>``
    #: knob that drops the copy kernel (:mod:`kevolve.program.lower`)
    reads_in_place: tuple[str, ...] = ()
    #: conformance layouts whose kernels can compute their input's elements from a pointwise expression of
    #: several inputs (``KernelSpec.expr``, ``attrs["element"]`` the dtype it stands for): a lowered program then
    #: offers a ``prologue.<node>`` knob that fuses the pointwise producer into the kernel
    takes_prologues: tuple[str, ...] = ()
    #: whether its pointwise kernels can load an input through an index (``attrs["gathers"]``: input name ->
    #: [table input name, wrap]): a lowered program then offers a ``gather.<node>`` knob that drops the gather's
    #: kernel and buffer (:mod:`kevolve.program.fuse`); only recipes with it are given such kernels.
    takes_gathers: bool = False

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and (not self.dtypes or problem.dtype in self.dtypes)

    @abstractmethod
    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        """The knobs for this problem on a machine with these facts."""

    @abstractmethod
    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        """Kernel source in ``self.language`` following the kernel file contract of the backend."""
