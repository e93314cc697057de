"""The conformance table, one module per group of the suite; each module's ``SPECS`` lists its entries."""

from __future__ import annotations

from kevolve.conformance.spec import OpSpec

#: the modules of this package that hold entries, in the suite's order
GROUP_MODULES = ("pointwise", "reduction", "norm", "matmul", "conv", "index", "other")


def all_specs() -> list[OpSpec]:
    import importlib

    return [spec for module in GROUP_MODULES
            for spec in importlib.import_module(f"kevolve.conformance.ops.{module}").SPECS]
