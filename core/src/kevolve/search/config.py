"""How one session searches, as :func:`kevolve.optimize` takes it and the store keeps it with the session, so
that :func:`kevolve.resume` continues the same search."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SearchConfig:
    """The search settings of a session (the parameters of :func:`kevolve.optimize` of the same names).

    Args:
        budget: evaluated candidates before the search stops.
        time_budget_s: seconds before the search stops (None: no limit).
        target_speedup: the speedup over eager that ends the search early (None: none).
        search: the strategy, a key of :data:`kevolve.search.strategy.STRATEGIES`.
        synthesizer: ``NAME[:OPTION]``, or several joined by ``+``.
        baselines: what the best kernel is re-timed against at the end.
        batch: candidates proposed per expansion.
        stall: evaluated candidates without a 1% improvement before the search restarts.
        knowledge: whether the docs packs' passages and hints reach the synthesizer.
        skills: whether what earlier sessions learnt seeds this one.
    """

    budget: int = 30
    time_budget_s: float | None = None
    target_speedup: float | None = None
    search: str = "mcts"
    synthesizer: str = "template"
    baselines: tuple[str, ...] = ("eager",)
    batch: int = 2
    stall: int = 12
    knowledge: bool = True
    skills: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the store keeps: the keys sessions have always been stored with."""
        return {**asdict(self), "baselines": list(self.baselines)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        """A stored session's settings. A session written before a setting existed lacks its key and gets its
        default (``knowledge`` and ``skills`` came after the others); a key this version does not know is
        dropped, so a session stays readable whichever kevolve wrote it."""
        known = {f.name for f in fields(cls)} & set(data)
        values = {name: data[name] for name in known}
        if "baselines" in values:
            values["baselines"] = tuple(values["baselines"])
        return cls(**values)
