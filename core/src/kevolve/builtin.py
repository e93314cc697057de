"""Core's own plugin: the catalog ops, core's docs pack and the template synthesizer, registered through the
same hooks as any third-party plugin."""

from __future__ import annotations

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_ops(registry) -> None:
    from kevolve.problems import ops

    ops.register(registry)


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("core", resources.files("kevolve").joinpath("docs_pack"))


@hookimpl
def kevolve_register_synthesizers(registry) -> None:
    from kevolve.synthesis.template import TemplateSynthesizer

    registry.add("template", lambda option: TemplateSynthesizer())
