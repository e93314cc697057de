"""ATen ops that computed during a kernel's call without passing the harness's recording of them.

The recording is a ``TorchDispatchMode``: it sees an op when the op reaches PyTorch's Python dispatch key. A C-level
guard (``torch._C._DisableTorchDispatch()``, an excluded dispatch key) made once at load takes the key away, and
then tensor operators (``y[...] = x * (x > 0)``) compute with no Python call a profile function reports and no op
the mode sees. PyTorch's profiler hooks the dispatcher itself (``RecordFunction``), below any such guard: every op
that runs is an event. An event the mode saw (by name, counted), or one inside it, is accounted for; an op with a
kernel of its own (not a composite that only calls others, not a view or an allocation) that the mode never saw
computed out of its sight. The legacy (non-Kineto) profiler is used: it starts in milliseconds where Kineto's
first start took a second, and costs about half a millisecond per call, so it watches every correctness call.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import torch
from torch.autograd import profiler

#: ops that compute nothing: views, allocations, the metadata a launcher reads
NOT_COMPUTING = {"aten::detach", "aten::detach_", "aten::alias", "aten::view", "aten::as_strided", "aten::_reshape_alias",
                 "aten::empty", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
                 "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg"}


@cache
def _computes(name: str) -> bool:
    """Whether an op named by the profiler runs a kernel of its own: not a composite (whose parts are events of
    their own), not a view or an allocation."""
    if name in NOT_COMPUTING:
        return False
    packet = getattr(torch.ops.aten, name.removeprefix("aten::"), None)
    overloads = [getattr(packet, o) for o in packet.overloads()] if packet is not None else []
    return any(not o.is_view and not torch._C._dispatch_has_kernel_for_dispatch_key(o.name(), "CompositeImplicitAutograd")
               for o in overloads)


class Watch:
    """The profiler's events of one call; :meth:`unseen` compares them with what the recording saw."""

    def __init__(self) -> None:
        self.events: list = []

    def unseen(self, seen: Counter[str]) -> list[str]:
        """The computing ops that ran without the recording seeing them (``seen``: op names such as
        ``aten::mul``, each as often as the recording saw it)."""
        left = Counter(seen)

        def visit(event) -> tuple[bool, list[str]]:
            """(whether the recording saw this op or one inside it, the unseen computing ops)."""
            if left[event.name] > 0:
                left[event.name] -= 1
                return True, []  # what it called inside is its own business
            seen_inside, found = False, []
            for child in event.cpu_children:
                seen, unseen = visit(child)
                seen_inside, found = seen_inside or seen, found + unseen
            if not seen_inside and event.name.startswith("aten::") and _computes(event.name):
                return False, [event.name]  # its inner ops are its own: it is the one that ran unseen
            return seen_inside, found

        return [name for event in self.events if event.cpu_parent is None for name in visit(event)[1]]


@contextmanager
def watched() -> Iterator[Watch]:
    """Every ATen op run on this thread inside the block, as the profiler's events (threads the kernel starts are
    the launcher rules' to watch: :mod:`kevolve.harness.launchers`)."""
    watch = Watch()
    prof = profiler.profile(use_kineto=False)
    with _stderr_silenced():
        prof.__enter__()
    try:
        yield watch
    finally:
        with _stderr_silenced():
            prof.__exit__(None, None, None)
    watch.events = sorted(prof.function_events, key=lambda e: e.time_range.start)


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 to /dev/null: the profiler's C++ side logs a line to it at every start and stop
    (``USDT: ... profiler_start``, torch 2.13), which would reach the user's terminal once per checked call."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
