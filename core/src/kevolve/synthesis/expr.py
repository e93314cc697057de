"""A tiny scalar-expression language: the one table all pointwise recipes are printed from.

Each pointwise op is written once here as an expression over named scalar inputs; each backend's emitter
prints it in its own language (C++, numba, Triton) through :func:`render`, supplying only its spelling of
functions and constants. Adding an activation means adding one line here, not one per language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

Number = Union[int, float]


class Expr:
    def __add__(self, other: ExprLike) -> Expr:
        return BinOp("+", self, lift(other))

    def __radd__(self, other: ExprLike) -> Expr:
        return BinOp("+", lift(other), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return BinOp("-", self, lift(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return BinOp("-", lift(other), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return BinOp("*", self, lift(other))

    def __rmul__(self, other: ExprLike) -> Expr:
        return BinOp("*", lift(other), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return BinOp("/", self, lift(other))

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return BinOp("/", lift(other), self)

    def __neg__(self) -> Expr:
        return Call("neg", (self,))


ExprLike = Union[Expr, Number]


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: float


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, eq=False)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]


def lift(value: ExprLike) -> Expr:
    return value if isinstance(value, Expr) else Const(float(value))


def _fn(name: str) -> Callable[..., Expr]:
    def make(*args: ExprLike) -> Expr:
        return Call(name, tuple(lift(a) for a in args))

    make.__name__ = name
    return make


exp, log, erf, tanh, sqrt, rsqrt, absolute = (_fn(n) for n in ("exp", "log", "erf", "tanh", "sqrt", "rsqrt", "abs"))
maximum, minimum = _fn("max"), _fn("min")

#: every function an emitter must spell
FUNCTIONS = ("exp", "log", "erf", "tanh", "sqrt", "rsqrt", "abs", "max", "min", "neg")

# The functions below are used by the ATen conformance table (kevolve.conformance.table), not by POINTWISE: an
# emitter spells those it can and raises "no <language> spelling for <fn>" for the others.
(exp2, expm1, log2, log10, log1p, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erfc, erfinv,
 lgamma, floor, ceil, trunc, nearbyint, isnan, bitwise_not, power) = (_fn(n) for n in (
    "exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh", "erfc", "erfinv", "lgamma", "floor", "ceil", "trunc", "nearbyint", "isnan", "bitwise_not",
    "pow"))
fmod, copysign, atan2, hypot, fmax, bitwise_and, bitwise_xor = (_fn(n) for n in (
    "fmod", "copysign", "atan2", "hypot", "fmax", "bitand", "bitxor"))
#: ``where(cond, a, b)``; comparisons and logical operators give a truth value (1/0) usable as a condition
where = _fn("where")
#: the value rounded to the kernel's storage dtype and back (identity for float32): where ATen's vectorised
#: bfloat16 path rounds an intermediate (e.g. the quotient before div's trunc)
round_storage = _fn("round_storage")
lt, le, gt, ge, eq, ne = (_fn(n) for n in ("lt", "le", "gt", "ge", "eq", "ne"))
logical_and, logical_or, logical_not = _fn("and"), _fn("or"), _fn("not")
#: the extended set: what an emitter must spell to print every conformance expression
MORE_FUNCTIONS = ("exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                  "cosh", "asinh", "acosh", "atanh", "erfc", "erfinv", "lgamma", "floor", "ceil", "trunc",
                  "nearbyint", "isnan", "bitwise_not", "pow", "fmod", "copysign", "atan2", "hypot", "fmax",
                  "bitand", "bitxor", "where", "round_storage", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not")


def render(expr: Expr, spell: Callable[[str, list[str]], str], const: Callable[[float], str]) -> str:
    """Print ``expr``: ``spell(fn, rendered_args)`` writes a call, ``const(value)`` a literal."""
    if isinstance(expr, Var):
        return expr.name
    if isinstance(expr, Const):
        return const(expr.value)
    if isinstance(expr, BinOp):
        return f"({render(expr.left, spell, const)} {expr.op} {render(expr.right, spell, const)})"
    if isinstance(expr, Call):
        return spell(expr.fn, [render(a, spell, const) for a in expr.args])
    raise TypeError(f"not an expression: {expr!r}")


def substitute(expr: Expr, values: dict[str, Expr]) -> Expr:
    """``expr`` with each variable named in ``values`` replaced by that expression: how a chain of pointwise ops
    becomes one expression (:mod:`kevolve.program.fuse`)."""
    if isinstance(expr, Var):
        return values.get(expr.name, expr)
    if isinstance(expr, BinOp):
        return BinOp(expr.op, substitute(expr.left, values), substitute(expr.right, values))
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(substitute(a, values) for a in expr.args))
    return expr


def variables(expr: Expr) -> set[str]:
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, BinOp):
        return variables(expr.left) | variables(expr.right)
    if isinstance(expr, Call):
        return set().union(*(variables(a) for a in expr.args))
    return set()


def used_functions(expr: Expr) -> set[str]:
    if isinstance(expr, Call):
        return {expr.fn}.union(*(used_functions(a) for a in expr.args))
    if isinstance(expr, BinOp):
        return used_functions(expr.left) | used_functions(expr.right)
    return set()


x, y = Var("x"), Var("y")

#: op name -> (input variable names, expression). The PyTorch reference stays the truth; this is what kernels
#: compute.
POINTWISE: dict[str, tuple[tuple[str, ...], Expr]] = {
    "exp": (("x",), exp(x)),
    "sigmoid": (("x",), 1.0 / (1.0 + exp(-x))),
    "tanh": (("x",), tanh(x)),
    "relu": (("x",), maximum(x, 0.0)),
    "gelu": (("x",), 0.5 * x * (1.0 + erf(x * 0.7071067811865476))),
    "silu": (("x",), x / (1.0 + exp(-x))),
    "add": (("x", "y"), x + y),
    "mul": (("x", "y"), x * y),
}


@dataclass(frozen=True)
class Reduction:
    """A row reduction: ``acc = combine(acc, value)`` from ``identity``, then ``finalize(acc, n)``."""

    combine: str  # "+" or "max"
    identity: float
    divide_by_count: bool = False


REDUCTIONS: dict[str, Reduction] = {
    "sum": Reduction("+", 0.0),
    "mean": Reduction("+", 0.0, divide_by_count=True),
    "amax": Reduction("max", float("-inf")),
}
