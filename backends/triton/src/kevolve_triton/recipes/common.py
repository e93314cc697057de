"""What every Triton recipe shares: the file header, dtype spellings, the expression printer, and the launch
knobs a target exposes.

Launch knobs come from the target's TOML (``[facts.extra.triton.launch]`` for every family,
``[facts.extra.triton.launch_<family>]`` for one family, ``[facts.extra.triton.defaults]``), so a backend adds
its own (AMD's ``waves_per_eu``, ``matrix_instr_nonkdim``, ``kpack``) by listing them, not by copying recipes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch
from kevolve import diagnosis as d
from kevolve.problems.problem import Problem
from kevolve.synthesis.expr import Expr, render
from kevolve.synthesis.schedule import Param
from kevolve.target import MachineFacts

from kevolve_triton.device import triton_facts

#: floating dtypes the catalog's Triton kernels load and store (they compute in float32; float64 would lose
#: precision there)
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

TL_TYPES = {
    torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64", torch.int64: "tl.int64", torch.int32: "tl.int32",
}

#: Triton's launch options (keywords of ``kernel[grid](..., num_warps=4)``), as opposed to constexprs
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")

#: how Triton's own launch knobs respond to a diagnosis (+1: next choice, -1: previous); a target's TOML may
#: add or override responses for its knobs under ``[facts.extra.triton.responds.<knob>]``
RESPONSES: dict[str, dict[str, int]] = {
    "num_warps": {d.SPILL_BOUND: +1, d.LATENCY_BOUND: -1, d.COMPUTE_BOUND: +1},
    "num_stages": {d.MEMORY_BOUND: +1, d.SPILL_BOUND: -1, d.OCCUPANCY_LIMITED: -1},
}


#: combine functions for tl.reduce / tl.associative_scan, defined in the kernel file: tl.sum, tl.max, tl.cumsum,
#: tl.zeros and tl.cdiv are @jit helpers of triton.language.standard, which Triton's interpreter cannot call when
#: triton was imported before TRITON_INTERPRET was set (as in the harness's workers)
COMBINES = """@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _max(a, b):
    return tl.maximum(a, b)


"""


#: a kernel file's check, at launch, that its tensors suit host-side tensor descriptors
TMA_READY = """def _tma_ready(*tensors):
    \"\"\"TMA needs 16-byte aligned bases and strides and contiguous rows; other layouts take the pointer
    kernel.\"\"\"
    return all(t.numel() > 0 and t.stride(-1) == 1 and t.data_ptr() % 16 == 0
               and all(s * t.element_size() % 16 == 0 for s in t.stride()[:-1]) for t in tensors)


"""


def with_tensor_descriptors(text: str) -> str:
    """A rendered kernel file that also imports Triton's host-side tensor descriptors."""
    return text.replace("import triton.language as tl\n", "import triton.language as tl\n"
                        "from triton.tools.tensor_descriptor import TensorDescriptor\n", 1)


def compute_type(dtype: torch.dtype) -> str:
    return "tl.float64" if dtype == torch.float64 else "tl.float32"


def tl_type(dtype: torch.dtype) -> str:
    return TL_TYPES[dtype]


def persistent_body(call: Callable[[str, int], str], first: str, var: str, bounds: str, setup: str = "") -> str:
    """A launched kernel's body under a ``PROGRAMS`` constexpr: 0 does one unit of work (``first``: the program's
    own); otherwise the grid is persistent and each program walks ``var`` over ``range(bounds)``, every
    PROGRAMS-th unit from its own. ``call(unit, indent)`` spells the work on one unit (an inlined jit helper,
    so the one-unit kernel compiles as if written directly)."""
    return (f"    if PROGRAMS == 0:\n        {call(first, 8)}\n"
            f"    else:  # persistent: every PROGRAMS-th unit from the program's own\n{setup}"
            f"        for {var} in range({bounds}):\n            {call(var, 12)}\n")


def header(problem: Problem, params: dict[str, Any]) -> str:
    return (f"# kevolve generated kernel: {problem.describe()}\n"
            f"# parameters: {', '.join(f'{k}={v}' for k, v in params.items())}\n"
            "import triton\nimport triton.language as tl\n\n\n")


_SPELLINGS = {
    "exp": "tl.exp({})", "log": "tl.log({})", "erf": "tl.erf({})", "sqrt": "tl.sqrt({})",
    "rsqrt": "tl.rsqrt({})", "abs": "tl.abs({})", "neg": "(-{})",
    # no tanh in portable Triton; this form is exact to a few ulps away from 0 and saturates correctly
    "tanh": "(2.0 / (1.0 + tl.exp(-2.0 * {})) - 1.0)",
}


def triton_literal(value: float) -> str:
    """A float literal as Triton's code generator reads it (infinities and NaN through ``float(...)``)."""
    if math.isnan(value):
        return "float('nan')"
    return (f"{'' if value > 0 else '-'}float('inf')") if math.isinf(value) else repr(float(value))


def triton_expr(expr: Expr, spellings: Mapping[str, str] | None = None,
                literal: Callable[[float], str] = triton_literal) -> str:
    """Print a core scalar expression in Triton. max/min propagate NaN like torch. ``spellings`` adds to (or
    overrides) the catalog's spellings: the conformance recipes pass the functions of
    :mod:`kevolve_triton.recipes.tl_math`; ``literal`` prints constants (e.g. as integers in integer kernels)."""
    table = {**_SPELLINGS, **spellings} if spellings else _SPELLINGS

    def spell(fn: str, args: list[str]) -> str:
        if fn in table:
            return table[fn].format(*args)
        if fn in ("max", "min"):
            cmp = ">" if fn == "max" else "<"
            return f"tl.where(({args[0]} {cmp} {args[1]}) | ({args[0]} != {args[0]}), {args[0]}, {args[1]})"
        raise ValueError(f"no Triton spelling for {fn}")

    return render(expr, spell, literal)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(0, (int(n) - 1).bit_length())


def with_defaults(params: list[Param], **defaults: Any) -> list[Param]:
    """Launch knobs with a recipe's own defaults, where the target offers that choice."""
    return [replace(p, default=defaults[p.name]) if defaults.get(p.name) in p.choices else p for p in params]


def per_thread_ok(elements: int, params: dict[str, Any], lanes: int, low: int, high: int) -> bool:
    """A tile of ``elements`` spread over the program's threads gives each between ``low`` and ``high``."""
    threads = lanes * params.get("num_warps", 4)
    return low * threads <= elements <= high * threads


def pow2_range(low: int, high: int) -> tuple[int, ...]:
    """Powers of two from ``low`` to ``high`` inclusive (at least ``(low,)``)."""
    out, value = [], low
    while value <= high:
        out.append(value)
        value *= 2
    return tuple(out) or (low,)


def launch_params(facts: MachineFacts, family: str) -> list[Param]:
    """The launch knobs the target lists for every family and for ``family``, with their responses."""
    table = triton_facts(facts)
    knobs = {**table.get("launch", {"num_warps": [1, 2, 4, 8]}), **table.get(f"launch_{family}", {})}
    defaults = table.get("defaults", {})
    responds = {**RESPONSES, **table.get("responds", {})}
    params = []
    for name, choices in knobs.items():
        if name not in LAUNCH_OPTIONS:
            raise ValueError(f"[facts.extra.triton] lists {name!r}, not a Triton launch option {LAUNCH_OPTIONS}")
        default = defaults.get(name)
        params.append(Param(name, tuple(choices), dict(responds.get(name, {})),
                            default=default if default in choices else None))
    return params


def launch_args(params: dict[str, Any], *, contract: bool = True) -> str:
    """The launch keywords of a parameter point, to append to a kernel launch's argument list. ``contract``
    False compiles without fusing ``a * b + c`` into one multiply-add: the ATen conformance kernels do, because
    their reference (ATen's CPU loops, like the interpreter) rounds the product, and where the sum cancels a
    fused result lands ulps away (bfloat16 binary_cross_entropy_with_logits on the H100)."""
    fusion = "" if contract else ", enable_fp_fusion=False"
    return "".join(f", {name}={params[name]!r}" for name in LAUNCH_OPTIONS if name in params) + fusion


def warp_size(facts: MachineFacts) -> int:
    return int(triton_facts(facts).get("warp_size", 32))
