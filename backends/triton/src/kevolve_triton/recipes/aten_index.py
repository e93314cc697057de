"""ATen conformance kernels in Triton: indexing operators, one renderer per kernel kind (layout of core's
conformance table, :mod:`kevolve.conformance.ops.index`), mirroring the C++ recipes of
``kevolve_cpu.recipes.cpp_aten_index`` (whose semantics are proven against ATen).

* ``gather``: inputs (x, index, params[dim, broadcast, wrap]); one program lane per output element.
* ``scatter``: inputs (x, index, [src], params[dim, domain]); a copy launch (out = x), then one lane per column
  (every coordinate but ``dim``) walking the column along ``dim`` in order, so repeated targets see ATen's
  sequential order (two columns never touch the same output element); ``mean`` adds a launch that counts each
  element's contributions and divides.
* ``index_put``: inputs (x, index tensors..., values); a copy launch, then one lane per element of the trailing
  (not indexed) dims walking the indexed positions in row-major order (integer indices broadcast together,
  negative ones wrap; or one boolean mask's true positions).
* ``embedding_bag``: inputs (weight, indices, [offsets], [per_sample_weights], params[bags, length, padding_idx,
  include_last_offset]); one program per (bag, slice of the row); ``max_norm`` rescales each row read as
  ``embedding_renorm_`` would, without writing the weight.
* ``search``: inputs (sorted rows, values, [sorter], params[right]); ATen's lower/upper bound loop, a fixed
  number of halvings (the launcher knows the row length), so NaN lands where ATen puts it.

Why the integers come in the trailing int64 tensor and are read with ``tl.load``: one compiled kernel serves
every sample of the same dtypes, and the launcher may not read tensor values (the judge fails a kernel that
calls PyTorch). So the launcher passes every dimension's sizes and strides (padded to :data:`MAX_RANK`) and the
kernel picks the one of ``dim`` itself. Launch grids use bounds that hold whatever ``dim`` is.

Scalars read once per step of a loop (an index, a mask element, an embedding row number) are loaded as vectors
(the same address in every lane): Triton's interpreter turns ``bool_vector & bool_scalar`` into int32, which its
masked loads refuse, and on a GPU the broadcast load costs nothing more.

Values are moved in their storage dtype (gather, copies) or computed in float32 (int64 for integer tensors) and
stored in the output's dtype. An index out of range is skipped (ATen raises; OpInfo has no such sample).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kevolve import diagnosis as d
from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes.aten_pointwise import TL_STORAGE, compute_type
from kevolve_triton.recipes.common import header, launch_args, launch_params, pow2_range, triton_literal
from kevolve_triton.recipes.host import DTYPE_NAME, host_functions

#: dimensions the gather and scatter kernels index (each passed as its own size and stride arguments)
MAX_RANK = 8

#: scatter reductions: (combine(cur, v) in Triton, identity when include_self is False); amax/amin as ATen's
#: CPU loop: a NaN from the source wins, a NaN already there stays (std::max(cur, v) keeps cur unless cur < v)
_SCATTER_OPS: dict[str, tuple[str, str | None]] = {
    "none": ("v", None),
    "sum": ("cur + v", "0.0"),
    "mean": ("cur + v", "0.0"),
    "prod": ("cur * v", "1.0"),
    "amax": ("tl.where(v != v, v, tl.where(cur < v, v, cur))", "float('-inf')"),
    "amin": ("tl.where(v != v, v, tl.where(v < cur, v, cur))", "float('inf')"),
}


def _names(prefix: str, count: int = MAX_RANK) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def _args(*prefixes: str) -> str:
    """Kernel parameters: MAX_RANK scalars per prefix (sizes or strides of one tensor, dimension 0 first)."""
    return ", ".join(n for p in prefixes for n in _names(p))


def _innermost_first(body: Callable[[int], list[str]], rank: str = "RANK", indent: str = "    ") -> str:
    """One ``if RANK > d:`` block per dimension, innermost first (so ``rest`` peels coordinates off a flat
    index), unrolled at compile time for the launch's rank."""
    lines = []
    for dim in range(MAX_RANK - 1, -1, -1):
        lines.append(f"{indent}if {rank} > {dim}:")
        lines += [f"{indent}    {line}" for line in body(dim)]
    return "\n".join(lines)


def _dtype_name() -> str:
    return host_functions(DTYPE_NAME) + '''def _pad(values, fill=0):
    """Sizes or strides padded to MAX_RANK entries (the kernel's fixed signature)."""
    return list(values) + [fill] * (MAX_RANK - len(values))


def _strides(t, broadcast_ones=True):
    """Element strides, 0 along size-1 dimensions (where the tensor broadcasts)."""
    return [0 if broadcast_ones and t.shape[i] == 1 else t.stride(i) for i in range(t.dim())]


'''.replace("MAX_RANK", str(MAX_RANK))


def _checks(dtypes: list[str], out_dtypes: str) -> str:
    """Launcher lines that decline a call the kernel was not written for (counts, dtypes)."""
    return f"""    if len(inputs) != {len(dtypes)} or len(outputs) != 1:
        raise RuntimeError("declined: wrong number of tensors")
    out = outputs[0]
    if tuple(_dtype_name(t) for t in inputs) != {tuple(dtypes)!r} or _dtype_name(out) not in {out_dtypes}:
        raise RuntimeError("declined: dtype")"""


_COPY_KERNEL = """@triton.jit
def _kv_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


"""

#: a float32 scratch copy of a 16-bit output (the scatter family's running values, rounded once at the end); the
#: host allocates it as pairs of 16-bit elements (a kernel file names no torch dtype) and these kernels read it
#: as float32
_SCRATCH_KERNELS = """@triton.jit
def _kv_widen(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    acc_ptr = acc_ptr.to(tl.pointer_type(tl.float32), bitcast=True)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(acc_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(tl.float32), mask=mask)


@triton.jit
def _kv_narrow(acc_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc_ptr = acc_ptr.to(tl.pointer_type(tl.float32), bitcast=True)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(acc_ptr + offs, mask=mask).to(out_ptr.dtype.element_ty), mask=mask)


"""


#: the combine function of the infinity norm's tl.reduce: tl.max does not propagate NaN the way ATen's loop does
#: (sums use tl.sum: the interpreter runs a custom combine function in Python, element by element)
_COMBINES = """@triton.jit
def _kv_nan_max(a, b):
    \"\"\"max with a NaN propagated (C++'s (a > s || a != a) ? a : s, in any order).\"\"\"
    return tl.where((a > b) | (a != a), a, b)


"""


class _IndexRecipe(Recipe):
    """What the index renderers share: the family, the layout each one owns, the schedule (a block size and
    the target's launch knobs), the file's header and host helpers."""

    language = "triton"
    families = ("aten_pointwise",)
    layout = ""

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, (self.layout,))
        return kernel is not None and kernel.all_dtypes_in(TL_STORAGE)

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            # 1024 lanes by default: few programs (the interpreter's cost is per program), wide enough on a GPU
            Param("BLOCK", pow2_range(64, 1024), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
                  default=1024),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        dtypes = [dt for _, dt in k.inputs]
        kernels, launcher = self.parts(k, dtypes, params)
        return header(problem, params) + kernels + "\n\n" + _dtype_name() + launcher

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        """(the @triton.jit kernels, the ``kernel(inputs, outputs)`` launcher)."""
        raise NotImplementedError


# --- gather ------------------------------------------------------------------------------------------------------

class TritonAtenGather(_IndexRecipe):
    """out[c] = x[c with c[dim] = index[c]]; with broadcast=1 the input and the index broadcast against each
    other except along dim (take_along_dim, index_select viewed as a broadcast index); wrap=1 lets negative
    indices count from the end."""

    name = "triton.aten_gather"
    layout = "gather"

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        def per_dim(i: int) -> list[str]:
            return [f"at_dim = dim == {i}",
                    f"sh = tl.where(at_dim | (broadcast == 0) | (ish{i} != 1), ish{i}, xsh{i})",
                    "c = rest % sh",
                    "rest = rest // sh",
                    f"x_off += tl.where(at_dim, 0, c * xst{i})",
                    f"i_off += c * ist{i}",
                    f"size = tl.where(at_dim, xsh{i}, size)",
                    f"step = tl.where(at_dim, xst{i}, step)"]

        kernels = f"""@triton.jit
def _kv_gather(x_ptr, idx_ptr, p_ptr, out_ptr, n, {_args("xsh", "xst", "ish", "ist")},
               RANK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dim = tl.load(p_ptr)
    broadcast = tl.load(p_ptr + 1)
    wrap = tl.load(p_ptr + 2)
    rest = offs
    x_off = offs * 0
    i_off = offs * 0
    size = dim * 0
    step = dim * 0
{_innermost_first(per_dim)}
    v = tl.load(idx_ptr + i_off, mask=mask, other=0).to(tl.int64)
    v = tl.where((v < 0) & (wrap != 0), v + size, v)
    ok = mask & (v >= 0) & (v < size)
    value = tl.load(x_ptr + x_off + v * step, mask=ok, other=0)
    tl.store(out_ptr + offs, value.to(out_ptr.dtype.element_ty), mask=mask)
"""
        block = params["BLOCK"]
        launcher = f"""def kernel(inputs, outputs):
{_checks(dtypes, repr((dtypes[0],)))}
    x, index, params = inputs
    n = out.numel()
    if n == 0:
        return
    if index.dim() != x.dim() or not 0 < x.dim() <= {MAX_RANK}:
        raise RuntimeError("declined: shape or layout it was not written for")
    sizes = _pad(x.shape) + _pad(_strides(x)) + _pad(index.shape) + _pad(_strides(index))
    _kv_gather[(triton.cdiv(n, {block}),)](x, index, params, out, n, *sizes, RANK=x.dim(),
                                            BLOCK={block}{launch_args(params, contract=False)})
"""
        return kernels, launcher


# --- scatter -----------------------------------------------------------------------------------------------------

#: a scatter kernel's start, its lanes' flat positions in ``q``: the parameters (dim; whether the domain is the
#: source's shape) and the offsets into index, out and source that the walk over the dimensions builds
_SCATTER_START = """    dim = tl.load(p_ptr)
    from_src = tl.load(p_ptr + 1)
    rest = q
    bi = q * 0
    bo = q * 0
    bs = q * 0"""


class TritonAtenScatter(_IndexRecipe):
    """out = x, then out[c with c[dim] = index[c]] = combine(out[...], src[c]) over the domain (the index's
    elements, or the source's with the index broadcast: index_add), in order along dim, one lane per column."""

    name = "triton.aten_scatter"
    layout = "scatter"

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        xt = dtypes[0]
        ct = compute_type(xt)
        reduce, include_self, alpha = k.attrs["reduce"], k.attrs["include_self"], float(k.attrs["alpha"])
        combine, identity = _SCATTER_OPS[reduce]
        const_src = "src" in k.attrs
        if const_src:
            value = f"v = tl.full([BLOCK], {triton_literal(float(k.attrs['src']))}, {ct})"
        else:
            loaded = f"tl.load(src_ptr + bs + t * sstep, mask=ok, other=0).to({ct})"
            value = f"v = {loaded if alpha == 1.0 else f'{triton_literal(alpha)} * {loaded}'}"
        reset = "" if include_self or identity is None else f"""
    for t in range(0, steps):
        target = tl.load(idx_ptr + bi + t * istep, mask=active, other=-1).to(tl.int64)
        ok = active & (target >= 0) & (target < size)
        tl.store(out_ptr + bo + target * step, tl.full([BLOCK], {identity}, {ct}).to(out_ptr.dtype.element_ty),
                 mask=ok)"""
        # ATen combines 16-bit floats in float32 and rounds each output once (index_add: every step)
        scratch = xt in ("bfloat16", "float16") and k.attrs.get("rounding", "once") == "once"
        if xt in ("int32", "int64") and reduce == "sum" and not reset and alpha == int(alpha):
            # an integer sum is the same in any order: one lane per element of the domain, added atomically,
            # instead of one lane walking each column (a 1-D scatter is one column: a 100k-long serial walk)
            kernels = _COPY_KERNEL + self._atomic_kernel(ct, const_src, k.attrs.get("src"), int(alpha))
            return kernels, self._launcher(dtypes, const_src, False, False, params, atomic=True)
        kernels = _COPY_KERNEL + (_SCRATCH_KERNELS if scratch else "") + self._scatter_kernel(ct, combine, value,
                                                                                            reset, scratch)
        if reduce == "mean":
            kernels += "\n\n" + self._mean_kernel(ct, include_self)
        return kernels, self._launcher(dtypes, const_src, reduce == "mean", scratch, params)

    @staticmethod
    def _columns(src: bool) -> Callable[[int], list[str]]:
        """Per dimension: the column's coordinate (0 along dim) and its offsets into index, source and out; the
        walk's length, the target's extent and the strides along dim."""
        def per_dim(i: int) -> list[str]:
            lines = [f"at_dim = dim == {i}",
                     f"dom = tl.where(from_src != 0, ssh{i}, ish{i})" if src else f"dom = ish{i}",
                     "ext = tl.where(at_dim, 1, dom)",
                     "c = rest % ext",
                     "rest = rest // ext",
                     "columns = columns * ext",
                     f"bi += c * ist{i}",
                     f"bo += c * xst{i}",
                     "steps_all = tl.where(at_dim, dom, steps_all)",
                     f"size = tl.where(at_dim, xsh{i}, size)",
                     f"step = tl.where(at_dim, xst{i}, step)",
                     f"istep = tl.where(at_dim, ist{i}, istep)"]
            if src:
                lines += [f"bs += c * sst{i}", f"sstep = tl.where(at_dim, sst{i}, sstep)"]
            return lines
        return per_dim

    def _scatter_kernel(self, ct: str, combine: str, value: str, reset: str, scratch: bool) -> str:
        src = "src_ptr" in value
        widen = "    out_ptr = out_ptr.to(tl.pointer_type(tl.float32), bitcast=True)\n" if scratch else ""
        return f"""@triton.jit
def _kv_scatter(idx_ptr, {"src_ptr, " if src else ""}p_ptr, out_ptr, {_args("xsh", "xst", "ish", "ist")},
                {_args("ssh", "sst") + ", " if src else ""}RANK: tl.constexpr, BLOCK: tl.constexpr):
{widen}    start = tl.program_id(0).to(tl.int64) * BLOCK
    q = start + tl.arange(0, BLOCK)
{_SCATTER_START}
    zero = dim * 0
    columns = zero + 1
    steps_all = zero
    size = zero
    step = zero
    istep = zero
    sstep = zero
{_innermost_first(self._columns(src))}
    active = q < columns
    steps = tl.where(start < columns, steps_all, 0)
{reset}
    for t in range(0, steps):
        target = tl.load(idx_ptr + bi + t * istep, mask=active, other=-1).to(tl.int64)
        ok = active & (target >= 0) & (target < size)
        at = bo + target * step
        {value}
        cur = tl.load(out_ptr + at, mask=ok, other=0).to({ct})
        tl.store(out_ptr + at, ({combine}).to(out_ptr.dtype.element_ty), mask=ok)
"""

    @staticmethod
    def _atomic_kernel(ct: str, const_src: bool, constant: Any, alpha: int) -> str:
        """out[c with c[dim] = index[c]] += src[c], one lane per element c of the domain, atomically."""
        def per_dim(i: int) -> list[str]:
            lines = [f"at_dim = dim == {i}",
                     f"dom = tl.where(from_src != 0, ssh{i}, ish{i})" if not const_src else f"dom = ish{i}",
                     "c = rest % dom",
                     "rest = rest // dom",
                     f"bi += c * ist{i}",
                     f"bo += tl.where(at_dim, 0, c * xst{i})",
                     f"size = tl.where(at_dim, xsh{i}, size)",
                     f"step = tl.where(at_dim, xst{i}, step)"]
            return lines + ([] if const_src else [f"bs += c * sst{i}"])

        value = (f"tl.full([BLOCK], {int(constant)}, {ct})" if const_src
                 else f"tl.load(src_ptr + bs, mask=ok, other=0).to({ct})")
        value = value if alpha == 1 else f"{alpha} * {value}"
        return f"""@triton.jit
def _kv_scatter_add(idx_ptr, {"" if const_src else "src_ptr, "}p_ptr, out_ptr, n, {_args("xsh", "xst", "ish", "ist")},
                    {"" if const_src else _args("ssh", "sst") + ", "}RANK: tl.constexpr, BLOCK: tl.constexpr):
    q = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    active = q < n
{_SCATTER_START}
    size = dim * 0
    step = dim * 0
{_innermost_first(per_dim)}
    target = tl.load(idx_ptr + bi, mask=active, other=-1).to(tl.int64)
    ok = active & (target >= 0) & (target < size)
    tl.atomic_add(out_ptr + bo + target * step, ({value}).to(out_ptr.dtype.element_ty), mask=ok)
"""

    @staticmethod
    def _mean_kernel(ct: str, include_self: bool) -> str:
        """Each output element divided by how many source elements landed on it (plus one for itself with
        include_self), as ATen's mean: count them by walking the element's column."""
        def per_dim(i: int) -> list[str]:
            return [f"at_dim = dim == {i}",
                    f"dom = tl.where(from_src != 0, ssh{i}, ish{i})",
                    f"c = rest % xsh{i}",
                    f"rest = rest // xsh{i}",
                    "inside = tl.where(at_dim, inside, inside & (c < dom))",
                    f"bi += tl.where(at_dim, 0, c * ist{i})",
                    "target = tl.where(at_dim, c, target)",
                    "steps = tl.where(at_dim, dom, steps)",
                    f"istep = tl.where(at_dim, ist{i}, istep)"]

        return f"""@triton.jit
def _kv_scatter_mean(idx_ptr, p_ptr, out_ptr, n, {_args("xsh", "xst", "ish", "ist", "ssh", "sst")},
                     RANK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dim = tl.load(p_ptr)
    from_src = tl.load(p_ptr + 1)
    rest = offs
    inside = mask
    bi = offs * 0
    target = offs * 0
    steps = dim * 0
    istep = dim * 0
{_innermost_first(per_dim)}
    count = offs * 0
    for t in range(0, steps):
        hit = tl.load(idx_ptr + bi + t * istep, mask=inside, other=-1).to(tl.int64) == target
        count += (hit & inside).to(tl.int64)
    count = count + {int(include_self)}
    total = tl.load(out_ptr + offs, mask=mask, other=0).to({ct})
    mean = total / tl.where(count > 0, count, 1).to({ct})
    tl.store(out_ptr + offs, mean.to(out_ptr.dtype.element_ty), mask=mask)
"""

    @staticmethod
    def _launcher(dtypes: list[str], const_src: bool, mean: bool, scratch: bool, params: dict[str, Any],
                  atomic: bool = False) -> str:
        block, launch = params["BLOCK"], launch_args(params, contract=False)
        copies = (f"""
    acc = out.new_empty((n, 2))
    _kv_widen[(triton.cdiv(n, {block}),)](out, acc, n, BLOCK={block}{launch})""",
                  f"""
    _kv_narrow[(triton.cdiv(n, {block}),)](acc, out, n, BLOCK={block}{launch})""") if scratch else ("", "")
        tensors = ("index, params, " if const_src else "index, src, params, ") + ("acc" if scratch else "out")
        src = "index" if const_src else "src"
        unpack = "x, index, params = inputs" if const_src else "x, index, src, params = inputs"
        geometry = "_pad(x.shape) + _pad(x.stride()) + _pad(index.shape) + _pad(_strides(index))"
        source_args = "" if const_src else " + _pad(src.shape) + _pad(src.stride())"
        walk = (f"""_kv_scatter_add[(triton.cdiv(total, {block}),)]({tensors}, total, *geometry{source_args}, RANK=rank,
                                                    BLOCK={block}{launch})""" if atomic else
                f"""_kv_scatter[(triton.cdiv(columns, {block}),)]({tensors}, *geometry{source_args}, RANK=rank,
                                                  BLOCK={block}{launch})""")
        mean_launch = "" if not mean else f"""
    _kv_scatter_mean[(triton.cdiv(n, {block}),)](index, params, out, n, *geometry, *_pad({src}.shape),
                                                  *_pad({src}.stride()), RANK=rank, BLOCK={block}{launch})"""
        return f"""def kernel(inputs, outputs):
{_checks(dtypes, repr((dtypes[0],)))}
    {unpack}
    n = out.numel()
    if n == 0:
        return
    if n != x.numel():
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_copy[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block}{launch})
    if index.numel() == 0:
        return
    rank = x.dim()
    if index.dim() != rank or {src}.dim() != rank or rank > {MAX_RANK}:
        raise RuntimeError("declined: shape or layout it was not written for")
    # the columns (elements of the domain off dim) are at most its size over its smallest extent, whatever dim is
    domain = [max(a, b) for a, b in zip(index.shape, {src}.shape)]
    if min(domain) == 0:
        return
    total = 1
    for size in domain:
        total *= size
    columns = total // min(domain)
    geometry = {geometry}{copies[0]}
    {walk}{copies[1]}{mean_launch}
"""


# --- index_put ---------------------------------------------------------------------------------------------------

class TritonAtenIndexPut(_IndexRecipe):
    """out = x, then out[indices] = values (or += with accumulate), values broadcast to the indexed shape; the
    indexed positions walked in ATen's order (row-major over the broadcast indices, or over the mask's true
    elements), one lane per element of the dimensions not indexed."""

    name = "triton.aten_index_put"
    layout = "index_put"

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        xt, index_types = dtypes[0], dtypes[1:-1]
        mask = index_types == ["bool"]
        if "bool" in index_types and not mask:
            raise ValueError("a boolean mask among other indices")
        ct = compute_type(xt)
        value = "tl.load(v_ptr + vb + v_inner, mask=ok, other=0)"
        update = f"tl.load(out_ptr + at, mask=ok, other=0).to({ct}) + {value}.to({ct})" \
            if k.attrs["accumulate"] else value
        kernel = self._mask_kernel(update) if mask else self._index_kernel(len(index_types), update)
        return _COPY_KERNEL + kernel, self._launcher(dtypes, mask, params)

    @staticmethod
    def _trailing() -> str:
        """Each lane's offset into the values over the dimensions not indexed (innermost first)."""
        return _innermost_first(lambda i: [f"c = rest % tsh{i}", f"rest = rest // tsh{i}", f"v_inner += c * tvs{i}"],
                                rank="TRAIL")

    def _index_kernel(self, count: int, update: str) -> str:
        pointers = ", ".join(f"i{j}_ptr" for j in range(count))
        strides = ", ".join(_args(f"k{j}_") for j in range(count))
        per_index = ", ".join(f"xsh{j}, xst{j}" for j in range(count))

        def lead(i: int) -> list[str]:
            # own names: the vector ``rest`` and ``c`` of the trailing dims live on outside the loop
            return ([f"lc = lrest % lead{i}", f"lrest = lrest // lead{i}", f"vb += lc * lvs{i}"]
                    + [f"off{j} += lc * k{j}_{i}" for j in range(count)])

        offsets = "\n".join(f"        off{j} = b * 0" for j in range(count))
        reads = "\n".join(f"""        v{j} = tl.load(i{j}_ptr + off{j} + s * 0).to(tl.int64)
        v{j} = tl.where(v{j} < 0, v{j} + xsh{j}, v{j})
        ok = ok & (v{j} >= 0) & (v{j} < xsh{j})
        base += v{j} * xst{j}""" for j in range(count))
        return f"""@triton.jit
def _kv_index_put({pointers}, v_ptr, out_ptr, inner, positions, {_args("lead", "lvs", "tsh", "tvs")}, {strides},
                  {per_index}, LEAD: tl.constexpr, TRAIL: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    lanes = s < inner
    rest = s
    v_inner = s * 0
{self._trailing()}
    for b in range(0, positions):
        lrest = b
        vb = b * 0
{offsets}
{_innermost_first(lead, rank="LEAD", indent="        ")}
        ok = lanes
        base = vb * 0
{reads}
        at = base + s
        tl.store(out_ptr + at, ({update}).to(out_ptr.dtype.element_ty), mask=ok)
"""

    def _mask_kernel(self, update: str) -> str:
        return f"""@triton.jit
def _kv_index_put(m_ptr, v_ptr, out_ptr, inner, positions, {_args("lead", "lvs", "tsh", "tvs")},
                  LEAD: tl.constexpr, TRAIL: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    lanes = s < inner
    rest = s
    v_inner = s * 0
{self._trailing()}
    selected = s * 0
    for p in range(0, positions):
        chosen = tl.load(m_ptr + p + s * 0).to(tl.int64)
        vb = selected * lvs0
        ok = lanes & (chosen != 0)
        at = (s * 0 + p) * inner + s
        tl.store(out_ptr + at, ({update}).to(out_ptr.dtype.element_ty), mask=ok)
        selected += chosen
"""

    @staticmethod
    def _launcher(dtypes: list[str], mask: bool, params: dict[str, Any]) -> str:
        block, launch = params["BLOCK"], launch_args(params, contract=False)
        count = len(dtypes) - 2
        if mask:
            lead = """    m = indices[0]
    lead_dims = m.dim()
    if lead_dims == 0 or lead_dims > x.dim() or tuple(m.shape) != tuple(x.shape[:lead_dims]):
        raise RuntimeError("declined: shape or layout it was not written for")
    positions = m.numel()
    lead, index_strides = [-1], []"""
            extra = ""
        else:
            lead = f"""    lead_dims = {count}
    if lead_dims > x.dim():
        raise RuntimeError("declined: more indices than dimensions")
    lr = max(t.dim() for t in indices)
    lead = [1] * lr
    for t in indices:
        for r in range(lr):
            a = r - (lr - t.dim())
            size = 1 if a < 0 else t.shape[a]
            if size != 1 and lead[r] not in (1, size):
                raise RuntimeError("declined: indices that do not broadcast")
            if size != 1:
                lead[r] = size
    index_strides = []
    for t in indices:
        index_strides += _pad([0 if r - (lr - t.dim()) < 0 or t.shape[r - (lr - t.dim())] == 1
                               else t.stride(r - (lr - t.dim())) for r in range(lr)])
    positions = 1
    for size in lead:
        positions *= size"""
            extra = ", " + ", ".join(f"x.shape[{j}], x.stride({j})" for j in range(count))
        return f"""def kernel(inputs, outputs):
{_checks(dtypes, repr((dtypes[0],)))}
    x, *indices, values = inputs
    n = out.numel()
    if n == 0:
        return
    if n != x.numel() or x.dim() == 0:
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_copy[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block}{launch})
{lead}
    trailing = list(x.shape[lead_dims:])
    inner = 1
    for size in trailing:
        inner *= size
    # the indexed result: the leading shape (broadcast indices, or the mask's selection), then the trailing dims
    result = lead + trailing
    rr = len(result)
    if rr > {MAX_RANK} or values.dim() > rr:
        raise RuntimeError("declined: shape or layout it was not written for")
    value_strides = []
    for r in range(rr):
        j = r - (rr - values.dim())
        if j < 0 or values.shape[j] == 1:
            value_strides.append(0)
        elif result[r] not in (-1, values.shape[j]):
            raise RuntimeError("declined: values that do not broadcast to the indexed shape")
        else:
            value_strides.append(values.stride(j))
    if inner == 0 or positions == 0:
        return
    lr = len(lead)
    geometry = _pad(lead, 1) + _pad(value_strides[:lr]) + _pad(trailing, 1) + _pad(value_strides[lr:])
    _kv_index_put[(triton.cdiv(inner, {block}),)](*indices, values, out, inner, positions, *geometry,
                                                   *index_strides{extra}, LEAD=lr, TRAIL=len(trailing),
                                                   BLOCK={block}{launch})
"""


# --- embedding_bag -----------------------------------------------------------------------------------------------

class TritonAtenEmbeddingBag(_IndexRecipe):
    """out[b] = reduce over the bag's indices j (padding_idx skipped) of weight[indices[j]] (times the
    per-sample weight), each row first rescaled to max_norm when its norm exceeds it; one program per
    (bag, BLOCK columns of the row)."""

    name = "triton.aten_embedding_bag"
    layout = "embedding_bag"

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        a = k.attrs
        pointers = "w_ptr, idx_ptr, " + ("off_ptr, " if a["offsets"] else "") + ("psw_ptr, " if a["weights"] else "")
        bounds = """    start = tl.load(off_ptr + b).to(tl.int64)
    has_next = (include_last != 0) | (b + 1 < n_off)
    end = tl.where(has_next, tl.load(off_ptr + b + 1, mask=b + 1 < n_off, other=0).to(tl.int64), n_idx)""" \
            if a["offsets"] else """    start = b * length
    end = start + length"""
        weight = "        sw = tl.load(psw_ptr + j).to(tl.float32)\n" if a["weights"] else ""
        infinity_norm = a["max_norm"] is not None and math.isinf(float(a["norm_type"]))
        kernels = (_COMBINES if infinity_norm else "") + f"""@triton.jit
def _kv_embedding_bag({pointers}p_ptr, out_ptr, rows, D, n_idx, n_off, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    lanes = cols < D
    length = tl.load(p_ptr + 1)
    pad = tl.load(p_ptr + 2)
    include_last = tl.load(p_ptr + 3)
{bounds}
    end = tl.minimum(end, n_idx)
    start = tl.maximum(start, 0)
    acc = tl.full([BLOCK], 0.0, tl.float32)
    used = cols * 0
    for j in range(start, end):
        row = tl.load(idx_ptr + j + cols * 0).to(tl.int64)
        take = (row != pad) & (row >= 0) & (row < rows)
        safe = tl.where(take, row, 0)
        v = tl.load(w_ptr + safe * D + cols, mask=lanes & take, other=0).to(tl.float32)
{self._renorm(a)}{weight}        {self._accumulate(a["mode"], a["weights"])}
        used += take.to(tl.int64)
{"    acc = tl.where(used > 0, acc / tl.maximum(used, 1).to(tl.float32), acc)" if a["mode"] == "mean" else ""}
    tl.store(out_ptr + b * D + cols, acc.to(out_ptr.dtype.element_ty), mask=lanes)
"""
        block, launch = params["BLOCK"], launch_args(params, contract=False)
        n_off = "inputs[2].numel()" if a["offsets"] else "0"
        launcher = f"""def kernel(inputs, outputs):
{_checks(dtypes, repr((dtypes[0],)))}
    weight = inputs[0]
    if weight.dim() != 2:
        raise RuntimeError("declined: shape or layout it was not written for")
    rows, width = weight.shape
    if out.numel() == 0 or width == 0:
        return
    bags = out.numel() // width
    grid = (bags, triton.cdiv(width, {block}))
    _kv_embedding_bag[grid](*inputs, out, rows, width, inputs[1].numel(), {n_off}, BLOCK={block}{launch})
"""
        return kernels, launcher

    @staticmethod
    def _accumulate(mode: str, weighted: bool) -> str:
        if mode == "max":  # ATen: the first row of the bag, then a strictly greater value (NaN stays if first)
            return "acc = tl.where(take & ((used == 0) | (v > acc)), v, acc)"
        return f"acc += tl.where(take, v{' * sw' if weighted else ''}, 0.0)"

    @staticmethod
    def _renorm(a: dict[str, Any]) -> str:
        """The row's norm over all its columns (not only this program's), and the scale embedding_renorm_
        would multiply the row by; the rescaled value rounded to the weight's dtype, as the renormed weight."""
        max_norm = a["max_norm"]
        if max_norm is None:
            return ""
        p = float(a["norm_type"])
        if p == 2.0:
            term, finish = "x * x", "tl.sqrt(total)"
        elif p == 1.0:
            term, finish = "x", "total"
        elif math.isinf(p):
            term, finish = None, "total"
        elif p == 0.0:
            term, finish = "tl.where(x != 0, 1.0, 0.0)", "total"
        else:  # |x|^p by exp2(p log2 |x|) (0 stays 0)
            term = f"tl.where(x > 0, tl.exp2({p!r} * tl.log2(x)), 0.0)"
            finish = f"tl.where(total > 0, tl.exp2({1.0 / p!r} * tl.log2(total)), 0.0)"
        step = "total = _kv_nan_max(total, part)" if term is None else "total += part"
        part = "tl.reduce(x, 0, _kv_nan_max)" if term is None else f"tl.sum({term}, axis=0)"
        return f"""        total = tl.full([], 0.0, tl.float32)
        for c0 in range(0, D, BLOCK):
            at = c0 + tl.arange(0, BLOCK)
            x = tl.abs(tl.load(w_ptr + safe * D + at, mask=(at < D) & take, other=0).to(tl.float32))
            part = {part}
            {step}
        norm = {finish}
        scale = tl.where(norm > {float(max_norm)!r}, {float(max_norm)!r} / (norm + 1e-7), 1.0)
        v = tl.where(norm > {float(max_norm)!r}, (v * scale).to(w_ptr.dtype.element_ty).to(tl.float32), v)
"""


# --- search ------------------------------------------------------------------------------------------------------

class TritonAtenSearch(_IndexRecipe):
    """ATen's cus_lower_bound / cus_upper_bound per value, over its row of the sorted sequence (one row shared
    by every value when the sequence is 1-D), through the sorter when one is given; the output is int64 or
    int32 (the output tensor's dtype)."""

    name = "triton.aten_search"
    layout = "search"

    def parts(self, k: Any, dtypes: list[str], params: dict[str, Any]) -> tuple[str, str]:
        constant = "values" in k.attrs  # searchsorted(sequence, number): one value, compiled in
        sorter = len(dtypes) == (3 if constant else 4)
        value = f"tl.full([BLOCK], {triton_literal(float(k.attrs['values']))}, tl.float32)" if constant \
            else "tl.load(val_ptr + offs, mask=mask, other=0).to(tl.float32)"
        if sorter:
            at = """        s = tl.load(sorter_ptr + mid, mask=live, other=0)
        s = tl.where((s >= 0) & (s < K), s, 0)
        at = s + first"""
        else:
            at = "        at = mid"
        pointers = "seq_ptr, " + ("" if constant else "val_ptr, ") + ("sorter_ptr, " if sorter else "")
        kernels = f"""@triton.jit
def _kv_search({pointers}p_ptr, out_ptr, n, K, M, halvings, ONE_ROW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    right = tl.load(p_ptr)
    if ONE_ROW:
        first = offs * 0
    else:
        first = (offs // M) * K
    lo = first
    hi = first + K
    value = {value}
    for _ in range(0, halvings):
        live = mask & (lo < hi)
        mid = lo + ((hi - lo) >> 1)
{at}
        m = tl.load(seq_ptr + at, mask=live, other=0).to(tl.float32)
        go_up = tl.where(right != 0, ~(m > value), ~(m >= value))
        lo = tl.where(live & go_up, mid + 1, lo)
        hi = tl.where(live & ~go_up, mid, hi)
    tl.store(out_ptr + offs, (lo - first).to(out_ptr.dtype.element_ty), mask=mask)
"""
        block, launch = params["BLOCK"], launch_args(params, contract=False)
        if constant:
            values = """    if not one_row:
        raise RuntimeError("declined: a number searched in several rows")
    M = 1"""
        else:
            values = """    v = inputs[1]
    if n != v.numel():
        raise RuntimeError("declined: shape or layout it was not written for")
    M = v.shape[-1] if v.dim() else 1
    if not one_row and (v.dim() != s.dim() or tuple(v.shape[:-1]) != tuple(s.shape[:-1])):
        raise RuntimeError("declined: values and sequence rows differ")"""
        launcher = f"""def kernel(inputs, outputs):
{_checks(dtypes, "('int64', 'int32')")}
    s = inputs[0]
    n = out.numel()
    if n == 0:
        return
    one_row = s.dim() <= 1
    K = s.shape[-1] if s.dim() else 1
{values}
    # lo < hi shrinks to at most half (rounded down) per step: bit_length(K) + 1 steps always finish
    _kv_search[(triton.cdiv(n, {block}),)](*inputs, out, n, K, M, K.bit_length() + 1, ONE_ROW=one_row,
                                           BLOCK={block}{launch})
"""
        return kernels, launcher


RECIPES = [TritonAtenGather(), TritonAtenScatter(), TritonAtenIndexPut(), TritonAtenEmbeddingBag(),
           TritonAtenSearch()]
