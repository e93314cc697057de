"""Issue 32, class 6: a Triton kernel file's code runs when it is built (its launcher is run to capture the
launches compiled ahead of time), so the build is isolated like the run: the file's code that exits the process,
hangs, holds memory or leaves a process behind costs a failed candidate with its reason, never `kevolve
evaluate` or the search."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import kevolve
from kevolve.harness.pipeline import HarnessConfig
from kevolve.harness.watch import processes
from triton_cases import TARGET

BASE = (Path(__file__).parent / "kernels" / "build_cheats" / "relu_base.py").read_text()

#: module code appended to an honest kernel file, what the evaluation must say, and the harness's time limit
#: (the cases that compile for real get the time a loaded machine needs for it)
CASES = {
    "exits": ("import os\nos._exit(0)\n", "crash", "died during build: exited with status 0", 30),
    "hangs": ("while True:\n    pass\n", "timeout", "stuck in build", 8),
    "holds_memory": ("HELD = bytearray(1536 * 2**20)\nHELD[::4096] = b'x' * len(HELD[::4096])\nwhile True:\n    pass\n",
                     "crash", "memory blow-up", 30),
    "leaves_a_process": ("import os\nif os.fork() == 0:\n    while True:\n        pass\n", "rejected",
                         "left processes running", 30),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_build_of_a_kernel_file_is_isolated(case, tmp_path):
    code, status, reason, timeout_s = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(BASE + "\n" + code)
    harness = HarnessConfig(timeout_s=timeout_s, memory_limit_bytes=1 * 2**30, workdir=str(tmp_path / "builds"))
    evaluation = kevolve.evaluate(path, "relu", target=TARGET, harness=harness).evaluation
    assert (evaluation.status, evaluation.stage) == (status, "compile"), (evaluation.status, evaluation.reason)
    assert reason in evaluation.reason, evaluation.reason
    deadline = time.monotonic() + 5  # SIGKILL is sent before evaluate returns; dying takes a moment under load
    while _still_running(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _still_running(tmp_path), f"the build's processes outlived it: {_still_running(tmp_path)}"


def test_an_honest_kernel_file_builds_and_runs(tmp_path):
    path = tmp_path / "relu.py"
    path.write_text(BASE)
    harness = HarnessConfig(timeout_s=120, time=False, workdir=str(tmp_path / "builds"))
    evaluation = kevolve.evaluate(path, "relu", target=TARGET, harness=harness).evaluation
    assert evaluation.status == "ok", evaluation.reason
    assert evaluation.resources.get("launches") == 1.0


def _still_running(tmp_path: Path) -> list[int]:
    return [pid for pid, fields in processes() if fields[0] == "R" and str(tmp_path) in _cmdline(pid)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""
