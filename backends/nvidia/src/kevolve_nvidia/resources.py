"""Resource usage of a kernel compiled for an NVIDIA GPU, read from its cubin, and the occupancy it allows.

``cuobjdump --dump-resource-usage`` (shipped with Triton's NVIDIA backend, or the CUDA toolkit's) reports
registers, stack, shared and local memory per function. Local memory in a Triton kernel is register spill.
Occupancy follows the CUDA occupancy rules from the target's ``[facts.extra.gpu]`` table.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

from kevolve import diagnosis as d
from kevolve.target import MachineFacts

USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def cuobjdump() -> str:
    try:
        import triton.backends.nvidia as nv

        bundled = os.path.join(os.path.dirname(nv.__file__), "bin", "cuobjdump")
        if os.path.exists(bundled):
            return bundled
    except ImportError:
        pass
    found = shutil.which("cuobjdump")
    if found is None:
        raise FileNotFoundError("cuobjdump not found: it ships with Triton's NVIDIA backend and the CUDA toolkit")
    return found


def cubin_usage(cubin: bytes) -> dict[str, int]:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        out = subprocess.run([cuobjdump(), "--dump-resource-usage", fh.name], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    match = USAGE.search(out)
    if match is None:
        raise ValueError(f"cuobjdump reported no resource usage:\n{out}")
    reg, stack, shared, local = (int(g) for g in match.groups())
    return {"registers": reg, "stack": stack, "static_shared": shared, "local": local}


def blocks_per_sm(registers: int, num_warps: int, shared: int, gpu: dict[str, Any]) -> dict[str, int]:
    """How many blocks of this kernel fit on one SM under each limit (registers, shared memory, warps)."""
    granularity = gpu["register_granularity"]
    regs_per_warp = math.ceil(max(registers, 1) * 32 / granularity) * granularity
    warps_by_regs = gpu["registers_per_sm"] // regs_per_warp
    by_shared = (gpu["shared_bytes_per_sm"] // (shared + gpu["reserved_shared_bytes_per_block"])
                 if shared else gpu["max_blocks_per_sm"])
    if shared > gpu["shared_bytes_per_block"]:
        by_shared = 0
    return {"registers": warps_by_regs // num_warps, "shared_memory": by_shared,
            "warps": gpu["max_warps_per_sm"] // num_warps, "blocks": gpu["max_blocks_per_sm"]}


def occupancy(registers: int, num_warps: int, shared: int, gpu: dict[str, Any]) -> dict[str, float]:
    """The theoretical occupancy of blocks of ``num_warps`` warps, the blocks per SM, and each limit's count."""
    limits = blocks_per_sm(registers, num_warps, shared, gpu)
    blocks = min(limits.values())
    return {d.OCCUPANCY: blocks * num_warps / gpu["max_warps_per_sm"], "programs_per_unit": float(blocks),
            **{f"blocks_per_sm_by_{name}": float(value) for name, value in limits.items()}}


def read_resources(compiled: Any, facts: MachineFacts) -> dict[str, float]:
    gpu = facts.extra["gpu"]
    usage = cubin_usage(compiled.asm["cubin"])
    num_warps = int(compiled.metadata.num_warps)
    shared = int(compiled.metadata.shared)
    if shared > gpu["shared_bytes_per_block"]:
        raise ValueError(f"needs {shared} bytes of shared memory per block; sm_{gpu['arch']} allows "
                         f"{gpu['shared_bytes_per_block']}: use smaller tiles or fewer pipeline stages (num_stages)")
    return {
        d.REGISTERS: float(usage["registers"]), d.SPILL_BYTES: float(usage["local"]),
        "stack_bytes": float(usage["stack"]), "shared_bytes": float(shared), "num_warps": float(num_warps),
        "num_stages": float(compiled.metadata.num_stages), **occupancy(usage["registers"], num_warps, shared, gpu),
    }
