"""Target attention in Triton: out[b] = sum over l < lengths[b] of softmax_l(q[b] . k[b, l] / sqrt(dim)) v[b, l].

Why a kernel of its own: written as framework ops this is a batched matrix-vector product, a masked softmax and
a second batched product; the two products read the whole padded history, and a compiler that calls a library
for them cannot skip the padding or fuse the softmax between them. Here one program owns one sample, walks only
its ``lengths[b]`` valid entries in ``CHUNK``-row tiles with an online softmax (running max and rescaled sum
and output), and writes the output once: each valid key and value row is read once, the padding never.
"""

from __future__ import annotations

from typing import Any

from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import (
    COMBINES,
    FLOAT_DTYPES,
    header,
    launch_args,
    launch_params,
    next_pow2,
    pow2_range,
    with_defaults,
)


class TritonTargetAttention(Recipe):
    """One program per sample; the whole dim (``next_power_of_2(dim)`` lanes) is one tile row, ``CHUNK`` history
    rows per step; scores, the running max and the sums in float32."""

    name = "triton.target_attention"
    language = "triton"
    families = ("attention",)
    dtypes = FLOAT_DTYPES

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = max(16, next_pow2(int(problem.dims.get("dim", 64))))
        # measured on an H100 at batch 16384, history 128 (mean length 64): 32-row steps on two warps, bfloat16
        # dim 128 233 us (16 rows 258, 64 rows 297; 4 warps 332, 8 warps 499), float32 dim 64 210 us
        return ScheduleSpace([
            Param("CHUNK", pow2_range(8, 128), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                               d.OCCUPANCY_LIMITED: -1}, default=32),
            *with_defaults(launch_params(facts, self.families[0]), num_warps=2),
        ], valid=lambda p: p["CHUNK"] * lanes <= 64 * 32 * p.get("num_warps", 4))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        chunk = params["CHUNK"]
        return header(problem, params) + COMBINES + f"""@triton.jit
def _target_attention(q_ptr, k_ptr, v_ptr, lengths_ptr, out_ptr, history, dim, scale,
                      LANES: tl.constexpr, CHUNK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, LANES)
    c_ok = c < dim
    n = tl.minimum(tl.load(lengths_ptr + b), history)
    q = tl.load(q_ptr + b * dim + c, mask=c_ok, other=0.0).to(tl.float32) * scale
    top = tl.full((), float("-inf"), tl.float32)
    total = tl.full((), 0.0, tl.float32)
    acc = tl.full((LANES,), 0.0, tl.float32)
    for l0 in range(0, n, CHUNK):
        rows = l0 + tl.arange(0, CHUNK)
        r_ok = rows < n
        at = (b * history + rows[:, None]) * dim + c[None, :]
        tile_ok = r_ok[:, None] & c_ok[None, :]
        k = tl.load(k_ptr + at, mask=tile_ok, other=0.0).to(tl.float32)
        score = tl.where(r_ok, tl.reduce(k * q[None, :], 1, _add), float("-inf"))
        new_top = tl.maximum(top, tl.reduce(score, 0, _max))
        p = tl.exp(score - new_top)
        rescale = tl.exp(top - new_top)
        v = tl.load(v_ptr + at, mask=tile_ok, other=0.0).to(tl.float32)
        acc = acc * rescale + tl.reduce(p[:, None] * v, 0, _add)
        total = total * rescale + tl.reduce(p, 0, _add)
        top = new_top
    out = tl.where(total > 0, acc / tl.where(total > 0, total, 1.0), 0.0)  # an empty history: zeros
    tl.store(out_ptr + b * dim + c, out.to(out_ptr.dtype.element_ty), mask=c_ok)


def kernel(inputs, outputs):
    query, keys, values, lengths = inputs
    out = outputs[0]
    batch, history, dim = keys.shape
    if batch == 0 or dim == 0:
        return
    lanes = max(16, triton.next_power_of_2(dim))
    _target_attention[(batch,)](query, keys, values, lengths, out, history, dim, 1.0 / dim ** 0.5,
                                LANES=lanes, CHUNK={chunk}{launch_args(params)})
"""


RECIPES = [TritonTargetAttention()]
