"""The conformance table for pointwise operators (unary, activations, binary and ternary): each OpInfo name's
arguments and its scalar expression.

Each entry says how an OpInfo sample's arguments bind (tensors in order, then scalar attributes with their
PyTorch defaults), and builds the scalar expression the kernel computes (from the shared expression language of
:mod:`kevolve.synthesis.expr`, printed by each backend's emitter) with the attributes baked in as constants.
The expressions follow ATen's CPU formulas (comparison order, NaN behaviour, where constants are rounded), since
the samples include NaN, infinities, signed zeros and the edges of each domain.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from kevolve.conformance.samples import Declined
from kevolve.conformance.spec import OP_DTYPE, REQUIRED, Arg, OpSpec
from kevolve.conformance.spec import const as _c
from kevolve.synthesis import expr as E
from kevolve.synthesis.expr import Const, Expr


def _unary(name: str, fn: Callable[[Expr], Expr]) -> OpSpec:
    return OpSpec(name, lambda x, a: fn(x), aten=_UNARY_ATEN.get(name))


FLT_MAX = 3.4028234663852886e38
PI = math.pi


def _sign(x: Expr) -> Expr:  # ATen: (0 < a) - (a < 0): NaN -> 0
    return E.where(E.gt(x, 0.0), 1.0, 0.0) - E.where(E.lt(x, 0.0), 1.0, 0.0)


def _round(x: Expr, a: dict[str, Any]) -> Expr:
    decimals = int(a["decimals"])
    if decimals == 0:
        return E.nearbyint(x)
    scale = _c(float(10.0 ** abs(decimals)))  # ATen: static_cast<opmath_t>(std::pow(10, decimals))
    return E.nearbyint(x / scale) * scale if decimals < 0 else E.nearbyint(x * scale) / scale


def _logit(x: Expr, a: dict[str, Any]) -> Expr:
    eps = a["eps"]
    if eps is not None and eps >= 0:
        lo = _c(eps)
        hi = 1.0 - _c(eps)  # rounded in the compute type, as ATen's scalar_t(1) - eps
        x = E.where(E.lt(x, lo), lo, E.where(E.gt(x, hi), hi, x))
    return E.log(x / (1.0 - x))


def _nan_to_num_limits(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The default replacements of +-inf are the largest finite values of the input's dtype."""
    finite = torch.finfo(tensors[0].dtype).max if tensors[0].dtype.is_floating_point else FLT_MAX
    limits = {"posinf": finite, "neginf": -finite}
    return tensors, {**attrs, **{k: limits[k] if attrs[k] is None else attrs[k] for k in limits}}


def _nan_to_num(x: Expr, a: dict[str, Any]) -> Expr:
    nan = 0.0 if a["nan"] is None else a["nan"]
    posinf, neginf = a["posinf"], a["neginf"]
    return E.where(E.isnan(x), _c(nan), E.where(E.eq(x, math.inf), _c(posinf),
                                                E.where(E.eq(x, -math.inf), _c(neginf), x)))


def _gelu(x: Expr, a: dict[str, Any]) -> Expr:
    if a["approximate"] == "tanh":
        beta = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5
        inner = beta * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + E.tanh(inner))
    return x * 0.5 * (1.0 + E.erf(x * 0.7071067811865476))


def _elu(x: Expr, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> Expr:
    neg = E.expm1(x * input_scale) * _c(alpha * scale) if input_scale != 1.0 else E.expm1(x) * _c(alpha * scale)
    return E.where(E.le(x, 0.0), neg, x * scale if scale != 1.0 else x)


def _hardtanh(x: Expr, lo: float, hi: float) -> Expr:  # clamp: NaN stays NaN
    return E.minimum(E.maximum(x, _c(lo)), _c(hi))


def _prelu_prepare(tensors: list[Any], attrs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    x, w = tensors
    if w.numel() == 1:
        return [x, w.reshape([1] * x.dim())], attrs
    if x.dim() < 2 or w.dim() != 1 or w.numel() != x.shape[1]:
        raise Declined(f"weight of {w.numel()} elements for an input of shape {tuple(x.shape)}")
    return [x, w.reshape([1, w.numel()] + [1] * (x.dim() - 2))], attrs


def _relu6_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.hardtanh(x, 0, 6)``, as ``relu6`` dispatches it: the op's ``(x,)``."""
    x, low, high = args
    if (low, high) != (0, 6):
        raise Declined(f"hardtanh between {low} and {high}, not relu6's 0 and 6")
    return (x,), {}, None


#: SELU's constants (torch.nn.functional.selu)
_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


def _selu_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.elu(x, alpha, scale, input_scale)`` with SELU's constants, as ``selu`` dispatches it: ``(x,)``."""
    x, alpha, scale, input_scale = args
    if (alpha, scale, input_scale) != (*_SELU, 1):
        raise Declined(f"elu with alpha={alpha}, scale={scale}, input_scale={input_scale}, not SELU's constants")
    return (x,), {}, None


def _square_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.pow(x, 2)``, as ``square`` dispatches it: ``(x,)``."""
    x, exponent = args
    if exponent != 2:
        raise Declined(f"exponent {exponent}, not square's 2")
    return (x,), {}, None


def _prelu_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten._prelu_kernel(x, weight)``, whose weight prelu has already viewed as (C, 1, ...) to broadcast: the
    op's ``(x, weight)`` with the weight flat again."""
    x, weight = args
    return (x, weight.reshape(-1)), {}, None


def _where_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.where.self(condition, x, other)``: the OpInfo op's ``(x, condition, other)``."""
    condition, x, other = args
    return (x, condition, other), {}, None


def _clamp_min_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.clamp_min(x, min)``: the op's ``clamp(x, min=min)``."""
    x, low = args
    return (x,), {"min": low}, None


def _clamp_max_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten.clamp_max(x, max)``: the op's ``clamp(x, max=max)``."""
    x, high = args
    return (x,), {"max": high}, None


#: the unary ops whose ATen call is another op's
_UNARY_ATEN = {"square": {"aten.pow.Tensor_Scalar": _square_call}}


def _prelu_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (make((shape[1],)),), {}


def _glu_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    dim = next(d for d, size in enumerate(shape) if size % 2 == 0)
    return (dim,), {}


_INPLACE = Arg("inplace", False, accepted=(False,))

_UNARY: dict[str, Callable[[Expr], Expr]] = {
    "abs": E.absolute, "neg": lambda x: -x, "exp": E.exp, "exp2": E.exp2, "expm1": E.expm1, "log": E.log,
    "log2": E.log2, "log10": E.log10, "log1p": E.log1p, "sqrt": E.sqrt, "rsqrt": E.rsqrt,
    "reciprocal": lambda x: 1.0 / x, "square": lambda x: x * x, "sin": E.sin, "cos": E.cos, "tan": E.tan,
    "asin": E.asin, "acos": E.acos, "atan": E.atan, "sinh": E.sinh, "cosh": E.cosh, "tanh": E.tanh,
    "asinh": E.asinh, "acosh": E.acosh, "atanh": E.atanh, "sigmoid": lambda x: 1.0 / (1.0 + E.exp(-x)),
    "erf": E.erf, "erfc": E.erfc, "erfinv": E.erfinv, "lgamma": E.lgamma,
    "sinc": lambda x: E.where(E.eq(x, 0.0), 1.0, E.sin(PI * x) / (PI * x)),
    "floor": E.floor, "ceil": E.ceil, "trunc": E.trunc, "sign": _sign,
}

SPECS: list[OpSpec] = [
    *(_unary(name, fn) for name, fn in _UNARY.items()),
    OpSpec("logit", _logit, (Arg("eps", None),)),
    OpSpec("round", _round, (Arg("decimals", 0),)),
    OpSpec("nan_to_num", _nan_to_num, (Arg("nan", 0.0), Arg("posinf", None), Arg("neginf", None)),
           prepare=_nan_to_num_limits),
    OpSpec("isnan", lambda x, a: E.isnan(x), out_dtype="bool"),
    OpSpec("bitwise_not", lambda x, a: E.bitwise_not(x)),
    # activations (torch.nn.functional)
    OpSpec("nn.functional.relu", lambda x, a: E.maximum(x, 0.0), (_INPLACE,)),
    OpSpec("nn.functional.relu6", lambda x, a: _hardtanh(x, 0.0, 6.0), (_INPLACE,),
           aten={"aten.hardtanh.default": _relu6_call}),
    OpSpec("nn.functional.gelu", _gelu, (Arg("approximate", "none", accepted=("none", "tanh")),)),
    OpSpec("nn.functional.silu", lambda x, a: x / (1.0 + E.exp(-x)), (_INPLACE,)),
    OpSpec("nn.functional.mish", lambda x, a: x * E.tanh(E.log1p(E.exp(x))), (_INPLACE,)),
    OpSpec("nn.functional.softplus",
           lambda x, a: E.where(E.gt(x * _c(a["beta"]), _c(a["threshold"])), x,
                                E.log1p(E.exp(x * _c(a["beta"]))) / _c(a["beta"])),
           (Arg("beta", 1.0), Arg("threshold", 20.0))),
    OpSpec("nn.functional.elu", lambda x, a: _elu(x, a["alpha"]), (Arg("alpha", 1.0), _INPLACE)),
    OpSpec("nn.functional.selu", lambda x, a: _elu(x, *_SELU), (_INPLACE,), aten={"aten.elu.default": _selu_call}),
    OpSpec("nn.functional.celu", lambda x, a: _elu(x, a["alpha"], 1.0, 1.0 / a["alpha"]),
           (Arg("alpha", 1.0), _INPLACE)),
    OpSpec("nn.functional.leaky_relu", lambda x, a: E.where(E.gt(x, 0.0), x, x * _c(a["negative_slope"])),
           (Arg("negative_slope", 0.01), _INPLACE)),
    OpSpec("nn.functional.hardtanh", lambda x, a: _hardtanh(x, a["min_val"], a["max_val"]),
           (Arg("min_val", -1.0), Arg("max_val", 1.0), _INPLACE)),
    OpSpec("nn.functional.hardsigmoid", lambda x, a: E.minimum(E.maximum(x + 3.0, 0.0), 6.0) / 6.0, (_INPLACE,)),
    OpSpec("nn.functional.hardswish", lambda x, a: x * E.minimum(E.maximum(x + 3.0, 0.0), 6.0) / 6.0,
           (_INPLACE,)),
    OpSpec("nn.functional.hardshrink",
           lambda x, a: E.where(E.logical_and(E.ge(x, -_c(a["lambd"])), E.le(x, _c(a["lambd"]))), 0.0, x),
           (Arg("lambd", 0.5),)),
    OpSpec("nn.functional.softshrink",
           lambda x, a: E.where(E.gt(x, _c(a["lambd"])), x - _c(a["lambd"]),
                                E.where(E.lt(x, -_c(a["lambd"])), x + _c(a["lambd"]), x * 0.0)),
           (Arg("lambd", 0.5),)),
    OpSpec("nn.functional.softsign", lambda x, a: x / (1.0 + E.absolute(x))),
    OpSpec("nn.functional.logsigmoid", lambda x, a: E.minimum(x, 0.0) - E.log1p(E.exp(-E.absolute(x)))),
    OpSpec("nn.functional.threshold", lambda x, a: E.where(E.le(x, _c(a["threshold"])), _c(a["value"]), x),
           (Arg("threshold"), Arg("value"), _INPLACE), large=lambda shape, make: ((0.25, -3.0), {})),
    OpSpec("nn.functional.prelu", lambda x, w, a: E.where(E.gt(x, 0.0), x, w * x), (Arg("weight", tensor=True),),
           layout="broadcast", prepare=_prelu_prepare, large=_prelu_large,
           aten={"aten._prelu_kernel.default": _prelu_call}),
    OpSpec("nn.functional.glu", lambda a_, b_, a: a_ * (1.0 / (1.0 + E.exp(-b_))), (Arg("dim", -1),),
           layout="halves", large=_glu_large),
]



# binary and ternary pointwise ops: broadcasting; a tensor argument may be a number (then a constant)
def _other(name: str = "other", default: Any = REQUIRED, **kw: Any) -> Arg:
    return Arg(name, default, tensor=True, scalar_ok=True, **kw)


def _large_binary(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (make(shape[1:]),), {}  # broadcast along the leading dimension


def _binary(name: str, fn: Callable[[Expr, Expr], Expr], out: str | None = None) -> OpSpec:
    return OpSpec(name, lambda x, y, a: fn(x, y), (_other(),), layout="broadcast", out_dtype=out, large=_large_binary)


def _nan_max(x: Expr, y: Expr) -> Expr:  # ATen maximum/minimum: NaN from either side
    return E.where(E.isnan(y), y, E.maximum(x, y))


def _nan_min(x: Expr, y: Expr) -> Expr:
    return E.where(E.isnan(y), y, E.minimum(x, y))


def _div_floor(a: Expr, b: Expr) -> Expr:  # c10::div_floor_floating
    mod = E.fmod(a, b)
    div = (a - mod) / b
    div = E.where(E.logical_and(E.ne(mod, 0.0), E.ne(E.lt(b, 0.0), E.lt(mod, 0.0))), div - 1.0, div)
    floordiv = E.floor(div)
    floordiv = E.where(E.gt(div - floordiv, 0.5), floordiv + 1.0, floordiv)
    return E.where(E.eq(b, 0.0), a / b, E.where(E.ne(div, 0.0), floordiv, E.copysign(0.0, a / b)))


def _remainder(a: Expr, b: Expr) -> Expr:
    mod = E.fmod(a, b)
    return E.where(E.logical_and(E.ne(mod, 0.0), E.ne(E.lt(b, 0.0), E.lt(mod, 0.0))), mod + b, mod)


def _div(x: Expr, y: Expr, a: dict[str, Any]) -> Expr:
    mode = a["rounding_mode"]
    if mode == "trunc":  # ATen's vectorised bfloat16 path rounds the quotient before truncating
        return E.trunc(E.round_storage(x / y))
    if mode == "floor":
        return _div_floor(x, y)
    return x / y


def _add(x: Expr, y: Expr, a: dict[str, Any], sign: float = 1.0) -> Expr:
    alpha = sign * a["alpha"]
    if alpha == 1.0:
        return x + y
    return x + _c(alpha) * y


def _pow(x: Expr, y: Expr, a: dict[str, Any]) -> Expr:
    if isinstance(y, Const):  # ATen's special cases for a scalar exponent
        special = {2.0: lambda: x * x, 3.0: lambda: x * x * x, 0.5: lambda: E.sqrt(x), -0.5: lambda: E.rsqrt(x),
                   1.0: lambda: x, -1.0: lambda: 1.0 / x, -2.0: lambda: 1.0 / (x * x)}
        if y.value in special:
            return special[y.value]()
    return E.power(x, y)


def _logaddexp(x: Expr, y: Expr) -> Expr:
    both_inf = E.logical_and(E.eq(E.absolute(x), math.inf), E.eq(x, y))
    return E.where(both_inf, x, E.maximum(x, y) + E.log1p(E.exp(-E.absolute(x - y))))


def _lerp(x: Expr, end: Expr, w: Expr, a: dict[str, Any]) -> Expr:
    return E.where(E.lt(E.absolute(w), 0.5), x + w * (end - x), end - (end - x) * (1.0 - w))


def _clamp(x: Expr, lo: Expr | None, hi: Expr | None, a: dict[str, Any]) -> Expr:
    if lo is None and hi is None:
        raise ValueError("clamp needs min or max")
    if isinstance(lo, (Const, type(None))) and isinstance(hi, (Const, type(None))):  # clamp(Scalar): NaN input stays
        out = x if lo is None else E.maximum(x, lo)
        return out if hi is None else E.minimum(out, hi)
    out = x if lo is None else _nan_max(x, lo)
    return out if hi is None else _nan_min(out, hi)


def _large_ternary(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (make(shape), make(shape[1:])), {}


_BOOL = ("bool",)

SPECS += [
    OpSpec("add", lambda x, y, a: _add(x, y, a), (_other(), Arg("alpha", 1)), layout="broadcast",
           large=_large_binary),
    OpSpec("sub", lambda x, y, a: _add(x, y, a, -1.0), (_other(), Arg("alpha", 1)), layout="broadcast",
           large=_large_binary),
    _binary("mul", lambda x, y: x * y),
    OpSpec("div", _div, (_other(), Arg("rounding_mode", None, accepted=(None, "trunc", "floor"))),
           layout="broadcast", large=_large_binary),
    _binary("floor_divide", _div_floor),
    _binary("remainder", _remainder),
    _binary("fmod", E.fmod),
    OpSpec("pow", _pow, (_other("exponent"),), layout="broadcast", large=_large_binary),
    _binary("atan2", E.atan2),
    _binary("hypot", E.hypot),
    _binary("copysign", E.copysign),
    _binary("maximum", _nan_max),
    _binary("minimum", _nan_min),
    _binary("fmax", E.fmax),
    _binary("eq", E.eq, "bool"),
    _binary("ne", E.ne, "bool"),
    _binary("lt", E.lt, "bool"),
    _binary("ge", E.ge, "bool"),
    _binary("logical_and", lambda x, y: E.logical_and(E.ne(x, 0.0), E.ne(y, 0.0)), "bool"),
    _binary("logical_or", lambda x, y: E.logical_or(E.ne(x, 0.0), E.ne(y, 0.0)), "bool"),
    _binary("bitwise_and", E.bitwise_and),
    _binary("bitwise_xor", E.bitwise_xor),
    _binary("xlogy", lambda x, y: E.where(E.isnan(y), math.nan, E.where(E.eq(x, 0.0), 0.0, x * E.log(y)))),
    _binary("logaddexp", _logaddexp),
    OpSpec("lerp", _lerp, (Arg("end", tensor=True), _other("weight")), layout="broadcast", large=_large_ternary),
    OpSpec("addcmul", lambda x, t1, t2, a: x + _c(a["value"]) * t1 * t2,
           (Arg("tensor1", tensor=True), Arg("tensor2", tensor=True), Arg("value", 1)), layout="broadcast",
           large=_large_ternary),
    OpSpec("addcdiv", lambda x, t1, t2, a: x + _c(a["value"]) * (t1 / t2),
           (Arg("tensor1", tensor=True), Arg("tensor2", tensor=True), Arg("value", 1)), layout="broadcast",
           large=_large_ternary),
    OpSpec("where", lambda x, c, y, a: E.where(E.ne(c, 0.0), x, y),
           (Arg("condition", tensor=True, dtypes=_BOOL), _other()), layout="broadcast",
           large=lambda shape, make: ((make(shape, torch.bool), make(shape[1:])), {}),
           aten={"aten.where.self": _where_call}),
    OpSpec("clamp", _clamp, (_other("min", None, dtypes=(OP_DTYPE, "int64", "int32")),
                             _other("max", None, dtypes=(OP_DTYPE, "int64", "int32"))),
           aten={"aten.clamp_min.default": _clamp_min_call, "aten.clamp_max.default": _clamp_max_call},
           layout="broadcast", large=lambda shape, make: ((make(shape[1:]), make(shape[1:]) + 1.0), {})),
    OpSpec("masked_fill", lambda x, m, v, a: E.where(E.ne(m, 0.0), v, x),
           (Arg("mask", tensor=True, dtypes=_BOOL), _other("value")), layout="broadcast",
           large=lambda shape, make: ((make(shape[1:], torch.bool), 2.5), {})),
]
