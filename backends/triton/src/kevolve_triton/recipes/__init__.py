"""Every Triton recipe, shared by all backends that run Triton kernels."""

from __future__ import annotations

from kevolve.synthesis.recipe import Recipe


def all_recipes() -> list[Recipe]:
    from kevolve_triton.recipes import (
        aten_conv,
        aten_index,
        aten_matmul,
        aten_norm,
        aten_other,
        aten_pointwise,
        aten_reduction,
        attention,
        hashing,
        index,
        interaction,
        matmul,
        pointwise,
        rows,
    )

    return [*pointwise.RECIPES, *rows.RECIPES, *matmul.RECIPES, *index.RECIPES, *hashing.RECIPES,
            *interaction.RECIPES, *attention.RECIPES, *aten_pointwise.RECIPES, *aten_reduction.RECIPES,
            *aten_norm.RECIPES, *aten_matmul.RECIPES, *aten_conv.RECIPES, *aten_index.RECIPES, *aten_other.RECIPES]
