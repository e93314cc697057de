"""kevolve-amd's entry point (group ``kevolve``): the AMD Instinct targets and their docs pack."""

from __future__ import annotations

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_targets(registry) -> None:
    from kevolve_amd.backend import AmdBackend, amd_specs

    backend = AmdBackend()
    for spec in amd_specs():
        registry.add(spec, backend)


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("amd", resources.files("kevolve_amd").joinpath("docs_pack"))
