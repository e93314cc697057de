"""Checks of the public API's arguments, made before anything runs or is stored.

A wrong type or value must be one :class:`~kevolve.errors.ArgumentError` naming the argument, what it must be
and what was given, not an AttributeError from deep inside a search that has already stored a failed session,
and not a string read character by character where a list was meant.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from kevolve.errors import ArgumentError


def _refuse(name: str, must: str, value: Any) -> ArgumentError:
    return ArgumentError(f"{name} must be {must}, got {value!r} ({type(value).__name__})")


def count(name: str, value: Any, example: int, *, low: int = 1) -> int:
    """A whole number >= ``low`` (a bool is not one here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _refuse(name, f"an integer >= {low} (e.g. {name}={example})", value)
    return value


def seconds_or_none(name: str, value: Any) -> float | None:
    """None, or a positive finite number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _refuse(name, "a number > 0 or None", value)
    return float(value)


def name(argument: str, value: Any, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse(argument, f"a name such as {example!r}", value)
    return value


def names(argument: str, value: Any, example: str) -> tuple[str, ...]:
    """A list of names; a lone string is refused rather than taken for a list of its characters."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise _refuse(argument, f"a list of names such as [{example!r}]", value)
    return tuple(value)


def path(argument: str, value: Any) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise _refuse(argument, "a path (str or pathlib.Path)", value)
    return Path(value)


def store_like(value: Any) -> None:
    from kevolve.store import Store

    if value is not None and not isinstance(value, (str, os.PathLike, Store)):
        raise _refuse("store", "a path, a postgresql:// URL, a kevolve Store, or None for the default store", value)


def mapping(argument: str, value: Any, example: str) -> dict[str, Any] | None:
    """None, or a dict keyed by names (``dims``, ``attrs``): never a string like "rows=5"."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _refuse(argument, f"a dict such as {example}", value)
    return dict(value)


def dtype_name(value: Any) -> str | None:
    """A dtype's name, from a name or a torch.dtype (checked against the op's dtypes later)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    raise _refuse("dtype", "a name such as 'float32' or a torch.dtype such as torch.bfloat16", value)


def problem_settings(*, target: Any, store: Any, dims: Any, dtype: Any, attrs: Any, baselines: Any) -> str | None:
    """What optimize and evaluate take alike; returns the dtype as a name."""
    name("target", target, "cpu")
    store_like(store)
    mapping("dims", dims, "{'rows': 4096}")
    mapping("attrs", attrs, "{'eps': 1e-05}")
    names("baselines", baselines, "eager")
    return dtype_name(dtype)


def search_settings(*, budget: Any, seed: Any, time_budget_s: Any, target_speedup: Any, synthesizer: Any,
                    batch: Any, stall: Any) -> None:
    count("budget", budget, 20)
    count("seed", seed, 0, low=0)
    seconds_or_none("time_budget_s", time_budget_s)
    seconds_or_none("target_speedup", target_speedup)
    name("synthesizer", synthesizer, "template")
    count("batch", batch, 2)
    count("stall", stall, 12)
