"""Where a model's time goes, by submodule, and which submodules to optimize as regions.

A region is a submodule (or the whole model, where no submodule is one) called once per forward with tensors
only, returning a tensor or a tuple/list of them: such a call can be exported on its own and replaced by one op.
Each submodule's inclusive time is measured with forward hooks around its calls (the device synchronised at both
ends, so a GPU's queued work lands in the module that queued it), over a few forwards after a warm-up; regions
are then taken largest first, never one inside another.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kevolve.harness.evaluation import Timing


@dataclass
class RegionProfile:
    """One submodule's calls in a forward, and its share of the forward's time."""

    path: str
    module: torch.nn.Module
    #: the tensors of its first call (detached), or None where it was called with anything but tensors
    inputs: list[torch.Tensor] | None
    calls: int
    seconds: float = 0.0
    share: float = 0.0
    #: what its first call returned: "tensor", "tuple" or "list" (of tensors)
    returns: str = "tensor"
    #: why it cannot be a region ("" where it can)
    unfit: str = ""
    samples: list[float] = field(default_factory=list)


def profile(model: torch.nn.Module, inputs: list[torch.Tensor], sync: Callable[[], None],
            forwards: int = 5) -> list[RegionProfile]:
    """Every submodule (the model itself too, as path "") with its median inclusive seconds per forward, largest
    first; ``sync`` waits for the device's queued work (the target runner's)."""
    profiles = {path: RegionProfile(path, module, None, 0) for path, module in model.named_modules()}
    starts: dict[str, list[float]] = {path: [] for path in profiles}
    totals: dict[str, float] = {}
    recording = [False]

    def before(path: str) -> Callable:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
            entry = profiles[path]
            if not recording[0]:
                entry.calls += 1
                if entry.calls == 1:
                    tensors = all(isinstance(a, torch.Tensor) for a in args) and args and not kwargs
                    entry.inputs = [a.detach() for a in args] if tensors else None
                return
            sync()
            starts[path].append(time.perf_counter())
        return hook

    def after(path: str) -> Callable:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            entry = profiles[path]
            if not recording[0]:
                if entry.calls == 1 and not _tensors_out(output):
                    entry.unfit = "returns something other than a tensor or a tuple or list of tensors"
                elif entry.calls == 1:
                    entry.returns = ("list" if isinstance(output, list) else
                                     "tuple" if isinstance(output, tuple) else "tensor")
                return
            sync()
            totals[path] = totals.get(path, 0.0) + time.perf_counter() - starts[path].pop()
        return hook

    handles = []
    for path, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(before(path), with_kwargs=True))
        handles.append(module.register_forward_hook(after(path), with_kwargs=True))
    whole = []
    try:
        with torch.no_grad():
            model(*inputs)  # counts calls and keeps each module's first inputs
            recording[0] = True
            for _ in range(forwards):
                totals.clear()
                sync()
                began = time.perf_counter()
                model(*inputs)
                sync()
                whole.append(time.perf_counter() - began)
                for path, seconds in totals.items():
                    profiles[path].samples.append(seconds)
    finally:
        for handle in handles:
            handle.remove()
    total = statistics.median(whole)
    for entry in profiles.values():
        entry.seconds = statistics.median(entry.samples) if entry.samples else 0.0
        entry.share = entry.seconds / total if total else 0.0
        if entry.calls != 1 and not entry.unfit:
            entry.unfit = f"called {entry.calls} times in a forward" if entry.calls else "not called by forward"
        elif entry.inputs is None and not entry.unfit:
            entry.unfit = "called with something other than tensors (keywords, numbers, None)"
    return sorted(profiles.values(), key=lambda e: (-e.seconds, e.path))


def time_in_forward(model: torch.nn.Module, path: str, variants: dict[str, torch.nn.Module],
                    inputs: list[torch.Tensor], sync: Callable[[], None], rounds: int = 15) -> list[Timing]:
    """Seconds per forward that each variant of the submodule at ``path`` takes inside ``model``'s forward (in
    ``variants``' order): each variant in turn put at ``path`` for one forward, round-robin after a warm-up
    forward each, its calls timed by hooks (``sync`` at both ends); the model is left as it was.

    A region's time is measured where the user runs it: on the inputs the forward makes, with the allocator and
    the caches as the modules before it leave them. Timed alone on recorded inputs, the ads model's history
    branch took 12.9 ms eager on a CPU against 4.9 ms inside the forward (glibc mapped its 32 MiB temporaries
    afresh on every call, page faults included, where inside the forward the heap had room), and its kernel,
    3x faster alone, saved 0.3 ms of the forward (bench/notes/model_regions_in_context.md)."""
    parent, _, leaf = path.rpartition(".")
    holder = model.get_submodule(parent) if path else None
    original = model.get_submodule(path)
    spent: dict[str, list[float]] = {name: [] for name in variants}
    current: list[str] = [""]
    began: list[float] = []

    def pre(name: str) -> Callable:
        def hook(module: torch.nn.Module, args: tuple) -> None:
            if current[0] == name:
                sync()
                began.append(time.perf_counter())
        return hook

    def post(name: str) -> Callable:
        def hook(module: torch.nn.Module, args: tuple, output: Any) -> None:
            if current[0] == name:
                sync()
                spent[name].append(time.perf_counter() - began.pop())
        return hook

    handles = [h for name, module in variants.items()
               for h in (module.register_forward_pre_hook(pre(name)), module.register_forward_hook(post(name)))]

    def forward(name: str) -> None:
        variant = variants[name]
        if holder is not None:
            setattr(holder, leaf, variant)
        current[0] = name
        try:
            (model if holder is not None else variant)(*inputs)
        finally:
            current[0] = ""
            began.clear()

    try:
        with torch.no_grad():
            for name in variants:  # warm-up
                forward(name)
            for times in spent.values():
                times.clear()
            for _ in range(rounds):
                for name in variants:
                    forward(name)
    finally:
        for handle in handles:
            handle.remove()
        if holder is not None:
            setattr(holder, leaf, original)
    return [Timing.of(spent[name]) for name in variants]


def _tensors_out(output: Any) -> bool:
    if isinstance(output, torch.Tensor):
        return True
    return isinstance(output, (tuple, list)) and bool(output) and all(isinstance(o, torch.Tensor) for o in output)


def overlaps(path: str, taken: list[str]) -> bool:
    """Whether ``path`` is one of ``taken``, inside one, or holds one ("" is the whole model)."""
    return any(path == t or not path or not t or path.startswith(t + ".") or t.startswith(path + ".") for t in taken)
