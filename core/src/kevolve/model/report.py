"""What ``optimize_model`` did to each region and what the whole model costs before and after, measured in the
caller's process on the model's own inputs (the calls a user makes), round-robin so that noise hits every
contender alike."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from kevolve.harness.evaluation import Timing


@dataclass
class RegionResult:
    """One region: its share of the forward, what became of it and why, and its time before and after."""

    path: str
    share: float
    #: swapped, kept (its op was not faster), put back (the model disagreed with it, or its whole forward was
    #: slower with it), no correct kernel, not optimized (the search could not start, e.g. no recipe), not
    #: captured, not a region
    status: str
    reason: str = ""
    session: str = ""
    returns: str = "tensor"
    op: str = ""
    before: Timing | None = None
    after: Timing | None = None
    #: the kernel's speedup over eager as the search's harness measured it (its own worker, fresh inputs each
    #: round), beside ``before``/``after``: the region's time inside the model's forward in the caller's process,
    #: the module's and the op's (:func:`kevolve.model.regions.time_in_forward`)
    searched: float = 0.0

    @property
    def swapped(self) -> bool:
        return self.status == "swapped"

    def line(self) -> str:
        head = f"{self.path or 'the whole model'} ({self.share:.0%} of the forward): {self.status}"
        if self.before is not None and self.after is not None:
            head += (f", {self.before.median * 1e6:.1f} -> {self.after.median * 1e6:.1f} us "
                     f"({self.before.median / self.after.median:.2f}x"
                     + (f"; the harness measured {self.searched:.2f}x" if self.searched else "") + ")")
        if self.session:
            head += f", session {self.session[:12]}"
        return head + (f": {self.reason}" if self.reason else "")


@dataclass
class ModelReport:
    model: str
    target: str
    regions: list[RegionResult] = field(default_factory=list)
    #: contender (eager, kevolve, torch.compile, kevolve in torch.compile) -> seconds per forward
    end_to_end: dict[str, Timing] = field(default_factory=dict)

    def swapped(self) -> list[RegionResult]:
        return [r for r in self.regions if r.swapped]

    def summary(self) -> str:
        lines = [f"{self.model} on {self.target}: {len(self.swapped())} of {len(self.regions)} regions swapped"]
        lines += ["  " + r.line() for r in self.regions]
        eager = self.end_to_end.get("eager")
        for name, timing in self.end_to_end.items():
            ratio = f" ({eager.median / timing.median:.2f}x eager)" if eager and name != "eager" else ""
            lines.append(f"  {name}: {timing.median * 1e3:.3f} ms per forward "
                         f"[{timing.p10 * 1e3:.3f}..{timing.p90 * 1e3:.3f}]{ratio}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "target": self.target, "regions": [asdict(r) for r in self.regions],
                "end_to_end": {k: asdict(v) for k, v in self.end_to_end.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelReport:
        timing = lambda d: Timing(**d) if d else None
        rows = [RegionResult(**{**r, "before": timing(r["before"]), "after": timing(r["after"])})
                for r in data["regions"]]
        return cls(data["model"], data["target"], rows, {k: Timing(**v) for k, v in data["end_to_end"].items()})


def time_interleaved(thunks: dict[str, Callable[[], Any]], sync: Callable[[], None], rounds: int = 15,
                     sample_s: float = 0.01) -> list[Timing]:
    """Seconds per call of each thunk (in their order): after a warm-up call each, ``rounds`` samples per thunk
    taken round-robin, each of enough back-to-back calls to last ``sample_s``, the device synchronised around
    each sample (``sync``: the target runner's wait for queued device work)."""
    with torch.no_grad():
        lengths = {}
        for name, thunk in thunks.items():
            thunk()
            sync()
            began = time.perf_counter()
            thunk()
            sync()
            lengths[name] = max(1, min(1000, int(sample_s / max(time.perf_counter() - began, 1e-7))))
        samples: dict[str, list[float]] = {name: [] for name in thunks}
        for _ in range(rounds):
            for name, thunk in thunks.items():
                sync()
                began = time.perf_counter()
                for _ in range(lengths[name]):
                    thunk()
                sync()
                samples[name].append((time.perf_counter() - began) / lengths[name])
    return [Timing.of(samples[name]) for name in thunks]
