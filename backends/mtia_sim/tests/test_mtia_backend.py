"""The mtia_sim backend through kevolve's real pipeline: targets and aliases, the docs pack (its hints name
real knobs of the shared recipes), the classifier naming the bound unit with its numbers, and a short search
whose fitness comes from simulated cycles."""

from __future__ import annotations

import pytest
from kevolve import diagnosis as d
from kevolve.knowledge import Signals
from kevolve.plugins import get_manager
from kevolve_mtia_sim import engine
from kevolve_mtia_sim.classifier import MtiaClassifier
from kevolve_mtia_sim.insight import counters
from mtia_helpers import TARGET, catalog_problem, chip, program

FAMILIES = ("pointwise", "row_softmax", "row_norm", "row_reduce", "row_scan", "matmul", "gather", "embedding_bag")
DIMS = {"pointwise": {"n": 5000}, "matmul": {"m": 96, "n": 64, "k": 64}, "gather": {"rows": 40, "cols": 100, "k": 17},
        "embedding_bag": {"vocab": 500, "dim": 32, "bags": 24, "pool": 5}}
FAMILY_OP = {"pointwise": "add", "row_softmax": "softmax", "row_norm": "layer_norm", "row_reduce": "sum",
             "row_scan": "cumsum", "matmul": "matmul", "gather": "gather", "embedding_bag": "embedding_bag"}


def test_targets_aliases_and_facts():
    manager = get_manager()
    assert manager.target("mtia_v2_sim").spec.name == "mtia_sim"
    small, big = chip("mtia_sim"), chip("mtia_sim_next")
    assert (small.params["pes"], small.params["local_bytes"]) == (64, 384 * 1024)
    assert (big.params["pes"], big.params["local_bytes"]) == (72, 512 * 1024)
    facts = manager.target(TARGET).spec.facts
    assert facts.parallel_units == 64 and round(facts.peak_flops_for("bfloat16") / 1e12) == 177
    assert [m.name for m in facts.memory] == ["SRAM", "LPDDR5"]


def test_docs_pack_parses_and_hints_name_real_knobs():
    manager = get_manager()
    assert "mtia_sim" in manager.docs.packs and not manager.docs.errors
    registered = manager.target(TARGET)
    passages = [p for p in manager.knowledge.passages if p.pack == "mtia_sim"]
    assert len(passages) >= 8 and all(p.targets for p in passages)
    for passage in passages:
        for family in passage.families if passage.hints else ():
            problem = catalog_problem(FAMILY_OP[family], dims=DIMS.get(family))
            spaces = [r.space(problem, registered.spec.facts) for r in registered.backend.recipes(registered.spec)
                      if r.supports(problem)]
            knobs = {p.name: p.choices for s in spaces for p in s.params}
            for name, values in passage.hints.items():
                assert name in knobs, (passage.path, name, sorted(knobs))
                values = values if isinstance(values, list) else [values]
                assert set(values) & set(knobs[name]) or name == "MAX_BLOCK", (passage.path, name, values)
    # target-specific: never retrieved for another target
    assert not [p for p in manager.knowledge.retrieve(Signals(target="nvidia_h100", language="triton", family="pointwise"))
                if p.pack == "mtia_sim"]


def _classify(programs, footprint=1 << 20):
    c = chip()
    totals = engine.simulate(c.params, [(footprint, programs)])
    metrics = counters({f"sim_{k}": v for k, v in totals.items()}, c)
    return MtiaClassifier().classify(metrics, get_manager().target(TARGET).spec.facts, "mtia-sim")


@pytest.mark.parametrize("programs,kind,words", [
    ([program(first_bytes=65536, dma_ops=2, peak_local_bytes=600 * 1024)] * 64, d.SPILL_BOUND, "600 KB"),
    ([program(first_bytes=1 << 20, dma_ops=2)] * 8, d.OCCUPANCY_LIMITED, "8 of 64 PEs"),
    ([program(first_bytes=1024, dma_ops=2)] * 640, d.LATENCY_BOUND, "program overhead"),
    ([program(first_bytes=1 << 20, useful_bytes=1 << 20, dma_ops=2)] * 64, d.MEMORY_BOUND, "SRAM"),
    ([program(first_bytes=4096, dma_ops=2, dpe_blocks_16=512, dpe_macs=512 * 4096)] * 64, d.COMPUTE_BOUND,
     "DPE efficiency 12%"),
    ([program(first_bytes=4096, dma_ops=2, vector_ops=1 << 20, slow_elems=1 << 14)] * 64, d.COMPUTE_BOUND,
     "vector sequences"),
])
def test_classifier_names_the_bound_unit_with_numbers(programs, kind, words):
    diagnosis = _classify(programs)
    assert diagnosis.kind == kind, diagnosis.summary
    assert words in diagnosis.summary and "cycles" in diagnosis.summary


def test_optimize_ranks_by_simulated_cycles(tmp_path):
    import kevolve

    result = kevolve.optimize("softmax", target="mtia_sim", budget=2, seed=0, dims={"rows": 64, "cols": 256},
                              store=str(tmp_path / "store.sqlite"))
    assert result.correct
    evaluation = result.best.evaluation
    assert "simulated" in evaluation.untimed
    estimate = evaluation.estimate
    assert estimate["model"] == "mtia-sim" and estimate["sim_cycles"] > 0 and 0 < evaluation.fitness <= 1
    assert estimate["modeled_time_s"] == pytest.approx(estimate["sim_cycles"] / 1.35e9)
    assert evaluation.diagnosis.kind in d.KINDS and "cycles" in evaluation.diagnosis.summary
    assert {"pe_utilization", "dma_busy_cycles", "sfu_stall_cycles", "sram_bandwidth_gbps"} <= set(estimate)
    times = [n.evaluation.estimate["modeled_time_s"] for n in result.nodes if n.evaluation.correct]
    assert evaluation.estimate["modeled_time_s"] == min(times)


HUGE_TILE = """
import triton
import triton.language as tl


@triton.jit
def _exp(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def kernel(inputs, outputs):
    n = outputs[0].numel()
    _exp[(triton.cdiv(n, 262144),)](inputs[0], outputs[0], n, BLOCK=262144)
"""


def test_tiles_past_the_hard_limit_do_not_build(tmp_path):
    from kevolve.errors import CompileError

    registered = get_manager().target(TARGET)
    toolchain = registered.backend.toolchain(registered.spec, "triton")
    problem = catalog_problem("exp", dims={"n": 1 << 19})
    with pytest.raises(CompileError, match="local memory") as info:
        toolchain.build(HUGE_TILE, tmp_path / "huge", problem)
    assert "use smaller tiles" in str(info.value) and "TRITON_INTERPRET=1" in info.value.repro
    fine = toolchain.build(HUGE_TILE.replace("262144", "4096"), tmp_path / "fine", problem)
    assert fine.resources["sim_cycles"] > 0 and fine.resources["programs"] == 128
