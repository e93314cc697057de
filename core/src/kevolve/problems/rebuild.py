"""Problems rebuilt from their specs, in a worker process or from a stored session.

This is the one module that knows every kind of problem; the kinds know nothing of it, and the catalog's ops are
looked up through the function the caller passes (usually the plugin manager's ``ops.get``), so the problems
package imports neither its subclasses from its base nor the plugin manager.
"""

from __future__ import annotations

from typing import Any

from kevolve.conformance.kernel import ConformanceProblem
from kevolve.errors import ProblemError
from kevolve.problems.callable import CallableProblem
from kevolve.problems.catalog import CatalogProblem, OpLookup
from kevolve.problems.exported import ExportedProblem
from kevolve.problems.kernelbench import KernelBenchProblem
from kevolve.problems.problem import Problem


def problem_from_spec(spec: dict[str, Any], ops: OpLookup) -> Problem:
    """The problem that wrote ``spec`` (:meth:`Problem.to_spec`); ``ops`` finds a catalog problem's op by name."""
    kind = spec.get("kind")
    if kind == "catalog":
        return CatalogProblem.from_spec(spec, ops)
    rebuild = {"kernelbench": KernelBenchProblem.from_spec, "callable": CallableProblem.from_spec,
               "conformance": ConformanceProblem.from_spec, "exported": ExportedProblem.from_spec}.get(kind)
    if rebuild is None:
        raise ProblemError(f"unknown problem kind {kind!r} in spec {spec!r}")
    return rebuild(spec)
