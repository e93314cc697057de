"""The GPU runner's spin before each timed call outlasts the call's host side: twice the host time measured
(the host's time varies from call to call) at the GPU's measured spin rate, never less than the runner's floor."""

from __future__ import annotations

from kevolve_triton.runner import TritonGpuRunner, spin_cycles


def test_a_slow_launch_gets_a_longer_spin():
    # a call whose host side takes 300 us, spun at 2 GHz
    assert spin_cycles(300e-6, 2e9, TritonGpuRunner.preroll_cycles) == 1_200_000


def test_a_fast_launch_keeps_the_floor():
    # torch.compile's host side, 75 us: behind a 200k-cycle floor it timed up to 8x slow (see TritonGpuRunner)
    assert spin_cycles(75e-6, 2e9, TritonGpuRunner.preroll_cycles) == TritonGpuRunner.preroll_cycles >= 800_000
