"""The contract suite as a test module of its own, for a plugin named on the command line::

    pytest --pyargs kevolve.testing.suite --kevolve-backend kevolve_toy.plugin
"""

from kevolve.testing.contract import BackendContract


class TestBackendContract(BackendContract):
    """Checks the plugin module ``--kevolve-backend`` names (skipped without it)."""
