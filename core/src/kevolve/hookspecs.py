"""The plugin contract: four registration hooks, each handed a registry object.

Plugins are pip distributions with an entry point in the ``kevolve`` group naming a module that implements
some of these hooks. Core's own ops and docs come in through the same hooks (:mod:`kevolve.builtin`).
Hooks may gain arguments over time but are never renamed or removed; an implementation declares only the
arguments it uses, and pluggy, which calls every hook (:mod:`kevolve.plugins`), hands it only those. The
registries (:mod:`kevolve.registry`) share one rule: a name or alias a second plugin registers is an error that
names both plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from kevolve.registry import DocsRegistry, OpRegistry, SynthesizerRegistry, TargetRegistry

hookspec = pluggy.HookspecMarker("kevolve")
hookimpl = pluggy.HookimplMarker("kevolve")


# --- hardware ------------------------------------------------------------------------------------------------

@hookspec
def kevolve_register_targets(registry: TargetRegistry) -> None:
    """Register targets with the backend that serves them: ``registry.add(spec, backend)``.

    Must be cheap and must not probe hardware: usability is asked later, through ``Backend.usable``.
    """


# --- problems ------------------------------------------------------------------------------------------------

@hookspec
def kevolve_register_ops(registry: OpRegistry) -> None:
    """Add catalog ops: ``registry.add(OpDef(...))``."""


# --- knowledge -----------------------------------------------------------------------------------------------

@hookspec
def kevolve_register_docs(registry: DocsRegistry) -> None:
    """Add a docs pack: ``registry.add_pack(name, root)``, root a directory of Markdown files with TOML front
    matter (see :mod:`kevolve.knowledge`)."""


# --- synthesis -----------------------------------------------------------------------------------------------

@hookspec
def kevolve_register_synthesizers(registry: SynthesizerRegistry) -> None:
    """Add synthesizer factories: ``registry.add(name, factory)``; ``factory(option)`` returns a Synthesizer,
    where ``option`` is the text after ``name:`` in ``--synthesizer name:option``."""
