"""The torch.compile baselines on the CPU target: max-autotune is timed beside eager when it compiles within its
limit, reported untimed with the reason when it does not, and an unknown baseline is refused up front."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import kevolve
import pytest
from kevolve.errors import KevolveError

KERNELS = Path(__file__).parent / "kernels"


def test_max_autotune_is_timed_beside_eager_and_compiled_before_the_device_is_held(fast_harness):
    """The torch.compile baselines compile in a child before the worker's correctness check, where a worker on a
    GPU takes its device: the compile (10-30 s of host work a problem on a lent H200) kept other workers off
    the device when it ran inside the timing. Its time is charged to the build stage."""
    from kevolve.api import resolve_problem
    from kevolve.harness.pipeline import evaluate_candidate
    from kevolve.synthesis.base import Candidate

    reports: list[str] = []
    ev = evaluate_candidate(Candidate((KERNELS / "softmax_ok.cpp").read_text(), "cpp", synthesizer="user"),
                            resolve_problem("softmax", dims={"rows": 64, "cols": 256}), "cpu",
                            replace(fast_harness, baselines=("eager", "max-autotune"), timeout_s=300, sample_s=0.005),
                            on_stage=reports.append)
    assert ev.correct, ev.reason
    assert set(ev.timings) == {"kernel", "eager", "max-autotune"} and not ev.untimed_baselines
    assert ev.speedups["max-autotune"].median > 0
    # printed as a result, unless every timing of it was disturbed (a busy CI machine), which it then says
    assert any(line.startswith("  vs max-autotune: ") for line in ev.timing_lines()) or ev.disturbed
    first_check = next(i for i, r in enumerate(reports) if r.startswith("correctness"))
    assert "compile baselines" in reports[:first_check], reports
    assert ev.stage_s["build"] > 0


def test_max_autotune_past_its_compile_limit_is_reported_not_timed(fast_harness):
    harness = replace(fast_harness, compile_limit_s=0.5)
    result = kevolve.evaluate(KERNELS / "softmax_ok.cpp", "softmax", target="cpu", dims={"rows": 64, "cols": 256},
                              baselines=("eager", "max-autotune"), harness=harness)
    ev = result.evaluation
    assert ev.correct and "eager" in ev.timings and "max-autotune" not in ev.timings
    assert "did not finish compiling within 0 s" in ev.untimed_baselines["max-autotune"]
    assert result.to_json()["untimed_baselines"] == ev.untimed_baselines
    assert "vs max-autotune: not timed" in "\n".join(ev.timing_lines())


def test_unknown_baseline_is_refused_with_the_choices():
    with pytest.raises(KevolveError, match="eager, compile, max-autotune"):
        kevolve.evaluate(KERNELS / "softmax_ok.cpp", "softmax", target="cpu", baselines=("eager", "inductor"))
    with pytest.raises(KevolveError, match="unknown baselines"):
        kevolve.optimize("softmax", target="cpu", baselines=("autotune",))


#: the cheats' honest numba softmax (a kernel file stands alone: it is written out with it inlined) behind a
#: launcher whose first call on new inputs pays a setup, as a caller's first call on a new batch size allocates and
#: specialises; every later call on them is plain
SLOW_ON_NEW_INPUTS = (KERNELS / "cheats" / "softmax_rows.py").read_text() + '''
seen = set()


@numba.njit(cache=False)
def _setup(steps):
    total = 0.0
    for _ in range(steps):
        total = total * 1.0000001 + 1.0
    return total


def kernel(x, y):
    if float(x[0, 0]) not in seen:  # a first call on new inputs: about 0.2 s of setup
        seen.add(float(x[0, 0]))
        y[0, 0] = _setup(100_000_000)
    softmax_rows(x, y)
'''


def test_each_round_times_the_steady_calls_on_its_fresh_inputs(fast_harness, tmp_path):
    """Every timing round draws fresh inputs and calls each contender once untimed on them: what is timed is a
    caller's loop on those inputs, not the first call's setup (a jagged batch of new sizes every round had made
    the harness report 1.01x eager where a caller's loop got 1.26x on a lent H200). Without that call, each
    round's first sample here would carry the setup (about 0.2 s) over its few calls."""
    path = tmp_path / "slow_on_new_inputs.py"
    path.write_text(SLOW_ON_NEW_INPUTS)
    ev = kevolve.evaluate(path, "softmax", target="cpu", dims={"rows": 64, "cols": 256},
                          harness=replace(fast_harness, repeats=4)).evaluation
    assert ev.correct, ev.reason
    assert ev.timings["kernel"].median < 0.01, ev.timings["kernel"]



def test_the_final_re_timing_keeps_the_searchs_diagnosis_without_profiling_again(fast_harness, tmp_path):
    """The final re-timing is the best kernel at the same shape: it is not profiled again (on a GPU, 10-17 s of
    the device held a problem), and the result's diagnosis is the search's profile of that kernel."""
    result = kevolve.optimize("relu", target="cpu", dims={"n": 4096}, budget=1, store=tmp_path / "s.sqlite",
                              harness=fast_harness)
    assert result.final is not None and result.final.evaluation.correct
    assert "profile" not in result.final.evaluation.stage_s
    assert "profile" in result.best.evaluation.stage_s
    assert result.diagnosis is not None and result.diagnosis == result.best.evaluation.diagnosis
