"""The hooks, as a plugin author meets them (datasette-style meta-tests included).

Every hook in ``kevolve.hookspecs`` is implemented by ``every_hook_plugin`` and has a ``test_hook_<name>`` here;
hooks are called through pluggy, so a hook that gains an argument keeps old plugins working; every registry
refuses a name a second plugin registers, naming both; a plugin that fails is withdrawn whole and named
wherever what it provides is asked for.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import every_hook_plugin
import pluggy
import pytest
import torch

from kevolve import hookspecs
from kevolve.errors import KevolveError, UnknownOpError, UnknownTargetError
from kevolve.hookspecs import hookimpl, hookspec
from kevolve.knowledge import Signals
from kevolve.plugins import Manager, build_manager
from kevolve.problems.catalog import CatalogProblem
from kevolve.problems.rebuild import problem_from_spec

HOOKS = [name for name in dir(hookspecs) if name.startswith("kevolve_")]


@pytest.fixture
def manager(monkeypatch) -> Manager:
    """Core's built-ins and nothing else: the entry points of installed backends stay out."""
    monkeypatch.setenv("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("KEVOLVE_PLUGINS", raising=False)
    return build_manager()


@pytest.fixture
def hooked(manager) -> Manager:
    manager.register(every_hook_plugin, name="every_hook_plugin")
    assert manager.failures == []
    return manager


def plugin(**hooks) -> object:
    """A plugin object with these hook implementations (a module is one; so is any hashable object)."""
    return type("Plugin", (), {name: staticmethod(hookimpl(function)) for name, function in hooks.items()})()


# --- meta-tests ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test_plugin(hook):
    pm = pluggy.PluginManager("kevolve")
    assert pm.parse_hookimpl_opts(every_hook_plugin, hook) is not None, (
        f"tests/every_hook_plugin.py does not implement {hook}")


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook):
    tests = {node.name for node in ast.parse(Path(__file__).read_text()).body if isinstance(node, ast.FunctionDef)}
    assert f"test_hook_{hook}" in tests, f"{Path(__file__).name} has no test_hook_{hook}"


# --- one test per hook ---------------------------------------------------------------------------------------

def test_hook_kevolve_register_targets(hooked):
    registered = hooked.target("HK")
    assert registered.spec.name == "hooked" and registered.plugin == "every_hook_plugin"
    assert "hooked" in hooked.targets.names()


def test_hook_kevolve_register_ops(hooked):
    op = hooked.ops.get("hooked_neg")
    assert op.name == "hooked_negate" and "hooked_negate" in hooked.ops.names()
    problem = problem_from_spec(CatalogProblem(op, dims={"n": 8}).to_spec(), hooked.ops.get)
    inputs = problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))
    assert problem.dims == {"n": 8} and torch.equal(problem.reference(inputs)[0], -inputs[0])


def test_hook_kevolve_register_docs(hooked):
    assert "hooked" in hooked.docs.packs and hooked.docs.errors == []
    retrieved = hooked.knowledge.retrieve(Signals(target="hooked", family="pointwise", query="negate"))
    assert [(p.title, p.hints) for p in retrieved if p.pack == "hooked"] == [("Negate with a sign flip",
                                                                             {"sign": "flip"})]
    assert not [p for p in hooked.knowledge.retrieve(Signals(target="cpu")) if p.pack == "hooked"]


def test_hook_kevolve_register_synthesizers(hooked):
    synthesizer = hooked.synthesizers.create("hooked:some option")
    assert isinstance(synthesizer, every_hook_plugin.Hooked) and synthesizer.option == "some option"


# --- the contract ------------------------------------------------------------------------------------------

def test_a_hook_that_gains_an_argument_keeps_old_plugins_working():
    """pluggy's argument subsetting: under specs that gained ``kevolve_version``, a plugin written before (it
    declares ``registry`` only) registers as it did, and a newer one gets the new argument."""
    def future_spec(name: str):
        def spec(registry, kevolve_version): ...
        spec.__name__ = name
        return hookspec(spec)

    class FutureManager(Manager):
        def hook_arguments(self, hook):
            return {**super().hook_arguments(hook), "kevolve_version": "9.9"}

    pm = pluggy.PluginManager("kevolve")
    pm.add_hookspecs(SimpleNamespace(**{name: future_spec(name) for name in HOOKS}))
    manager = FutureManager(pm)
    seen = []
    manager.register(every_hook_plugin, name="old")
    manager.register(plugin(kevolve_register_ops=lambda registry, kevolve_version: seen.append(kevolve_version)),
                     name="new")
    assert manager.failures == []
    assert "hooked" in manager.targets.names() and "hooked_negate" in manager.ops.names()
    assert "hooked" in manager.docs.packs and "hooked" in manager.synthesizers.names()
    assert seen == ["9.9"]


@pytest.mark.parametrize("hook,name", [("kevolve_register_targets", "target 'hooked'"),
                                       ("kevolve_register_ops", "op 'hooked_negate'"),
                                       ("kevolve_register_docs", "docs pack 'hooked'"),
                                       ("kevolve_register_synthesizers", "synthesizer 'hooked'")])
def test_a_name_two_plugins_register_is_an_error_naming_both(hooked, hook, name):
    hooked.register(plugin(**{hook: getattr(every_hook_plugin, hook)}), name="second")
    (failure,) = hooked.failures
    assert failure.plugin == "second"
    assert failure.error == f"DuplicateNameError: {name} is registered by both 'every_hook_plugin' and 'second'"


def test_an_alias_that_means_another_target_is_taken(hooked):
    from fake_backend import FAKE, FakeBackend

    other = replace(FAKE, name="other", aliases=("HK",))
    hooked.register(plugin(kevolve_register_targets=lambda registry: registry.add(other, FakeBackend())),
                    name="second")
    assert "'HK' (an alias of 'hooked') is registered by both 'every_hook_plugin' and 'second'" in (
        hooked.failures[0].error)
    assert "other" not in hooked.targets


def test_a_plugin_that_fails_half_way_is_withdrawn_whole_and_named_where_asked(manager):
    def broken_docs(registry):
        raise RuntimeError("docs pack missing")

    half = plugin(kevolve_register_targets=every_hook_plugin.kevolve_register_targets,
                  kevolve_register_ops=every_hook_plugin.kevolve_register_ops, kevolve_register_docs=broken_docs)
    manager.register(half, name="half (kevolve-half)")
    assert "hooked" not in manager.targets and "hooked_negate" not in manager.ops
    assert not manager.pm.is_registered(half)
    failed = r"comes from the plugin half \(kevolve-half\), which is installed but failed to load: RuntimeError"
    with pytest.raises(UnknownTargetError, match=f"target 'hk' {failed}"):
        manager.target("hk")
    with pytest.raises(UnknownOpError, match=f"op 'hooked_neg' {failed}"):
        manager.ops.get("hooked_neg")
    manager.register(every_hook_plugin, name="every_hook_plugin")  # what it had taken is free again
    assert manager.failures[1:] == [] and manager.target("hk").plugin == "every_hook_plugin"


def test_a_backend_that_failed_to_import_is_named_not_called_missing(monkeypatch, capsys):
    """`kevolve optimize --target cpu` when kevolve-cpu is installed but its plugin does not import."""
    from kevolve.cli import main
    from kevolve.plugins import reset_manager

    real = importlib.import_module

    def import_module(name, *args):
        if name == "kevolve_cpu.plugin":
            raise ImportError("libgomp.so.1: cannot open shared object file")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", import_module)
    monkeypatch.delenv("KEVOLVE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    reset_manager()
    try:
        assert main(["optimize", "softmax", "--target", "x86", "--budget", "1"]) == 2
    finally:
        reset_manager()
    message = " ".join(capsys.readouterr().err.split())
    assert "target 'x86' comes from the plugin cpu (kevolve-cpu), which is installed but failed to load: " \
           "ImportError: libgomp.so.1" in message
    assert "not installed" not in message


def test_an_unknown_name_mentions_the_plugins_that_failed(manager):
    manager.register(plugin(kevolve_register_synthesizers=lambda registry: 1 / 0), name="flaky")
    with pytest.raises(UnknownOpError, match=r"The plugin flaky failed to load \(ZeroDivisionError"):
        manager.ops.get("no_such_op")
    with pytest.raises(KevolveError, match="unknown synthesizer 'flakey'.*The plugin flaky failed to load"):
        manager.synthesizers.create("flakey")
