"""A synthesizer that proposes the files of backends/cpu/tests/kernels in a fixed order: the cheats first, the honest
kernel last. It shows that the search records every failure and carries on."""

from __future__ import annotations

from pathlib import Path

from kevolve.hookspecs import hookimpl
from kevolve.synthesis.base import Candidate, Context, Synthesizer

KERNELS = Path(__file__).parent / "kernels"
ORDER = ["zeros.cpp", "partial.cpp", "modifies_input.cpp", "hangs.cpp", "kills_process.cpp", "cached_result.cpp",
         "calls_torch.cpp", "calls_torch_hidden.cpp", "softmax_ok.cpp"]


class Scripted(Synthesizer):
    name = "scripted"

    def __init__(self) -> None:
        self.queue = list(ORDER)

    def propose(self, context: Context) -> list[Candidate]:
        batch, self.queue = self.queue[: context.n], self.queue[context.n:]
        return [Candidate((KERNELS / name).read_text(), "cpp", {"file": name}, recipe=name, synthesizer=self.name)
                for name in batch]


@hookimpl
def kevolve_register_synthesizers(registry):
    registry.add("scripted", lambda option: Scripted())
