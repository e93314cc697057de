"""Issue 32 on the GPU: kernels whose device work escapes the caller's timer (another stream, a launch from
another thread) or that read memory they were not given are rejected by the runner's audit, with the rule that
fired, or, where a call cannot be captured in a CUDA graph (a forked stream never joined back), timed by the
host's clock, which waits for all of the device's work; an honest kernel passes the audit and is timed by device
events as before."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import kevolve
from kevolve.harness.pipeline import HarnessConfig

pytest.importorskip("kevolve_nvidia")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")

KERNELS = Path(__file__).parent / "kernels"


def evaluate(path: Path, tmp_path: Path):
    harness = HarnessConfig(timeout_s=120, repeats=5, workdir=str(tmp_path / "builds"))
    return kevolve.evaluate(path, "relu", target="nvidia_h100", harness=harness, dims={"n": 1 << 20}).evaluation


@pytest.mark.parametrize("name, reason", [
    ("side_stream.py", "launched on another stream than the caller's"),
    ("thread_unrelated_stream.py", "not ordered on the caller's stream"),
    ("reads_foreign.py", "points at memory the call was not given"),
])
def test_a_gpu_cheat_is_rejected_by_the_audit(name, reason, tmp_path):
    ev = evaluate(KERNELS / "gpu_cheats" / name, tmp_path)
    assert (ev.status, ev.stage, reason in ev.reason) == ("rejected", "audit", True), (ev.status, ev.stage,
                                                                                       ev.reason)


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


def test_a_call_leaving_a_forked_stream_unjoined_is_timed_by_the_hosts_clock(tmp_path):
    ev = evaluate(KERNELS / "gpu_cheats" / "thread_launch.py", tmp_path)
    assert ev.correct and "timed by the host's clock: its call cannot be captured" in ev.timing_note, \
        (ev.status, ev.reason, ev.timing_note)
