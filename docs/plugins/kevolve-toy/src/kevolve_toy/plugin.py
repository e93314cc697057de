"""kevolve-toy's entry point (group ``kevolve``): the ``toy`` target and its docs pack."""

from importlib import resources

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_targets(registry) -> None:
    from kevolve_toy.backend import ToyBackend, toy_spec

    registry.add(toy_spec(), ToyBackend())


@hookimpl
def kevolve_register_docs(registry) -> None:
    registry.add_pack("toy", resources.files("kevolve_toy").joinpath("docs_pack"))
