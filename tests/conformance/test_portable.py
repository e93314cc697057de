"""How an exported file binds an ATen call (kevolve.conformance.portable), without building a kernel: keywords
given for positional parameters reach an adapter in place, an in-place overload writes into its first argument,
and a call the op's kernel does not compute is declined."""

from __future__ import annotations

import pytest
import torch

from kevolve.conformance import portable
from kevolve.conformance.export import _Bound


def _binding(op: str, func: str) -> dict:
    from kevolve.conformance.export import _portable_args
    from kevolve.conformance.table import OPS

    return _Bound(op, "cpp", _portable_args(OPS[op])[0], {}).binding(func)


def test_keywords_for_positional_parameters_reach_the_adapter_in_place():
    x = torch.randn(4, 6)
    by_position = portable.prepared_call(_binding("softmax", "aten._softmax.default"), "aten._softmax.default",
                                         (x, 1, False), {})
    by_keyword = portable.prepared_call(_binding("softmax", "aten._softmax.default"), "aten._softmax.default",
                                        (x,), {"dim": 1, "half_to_float": False})
    assert by_keyword[1] == by_position[1] and all(torch.equal(a, b) for a, b in zip(by_keyword[0], by_position[0]))
    with pytest.raises(NotImplementedError, match="half_to_float"):
        portable.prepared_call(_binding("softmax", "aten._softmax.default"), "aten._softmax.default",
                               (x.bfloat16(), 1, True), {})


def test_an_in_place_overload_writes_into_its_first_argument():
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    inputs, attrs, outputs, written = portable.prepared_call(_binding("add", "aten.add_.Tensor"), "aten.add_.Tensor",
                                                             (x, y), {})
    assert outputs[0] is x and written is None
    assert inputs[0] is not x and torch.equal(inputs[0], x)  # the kernel reads a copy: writing x is safe
    with pytest.raises(NotImplementedError, match="in place"):
        portable.prepared_call(_binding("add", "aten.add_.Tensor"), "aten.add_.Tensor", (x.t(), y.t()), {})
