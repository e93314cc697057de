"""The contract suite in two forms: a pytest class to subclass, and :func:`check_backend` for scripts.

Both run every check of :data:`kevolve.testing.checks.CHECKS` on every target the plugin registers. The class
gets its targets and its subject from the fixtures of :mod:`kevolve.testing.pytest_plugin`, which pytest
loads by itself (entry point ``pytest11``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from kevolve.testing.checks import CHECKS, ContractFailure, NotApplicable
from kevolve.testing.subject import Subject, plugin_session


class BackendContract:
    """Subclass it in a test module, named ``Test...``, and set :attr:`plugin`: each check becomes a test,
    parametrized over the plugin's targets (``test_runner[toy]``). A check that cannot run here (no device, no
    compiler) is skipped with the reason."""

    #: the module implementing the plugin's hooks, as ``KEVOLVE_PLUGINS`` takes it; ``--kevolve-backend`` when
    #: empty
    plugin: str = ""
    #: plugin modules it needs loaded too (a Triton-based backend: ``("kevolve_triton.plugin",)``)
    requires: tuple[str, ...] = ()
    #: the targets to check; every target the plugin registers when empty
    targets: tuple[str, ...] = ()
    #: the catalog op whose kernel the build and runner checks use, at these dims
    op: str = "relu"
    dims: ClassVar[dict[str, int]] = {"n": 4096}
    #: language -> a correct kernel for ``op``, for a language the target has no recipe of ``op`` in
    kernels: ClassVar[dict[str, str]] = {}
    #: language -> a source that must fail to build (the default fails in every language we know)
    broken_sources: ClassVar[dict[str, str]] = {}


def _test(name: str, check: Callable[[Subject, str], None]) -> Callable:
    """The test method of one check, run on the target pytest parametrizes it with; its docstring is the
    check's."""

    def test(self, kevolve_subject: Subject, kevolve_target: str) -> None:
        import pytest

        try:
            check(kevolve_subject, kevolve_target)
        except NotApplicable as exc:
            pytest.skip(str(exc))

    test.__name__ = f"test_{name}"
    test.__doc__ = check.__doc__
    return test


for _name, _check in CHECKS.items():
    setattr(BackendContract, f"test_{_name}", _test(_name, _check))


def check_backend(plugin: str, requires: tuple[str, ...] = (), targets: tuple[str, ...] = (),
                  workdir: str | Path | None = None, **options) -> dict[str, dict[str, str]]:
    """Run the contract on every target ``plugin`` registers, outside pytest.

    :param plugin: the module implementing the plugin's hooks (``"kevolve_toy.plugin"``)
    :param requires: plugin modules it needs loaded too
    :param targets: the targets to check; every target the plugin registers when empty
    :param workdir: where builds go (a new temporary folder by default)
    :param options: :class:`~kevolve.testing.subject.Subject` fields: ``op``, ``dims``, ``kernels``,
        ``broken_sources``
    :returns: target -> check -> ``"ok"`` or ``"not applicable: <why>"``
    :raises ContractFailure: naming every check that failed, with its evidence
    """
    results: dict[str, dict[str, str]] = {}
    failures: list[str] = []
    with plugin_session(plugin, tuple(requires)) as manager:
        subject = Subject(plugin, manager, Path(workdir or tempfile.mkdtemp(prefix="kevolve-contract-")), **options)
        registered = subject.targets()
        if not registered or not set(targets) <= set(registered):
            raise ContractFailure(f"plugin {plugin} registers {', '.join(registered) or 'no target'}; asked to check "
                                  f"{', '.join(targets) or 'its targets'}")
        for target in targets or registered:
            for name, check in CHECKS.items():
                try:
                    check(subject, target)
                    results.setdefault(target, {})[name] = "ok"
                except NotApplicable as exc:
                    results.setdefault(target, {})[name] = f"not applicable: {exc}"
                except ContractFailure as exc:
                    results.setdefault(target, {})[name] = "failed"
                    failures.append(f"{name}: {exc}")
    if failures:
        raise ContractFailure(f"{len(failures)} contract check(s) failed:\n" + "\n".join(failures))
    return results
