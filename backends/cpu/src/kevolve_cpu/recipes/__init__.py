"""Every recipe the CPU backend offers the template synthesizer."""

from __future__ import annotations

from kevolve.synthesis.recipe import Recipe


def all_recipes() -> list[Recipe]:
    from kevolve_cpu.recipes import cpp_pointwise

    return [*cpp_pointwise.RECIPES]
