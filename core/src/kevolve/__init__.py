"""kevolve: find fast, correct compute kernels for any hardware by search.

    import kevolve
    result = kevolve.optimize("softmax", target="cpu", budget=20)
    print(result.summary())
    softmax = result.as_torch_op()      # torch.ops.kevolve.<name>: eager, torch.compile, torch.export
    result.save("softmax_op/")          # a pip-installable package; kevolve.load("softmax_op/") gives it back
    fast = kevolve.optimize_model(model, inputs, target="cpu")   # hot regions swapped for kernels
"""

from kevolve.api import EvaluateResult, TargetStatus, evaluate, optimize, resume, session_result, targets
from kevolve.delivery.load import load
from kevolve.errors import KevolveError
from kevolve.model.optimize import OptimizedModel, load_model, optimize_model
from kevolve.problems.problem import Problem
from kevolve.result import OptimizeResult

__version__ = "0.1.0"


def problem_from_callable(fn, example_inputs, name: str | None = None) -> Problem:
    """A problem from an importable PyTorch function and example inputs (fresh values are drawn like them).

    :param fn: a module-level function (the worker imports it by name) computing the outputs from the inputs
    :param example_inputs: tensors of the shapes and dtypes to optimize for; their values are not kept
    :param name: the problem's name in the store and the op's name; None derives it from ``fn``
    """
    from kevolve.problems.callable import CallableProblem

    return CallableProblem.create(fn, list(example_inputs), name)


__all__ = ["EvaluateResult", "KevolveError", "OptimizeResult", "OptimizedModel", "Problem", "TargetStatus", "evaluate",
           "load", "load_model", "optimize", "optimize_model", "problem_from_callable", "resume", "session_result",
           "targets"]
