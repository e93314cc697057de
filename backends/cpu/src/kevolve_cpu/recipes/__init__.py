"""Every recipe the CPU backend offers the template synthesizer."""

from __future__ import annotations

from kevolve.synthesis.recipe import Recipe


def all_recipes() -> list[Recipe]:
    from kevolve_cpu.recipes import (
        cpp_aten,
        cpp_aten_conv,
        cpp_aten_index,
        cpp_aten_matmul,
        cpp_aten_norm,
        cpp_aten_other,
        cpp_aten_reduction,
        cpp_attention,
        cpp_index,
        cpp_interaction,
        cpp_matmul,
        cpp_pointwise,
        cpp_rows,
        numba_recipes,
    )

    return [*cpp_pointwise.RECIPES, *cpp_index.RECIPES, *cpp_interaction.RECIPES, *cpp_attention.RECIPES,
            *cpp_matmul.RECIPES, *cpp_rows.RECIPES, *numba_recipes.RECIPES, *cpp_aten.RECIPES,
            *cpp_aten_reduction.RECIPES, *cpp_aten_norm.RECIPES, *cpp_aten_matmul.RECIPES, *cpp_aten_conv.RECIPES,
            *cpp_aten_index.RECIPES, *cpp_aten_other.RECIPES]
