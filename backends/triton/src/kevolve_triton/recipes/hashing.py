"""Feature hashing in Triton: the catalog's flat feature_hash (one table size, baked into the source) and
keyed_feature_hash (a KeyedJaggedTensor's ids into per-feature tables whose sizes arrive as a tensor).

Both mix each id the same way, on its 64-bit pattern as uint64 (wrapping multiplies, logical shifts); they differ
in where the divisor comes from, and so in how the remainder is made cheap.
"""

from __future__ import annotations

from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.ops import HASH_MULTIPLIERS, HASH_SHIFTS
from kevolve.problems.problem import Problem
from kevolve.synthesis.intdiv import magic_divisor
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.device import triton_facts
from kevolve_triton.recipes.common import (
    COMBINES,
    header,
    launch_args,
    launch_params,
    per_thread_ok,
    persistent_body,
    pow2_range,
    warp_size,
    with_defaults,
)

INT64_MAX = (1 << 63) - 1


def mix_rounds(indent: int) -> str:
    """The mix's multiply and xor-shift rounds on a ``(BLOCK,)`` uint64 block ``h``."""
    pad = " " * indent
    return "\n".join(f"{pad}h = h * tl.full((BLOCK,), {mult:#x}, tl.uint64)\n{pad}h = h ^ (h >> {shift})"
                     for mult, shift in zip(HASH_MULTIPLIERS, HASH_SHIFTS))


class TritonFeatureHash(Recipe):
    """bucket = (mix(id) & INT64_MAX) % num_buckets on the ids' 64-bit patterns as uint64 (wrapping multiplies,
    logical shifts). ``MOD`` picks the remainder: "div" is the compiler's 64-bit remainder (a software routine
    on GPUs), "magic" a multiply-high by the divisor's reciprocal, a shift and a multiply-subtract; a power of two
    is a mask either way. ``PROGRAMS`` 0 launches a program per ``BLOCK x ITEMS`` ids; a count (one to eight per
    SM) is a persistent grid whose programs stride over those tiles, one tile after another. On the H100 the
    persistent grids were 1-84% slower than one program a tile at 2^20 ids and 4-134% slower at 2^26, where one
    program a tile ran at the pace of a ``copy_`` of the same bytes
    (``bench/results/nvidia_h100/small_call_schedules.md``)."""

    name = "triton.feature_hash"
    language = "triton"
    families = ("feature_hash",)

    def supports(self, problem: Problem) -> bool:
        return problem.family == "feature_hash" and problem.dtype == torch.int64 \
            and int(problem.attrs.get("num_buckets", 0)) >= 1

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        return ScheduleSpace([
            Param("BLOCK", pow2_range(128, 4096), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                   d.OCCUPANCY_LIMITED: -1}, default=1024),
            Param("ITEMS", (1, 2, 4, 8), {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=1),
            Param("MOD", ("div", "magic"), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1}, default="magic"),
            Param("PROGRAMS", (0, *(k * facts.parallel_units for k in (1, 2, 4, 8))),
                  {d.LATENCY_BOUND: +1, d.OCCUPANCY_LIMITED: -1}, default=0),
            *launch_params(facts, self.families[0]),
        ], valid=lambda p: per_thread_ok(p["BLOCK"], p, lanes, 1, 16))

    @staticmethod
    def _modulo(num_buckets: int, how: str) -> str:
        if num_buckets & (num_buckets - 1) == 0:
            return f"h & {num_buckets - 1}"
        if how == "magic":
            m, s = magic_divisor(num_buckets)
            return f"h - (tl.umulhi(h, tl.full((BLOCK,), {m:#x}, tl.uint64)) >> {s}) * {num_buckets}"
        return f"h % {num_buckets}"

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        block, items, programs = params["BLOCK"], params["ITEMS"], params.get("PROGRAMS", 0)
        modulo = self._modulo(int(problem.attrs["num_buckets"]), params["MOD"])
        tiles = f"triton.cdiv(n, {block * items})"
        body = persistent_body(lambda start, indent: f"_hash_tile(ids_ptr, out_ptr, n, {start}, BLOCK, ITEMS)",
                               "tl.program_id(0).to(tl.int64) * BLOCK * ITEMS", "start",
                               "tl.program_id(0).to(tl.int64) * BLOCK * ITEMS, n, PROGRAMS * BLOCK * ITEMS")
        return header(problem, params) + f"""@triton.jit
def _hash_tile(ids_ptr, out_ptr, n, start, BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    for item in tl.static_range(ITEMS):
        offs = start + item * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        h = tl.load(ids_ptr + offs, mask=mask, other=0).to(tl.uint64, bitcast=True)
{mix_rounds(8)}
        h = h & tl.full((BLOCK,), {INT64_MAX:#x}, tl.uint64)
        bucket = {modulo}
        tl.store(out_ptr + offs, bucket.to(tl.int64, bitcast=True), mask=mask)


@triton.jit
def _feature_hash_kernel(ids_ptr, out_ptr, n, BLOCK: tl.constexpr, ITEMS: tl.constexpr, PROGRAMS: tl.constexpr):
{body}

def kernel(inputs, outputs):
    ids = inputs[0]
    out = outputs[0]
    n = ids.numel()
    if n == 0:
        return
    grid = ({f"min({tiles}, {programs})" if programs else tiles},)
    _feature_hash_kernel[grid](ids, out, n, BLOCK={block}, ITEMS={items}, PROGRAMS={programs}{launch_args(params)})
"""


class TritonKeyedFeatureHash(Recipe):
    """bucket = mix63(id) % num_buckets[f] for the ids of feature f, offsets[f * batch] to offsets[(f + 1) * batch].

    Each program hashes ``BLOCK`` consecutive ids. Almost every block lies inside one feature (a feature holds
    batch x pool ids, a block a few hundred), so the feature is found once per block and its divisor is a scalar;
    a block that spans features, and the last block, find each id's own by a binary search over the features'
    first offsets, ``CHUNK`` ids a step. Full one-feature blocks load and store without a mask, which keeps the
    accesses 16 bytes wide for any id count. The ids skip L1 and the lookups' loads are kept there (the first
    offsets and the tables are a few dozen sectors that every program reads, which the streamed ids evicted): at 2
    million ids on the H100, 14.5 against 15.2 us a call back to back, level for one call on a cold L2 and at 8-34
    million ids (``bench/notes/nvidia_h100_keyed_hash_cache.md``). Default block: 256 ids on two warps up to
    ``SMALL_BLOCK_FEATURES`` features, 2.3-2.8% faster than 512 on four at 2 million ids on the H100 and level at
    8-34 million; at 128 features 6-7% slower per call (``bench/notes/nvidia_h100_keyed_hash_blocks.md``).

    - ``LOOKUP`` "search": the program searches for its block's feature itself, ``ceil(log2(features))`` dependent
      loads before the divisor is known; "scan": it loads every feature's first offset at once (``SCAN`` a round,
      independent loads) and counts those at or before its block; "table": a first launch writes every block's
      feature (or -1 for one that spans features), so the hash kernel waits on one load. On the H100 the table
      took 2-16% off the device time per call against the search (26-512 features, 2-34 million ids;
      ``bench/notes/nvidia_h100_keyed_hash_points.md``), most where the search is longest; the scan 1-3% off
      the table at 128 and 256 features and 6-13% at 26, the table 18% off the scan at 512
      (``bench/notes/nvidia_h100_keyed_hash_lookup.md``). Default: the scan up to ``SCAN_FEATURES`` features.
    - ``MOD`` "div": the compiler's 64-bit remainder by the loaded size (a software routine on GPUs); "magic": the
      first launch also computes each feature's reciprocal m and shift s (exact for every 63-bit dividend, see
      the integer hashing passage), and the remainder is a multiply-high, a shift and a multiply-subtract: 2-10%
      off on the H100; "fp64": a float64 reciprocal of the size, one division where the size is loaded, gives a
      quotient within 2**12 / d + 1 of the true one, a second float64 quotient of that remainder brings it to
      within one divisor, and two compare-and-adds make it exact (sizes above 2**62 take h or h - d). It needs no
      first launch, which costs a single call on a cold L2 about 1.3 us: at 2 million ids 14.3-15.1 against
      14.9-15.5 us a call, level to 1% faster at 17-34 million ids (``bench/notes/nvidia_h100_keyed_hash_fp64.md``).
      Default: "fp64" with the scan; with the table, whose first launch runs anyway, "magic" (1% faster at 512
      features).
    - ``PDL`` (targets whose facts say ``pdl``: Hopper): the hash kernel is a programmatic dependent launch of the
      first one. It starts while the first launch runs, loads and mixes its ids, and waits for the tables only
      then; the first launch waits for the work before it and lets the hash kernel start at once. Without it
      the hash kernel starts after the first launch ends, a gap the small calls feel most: at 2 million ids
      the scan took 16.7 us a call without and 15.8 with (in a CUDA graph, on the H100). Under Triton's
      interpreter the file launches plainly.
    """

    name = "triton.keyed_feature_hash"
    language = "triton"
    families = ("keyed_hash",)
    dtypes = (torch.int64,)
    #: features per program of the first launch's reciprocal part, and blocks per program of its lookup part
    GROUP = 128
    #: feature counts up to which the default lookup is "scan": each program then loads the features' first
    #: offsets (kept in L1), and needs no table from the first launch
    SCAN_FEATURES = 256
    #: feature counts up to which the default block is 256 ids on two warps, not 512 on four: every program scans
    #: the features' first offsets, a cost per id that halving the block doubles, small for a few dozen features
    SMALL_BLOCK_FEATURES = 32
    #: ids per step of a block that spans features (or ends the ids): a step holds a divisor per id, and steps
    #: this narrow keep that path from setting the kernel's registers (with the reciprocals, 32 on sm_90 with them
    #: and 48 when the whole block took that path in one step; 44 with the float64 remainder at 512 ids on four
    #: warps, 50 at 256 on two)
    CHUNK = 256

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        lanes = warp_size(facts)
        features = problem.dims.get("features", 0)
        few, small = features <= self.SCAN_FEATURES, features <= self.SMALL_BLOCK_FEATURES
        pdl = [Param("PDL", (False, True), {d.LATENCY_BOUND: +1}, default=not few)] \
            if triton_facts(facts).get("pdl") else []  # the default scan and remainder need no first launch
        return ScheduleSpace([
            Param("BLOCK", pow2_range(256, 4096), {d.MEMORY_BOUND: +1, d.LATENCY_BOUND: +1, d.SPILL_BOUND: -1,
                                                   d.OCCUPANCY_LIMITED: -1}, default=256 if small else 512),
            Param("LOOKUP", ("search", "scan", "table"), {d.LATENCY_BOUND: +1, d.MEMORY_BOUND: +1},
                  default="scan" if few else "table"),
            Param("MOD", ("div", "magic", "fp64"), {d.COMPUTE_BOUND: +1, d.LATENCY_BOUND: +1},
                  default="fp64" if few else "magic"),  # the table's first launch makes the reciprocals too
            *pdl,
            *with_defaults(launch_params(facts, self.families[0]), num_warps=2 if small else 4),
        ], valid=lambda p: per_thread_ok(p["BLOCK"], p, lanes, 1, 16) and not (
            p.get("PDL") and not self._first_launches(p)))  # a dependent launch needs a first one

    @staticmethod
    def _first_launches(params: dict[str, Any]) -> bool:
        return params["MOD"] == "magic" or params["LOOKUP"] == "table"

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        block, pdl = params["BLOCK"], bool(params.get("PDL"))
        magic, table = params["MOD"] == "magic", params["LOOKUP"] == "table"
        text = (header(problem, params) + COMBINES
                + _KEYED_HELPERS.format(rounds=mix_rounds(4), int64_max=f"{INT64_MAX:#x}") + self._bucket(params["MOD"])
                + self._first_launch_kernel(magic, table, pdl)
                + _KEYED_KERNEL.format(lookup=self._lookup(params["LOOKUP"], pdl),
                                       wait=f"{_PDL_WAIT}\n" if pdl else "")
                + _KEYED_LAUNCHER.format(block=block, first_launch=self._first_launch(magic, table, pdl),
                                         tables=self._tables(magic, table), pdl=_PDL_LAUNCH if pdl else "",
                                         pdl_flag="pdl" if pdl else "False", chunk=min(block, self.CHUNK),
                                         launch=launch_args(params) + (", **dependent" if pdl else "")))
        return text.replace("import triton\n", "import os\n\nimport triton\n", 1) if pdl else text

    @staticmethod
    def _lookup(lookup: str, pdl: bool) -> str:
        """The full block's feature, and under PDL the wait for the first launch: the ids are loaded and mixed by
        then, and a search or scan of the offsets (which the first launch does not write) goes before it too."""
        find = _LOOKUP[lookup]
        if not pdl:
            return find
        return f"{_PDL_WAIT}\n{find}" if lookup == "table" else f"{find}\n{_PDL_WAIT}"

    @staticmethod
    def _tables(magic: bool, table: bool) -> str:
        """The tables' arguments: where the first launch makes no such table, the ids stand in (never read)."""
        return ("magic" if magic else "ids") + (", block_feature" if table else ", ids")

    @staticmethod
    def _bucket(mod: str) -> str:
        return f"""@triton.jit
def _bucket(h, f, num_buckets_ptr, magic_ptr, features):
    d = tl.load(num_buckets_ptr + f, eviction_policy="evict_last")
{_REMAINDERS[mod]}


"""

    def _first_launch_kernel(self, magic: bool, table: bool, pdl: bool) -> str:
        """The first launch's kernel: its programs first fill the reciprocal table, then the block table."""
        parts = ([f"_magic_numbers(num_buckets_ptr, magic_ptr, features, group, {self.GROUP})"] if magic else []) + (
            [f"_block_features(offsets_ptr, block_feature_ptr, n, batch, features, programs, group - magic_groups, "
             f"{self.GROUP}, BLOCK, STEPS)"] if table else [])
        if not parts:
            return ""
        body = (f"    if group < magic_groups:\n        {parts[0]}\n    else:\n        {parts[1]}\n" if len(parts) == 2
                else f"    {parts[0]}\n")
        dependents = ("    if PDL:  # wait for the work before this launch, then let the hash kernel start\n"
                      "        tl.extra.cuda.gdc_wait()\n"
                      "        tl.extra.cuda.gdc_launch_dependents()\n") if pdl else ""
        return ((_MAGIC_NUMBERS if magic else "") + (_BLOCK_FEATURES if table else "") + f"""@triton.jit
def _keyed_tables(offsets_ptr, num_buckets_ptr, magic_ptr, block_feature_ptr, n, batch, features, programs,
                  magic_groups, BLOCK: tl.constexpr, STEPS: tl.constexpr, PDL: tl.constexpr):
{dependents}    group = tl.program_id(0)
{body}

""")

    def _first_launch(self, magic: bool, table: bool, pdl: bool) -> str:
        if not (magic or table):
            return ""
        lines = ["magic = num_buckets.new_empty((2 * features,))",
                 f"magic_groups = triton.cdiv(features, {self.GROUP})"] if magic else ["magic_groups = 0"]
        lines += ["block_feature = ids.new_empty((programs,))",
                  f"table_groups = triton.cdiv(programs, {self.GROUP})"] if table else ["table_groups = 0"]
        lines.append(f"_keyed_tables[(magic_groups + table_groups,)](offsets, num_buckets, "
                     f"{self._tables(magic, table)}, n, batch, features,\n"
                     "                                                  programs, magic_groups, BLOCK=BLOCK, "
                     "STEPS=steps,\n                                                  "
                     f"PDL={'pdl' if pdl else 'False'}, num_warps=4{', **dependent' if pdl else ''})")
        return "".join(f"    {line}\n" for line in lines)


_LOOKUP = {"table": "        f = tl.load(block_feature_ptr + pid).to(tl.int32)",
           "search": "        f = _block_feature(offsets_ptr, first, n, batch, features, BLOCK, STEPS)",
           "scan": "        f = _scan_block_feature(offsets_ptr, first, n, batch, features, BLOCK, SCAN)"}

#: the remainder of h (below 2**63) by the feature's size d, per ``MOD``
_REMAINDERS = {
    "div": "    return h % d",
    "magic": """    m = tl.load(magic_ptr + f, eviction_policy="evict_last").to(tl.uint64, bitcast=True)
    s = tl.load(magic_ptr + features + f, eviction_policy="evict_last").to(tl.uint64, bitcast=True)
    q = (tl.umulhi(h.to(tl.uint64, bitcast=True), m) >> s).to(tl.int64, bitcast=True)
    return tl.where(d == 1, 0, h - q * d)""",
    # q within 4 * 2**-53 * h / d + 1 of h / d, so |r| <= 2**12 + d; the second quotient is floor(r / d) or one
    # off it, so r lands in [-d, 2d), exact in int64 while d <= 2**62
    "fp64": """    inv = 1.0 / d.to(tl.float64)
    q = (h.to(tl.float64) * inv).to(tl.int64)
    r = h - q * d
    q = tl.floor(r.to(tl.float64) * inv).to(tl.int64)
    r = r - q * d
    r = tl.where(r < 0, r + d, r)
    r = tl.where(r >= d, r - d, r)
    r = tl.where(d > 4611686018427387904, tl.where(h >= d, h - d, h), r)  # above 2**62, h < 2d
    return tl.where(d == 1, 0, r)  # h / 1 may round to 2**63, past int64""",
}

#: under PDL, where the hash kernel starts to read the first launch's tables
_PDL_WAIT = "        if PDL:  # from here on, the first launch's tables\n            tl.extra.cuda.gdc_wait()"

#: a dependent launch needs the compiled kernel (Triton's interpreter has no grid dependency control)
_PDL_LAUNCH = """    pdl = os.environ.get("TRITON_INTERPRET", "0") != "1"
    dependent = {"launch_pdl": True} if pdl else {}
"""

_KEYED_HELPERS = """@triton.jit
def _mix63(h, BLOCK: tl.constexpr):
    h = h.to(tl.uint64, bitcast=True)
{rounds}
    return (h & tl.full((BLOCK,), {int64_max}, tl.uint64)).to(tl.int64, bitcast=True)


@triton.jit
def _feature_of(offsets_ptr, at, batch, features, STEPS: tl.constexpr):
    \"\"\"The feature holding id position ``at`` (a scalar or a block of them): the last f with
    offsets[f * batch] <= at, so an empty feature, which starts where the next one does, is passed over.\"\"\"
    f = (at * 0).to(tl.int32)
    for k in tl.static_range(STEPS):
        probe = f + (1 << (STEPS - 1 - k))
        inside = probe < features
        start = tl.load(offsets_ptr + probe.to(tl.int64) * batch, mask=inside, other=0)
        f = tl.where(inside & (start <= at), probe, f)
    return f


@triton.jit
def _block_feature(offsets_ptr, first, n, batch, features, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    \"\"\"The feature of every id of the block starting at ``first``, or -1 where the block spans features.\"\"\"
    f = _feature_of(offsets_ptr, first, batch, features, STEPS)
    end = tl.load(offsets_ptr + (f + 1).to(tl.int64) * batch)
    return tl.where(end >= tl.minimum(first + BLOCK, n), f, -1)


@triton.jit
def _scan_block_feature(offsets_ptr, first, n, batch, features, BLOCK: tl.constexpr, SCAN: tl.constexpr):
    \"\"\"As _block_feature, by counting: the features after the first that start at or before the block's first
    id give its feature, and the block spans features where that count differs at its last id.\"\"\"
    last = tl.minimum(first + BLOCK, n) - 1
    at_first = (first * 0).to(tl.int32)
    at_last = at_first
    for g0 in range(1, features, SCAN):
        g = g0 + tl.arange(0, SCAN)
        inside = g < features
        start = tl.load(offsets_ptr + g.to(tl.int64) * batch, mask=inside, other=0, eviction_policy="evict_last")
        at_first += tl.reduce((inside & (start <= first)).to(tl.int32), 0, _add)
        at_last += tl.reduce((inside & (start <= last)).to(tl.int32), 0, _add)
    return tl.where(at_last == at_first, at_first, -1)


"""

_MAGIC_NUMBERS = """@triton.jit
def _magic_numbers(num_buckets_ptr, magic_ptr, features, group, GROUP: tl.constexpr):
    \"\"\"For d >= 2: m = ceil(2**(63 + l) / d) and s = l - 1, l the bit length of d - 1, so that
    floor(h / d) == umulhi(h, m) >> s for every h below 2**63 (d == 1 gives no usable m; _bucket returns 0 for
    it). A float64 quotient (relative error under 2**-51) less a margin puts m within 2**15 below
    floor(2**(63 + l) / d); the remainder 2**(63 + l) - m * d, exact on two 64-bit words, divided in float64
    again brings m to within 2 below it, and two conditional steps of d finish. A few dozen operations where a
    bit-by-bit long division takes 64 dependent steps, which the hash kernel would wait for.\"\"\"
    f = group * GROUP + tl.arange(0, GROUP)
    inside = f < features
    d = tl.maximum(tl.load(num_buckets_ptr + f, mask=inside, other=2), 2).to(tl.uint64, bitcast=True)
    zero = tl.full((GROUP,), 0, tl.uint64)
    x = d - 1
    s = zero
    for k in tl.static_range(6):  # s = l - 1, the highest set bit of d - 1, by halving
        shifted = x >> (32 >> k)
        s = tl.where(shifted != 0, s + (32 >> k), s)
        x = tl.where(shifted != 0, shifted, x)
    high = (zero + 1) << s  # the dividend 2**(63 + l) is high * 2**64
    estimate = high.to(tl.float64) / d.to(tl.float64) * 9223372036854775808.0
    m = (estimate.to(tl.uint64) - 8192) * 2
    low = m * d
    r_low = zero - low
    r_high = high - tl.umulhi(m, d) - (low != 0).to(tl.uint64)
    c = (r_high.to(tl.float64) * 18446744073709551616.0 + r_low.to(tl.float64)) / d.to(tl.float64)
    c = tl.maximum(c.to(tl.uint64), 1) - 1
    m += c
    low = c * d
    r_high = r_high - tl.umulhi(c, d) - (r_low < low).to(tl.uint64)
    r_low = r_low - low
    for _ in tl.static_range(2):
        over = (r_high != 0) | (r_low >= d)
        r_high = tl.where(over, r_high - (r_low < d).to(tl.uint64), r_high)
        r_low = tl.where(over, r_low - d, r_low)
        m = tl.where(over, m + 1, m)
    tl.store(magic_ptr + f, (m + (r_low != 0).to(tl.uint64)).to(tl.int64, bitcast=True), mask=inside)
    tl.store(magic_ptr + features + f, s.to(tl.int64, bitcast=True), mask=inside)


"""

_BLOCK_FEATURES = """@triton.jit
def _block_features(offsets_ptr, block_feature_ptr, n, batch, features, programs, group, GROUP: tl.constexpr,
                    BLOCK: tl.constexpr, STEPS: tl.constexpr):
    b = group * GROUP + tl.arange(0, GROUP)
    f = _block_feature(offsets_ptr, b.to(tl.int64) * BLOCK, n, batch, features, BLOCK, STEPS)
    tl.store(block_feature_ptr + b, f.to(tl.int64), mask=b < programs)


"""

_KEYED_KERNEL = """@triton.jit
def _keyed_hash_kernel(ids_ptr, offsets_ptr, num_buckets_ptr, magic_ptr, block_feature_ptr, out_ptr, n, batch,
                       features, BLOCK: tl.constexpr, STEPS: tl.constexpr, SCAN: tl.constexpr, PDL: tl.constexpr,
                       CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    first = pid.to(tl.int64) * BLOCK
    f = -1
    if first + BLOCK <= n:  # no mask: the loads and stores stay 16 bytes wide whatever n is
        offs = first + tl.arange(0, BLOCK)
        # the ids pass by L1 (".cg"), which keeps the first offsets and the tables that every program reads
        h = _mix63(tl.load(ids_ptr + offs, cache_modifier=".cg"), BLOCK)
{lookup}
        if f >= 0:  # the block lies in one feature: one divisor
            tl.store(out_ptr + offs, _bucket(h, f, num_buckets_ptr, magic_ptr, features))
    if f < 0:  # the last block, or one that spans features: CHUNK ids at a time, each finds its own feature
{wait}        for c in range(0, BLOCK, CHUNK):
            at = first + c + tl.arange(0, CHUNK)
            inside = at < n
            h = _mix63(tl.load(ids_ptr + at, mask=inside, other=0, cache_modifier=".cg"), CHUNK)
            bucket = _bucket(h, _feature_of(offsets_ptr, at, batch, features, STEPS), num_buckets_ptr, magic_ptr,
                             features)
            tl.store(out_ptr + at, bucket, mask=inside)


"""

_KEYED_LAUNCHER = """def kernel(inputs, outputs):
    ids, offsets, num_buckets = inputs
    out = outputs[0]
    n, features = ids.numel(), num_buckets.numel()
    if n == 0:
        return
    batch = (offsets.numel() - 1) // features
    steps = max(1, (features - 1).bit_length())
    scan = min(1024, triton.next_power_of_2(max(1, features - 1)))
    BLOCK = {block}
    programs = triton.cdiv(n, BLOCK)
{pdl}{first_launch}    _keyed_hash_kernel[(programs,)](ids, offsets, num_buckets, {tables}, out, n, batch, features,
                                    BLOCK=BLOCK, STEPS=steps, SCAN=scan, PDL={pdl_flag}, CHUNK={chunk}{launch})
"""


RECIPES = [TritonFeatureHash(), TritonKeyedFeatureHash()]
