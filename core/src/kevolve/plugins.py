"""Plugin discovery and the process-wide plugin manager.

Entry points in the ``kevolve`` group are loaded one at a time: a plugin that fails to import or to register
is recorded with its error (``kevolve targets`` shows it, and asking for a target or op it provides names it)
and the others still load. Hooks are called through pluggy, one plugin at a time. Discovery is
controllable: ``KEVOLVE_DISABLE_PLUGIN_AUTOLOAD=1`` loads no entry points, ``KEVOLVE_PLUGINS=mod1,mod2``
loads modules by name (handy for testing a plugin before packaging it).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from functools import cache
from importlib import metadata, resources
from types import ModuleType
from typing import Any

import pluggy

from kevolve import hookspecs
from kevolve.knowledge import KnowledgeBase, local_embedder
from kevolve.registry import (NOT_A_PLUGIN, DocsRegistry, OpRegistry, PluginFailure, RegisteredTarget,
                              RegistrationLog, Registry, SynthesizerRegistry, TargetRegistry)

ENTRY_POINT_GROUP = "kevolve"


class Manager:
    """The plugins of one process and what they registered: targets, ops, docs packs (into :attr:`knowledge`)
    and synthesizers; plugins that failed to load are in :attr:`failures`."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.log = RegistrationLog()
        self.targets = TargetRegistry(self.log, known_distribution)
        self.ops = OpRegistry(self.log)
        self.knowledge = KnowledgeBase()
        self.docs = DocsRegistry(self.knowledge, self.log)
        self.synthesizers = SynthesizerRegistry(self.log, lambda name: known_distribution(name, "synthesizers"))
        #: importable names of plugins registered in this process, so worker processes can load the same set
        self.modules: list[str] = []

    @property
    def failures(self) -> list[PluginFailure]:
        return self.log.failures

    def registries(self) -> dict[str, Registry]:
        """Each registration hook, in the order they run for a plugin, with the registry it fills."""
        return {"kevolve_register_targets": self.targets, "kevolve_register_ops": self.ops,
                "kevolve_register_docs": self.docs, "kevolve_register_synthesizers": self.synthesizers}

    def hook_arguments(self, hook: str) -> dict[str, Any]:
        """What ``hook`` is called with. A hook that gains an argument gains it here: pluggy hands each
        implementation only the arguments it declares, so plugins written before it keep working."""
        return {"registry": self.registries()[hook]}

    def register(self, plugin: Any, name: str | None = None, distribution: str | None = None) -> None:
        """Register a plugin (module or object with hook implementations) and run its registration hooks.
        A failure becomes a :class:`PluginFailure` record rather than an exception, and the plugin is withdrawn
        whole: nothing it registered before failing stays."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        # registering what is already there fails in pluggy; undoing that would remove the earlier registration
        fresh = not (self.pm.is_registered(plugin) or self.pm.has_plugin(name))
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
            self._run_hooks(plugin, name)
        except Exception as exc:  # a broken plugin must not take kevolve down with it
            withdrawn: set[tuple[str, str]] = set()
            if fresh:
                if self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
                withdrawn = {(registry.kind, spelling) for registry in self.registries().values()
                             for spelling in registry.withdraw(name)}
            self.log.failures.append(PluginFailure(name, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                                                   distribution, withdrawn))
            return
        if isinstance(plugin, ModuleType):
            self.modules.append(plugin.__name__)

    def _run_hooks(self, plugin: Any, name: str) -> None:
        """Each hook through pluggy's caller for this plugin alone: the plugins registered before it ran theirs
        when they were registered, and a failure here is this plugin's."""
        others = [p for p in self.pm.get_plugins() if p is not plugin]
        self.log.current = name
        try:
            for hook in self.registries():
                self.pm.subset_hook_caller(hook, others)(**self.hook_arguments(hook))
        finally:
            self.log.current = NOT_A_PLUGIN

    def target(self, name: str) -> RegisteredTarget:
        return self.targets.resolve(name)

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


def _load_module(manager: Manager, module_name: str, label: str, distribution: str | None = None) -> None:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        manager.failures.append(PluginFailure(label, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                                              distribution))
        return
    manager.register(module, name=label, distribution=distribution)


def build_manager(extra_modules: list[str] | None = None) -> Manager:
    """A fresh manager with core's built-ins, every entry-point plugin (unless disabled) and ``extra_modules``."""
    pm = pluggy.PluginManager("kevolve")
    pm.add_hookspecs(hookspecs)
    manager = Manager(pm)
    from kevolve import builtin

    manager.register(builtin, name="kevolve.builtin")
    manager.knowledge.embedder, manager.knowledge.ranking = local_embedder()
    if os.environ.get("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes"):
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            distribution = ep.dist.name if ep.dist else None
            _load_module(manager, ep.value, f"{ep.name} ({distribution or ep.value})", distribution)
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


#: the variables that choose which plugins load, as this process has them now: a worker forked from a zygote
#: started earlier would otherwise read them as they were then (and load another plugin set)
PLUGIN_ENV = ("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "KEVOLVE_PLUGINS")


def worker_bootstrap() -> dict[str, Any]:
    """What a worker process needs to see the same plugins as this one."""
    return {"sys_path": list(sys.path), "modules": list(get_manager().modules),
            "env": {name: os.environ.get(name) for name in PLUGIN_ENV}}


def adopt_bootstrap(bootstrap: dict[str, Any]) -> Manager:
    """In a worker or helper process: load the plugins :func:`worker_bootstrap` named and make them this
    process's manager, so problems rebuilt from specs see the same ops. A process that runs many tasks (a Ray
    worker) builds each bootstrap's plugins once."""
    global get_manager
    for entry in bootstrap["sys_path"]:
        if entry not in sys.path:
            sys.path.append(entry)
    for name, value in bootstrap.get("env", {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    key = json.dumps(bootstrap, sort_keys=True, default=str)
    if key not in _adopted:
        _adopted[key] = build_manager(bootstrap["modules"])
    manager = _adopted[key]
    getattr(get_manager, "cache_clear", lambda: None)()  # the first adoption replaces the cached lookup
    get_manager = lambda: manager
    return manager


_adopted: dict[str, Manager] = {}
