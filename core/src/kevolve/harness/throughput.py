"""Where a search's time goes: each evaluation's seconds per stage (build, check, time, profile), and the
session's candidates per hour with the share of its wall time each stage took.

The stages come from the progress an evaluation already reports (``on_stage``: "compile", "correctness ...",
"timing", "profile", from the parent and from the isolated workers alike), so measuring them adds no call to any
stage: :class:`StageClock` charges the time between two reports to the first one's stage. What the evaluations do
not account for (proposing candidates, the store, waiting for the device lock, a resumed session's gap) is the
session's "search and other".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

#: the stages of an evaluation, in the order they run ("wait": waiting for a build slot, a timing lane or the device)
STAGES = ("build", "check", "time", "profile", "wait")
#: what a worker reports while another holds its device (harness/worker.py): time that is not the candidate's
WAITING_FOR_DEVICE = "waiting for the device"
_WORDS = {"compile": "build", "build": "build", "scan": "check", "load": "check", "correctness": "check",
          "timing": "time", "profile": "profile", "waiting": "wait"}


def stage_of(report: str) -> str:
    """The stage a progress report belongs to ("correctness {'n': 8}" -> "check")."""
    return _WORDS.get(report.split(" ", 1)[0].strip(":"), "check")


class StageClock:
    """A progress callback that also times the stages: each report starts its stage's clock and stops the one
    before. It passes every report on to ``report``."""

    def __init__(self, report: Callable[[str], None] = lambda s: None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.report, self.clock = report, clock
        self.seconds: dict[str, float] = {}
        self._stage, self._since = "check", clock()

    def __call__(self, report: str) -> None:
        self._charge()
        self._stage = stage_of(report)
        self.report(report)

    def split(self) -> dict[str, float]:
        """Seconds per stage so far (the running stage charged up to now)."""
        self._charge()
        return {stage: round(self.seconds[stage], 6) for stage in STAGES if stage in self.seconds}

    def _charge(self) -> None:
        now = self.clock()
        self.seconds[self._stage] = self.seconds.get(self._stage, 0.0) + now - self._since
        self._since = now


def session_throughput(stage_seconds: Iterable[dict[str, float]], candidates: int, elapsed_s: float) -> dict[str, Any]:
    """Candidates per hour and each stage's share of the session's wall time; the rest is "search and other".
    Where evaluations overlapped (several at once, :mod:`kevolve.harness.executor`), their stages add up to more
    than the wall time: the shares are then of the evaluations' summed time, and ``overlap`` says how many ran at
    once on average."""
    totals = {stage: 0.0 for stage in STAGES}
    for split in stage_seconds:
        for stage, seconds in split.items():
            totals[stage] = totals.get(stage, 0.0) + seconds
    if not totals["wait"]:
        del totals["wait"]
    busy = sum(totals.values())
    whole = max(elapsed_s, busy)
    shares = {stage: seconds / whole for stage, seconds in totals.items()} if whole > 0 else {}
    if shares:
        shares["search and other"] = max(0.0, 1.0 - sum(shares.values()))
    return {"candidates": candidates, "elapsed_s": round(elapsed_s, 3),
            "candidates_per_hour": round(candidates * 3600 / elapsed_s, 1) if elapsed_s > 0 else None,
            "stage_seconds": {k: round(v, 3) for k, v in totals.items()},
            "shares": {k: round(v, 4) for k, v in shares.items()},
            "overlap": round(busy / elapsed_s, 2) if elapsed_s > 0 else None}


def throughput_line(throughput: dict[str, Any]) -> str:
    """``throughput: 412 candidates/hour (8 in 70 s); build 41%, check 22%, time 18%, profile 4%, search and
    other 15%``; empty when the session's wall time is unknown."""
    if not throughput.get("candidates_per_hour"):
        return ""
    shares = ", ".join(f"{stage} {share:.0%}" for stage, share in throughput["shares"].items())
    overlap = throughput.get("overlap") or 0.0
    at_once = f", {overlap:.1f} evaluations at once" if overlap > 1.05 else ""
    return (f"throughput: {throughput['candidates_per_hour']:.0f} candidates/hour ({throughput['candidates']} in "
            f"{throughput['elapsed_s']:.0f} s{at_once}); {shares}")
