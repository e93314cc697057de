"""Kernels as PyTorch operators in this process: what ``result.as_torch_op()``, ``kevolve.load(SESSION)`` and the
harness's timing call. The harness and the user get the same operator, built by :func:`register_kernel`."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kevolve.delivery import runtime
from kevolve.delivery.shapes import ShapeDerivationError, load_shape_function, shape_source
from kevolve.errors import KevolveError
from kevolve.problems.problem import Problem, dtype_name


def op_name(problem: Problem, target: str, source_hash: str) -> str:
    """``<problem>_<target>_<hash>``: one op per kernel, the same name in every process and saved package."""
    stem = re.sub(r"\W+", "_", problem.name).strip("_").lower() or "problem"
    if stem[0].isdigit():
        stem = f"p_{stem}"
    return f"{stem}_{target}_{source_hash[:12]}"


@dataclass(frozen=True)
class Signature:
    """What a kernel was built for: the caller's inputs (names, dtypes) and how many outputs it returns."""

    arg_names: tuple[str, ...]
    input_dtypes: tuple[torch.dtype, ...]
    n_outputs: int
    #: one set of the caller's inputs at the problem's smallest checked shape
    example: tuple[torch.Tensor, ...]

    @classmethod
    def of(cls, problem: Problem) -> Signature:
        extras = problem.extra_inputs()
        inputs = problem.make_inputs(problem.check_dims()[0], torch.Generator().manual_seed(0))
        caller = inputs[: len(inputs) - len(extras)]
        names = problem.input_names(len(caller))
        if len(set(names)) != len(names) or not all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
            names = [f"x{i}" for i in range(len(caller))]
        return cls(tuple(names), tuple(t.dtype for t in caller), len(problem.output_specs(inputs)), tuple(caller))

    def describe(self) -> str:
        return ", ".join(f"{name}: {dtype_name(dtype)}" for name, dtype in zip(self.arg_names, self.input_dtypes))


ShapeFunction = Callable[[list[torch.Tensor], Callable[[torch.Tensor], Any]], list]


def problem_shapes(problem: Problem) -> tuple[ShapeFunction, bool]:
    """Output shapes from the problem itself (its reference traced on meta tensors, or its declared sizing)."""
    extras = problem.extra_inputs()
    return (lambda inputs, read: problem.output_specs([*inputs, *extras], read)), \
        problem.value_sized


def derived_shapes(problem: Problem, signature: Signature) -> tuple[ShapeFunction, bool, str | None]:
    """The shape function a saved package carries (:mod:`kevolve.delivery.shapes`), and its source; where it
    refuses a signature (a size the reference fixed at the timing shape, e.g. the feature count of a triangle of
    pairs), the problem answers instead, so an op in this process takes every shape its problem does. The source
    is None when it could not be derived; the problem then answers alone."""
    fallback, value_dependent = problem_shapes(problem)
    try:
        source = shape_source(problem, list(signature.arg_names))
    except ShapeDerivationError:
        return fallback, value_dependent, None
    derived, value_dependent = load_shape_function(source)

    def output_specs(inputs: list[torch.Tensor], read: Callable[[torch.Tensor], Any]) -> list:
        try:
            return derived(inputs, read)
        except RuntimeError:
            return fallback(inputs, read)

    return output_specs, value_dependent, source


def register_kernel(problem: Problem, kernel: runtime.KernelFn, device: str, name: str, *,
                    shapes: tuple[ShapeFunction, bool] | None = None, doc: str = "",
                    signature: Signature | None = None, graphs: str | None = None) -> Any:
    """``kernel`` as ``torch.ops.kevolve.<name>`` (see :mod:`kevolve.delivery.runtime`); ``shapes`` defaults to
    :func:`problem_shapes`, ``graphs`` (what to say of CUDA graphs) to trying a capture (:func:`cuda_graphs`)."""
    existing = runtime.registered(name)
    if existing is not None:
        return existing
    signature = signature or Signature.of(problem)
    output_specs, value_dependent = shapes or problem_shapes(problem)
    op = runtime.KernelOp(f"{runtime.NAMESPACE}::{name}", kernel, output_specs, value_dependent=value_dependent,
                          arg_names=signature.arg_names, input_dtypes=signature.input_dtypes, device=device,
                          extras=problem.extra_inputs(), error=KevolveError)
    graphs = graphs or cuda_graphs(op, signature)
    doc = "\n".join([doc or f"kevolve kernel for {problem.describe()}", f"inputs: {signature.describe()}",
                     f"CUDA graphs: {graphs}"])
    return runtime.register(name, op, n_outputs=signature.n_outputs, doc=doc,
                            capturable=not graphs.startswith("cannot"))


def graphs_without_trying(value_dependent: bool, device: str) -> str:
    """What can be said of CUDA graphs without a GPU."""
    if value_dependent:
        return ("cannot be captured: its output sizes depend on input values, read from the device on every call "
                "(that read is part of its measured time)")
    kind = torch.device(device).type
    if kind != "cuda":
        return f"do not apply (runs on {kind} tensors)"
    return "not tried: nothing in its own per-call path reads the device; its launcher may"


def cuda_graphs(op: runtime.KernelOp, signature: Signature) -> str:
    """Whether the op can be captured in a CUDA graph, and why not: tried once on a GPU."""
    said = graphs_without_trying(op.value_dependent, str(op.device))
    if not said.startswith("not tried"):
        return said
    example = [t.to(op.device) for t in signature.example]
    try:
        op(*example)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            op(*example)
        graph.replay()
        torch.cuda.synchronize()
    except Exception as exc:  # a launcher that syncs or allocates on the host fails capture in many ways
        return f"cannot be captured: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return "capturable (checked by capturing and replaying one call)"


def torch_op(problem: Problem, target: str, source: str, language: str) -> Any:
    """Build (cached by source), load and register a kernel for ``problem`` on ``target``."""
    from kevolve.harness.pipeline import HarnessConfig
    from kevolve.plugins import get_manager
    from kevolve.synthesis.base import Candidate

    registered = get_manager().usable_target(target)
    candidate = Candidate(source, language)
    name = op_name(problem, registered.spec.name, candidate.source_hash)
    existing = runtime.registered(name)
    if existing is not None:
        return existing
    toolchain = registered.backend.toolchain(registered.spec, language)
    build = toolchain.build(source, Path(HarnessConfig().workdir) / registered.spec.name / candidate.source_hash,
                            problem)
    runner = registered.backend.runner(registered.spec)
    signature = Signature.of(problem)
    output_specs, value_dependent, _ = derived_shapes(problem, signature)
    return register_kernel(problem, runner.load(build), runner.device, name, shapes=(output_specs, value_dependent),
                           signature=signature,
                           doc=f"kevolve kernel for {problem.describe()} on {registered.spec.name} ({language}, "
                               f"source {candidate.source_hash[:12]})")
