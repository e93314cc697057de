"""kevolve-cpu's entry point (group ``kevolve``): registers the ``cpu`` target and its docs pack."""

from __future__ import annotations

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_targets(registry) -> None:
    from kevolve_cpu.backend import CpuBackend, cpu_spec

    registry.add(cpu_spec(), CpuBackend())


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("cpu", resources.files("kevolve_cpu").joinpath("docs_pack"))
