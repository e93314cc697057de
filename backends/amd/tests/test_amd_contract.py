"""kevolve-amd passes kevolve.testing's backend contract (with kevolve-triton's plugin, whose docs pack holds the
Triton kernel file contract), with no AMD GPU: kernels compiled for the target's gfx architecture, run through the
Triton interpreter."""

from kevolve.testing import BackendContract


class TestAmdContract(BackendContract):
    plugin = "kevolve_amd.plugin"
    requires = ("kevolve_triton.plugin",)
