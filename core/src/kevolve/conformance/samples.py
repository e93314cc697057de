"""PyTorch's OpInfo samples for an operator, normalised into kernel arguments.

Every OpInfo entry of the name counts (all variants). Samples are drawn in float32 (an entry that does not
support float32 is skipped when another entry of the name does; an operator with no float32 entry at all, e.g.
``bitwise_not``, is drawn in its first supported dtype of int64, int32, bool), and again in bfloat16 on targets
that compute it, with torch's generator seeded so a run is reproducible. Two larger random samples per operator
are added (odd sizes over several blocks and threads, NaN, infinities and signed zeros planted in the input). The
reference is the OpInfo's own op, called on the sample as drawn; where PyTorch's own code paths give another
answer for the same values (an element computed on its own; a 16-bit sample computed in float32), that answer
is kept as an alternative the judge accepts too.

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

from kevolve.conformance import portable
from kevolve.conformance.spec import REQUIRED, OpSpec
from kevolve.errors import KevolveError
from kevolve.problems.problem import dtype_name

#: the two larger random shapes every op is also checked at (odd sizes: tails, several blocks and threads)
LARGE_SHAPES = ((514, 1031), (6, 33, 129))
#: values planted at the start of the larger samples' float input
SPECIALS = (float("nan"), float("inf"), float("-inf"), 0.0, -0.0)
SEED = 0


class Declined(NotImplementedError):
    """A sample the kernel does not take, with the reason (a NotImplementedError, as an exported file declines a
    call it was not written for)."""


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
    #: PyTorch's other answers for the same input where its own code paths disagree, each with the reason a
    #: match passes (:func:`_one_element_reference`, :func:`_float32_reference`)
    alternatives: list[tuple[str, list[torch.Tensor]]] = field(default_factory=list)

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


def _sample_label(entry: Any, index: int, sample: Any) -> str:
    parts = [portable.describe(sample.input), *(portable.describe(a) for a in sample.args),
             *(f"{k}={portable.describe(v)}" for k, v in sample.kwargs.items())]
    return f"{_entry_label(entry)}#{index}({', '.join(parts)})"


def bind(spec: OpSpec, sample: Any, dtype: torch.dtype) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """Map an OpInfo sample onto the table's signature: (kernel input tensors, scalar attributes)."""
    tensors, attrs = bind_views(spec, sample, dtype)
    return [t.detach().contiguous().clone() for t in tensors], attrs


def bind_views(spec: OpSpec, sample: Any, dtype: torch.dtype) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """:func:`bind`, with the kernel's tensors left as ``prepare`` made them (views of the sample's tensors, or
    new constants): what a lowered program reads through its buffers (:mod:`kevolve.program.lower`)."""
    if spec.list_input:
        if not isinstance(sample.input, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in sample.input):
            raise Declined(f"input is {portable.describe(sample.input)}, not a sequence of tensors")
        tensors = list(sample.input)
    elif isinstance(sample.input, torch.Tensor):
        tensors = [sample.input]
    else:
        raise Declined(f"input is a {type(sample.input).__name__}, not a tensor")
    return portable.bind_views(tensors, list(sample.args), dict(sample.kwargs), spec_arguments(spec), spec.layout,
                               spec.prepare, dtype, Declined)


def spec_arguments(spec: OpSpec) -> list[dict[str, Any]]:
    """The table's arguments as the data :func:`kevolve.conformance.portable.bind_arguments` binds with."""
    return [{"name": a.name, "default": portable.REQUIRED if a.default is REQUIRED else a.default,
             "tensor": a.tensor, "scalar_ok": a.scalar_ok, "many": a.many,
             "accepted": list(a.accepted) if a.accepted is not None else None,
             "dtypes": list(a.dtypes) if a.dtypes else None} for a in spec.args]


#: why a sample passes that matches one of PyTorch's other answers
ONE_ELEMENT = "matches PyTorch's one-element results where its vectorised loop answers otherwise"
IN_FLOAT32 = "matches PyTorch's float32 result on the same values (its {dtype} loop rounds along the way)"


def _reference(entry: Any, sample: Any) -> list[torch.Tensor]:
    out = entry.op(sample.input, *sample.args, **sample.kwargs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.detach().contiguous().clone() for o in outs]


def _differs(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Not the same values (NaN equal to NaN)."""
    if not a.dtype.is_floating_point:
        return not torch.equal(a, b)
    return not (torch.equal(a.isnan(), b.isnan()) and bool((a.nan_to_num() == b.nan_to_num()).all()))


def _float32_reference(entry: Any, sample: Any, dtype: torch.dtype,
                       expected: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """PyTorch's result for a 16-bit float sample computed in float32 (the same values widened), each output
    back in its dtype; None where it equals the 16-bit result or cannot be had.

    ATen's bfloat16 CPU loops round intermediate results (conv_transpose2d's columns, each separable step of a
    trilinear resize), and at a cancellation that moves the result by more than the dtype's tolerance from
    what a kernel rounding once gets. Both are PyTorch's answers for the same values, so the judge accepts
    either."""
    def widen(t: Any) -> Any:
        return t.float() if isinstance(t, torch.Tensor) and t.dtype == dtype else t

    try:
        wide = _reference(entry, sample.transform(widen))
    except Exception:  # noqa: BLE001 - no float32 answer to offer
        return None
    if len(wide) != len(expected) or any(w.shape != e.shape for w, e in zip(wide, expected)):
        return None
    wide = [w.to(e.dtype) for w, e in zip(wide, expected)]
    return wide if any(_differs(w, e) for w, e in zip(wide, expected)) else None


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
    case = Case(label, inputs, expected, attrs, spec=spec)
    if dtype in (torch.bfloat16, torch.float16):
        wide = _float32_reference(entry, sample, dtype, expected)
        if wide is not None:
            case.alternatives.append((IN_FLOAT32.format(dtype=dtype_name(dtype)), wide))
    return case


#: samples up to this many elements get PyTorch's one-element answers for every element (larger ones: for the
#: planted special values only)
ONE_ELEMENT_LIMIT = 4096


def _one_element_reference(entry: Any, sample: Any, expected: list[torch.Tensor],
                           count: int) -> list[torch.Tensor] | None:
    """PyTorch's results for the first ``count`` elements when each is computed on its own (one element of the
    input and of every tensor argument of its shape), where that differs from its result for the whole tensor;
    None when they agree, or when an argument is broadcast (no element of its own).

    ATen's vectorised CPU loops and its one-element path can disagree: gelu(+inf) is inf alone, NaN inside a
    vector; fmod(-8.4375, FLT_MIN) is -0 alone, NaN inside a vector (the vector fmod's quotient overflows).
    Both are PyTorch's answer for the same input, so the judge accepts either."""
    shape = sample.input.shape
    if any(isinstance(a, torch.Tensor) and a.shape != shape for a in (*sample.args, *sample.kwargs.values())):
        return None

    def element(value: Any, i: int) -> Any:
        return value.reshape(-1)[i:i + 1].clone() if isinstance(value, torch.Tensor) else value

    alternative = expected[0].clone()
    flat_out = alternative.view(-1)
    try:
        for i in range(min(count, flat_out.numel())):
            one = entry.op(element(sample.input, i), *(element(a, i) for a in sample.args),
                           **{k: element(v, i) for k, v in sample.kwargs.items()})
            flat_out[i] = one.reshape(-1)[0]
    except Exception:  # noqa: BLE001 - an op that takes no single element: no second answer
        return None
    return [alternative] if _differs(alternative, expected[0]) else None


def _with_alternative(case: Case, entry: Any, sample: Any, dtype: torch.dtype, count: int) -> Case:
    """An elementwise op's case of one float output shaped like its input, with PyTorch's one-element answers
    for its first ``count`` elements as the alternative."""
    elementwise = not case.declined and case.spec.layout in ("same", "broadcast") and len(case.expected) == 1
    if elementwise and dtype.is_floating_point and isinstance(sample.input, torch.Tensor) \
            and case.expected[0].shape == sample.input.shape:
        alone = _one_element_reference(entry, sample, case.expected, count)
        if alone is not None:
            case.alternatives.append((ONE_ELEMENT, alone))
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


def opinfo_samples(entry: Any, dtype: torch.dtype) -> list[Any]:
    """``entry.sample_inputs("cpu", dtype)``, the same samples drawn without OpInfo's per-sample bookkeeping.
    That iterator reseeds every generator before each sample through ``torch.manual_seed``, which on a host
    without CUDA queues a lazy CUDA seeding with its formatted stack each time, and looks for the calling test
    by inspecting the stack: 30 of the BackendBench export's 35 s on the 2-core VM. The CPU generators are
    reseeded as it does (its seed, before each sample), so every sample is the same value. An entry that is not
    an OpInfo (a test's stand-in with samples of its own) gives its ``sample_inputs``."""
    import random

    import numpy as np
    from torch.testing._internal import common_utils

    torch.manual_seed(SEED)  # a sample function that draws before its first sample draws from here
    if not hasattr(entry, "sample_inputs_func"):
        return list(entry.sample_inputs("cpu", dtype))
    drawn = iter(entry.sample_inputs_func(entry, "cpu", dtype, False))
    samples = []
    while True:
        seed = common_utils.SEED
        random.seed(seed)
        np.random.seed(seed)
        torch.default_generator.manual_seed(seed)
        try:
            samples.append(next(drawn))
        except StopIteration:
            return samples


def _draw_dtype(spec: OpSpec | None, usable: list[Any], dtype: torch.dtype, prefix: str) -> list[Case]:
    """The cases of every usable entry's samples in ``dtype``, then the larger random ones; labels start with
    ``prefix`` (empty for the operator's main dtype)."""
    cases: list[Case] = []
    for entry in usable:
        try:
            samples = opinfo_samples(entry, dtype)
        except Exception as exc:  # noqa: BLE001
            cases.append(Case(prefix + _entry_label(entry), declined=f"OpInfo could not draw samples: {exc}"))
            continue
        for index, sample in enumerate(samples):
            label = prefix + _sample_label(entry, index, sample)
            if spec is None:
                cases.append(Case(label, declined="no kernel recipe for this operator yet"))
            else:
                case = _case(spec.for_entry(entry.variant_test_name), entry, label, sample, dtype)
                small = sample.input.numel() if isinstance(sample.input, torch.Tensor) else 0
                cases.append(_with_alternative(case, entry, sample, dtype, small if small <= ONE_ELEMENT_LIMIT else 0))
    if spec is None:
        return cases + [Case(f"{prefix}large{shape}", declined="no kernel recipe for this operator yet")
                        for shape in LARGE_SHAPES]
    first = spec.for_entry(usable[0].variant_test_name)
    for label, sample in _large_samples(first, usable[0], dtype):
        case = _case(first, usable[0], f"{prefix}{_entry_label(usable[0])}:{label}", sample, dtype)
        cases.append(_with_alternative(case, usable[0], sample, dtype, len(SPECIALS)))
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
