"""The simulated MTIA-like chip passes kevolve.testing's backend contract (with kevolve-triton's plugin, whose
docs pack holds the Triton kernel file contract). Only ``mtia_sim``: ``mtia_sim_next`` is the same backend with
another spec, and each target costs two simulations (about 7 s)."""

from kevolve.testing import BackendContract


class TestMtiaSimContract(BackendContract):
    plugin = "kevolve_mtia_sim.plugin"
    requires = ("kevolve_triton.plugin",)
    targets = ("mtia_sim",)
