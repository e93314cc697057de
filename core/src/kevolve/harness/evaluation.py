"""The structured outcome of evaluating one candidate. Failures are data, each with its evidence."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kevolve.diagnosis import Diagnosis

# statuses
OK = "ok"
COMPILE_ERROR = "compile_error"
RUNTIME_ERROR = "runtime_error"
WRONG = "wrong_result"
TIMEOUT = "timeout"
CRASH = "crash"
REJECTED = "rejected"
FAILED_STATUSES = (COMPILE_ERROR, RUNTIME_ERROR, WRONG, TIMEOUT, CRASH, REJECTED)


@dataclass
class Timing:
    """Seconds per call: median and spread (10th and 90th percentiles) over ``samples`` interleaved samples."""

    median: float
    p10: float
    p90: float
    samples: int

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        ordered = sorted(samples)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
        return cls(median=pick(0.5), p10=pick(0.1), p90=pick(0.9), samples=len(ordered))


@dataclass
class Speedup:
    """baseline time / kernel time: median of the per-sample ratios, with their 10th..90th percentile spread."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, baseline: list[float], kernel: list[float]) -> "Speedup":
        ratios = Timing.of([b / k for b, k in zip(baseline, kernel) if k > 0])
        return cls(median=ratios.median, low=ratios.p10, high=ratios.p90)


@dataclass
class Evaluation:
    status: str
    stage: str
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=dict)
    speedups: dict[str, Speedup] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    diagnosis: Diagnosis | None = None
    build_command: str = ""
    wall_s: float = 0.0

    @property
    def correct(self) -> bool:
        return self.status == OK

    @property
    def fitness(self) -> float:
        """eager time / kernel time; 0 when the kernel is wrong or was not timed."""
        if not self.correct or "eager" not in self.speedups:
            return 0.0
        return self.speedups["eager"].median

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["diagnosis"] = self.diagnosis.to_dict() if self.diagnosis else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Evaluation":
        data = dict(data)
        data["timings"] = {k: Timing(**v) for k, v in data.get("timings", {}).items()}
        data["speedups"] = {k: Speedup(**v) for k, v in data.get("speedups", {}).items()}
        data["diagnosis"] = Diagnosis.from_dict(data.get("diagnosis"))
        return cls(**data)
