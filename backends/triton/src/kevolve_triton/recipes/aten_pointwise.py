"""ATen conformance kernels in Triton: one elementwise kernel printed from a
:class:`~kevolve.conformance.kernel.KernelSpec` (the scalar expression of core's conformance table, attributes
baked in as constants), with the device functions of :mod:`kevolve_triton.recipes.tl_math` it uses.

Layouts: ``same`` (flat), ``broadcast`` (each input indexed through its strides at the output's shape, 0
where it broadcasts; the host drops size-1 dimensions and merges contiguous ones, so the kernel handles up to
:data:`MAX_RANK` after that, unrolled for the launch's rank as a constexpr) and ``halves`` (GLU: ``a`` and ``b``
are the two halves of one input along ``dim``). Values are loaded in their storage dtype and computed in
float32 (integer kernels in int64, bool ones in int1), stored in the output's dtype. The host side only checks
the arguments (counts, dtypes, shapes; anything else raises a "declined" error) and computes sizes and strides.
"""

from __future__ import annotations

from typing import Any

from kevolve import diagnosis as d
from kevolve.conformance.kernel import conformance_kernel
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import Expr
from kevolve.synthesis.recipe import Recipe
from kevolve.synthesis.schedule import Param, ScheduleSpace
from kevolve.target import MachineFacts

from kevolve_triton.recipes import tl_math
from kevolve_triton.recipes.common import header, launch_args, launch_params, pow2_range, triton_expr, triton_literal
from kevolve_triton.recipes.host import DTYPE_NAME, host_functions

#: storage dtype name -> Triton element type; every value is computed in :func:`compute_type` of the first input
TL_STORAGE = {"float32": "tl.float32", "bfloat16": "tl.bfloat16", "float16": "tl.float16", "int64": "tl.int64",
              "int32": "tl.int32", "bool": "tl.int1"}
LAYOUTS = ("same", "broadcast", "halves")
#: dimensions a broadcast kernel indexes after the host has dropped size-1 dimensions and merged contiguous ones
MAX_RANK = 6


def compute_type(dtype: str) -> str:
    """float32 for floating inputs (bfloat16/float16 widened, like ATen's opmath), int64 for integers, int1 for
    bool (so that ``~`` is a logical not)."""
    return {"int64": "tl.int64", "int32": "tl.int64", "bool": "tl.int1"}.get(dtype, "tl.float32")


def literal_for(ct: str) -> Any:
    """Constants of an integer kernel printed as integers where they are (``x & 3``, not ``x & 3.0``)."""
    if ct == "tl.float32":
        return triton_literal

    def integer(value: float) -> str:
        return str(int(value)) if float(value).is_integer() else triton_literal(value)

    return integer


def kernel_expr(expr: Expr, ct: str, storage: str = "float32") -> str:
    """The expression in Triton, with this library's spellings and constants made 0-d tensors where a function
    needs a tensor argument; ``round_storage`` rounds to ``storage`` and back (a no-op for float32)."""
    missing = tl_math.unsupported(expr)
    if missing:
        raise ValueError(f"no Triton spelling for {', '.join(missing)}")
    rounding = "({})" if TL_STORAGE.get(storage, ct) == ct else f"({{}}).to({TL_STORAGE[storage]}).to({ct})"
    spellings = {**tl_math.SPELLINGS, tl_math.SCALAR: f"tl.full([], {{}}, {ct})", "round_storage": rounding}
    if ct == "tl.int64":  # exact: C's remainder of integers (srem; the interpreter's np.fmod), not through floats
        spellings["fmod"] = "(({}) % ({}))"
    else:
        expr = tl_math.exact_division(expr)
    return triton_expr(tl_math.scalar_args(expr), spellings, literal_for(ct))


class TritonAtenPointwise(Recipe):
    name = "triton.aten_pointwise"
    language = "triton"
    families = ("aten_pointwise",)

    def supports(self, problem: Problem) -> bool:
        kernel = conformance_kernel(problem, LAYOUTS)
        return (kernel is not None and kernel.expr is not None and len(kernel.outputs) == 1
                and kernel.all_dtypes_in(TL_STORAGE))

    def space(self, problem: Problem, facts: MachineFacts) -> ScheduleSpace:
        return ScheduleSpace([
            Param("BLOCK", pow2_range(256, 4096), {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
                  default=1024),
            *launch_params(facts, self.families[0]),
        ])

    def render(self, problem: Problem, params: dict[str, Any]) -> str:
        k = problem.kernel  # type: ignore[attr-defined]
        first = k.inputs[0][1] if k.inputs else k.out_dtype  # no input: a fill (``torch.zeros``)
        ct = compute_type(first)
        value = kernel_expr(k.expr, ct, first)
        if not k.inputs:  # a constant's value at every element
            value = f"tl.full([BLOCK], 0, {ct}) + ({value})"
        # halves: one tensor (pointer x) holds both variables a and b
        sources = (("x", k.inputs[0][1]),) if k.layout == "halves" else k.inputs
        body = _device_kernel(k.layout, [n for n, _ in sources], k.inputs, ct, value)
        return (header(problem, params) + tl_math.helper_sources(value) + body + "\n\n"
                + _launcher(k.layout, sources, k.out_dtype, k.dim, params))


def _device_kernel(layout: str, pointers: list[str], variables: tuple[tuple[str, str], ...], ct: str,
                   value: str) -> str:
    """The @triton.jit kernel: per-layout offsets of each input, loads widened to the compute type, the
    expression, the store."""
    if layout == "broadcast":
        dims = [f"kv_s{d}" for d in range(MAX_RANK)]
        strides = [f"{p}_st{d}" for p in pointers for d in range(MAX_RANK)]
        extra = ", ".join(dims + strides) + ", RANK: tl.constexpr"
        lines = ["    kv_rest = kv_offs"] + [f"    {p}_off = kv_offs * 0" for p in pointers]
        for dim in range(MAX_RANK):
            lines.append(f"    if RANK > {dim}:")
            lines.append(f"        kv_c = kv_rest % kv_s{dim}")
            lines.append(f"        kv_rest = kv_rest // kv_s{dim}")
            lines += [f"        {p}_off += kv_c * {p}_st{dim}" for p in pointers]
        index = "\n".join(lines)
    elif layout == "halves":
        extra = "kv_inner, kv_half"
        index = ("    kv_row = kv_offs // (kv_inner * kv_half)\n"
                 "    a_off = kv_row * (2 * kv_half * kv_inner) + (kv_offs - kv_row * (kv_inner * kv_half))\n"
                 "    b_off = a_off + kv_half * kv_inner")
    else:
        extra = ""
        index = "\n".join(f"    {p}_off = kv_offs" for p in pointers)
    source = "x" if layout == "halves" else None
    loads = "\n".join(f"    {name} = tl.load({source or name}_ptr + {name}_off, mask=kv_mask).to({ct})"
                      for name, _ in variables)
    args = ", ".join([f"{p}_ptr" for p in pointers] + ["out_ptr", "kv_n"] + ([extra] if extra else []))
    return f"""@triton.jit
def _kv_aten_kernel({args}, BLOCK: tl.constexpr):
    kv_offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kv_mask = kv_offs < kv_n
{index}
{loads}
    kv_result = {value}
    tl.store(out_ptr + kv_offs, kv_result.to(out_ptr.dtype.element_ty), mask=kv_mask)"""


def _launcher(layout: str, sources: tuple[tuple[str, str], ...], out_dtype: str, dim: int,
              params: dict[str, Any]) -> str:
    """The host function the runner calls: argument checks (a mismatch declines), sizes and strides, launch."""
    dtypes = repr(tuple(dt for _, dt in sources))
    block = params["BLOCK"]
    launch = launch_args(params, contract=False)
    if layout == "broadcast":
        prepare = f"""    sizes, strides = _broadcast_layout(inputs, out)
    flat = [s for row in strides for s in row]
    _kv_aten_kernel[grid](*inputs, out, n, *sizes, *flat, RANK=len(sizes) - sizes.count(0), BLOCK={block}{launch})"""
        helper = _BROADCAST_HOST.replace("MAX_RANK", str(MAX_RANK))
    elif layout == "halves":
        prepare = f"""    x = inputs[0]
    if x.dim() <= {dim} or out.dim() != x.dim() or x.shape[{dim}] % 2 != 0:
        raise RuntimeError("declined: shape or layout it was not written for")
    inner = 1
    for size in x.shape[{dim} + 1:]:
        inner *= size
    half = x.shape[{dim}] // 2
    if x.numel() != 2 * n:
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_aten_kernel[grid](x, out, n, inner, half, BLOCK={block}{launch})"""
        helper = ""
    else:
        prepare = f"""    if any(t.numel() != n for t in inputs):
        raise RuntimeError("declined: shape or layout it was not written for")
    _kv_aten_kernel[grid](*inputs, out, n, BLOCK={block}{launch})"""
        helper = ""
    return f"""{helper}{host_functions(DTYPE_NAME)}def kernel(inputs, outputs):
    if len(inputs) != {len(sources)} or len(outputs) != 1:
        raise RuntimeError("declined: wrong number of tensors")
    out = outputs[0]
    if tuple(_dtype_name(t) for t in inputs) != {dtypes} or _dtype_name(out) != "{out_dtype}":
        raise RuntimeError("declined: dtype")
    n = out.numel()
    if n == 0:
        return
    grid = (triton.cdiv(n, {block}),)
{prepare}
"""


#: host code of broadcast kernels (copied into the kernel file): each input's element strides at the output's
#: shape, size-1 dimensions dropped, contiguous neighbours merged, padded to MAX_RANK (size 0 marks padding)
_BROADCAST_HOST = '''def _broadcast_layout(inputs, out):
    """Sizes (innermost first) and per-input strides (0 where an input broadcasts) of the output's dimensions,
    size-1 ones dropped and contiguous neighbours merged; padded to MAX_RANK with size 0."""
    shape = list(out.shape)
    for t in inputs:
        if t.dim() != len(shape) or any(a != b and a != 1 for a, b in zip(t.shape, shape)):
            raise RuntimeError("declined: shape or layout it was not written for")
    sizes, strides = [], [[] for _ in inputs]
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1:
            continue
        col = [t.stride(d) if t.shape[d] != 1 else 0 for t in inputs]
        if sizes and all(c == row[-1] * sizes[-1] for c, row in zip(col, strides)):
            sizes[-1] *= shape[d]
            continue
        sizes.append(shape[d])
        for row, c in zip(strides, col):
            row.append(c)
    if not sizes:
        sizes, strides = [1], [[0] for _ in inputs]
    if len(sizes) > MAX_RANK:
        raise RuntimeError(f"declined: {len(sizes)} dimensions after merging (the kernel indexes MAX_RANK)")
    pad = MAX_RANK - len(sizes)
    return sizes + [0] * pad, [row + [0] * pad for row in strides]


'''


RECIPES = [TritonAtenPointwise()]
