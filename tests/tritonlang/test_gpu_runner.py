"""The GPU runner's spin before each timed call outlasts the call's host side: twice the host time measured
(the host's time varies from call to call) at the GPU's measured spin rate, never less than the runner's floor."""

from __future__ import annotations

from kevolve_triton.runner import TritonGpuRunner, spin_cycles


def test_a_slow_launch_gets_a_longer_spin():
    # a launch with host-side tensor descriptors: 72 us of host time, spun at 2 GHz
    assert spin_cycles(72e-6, 2e9, TritonGpuRunner.preroll_cycles) == 288_000


def test_a_fast_launch_keeps_the_floor():
    assert spin_cycles(10e-6, 2e9, TritonGpuRunner.preroll_cycles) == TritonGpuRunner.preroll_cycles
