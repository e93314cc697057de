"""Plugin discovery and the process-wide plugin manager.

Entry points in the ``kevolve`` group are loaded one at a time: a plugin that fails to import or to register
is recorded with its error (``kevolve targets`` shows it) and the others still load. Discovery is
controllable: ``KEVOLVE_DISABLE_PLUGIN_AUTOLOAD=1`` loads no entry points, ``KEVOLVE_PLUGINS=mod1,mod2``
loads modules by name (handy for testing a plugin before packaging it).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata, resources
from types import ModuleType
from typing import Any

import pluggy

from kevolve import hookspecs
from kevolve.knowledge import DocsRegistry, local_embedder
from kevolve.problems.catalog import OpRegistry
from kevolve.registry import RegisteredTarget, SynthesizerRegistry, TargetRegistry

ENTRY_POINT_GROUP = "kevolve"


@dataclass
class PluginFailure:
    plugin: str
    error: str
    detail: str


@dataclass
class Manager:
    pm: pluggy.PluginManager
    targets: TargetRegistry = field(default_factory=TargetRegistry)
    ops: OpRegistry = field(default_factory=OpRegistry)
    docs: DocsRegistry = field(default_factory=DocsRegistry)
    synthesizers: SynthesizerRegistry = field(
        default_factory=lambda: SynthesizerRegistry(lambda name: known_distribution(name, "synthesizers")))
    failures: list[PluginFailure] = field(default_factory=list)
    #: importable names of plugins registered in this process, so worker processes can load the same set
    modules: list[str] = field(default_factory=list)

    def register(self, plugin: Any, name: str | None = None) -> None:
        """Register a plugin (module or object with hook implementations) and run its registration hooks.
        Errors become :class:`PluginFailure` records rather than exceptions."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
            self._run_hooks(plugin, name)
        except Exception as exc:  # a broken plugin must not take kevolve down with it
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self.failures.append(PluginFailure(name, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            return
        if isinstance(plugin, ModuleType):
            self.modules.append(plugin.__name__)

    def _run_hooks(self, plugin: Any, name: str) -> None:
        self.targets.current_plugin = name
        for hook, registry in (("kevolve_register_targets", self.targets), ("kevolve_register_ops", self.ops),
                               ("kevolve_register_docs", self.docs),
                               ("kevolve_register_synthesizers", self.synthesizers)):
            impl = getattr(plugin, hook, None)
            if impl is not None:
                impl(registry=registry)

    def target(self, name: str) -> RegisteredTarget:
        return self.targets.resolve(name, known_distribution)

    def usable_target(self, name: str) -> RegisteredTarget:
        """The target, if kernels for it can be built and run here; otherwise an error saying why."""
        from kevolve.errors import TargetUnusableError

        registered = self.target(name)
        ok, why = registered.backend.usable(registered.spec)
        if not ok:
            raise TargetUnusableError(f"target {registered.spec.name} is installed but not usable here: {why}")
        return registered


def known_distribution(target: str, table: str = "distributions") -> str | None:
    """The distribution that would provide ``target`` (or, with ``table="synthesizers"``, a synthesizer) if it
    were installed, from core's data file."""
    import tomllib

    data = tomllib.loads(resources.files("kevolve").joinpath("known_backends.toml").read_text())
    for distribution, names in data.get(table, {}).items():
        if target.lower() in names:
            return distribution
    return None


def _load_module(manager: Manager, module_name: str, label: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        manager.failures.append(PluginFailure(label, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return
    manager.register(module, name=label)


def build_manager(extra_modules: list[str] | None = None) -> Manager:
    """A fresh manager with core's built-ins, every entry-point plugin (unless disabled) and ``extra_modules``."""
    pm = pluggy.PluginManager("kevolve")
    pm.add_hookspecs(hookspecs)
    manager = Manager(pm)
    from kevolve import builtin

    manager.register(builtin, name="kevolve.builtin")
    manager.docs.embedder, manager.docs.ranking = local_embedder()
    if os.environ.get("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes"):
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            _load_module(manager, ep.value, f"{ep.name} ({ep.dist.name if ep.dist else ep.value})")
    requested = [m for m in os.environ.get("KEVOLVE_PLUGINS", "").split(",") if m.strip()]
    for module_name in [*requested, *(extra_modules or [])]:
        if module_name.strip() not in manager.modules:
            _load_module(manager, module_name.strip(), module_name.strip())
    return manager


@cache
def get_manager() -> Manager:
    return build_manager()


def reset_manager() -> None:
    """Forget the process-wide manager (tests; after installing a plugin at run time)."""
    get_manager.cache_clear()


def worker_bootstrap() -> dict[str, Any]:
    """What a worker process needs to see the same plugins as this one."""
    return {"sys_path": list(sys.path), "modules": list(get_manager().modules)}


def adopt_bootstrap(bootstrap: dict[str, Any]) -> Manager:
    """In a worker or helper process: load the plugins :func:`worker_bootstrap` named and make them this
    process's manager, so problems rebuilt from specs see the same ops."""
    global get_manager
    for entry in bootstrap["sys_path"]:
        if entry not in sys.path:
            sys.path.append(entry)
    manager = build_manager(bootstrap["modules"])
    get_manager.cache_clear()
    get_manager = lambda: manager
    return manager
