"""Issue 32 on the GPU: kernels whose device work escapes the caller's timer (another stream, a launch from
another thread) or that read memory they were not given are rejected. The launcher rules refuse them first (their
files' code calls torch or starts threads); the runner's audit, the device's own view, is tested alone on the same
launchers, since it is what stands where the rules cannot see (CUDA C++ files, a runtime's internals): it names
the rule that fired or, where a call cannot be captured in a CUDA graph (a forked stream never joined back), has
it timed by the host's clock, which waits for all of the device's work. An honest kernel passes the audit and is
timed by device events as before."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import kevolve
from kevolve.harness.pipeline import HarnessConfig

pytest.importorskip("kevolve_nvidia")
from kevolve_triton.audit import audit_call  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")

KERNELS = Path(__file__).parent / "kernels"


def evaluate(path: Path, tmp_path: Path):
    harness = HarnessConfig(timeout_s=120, repeats=5, workdir=str(tmp_path / "builds"))
    return kevolve.evaluate(path, "relu", target="nvidia_h100", harness=harness, dims={"n": 1 << 20}).evaluation


#: each cheat the audit rejects, and the words of its rule
AUDITED = [
    ("side_stream.py", "launched on another stream than the caller's"),
    ("thread_unrelated_stream.py", "not ordered on the caller's stream"),
    ("reads_foreign.py", "points at memory the call was not given"),
]


@pytest.mark.parametrize("name", [name for name, _ in AUDITED] + ["thread_launch.py"])
def test_a_gpu_cheat_is_rejected(name, tmp_path):
    ev = evaluate(KERNELS / "gpu_cheats" / name, tmp_path)
    assert ev.status == "rejected" and "its file's code calls" in ev.reason, (ev.status, ev.stage, ev.reason)


def _audit(name: str):
    """The runner's audit of one call of the cheat's launcher, loaded as a plain module (no launcher rules)."""
    spec = importlib.util.spec_from_file_location(f"gpu_cheat_{name[:-3]}", KERNELS / "gpu_cheats" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(1 << 20, device="cuda")
    expected = torch.relu(x)  # a tensor the call was not given, as the harness's reference is

    def judge(outputs):
        wrong = int((outputs[0] != expected).sum())
        return f"{wrong} outputs differ" if wrong else None

    return audit_call(module.kernel, [x], [torch.full_like(x, float("nan"))], judge)


@pytest.mark.parametrize("name, reason", AUDITED)
def test_the_audit_alone_catches_a_gpu_cheat(name, reason):
    audit = _audit(name)
    assert any(reason in v for v in audit.violations), audit


def test_the_audit_alone_times_an_unjoined_forked_stream_by_the_hosts_clock():
    audit = _audit("thread_launch.py")
    assert not audit.violations and "cannot be captured in a CUDA graph" in audit.host_clock, audit


def test_a_kernel_writing_nothing_for_an_input_it_has_seen_fails_a_timed_calls_check(tmp_path):
    """Class 1 on the GPU: back-to-back timed calls on one unchanged input would let it write nothing (the op's
    outputs come back from the caching allocator holding its earlier answers); an element of the input changes
    before each timed call, so its answer is stale and the round's checked call is wrong."""
    ev = evaluate(KERNELS / "gpu_cheats" / "skips_seen_input.py", tmp_path)
    assert (ev.status, ev.stage, "a timed call's output" in ev.reason) == ("wrong_result", "timing", True), (
        ev.status, ev.stage, ev.reason, ev.speedups)


def test_an_honest_kernel_passes_the_audit_and_is_timed_by_device_events(tmp_path):
    ev = evaluate(KERNELS / "build_cheats" / "relu_base.py", tmp_path)
    assert ev.correct and ev.fitness > 0, (ev.status, ev.reason)
    assert "host's clock" not in ev.timing_note, ev.timing_note
