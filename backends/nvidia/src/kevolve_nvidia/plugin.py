"""kevolve-nvidia's entry point (group ``kevolve``): the NVIDIA targets and their docs pack."""

from __future__ import annotations

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_targets(registry) -> None:
    from kevolve_nvidia.backend import NvidiaBackend, nvidia_specs

    backend = NvidiaBackend()
    for spec in nvidia_specs():
        registry.add(spec, backend)


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("nvidia", resources.files("kevolve_nvidia").joinpath("docs_pack"))
