"""The structured outcome of evaluating one candidate. Failures are data, each with its evidence."""

from __future__ import annotations

import math
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
#: the synthesizer produced no candidate to evaluate (an LLM answer without usable code, a failed request)
SYNTHESIS_ERROR = "synthesis_error"
FAILED_STATUSES = (COMPILE_ERROR, RUNTIME_ERROR, WRONG, TIMEOUT, CRASH, REJECTED, SYNTHESIS_ERROR)

#: a timing whose 90th-percentile sample is this many times its 10th was disturbed (another process took the
#: machine, a clock changed speed): its median is not a measurement of the kernel. Two timings of one kernel this
#: far apart (the search's and the final re-timing) say the same.
DISTURBED_SPREAD = 3.0


@dataclass
class Timing:
    """Seconds per call: median and spread (10th and 90th percentiles) over ``samples`` interleaved samples."""

    median: float
    p10: float
    p90: float
    samples: int
    #: every sample, in the order taken, kept so a report can draw the distribution (empty in older stores)
    values: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        ordered = sorted(samples)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
        return cls(median=pick(0.5), p10=pick(0.1), p90=pick(0.9), samples=len(ordered), values=list(samples))

    @property
    def spread(self) -> float:
        """90th over 10th percentile: 1 for a steady measurement."""
        return self.p90 / self.p10 if self.p10 > 0 else math.inf


@dataclass
class Speedup:
    """baseline time / kernel time: median of the per-sample ratios, with their 10th..90th percentile spread."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, baseline: list[float], kernel: list[float]) -> Speedup:
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
    #: why the kernel was not timed on hardware (empty when it was, or when timing was not asked for)
    untimed: str = ""
    #: what to keep in mind about the timings (e.g. timed on another model of the target's architecture)
    timing_note: str = ""
    #: baselines asked for but not timed, with the reason (e.g. max-autotune past its compile limit)
    untimed_baselines: dict[str, str] = field(default_factory=dict)
    #: the backend's static cost model when it was not timed (modeled seconds, roofline floor, breakdown)
    estimate: dict[str, Any] = field(default_factory=dict)
    #: seconds spent per stage (build, check, time, profile; kevolve.harness.throughput)
    stage_s: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.status == OK

    @property
    def spread(self) -> float:
        """The widest spread among the timed contenders (1 when nothing was timed)."""
        return max((t.spread for t in self.timings.values()), default=1.0)

    @property
    def disturbed(self) -> bool:
        return self.spread > DISTURBED_SPREAD

    @property
    def modeled_fraction(self) -> float:
        """Roofline floor / modeled time: how close the static cost model puts the kernel to the roofline."""
        from kevolve.backend.estimator import MODELED_TIME_S
        from kevolve.diagnosis import FLOOR_S

        modeled, floor = self.estimate.get(MODELED_TIME_S), self.estimate.get(FLOOR_S)
        if not isinstance(modeled, (int, float)) or not isinstance(floor, (int, float)) or modeled <= 0:
            return 0.0
        return floor / modeled

    @property
    def fitness(self) -> float:
        """eager time / kernel time when timed; the modeled fraction of the roofline when only a static cost
        model ranked it (a session never mixes the two); 0 when wrong or neither."""
        if not self.correct:
            return 0.0
        if "eager" in self.speedups:
            return self.speedups["eager"].median
        return self.modeled_fraction

    def resource_line(self) -> str:
        """What the build reported (registers, spills, shared memory, occupancy, ...); empty when nothing."""
        counts = [f"{k} {v:g}" for k, v in sorted(self.resources.items()) if isinstance(v, (int, float))]
        return "resources: " + ", ".join(counts) if counts else ""

    def timing_lines(self) -> list[str]:
        """The measured times and speedups, or why there are none and what the cost model says instead."""
        if self.disturbed:  # a median from such samples is no result: not printed as one
            lines = [f"timings unreliable, not shown: samples spread {self.spread:.1f}x between the 10th and 90th "
                     "percentile (a disturbed measurement)"]
        else:
            lines = self._measured_lines()
        for name, why in self.untimed_baselines.items():
            lines.append(f"  vs {name}: not timed: {why}")
        if self.untimed:
            lines.append(f"not timed on hardware: {self.untimed}")
        if self.timing_note and self.timings:
            lines.append(f"note: {self.timing_note}")
        if self.estimate:
            from kevolve.backend.estimator import MODEL, MODELED_TIME_S
            from kevolve.diagnosis import FLOOR_S

            lines.append(f"static estimate ({self.estimate.get(MODEL, 'cost model')}): "
                         f"{float(self.estimate.get(MODELED_TIME_S, 0)) * 1e6:.1f} us modeled, roofline floor "
                         f"{float(self.estimate.get(FLOOR_S, 0)) * 1e6:.1f} us ({self.modeled_fraction:.0%} of the "
                         "roofline); a ranking, not a measurement")
        return lines

    def _measured_lines(self) -> list[str]:
        lines = []
        if "kernel" in self.timings:
            k = self.timings["kernel"]
            lines.append(f"kernel {k.median * 1e6:.1f} us [{k.p10 * 1e6:.1f}..{k.p90 * 1e6:.1f}]")
        for name, sp in self.speedups.items():
            lines.append(f"  vs {name}: {self.timings[name].median * 1e6:.1f} us -> {sp.median:.2f}x "
                         f"[{sp.low:.2f}..{sp.high:.2f}]")
        return lines

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["diagnosis"] = self.diagnosis.to_dict() if self.diagnosis else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        data = dict(data)
        data["timings"] = {k: Timing(**v) for k, v in data.get("timings", {}).items()}
        data["speedups"] = {k: Speedup(**v) for k, v in data.get("speedups", {}).items()}
        data["diagnosis"] = Diagnosis.from_dict(data.get("diagnosis"))
        return cls(**data)


def evidence_text(evaluation: Evaluation, limit: int = 3000) -> str:
    """A failure's evidence as text a person or an LLM can act on: the build or run log verbatim (its head and
    tail when long), else the other evidence as JSON. Empty for a kernel that passed."""
    if evaluation.correct:
        return ""
    import json

    log = str(evaluation.evidence.get("log", "") or "")
    text = log or json.dumps({k: v for k, v in evaluation.evidence.items() if k != "response"}, default=str)
    if text in ("{}", ""):
        return ""
    return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2:]


def retiming_note(search: Evaluation, final: Evaluation) -> str:
    """When the final re-timing of the search's best kernel is far from the search's own timing of it, one of
    the two was disturbed, and neither is a result to print without saying so."""
    if "kernel" not in search.timings or "kernel" not in final.timings:
        return ""
    a, b = search.timings["kernel"].median, final.timings["kernel"].median
    if max(a, b) <= DISTURBED_SPREAD * min(a, b):
        return ""
    return (f"timings unreliable: the search timed this kernel at {a * 1e6:.1f} us, the final re-timing at "
            f"{b * 1e6:.1f} us; the machine was busy. Re-time it on an idle machine (`kevolve evaluate`)")
