"""The harness rejects each way of cheating with a named reason, and the search carries on after each."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import kevolve
from kevolve.harness.pipeline import HarnessConfig

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture
def harness(tmp_path):
    return HarnessConfig(timeout_s=15, repeats=3, workdir=str(tmp_path / "builds"))


def evaluate(name, harness, op="softmax", **kw):
    return kevolve.evaluate(KERNELS / name, op, target="cpu", harness=harness, **kw).evaluation


@pytest.mark.parametrize("name, status, reason", [
    ("zeros.cpp", "wrong_result", "differ from the reference"),
    ("partial.cpp", "wrong_result", "never written"),
    ("modifies_input.cpp", "rejected", "modifies its input"),
    ("hangs.cpp", "timeout", "no result after 15 s"),
    ("kills_process.cpp", "crash", "killed by signal SIGSEGV"),
    ("cached_result.cpp", "wrong_result", "stale result"),
    ("calls_torch.cpp", "rejected", "includes PyTorch headers"),
    ("calls_torch_hidden.cpp", "rejected", "outside its language's contract: links _ZN2at8_softmax"),
])
def test_cheat_is_rejected_with_a_named_reason(name, status, reason, harness):
    ev = evaluate(name, harness)
    assert ev.status == status, (ev.status, ev.reason)
    assert reason in ev.reason
    assert ev.fitness == 0.0


def test_numba_kernel_calling_torch_is_rejected(harness):
    ev = evaluate("calls_torch_numba.py", harness)
    assert ev.status == "rejected" and "uses torch" in ev.reason


def test_honest_kernel_passes_and_is_timed(harness):
    ev = evaluate("softmax_ok.cpp", replace(harness, timeout_s=120))
    assert ev.status == "ok", ev.reason
    assert ev.timings["kernel"].median > 0 and ev.fitness > 0 and ev.diagnosis is not None


def test_search_continues_after_every_failure(harness, store_path):
    import scripted_synth

    from kevolve.plugins import get_manager, reset_manager

    reset_manager()
    get_manager().register(scripted_synth, name="scripted_synth")
    try:
        result = kevolve.optimize("softmax", target="cpu", synthesizer="scripted", budget=9, batch=3,
                                  harness=replace(harness, timeout_s=30))
    finally:
        reset_manager()
    statuses = {n.parameters["file"]: n.evaluation.status for n in result.nodes}
    assert statuses == {"zeros.cpp": "wrong_result", "partial.cpp": "wrong_result",
                        "modifies_input.cpp": "rejected", "hangs.cpp": "timeout", "kills_process.cpp": "crash",
                        "cached_result.cpp": "wrong_result", "calls_torch.cpp": "rejected",
                        "calls_torch_hidden.cpp": "rejected", "softmax_ok.cpp": "ok"}
    assert result.correct and result.best.parameters["file"] == "softmax_ok.cpp"
