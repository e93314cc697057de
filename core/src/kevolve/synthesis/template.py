"""The built-in, offline synthesizer: recipes plus schedule-space moves chosen by the memory operator.

- seed: each recipe's default, the docs packs' hinted point, the store's nearest-neighbour winners, then
  random points;
- inherit: mutate the parent, moving knobs that respond to the parent's diagnosis;
- siblings: cross the two best siblings (or mutate the best one);
- combine: cross the parent with the best node of the tree;
- restart: random points, preferring recipes the tree has tried least.
"""

from __future__ import annotations

from typing import Any

from kevolve.errors import NoRecipeError
from kevolve.synthesis import base
from kevolve.synthesis.base import Candidate, Context, HistoryItem, Synthesizer
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.tunable import TUNABLE, TunableRecipe


class TemplateSynthesizer(Synthesizer):
    name = "template"

    def propose(self, context: Context) -> list[Candidate]:
        recipes = [r for r in context.recipes if r.supports(context.problem) and r.language in context.target.languages]
        # a free-form parent (an LLM's kernel) that marks tunable knobs is a recipe of its own
        if context.parent is not None and context.parent.recipe == TUNABLE:
            recipes.append(TunableRecipe(context.parent.source, context.parent.language))
        from kevolve.program.catalog_twin import twin_recipes
        from kevolve.program.recipe import program_recipes

        # a program that one catalog op computes: that op's tuned recipes first (kevolve.program.catalog_twin)
        recipes += [r for r in twin_recipes(context.problem, context.recipes, context.ops, context.forms)
                    if r.language in context.target.languages]
        # a PyTorch program: lowered onto the target's ATen kernels (kevolve.program)
        programs = program_recipes(context.problem, context.recipes, context.forms)
        recipes += [r for r in programs if r.supports(context.problem)]
        if not recipes:
            why_not = next((r.why_not(context.problem) for r in programs), "")
            raise NoRecipeError(
                f"the template synthesizer has no recipe for {context.problem.name!r} (family "
                f"{context.problem.family!r}) on {context.target.name}"
                + (f" ({why_not})" if why_not else "") + ". Write a kernel and check it with "
                "`kevolve evaluate`, or use a synthesizer that writes free-form code."
            )
        points = self._points(context, {r.name: r for r in recipes})
        candidates = []
        for recipe, params, note in points[: context.n]:
            candidates.append(Candidate(
                source=recipe.render(context.problem, params), language=recipe.language, parameters=params,
                recipe=recipe.name, synthesizer=self.name, note=note,
            ))
        return candidates

    def _points(self, context: Context, recipes: dict[str, Recipe]) -> list[tuple[Recipe, dict[str, Any], str]]:
        rng, facts, problem = context.rng, context.facts, context.problem
        spaces = {name: r.space(problem, facts) for name, r in recipes.items()}
        points: list[tuple[Recipe, dict[str, Any], str]] = []

        def parent_space(item: HistoryItem | None):
            return (recipes[item.recipe], spaces[item.recipe]) if item and item.recipe in recipes else (None, None)

        op = context.memory_op
        if op == base.INHERIT and context.parent is not None:
            recipe, space = parent_space(context.parent)
            if space is not None:
                kind = context.diagnosis.kind if context.diagnosis else ""
                for _ in range(context.n):
                    params, note = space.mutate(context.parent.parameters, rng, kind)
                    points.append((recipe, params, note))
        elif op == base.SIBLINGS:
            ranked = sorted((h for h in context.history if h.recipe in recipes), key=lambda h: -h.fitness)
            if len(ranked) >= 2 and ranked[0].recipe == ranked[1].recipe:
                recipe, space = parent_space(ranked[0])
                for _ in range(context.n):
                    points.append((recipe, space.crossover(ranked[0].parameters, ranked[1].parameters, rng),
                                   f"crossover of siblings {ranked[0].node_id} and {ranked[1].node_id}"))
            elif ranked:
                recipe, space = parent_space(ranked[0])
                kind = ranked[0].diagnosis.kind if ranked[0].diagnosis else ""
                for _ in range(context.n):
                    params, note = space.mutate(ranked[0].parameters, rng, kind)
                    points.append((recipe, params, f"best sibling {ranked[0].node_id}: {note}"))
        elif op == base.COMBINE and context.parent is not None and context.best is not None:
            recipe, space = parent_space(context.parent)
            if space is not None and context.best.recipe == context.parent.recipe:
                for _ in range(context.n):
                    points.append((recipe, space.crossover(context.parent.parameters, context.best.parameters, rng),
                                   f"crossover of {context.parent.node_id} with best {context.best.node_id}"))
        elif op == base.SEED:
            for name, recipe in recipes.items():
                points.append((recipe, spaces[name].default(), "recipe default"))
                if context.hints:
                    points.append((recipe, spaces[name].prefer(context.hints), "docs-pack hints"))
            for recipe_name, params in context.seeds:
                # a seed is a point of this problem's space only where the recipe has its knobs here: a lowered
                # program's knobs are its own nodes' (another program's winner would start the search at defaults)
                if recipe_name in recipes and set(params) <= {p.name for p in spaces[recipe_name].params}:
                    points.insert(0, (recipes[recipe_name], spaces[recipe_name].fix(params), "won on a similar problem"))
        if len(points) < context.n:  # restart, or nothing the operator could build on
            tried = {name: 0 for name in recipes}
            for item in context.history:
                if item.recipe in tried:
                    tried[item.recipe] += 1
            order = sorted(recipes, key=lambda name: (tried[name], rng.random()))
            for i in range(context.n - len(points)):
                name = order[i % len(order)]
                points.append((recipes[name], spaces[name].sample(rng), "random restart point"))
        return points
