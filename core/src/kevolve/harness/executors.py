"""The executor a name stands for (``--executor local[:N]|ray[:ADDRESS]``), made for one target."""

from __future__ import annotations

import os

from kevolve.errors import KevolveError
from kevolve.harness.executor import Executor, LocalExecutor
from kevolve.registry import RegisteredTarget


def make_executor(spec: str | Executor | None, registered: RegisteredTarget) -> Executor:
    """The executor ``spec`` names for a target: ``local`` (the default: as many builds at once as the host has
    cores beside its timing lanes, one where timing needs the host quiet), ``local:N`` (N builds at once),
    ``ray`` (a Ray cluster: the one ``RAY_ADDRESS`` names, else a local one) or ``ray:ADDRESS``."""
    if isinstance(spec, Executor):
        return spec
    kind, _, option = (spec or "local").partition(":")
    lanes = registered.backend.timing_lanes(registered.spec)
    if kind == "local":
        if option and not (option.isdigit() and int(option) > 0):
            raise KevolveError(f"executor 'local:{option}': give how many builds run at once, e.g. local:4")
        default = 1 if lanes.quiet_host else max(1, (os.cpu_count() or 1) - len(lanes.envs))
        return LocalExecutor(lanes, int(option) if option else default)
    if kind == "ray":
        from kevolve.harness.ray_executor import RayExecutor

        return RayExecutor(registered, address=option or None)
    raise KevolveError(f"unknown executor {spec!r}; choose local, local:N, ray or ray:ADDRESS")
