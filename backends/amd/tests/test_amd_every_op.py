"""Every catalog op's default recipe point compiles for gfx942 (amd_mi300) and gfx950 (amd_mi350), with a
resource report the cost model and the classifier can use. Compile only, in this process (see
amd_helpers.compile_in_process); an op no Triton recipe covers yet is skipped with the reason."""

from __future__ import annotations

import pytest
from amd_helpers import catalog_problem, compile_in_process
from kevolve import diagnosis as d
from kevolve.plugins import get_manager

OPS = get_manager().ops.names()


@pytest.mark.parametrize("target", ["amd_mi300", "amd_mi350"])
@pytest.mark.parametrize("op", OPS)
def test_default_point_compiles(op, target):
    registered = get_manager().target(target)
    problem = catalog_problem(op)
    recipes = [r for r in registered.backend.recipes(registered.spec)
               if r.supports(problem) and r.language in registered.spec.languages]
    if not recipes:
        pytest.skip(f"no Triton recipe supports {op!r} (family {problem.family!r}, {problem.dtype}) yet")
    for recipe in recipes:
        params = recipe.space(problem, registered.spec.facts).default()
        reports = compile_in_process(recipe.render(problem, params), problem, target)
        for report in reports:
            assert report["vgprs"] > 0 and 0 < report[d.OCCUPANCY] <= 1 and report["programs_per_unit"] >= 1, \
                (recipe.name, params, report)
        if "num_warps" in params:  # a file may make helper launches of its own (a scan's carry pass)
            assert params["num_warps"] in [r["num_warps"] for r in reports], (recipe.name, params, reports)
