"""Issue 32: kernels that fake their speed or borrow someone else's computation, one or more per class, each
rejected by a mechanism (not a word list) with the rule that fired; and honest kernels that the old word scan
wrongly refused pass."""

from __future__ import annotations

import platform
from pathlib import Path

import kevolve
import pytest
import torch
from kevolve.harness.pipeline import HarnessConfig

CHEATS = Path(__file__).parent / "kernels" / "cheats"


@pytest.fixture
def harness(tmp_path):
    return HarnessConfig(timeout_s=60, repeats=5, sample_s=0.001, workdir=str(tmp_path / "builds"))


#: a line of a cheat that stands for a shared file, and that file: the honest part the cheats have in common
SHARED = {'#include "softmax_rows.inc"': "softmax_rows.inc", "from softmax_rows import softmax_rows": "softmax_rows.py"}


def evaluate(name: str, harness: HarnessConfig):
    """The cheat, with the honest softmax it shares inlined (a kernel file stands alone), through the harness."""
    lines = (CHEATS / name).read_text().splitlines(keepends=True)
    source = "".join((CHEATS / SHARED[line.strip()]).read_text() if line.strip() in SHARED else line for line in lines)
    path = harness_dir(harness) / name
    path.write_text(source)
    return kevolve.evaluate(path, "softmax", target="cpu", harness=harness, dims={"rows": 64, "cols": 256}).evaluation


def harness_dir(harness: HarnessConfig) -> Path:
    path = Path(harness.workdir).parent / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("name, status, reason", [
    # class 1: honest while checked, cheating while timed
    ("skips_unpoisoned.cpp", "wrong_result", "a timed call's output"),
    ("counts_calls.cpp", "wrong_result", "a timed call's output"),
    ("caches_by_input.cpp", "wrong_result", "a timed call's output"),
    ("background_thread.cpp", "rejected", "links _ZNSt6thread"),
    ("slows_the_baseline.py", "rejected", "kept computing"),
    ("thread_at_load.py", "rejected", "thread(s) when loaded"),
    ("torch_once_checked.py", "rejected", "in a call among the timed ones"),
    # class 2: changing the clock
    ("patches_clock.cpp", "rejected", "defines clock_gettime"),
    ("patches_timer.py", "rejected", "changes the clock: time.perf_counter"),
    # class 3: borrowed computation
    ("dlsym_lookup.cpp", "rejected", "dlvsym"),
    ("ctypes_call.py", "rejected", "loads code at run time"),
    # class 4: escaping the worker
    ("forks_child.cpp", "rejected", "fork"),
    pytest.param("escapes_by_raw_syscalls.cpp", "rejected", "seccomp filter",
                 marks=pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system call numbers")),
])
def test_a_cheat_is_rejected_by_the_rule_it_breaks(name, status, reason, harness):
    ev = evaluate(name, harness)
    assert (ev.status, reason in ev.reason) == (status, True), (ev.status, ev.stage, ev.reason)
    assert ev.fitness == 0.0


def test_a_numba_kernel_letting_numpy_compute_is_rejected(harness):
    """Class 3 in numba: no np.dot or the like in the source, but in object mode its function is Python calling
    numpy's routines: the file's code calls outside what a launcher may (harness/launchers.py) at the small
    shapes, and its compiled code calls the Python C API, through which numpy computes (numba's BLAS wrappers
    behind np.dot are refused the same way)."""
    ev = evaluate("object_mode_numpy.py", harness)
    assert ev.status == "rejected" and "its file's code calls _amax" in ev.reason, (ev.status, ev.reason)
    from kevolve_cpu.runner import NumbaKernel

    kernel, x = NumbaKernel(str(CHEATS / "object_mode_numpy.py")), torch.randn(4, 16)
    kernel([x], [torch.empty_like(x)])
    assert any(call.startswith("calls Py") for call in kernel.outside_contract()), kernel.outside_contract()


def test_a_numba_kernel_calling_c_by_address_is_outside_its_contract(tmp_path):
    """Class 3 in numba, where the source scan would not see it (ctypes reached without being named): a C
    function called through ctypes is called by its address in the compiled code; honest kernels, parallel
    ones included, call nothing of the kind."""
    from kevolve_cpu.runner import NumbaKernel

    (tmp_path / "parallel.py").write_text(PARALLEL_EXP)
    cheat, honest = NumbaKernel(str(CHEATS / "ctypes_call.py")), NumbaKernel(str(tmp_path / "parallel.py"))
    x = torch.randn(4, 16)
    for kernel in (cheat, honest):
        kernel([x], [torch.empty_like(x)])
    assert cheat.outside_contract() == ["calls a function by its address (ctypes, cffi)"]
    assert honest.outside_contract() == []


PARALLEL_EXP = """
import numba
import numpy as np


@numba.njit(parallel=True, cache=False)
def kernel(x, y):
    for r in numba.prange(x.shape[0]):
        for c in range(x.shape[1]):
            y[r, c] = np.exp(x[r, c])
"""


def test_a_kernel_cannot_read_the_reference_output_from_its_own_process(harness):
    """Class 5: the reference is computed after the kernel's call, so there is nothing to find and copy (the
    scan of its own memory it would need also links functions the contract does not allow)."""
    ev = evaluate("reads_reference.cpp", harness)
    assert ev.status in ("rejected", "runtime_error"), (ev.status, ev.reason)
    assert ev.fitness == 0.0


def test_an_honest_kernel_whose_comments_name_forbidden_calls_passes(harness):
    """Class 8: the scan reads code, not comments."""
    ev = evaluate("honest_with_comment.cpp", harness)
    assert ev.status == "ok", (ev.status, ev.reason)
