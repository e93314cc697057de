"""ATen conformance kernels in Triton: sorting/selection and data movement (:mod:`kevolve.conformance.ops.other`).

The same :class:`~kevolve.conformance.kernel.KernelSpec` as the C++ recipes (``cpp_aten_other``): the op's
tensors, then one int64 tensor of packed integer parameters (k, descending, shifts, dims, ...) that the kernels
read with ``tl.load``, so one kernel serves every combination and the Python launcher never reads a value.

Two kernel kinds, one renderer each:

- lines (``sort``, ``topk``, ``kthvalue``): one program per line of the (outer, L, inner) view. Every element
  gets an int32 key ordered like PyTorch's comparator (NaN greatest, -0.0 equal to 0.0; negated when the op
  orders largest first) and its rank among the (key, position) pairs, counted tile by tile; elements whose
  rank falls in the written window are scattered to it. That is the answer whenever the order is unique (no
  two keys tie, or a stable sort). Where keys tie and PyTorch's CPU kernel is not stable, its order of ties
  is libstdc++'s (``sort``'s introsort, ``partial_sort``, ``nth_element``) or ATen's quickselect, so the
  program replays that algorithm step by step on the line held in registers (a scalar loop: slow, and taken
  only by the lines that tie, and by ``topk(sorted=False)`` on ATen's ``nth_element`` path, whose output
  order is the algorithm's arrangement).
- moves (``cat``, ``flip``, ``roll``, ``tril``): every output element reads one input element (or is zero),
  its coordinates mapped per op; ``cat`` launches once per input tensor into its slice of the output.

Values are loaded in their storage dtype and written back unchanged (the position decides which element), keys
are computed in float32, so bfloat16 and float16 lines sort by their widened values.
"""

from __future__ import annotations

from typing import Any

from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.common import header, launch_args, launch_params
from kevolve_triton.recipes.host import DTYPE_NAME, POW2, host_functions

#: storage dtypes the selection kernels order (their keys are float32 bit patterns)
LINE_DTYPES = ("float32", "bfloat16", "float16")
#: storage dtypes the data-movement kernels copy
MOVE_DTYPES = ("float32", "bfloat16", "float16", "int64", "int32", "bool")
#: dimensions a data-movement kernel indexes (as the C++ kernels)
MAX_RANK = 8
#: packed parameters per selection op (as the table packs them)
LINE_PARAMS = {"sort": 3, "topk": 3, "kthvalue": 1}
MOVE_OPS = ("cat", "flip", "roll", "tril")


def _kernel(problem: Problem) -> Any:
    return problem.kernel  # type: ignore[attr-defined]


def _owns(problem: Problem, layouts: tuple[str, ...], dtypes: tuple[str, ...]) -> bool:
    """A conformance kernel of one of ``layouts`` whose data tensors are of ``dtypes`` (the parameters int64)."""
    kernel = conformance_kernel(problem, layouts)
    if kernel is None or not kernel.inputs:
        return False
    *data, (_, last) = kernel.inputs
    return last == "int64" and bool(data) and all(d == data[0][1] and d in dtypes for _, d in data)


# --------------------------------------------------------------------------------------------------------------
# selection: the device code (the same text in every lines kernel file)

_LINE_DEVICE = '''
@triton.jit
def _kv_key(v, DESC: tl.constexpr):
    """int32 keys ordered as PyTorch orders floats: NaN greatest (one key for every NaN), -0.0 equal to 0.0;
    bitwise negated when the op orders largest first, so the algorithms below only ever ask "key less"."""
    bits = tl.where(v == 0.0, 0.0, v).to(tl.int32, bitcast=True)
    key = tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    key = tl.where(v != v, 0x7FFFFFFF, key)
    if DESC:
        key = ~key
    return key


@triton.jit
def _kv_line_keys(x_ptr, base, s1, idx, mask, DESC: tl.constexpr):
    """Keys of the line's elements ``idx`` and their (key, position) pairs packed in int64 (unique, ordered by
    key then position; int64 max where masked out)."""
    v = tl.load(x_ptr + base + idx.to(tl.int64) * s1, mask=mask, other=0.0).to(tl.float32)
    key = _kv_key(v, DESC)
    packed = (key.to(tl.int64) << 32) | idx.to(tl.int64)
    return key, tl.where(mask, packed, 0x7FFFFFFFFFFFFFFF)


@triton.jit
def _kv_write(x_ptr, val_ptr, idx_ptr, base, s1, pos, slot, ok, out_base, inner, VALUES: tl.constexpr):
    """Element ``pos`` of the line to output slot ``slot`` where ``ok``: its value bit for bit, its position."""
    at = out_base + slot.to(tl.int64) * inner
    if VALUES:
        v = tl.load(x_ptr + base + pos.to(tl.int64) * s1, mask=ok, other=0.0)
        tl.store(val_ptr + at, v.to(val_ptr.dtype.element_ty), mask=ok)
    tl.store(idx_ptr + at, pos.to(tl.int64), mask=ok)


@triton.jit
def _kv_rank_pass(x_ptr, val_ptr, idx_ptr, base, s1, L, first, K, out_base, inner, DESC: tl.constexpr,
                  VALUES: tl.constexpr, CI: tl.constexpr, CJ: tl.constexpr):
    """Every element's rank among the line's (key, position) pairs, tile by tile; elements ranked in
    [first, first + K) written to slot rank - first. Returns whether a written element's key ties with another
    (then which of them is written where is the algorithm's choice, not this one's)."""
    tie = L * 0
    for i0 in range(0, L, CI):
        ii = i0 + tl.arange(0, CI)
        mi = ii < L
        ki, pi = _kv_line_keys(x_ptr, base, s1, ii, mi, DESC)
        rank = tl.zeros([CI], dtype=tl.int32)
        same = tl.zeros([CI], dtype=tl.int32)
        for j0 in range(0, L, CJ):
            jj = j0 + tl.arange(0, CJ)
            mj = jj < L
            kj, pj = _kv_line_keys(x_ptr, base, s1, jj, mj, DESC)
            rank += tl.sum((pj[None, :] < pi[:, None]).to(tl.int32), axis=1)
            same += tl.sum(((kj[None, :] == ki[:, None]) & mj[None, :]).to(tl.int32), axis=1)
        slot = rank - first
        written = mi & (slot >= 0) & (slot < K)
        # only a written element that ties makes the order the algorithm's
        tie = tl.maximum(tie, tl.max(tl.where(written & (same > 1), 1, 0), axis=0))
        _kv_write(x_ptr, val_ptr, idx_ptr, base, s1, ii, slot, written, out_base, inner, VALUES)
    return tie


@triton.jit
def _kv_get(a, ar, i):
    """a[i] of a register array (one element reduced out of the block)."""
    return tl.sum(tl.where(ar == i, a, 0), axis=0)


@triton.jit
def _kv_put(a, ar, i, v):
    return tl.where(ar == i, v, a)


@triton.jit
def _kv_swap(a, ar, i, j):
    vi = _kv_get(a, ar, i)
    vj = _kv_get(a, ar, j)
    return tl.where(ar == j, vi, tl.where(ar == i, vj, a))


@triton.jit
def _kv_k(p):
    """The key of a packed (key, position) pair."""
    return p >> 32


@triton.jit
def _kv_lg(n):
    """std::__lg: floor(log2(n)) for n >= 1."""
    lg = n * 0
    m = n
    while m > 1:
        m = m >> 1
        lg += 1
    return lg


@triton.jit
def _kv_unguarded_linear_insert(a, ar, last):
    """libstdc++ __unguarded_linear_insert: a[last] moved down past every greater key before it."""
    val = _kv_get(a, ar, last)
    kv = _kv_k(val)
    nxt = last - 1
    cur = _kv_get(a, ar, nxt)
    while kv < _kv_k(cur):
        a = _kv_put(a, ar, last, cur)
        last = nxt
        nxt -= 1
        cur = _kv_get(a, ar, nxt)
    return _kv_put(a, ar, last, val)


@triton.jit
def _kv_insertion_sort(a, ar, first, last):
    """libstdc++ __insertion_sort of [first, last): a new minimum goes to the front (move_backward), any other
    element by an unguarded linear insert."""
    for i in range(first + 1, last):
        val = _kv_get(a, ar, i)
        if _kv_k(val) < _kv_k(_kv_get(a, ar, first)):
            j = i
            while j > first:
                a = _kv_put(a, ar, j, _kv_get(a, ar, j - 1))
                j -= 1
            a = _kv_put(a, ar, first, val)
        else:
            a = _kv_unguarded_linear_insert(a, ar, i)
    return a


@triton.jit
def _kv_adjust_heap(a, ar, first, hole, n, value):
    """libstdc++ __adjust_heap then __push_heap, on the heap of ``n`` elements at ``first`` (a max-heap for
    "key less")."""
    top = hole
    second = hole
    while second < (n - 1) // 2:
        second = 2 * (second + 1)
        if _kv_k(_kv_get(a, ar, first + second)) < _kv_k(_kv_get(a, ar, first + second - 1)):
            second -= 1
        a = _kv_put(a, ar, first + hole, _kv_get(a, ar, first + second))
        hole = second
    if ((n & 1) == 0) & (second == (n - 2) // 2):
        second = 2 * (second + 1)
        a = _kv_put(a, ar, first + hole, _kv_get(a, ar, first + second - 1))
        hole = second - 1
    kv = _kv_k(value)
    parent = tl.maximum(hole - 1, 0) // 2
    cur = _kv_get(a, ar, first + parent)
    while (hole > top) & (_kv_k(cur) < kv):
        a = _kv_put(a, ar, first + hole, cur)
        hole = parent
        parent = tl.maximum(hole - 1, 0) // 2
        cur = _kv_get(a, ar, first + parent)
    return _kv_put(a, ar, first + hole, value)


@triton.jit
def _kv_pop_heap(a, ar, first, last, result):
    """libstdc++ __pop_heap: the heap's top to ``result``, the element there sifted into [first, last)."""
    value = _kv_get(a, ar, result)
    a = _kv_put(a, ar, result, _kv_get(a, ar, first))
    return _kv_adjust_heap(a, ar, first, first * 0, last - first, value)


@triton.jit
def _kv_next_below(a, ar, first, start, last):
    """The first place in [start, last) whose key is below the heap top's at ``first`` (``last`` if none): the
    scan of __heap_select in one step."""
    below = (ar >= start) & (ar < last) & ((a >> 32) < _kv_k(_kv_get(a, ar, first)))
    return tl.min(tl.where(below, ar, last), axis=0)


@triton.jit
def _kv_heap_select(a, ar, first, middle, last):
    """libstdc++ __heap_select: make_heap over [first, middle), then every smaller key after it replaces the
    top."""
    n = middle - first
    parent = (n - 2) // 2
    while (n >= 2) & (parent >= 0):
        a = _kv_adjust_heap(a, ar, first, parent, n, _kv_get(a, ar, first + parent))
        parent -= 1
    # a pop changes only the heap and the popped place, never what lies after it
    nxt = _kv_next_below(a, ar, first, middle, last)
    while nxt < last:
        a = _kv_pop_heap(a, ar, first, middle, nxt)
        nxt = _kv_next_below(a, ar, first, nxt + 1, last)
    return a


@triton.jit
def _kv_sort_heap(a, ar, first, last):
    while last - first > 1:
        last -= 1
        a = _kv_pop_heap(a, ar, first, last, last)
    return a


@triton.jit
def _kv_hoare(a, ar, piv, p_lo, p_hi, q_lo, q_hi, work, STRICT: tl.constexpr):
    """Hoare's two scans and their swaps, all steps at once. The left scan stops at keys >= ``piv`` among
    positions [p_lo, p_hi], the right scan at keys <= ``piv`` among [q_lo, q_hi] (the algorithm's sentinels
    included); the t-th left stop P[t] swaps with the t-th right stop Q[t] while it lies before (``STRICT``)
    or not after it. Returns (a, i, j): where the scans stop for the last time. The stops after T swaps:
    the left scan resumes after P[T-1] and meets P[T] or the first swapped-in element, at a Q[u] past P[T-1];
    the right scan likewise. ``work``: the line's scratch, 2 * B int64, where the stops are listed in scan
    order and the line is permuted (memory, not tl.histogram or tl.gather: those compile slowly for a long
    line)."""
    k = a >> 32
    is_p = (ar >= p_lo) & (ar <= p_hi) & (k >= piv)
    is_q = (ar >= q_lo) & (ar <= q_hi) & (k <= piv)
    n: tl.constexpr = ar.shape[0]
    far = ar * 0 + n
    none = ar * 0 - 1
    rank_p = tl.cumsum(is_p.to(tl.int32), axis=0) - 1
    rank_q = tl.cumsum(is_q.to(tl.int32), axis=0, reverse=True) - 1
    tl.store(work + rank_p, ar.to(tl.int64), mask=is_p)
    tl.store(work + n + rank_q, ar.to(tl.int64), mask=is_q)
    tl.debug_barrier()
    stops_p = tl.load(work + ar, mask=ar < tl.sum(is_p.to(tl.int32), axis=0), other=n).to(tl.int32)
    stops_q = tl.load(work + n + ar, mask=ar < tl.sum(is_q.to(tl.int32), axis=0), other=-1).to(tl.int32)
    if STRICT:
        swaps = tl.sum((stops_p < stops_q).to(tl.int32), axis=0)
    else:
        swaps = tl.sum((stops_p <= stops_q).to(tl.int32), axis=0)
    swap_p = is_p & (rank_p < swaps)
    swap_q = is_q & (rank_q < swaps)
    to_q = tl.load(work + n + rank_p, mask=swap_p, other=0).to(tl.int32)
    to_p = tl.load(work + rank_q, mask=swap_q, other=0).to(tl.int32)
    tl.debug_barrier()
    tl.store(work + ar, a)
    tl.debug_barrier()
    a = tl.load(work + tl.where(swap_p, to_q, tl.where(swap_q, to_p, ar)))
    tl.debug_barrier()
    last_p = tl.max(tl.where(ar == swaps - 1, stops_p, none), axis=0)
    last_q = tl.min(tl.where(ar == swaps - 1, stops_q, far), axis=0)
    done = ar < swaps
    i = tl.minimum(tl.min(tl.where(ar == swaps, stops_p, far), axis=0),
                   tl.min(tl.where(done & (stops_q > last_p), stops_q, far), axis=0))
    j = tl.maximum(tl.max(tl.where(ar == swaps, stops_q, none), axis=0),
                   tl.max(tl.where(done & (stops_p < last_q), stops_p, none), axis=0))
    return a, i, j


@triton.jit
def _kv_partition_pivot(a, ar, first, last, work):
    """libstdc++ __unguarded_partition_pivot: the median of (first + 1, mid, last - 1) moved to ``first``,
    then Hoare's unguarded partition of [first + 1, last) around it (the pivot at ``first`` the right scan's
    sentinel). Returns (a, cut)."""
    mid = first + (last - first) // 2
    i1 = first + 1
    i3 = last - 1
    # written out rather than through _kv_get / _kv_swap: the interpreter pays for every nested call, and the
    # introsort partitions a long line hundreds of times
    k = a >> 32
    ka = tl.sum(tl.where(ar == i1, k, 0), axis=0)
    kb = tl.sum(tl.where(ar == mid, k, 0), axis=0)
    kc = tl.sum(tl.where(ar == i3, k, 0), axis=0)
    pick = tl.where(ka < kb, tl.where(kb < kc, mid, tl.where(ka < kc, i3, i1)),
                    tl.where(ka < kc, i1, tl.where(kb < kc, i3, mid)))
    at_first = tl.sum(tl.where(ar == first, a, 0), axis=0)
    pivot = tl.sum(tl.where(ar == pick, a, 0), axis=0)
    a = tl.where(ar == first, pivot, tl.where(ar == pick, at_first, a))
    a, cut, _ = _kv_hoare(a, ar, pivot >> 32, i1, i3, first, i3, work, True)
    return a, cut


@triton.jit
def _kv_std_sort(a, ar, n, work, STACK: tl.constexpr, CJ: tl.constexpr):
    """libstdc++ std::sort of a[0:n]: introsort (depth limit 2 lg n, heapsort past it) down to runs of 16,
    then the final insertion sort. The recursion on the right part becomes an explicit stack: the parts are
    disjoint, so the order they are finished in does not change the result. The final insertion sort (guarded
    over the first 16, unguarded after) moves an element only past strictly greater keys: it is the stable
    sort of the arrangement the partitions left, computed as ranks."""
    if n > 1:
        # the stack's entries (first, last, depth) as written-out gets and puts (see _kv_partition_pivot)
        sa = tl.arange(0, STACK)
        s_lo = tl.zeros([STACK], dtype=tl.int32)
        s_hi = tl.where(sa == 0, n, s_lo)
        s_depth = tl.where(sa == 0, 2 * _kv_lg(n), s_lo)
        top = n * 0 + 1
        while top > 0:
            top -= 1
            first = tl.sum(tl.where(sa == top, s_lo, 0), axis=0)
            last = tl.sum(tl.where(sa == top, s_hi, 0), axis=0)
            depth = tl.sum(tl.where(sa == top, s_depth, 0), axis=0)
            while last - first > 16:
                if depth == 0:
                    a = _kv_heap_select(a, ar, first, last, last)
                    a = _kv_sort_heap(a, ar, first, last)
                    last = first
                else:
                    depth -= 1
                    a, cut = _kv_partition_pivot(a, ar, first, last, work)
                    s_lo = tl.where(sa == top, cut, s_lo)
                    s_hi = tl.where(sa == top, last, s_hi)
                    s_depth = tl.where(sa == top, depth, s_depth)
                    top += 1
                    last = cut
        a = _kv_stable_in_place(a, ar, n, work, CJ)
    return a


@triton.jit
def _kv_stable_in_place(a, ar, n, work, CJ: tl.constexpr):
    """a[0:n] stably sorted by key: each element's rank among (key, place), counted against the line stored in
    the scratch ``work``, then scattered there and read back."""
    inside = ar < n
    at = work + ar
    tl.store(at, a, mask=inside)
    tl.debug_barrier()
    ka = _kv_k(a)
    rank = tl.zeros_like(ar)
    for j0 in range(0, n, CJ):
        jj = j0 + tl.arange(0, CJ)
        mj = jj < n
        kj = _kv_k(tl.load(work + jj, mask=mj, other=0))
        before = (kj[None, :] < ka[:, None]) | ((kj[None, :] == ka[:, None]) & (jj[None, :] < ar[:, None]))
        rank += tl.sum((before & mj[None, :]).to(tl.int32), axis=1)
    tl.debug_barrier()
    tl.store(work + rank, a, mask=inside)
    tl.debug_barrier()
    return tl.where(inside, tl.load(at, mask=inside, other=0), a)


@triton.jit
def _kv_nth_element(a, ar, nth, n, work):
    """libstdc++ std::nth_element(0, nth, n): introselect down to 3 elements, heap_select past the depth limit."""
    first = n * 0
    last = n
    if nth < n:
        depth = 2 * _kv_lg(n)
        while last - first > 3:
            if depth == 0:
                a = _kv_heap_select(a, ar, first, nth + 1, last)
                a = _kv_swap(a, ar, first, nth)
                last = first
            else:
                depth -= 1
                a, cut = _kv_partition_pivot(a, ar, first, last, work)
                if cut <= nth:
                    first = cut
                else:
                    last = cut
        a = _kv_insertion_sort(a, ar, first, last)
    return a


@triton.jit
def _kv_quick_select(a, ar, k, n, work):
    """PyTorch's CPU quick_select_template (kthvalue): median of three, Sedgewick's partition, NaN greatest."""
    lo = n * 0
    hi = n - 1
    going = hi > lo
    while going:
        if hi == lo + 1:
            if _kv_k(_kv_get(a, ar, lo)) > _kv_k(_kv_get(a, ar, hi)):
                a = _kv_swap(a, ar, lo, hi)
            going = hi < lo
        else:
            a = _kv_swap(a, ar, (lo + hi) >> 1, lo + 1)
            if _kv_k(_kv_get(a, ar, lo + 1)) > _kv_k(_kv_get(a, ar, hi)):
                a = _kv_swap(a, ar, lo + 1, hi)
            if _kv_k(_kv_get(a, ar, lo)) > _kv_k(_kv_get(a, ar, hi)):
                a = _kv_swap(a, ar, lo, hi)
            if _kv_k(_kv_get(a, ar, lo + 1)) > _kv_k(_kv_get(a, ar, lo)):
                a = _kv_swap(a, ar, lo + 1, lo)
            piv = _kv_k(_kv_get(a, ar, lo))
            # i runs from lo + 2 up to the sentinel a[hi] >= piv, j from hi - 1 down to a[lo + 1] <= piv
            a, i, j = _kv_hoare(a, ar, piv, lo + 2, hi, lo + 1, hi - 1, work, False)
            a = _kv_swap(a, ar, lo, j)
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
            going = hi > lo
    return a
'''

#: per op: the constexpr OP code, the parameters' meaning and when the replay is needed (``need``: an int32
#: scalar expression of ``tie`` and the parameters), the replay itself on the register line ``a``
_LINE_OPS: dict[str, dict[str, str]] = {
    "sort": {"code": "0", "prologue": """    desc = tl.load(prm_ptr + 0)
    stable = tl.load(prm_ptr + 1)
    K = L
    first = L * 0""", "fast": "1", "need": "(tie != 0) & (stable == 0)",
             "replay": "a = _kv_std_sort(a, ar, L, work, STACK, CK)"},
    "topk": {"code": "1", "prologue": """    K = tl.load(prm_ptr + 0).to(tl.int32)
    desc = tl.load(prm_ptr + 1)
    is_sorted = tl.load(prm_ptr + 2)
    first = L * 0
    heap = K * 64 <= L""", "fast": "heap | (is_sorted != 0)", "need": "(K > 0) & ((tie != 0) | (fast == 0))",
             "replay": """if heap:
            a = _kv_heap_select(a, ar, first, K, L)
            a = _kv_sort_heap(a, ar, first, K)
        else:
            a = _kv_nth_element(a, ar, K - 1, L, work)
            if is_sorted != 0:
                a = _kv_std_sort(a, ar, K - 1, work, STACK, CK)"""},
    "kthvalue": {"code": "2", "prologue": """    first = tl.load(prm_ptr + 0).to(tl.int32) - 1
    desc = first * 0
    K = first * 0 + 1""", "fast": "1", "need": "tie != 0", "replay": "a = _kv_quick_select(a, ar, first, L, work)"},
}


def _lines_kernel(op: str, values: bool) -> str:
    """The @triton.jit kernel of one selection op: one program per line, the rank pass, the replay where the
    order of ties is the algorithm's."""
    spec = _LINE_OPS[op]
    return f'''
@triton.jit
def _kv_lines(x_ptr, prm_ptr, val_ptr, idx_ptr, work_ptr, L, inner, s0, s1, s2, VALUES: tl.constexpr,
              B: tl.constexpr, CI: tl.constexpr, CJ: tl.constexpr, CK: tl.constexpr, STACK: tl.constexpr):
    line = tl.program_id(0).to(tl.int64)
    o = line // inner
    c = line % inner
    base = o * s0 + c * s2
{spec["prologue"]}
    out_base = o * K * inner + c
    fast = ({spec["fast"]}) != 0
    tie = L * 0
    if desc != 0:
        if fast:
            tie = _kv_rank_pass(x_ptr, val_ptr, idx_ptr, base, s1, L, first, K, out_base, inner, True, VALUES, CI, CJ)
    else:
        if fast:
            tie = _kv_rank_pass(x_ptr, val_ptr, idx_ptr, base, s1, L, first, K, out_base, inner, False, VALUES, CI,
                                CJ)
    need = ({spec["need"]}) != 0
    if need:
        ar = tl.arange(0, B)
        work = work_ptr + line * (2 * B)
        inside = ar < L
        if desc != 0:
            _, a = _kv_line_keys(x_ptr, base, s1, ar, inside, True)
        else:
            _, a = _kv_line_keys(x_ptr, base, s1, ar, inside, False)
        # a line of one element is in order; a static condition where Triton specializes L == 1, which keeps
        # the replay's loops out of that kernel (Triton 3.6 fails to compile them there: TritonGPUCoalesce)
        if L > 1:
            {spec["replay"].replace(chr(10), chr(10) + "    ")}
        slot = ar - first
        _kv_write(x_ptr, val_ptr, idx_ptr, base, s1, a & 0x7FFFFFFF, slot, inside & (slot >= 0) & (slot < K),
                  out_base, inner, VALUES)
'''


def _lines_launcher(op: str, dtype: str, outputs: tuple[str, ...], params: dict[str, Any]) -> str:
    """The host function: checks (a mismatch declines), the line count and strides, one program per line."""
    values = len(outputs) == 2
    out_dtypes = repr(outputs)
    val_arg = "outputs[0]"  # argsort: no values (VALUES=False), the positions' tensor stands in
    idx_arg = "outputs[1]" if values else "outputs[0]"
    return f'''

import os


{host_functions(DTYPE_NAME, POW2)}def kernel(inputs, outputs):
    if len(inputs) != 2 or len(outputs) != {len(outputs)}:
        raise RuntimeError("declined: wrong number of tensors")
    x, prm = inputs
    if _dtype_name(x) != "{dtype}" or _dtype_name(prm) != "int64" or tuple(_dtype_name(t) for t in outputs) != {out_dtypes}:
        raise RuntimeError("declined: dtype")
    if x.dim() != 3 or prm.dim() != 1 or prm.shape[0] != {LINE_PARAMS[op]}:
        raise RuntimeError("declined: shape or layout it was not written for")
    outer, length, inner = x.shape
    lines = outer * inner
    if lines == 0 or length == 0 or outputs[0].numel() == 0:
        return
    if length >= 1 << 31:
        raise RuntimeError("declined: a line longer than the kernel's int32 positions")
    block = max(16, _pow2(length))
    # tiles of the rank counts: a GPU holds about 8K pairs in registers; the interpreter pays per block
    # operation, not per element, so it takes as much of the line at once as a block may hold (1M pairs)
    budget = 1 << (20 if os.environ.get("TRITON_INTERPRET") == "1" else 13)
    ci = min(block, 1024 if budget > 8192 else 256)
    # the replays' scratch: per line, 2 * block int64
    work = outputs[-1].new_empty((lines, 2 * block))
    _kv_lines[(lines,)](x, prm, {val_arg}, {idx_arg}, work, length, inner, x.stride(0), x.stride(1),
                        x.stride(2), VALUES={values}, B=block, CI=ci, CJ=min(block, max(1, budget // ci)),
                        CK=max(1, min(block, budget // block)), STACK=64{launch_args(params, contract=False)})
'''


class TritonAtenLines(Recipe):
    """sort/argsort, topk, kthvalue: ranks where the order is unique, ATen's CPU algorithm replayed where ties
    make it the algorithm's."""

    name = "triton.aten_lines"
    language = "triton"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        if not _owns(problem, tuple(LINE_PARAMS), LINE_DTYPES):
            return False
        k = _kernel(problem)
        # argsort writes positions only; sort, topk and kthvalue values (the input's dtype), then positions
        wanted = ("int64",) if len(k.outputs) == 1 else (k.inputs[0][1], "int64")
        return len(k.inputs) == 2 and k.layout in ("sort", "topk", "kthvalue") and k.outputs == wanted \
            and (len(k.outputs) == 2 or k.layout == "sort")

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace(launch_params(facts, self.families[0]))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = _kernel(problem)
        values = len(k.outputs) == 2
        return (header(problem, params) + _LINE_DEVICE + _lines_kernel(k.layout, values)
                + _lines_launcher(k.layout, k.inputs[0][1], k.outputs, params))


# --------------------------------------------------------------------------------------------------------------
# data movement

def _dims(prefix: str) -> str:
    return ", ".join(f"{prefix}{d}" for d in range(MAX_RANK))


def _coords(body: str) -> str:
    """Per dimension (innermost first, unrolled up to the launch's RANK): the coordinate ``c`` of the flat
    output index in ``rest``, then ``body``."""
    lines = []
    for d in range(MAX_RANK - 1, -1, -1):
        lines.append(f"    if RANK > {d}:")
        lines.append(f"        c = rest % s{d}")
        lines.append(f"        rest = rest // s{d}")
        lines += [f"        {line}" for line in body.format(d=d).splitlines()]
    return "\n".join(lines)


def _wrap_dim(var: str) -> str:
    return f"{var} = tl.where({var} < 0, {var} + RANK, {var})"


_FLIP = _coords("c = tl.where(fl{d} != 0, s{d} - 1 - c, c)\nsrc += c * t{d}")
_ROLL = _coords("c = c - sh{d}\nc = tl.where(c < 0, c + s{d}, c)\nsrc += c * t{d}")
_CAT = _coords("src += c * t{d}\ndst += (c + tl.where(cd == {d}, p{d}, 0)) * o{d}")


def _flip_params() -> str:
    """fl<d>: whether dimension d is listed (negative dims wrapped)."""
    lines = []
    for d in range(MAX_RANK):
        lines.append(f"    fl{d} = n_prm * 0")
    lines.append("    for f in range(0, n_prm):")
    lines.append("        pd = tl.load(prm_ptr + f)")
    lines.append("        " + _wrap_dim("pd"))
    lines += [f"        fl{d} = fl{d} | (pd == {d}).to(tl.int32)" for d in range(MAX_RANK)]
    return "\n".join(lines)


def _roll_params() -> str:
    """[flat, m, shifts..., dims...]: sh<d> the total shift of dimension d, or ``fsh`` that of the flattened
    tensor; shifts wrapped into [0, size)."""
    lines = ["    flat = tl.load(prm_ptr + 0)", "    m = tl.load(prm_ptr + 1)",
             "    fsh = tl.load(prm_ptr + 2) * flat % tl.maximum(n, 1)", "    fsh = tl.where(fsh < 0, fsh + n, fsh)",
             "    dims_m = tl.where(flat != 0, 0, m)"]
    lines += [f"    sh{d} = m * 0" for d in range(MAX_RANK)]
    lines.append("    for t in range(0, dims_m):")
    lines.append("        pd = tl.load(prm_ptr + 2 + dims_m + t)")
    lines.append("        " + _wrap_dim("pd"))
    lines.append("        sv = tl.load(prm_ptr + 2 + t)")
    lines += [f"        sh{d} = tl.where(pd == {d}, sh{d} + sv, sh{d})" for d in range(MAX_RANK)]
    for d in range(MAX_RANK):
        lines.append(f"    sh{d} = sh{d} % tl.maximum(s{d}, 1)")
        lines.append(f"    sh{d} = tl.where(sh{d} < 0, sh{d} + s{d}, sh{d})")
    return "\n".join(lines)


def _move_kernel(op: str) -> str:
    """The @triton.jit kernel of one data-movement op over the flat output (or, for cat, one input)."""
    head = "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n"
    if op == "tril":
        return f'''
@triton.jit
def _kv_move(x_ptr, prm_ptr, out_ptr, n, rows, cols, t0, t1, t2, BLOCK: tl.constexpr):
{head}    diagonal = tl.load(prm_ptr + 0)
    col = offs % cols
    row = (offs // cols) % rows
    batch = offs // (cols * rows)
    keep = (col - row) <= diagonal
    v = tl.load(x_ptr + batch * t0 + row * t1 + col * t2, mask=mask & keep, other=0)
    tl.store(out_ptr + offs, tl.where(keep, v, 0).to(out_ptr.dtype.element_ty), mask=mask)
'''
    if op == "cat":
        return f'''
@triton.jit
def _kv_move(x_ptr, prm_ptr, out_ptr, n, {_dims("s")}, {_dims("t")}, {_dims("p")}, {_dims("o")},
             RANK: tl.constexpr, BLOCK: tl.constexpr):
{head}    cd = tl.load(prm_ptr + 0)
    {_wrap_dim("cd")}
    rest = offs
    src = offs * 0
    dst = offs * 0
{_CAT}
    v = tl.load(x_ptr + src, mask=mask)
    tl.store(out_ptr + dst, v.to(out_ptr.dtype.element_ty), mask=mask)
'''
    params, body = (_flip_params(), _FLIP) if op == "flip" else (_roll_params(), _ROLL)
    start = "offs" if op == "flip" else "tl.where(offs - fsh < 0, offs - fsh + n, offs - fsh)"
    return f'''
@triton.jit
def _kv_move(x_ptr, prm_ptr, out_ptr, n, n_prm, {_dims("s")}, {_dims("t")}, RANK: tl.constexpr,
             BLOCK: tl.constexpr):
{head}{params}
    rest = {start}
    src = offs * 0
{body}
    v = tl.load(x_ptr + src, mask=mask)
    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)
'''


_MOVE_HOST = "\n\n" + host_functions(DTYPE_NAME) + '''def _padded(values, fill):
    values = list(values)
    if len(values) > MAX_RANK:
        raise RuntimeError("declined: more dimensions than the kernel indexes")
    return values + [fill] * (MAX_RANK - len(values))


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]
'''.replace("MAX_RANK", str(MAX_RANK))


def _move_launch(op: str, block: int, launch: str) -> str:
    """The launch lines of one data-movement op (after the common checks: ``data``, ``prm``, ``out``, ``n``)."""
    # an empty output still launches one (fully masked) program, so that a build on it compiles the kernel
    grid = f"(max(1, triton.cdiv(n, {block})),)"
    if op == "tril":
        return f"""    x = data[0]
    if x.dim() != 3 or x.numel() != n or prm.shape[0] != 1:
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_move[{grid}](x, prm, out, n, max(1, x.shape[1]), max(1, x.shape[2]), x.stride(0), x.stride(1),
                     x.stride(2), BLOCK={block}{launch})"""
    if op == "cat":
        return f"""    if prm.shape[0] != 1:
        raise RuntimeError("declined: shape or layout it was not written for")
    rank = out.dim()
    ostrides = _padded(_contiguous_strides(out.shape), 0)
    before = [0] * {MAX_RANK}
    for t in data:
        if t.dim() == 1 and t.shape[0] == 0:
            continue  # a legacy empty (0,) tensor takes no part, as in PyTorch
        if t.dim() != rank:
            raise RuntimeError("declined: shape or layout it was not written for")
        if t.numel() > 0:
            _kv_move[(triton.cdiv(t.numel(), {block}),)](t, prm, out, t.numel(), *_padded(t.shape, 1),
                                                        *_padded(t.stride(), 0), *before, *ostrides, RANK=rank,
                                                        BLOCK={block}{launch})
        before = [b + s for b, s in zip(before, _padded(t.shape, 0))]"""
    return f"""    x = data[0]
    if tuple(x.shape) != tuple(out.shape):
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_move[{grid}](x, prm, out, n, prm.shape[0], *_padded([max(1, s) for s in x.shape], 1),
                     *_padded(x.stride(), 0), RANK=x.dim(), BLOCK={block}{launch})"""


#: cat launches once per non-empty input: an empty output launches nothing
_EMPTY = "    if n == 0:\n        return\n"


class TritonAtenMoves(Recipe):
    """cat, flip, roll, tril: each output element copied from one input element (or zero)."""

    name = "triton.aten_moves"
    language = "triton"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        if not _owns(problem, MOVE_OPS, MOVE_DTYPES):
            return False
        k = _kernel(problem)
        return k.outputs == (k.inputs[0][1],)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace(launch_params(facts, self.families[0]))

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = _kernel(problem)
        block = 1024
        dtypes = repr(tuple(d for _, d in k.inputs[:-1]))
        many = k.layout == "cat"
        count = "len(inputs) < 2" if many else "len(inputs) != 2"
        return header(problem, params) + _move_kernel(k.layout) + _MOVE_HOST + f'''

def kernel(inputs, outputs):
    if {count} or len(outputs) != 1:
        raise RuntimeError("declined: wrong number of tensors")
    *data, prm = inputs
    out = outputs[0]
    if tuple(_dtype_name(t) for t in data) != {dtypes} or _dtype_name(prm) != "int64" \\
            or _dtype_name(out) != "{k.outputs[0]}" or prm.dim() != 1:
        raise RuntimeError("declined: dtype")
    n = out.numel()
{_EMPTY if many else ""}{_move_launch(k.layout, block, launch_args(params, contract=False))}
'''


RECIPES = [TritonAtenLines(), TritonAtenMoves()]
