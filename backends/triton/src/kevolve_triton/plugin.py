"""kevolve-triton's entry point: the Triton-language docs pack (no target of its own)."""

from __future__ import annotations

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("triton", resources.files("kevolve_triton").joinpath("docs_pack"))
