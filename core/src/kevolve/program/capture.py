"""Capture a PyTorch program as an ATen graph: ``torch.export`` of the problem's module (or function), decomposed
with ``run_decompositions`` to the core ATen operators the conformance table covers (PyTorch's table and
kevolve's own, :mod:`kevolve.program.decompositions`).

A program that export cannot trace (data-dependent control flow, an unsupported Python construct) raises
:class:`CaptureError`, one line naming the construct and the user's source line; the problem itself stays
usable by synthesizers that write free-form code.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kevolve.errors import KevolveError
from kevolve.problems.problem import Problem
from kevolve.program import decompositions


class CaptureError(KevolveError):
    """The program cannot be captured into an ATen graph (or lowered onto the backends' kernels)."""


@dataclass
class Captured:
    """An exported program and where each of its graph inputs comes from in the kernel's inputs."""

    program: torch.export.ExportedProgram
    #: placeholder name -> index into the kernel's inputs (user inputs, then parameters, then buffers)
    input_index: dict[str, int]
    #: the kernel's inputs as example tensors (the problem's first draw)
    examples: list[torch.Tensor]


class _Call(torch.nn.Module):
    """A plain function as a module, so export sees one shape of program."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def module_and_inputs(problem: Problem) -> tuple[torch.nn.Module, int]:
    """The module a problem computes and how many of its kernel inputs are the caller's (the rest are weights)."""
    model = getattr(problem, "model", None)
    if isinstance(model, torch.nn.Module):
        return model, int(problem.n_inputs)  # type: ignore[attr-defined]
    fn = getattr(problem, "fn", None)
    if callable(fn):
        return _Call(fn), len(problem.examples)  # type: ignore[attr-defined]
    raise CaptureError(f"{problem.name!r} is not a PyTorch program (a module or a function); only KernelBench files "
                       "and kevolve.problem_from_callable problems are captured")


def is_user_file(filename: str) -> bool:
    """A frame of the user's program, not of torch, kevolve or the standard library."""
    roots = [Path(torch.__file__).parent, Path(__file__).parents[1], Path(traceback.__file__).parent]
    return not any(str(Path(filename)).startswith(str(r)) for r in roots) and not filename.startswith("<")


def _user_line(exc: BaseException) -> str:
    """``file:line: code`` of the innermost frame in the user's own source: from the message (export names the
    call that raised), else from the traceback."""
    found = [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', str(exc)) if is_user_file(f)]
    if not found:
        found = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)
                 if is_user_file(f.filename)]
    if not found:
        return ""
    filename, line = found[-1]
    try:
        code = Path(filename).read_text().splitlines()[line - 1].strip()
    except (OSError, IndexError, UnicodeDecodeError):
        code = ""
    return f"{Path(filename).name}:{line}" + (f" ({code})" if code else "")


def _construct(exc: BaseException) -> str:
    text = str(exc)
    if "data-dependent" in text or "GuardOnDataDependentSymNode" in type(exc).__name__ or "Could not guard" in text:
        return "data-dependent control flow (a Python branch on a tensor's values)"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first[:200]}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch.export logs the graph it could not finish at warning level; the error says what matters."""
    loggers = [logging.getLogger(name) for name in ("torch", "torch.fx.experimental.symbolic_shapes",
                                                     "torch._export", "torch.export")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def capture(problem: Problem) -> Captured:
    """Export the problem's program on its example inputs and decompose it to core ATen."""
    module, n_user = module_and_inputs(problem)
    # drawn on the host; traced where the module's weights live (a region of a model on a GPU)
    device = next((t.device for t in itertools.chain(module.parameters(), module.buffers())), torch.device("cpu"))
    examples = [t.to(device) for t in problem.make_inputs(problem.dims, torch.Generator().manual_seed(0))]
    return capture_module(module, examples[:n_user], problem.name)


def export(module: torch.nn.Module, inputs: list[torch.Tensor], name: str = "program",
           decomposed: bool = False) -> torch.export.ExportedProgram:
    """``torch.export`` of ``module`` on ``inputs`` (decomposed to the operators the backends cover where
    ``decomposed``); a failure is a :class:`CaptureError` naming the construct and the user's line."""
    try:
        with warnings.catch_warnings(), _quiet():
            warnings.simplefilter("ignore")
            exported = torch.export.export(module, tuple(inputs), strict=False)
            return exported.run_decompositions(decompositions.table()) if decomposed else exported
    except Exception as exc:  # noqa: BLE001 - export's failures are many types; each becomes one line
        where = _user_line(exc)
        raise CaptureError(f"cannot capture {name!r} with torch.export: {_construct(exc)}"
                           + (f" at {where}" if where else "")
                           + "; a synthesizer that writes free-form code can still optimize it") from None


def capture_module(module: torch.nn.Module, inputs: list[torch.Tensor], name: str = "program") -> Captured:
    """Export ``module`` on ``inputs``; the kernel it lowers to takes ``inputs`` followed by the module's
    parameters and buffers (``named_parameters`` then ``named_buffers`` order), as a KernelBench problem's."""
    exported = export(module, inputs, name, decomposed=True)
    weights = list(module.named_parameters()) + list(module.named_buffers())
    names = [n for n, _ in weights]
    index: dict[str, int] = {}
    signature = exported.graph_signature
    user_names = [spec.arg.name for spec in signature.input_specs if spec.kind.name == "USER_INPUT"]
    for i, user in enumerate(user_names):
        index[user] = i
    for spec in signature.input_specs:
        if spec.kind.name in ("PARAMETER", "BUFFER"):
            if spec.target not in names:
                raise CaptureError(f"{name!r}: weight {spec.target} is not among the module's parameters "
                                   "and buffers")
            index[spec.arg.name] = len(inputs) + names.index(spec.target)
        elif spec.kind.name != "USER_INPUT":
            raise CaptureError(f"{name!r}: the graph takes a {spec.kind.name.lower()} ({spec.target}), "
                               "which the kernel cannot receive; make it a parameter or buffer of the module")
    examples = list(inputs) + [t.detach() for _, t in weights]
    return Captured(exported, index, examples)
