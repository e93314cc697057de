"""A plugin that implements every hook, each with the arguments it had when it was written (datasette's
``my_plugin``): a target, an op, a docs pack and a synthesizer, all named ``hooked``. ``tests/test_plugin_hooks.py``
checks that every hook in ``kevolve.hookspecs`` is implemented here and has a test of its own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from kevolve.hookspecs import hookimpl
from kevolve.problems.catalog import OpDef
from kevolve.synthesis.base import Candidate, Context, Synthesizer

DOCS = Path(__file__).parent / "hooked_docs"


class Hooked(Synthesizer):
    """Proposes nothing; keeps the option it was created with."""

    name = "hooked"

    def __init__(self, option: str) -> None:
        self.option = option

    def propose(self, context: Context) -> list[Candidate]:
        return []


@hookimpl
def kevolve_register_targets(registry) -> None:
    from fake_backend import FAKE, FakeBackend

    registry.add(replace(FAKE, name="hooked", aliases=("hk",)), FakeBackend())


@hookimpl
def kevolve_register_ops(registry) -> None:
    registry.add(OpDef(name="hooked_negate", family="pointwise", description="elementwise -x", inputs=("x",),
                       dims={"n": 1024}, check_dims=({"n": 3},),
                       make_inputs=lambda dims, dtype, gen, attrs: [torch.randn(dims["n"], generator=gen).to(dtype)],
                       reference=lambda inputs, attrs: [torch.neg(inputs[0])], aliases=("hooked_neg",)))


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("hooked", DOCS)


@hookimpl
def kevolve_register_synthesizers(registry) -> None:
    registry.add("hooked", Hooked)
