"""PyTorch's OpInfo samples for an operator, normalised into kernel arguments.

Every OpInfo entry of the name counts (all variants). Samples are drawn in float32 (an entry that does not
support float32 is skipped when another entry of the name does; an operator with no float32 entry at all, e.g.
``bitwise_not``, is drawn in its first supported dtype of int64, int32, bool), and again in bfloat16 on targets
that compute it, with torch's generator seeded so a run is reproducible. Two larger random samples per operator are added (odd sizes over several blocks and
threads, NaN, infinities and signed zeros planted in the input). The reference is the OpInfo's own op, called on
the sample as drawn.

Normalisation on the host only: binding arguments to the table's signature, contiguous copies, views that
reshape a tensor argument for broadcasting; scalar arguments become the kernel's attributes. An argument the
kernel was not written for declines the sample, with the reason.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import torch

from kevolve.conformance.spec import OP_DTYPE, REQUIRED, OpSpec
from kevolve.errors import KevolveError
from kevolve.problems.problem import dtype_name

#: the two larger random shapes every op is also checked at (odd sizes: tails, several blocks and threads)
LARGE_SHAPES = ((514, 1031), (6, 33, 129))
#: values planted at the start of the larger samples' float input
SPECIALS = (float("nan"), float("inf"), float("-inf"), 0.0, -0.0)
SEED = 0


class Declined(Exception):
    """A sample the kernel does not take, with the reason."""


def op_db() -> list[Any]:
    """PyTorch's OpInfo database (imports the test-suite module; it needs the ``expecttest`` package)."""
    try:
        from torch.testing._internal.common_methods_invocations import op_db as db
    except ImportError as exc:
        if "expecttest" in str(exc):
            raise KevolveError("conformance reads PyTorch's OpInfo database, which needs the expecttest package: "
                               "`pip install expecttest`") from None
        raise KevolveError(f"cannot import PyTorch's OpInfo database "
                           f"(torch.testing._internal.common_methods_invocations): {exc}") from None
    return db


@dataclass
class Case:
    """One sample: its label, and either the kernel arguments and reference outputs, or why it was declined."""

    label: str
    inputs: list[torch.Tensor] = field(default_factory=list)
    expected: list[torch.Tensor] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    declined: str = ""
    #: the table entry the sample was bound with (None when declined before binding)
    spec: OpSpec | None = None
    #: PyTorch's other answer where its own code paths disagree (see :func:`_scalar_path_reference`), or None
    alternative: list[torch.Tensor] | None = None

    def kernel_key(self) -> str:
        """One kernel serves every sample with the same key: layout, attributes and input dtypes."""
        dtypes = [dtype_name(t.dtype) for t in self.inputs]
        layout = self.spec.layout if self.spec else ""
        return json.dumps({"attrs": self.attrs, "dtypes": dtypes, "layout": layout}, sort_keys=True, default=str)


@dataclass
class Drawn:
    """All cases of one operator, and which OpInfo entries they came from."""

    op: str
    dtype: str
    entries: list[str]
    skipped: list[str]
    cases: list[Case]

    def fingerprint(self) -> str:
        """A digest of the samples as drawn (shapes, attributes, declines), part of the cache key."""
        parts = [(c.label, c.declined, c.attrs, [tuple(t.shape) for t in c.inputs]) for c in self.cases]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def _choose_dtype(entries: list[Any]) -> tuple[torch.dtype, list[Any], list[str]]:
    supports = [(e, e.supported_dtypes("cpu")) for e in entries]
    with_f32 = [e for e, dts in supports if torch.float32 in dts]
    if with_f32:
        skipped = [f"{_entry_label(e)}: no float32 ({', '.join(sorted(dtype_name(d) for d in dts))})"
                   for e, dts in supports if torch.float32 not in dts]
        return torch.float32, with_f32, skipped
    for dtype in (torch.int64, torch.int32, torch.bool):
        usable = [e for e, dts in supports if dtype in dts]
        if usable:
            return dtype, usable, [f"{_entry_label(e)}: no {dtype_name(dtype)}" for e, dts in supports
                                   if dtype not in dts]
    return torch.float32, [], [f"{_entry_label(e)}: no float32 or integer dtype" for e in entries]


def _entry_label(entry: Any) -> str:
    return entry.name + (f"[{entry.variant_test_name}]" if entry.variant_test_name else "")


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(_describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _sample_label(entry: Any, index: int, sample: Any) -> str:
    parts = [_describe(sample.input), *(_describe(a) for a in sample.args),
             *(f"{k}={_describe(v)}" for k, v in sample.kwargs.items())]
    return f"{_entry_label(entry)}#{index}({', '.join(parts)})"


def _allowed(dtypes: tuple[str, ...] | None, dtype: torch.dtype) -> tuple[str, ...]:
    return tuple(dtype_name(dtype) if d == OP_DTYPE else d for d in (dtypes or (OP_DTYPE,)))


def bind(spec: OpSpec, sample: Any, dtype: torch.dtype) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """Map an OpInfo sample onto the table's signature: (kernel input tensors, scalar attributes)."""
    if spec.list_input:
        if not isinstance(sample.input, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in sample.input):
            raise Declined(f"input is {_describe(sample.input)}, not a sequence of tensors")
        tensors = list(sample.input)
    elif isinstance(sample.input, torch.Tensor):
        tensors = [sample.input]
    else:
        raise Declined(f"input is a {type(sample.input).__name__}, not a tensor")
    if len(sample.args) > len(spec.args):
        raise Declined(f"{len(sample.args)} positional arguments; the kernel takes {len(spec.args)}")
    values: dict[str, Any] = {arg.name: value for arg, value in zip(spec.args, sample.args)}
    names = {arg.name for arg in spec.args}
    for key, value in sample.kwargs.items():
        if key not in names:
            raise Declined(f"unsupported argument {key}={_describe(value)}")
        values[key] = value
    allowed: list[tuple[str, ...]] = [(dtype_name(dtype),)] * len(tensors)
    attrs: dict[str, Any] = {}
    for arg in spec.args:
        if arg.name not in values:
            if arg.default is REQUIRED:
                raise Declined(f"missing required argument {arg.name}")
            value = arg.default
        else:
            value = values[arg.name]
        if arg.many:
            if not isinstance(value, (list, tuple)) or not all(v is None or isinstance(v, torch.Tensor)
                                                                for v in value):
                raise Declined(f"{arg.name} is {_describe(value)}, not a sequence of tensors")
            present = [v for v in value if v is not None]
            tensors += present
            allowed += [_allowed(arg.dtypes, dtype)] * len(present)
            attrs[f"{arg.name}_present"] = [v is not None for v in value]
            continue
        if arg.tensor:
            if isinstance(value, torch.Tensor):
                tensors.append(value)
                allowed.append(_allowed(arg.dtypes, dtype))
            elif arg.scalar_ok and (value is None or isinstance(value, (bool, int, float))):
                attrs[arg.name] = value if value is None or isinstance(value, bool) else float(value)
            else:
                raise Declined(f"{arg.name} is {_describe(value)}, not a tensor")
            continue
        if isinstance(value, torch.Tensor):
            raise Declined(f"{arg.name} is a tensor; the kernel takes it as a constant")
        if arg.accepted is not None and value not in arg.accepted:
            raise Declined(f"{arg.name}={value!r} (the kernel takes {', '.join(map(repr, arg.accepted))})")
        if arg.name != "inplace":
            attrs[arg.name] = value
    for i, (t, ok) in enumerate(zip(tensors, allowed)):
        if dtype_name(t.dtype) not in ok:
            raise Declined(f"tensor {i} is {dtype_name(t.dtype)}, not {' or '.join(ok)}")
        if t.is_complex() or t.layout != torch.strided:
            raise Declined(f"tensor {i} has layout {t.layout} / dtype {t.dtype}")
    if spec.prepare is not None:
        tensors, attrs = spec.prepare(tensors, attrs)
    if spec.layout == "halves":
        x = tensors[0]
        if x.dim() == 0:
            raise Declined("a 0-dim input has no dimension to split")
        attrs["dim"] = int(attrs["dim"]) % x.dim()
    return [t.detach().contiguous().clone() for t in tensors], attrs


def _reference(entry: Any, sample: Any) -> list[torch.Tensor]:
    out = entry.op(sample.input, *sample.args, **sample.kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.detach().contiguous().clone() for o in outs]


def _broadcast_rank(spec: OpSpec, inputs: list[torch.Tensor], expected: list[torch.Tensor]) -> list[torch.Tensor]:
    """For broadcast kernels: every input viewed at the output's rank (leading size-1 dims)."""
    if spec.layout != "broadcast" or not expected:
        return inputs
    rank = expected[0].dim()
    if any(t.dim() > rank for t in inputs):
        raise Declined(f"an input of higher rank than the output {tuple(expected[0].shape)}")
    return [t.reshape([1] * (rank - t.dim()) + list(t.shape)) for t in inputs]


def _case(spec: OpSpec, entry: Any, label: str, sample: Any, dtype: torch.dtype) -> Case:
    try:
        inputs, attrs = bind(spec, sample, dtype)
    except Declined as why:
        return Case(label, declined=str(why))
    try:
        expected = _reference(entry, sample)
    except Exception as exc:  # noqa: BLE001 - PyTorch rejected its own sample: nothing to compare with
        return Case(label, declined=f"PyTorch's reference raised {type(exc).__name__}: {exc}")
    try:
        inputs = _broadcast_rank(spec, inputs, expected)
    except Declined as why:
        return Case(label, declined=str(why))
    counts = spec.outputs if isinstance(spec.outputs, tuple) else (spec.outputs,)
    if len(expected) not in counts:
        return Case(label, declined=f"{len(expected)} outputs; the kernel writes {' or '.join(map(str, counts))}")
    return Case(label, inputs, expected, attrs, spec=spec)


def _scalar_path_reference(entry: Any, sample: Any, expected: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """PyTorch's result for the planted special values when each is computed on its own (one element), where
    that differs from its result inside the large tensor; None when they agree.

    ATen's vectorised CPU loops and its one-element path can disagree at NaN/inf (e.g. gelu(+inf): inf alone,
    NaN inside a vector). Both are PyTorch's answer for the same input, so the judge accepts either."""
    flat_in = sample.input.reshape(-1)
    alternative = expected[0].clone()
    flat_out = alternative.view(-1)
    for i in range(min(len(SPECIALS), flat_in.numel())):
        one = entry.op(flat_in[i:i + 1].clone(), *sample.args, **sample.kwargs)
        flat_out[i] = one.reshape(-1)[0]
    same = torch.equal(alternative.isnan(), expected[0].isnan()) and bool(
        (alternative.nan_to_num() == expected[0].nan_to_num()).all())
    return None if same else [alternative]


def _planted_case(spec: OpSpec, entry: Any, label: str, sample: Any, dtype: torch.dtype) -> Case:
    """A larger random sample; for elementwise ops of one tensor, with PyTorch's one-element answers as the
    alternative."""
    case = _case(spec, entry, label, sample, dtype)
    tensor_args = any(isinstance(a, torch.Tensor) for a in (*sample.args, *sample.kwargs.values()))
    if not case.declined and spec.layout == "same" and not tensor_args and len(case.expected) == 1 \
            and dtype.is_floating_point and case.expected[0].shape == sample.input.shape:
        case.alternative = _scalar_path_reference(entry, sample, case.expected)
    return case


def _large_samples(spec: OpSpec, entry: Any, dtype: torch.dtype) -> list[tuple[str, Any]]:
    from torch.testing import make_tensor
    from torch.testing._internal.opinfo.core import SampleInput

    domain = getattr(entry, "domain", None) or (None, None)
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(SEED + 1)
    samples = []
    try:
        for shape in spec.large_shapes or LARGE_SHAPES:
            if dtype.is_floating_point:
                low = -8.0 if domain[0] is None else float(domain[0])
                high = 8.0 if domain[1] is None else float(domain[1])
                x = make_tensor(shape, dtype=dtype, device="cpu", low=low, high=high)
                flat = x.view(-1)
                flat[:len(SPECIALS)] = torch.tensor(SPECIALS, dtype=dtype)
            else:
                x = make_tensor(shape, dtype=dtype, device="cpu", low=-1000, high=1000)

            def make(s: tuple[int, ...], dtype: torch.dtype = dtype) -> torch.Tensor:
                if dtype == torch.bool:
                    return make_tensor(s, dtype=dtype, device="cpu")
                return make_tensor(s, dtype=dtype, device="cpu", low=-2, high=2)

            extra = spec.large(shape, make) if spec.large else ((), {})
            if len(extra) == 3:
                x, *extra = extra
            args, kwargs = extra
            samples.append((f"large{shape}", SampleInput(x, args=args, kwargs=kwargs)))
    finally:
        torch.random.set_rng_state(gen_state)
    return samples


def _draw_dtype(spec: OpSpec | None, usable: list[Any], dtype: torch.dtype, prefix: str) -> list[Case]:
    """The cases of every usable entry's samples in ``dtype``, then the larger random ones; labels start with
    ``prefix`` (empty for the operator's main dtype)."""
    cases: list[Case] = []
    for entry in usable:
        torch.manual_seed(SEED)
        try:
            samples = list(entry.sample_inputs("cpu", dtype))
        except Exception as exc:  # noqa: BLE001
            cases.append(Case(prefix + _entry_label(entry), declined=f"OpInfo could not draw samples: {exc}"))
            continue
        for index, sample in enumerate(samples):
            label = prefix + _sample_label(entry, index, sample)
            if spec is None:
                cases.append(Case(label, declined="no kernel recipe for this operator yet"))
            else:
                cases.append(_case(spec.for_entry(entry.variant_test_name), entry, label, sample, dtype))
    if spec is None:
        return cases + [Case(f"{prefix}large{shape}", declined="no kernel recipe for this operator yet")
                        for shape in LARGE_SHAPES]
    first = spec.for_entry(usable[0].variant_test_name)
    for label, sample in _large_samples(first, usable[0], dtype):
        cases.append(_planted_case(first, usable[0], f"{prefix}{_entry_label(usable[0])}:{label}", sample, dtype))
    return cases


def draw(spec: OpSpec | None, name: str, db: list[Any] | None = None,
         also: tuple[torch.dtype, ...] = ()) -> Drawn:
    """Every OpInfo sample of ``name`` (all entries), plus the larger random ones, normalised for ``spec``'s
    kernel; with no ``spec`` (no kernel for the op yet) every sample is declined. ``also``: further dtypes
    (e.g. bfloat16 on a target that computes it) whose samples are drawn too, from the float32 entries that
    support them, labelled with the dtype."""
    db = op_db() if db is None else db
    entries = [e for e in db if e.name == name]
    if not entries:
        return Drawn(name, "", [], [], [Case(f"{name}", declined=f"no OpInfo entry named {name!r}")])
    dtype, usable, skipped = _choose_dtype(entries)
    if not usable:
        return Drawn(name, dtype_name(dtype), [], skipped, [])
    cases = _draw_dtype(spec, usable, dtype, "")
    drawn_dtypes = [dtype_name(dtype)]
    for extra in also if dtype == torch.float32 else ():
        with_extra = [e for e in usable if extra in e.supported_dtypes("cpu")]
        if with_extra:
            cases += _draw_dtype(spec, with_extra, extra, f"{dtype_name(extra)}:")
            drawn_dtypes.append(dtype_name(extra))
    return Drawn(name, "+".join(drawn_dtypes), [_entry_label(e) for e in usable], skipped, cases)
