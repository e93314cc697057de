"""A plugin whose registration raises: kevolve must report it and keep going."""

from kevolve.hookspecs import hookimpl


@hookimpl
def kevolve_register_targets(registry):
    raise RuntimeError("this plugin is broken on purpose")
