"""An LLM synthesizer starts a program from its lowered kernel file: the first prompt shows it."""

from __future__ import annotations

import random

from program_problems import PROBLEMS

from kevolve.llm.prompt import build_prompt
from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.synthesis import base
from kevolve.synthesis.base import Context


def _context(cpu, name: str) -> Context:
    return Context(problem=KernelBenchProblem(PROBLEMS / f"{name}.py"), target=cpu.spec,
                   facts=cpu.backend.facts(cpu.spec), memory_op=base.SEED, rng=random.Random(0),
                   recipes=cpu.backend.recipes(cpu.spec), forms=cpu.language_forms())


def test_the_first_prompt_for_a_program_shows_its_lowered_kernel(cpu):
    user = build_prompt(_context(cpu, "linear_gelu_layernorm"), "cpp", 200_000).user
    assert "## A starting kernel: the program lowered onto this target's ATen kernels" in user
    assert "kevolve lowered program: linear_gelu_layernorm, 3 kernels" in user
    assert "kevolve_scratch_bytes" in user


def test_a_program_that_cannot_be_captured_gets_no_starting_kernel(cpu):
    user = build_prompt(_context(cpu, "data_dependent"), "cpp", 200_000).user
    assert "A starting kernel" not in user and "if x.sum() > 0" in user  # the reference is still shown
