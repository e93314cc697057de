"""A kit for people who write kevolve plugins: a backend contract suite and the pytest plugin that runs it.

A backend's own tests run the contract on every target its plugin registers with two lines::

    from kevolve.testing import BackendContract

    class TestContract(BackendContract):
        plugin = "kevolve_toy.plugin"

Outside pytest, :func:`check_backend` runs the same checks and raises :class:`ContractFailure` naming each one
that failed. The checks live in :mod:`kevolve.testing.checks`; ``pytest --pyargs kevolve.testing.suite
--kevolve-backend MODULE`` runs them on a plugin without writing a test file.
"""

from kevolve.testing.checks import CHECKS, ContractFailure, NotApplicable
from kevolve.testing.contract import BackendContract, check_backend
from kevolve.testing.subject import Subject, plugin_session

__all__ = ["CHECKS", "BackendContract", "ContractFailure", "NotApplicable", "Subject", "check_backend",
           "plugin_session"]
