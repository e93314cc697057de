"""The template synthesizer's recipe for any captured program: lower it onto the target's ATen kernels and write
one kernel file, searching each kernel's own knobs (``<node>.<knob>``), the fusion knobs (``fuse.<node>``) and,
where the target's kernels can, the fold knobs (``fold.<node>``: skip a host-side copy), the prologue knobs
(``prologue.<node>``: a pointwise producer computed inside the reduction that reads it) and the gather knobs
(``gather.<node>``: a small table's gather loaded by the pointwise kernels that read it).

A problem is captured and its graph built once per process (:func:`graph_for`); each candidate only re-lowers it
under its knobs and asks the target's recipes (the ones ``kevolve conformance`` checks) for each kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kevolve.backend.toolchain import LanguageForm
from kevolve.conformance.kernel import FAMILY, ConformanceProblem, KernelSpec
from kevolve.problems.problem import Problem
from kevolve.program.capture import CaptureError, capture
from kevolve.program.fuse import GATHER, PREFIX, PROLOGUE, fusable, gather_edges, prologue_edges
from kevolve.program.graph import Graph, Kernel, LoweringError, build
from kevolve.program.lower import FOLD, Program, lower
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

_graphs: dict[str, Graph | CaptureError] = {}


def graph_for(problem: Problem) -> Graph:
    """The problem's graph, built once per process; a capture or lowering failure is remembered and raised again."""
    key = problem.key()
    if key not in _graphs:
        try:
            _graphs[key] = build(capture(problem), problem.name)
        except CaptureError as exc:
            _graphs[key] = exc
    found = _graphs[key]
    if isinstance(found, CaptureError):
        raise found
    return found


class ProgramRecipe(Recipe):
    """Lowered programs in one language, from ``recipes`` (the target's ``aten_pointwise`` family)."""

    name = "program"
    families = ("custom",)

    def __init__(self, recipes: list[Recipe], language: str, assemble: Callable[[Program, list[str]], str]) -> None:
        self.language, self.assemble = language, assemble
        self.name = f"program.{language}"
        self.recipes = [r for r in recipes if FAMILY in r.families and r.language == language]
        self._facts: MachineFacts | None = None

    def kernel_recipe(self, kernel: KernelSpec) -> Recipe:
        problem = ConformanceProblem(kernel)
        for recipe in self.recipes:
            if (recipe.takes_gathers or not kernel.attrs.get("gathers")) and recipe.supports(problem):
                return recipe
        raise LoweringError(f"no {self.language} recipe writes {kernel.describe()}")

    def lowered(self, problem: Problem, params: dict[str, Any] | None = None) -> Program:
        program = lower(graph_for(problem), params)
        for step in program.steps:
            self.kernel_recipe(step.kernel)
        return program

    def why_not(self, problem: Problem) -> str:
        """Why this problem cannot be lowered here ("" when it can)."""
        try:
            self.lowered(problem)
            self.lowered(problem, {PREFIX + name: False for name in fusable(graph_for(problem))})
        except CaptureError as exc:
            return str(exc)
        return ""

    def supports(self, problem: Problem) -> bool:
        return problem.family in self.families and not self.why_not(problem)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        self._facts = facts
        graph = graph_for(problem)
        params = [Param(PREFIX + name, (True, False), default=True) for name in fusable(graph)]
        subspaces: dict[str, ScheduleSpace] = {}
        steps = self.lowered(problem, {p.name: False for p in params}).steps
        kernels = {step.name: step.kernel for step in steps}
        params += [Param(FOLD + node.name, (True, False), default=True) for node in graph.nodes
                   if isinstance(node, Kernel) and node.in_place
                   and node.spec.layout in self.kernel_recipe(kernels[node.name]).reads_in_place]
        params += [Param(PROLOGUE + producer, (True, False), default=True)
                   for producer, consumer in prologue_edges(graph).items()
                   if self._takes_prologue(problem, kernels[consumer], producer, [p.name for p in params])]
        params += [Param(GATHER + name, (True, False), default=True) for name in gather_edges(graph)
                   if self._drops(problem, GATHER + name, name, [p.name for p in params])]
        # every node that can be a kernel is one when nothing fuses: their knobs cover every fusion's kernels
        for step in steps:
            space = self.kernel_recipe(step.kernel).space(ConformanceProblem(step.kernel), facts)
            subspaces[step.name] = space
            params += [Param(f"{step.name}.{p.name}", p.choices, p.responds_to, p.default) for p in space.params]

        def valid(point: dict[str, Any]) -> bool:
            return all(space.valid(_sub(point, name)) for name, space in subspaces.items())

        return ScheduleSpace(params, valid)

    def _takes_prologue(self, problem: Problem, consumer: KernelSpec, producer: str, fusions: list[str]) -> bool:
        """Whether the consumer's recipe computes its elements from the producer's expression: its layout is one
        the recipe takes prologues for, the producer's leaves view at the consumer's shape (else the lowering
        keeps the producer), and a recipe writes the fused kernel (dtypes)."""
        return consumer.layout in self.kernel_recipe(consumer).takes_prologues and \
            self._drops(problem, PROLOGUE + producer, producer, fusions)

    def _drops(self, problem: Problem, knob: str, node: str, knobs: list[str]) -> bool:
        """Whether ``knob`` on takes ``node``'s kernel out of the program, with the other ``knobs`` off and on (a
        fused expression takes in its own producers), and a recipe writes every kernel then (for a gather, one
        that loads through an index: :meth:`kernel_recipe`)."""
        try:
            lowered = [self.lowered(problem, {**dict.fromkeys(knobs, False), knob: True}),
                       self.lowered(problem, {knob: True})]
        except LoweringError:
            return False
        return all(node not in {step.name for step in program.steps} for program in lowered)

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        program = self.lowered(problem, params)
        sources = []
        for step in program.steps:
            recipe = self.kernel_recipe(step.kernel)
            kernel_problem = ConformanceProblem(step.kernel)
            chosen = _sub(params, step.name)
            if self._facts is not None:
                chosen = recipe.space(kernel_problem, self._facts).fix(chosen)
            sources.append(recipe.render(kernel_problem, chosen))
        return self.assemble(program, sources)


def _sub(params: dict[str, Any], step: str) -> dict[str, Any]:
    prefix = f"{step}."
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def program_recipes(problem: Problem, recipes: list[Recipe], forms: dict[str, LanguageForm]) -> list[Recipe]:
    """The program recipes for ``problem`` in each language whose form can assemble a program file (none for a
    problem that is not a program)."""
    if problem.family != "custom":
        return []
    return [ProgramRecipe(recipes, language, form.assemble_program) for language, form in forms.items()
            if form.assemble_program is not None]


def starting_kernel(problem: Problem, recipes: list[Recipe], language: str, facts: MachineFacts,
                    forms: dict[str, LanguageForm]) -> str:
    """The program lowered onto the target's ATen kernels in ``language`` at the default knobs: the starting
    point an LLM synthesizer is shown for a program ("" when it cannot be lowered there)."""
    recipe = next(iter(program_recipes(problem, recipes, {k: v for k, v in forms.items() if k == language})), None)
    if recipe is None or not recipe.supports(problem):
        return ""
    return recipe.render(problem, recipe.space(problem, facts).default())
