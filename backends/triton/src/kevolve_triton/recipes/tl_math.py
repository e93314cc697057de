"""A float32 math library of ``@triton.jit`` device functions, and the Triton spelling of every function of
:mod:`kevolve.synthesis.expr` that the conformance table uses.

Why our own: ``triton.language.extra.libdevice`` (extern_elementwise) is not implemented by the Triton
interpreter, so a kernel that calls it can be checked nowhere but on a GPU. Everything here is built from the
``tl`` primitives that both the interpreter and the GPU compilers implement (exp, exp2, log, log2, sin, cos,
sqrt, erf, floor, ceil, abs, where, bitcast, integer arithmetic, comparisons), with the classic algorithms
(Taylor and atanh series on reduced ranges, Stirling's series with reflection, Giles' erfinv), and the
special values (NaN, infinities, signed zeros, domain edges) of C's libm, which ATen's CPU kernels call.

Each device function is defined here once; a kernel file gets the source of only those it uses (and what they
call), through :func:`helper_sources`, so generated files stay self-contained. All helpers assume float32
arguments (bfloat16 and float16 are widened to float32 before they are called).
"""

from __future__ import annotations

import inspect
import re
from functools import cache

import triton
import triton.language as tl
from kevolve.synthesis.expr import BinOp, Call, Const, Expr, used_functions

PI = 3.141592653589793
LN2 = 0.6931471805599453


@triton.jit
def _kv_isnan(x):
    return x != x  # noqa: PLR0124 - NaN is the one value unequal to itself


@triton.jit
def _kv_signbit(x):
    """The sign bit, so that -0.0 counts as negative (atan2, pow and copysign need it)."""
    return x.to(tl.int32, bitcast=True) < 0


@triton.jit
def _kv_copysign(x, y):
    ax = tl.abs(x)
    return tl.where(_kv_signbit(y), -ax, ax)


@triton.jit
def _kv_trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))


@triton.jit
def _kv_nearbyint(x):
    """Round half to even. x - floor(x) is exact, so no x + 0.5 rounding can push 0.49999997 up to 1."""
    f = tl.floor(x)
    d = x - f
    half = f * 0.5
    odd = tl.floor(half) != half
    up = (d > 0.5) | ((d == 0.5) & odd)
    return tl.where(up, f + 1.0, f)


@triton.jit
def _kv_fmod(x, y):
    """C fmod, exact: Triton's float % (LLVM frem) is fmod in the interpreter but x - trunc(x / y) * y on
    NVIDIA, wrong once the quotient passes 2^24. Here in float64, |y| scaled by 2^k to within 2^27 of the
    remainder: each step takes floor(r / (|y| 2^k)) multiples of it off exactly (28-bit quotient times 24-bit
    divisor fits 53 bits) and shortens the exponent gap by 27, so 12 steps cover float32's 277 binades."""
    r = tl.abs(x).to(tl.float64)
    b = tl.abs(y).to(tl.float64)
    eb = (b.to(tl.int64, bitcast=True) >> 52) & 2047
    for _ in tl.static_range(12):
        er = (r.to(tl.int64, bitcast=True) >> 52) & 2047
        k = tl.minimum(tl.maximum(er - eb - 27, 0), 1000)
        bk = b * ((k + 1023) << 52).to(tl.float64, bitcast=True)
        r = r - tl.floor(r / bk) * bk
        r = tl.where(r < 0.0, r + bk, r)
        r = tl.where(r >= bk, r - bk, r)
    out = _kv_copysign(r.to(tl.float32), x)
    out = tl.where((tl.abs(y) == float("inf")) & (tl.abs(x) != float("inf")), x, out)
    bad = (y == 0.0) | (tl.abs(x) == float("inf")) | _kv_isnan(x) | _kv_isnan(y)
    return tl.where(bad, float("nan"), out)


@triton.jit
def _kv_fmax(x, y):
    """fmax ignores a NaN operand (tl.maximum's NaN behaviour differs between targets)."""
    return tl.where(_kv_isnan(x), y, tl.where(_kv_isnan(y), x, tl.where(x > y, x, y)))


@triton.jit
def _kv_expm1(x):
    """Taylor series to x^11 on |x| < 0.5 (truncation below 1e-9 relative), exp(x) - 1 elsewhere, where the
    subtraction loses at most a couple of bits."""
    p = 1.0 / 39916800.0
    p = 1.0 / 3628800.0 + x * p
    p = 1.0 / 362880.0 + x * p
    p = 1.0 / 40320.0 + x * p
    p = 1.0 / 5040.0 + x * p
    p = 1.0 / 720.0 + x * p
    p = 1.0 / 120.0 + x * p
    p = 1.0 / 24.0 + x * p
    p = 1.0 / 6.0 + x * p
    p = 0.5 + x * p
    small = x + x * x * p
    return tl.where(tl.abs(x) < 0.5, small, tl.exp(x) - 1.0)


@triton.jit
def _kv_log1p(x):
    """log(1 + x) = 2 atanh(s), s = x / (2 + x): on -0.3 < x < 0.5, |s| <= 0.2 and the odd series to s^15 is
    exact to float32; elsewhere 1 + x rounds by less than an ulp of the result."""
    s = x / (2.0 + x)
    z = s * s
    p = 1.0 / 15.0
    p = 1.0 / 13.0 + z * p
    p = 1.0 / 11.0 + z * p
    p = 1.0 / 9.0 + z * p
    p = 1.0 / 7.0 + z * p
    p = 1.0 / 5.0 + z * p
    p = 1.0 / 3.0 + z * p
    series = 2.0 * (s + s * z * p)
    return tl.where((x > -0.3) & (x < 0.5), series, tl.log(1.0 + x))


@triton.jit
def _kv_log10(x):
    return tl.log2(x) * 0.30102999566398120


@triton.jit
def _kv_tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _kv_atan_unit(t):
    """atan on [0, 1]: t > tan(pi/8) is moved to (t - 1) / (t + 1) (adding pi/4), then the Taylor series to
    u^19 on |u| <= 0.4143 (next term below 5e-10)."""
    big = t > 0.41421356237309503
    u = tl.where(big, (t - 1.0) / (t + 1.0), t)
    z = u * u
    p = -1.0 / 19.0
    p = 1.0 / 17.0 + z * p
    p = -1.0 / 15.0 + z * p
    p = 1.0 / 13.0 + z * p
    p = -1.0 / 11.0 + z * p
    p = 1.0 / 9.0 + z * p
    p = -1.0 / 7.0 + z * p
    p = 1.0 / 5.0 + z * p
    p = -1.0 / 3.0 + z * p
    r = u + u * z * p
    return tl.where(big, r + 0.78539816339744831, r)


@triton.jit
def _kv_atan(x):
    a = tl.abs(x)
    inv = a > 1.0
    r = _kv_atan_unit(tl.where(inv, 1.0 / a, a))
    r = tl.where(inv, 1.5707963267948966 - r, r)
    return _kv_copysign(r, x)


@triton.jit
def _kv_atan2(y, x):
    """C atan2: the quadrant from the signs (the sign bit of x, so atan2(+-0, -0) = +-pi), both-infinite cases
    at odd multiples of pi/4, NaN from either operand."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    swap = ay > ax
    num = tl.where(swap, ax, ay)
    den = tl.where(swap, ay, ax)
    r = num / den
    r = tl.where(den == 0.0, 0.0, r)
    r = tl.where((num == float("inf")) & (den == float("inf")), 1.0, r)
    a = _kv_atan_unit(r)
    a = tl.where(swap, 1.5707963267948966 - a, a)
    a = tl.where(_kv_signbit(x), 3.141592653589793 - a, a)
    a = _kv_copysign(a, y)
    return tl.where(_kv_isnan(x) | _kv_isnan(y), x + y, a)


@triton.jit
def _kv_asin(x):
    return _kv_atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def _kv_acos(x):
    return _kv_atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)


@triton.jit
def _kv_tanh(x):
    """t / (t + 2) with t = expm1(2|x|): accurate near 0 (where 1 - 2 / (exp(2x) + 1) cancels) and exactly 1
    beyond |x| = 10."""
    a = tl.abs(x)
    t = _kv_expm1(2.0 * a)
    r = tl.where(a > 10.0, 1.0, t / (t + 2.0))
    return _kv_copysign(r, x)


@triton.jit
def _kv_sinh(x):
    """(t + t / (t + 1)) / 2 with t = expm1(|x|); exp(|x| - ln 2) from |x| = 20 on, which stays finite up to
    sinh's own overflow (89.4) where exp(|x|) / 2 would overflow at 88.7."""
    a = tl.abs(x)
    t = _kv_expm1(a)
    r = tl.where(a > 20.0, tl.exp(a - 0.6931471805599453), 0.5 * (t + t / (t + 1.0)))
    return _kv_copysign(r, x)


@triton.jit
def _kv_cosh(x):
    a = tl.abs(x)
    e = tl.exp(a)
    return tl.where(a > 20.0, tl.exp(a - 0.6931471805599453), 0.5 * (e + 1.0 / e))


@triton.jit
def _kv_asinh(x):
    """log1p(a + a^2 / (1 + sqrt(1 + a^2))) keeps the small-|x| accuracy; log(a) + ln 2 beyond 4096, where
    a^2 would overflow first."""
    a = tl.abs(x)
    r = tl.where(a > 4096.0, tl.log(a) + 0.6931471805599453,
                 _kv_log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a))))
    return _kv_copysign(r, x)


@triton.jit
def _kv_acosh(x):
    t = x - 1.0
    r = tl.where(x > 4096.0, tl.log(x) + 0.6931471805599453, _kv_log1p(t + tl.sqrt(2.0 * t + t * t)))
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def _kv_atanh(x):
    a = tl.abs(x)
    return _kv_copysign(0.5 * _kv_log1p(2.0 * a / (1.0 - a)), x)


@triton.jit
def _kv_erfc(x):
    """1 - erf(x) up to x = 2 (erfc(2) = 0.005: at most 8 bits lost); beyond, exp(-x^2) / (x sqrt(pi)) over
    Laplace's continued fraction (evaluated bottom-up, 40 levels), so the tail keeps its relative accuracy
    instead of rounding to 0 past erf's last ulp."""
    a = tl.maximum(x, 2.0)
    z = 2.0 * a * a
    f = 1.0
    for k in tl.static_range(40, 0, -1):
        f = 1.0 + k / z / f
    e = tl.exp(-a * a) / (a * 1.7724538509055160 * f)
    return tl.where(x > 2.0, e, 1.0 - tl.erf(x))


@triton.jit
def _kv_erfinv(x):
    """Giles' single-precision approximation ('Approximating the erfinv function', GPU Computing Gems): two
    polynomials in w = -log(1 - x^2); +-inf at +-1, NaN outside [-1, 1]."""
    w = -tl.log((1.0 - x) * (1.0 + x))
    c = w - 2.5
    p = 2.81022636e-08
    p = 3.43273939e-07 + p * c
    p = -3.5233877e-06 + p * c
    p = -4.39150654e-06 + p * c
    p = 0.00021858087 + p * c
    p = -0.00125372503 + p * c
    p = -0.00417768164 + p * c
    p = 0.246640727 + p * c
    p = 1.50140941 + p * c
    s = tl.sqrt(w) - 3.0
    q = -0.000200214257
    q = 0.000100950558 + q * s
    q = 0.00134934322 + q * s
    q = -0.00367342844 + q * s
    q = 0.00573950773 + q * s
    q = -0.0076224613 + q * s
    q = 0.00943887047 + q * s
    q = 1.00167406 + q * s
    q = 2.83297682 + q * s
    r = tl.where(w < 5.0, p, q) * x
    return tl.where(tl.abs(x) == 1.0, x * float("inf"), r)


@triton.jit
def _kv_lgamma_pos(a):
    """lgamma for a >= 0: shift a up past 8 (at most 8 steps, the product's log subtracted), then Stirling's
    series to 1/z^7 (next term below 1e-11)."""
    z = a
    prod = 1.0
    for _ in tl.static_range(8):
        small = z < 8.0
        prod = tl.where(small, prod * z, prod)
        z = tl.where(small, z + 1.0, z)
    iz = 1.0 / z
    iz2 = iz * iz
    series = iz * (1.0 / 12.0 + iz2 * (-1.0 / 360.0 + iz2 * (1.0 / 1260.0 + iz2 * (-1.0 / 1680.0))))
    lz = tl.log(z)
    return z * (lz - 1.0) - 0.5 * lz + 0.91893853320467274 + series - tl.log(prod)


@triton.jit
def _kv_lgamma(x):
    """Reflection below 0: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), sin taken at the distance to the
    nearest integer (exact), so poles give +inf and tiny negative x keeps its precision."""
    neg = x < 0.0
    pos = _kv_lgamma_pos(tl.where(neg, 1.0 - x, x))
    r = tl.abs(x - _kv_nearbyint(x))
    refl = tl.log(3.141592653589793 / tl.sin(3.141592653589793 * r)) - pos
    out = tl.where(neg, refl, pos)
    return tl.where((tl.abs(x) == float("inf")) | (neg & (r == 0.0)), float("inf"), out)


@triton.jit
def _kv_hypot(x, y):
    """big * sqrt(1 + (small / big)^2): no overflow or underflow in between; inf wins over NaN (C hypot)."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    big = tl.where(ax > ay, ax, ay)
    small = tl.where(ax > ay, ay, ax)
    r = small / big
    h = big * tl.sqrt(1.0 + r * r)
    h = tl.where(big == 0.0, 0.0, h)
    h = tl.where(_kv_isnan(x) | _kv_isnan(y), float("nan"), h)
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), h)


@triton.jit
def _kv_pow(x, y):
    """C pow: exp2(y log2|x|) with the sign of an odd integer power of a negative base (the sign bit, so
    (-0)^-3 = -inf), NaN for a finite negative base to a non-integer power, and pow(x, 0) = pow(1, y) =
    pow(-1, +-inf) = 1 even for NaN."""
    a = tl.abs(x)
    r = tl.exp2(y * tl.log2(a))
    y_int = tl.floor(y) == y
    half = y * 0.5
    y_odd = y_int & (tl.floor(half) != half)
    r = tl.where(_kv_signbit(x) & y_odd, -r, r)
    r = tl.where((x < 0.0) & (x != -float("inf")) & (y_int == 0), float("nan"), r)
    r = tl.where((a == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
    return tl.where((y == 0.0) | (x == 1.0), 1.0, r)


#: how each function of the expression language is printed in the conformance kernels: a ``tl`` primitive, an
#: operator, or one of the device functions above (by name)
SPELLINGS: dict[str, str] = {
    "exp2": "tl.exp2({})", "log2": "tl.log2({})", "sin": "tl.sin({})", "cos": "tl.cos({})",
    "floor": "tl.floor({})", "ceil": "tl.ceil({})",
    "bitand": "(({}) & ({}))", "bitxor": "(({}) ^ ({}))", "bitwise_not": "(~({}))",
    "where": "tl.where({}, {}, {})",
    "div_rn": "tl.div_rn({}, {})",
    "lt": "(({}) < ({}))", "le": "(({}) <= ({}))", "gt": "(({}) > ({}))", "ge": "(({}) >= ({}))",
    "eq": "(({}) == ({}))", "ne": "(({}) != ({}))",
    "and": "(({}) & ({}))", "or": "(({}) | ({}))", "not": "(({}) == 0)",
    **{fn: f"_kv_{fn}({{}})" for fn in (
        "expm1", "log1p", "log10", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
        "atanh", "erfc", "erfinv", "lgamma", "trunc", "nearbyint", "isnan")},
    **{fn: f"_kv_{fn}({{}}, {{}})" for fn in ("pow", "fmod", "copysign", "atan2", "hypot", "fmax")},
}

#: the function that makes a 0-d tensor of a constant (device functions cannot take a bare literal: they call
#: methods such as ``.to(..., bitcast=True)`` on their arguments)
SCALAR = "_kv_scalar"

_HELPER = re.compile(r"\b(_kv_\w+)\(")


@cache
def _helpers() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (source, names of the device functions it calls), for every device function of this module."""
    table = {}
    for name, obj in globals().items():
        fn = getattr(obj, "fn", None)  # the Python function of a JITFunction (or InterpretedFunction)
        if name.startswith("_kv_") and callable(fn):
            source = inspect.getsource(fn)
            calls = tuple(sorted(set(_HELPER.findall(source)) - {name}))
            table[name] = (source, calls)
    return table


def helper_sources(text: str) -> str:
    """The source of every device function ``text`` calls, and of those they call, in definition order."""
    table = _helpers()
    wanted: set[str] = set()
    pending = [n for n in _HELPER.findall(text) if n in table]
    while pending:
        name = pending.pop()
        if name not in wanted:
            wanted.add(name)
            pending.extend(table[name][1])
    return "".join(table[n][0] + "\n\n" for n in table if n in wanted)


def exact_division(expr: Expr) -> Expr:
    """``expr`` with every ``/`` made ``tl.div_rn``: Triton's ``/`` on float32 is the GPU's approximate division
    (2 ulp), which moves a ``round(z / scale)`` across a half and differs from ATen, whose division is IEEE."""
    if isinstance(expr, BinOp):
        left, right = exact_division(expr.left), exact_division(expr.right)
        return Call("div_rn", (left, right)) if expr.op == "/" else BinOp(expr.op, left, right)
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(exact_division(a) for a in expr.args))
    return expr


def scalar_args(expr: Expr) -> Expr:
    """``expr`` with each constant argument of a device-function or ``tl`` call made a 0-d tensor
    (``Call(SCALAR, (Const,))``); operators, comparisons and ``where`` take literals as they are."""
    if isinstance(expr, BinOp):
        return BinOp(expr.op, scalar_args(expr.left), scalar_args(expr.right))
    if not isinstance(expr, Call):
        return expr
    args = tuple(scalar_args(a) for a in expr.args)
    spelling = SPELLINGS.get(expr.fn, "")
    if spelling.startswith(("_kv_", "tl.")) and not spelling.startswith("tl.where"):
        args = tuple(Call(SCALAR, (a,)) if isinstance(a, Const) else a for a in args)
    return Call(expr.fn, args)


def unsupported(expr: Expr) -> list[str]:
    """The functions of ``expr`` this library cannot spell (the core ones are spelled by ``common``)."""
    from kevolve_triton.recipes.common import _SPELLINGS

    return sorted(fn for fn in used_functions(expr) if fn not in SPELLINGS and fn not in _SPELLINGS
                  and fn not in ("max", "min", "round_storage", SCALAR))
