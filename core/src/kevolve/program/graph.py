"""The captured ATen graph as kernel-sized nodes over buffers, before fusion decides which ones run.

Every value is a meta tensor that views a *root*: one buffer of the program (an input, or a node's result).
View nodes (:data:`~kevolve.program.overloads.VIEWS`) run on those meta tensors, so a permute, an expand or a
reshape becomes the strides and offset a kernel reads through, never a kernel. A compute node binds its
arguments exactly as the conformance suite binds an OpInfo sample (:func:`kevolve.conformance.samples.bind_views`,
the table's ``prepare``): a pointwise node becomes a scalar expression over its operands (each viewed at the
output's shape), any other node the table's kernel over the prepared tensors.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kevolve.conformance.samples import Declined, bind_views
from kevolve.conformance.spec import EXPRESSION_LAYOUTS, OpSpec
from kevolve.conformance.table import OPS
from kevolve.program.capture import Captured, CaptureError, is_user_file
from kevolve.program.overloads import CHECKS, COPIES, FACTORIES, OVERLOADS, SCALARS, VIEWS, overload_name
from kevolve.synthesis import expr as E
from kevolve.synthesis.expr import Const, Expr, Var, substitute


class LoweringError(CaptureError):
    """A captured node has no kernel among the backends' ATen kernels."""


@dataclass(eq=False)
class Pointwise:
    """``out = expr(leaves)`` elementwise over ``out``'s shape; every leaf is viewed at that shape."""

    name: str
    expr: Expr
    leaves: dict[str, torch.Tensor]
    out: torch.Tensor
    source: str


@dataclass(eq=False)
class Kernel:
    """A table entry's kernel over prepared tensors (views of roots, or host constants from ``prepare``)."""

    name: str
    spec: OpSpec
    inputs: list[torch.Tensor]
    attrs: dict[str, Any]
    outputs: list[torch.Tensor]
    source: str
    #: input index -> (the copy node ``prepare`` made it with, a strided view of that copy's source the kernel
    #: may read instead): what a ``fold.<name>`` knob folds (:attr:`OpSpec.in_place`)
    in_place: dict[int, tuple[str, torch.Tensor]] = field(default_factory=dict)


@dataclass
class Graph:
    """The program's nodes in order, its roots, and where its inputs and outputs are."""

    name: str
    nodes: list[Pointwise | Kernel] = field(default_factory=list)
    #: root meta tensors, kept alive so their ids stay theirs
    roots: list[torch.Tensor] = field(default_factory=list)
    #: id(root) -> kernel input index
    inputs: dict[int, int] = field(default_factory=dict)
    input_specs: list[tuple[tuple[int, ...], torch.dtype]] = field(default_factory=list)
    outputs: list[torch.Tensor] = field(default_factory=list)
    #: id(root) -> value, for 0-dim constants (``scalar_tensor``, a number compared with a tensor)
    scalars: dict[int, float] = field(default_factory=dict)

    def root(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        base = torch.empty(math.prod(shape), dtype=dtype, device="meta")
        self.roots.append(base)
        return base.view(shape)

    def scalar(self, value: float, dtype: torch.dtype) -> torch.Tensor:
        """A 0-dim constant: no buffer, a literal in every expression that reads it."""
        t = self.root((), dtype)
        self.scalars[id(root_of(t))] = float(value)
        return t


def root_of(t: torch.Tensor) -> torch.Tensor:
    return t if t._base is None else t._base


def is_whole(t: torch.Tensor) -> bool:
    """``t`` is its root, every element once, in order (a contiguous view at offset 0)."""
    return t.is_contiguous() and t.storage_offset() == 0 and t.numel() == root_of(t).numel()


def _source(node: torch.fx.Node) -> str:
    """``file.py:line (code)`` of the user's line a node came from ("" when export kept none)."""
    lines = (node.meta.get("stack_trace") or "").strip().splitlines()
    frames = []
    for i, line in enumerate(lines):
        found = re.match(r'\s*File "([^"]+)", line (\d+)', line)
        if found:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            frames.append((found.group(1), found.group(2), code))
    frames = [f for f in frames if is_user_file(f[0])] or frames  # the user's own line over torch's
    if not frames:
        return ""
    path, line, code = frames[-1]
    return f"{Path(path).name}:{line}" + (f" ({code})" if code else "")


def build(captured: Captured, name: str) -> Graph:
    """Walk the exported graph: views on meta tensors, compute nodes bound onto the conformance table."""
    graph = Graph(name)
    values: dict[str, Any] = {}
    fx = captured.program.graph_module.graph
    graph.input_specs = [(tuple(t.shape), t.dtype) for t in captured.examples]
    for node in fx.nodes:
        if node.op == "placeholder":
            index = captured.input_index[node.name]
            shape, dtype = graph.input_specs[index]
            value = graph.root(shape, dtype)
            graph.inputs[id(root_of(value))] = index
            values[node.name] = value
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, lambda n: values[n.name])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: values[n.name])
            if node.target is operator.getitem:
                values[node.name] = args[0][args[1]]
            elif node.target in VIEWS:
                values[node.name] = _view(graph, node, args, kwargs)
            elif node.target in SCALARS:  # scalar_tensor(value), full(size, value), full_like(x, value)
                value = node.meta["val"]
                values[node.name] = graph.scalar(args[-1], value.dtype).expand(value.shape)
            elif node.target in FACTORIES:
                values[node.name] = node.target(*args, **{**kwargs, "device": "cpu"})
            elif node.target in CHECKS:
                values[node.name] = None
            elif node.target in COPIES and _same_values(node, args):  # the graph is functional: an alias
                values[node.name] = args[0]
            elif node.target in COPIES or node.target in OVERLOADS:
                values[node.name] = _compute(graph, node, args, kwargs)
            else:
                where = _source(node)
                raise LoweringError(f"{name!r}: no ATen kernel covers {overload_name(node.target)}"
                                    + (f" at {where}" if where else "")
                                    + "; a synthesizer that writes free-form code can still optimize it")
        elif node.op == "output":
            graph.outputs = [values[n.name] for n in node.args[0]]
    return graph


def _view(graph: Graph, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.Tensor:
    """The view, or (where our buffer's strides cannot give it, e.g. a ``view`` of a transposed result that
    eager memory laid out otherwise) the view of a contiguous copy."""
    try:
        return node.target(*args, **kwargs)
    except RuntimeError:
        return node.target(_contiguous(graph, node, args[0]), *args[1:], **kwargs)


def _same_values(node: torch.fx.Node, args: tuple) -> bool:
    """A copy that changes nothing a kernel reads (dtype, or a layout the next kernel would copy anyway)."""
    source = args[0]
    return isinstance(source, torch.Tensor) and node.meta["val"].dtype == source.dtype


def _results(graph: Graph, node: torch.fx.Node) -> list[torch.Tensor]:
    val = node.meta["val"]
    vals = list(val) if isinstance(val, (list, tuple)) else [val]
    return [graph.root(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else None for v in vals]


def _compute(graph: Graph, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    results = _results(graph, node)
    where = _source(node)
    if node.target in COPIES:  # a dtype conversion: exact when inlined into a consumer too
        src, out = args[0], results[0]
        value: Expr = Var("v0")
        if out.dtype == torch.bool:
            value = E.ne(value, 0.0)
        elif not out.dtype.is_floating_point:
            value = E.trunc(value)
        graph.nodes.append(Pointwise(node.name, value, {"v0": src.expand(out.shape)}, out, where))
        return out
    overload = OVERLOADS[node.target]
    try:
        opinfo, x, op_args, op_kwargs, *seen_as = overload.adapt(*args, **kwargs)
        spec = OPS[opinfo]
        if isinstance(x, (int, float)) and isinstance(op_args[0], torch.Tensor):  # a mirrored comparison
            x = graph.scalar(x, op_args[0].dtype)
        if not isinstance(x, (torch.Tensor, list, tuple)):
            raise Declined(f"input is {x!r}")
        dtype = (x if isinstance(x, torch.Tensor) else x[0]).dtype
        if spec.layout not in EXPRESSION_LAYOUTS or spec.layout == "halves":
            keep = _transposed if spec.layout == "gemm" else None  # a GEMM reads a transposed B as it is
            x, op_args, op_kwargs = _contiguous(graph, node, (x, op_args, op_kwargs), keep)
        with _CopyRecorder() as recorder:
            tensors, attrs = bind_views(spec, SimpleNamespace(input=x, args=op_args, kwargs=op_kwargs), dtype)
        if spec.layout == "gemm":
            tensors, attrs = _gemm_operands(graph, node, tensors, attrs)
    except (Declined, NotImplementedError, TypeError, ValueError, RuntimeError) as exc:
        raise LoweringError(f"{graph.name!r}: {overload_name(node.target)} has no kernel for these arguments ({exc})"
                            + (f" at {where}" if where else "")) from None
    # the copies prepare made on the host (a permuted contiguous copy for a reduction) become copy kernels, which
    # a kernel reading strided inputs may skip
    in_place = {}
    for i, (src, copy) in enumerate(recorder.copies):
        graph.roots.append(copy)
        graph.nodes.append(Pointwise(f"{node.name}_prep{i}", Var("v0"), {"v0": src.expand(copy.shape)}, copy, where))
        for position, t in enumerate(tensors):
            view = spec.in_place(src, t) if spec.in_place is not None and root_of(t) is copy else None
            if view is not None:
                in_place[position] = (f"{node.name}_prep{i}", view)
    pointwise = spec.layout in EXPRESSION_LAYOUTS and spec.layout != "halves"
    known = {id(r) for r in graph.roots if pointwise or id(r) not in graph.scalars}
    for t in tensors:
        if t.device.type == "meta" and id(root_of(t)) not in known:
            raise LoweringError(f"{graph.name!r}: the table's prepare for {spec.name} computes a tensor on the "
                                "host; lowering takes views, copies and constants only"
                                + (f" at {where}" if where else ""))
    outputs = [seen_as[0](results[i]) if seen_as else results[i] for i in overload.outputs]
    if pointwise:
        out = outputs[0]
        names = spec.tensor_names(attrs)
        expr = spec.expression(attrs)
        leaves = {}
        renamed = {}
        for i, (var, t) in enumerate(zip(names, tensors)):
            if id(root_of(t)) in graph.scalars:
                renamed[var] = Const(graph.scalars[id(root_of(t))])
                continue
            key = f"v{i}"
            renamed[var] = Var(key)
            leaves[key] = t.expand(out.shape)
        graph.nodes.append(Pointwise(node.name, substitute(expr, renamed), leaves, out, where))
    else:
        graph.nodes.append(Kernel(node.name, spec, list(tensors), attrs, outputs, where, in_place))
    return tuple(results) if len(results) > 1 else results[0]


class _CopyRecorder(TorchDispatchMode):
    """Records the copies (``contiguous``, ``clone``) a table's ``prepare`` makes of meta tensors: in a program
    each is a kernel of its own, from the view it copied."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if func in (torch.ops.aten.clone.default, torch.ops.aten._to_copy.default) and \
                isinstance(out, torch.Tensor) and out.device.type == "meta":
            self.copies.append((args[0], out))
        return out


def _transposed(t: torch.Tensor) -> bool:
    """A matrix (or batch of them) whose last two dimensions, swapped, are laid out densely: ``w.t()``, ``x.mT``."""
    return t.dim() >= 2 and not t.is_contiguous() and t.transpose(-1, -2).is_contiguous()


def _gemm_operands(graph: Graph, node: torch.fx.Node, tensors: list, attrs: dict) -> tuple[list, dict]:
    """A GEMM kernel's operands: B, where it is a transposed dense matrix, read through the kernel's ``trans_b``
    (no copy); any other operand left transposed is copied."""
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor) and t.device.type == "meta" and _transposed(t):
            if i == 1:
                tensors[1], attrs = t.transpose(-1, -2), {**attrs, "trans_b": not attrs["trans_b"]}
            else:
                tensors[i] = _contiguous(graph, node, t)
    return tensors, attrs


def _contiguous(graph: Graph, node: torch.fx.Node, value: Any,
                keep: Callable[[torch.Tensor], bool] | None = None) -> Any:
    """Tensors a non-pointwise kernel reads, made contiguous where they are not (a copy kernel each): those
    kernels index their inputs densely. ``keep``: tensors left as they are (the kernel reads them otherwise)."""
    if isinstance(value, torch.Tensor):
        if value.is_contiguous() or (keep is not None and keep(value)):
            return value
        copy = graph.root(tuple(value.shape), value.dtype)
        scalar = graph.scalars.get(id(root_of(value)))  # a constant expanded (``torch.zeros(n)``): a fill
        expr, leaves = (Var("v0"), {"v0": value}) if scalar is None else (Const(scalar), {})
        graph.nodes.append(Pointwise(f"{node.name}_in{len(graph.nodes)}", expr, leaves, copy, _source(node)))
        return copy
    if isinstance(value, (list, tuple)):
        return type(value)(_contiguous(graph, node, v, keep) for v in value)
    if isinstance(value, dict):
        return {k: _contiguous(graph, node, v, keep) for k, v in value.items()}
    return value
