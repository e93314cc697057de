"""Searches on the AMD targets with no AMD GPU: candidates are compiled for the target's gfx architecture,
checked through the Triton interpreter and ranked by the static cost model, and the search acts on the AMD
diagnoses (a spilling kernel's children move the knobs that relieve VGPR pressure)."""

from __future__ import annotations

import random

import kevolve
import pytest
from amd_helpers import catalog_problem
from kevolve import diagnosis as d
from kevolve.plugins import get_manager
from kevolve.synthesis import base
from kevolve.synthesis.base import Candidate, Context, HistoryItem, Synthesizer
from kevolve.synthesis.template import TemplateSynthesizer
from kevolve_triton.recipes import all_recipes

OP = "softmax" if any(r.supports(catalog_problem("softmax")) for r in all_recipes()) else "relu"
DIMS = {"rows": 100, "cols": 300} if OP == "softmax" else {"n": 30_000}


def test_optimize_on_mi300_gives_a_correct_kernel_ranked_statically(harness):
    result = kevolve.optimize(OP, target="amd_mi300", budget=2, dims=DIMS, harness=harness)
    assert result.correct, [(n.parameters, n.evaluation.status, n.evaluation.reason) for n in result.nodes]
    e = result.best.evaluation
    r = e.resources
    assert r["vgprs"] > 0 and r[d.REGISTERS] == r["vgprs"] and "lds_bytes" in r and "sgprs" in r
    assert 0 < r[d.OCCUPANCY] <= 1 and r["waves_per_simd"] > 0 and r["programs_per_unit"] >= 1
    assert e.untimed == ("no ROCm GPU here: compiled for gfx942 and checked through the Triton interpreter; ranked by "
                         "the static cost model, not timed on hardware")
    assert not e.timings and not e.speedups and result.speedup == 0
    assert e.estimate["model"] == "triton-static-cost-model" and e.estimate["modeled_time_s"] > 0
    assert e.estimate["vgprs"] == r["vgprs"]  # the AMD counts travel with the estimate to the classifier
    assert e.fitness == pytest.approx(e.modeled_fraction) and 0 < e.fitness <= 1
    assert e.diagnosis is not None and e.diagnosis.kind in d.KINDS
    assert any("not timed on hardware" in line for line in e.timing_lines())


# --- the search moves away from spills --------------------------------------------------------------------------

#: the pointwise recipe at its widest tile on one wave, asking the compiler for 4 waves per SIMD (at most 128
#: VGPRs): 128 values per lane do not fit, it spills
SPILLING = {"BLOCK": 8192, "ITEMS": 1, "num_warps": 1, "waves_per_eu": 4}
RELU = {"n": 1 << 20}


def _spill_moves(params, child):
    """The knobs a child moved, each with whether it went the way that relieves VGPR pressure."""
    relieving = {"BLOCK": -1, "num_warps": +1, "waves_per_eu": -1}
    moves = {}
    for name, before in params.items():
        if child[name] != before:
            moves[name] = name in relieving and (child[name] - before) * relieving[name] > 0
    return moves


def test_template_inherit_from_a_spilling_parent_moves_responding_knobs():
    registered = get_manager().target("amd_mi300")
    problem = catalog_problem("relu", RELU)
    parent = HistoryItem(node_id=1, recipe="triton.pointwise", language="triton", parameters=SPILLING, fitness=0.1,
                         status="ok", diagnosis=d.Diagnosis(d.SPILL_BOUND, "spill-bound: 20 VGPR spills"))
    context = Context(problem=problem, target=registered.spec, facts=registered.spec.facts, memory_op=base.INHERIT,
                      rng=random.Random(0), n=10, parent=parent, diagnosis=parent.diagnosis, history=[parent],
                      recipes=registered.backend.recipes(registered.spec))
    children = TemplateSynthesizer().propose(context)
    assert len(children) == 10
    responsive = 0
    for child in children:
        moves = _spill_moves(SPILLING, child.parameters)
        assert moves, child.note
        if "after spill-bound" in child.note:
            assert len(moves) == 1 and all(moves.values()), (child.note, child.parameters)
            responsive += 1
    assert responsive >= 7, [c.note for c in children]


class SpillingSeed(Synthesizer):
    """The template synthesizer, except that the search's first candidate is the spilling point."""

    name = "amd-spilling-seed"

    def __init__(self) -> None:
        self.template = TemplateSynthesizer()

    def propose(self, context: Context) -> list[Candidate]:
        if context.memory_op != base.SEED:
            return self.template.propose(context)
        recipe = next(r for r in context.recipes if r.name == "triton.pointwise")
        return [Candidate(recipe.render(context.problem, SPILLING), "triton", dict(SPILLING), recipe.name, self.name,
                          "spilling seed")]


def test_a_search_starting_from_a_spill_moves_to_a_kernel_that_does_not(harness):
    get_manager().synthesizers.add("amd-spilling-seed", lambda option: SpillingSeed())
    result = kevolve.optimize("relu", target="amd_mi300", budget=3, dims=RELU, synthesizer="amd-spilling-seed",
                              harness=harness)
    first, *later = result.nodes
    assert first.parameters == SPILLING and first.evaluation.status == "ok"
    assert first.evaluation.diagnosis.kind == d.SPILL_BOUND and first.evaluation.resources[d.SPILL_BYTES] > 0
    assert later and all(n.parent_id == first.node_id for n in later), [(n.node_id, n.parent_id) for n in later]
    fixed = [n for n in later if n.evaluation.correct and n.evaluation.resources[d.SPILL_BYTES] == 0]
    assert fixed, [(n.note, n.evaluation.resources.get(d.SPILL_BYTES)) for n in later]
    assert all(n.evaluation.diagnosis.kind != d.SPILL_BOUND for n in fixed)
    assert result.best.evaluation.resources[d.SPILL_BYTES] == 0
    assert result.best.evaluation.fitness > first.evaluation.fitness
