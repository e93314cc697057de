"""The host clock (kevolve.backend.runner.Runner.time_interleaved) times the rate a caller's loop of calls gets:
a call's device work after its last host read overlaps the next call's host side, the device work still queued
when a sample's last call returns is counted, and what the harness does between calls is not. A simulated
device (a clock of when its queue drains) stands in for a GPU."""

from __future__ import annotations

import time

from kevolve.backend.runner import Runner

MS = 1e-3


class QueuedDevice(Runner):
    """A device whose queued work ends at ``busy_until``; synchronising waits for it."""

    def __init__(self) -> None:
        self.busy_until = time.perf_counter()

    def load(self, build):
        raise NotImplementedError

    def synchronize(self) -> None:
        time.sleep(max(0.0, self.busy_until - time.perf_counter()))

    def enqueue(self, seconds: float) -> None:
        self.busy_until = max(self.busy_until, time.perf_counter()) + seconds


def sized_call(device: QueuedDevice, before_read: float, after_read: float, device_s: float):
    """A call shaped like jagged_truncate's: host work, a read that waits for the device (sizing the outputs),
    more host work, then device work it does not wait for."""
    def call() -> None:
        time.sleep(before_read)
        device.synchronize()
        time.sleep(after_read)
        device.enqueue(device_s)
    return call


def test_a_calls_device_tail_overlaps_the_next_calls_host_side():
    device = QueuedDevice()
    call = sized_call(device, before_read=40 * MS, after_read=5 * MS, device_s=40 * MS)
    per_call = device.time_interleaved({"call": call}, repeats=3, inner={"call": 4})["call"]
    # a loop: max(40, 40) + 5 = 45 ms a call (plus the last call's 40 ms tail over 4 calls); synchronising around
    # each call would count 40 + 5 + 40 = 85 ms
    assert max(per_call) < 70 * MS, per_call
    assert min(per_call) > 44 * MS, per_call


def test_device_work_queued_when_the_sample_ends_is_counted():
    device = QueuedDevice()
    call = sized_call(device, before_read=0.0, after_read=0.0, device_s=30 * MS)
    per_call = device.time_interleaved({"call": call}, repeats=2, inner={"call": 3})["call"]
    # each call waits for the one before it; without the final wait the last call's 30 ms would be missed (20 ms)
    assert min(per_call) > 27 * MS, per_call


def test_what_the_harness_does_between_calls_is_not_counted():
    device = QueuedDevice()
    call = sized_call(device, before_read=0.0, after_read=10 * MS, device_s=0.0)
    per_call = device.time_interleaved({"call": call}, repeats=2, inner={"call": 3},
                                       before_call=lambda: time.sleep(50 * MS))["call"]
    assert max(per_call) < 40 * MS, per_call
