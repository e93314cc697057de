"""Several synthesizers sharing one search, e.g. ``anthropic:MODEL+template``.

The division of labour follows what each is good at. Structural moves (first kernels, restarts, improving a
free-form kernel) go to the synthesizers that write free-form code; tuning a kernel with schedule parameters
(a recipe's point, or an LLM kernel that marks tunable knobs) goes to the template synthesizer. Seeds come from
every part, so the tree starts with both kinds of kernel.
"""

from __future__ import annotations

from kevolve.errors import NoRecipeError
from kevolve.synthesis import base
from kevolve.synthesis.base import Candidate, Context, Synthesizer

TUNING_OPS = (base.INHERIT, base.SIBLINGS, base.COMBINE)


class MixedSynthesizer(Synthesizer):
    def __init__(self, parts: list[Synthesizer], tuners: set[str]) -> None:
        self.parts = parts
        #: names of the parts that tune parameters rather than write code
        self.tuners = tuners
        self.name = "+".join(p.name for p in parts)
        #: parts that found no recipe for the problem: they propose nothing, so their patience is not the search's
        self._without_recipe: set[str] = set()

    @property
    def patience(self) -> int:  # type: ignore[override]
        """The most patient part that can propose: with no recipe for the problem, the template's 20 empty
        rounds would all fall on (and be paid by) the LLM."""
        able = [p for p in self.parts if p.name not in self._without_recipe] or self.parts
        return max(p.patience for p in able)

    def stop_reason(self) -> str:
        reasons = [p.stop_reason() for p in self.parts]
        return "; ".join(reasons) if all(reasons) else ""

    def replay(self, candidate: Candidate) -> None:
        for part in self.parts:
            part.replay(candidate)

    def propose(self, context: Context) -> list[Candidate]:
        active = [p for p in self.parts if not p.stop_reason()]
        if context.memory_op == base.SEED:
            out: list[Candidate] = []
            for i, part in enumerate(active):
                share = max(1, (context.n - len(out)) // (len(active) - i))
                try:
                    out += part.propose(_with_n(context, share))
                except NoRecipeError:  # a problem no recipe covers: the code-writing parts seed it alone
                    if len(active) == 1:
                        raise
                    self._without_recipe.add(part.name)
            return out
        tunable = context.parent is not None and bool(context.parent.recipe) and context.memory_op in TUNING_OPS
        preferred = [p for p in active if (p.name in self.tuners) == tunable] or active
        return preferred[0].propose(context) if preferred else []


def _with_n(context: Context, n: int) -> Context:
    from dataclasses import replace

    return replace(context, n=n)
