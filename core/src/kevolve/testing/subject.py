"""What the contract checks look at: one plugin, loaded alone, and the choices its author may override.

The plugin is loaded the way ``KEVOLVE_PLUGINS`` loads a module, with entry-point autoload off, and becomes
this process's plugin manager while the checks run: then the targets under test are exactly the ones it
registers, a docs-pack error is its own, and the harness's worker processes (which load the manager's modules)
see the same plugins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kevolve.errors import KevolveError

if TYPE_CHECKING:
    from kevolve.plugins import Manager
    from kevolve.problems.catalog import CatalogProblem
    from kevolve.registry import RegisteredTarget

#: a source no compiler accepts, in any language: the default broken kernel
BROKEN_SOURCE = "this file is not a kernel (((\n"


class PluginLoadError(KevolveError, AssertionError):
    """The plugin under test failed to import or to register; the message carries its error and traceback."""


@contextmanager
def plugin_session(plugin: str, requires: tuple[str, ...] = ()) -> Iterator[Manager]:
    """Make a manager holding core's built-ins, the modules ``requires`` names and ``plugin`` (each a module
    name, as ``KEVOLVE_PLUGINS`` takes) this process's plugin manager; the previous one comes back on exit.

    :param plugin: the module implementing the plugin's hooks (``"kevolve_toy.plugin"``)
    :param requires: plugin modules it needs loaded too (``kevolve_triton.plugin`` for a Triton-based backend)
    :raises PluginLoadError: when any of them fails to load
    """
    from kevolve.plugins import PLUGIN_ENV, get_manager, reset_manager

    saved = {name: os.environ.get(name) for name in PLUGIN_ENV}
    os.environ["KEVOLVE_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["KEVOLVE_PLUGINS"] = ",".join([*requires, plugin])
    reset_manager()
    try:
        manager = get_manager()
        if manager.failures:
            raise PluginLoadError("\n".join(f"plugin {f.plugin} failed to load: {f.error}\n{f.detail}"
                                            for f in manager.failures))
        yield manager
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_manager()


@dataclass
class Subject:
    """One plugin under test, loaded by :func:`plugin_session`, and what its checks use."""

    plugin: str
    manager: Manager
    #: where builds go
    workdir: Path
    #: the catalog op whose kernel is built and run, at these dims (small: the checks must be quick)
    op: str = "relu"
    dims: dict[str, int] = field(default_factory=lambda: {"n": 4096})
    #: language -> a correct kernel for ``op``; a language not named here gets one from the target's recipes
    kernels: dict[str, str] = field(default_factory=dict)
    #: language -> a source that must fail to build; :data:`BROKEN_SOURCE` otherwise
    broken_sources: dict[str, str] = field(default_factory=dict)

    def targets(self) -> list[str]:
        """The names of the targets the plugin registered (not those of the modules it requires)."""
        return [t.spec.name for t in self.manager.targets.all() if t.plugin == self.plugin]

    def target(self, name: str) -> RegisteredTarget:
        """The registered target ``name`` (its spec, its backend, the plugin that registered it)."""
        return self.manager.target(name)

    def problem(self) -> CatalogProblem:
        """A fresh problem of :attr:`op` at :attr:`dims`, in the op's first dtype."""
        from kevolve.problems.catalog import CatalogProblem

        return CatalogProblem(self.manager.ops.get(self.op), dims=self.dims)
