"""The conformance table for normalisations (softmax family, layer/rms/group/batch norm, normalize) and losses
(mse, smooth L1, BCE with logits, cross entropy).

None of them is one scalar expression: each is a kernel kind of the recipes (``softmax``: one lane along a dim;
``norm``: statistics over groups of elements, then an affine map per channel; ``loss``: an elementwise loss over
broadcast operands, then an optional reduction; ``cross_entropy``: log-softmax over the class dim, then the loss).
The host side only binds and normalises arguments: it normalises dims and packs the geometry (sizes, and the
integer constants that vary between samples, e.g. the reduction or ``ignore_index``) into one trailing int64
tensor, so that one compiled kernel serves every sample of the same dtypes and float attributes.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kevolve.conformance.samples import Declined
from kevolve.conformance.spec import REQUIRED, Arg, AtenCall, OpSpec

Prepared = tuple[list[Any], dict[str, Any]]

#: reduction name -> the code the loss kernels read from their geometry tensor
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _declined(why: str) -> Exception:
    return Declined(why)


def _geometry(*values: int) -> torch.Tensor:
    """The integer constants of a sample, packed for the kernel (sizes, codes): dtype-free host data."""
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


def _lane(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    """(outer, length, inner) of a contiguous tensor seen along ``dim`` (a 0-dim tensor is one lane of one)."""
    shape = shape or (1,)
    outer = math.prod(shape[:dim])
    return outer, shape[dim], math.prod(shape[dim + 1:])


def _wrap_dim(dim: Any, ndim: int) -> int:
    """A dim normalised to [0, ndim) (a 0-dim tensor takes 0 and -1, as ATen's maybe_wrap_dim)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _declined(f"dim={dim!r} is not one dim")
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise _declined(f"dim={dim} out of range for {ndim} dims")
    return dim % rank


def _present(attrs: dict[str, Any], *names: str) -> None:
    """Optional tensor arguments: attrs says True where a tensor was passed (bind leaves None in attrs)."""
    for name in names:
        if name in attrs and attrs[name] is not None:
            raise _declined(f"{name}={attrs[name]!r} is a number, not a tensor or None")
        attrs[name] = name not in attrs


# -- softmax family and normalize: one lane along a dim ----------------------------------------------------------

def _softmax_dim(ndim: int) -> int:
    """torch.nn.functional's implicit dim (``_get_softmax_dim``) for dim=None."""
    return 0 if ndim in (0, 1, 3) else 1


def _along_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    """Pack the lane geometry (outer, length, inner) of the reduced dim; the dtype= argument becomes a name (the
    output's dtype, which the kernel is given anyway, computes in double)."""
    x = tensors[0]
    dim = attrs.pop("dim")
    dim = _softmax_dim(x.dim()) if dim is None else _wrap_dim(dim, x.dim())
    for unused in ("_stacklevel", "out"):  # a warning's stack level; out=None (the only one taken)
        attrs.pop(unused, None)
    if "dtype" in attrs:
        attrs["dtype"] = None if attrs["dtype"] is None else str(attrs["dtype"]).removeprefix("torch.")
    return [x, _geometry(*_lane(tuple(x.shape), dim))], attrs


def _softmax_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """``aten._softmax`` / ``_log_softmax(x, dim, half_to_float)``: the op's ``(x, dim)``; a half-precision input
    computed into float (``half_to_float``) is another kernel."""
    x, dim, half_to_float = args
    if half_to_float:
        raise Declined("half_to_float=True")
    return (x, dim), {}, None


def _batch_norm_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, int]:
    """``aten.native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)`` in eval
    mode: the op's ``(x, running_mean, running_var, weight, bias, False, momentum, eps)``, whose kernel writes
    the first output (the statistics outputs are empty in eval mode; in training they are the batch's)."""
    x, weight, bias, mean, var, training, momentum, eps = args
    if training:
        raise Declined("training=True (its batch statistics are outputs too)")
    return (x, mean, var, weight, bias, False, momentum, eps), {}, 1


def _softmax(name: str, stacklevel: bool = False) -> OpSpec:
    args = (Arg("dim", None), *((Arg("_stacklevel", 3),) if stacklevel else ()), Arg("dtype", None))
    aten = None if stacklevel else {f"aten._{name}.default": _softmax_call}
    return OpSpec(name, layout="softmax", args=args, prepare=_along_prepare, large=lambda shape, make: ((1,), {}),
                  aten=aten)


def _normalize_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    return (), {"p": 2.0 if len(shape) == 2 else 3.0, "dim": -1}


# -- layer / rms / group / batch norm: statistics, then an affine map per channel ---------------------------------

def _layer_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    """Rows of prod(normalized_shape) elements, one group each; weight/bias indexed by the position in the row."""
    x = tensors[0]
    shape = tuple(int(s) for s in attrs.pop("normalized_shape"))
    if len(shape) > x.dim() or tuple(x.shape[x.dim() - len(shape):]) != shape:
        raise _declined(f"normalized_shape {shape} does not end the input's shape {tuple(x.shape)}")
    row = math.prod(shape)
    rows = x.numel() // row if row else 0
    return [*tensors, _geometry(rows, row, 1, 1)], attrs


def _layer_norm_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    _present(attrs, "weight", "bias")
    attrs["norm"] = "layer"
    return _layer_prepare(tensors, attrs)


def _rms_norm_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    """eps=None is the machine epsilon of the op's compute type (float for float32 and bfloat16)."""
    _present(attrs, "weight")
    attrs["bias"] = False
    if attrs["eps"] is None:
        attrs["eps"] = torch.finfo(torch.float64 if tensors[0].dtype == torch.float64 else torch.float32).eps
    attrs["norm"] = "rms"
    return _layer_prepare(tensors, attrs)


def _channels(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, channels, spatial) of an (N, C, *) input."""
    if len(shape) < 2:
        return (shape[0] if shape else 1), 1, 1
    return shape[0], shape[1], math.prod(shape[2:])


def _group_norm_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    x = tensors[0]
    _present(attrs, "weight", "bias")
    groups = int(attrs.pop("num_groups"))
    n, c, s = _channels(tuple(x.shape))
    if groups <= 0 or c % groups:
        raise _declined(f"{c} channels in {groups} groups")
    attrs["norm"] = "group"
    return [*tensors, _geometry(n, c, s, groups)], attrs


def _batch_norm_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    """Training mode normalises with the batch's statistics (the running ones, which PyTorch updates in place, are
    not the kernel's business and are not passed); eval mode with the running ones. momentum only updates them."""
    _present(attrs, "running_mean", "running_var", "weight", "bias")
    attrs.pop("momentum")
    training = bool(attrs["training"])
    x, *rest = tensors
    stats = [attrs.pop("running_mean"), attrs.pop("running_var")]
    if not training and not all(stats):
        raise _declined("eval mode without running statistics")
    if training:
        rest = rest[sum(stats):]
    attrs["norm"] = "batch"
    n, c, s = _channels(tuple(x.shape))
    return [x, *rest, _geometry(n, c, s, c)], attrs


def _norm_large(kind: str) -> Any:
    """The larger samples: the last dim (layer/rms), 3 groups of 11 channels (group), both modes (batch)."""
    def large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
        last = (shape[-1],)
        if kind == "layer":
            return (last, make(last), make(last)), {"eps": 1e-5}
        if kind == "rms":
            return (last, make(last)), {}
        if kind == "group":
            return (3 if shape[1] % 3 == 0 else 1, make((shape[1],)), make((shape[1],))), {}
        stats = (make((shape[1],)), make((shape[1],)).abs() + 0.5)
        return (*stats, make((shape[1],)), make((shape[1],))), {"training": len(shape) == 3}
    return large


#: an optional tensor argument; in any float dtype (ATen takes e.g. float32 statistics for a bfloat16 input)
_TENSOR_OR_NONE = {"tensor": True, "scalar_ok": True, "dtypes": ("float32", "float64", "bfloat16")}
_LAYER_ARGS = (Arg("normalized_shape"), Arg("weight", None, **_TENSOR_OR_NONE), Arg("bias", None, **_TENSOR_OR_NONE),
               Arg("eps", 1e-5))


# -- losses --------------------------------------------------------------------------------------------------------

def _legacy(attrs: dict[str, Any]) -> int:
    """The reduction code; the legacy size_average/reduce arguments are only taken when unset."""
    for name in ("size_average", "reduce"):
        if attrs.pop(name, None) is not None:
            raise _declined(f"legacy argument {name}")
    reduction = attrs.pop("reduction")
    if reduction not in REDUCTIONS:
        raise _declined(f"reduction={reduction!r}")
    return REDUCTIONS[reduction]


def _loss_call(names: tuple[str, ...]) -> AtenCall:
    """``aten.<loss>(x, target, *names)``, its reduction an enum (:data:`REDUCTIONS`' codes): the op's
    ``(x, target)`` with the rest as keywords, the reduction by name."""

    def call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
        x, target, *rest = args
        given = dict(zip(names, rest))
        given["reduction"] = {code: name for name, code in REDUCTIONS.items()}[given["reduction"]]
        return (x, target), given, None

    return call


def _loss_prepare(optional: tuple[str, ...]) -> Any:
    """Every operand viewed at the common rank (leading size-1 dims; the kernel broadcasts them), the optional
    tensors ``optional`` flagged in attrs, the reduction a code in the geometry tensor."""
    def prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
        _present(attrs, *optional)
        code = _legacy(attrs)
        rank = max(t.dim() for t in tensors)
        if rank > 8:
            raise _declined(f"{rank} dims")
        viewed = [t.reshape([1] * (rank - t.dim()) + list(t.shape)) for t in tensors]
        return [*viewed, _geometry(code)], attrs
    return prepare


def _loss_large(extra: str) -> Any:
    def large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
        reduction = "none" if len(shape) == 2 else "mean"
        kwargs: dict[str, Any] = {"reduction": reduction}
        if extra == "bce":
            kwargs |= {"weight": make(shape[-1:]), "pos_weight": make(shape[-1:]).abs()}
        elif extra == "beta":
            kwargs["beta"] = 0.75
        return (make(shape),), kwargs
    return large


def _cross_entropy_prepare(tensors: list[Any], attrs: dict[str, Any]) -> Prepared:
    """(batch, classes, positions) of the input (an unbatched (C,) input is one position); the reduction and
    ignore_index are integers of the geometry tensor."""
    x, target = tensors[0], tensors[1]
    _present(attrs, "weight")
    code = _legacy(attrs)
    if x.dim() == 0:
        raise _declined("a 0-dim input has no class dim")
    n, c, d = (1, x.shape[0], 1) if x.dim() == 1 else _channels(tuple(x.shape))
    probs = target.is_floating_point()
    if probs and target.shape != x.shape:
        raise _declined(f"probability target {tuple(target.shape)} for input {tuple(x.shape)}")
    if probs and attrs["ignore_index"] != -100:
        raise _declined("ignore_index with probability targets")
    ignore = int(attrs.pop("ignore_index"))
    attrs["label_smoothing"] = float(attrs["label_smoothing"])
    return [*tensors, _geometry(n, c, d, code, ignore)], attrs


def _cross_entropy_large(shape: tuple[int, ...], make: Any) -> tuple[tuple, dict]:
    """Class indices (with a weight, an ignored class and label smoothing) at 2-D, probabilities at 3-D."""
    classes = shape[1]
    if len(shape) == 2:
        target = torch.randint(0, classes, (shape[0],))
        return (target,), {"weight": make((classes,)).abs(), "ignore_index": 3, "reduction": "none",
                           "label_smoothing": 0.25}
    return (make(shape).abs(),), {"reduction": "none"}


_REDUCTION_ARGS = (Arg("size_average", None), Arg("reduce", None), Arg("reduction", "mean"))


SPECS: list[OpSpec] = [
    _softmax("softmax"),
    _softmax("log_softmax"),
    _softmax("nn.functional.softmin", stacklevel=True),
    OpSpec("nn.functional.normalize", layout="softmax", prepare=_along_prepare, large=_normalize_large,
           args=(Arg("p", 2.0), Arg("dim", 1), Arg("eps", 1e-12), Arg("out", None, accepted=(None,)))),
    OpSpec("nn.functional.layer_norm", layout="norm", args=_LAYER_ARGS, prepare=_layer_norm_prepare,
           large=_norm_large("layer")),
    OpSpec("nn.functional.rms_norm", layout="norm", prepare=_rms_norm_prepare, large=_norm_large("rms"),
           args=(Arg("normalized_shape"), Arg("weight", None, **_TENSOR_OR_NONE), Arg("eps", None))),
    OpSpec("nn.functional.group_norm", layout="norm", prepare=_group_norm_prepare, large=_norm_large("group"),
           args=(Arg("num_groups"), Arg("weight", None, **_TENSOR_OR_NONE), Arg("bias", None, **_TENSOR_OR_NONE),
                 Arg("eps", 1e-5))),
    OpSpec("nn.functional.batch_norm", layout="norm", prepare=_batch_norm_prepare, large=_norm_large("batch"),
           aten={"aten.native_batch_norm.default": _batch_norm_call},
           args=(Arg("running_mean", REQUIRED, **_TENSOR_OR_NONE), Arg("running_var", REQUIRED, **_TENSOR_OR_NONE),
                 Arg("weight", None, **_TENSOR_OR_NONE), Arg("bias", None, **_TENSOR_OR_NONE),
                 Arg("training", False), Arg("momentum", 0.1), Arg("eps", 1e-5))),
    OpSpec("nn.functional.mse_loss", layout="loss", prepare=_loss_prepare(("weight",)), large=_loss_large(""),
           aten={"aten.mse_loss.default": _loss_call(("reduction",))},
           args=(Arg("target", tensor=True), *_REDUCTION_ARGS, Arg("weight", None, **_TENSOR_OR_NONE))),
    OpSpec("nn.functional.smooth_l1_loss", layout="loss", prepare=_loss_prepare(()), large=_loss_large("beta"),
           aten={"aten.smooth_l1_loss.default": _loss_call(("reduction", "beta"))},
           args=(Arg("target", tensor=True), *_REDUCTION_ARGS, Arg("beta", 1.0))),
    OpSpec("nn.functional.binary_cross_entropy_with_logits", layout="loss",
           prepare=_loss_prepare(("weight", "pos_weight")), large=_loss_large("bce"),
           aten={"aten.binary_cross_entropy_with_logits.default": _loss_call(("weight", "pos_weight", "reduction"))},
           args=(Arg("target", tensor=True), Arg("weight", None, **_TENSOR_OR_NONE), *_REDUCTION_ARGS,
                 Arg("pos_weight", None, **_TENSOR_OR_NONE))),
    OpSpec("nn.functional.cross_entropy", layout="cross_entropy", prepare=_cross_entropy_prepare,
           large=_cross_entropy_large,
           args=(Arg("target", tensor=True, dtypes=("int64", "float32", "float64", "bfloat16")),
                 Arg("weight", None, **_TENSOR_OR_NONE), Arg("size_average", None), Arg("ignore_index", -100),
                 Arg("reduce", None), Arg("reduction", "mean"), Arg("label_smoothing", 0.0))),
]
