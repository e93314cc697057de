"""The timing engine against hand-computed cases, on the mtia_sim spec's numbers (specs/mtia_sim.toml):
64 PEs, SRAM 2000 B/cycle, LPDDR5 151.704 B/cycle, PE DMA port 128 B/cycle, local memory 384 KB at 740 B/cycle,
DPE 32 cycles per 32x32x32 bf16 block, SFU 16 results/cycle, program overhead 100 + 8 per load/store + first
access latency (SRAM 150, DRAM 500), launch 2700 cycles. Each case runs one program on each of the 64 PEs, so
the kernel's cycles are launch + one program's cycles, and every program shares the shared memories with 63
others."""

from __future__ import annotations

import random

import pytest
from kevolve_mtia_sim import engine
from kevolve_mtia_sim.engine import CHIP_FIELDS, PROGRAM_FIELDS, RESULT_FIELDS
from mtia_helpers import chip, program

LAUNCH = 2700
SRAM_RESIDENT = 1 << 20       # a footprint that fits the 256 MB SRAM
DRAM_FOOTPRINT = 1 << 30      # one that does not: first touches come from LPDDR5


def one_per_pe(p: list[int], footprint: int) -> dict[str, int]:
    return engine.simulate(chip().params, [(footprint, [p] * 64)])


def test_spec_numbers_are_what_the_hand_computations_assume():
    params = chip().params
    assert (params["pes"], params["sram_bytes_per_kcycle"], params["dram_bytes_per_kcycle"]) == (64, 2000000, 151704)
    assert (params["dpe_cycles_16"], params["sfu_lanes"], params["local_bytes"]) == (32, 16, 393216)
    assert (params["program_overhead_cycles"], params["dma_issue_cycles"], params["launch_cycles"]) == (100, 8, 2700)


def test_pure_dram_stream():
    # 8 MiB per PE streamed from LPDDR5: 64 x 8 MiB x 1000 / 151704 B per kcycle = 3538937.9 -> 3538938 cycles;
    # overhead 100 + 2 x 8 + 500 (DRAM latency) = 616
    r = one_per_pe(program(first_bytes=8 << 20, useful_bytes=8 << 20, dma_ops=2, local_bytes=8 << 20),
                   DRAM_FOOTPRINT)
    assert r["cycles"] == LAUNCH + 616 + 3538938 == 3542254
    assert r["dram_bytes"] == 64 * (8 << 20) and r["sram_bytes"] == 0
    achieved = r["dram_bytes"] / (r["cycles"] / 1.35e9)
    assert 0.99 * 204.8e9 < achieved <= 204.8e9  # the spec's 204.8 GB/s, less launch and latency
    assert max(("dma", "dpe", "sfu", "vector", "local"), key=lambda u: r[f"{u}_busy"]) == "dma"


def test_dpe_bound_matmul():
    # 512 native blocks (e.g. a 256x256x256 bf16 tile) x 32 cycles = 16384 DPE cycles; its 64 KB from SRAM take
    # ceil(65536 x 64 x 1000 / 2e6) = 2098; overhead 100 + 3 x 8 + 150 = 274
    r = one_per_pe(program(first_bytes=65536, dma_ops=3, dpe_blocks_16=512, dpe_macs=512 * 32768,
                           local_bytes=131072), SRAM_RESIDENT)
    assert r["dpe_busy"] == 64 * 16384 and r["dma_busy"] == 64 * 2098
    assert r["cycles"] == LAUNCH + 274 + 16384 == 19358
    flops = 2 * r["dpe_macs"] / (r["cycles"] / 1.35e9)
    assert 0.84 * 176.947e12 < flops < 176.947e12


def test_sfu_bound_exp():
    # 1M exp results on the SFU at 16 a cycle = 65536 cycles; vector 131072 / 32 = 4096; DMA 2098;
    # overhead 100 + 2 x 8 + 150 = 266
    r = one_per_pe(program(first_bytes=65536, dma_ops=2, sfu_elems=1 << 20, vector_ops=131072), SRAM_RESIDENT)
    assert r["sfu_busy"] == 64 * 65536 and r["vector_busy"] == 64 * 4096
    assert r["cycles"] == LAUNCH + 266 + 65536 == 68502


def test_spilling_tile():
    # 512 KB live in 384 KB: 128 KB out to SRAM and back = 262144 bytes, sharing SRAM with 63 other PEs:
    # ceil(262144 x 64 x 1000 / 2e6) = 8389 cycles, on top of overhead 266 and DMA 2098
    r = one_per_pe(program(first_bytes=65536, dma_ops=2, peak_local_bytes=512 * 1024), SRAM_RESIDENT)
    assert r["spill_bytes"] == 64 * 262144 and r["spill_cycles"] == 64 * 8389
    assert r["cycles"] == LAUNCH + 266 + 2098 + 8389 == 13453
    fits = one_per_pe(program(first_bytes=65536, dma_ops=2, peak_local_bytes=384 * 1024), SRAM_RESIDENT)
    assert fits["spill_bytes"] == 0 and fits["cycles"] == LAUNCH + 266 + 2098


def test_misaligned_dot_pays_for_padding():
    # a 48x48x48 dot pads to 2x2x2 native blocks, like 64x64x64: 8 blocks x 32 = 256 cycles for 42% of the MACs
    aligned = one_per_pe(program(dpe_blocks_16=8, dpe_macs=64 ** 3), SRAM_RESIDENT)
    misaligned = one_per_pe(program(dpe_blocks_16=8, dpe_macs=48 ** 3), SRAM_RESIDENT)
    assert aligned["cycles"] == misaligned["cycles"] == LAUNCH + 100 + 256


def test_waves_tail_and_list_scheduling():
    # 65 equal programs: the 65th runs alone after the first wave, with the SRAM to itself (capped by its port)
    p = program(first_bytes=65536, dma_ops=2)
    r = engine.simulate(chip().params, [(SRAM_RESIDENT, [p] * 65)])
    first_wave = 266 + 2098
    alone = 266 + max(-(-65536 * 1000 // 2000000), 65536 // 128)  # 33 vs the port's 512
    assert r["span_cycles"] == first_wave + alone and r["cycles"] == LAUNCH + first_wave + alone


def test_fabric_atomics_and_broadcast():
    # 800 cross-PE atomic elements at 4 cycles over 8 ports = 400 fabric cycles; re-read bytes cross the fabric
    r = engine.simulate(chip().params, [(SRAM_RESIDENT, [program(atomics=800)] + [program()] * 63)])
    assert r["fabric_cycles"] == 400 and r["cycles"] == LAUNCH + 100 + 400
    b = one_per_pe(program(retouch_bytes=65536, dma_ops=1), SRAM_RESIDENT)
    # SRAM ceil(65536 x 64 x 1000 / 2e6) = 2098 plus fabric ceil(65536 x 64 x 1000 / 1e6) = 4195
    assert b["dma_busy"] == 64 * (2098 + 4195) and b["fabric_bytes"] == 64 * 65536


def _random_launches(rng: random.Random) -> list[tuple[int, list[list[int]]]]:
    launches = []
    for _ in range(rng.randint(1, 3)):
        programs = [[rng.choice((0, rng.randint(0, 1 << 22))) for _ in PROGRAM_FIELDS]
                    for _ in range(rng.randint(1, 200))]
        launches.append((rng.choice((1 << 20, 1 << 30)), programs))
    return launches


def test_deterministic():
    launches = _random_launches(random.Random(5))
    assert engine.simulate(chip().params, launches) == engine.simulate(chip().params, launches)


def test_cpp_engine_agrees_exactly_with_python():
    if engine.native() is None:
        pytest.skip("the C++ timing engine (kevolve_mtia_sim._engine) is not built here: no compiler or CMake "
                    "at install time; the pure-Python engine serves")
    rng = random.Random(0)
    for target in ("mtia_sim", "mtia_sim_next"):
        params = chip(target).params
        for _ in range(30):
            launches = _random_launches(rng)
            assert engine.run(params, launches, prefer_native=True) == engine.simulate(params, launches)
    assert engine.native().simulate([params[k] for k in CHIP_FIELDS], []) == [0] * len(RESULT_FIELDS)
