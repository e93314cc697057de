"""The CPU backend passes kevolve.testing's backend contract, as any third-party backend would run it."""

from kevolve.testing import BackendContract


class TestCpuContract(BackendContract):
    plugin = "kevolve_cpu.plugin"
