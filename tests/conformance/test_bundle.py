"""Bundled ``prepare`` steps: every one in the conformance table is written as source that runs without kevolve and
prepares an OpInfo sample exactly as the table's own function does; what cannot be written is refused by name."""

from __future__ import annotations

import math

import pytest
import torch

from kevolve.conformance import bundle, portable
from kevolve.conformance import samples as sm
from kevolve.conformance.table import OPS

PREPARED = sorted(op for op, spec in OPS.items() if spec.prepare is not None)


def _bundled(function, name: str = "PREPARE"):
    source = bundle.source_of(function, name)
    assert "kevolve" not in source.replace("kevolve's", "")
    namespace: dict = {}
    exec(compile("from __future__ import annotations\n" + source, "<bundled>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.fixture(scope="module")
def db():
    return sm.op_db()


@pytest.mark.parametrize("op", PREPARED)
def test_a_bundled_prepare_step_prepares_like_the_tables(op, db):
    spec, bundled = OPS[op], _bundled(OPS[op].prepare)
    tried = 0
    for entry in (e for e in db if e.name == op):
        spec_here = spec.for_entry(entry.variant_test_name)
        if spec_here.prepare is not spec.prepare:
            continue
        for sample in entry.sample_inputs("cpu", torch.float32):
            tensors = list(sample.input) if spec.list_input else [sample.input]
            try:
                tensors, attrs = portable.bind_arguments(tensors, list(sample.args), dict(sample.kwargs),
                                                         sm.spec_arguments(spec), torch.float32, sm.Declined)
                expected = spec.prepare([t.clone() for t in tensors], dict(attrs))
            except sm.Declined:
                with pytest.raises(NotImplementedError):
                    bundled([t.clone() for t in tensors], dict(attrs))
                continue
            except (TypeError, RuntimeError):  # a sample the binding cannot take at all
                continue
            assert _same(bundled([t.clone() for t in tensors], dict(attrs)), expected), (op, sample)
            tried += 1
            if tried == 4:
                return
    assert tried, f"no float32 sample of {op} was prepared"


def test_what_cannot_be_written_is_refused_by_name():
    captured = object()

    def uses_an_object(x):
        return captured, x

    with pytest.raises(bundle.Unbundleable, match="'captured' is a object"):
        bundle.source_of(uses_an_object, "F")

    def imports_kevolve(x):
        from kevolve.conformance.samples import Declined

        raise Declined(x)

    with pytest.raises(bundle.Unbundleable, match="imports kevolve.conformance.samples when it runs"):
        bundle.source_of(imports_kevolve, "F")

    def uses_kevolve(x):
        return sm.Declined(x)

    with pytest.raises(bundle.Unbundleable, match="kevolve's module kevolve.conformance.samples"):
        bundle.source_of(uses_kevolve, "F")


def test_a_closures_values_and_modules_travel_with_it():
    scale, offsets = 3, (1, 2)

    def prepare(tensors, attrs):
        return [t * scale + offsets[1] for t in tensors], {"n": math.prod(offsets)}

    again = _bundled(prepare)
    assert _same(again([torch.ones(2)], {}), prepare([torch.ones(2)], {}))
