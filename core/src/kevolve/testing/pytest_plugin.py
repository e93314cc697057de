"""kevolve's pytest plugin (entry point ``pytest11``): the fixtures and the option the contract suite runs on.

Pytest loads it by itself wherever kevolve is installed (with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, add
``-p kevolve.testing.pytest_plugin``). Loading it imports kevolve, and so torch, in every pytest session of an
environment kevolve is installed in; its hooks do nothing until a contract class is collected.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("kevolve").addoption(
        "--kevolve-backend", metavar="MODULE", default="",
        help="the plugin module a BackendContract without its own `plugin` checks (`pytest --pyargs "
             "kevolve.testing.suite --kevolve-backend kevolve_toy.plugin`); modules it needs loaded too go "
             "before it, comma-separated")


def _plugin_of(cls: type, config: pytest.Config) -> tuple[str, tuple[str, ...]]:
    """The plugin module a contract class checks and the modules it requires."""
    if cls.plugin:
        return cls.plugin, tuple(cls.requires)
    *requires, plugin = [m.strip() for m in config.getoption("kevolve_backend").split(",")] or [""]
    return plugin, (*requires, *cls.requires)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A contract class's tests, once per target its plugin registers."""
    if "kevolve_target" not in metafunc.fixturenames:
        return
    from kevolve.testing.contract import BackendContract
    from kevolve.testing.subject import plugin_session

    if metafunc.cls is None or not issubclass(metafunc.cls, BackendContract):
        raise pytest.UsageError(f"{metafunc.function.__name__}: `kevolve_target` is for BackendContract classes")
    plugin, requires = _plugin_of(metafunc.cls, metafunc.config)
    if not plugin:
        metafunc.parametrize("kevolve_target", [pytest.param(None, marks=pytest.mark.skip(
            reason="no plugin to check: set `plugin` on the class or pass --kevolve-backend MODULE"))])
        return
    with plugin_session(plugin, requires) as manager:
        registered = [t.spec.name for t in manager.targets.all() if t.plugin == plugin]
    if not registered:
        raise pytest.UsageError(f"plugin {plugin} registered no target: nothing for the backend contract to check")
    unknown = sorted(set(metafunc.cls.targets) - set(registered))
    if unknown:
        raise pytest.UsageError(f"{metafunc.cls.__name__}.targets names {', '.join(unknown)}, which plugin {plugin} "
                                f"does not register (it registers {', '.join(registered)})")
    metafunc.parametrize("kevolve_target", list(metafunc.cls.targets) or registered)


@pytest.fixture
def kevolve_subject(request: pytest.FixtureRequest, tmp_path):
    """The plugin a BackendContract checks, loaded alone as this process's plugin manager for the test."""
    from kevolve.testing.subject import Subject, plugin_session

    cls = request.cls
    plugin, requires = _plugin_of(cls, request.config)
    with plugin_session(plugin, requires) as manager:
        yield Subject(plugin, manager, tmp_path, op=cls.op, dims=dict(cls.dims), kernels=dict(cls.kernels),
                      broken_sources=dict(cls.broken_sources))
