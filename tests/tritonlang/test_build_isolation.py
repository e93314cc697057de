"""Issue 32, class 6: a Triton kernel file's code runs when it is built (its launcher is run to capture the
launches compiled ahead of time), so the build is isolated like the run: the file's code that exits the process,
hangs, holds memory or leaves a process behind costs a failed candidate with its reason, never `kevolve
evaluate` or the search."""

from __future__ import annotations

from pathlib import Path

import pytest

import kevolve
from kevolve.harness.pipeline import HarnessConfig
from kevolve.harness.watch import processes
from triton_cases import TARGET

BASE = (Path(__file__).parent.parent / "kernels" / "build_cheats" / "relu_base.py").read_text()

#: module code appended to an honest kernel file, and what the evaluation must say
CASES = {
    "exits": ("import os\nos._exit(0)\n", "compile_error", "exited without its report"),
    "hangs": ("while True:\n    pass\n", "timeout", "stuck in build"),
    "holds_memory": ("HELD = bytearray(1536 * 2**20)\nHELD[::4096] = b'x' * len(HELD[::4096])\nwhile True:\n    pass\n",
                     "crash", "memory blow-up"),
    "leaves_a_process": ("import os\nif os.fork() == 0:\n    while True:\n        pass\n", "rejected",
                         "left processes running"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_build_of_a_kernel_file_is_isolated(case, tmp_path):
    code, status, reason = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(BASE + "\n" + code)
    harness = HarnessConfig(timeout_s=20, memory_limit_bytes=1 * 2**30, workdir=str(tmp_path / "builds"))
    evaluation = kevolve.evaluate(path, "relu", target=TARGET, harness=harness).evaluation
    assert (evaluation.status, evaluation.stage) == (status, "compile"), (evaluation.status, evaluation.reason)
    assert reason in evaluation.reason, evaluation.reason
    spinning = [pid for pid, fields in processes() if fields[0] == "R" and str(tmp_path) in _cmdline(pid)]
    assert not spinning, f"the build's processes outlived it: {spinning}"


def test_an_honest_kernel_file_builds_and_runs(tmp_path):
    path = tmp_path / "relu.py"
    path.write_text(BASE)
    harness = HarnessConfig(timeout_s=120, time=False, workdir=str(tmp_path / "builds"))
    evaluation = kevolve.evaluate(path, "relu", target=TARGET, harness=harness).evaluation
    assert evaluation.status == "ok", evaluation.reason
    assert evaluation.resources.get("launches") == 1.0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""
