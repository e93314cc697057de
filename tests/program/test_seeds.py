"""A seed (parameters that won on another problem, from the store) starts a program's search only where the
recipe has its knobs here: a lowered program's knobs are named after its own nodes, so another program's winner
is no point of this one's space (on a lent H200 it displaced softmax_rows's catalog twin, 2.06x eager, with the
program at its defaults, 0.48x)."""

from __future__ import annotations

import random

from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.synthesis import base
from kevolve.synthesis.base import Context
from kevolve.synthesis.template import TemplateSynthesizer
from program_problems import PROBLEMS


def first_candidate(cpu, name: str, seeds: list[tuple[str, dict]]):
    context = Context(problem=KernelBenchProblem(PROBLEMS / f"{name}.py"), target=cpu.spec,
                      facts=cpu.backend.facts(cpu.spec), memory_op=base.SEED, rng=random.Random(0),
                      recipes=cpu.backend.recipes(cpu.spec), forms=cpu.language_forms(), seeds=seeds)
    return TemplateSynthesizer().propose(context)[0]


def test_another_programs_winner_does_not_seed_this_one(cpu):
    other = ("program.cpp", {"fuse.gelu": False, "gelu.threads": 2})  # knobs of linear_gelu_layernorm's nodes
    first = first_candidate(cpu, "relu_model", [other])
    assert first.note != "won on a similar problem", first.parameters


def test_a_winner_with_this_programs_knobs_seeds_it(cpu):
    default = first_candidate(cpu, "relu_model", [])
    seed = dict(default.parameters)
    knob = next(name for name, value in seed.items() if isinstance(value, int) and not isinstance(value, bool))
    seed[knob] = 1 if seed[knob] != 1 else 2
    first = first_candidate(cpu, "relu_model", [(default.recipe, seed)])
    assert first.note == "won on a similar problem" and first.parameters[knob] == seed[knob], first.parameters
