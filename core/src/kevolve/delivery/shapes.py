"""Shape functions for delivered ops: the Python source of ``output_specs(inputs, read=int)``, written once per
problem, so that an op call never runs or traces the reference.

Where the outputs' sizes follow from the inputs' sizes, ``torch.export`` traces the reference once with every
dimension symbolic, and the function is printed from the symbolic sizes it finds: input dimensions are bound to
names, the relations the reference imposes (equal sizes, sizes it fixes) become checks, and each output size is an
expression of the names. It works on real and on fake tensors alike (``torch.compile`` with dynamic shapes). Where
an output's size depends on input values (jagged outputs), the problem declares how to compute it
(:meth:`kevolve.problems.problem.Problem.sizing_source`) and that function is used as written; ``read`` turns its
0-d tensor into a size.
"""

from __future__ import annotations

import hashlib
import sys
import types

import sympy
import torch

from kevolve.problems.problem import Problem


class ShapeDerivationError(Exception):
    """The reference could not be traced with symbolic sizes; the message says why."""


def shape_source(problem: Problem, arg_names: list[str]) -> str:
    """Source of a module defining ``VALUE_DEPENDENT`` and ``output_specs(inputs, read=int)``, needing torch only.
    ``inputs`` are the caller's tensors (a module's weights excluded)."""
    declared = problem.sizing_source()
    if declared is not None:
        return f'"""Output sizes of {problem.describe()}: declared by the problem."""\n\n{declared}'
    return _symbolic_source(problem, arg_names)


def load_shape_function(source: str) -> tuple[object, bool]:
    """``(output_specs, value_dependent)`` from a module source written by :func:`shape_source`, loaded as a module
    that ``sys.modules`` knows (torch.compile resolves the globals of functions it traces by importing them)."""
    name = f"kevolve_shapes_{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
        sys.modules[name] = module
    return module.output_specs, bool(getattr(module, "VALUE_DEPENDENT", False))


class _Reference(torch.nn.Module):
    def __init__(self, problem: Problem, extras: list[torch.Tensor]) -> None:
        super().__init__()
        self.problem, self.extras = problem, extras

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.problem.reference([*inputs, *self.extras]))


def _symbolic_source(problem: Problem, arg_names: list[str]) -> str:
    extras = problem.extra_inputs()
    # sizes of at least 2: export specialises a size of 0 or 1 to that constant, which would fix it for every call
    inputs = problem.make_inputs({k: max(v, 2) for k, v in problem.dims.items()}, torch.Generator().manual_seed(0))
    inputs = inputs[: len(inputs) - len(extras)]
    dynamic = tuple({d: torch.export.Dim.AUTO for d in range(t.dim())} or None for t in inputs)
    try:
        with torch.no_grad():
            program = torch.export.export(_Reference(problem, extras), tuple(inputs), dynamic_shapes=(dynamic,),
                                          strict=False)
    except Exception as exc:  # export's failures come in many types; each is a reason, not a crash
        raise ShapeDerivationError(f"torch.export could not trace the reference with symbolic sizes: "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from None
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    shapes = [placeholders[name].meta["val"].shape for name in program.graph_signature.user_inputs]
    output_node = next(node for node in program.graph.nodes if node.op == "output")
    outputs = [node.meta["val"] for node in output_node.args[0]]
    return _print_function(problem, arg_names, shapes, outputs)


def _expr(size: object) -> sympy.Expr:
    return size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(int(size))


def _print_function(problem: Problem, arg_names: list[str], shapes: list, outputs: list) -> str:
    from torch.utils._sympy.printers import PythonPrinter

    printer = PythonPrinter()
    body, checks, origins = [], [], {}
    for i, shape in enumerate(shapes):
        name = arg_names[i]
        body.append(f"    torch._check(inputs[{i}].dim() == {len(shape)}, lambda: f'input {i} ({name}) must have "
                    f"{len(shape)} dimensions, got {{inputs[{i}].dim()}}')")
        for d, size in enumerate(shape):
            expr = _expr(size)
            if isinstance(expr, sympy.Symbol) and expr not in origins:
                origins[expr] = f"input {i} ({name}) dimension {d}"
                body.append(f"    {expr} = inputs[{i}].shape[{d}]")
                continue
            code = printer.doprint(expr)
            if expr.is_number:
                want = f"is fixed to {code} by the reference"
            else:
                words = code
                for symbol, origin in origins.items():
                    words = words.replace(str(symbol), origin)
                want = f"must be {words} = {{{code}}}"
            checks.append(f"    torch._check(inputs[{i}].shape[{d}] == {code}, lambda: f'input {i} ({name}) dimension "
                          f"{d} {want}, got {{inputs[{i}].shape[{d}]}}')")
    bound = set(origins)
    specs = []
    for out in outputs:
        free = set().union(*(_expr(s).free_symbols for s in out.shape)) if out.dim() else set()
        if free - bound:
            raise ShapeDerivationError(f"an output size depends on input values ({sorted(map(str, free - bound))}); "
                                       "declare how to compute it (Problem.sizing_source)")
        dims = "".join(f"{printer.doprint(_expr(s))}, " for s in out.shape)
        specs.append(f"(({dims}), {out.dtype})")
    return "\n".join([
        f'"""Output sizes of {problem.describe()}: derived by torch.export from its reference."""',
        "", "import torch", "", "VALUE_DEPENDENT = False", "", "",
        "def output_specs(inputs, read=int):", *body, *checks, f"    return [{', '.join(specs)}]", ""])
