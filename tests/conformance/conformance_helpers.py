"""Helpers the conformance tests share (imported by name: pytest puts this directory on the path)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kevolve.plugins import get_manager


def usable_target(name: str):
    """The registered target, or the test skipped with the reason it cannot run here."""
    registered = get_manager().target(name)
    ok, why = registered.backend.usable(registered.spec)
    if not ok:
        pytest.skip(why)
    return registered


class HandEntry:
    """A one-op OpInfo stand-in: the given samples (the two larger random ones are added by the draw), judged
    against the given reference."""

    def __init__(self, name: str, op: Any, samples: list[Any]) -> None:
        self.name, self.variant_test_name, self.op, self.samples = name, "", op, samples
        self.domain = (None, None)

    def supported_dtypes(self, device: str) -> set[torch.dtype]:
        return {torch.float32}

    def sample_inputs(self, device: str, dtype: torch.dtype) -> list[Any]:
        return list(self.samples)
