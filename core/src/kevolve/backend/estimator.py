"""Estimator: a static cost model for targets whose kernels cannot be timed here (no device, a simulator
without a clock). It ranks candidates; it never poses as a measurement: evaluations it serves carry the
reason they were not timed, and their fitness is the modeled fraction of the roofline floor, not a speedup."""

from __future__ import annotations

from abc import ABC, abstractmethod

from kevolve import diagnosis as d
from kevolve.backend.profiler import ProfileRequest

#: metric key of the modeled seconds per call (``TIME_S`` stays reserved for measured times)
MODELED_TIME_S = "modeled_time_s"
#: metric key naming the cost model
MODEL = "model"


class Estimator(ABC):
    name: str = ""

    @abstractmethod
    def estimate(self, request: ProfileRequest) -> d.Metrics:
        """Modeled metrics for one kernel. ``request.time_s`` is 0 and ``request.run`` does nothing: there is
        no clock. The result must hold :data:`MODELED_TIME_S`, :data:`MODEL` and
        :data:`kevolve.diagnosis.FLOOR_S`; its time-derived metrics (``TIME_S``, achieved bandwidth, ...) are
        the modeled ones, for the classifier."""
