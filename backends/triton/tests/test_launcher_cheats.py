"""Issue 32, class 3 in Python launchers: a Triton file's launcher that lets torch compute where the harness's
recording of ATen calls does not look (on a thread of its own, with the recording switched off, from a module
that calls itself the runtime, from code remade under the runtime's file name, with tensor operators under a
C-level guard that no profile function sees) is rejected by the rule it breaks (harness/launchers.py,
harness/unseen.py); the honest launcher beside them passes."""

from __future__ import annotations

from pathlib import Path

import pytest

import kevolve
from kevolve.harness.pipeline import HarnessConfig
from triton_cases import TARGET

KERNELS = Path(__file__).parent / "kernels"


SHARED = KERNELS / "launcher_cheats" / "zero_for_show.py"


def evaluate(path: Path, tmp_path: Path):
    """The file through the harness, the shared launch for show inlined where a cheat imports it."""
    lines = path.read_text().splitlines(keepends=True)
    shared = SHARED.read_text()
    source = "".join(shared if line.startswith("from zero_for_show import") else line for line in lines)
    kernel = tmp_path / path.name
    kernel.write_text(source)
    harness = HarnessConfig(timeout_s=120, repeats=3, workdir=str(tmp_path / "builds"))
    return kevolve.evaluate(kernel, "relu", target=TARGET, harness=harness, dims={"n": 4096}).evaluation


@pytest.mark.parametrize("name, status, reason", [
    ("torch_in_a_thread.py", "rejected", "calls Thread.start"),
    ("recording_switched_off.py", "rejected", "calls _GeneratorContextManager.__enter__"),
    ("passes_for_plumbing.py", "rejected", "calls Tensor.copy_"),
    ("forged_code.py", "compile_error", "a kernel file's code may not make or change code objects"),
    ("operators_under_guard.py", "rejected", "aten::mul (out of the recording's sight)"),
])
def test_a_launcher_computing_with_torch_out_of_sight_is_rejected(name, status, reason, tmp_path):
    ev = evaluate(KERNELS / "launcher_cheats" / name, tmp_path)
    assert (ev.status, reason in ev.reason) == (status, True), (ev.status, ev.stage, ev.reason)


def test_an_honest_launcher_passes(tmp_path):
    ev = evaluate(KERNELS / "build_cheats" / "relu_base.py", tmp_path)
    assert ev.correct, (ev.status, ev.reason)
