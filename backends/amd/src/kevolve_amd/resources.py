"""Resource usage of a kernel compiled for an AMD Instinct GPU, read from its AMDGCN assembly, and the
occupancy it allows.

Triton's HIP backend keeps the assembly (``compiled.asm["amdgcn"]``); LLVM writes each kernel's resource
usage into it twice, as comments (``; NumVgprs:``, ``; ScratchSize:``, ``; Occupancy:``) and in the code
object metadata (``.vgpr_count:``, ``.vgpr_spill_count:``, ``.private_segment_fixed_size:``). Triton's LDS is
dynamic (``compiled.metadata.shared``), so the compiler's own occupancy figure ignores it; the occupancy here
counts VGPRs, SGPRs, LDS and the CU's wave and barrier limits from the target's ``[facts.extra.gpu]`` table.

On gfx90a and later, VGPRs and AGPRs share one 512-entry file per SIMD lane: the count used is the total
(``TotalNumVgprs``). SGPR spills go to VGPR lanes, not memory; VGPR spills go to scratch (private memory,
per lane), which is what ``SPILL_BYTES`` reports.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kevolve import diagnosis as d
from kevolve.target import MachineFacts

#: (key, pattern) pairs read from the assembly; the first match of each wins
FIELDS = {
    "total_vgprs": r";\s*TotalNumVgprs:\s*(\d+)",
    "num_vgprs": r";\s*NumVgprs:\s*(\d+)",
    "num_agprs": r";\s*NumAgprs:\s*(\d+)",
    "vgpr_count": r"\.vgpr_count:\s*(\d+)",
    "agpr_count": r"\.agpr_count:\s*(\d+)",
    "total_sgprs": r";\s*TotalNumSgprs:\s*(\d+)",
    "sgpr_count": r"\.sgpr_count:\s*(\d+)",
    "vgpr_spill_count": r"\.vgpr_spill_count:\s*(\d+)",
    "sgpr_spill_count": r"\.sgpr_spill_count:\s*(\d+)",
    "scratch_size": r";\s*ScratchSize:\s*(\d+)",
    "private_segment": r"\.private_segment_fixed_size:\s*(\d+)",
    "group_segment": r"\.group_segment_fixed_size:\s*(\d+)",
    "lds_byte_size": r";\s*LDSByteSize:\s*(\d+)",
    "compiler_occupancy": r";\s*Occupancy:\s*(\d+)",
}


#: counts where the lowest launch of a kernel file is its worst (the others: the highest)
LOWEST_IS_WORST = ("waves_per_simd", "waves_per_simd_by_vgprs", "waves_per_simd_by_sgprs", "workgroups_per_cu_by_waves",
                   "workgroups_per_cu_by_lds", "workgroups_per_cu_by_barriers", "programs_per_unit", d.OCCUPANCY)
def parse_amdgcn(asm: str) -> dict[str, int]:
    """The resource fields LLVM reports for the (one) kernel in an AMDGCN assembly listing."""
    found = {}
    for key, pattern in FIELDS.items():
        match = re.search(pattern, asm)
        if match is not None:
            found[key] = int(match.group(1))
    if "total_vgprs" not in found and "vgpr_count" not in found and "num_vgprs" not in found:
        raise ValueError("the AMDGCN assembly reports no VGPR count (no `; TotalNumVgprs:` or `.vgpr_count:`)")
    return found


def usage(asm: str) -> dict[str, int]:
    """VGPRs (VGPR + AGPR file), SGPRs, spills and scratch/LDS bytes from the assembly."""
    f = parse_amdgcn(asm)
    vgprs = max(f.get("total_vgprs", 0), f.get("vgpr_count", 0), f.get("num_vgprs", 0) + f.get("num_agprs", 0))
    return {
        "vgprs": vgprs,
        "agprs": max(f.get("num_agprs", 0), f.get("agpr_count", 0)),
        "sgprs": max(f.get("total_sgprs", 0), f.get("sgpr_count", 0)),
        "vgpr_spills": f.get("vgpr_spill_count", 0),
        "sgpr_spills": f.get("sgpr_spill_count", 0),
        "scratch_bytes": max(f.get("scratch_size", 0), f.get("private_segment", 0)),
        "static_lds_bytes": max(f.get("group_segment", 0), f.get("lds_byte_size", 0)),
        "compiler_waves_per_simd": f.get("compiler_occupancy", 0),
    }


def _round_up(value: int, granule: int) -> int:
    return math.ceil(max(value, 1) / granule) * granule


def occupancy(vgprs: int, sgprs: int, lds_bytes: int, num_warps: int, gpu: dict[str, Any]) -> dict[str, float]:
    """Waves per SIMD and workgroups per CU under each limit, and what is achieved under all of them.

    A workgroup of ``num_warps`` waves is spread over the CU's SIMDs; the CU is treated as a pool of
    ``simds x waves-per-SIMD`` wave slots (as AMD's occupancy calculators do). Workgroups of more than one wave
    also take a barrier slot (``max_workgroups_per_cu``)."""
    simds = gpu["simds_per_cu"]
    max_waves = gpu["max_waves_per_simd"]
    by_vgprs = min(max_waves, gpu["vgprs_per_simd"] // _round_up(vgprs, gpu["vgpr_granularity"]))
    by_sgprs = min(max_waves, gpu["sgprs_per_simd"] // _round_up(sgprs, gpu["sgpr_granularity"])) if sgprs else max_waves
    waves_per_simd_limit = min(by_vgprs, by_sgprs)
    by_waves = min(simds * waves_per_simd_limit, gpu["max_waves_per_cu"]) // num_warps
    by_lds = gpu["lds_bytes_per_cu"] // lds_bytes if lds_bytes else gpu["max_waves_per_cu"]
    if lds_bytes > gpu["max_lds_bytes_per_workgroup"]:
        by_lds = 0
    by_barriers = gpu["max_workgroups_per_cu"] if num_warps > 1 else gpu["max_waves_per_cu"]
    workgroups = max(0, min(by_waves, by_lds, by_barriers))
    waves_per_simd = workgroups * num_warps / simds
    return {
        "waves_per_simd_by_vgprs": float(by_vgprs), "waves_per_simd_by_sgprs": float(by_sgprs),
        "workgroups_per_cu_by_waves": float(by_waves), "workgroups_per_cu_by_lds": float(by_lds),
        "workgroups_per_cu_by_barriers": float(by_barriers),
        "programs_per_unit": float(workgroups), "waves_per_simd": waves_per_simd,
        d.OCCUPANCY: waves_per_simd / max_waves,
    }


def read_resources(compiled: Any, facts: MachineFacts) -> dict[str, float]:
    gpu = facts.extra["gpu"]
    used = usage(compiled.asm["amdgcn"])
    num_warps = int(compiled.metadata.num_warps)
    lds = int(compiled.metadata.shared) + used["static_lds_bytes"]
    limit = gpu["max_lds_bytes_per_workgroup"]
    if lds > limit:
        raise ValueError(f"needs {lds} bytes of LDS (shared memory) per workgroup; {gpu['arch']} allows {limit}: "
                         "use smaller tiles (BLOCK sizes), fewer pipeline stages (num_stages) or a narrower dtype")
    threads = num_warps * gpu["wavefront_size"]
    if threads > gpu["max_workgroup_size"]:
        raise ValueError(f"num_warps={num_warps} makes {threads} work-items per workgroup; {gpu['arch']} allows "
                         f"{gpu['max_workgroup_size']} ({gpu['max_workgroup_size'] // gpu['wavefront_size']} waves "
                         "of 64): lower num_warps")
    spill = float(used["scratch_bytes"]) if used["scratch_bytes"] or used["vgpr_spills"] else 0.0
    if used["vgpr_spills"] and not spill:
        spill = 4.0 * used["vgpr_spills"]  # spilled, but the scratch size was not reported: 4 bytes each
    options = compiled.metadata
    return {
        d.REGISTERS: float(used["vgprs"]), d.SPILL_BYTES: spill,
        "vgprs": float(used["vgprs"]), "agprs": float(used["agprs"]), "sgprs": float(used["sgprs"]),
        "vgpr_spills": float(used["vgpr_spills"]), "sgpr_spills": float(used["sgpr_spills"]),
        "scratch_bytes": float(used["scratch_bytes"]), "lds_bytes": float(lds), "num_warps": float(num_warps),
        "num_stages": float(getattr(options, "num_stages", 0)),
        "waves_per_eu": float(getattr(options, "waves_per_eu", 0)),
        "compiler_waves_per_simd": float(used["compiler_waves_per_simd"]),
        **occupancy(used["vgprs"], used["sgprs"], lds, num_warps, gpu),
    }
