"""Every Triton recipe, shared by all backends that run Triton kernels."""

from __future__ import annotations

from kevolve.synthesis.recipe import Recipe


def all_recipes() -> list[Recipe]:
    from kevolve_triton.recipes import index, matmul, pointwise, rows

    return [*pointwise.RECIPES, *rows.RECIPES, *matmul.RECIPES, *index.RECIPES]
