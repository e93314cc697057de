"""Lower a captured graph to a :class:`Program`: kernels (each a conformance :class:`KernelSpec`), the views they
read and write, and the buffers behind them (the caller's inputs and outputs, scratch for intermediates, host
constants that ``prepare`` packed).

The same graph lowers differently under different fusion knobs (:mod:`kevolve.program.fuse`); everything else
is fixed by the graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from kevolve.conformance.kernel import KernelSpec, kernel_spec
from kevolve.conformance.samples import Case
from kevolve.program.fuse import GATHER, PROLOGUE, Gather, fused_expressions, gather_edges, prologue_edges
from kevolve.program.graph import Graph, Kernel, LoweringError, Pointwise, is_whole, root_of
from kevolve.problems.problem import dtype_name
from kevolve.synthesis.expr import Var, substitute

#: scratch buffers start at multiples of this many bytes (a cache line; the widest vector load)
ALIGN = 64

INPUT, OUTPUT, SCRATCH, CONST = "input", "output", "scratch", "const"

#: knob name prefix: ``fold.<kernel node>`` -> True (the kernel reads its inputs in place, as strided views,
#: and the copies ``prepare`` made of them are not made) or False (missing: the copies stay)
FOLD = "fold."


@dataclass(frozen=True)
class Buffer:
    """Memory the launcher hands to kernels: ``index`` is the caller's input or output number, or the byte offset
    into scratch; a constant carries its ``values``."""

    kind: str
    dtype: str
    numel: int
    index: int = 0
    values: tuple = ()


@dataclass(frozen=True)
class View:
    """One tensor argument of a kernel: a buffer seen at a shape, strides (elements) and offset."""

    buffer: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0


@dataclass
class Step:
    """One kernel launch: ``name`` (the graph node it computes) keys its knobs."""

    name: str
    kernel: KernelSpec
    inputs: list[View]
    outputs: list[View]
    #: the user's line it computes (``model.py:12 (return x.relu())``), "" when export kept none
    source: str = ""


@dataclass
class Program:
    name: str
    inputs: list[tuple[tuple[int, ...], str]]
    outputs: list[tuple[tuple[int, ...], str]]
    buffers: dict[str, Buffer] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    scratch_bytes: int = 0

    def describe(self) -> str:
        lines = [f"program {self.name}: {len(self.steps)} kernels, {self.scratch_bytes} bytes of scratch"]
        lines += [f"  {s.name}: {s.kernel.describe()}" + (f"  [{s.source}]" if s.source else "")
                  for s in self.steps]
        return "\n".join(lines)


def _itemsize(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


class _Buffers:
    def __init__(self, graph: Graph, program: Program) -> None:
        self.graph, self.program = graph, program
        self.names: dict[int, str] = {}
        #: the constants' roots, kept alive so their ids stay theirs
        self.constants: list[torch.Tensor] = []

    def name(self, root: torch.Tensor) -> str:
        key = id(root)
        if key not in self.names:
            self.names[key] = f"b{len(self.names)}"
            if key in self.graph.inputs:
                self.program.buffers[self.names[key]] = Buffer(INPUT, dtype_name(root.dtype), root.numel(),
                                                               self.graph.inputs[key])
        return self.names[key]

    def view(self, t: torch.Tensor) -> View:
        root = root_of(t)
        if t.device.type != "meta":  # a constant: geometry prepare packed, an arange; its root's values once
            if id(root) not in self.names:
                self.names[id(root)] = f"c{len(self.program.buffers)}"
                flat = root.contiguous().reshape(-1)
                self.program.buffers[self.names[id(root)]] = Buffer(CONST, dtype_name(t.dtype), flat.numel(), 0,
                                                                    tuple(flat.tolist()))
                self.constants.append(root)
            return View(self.names[id(root)], dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()),
                        t.storage_offset())
        return View(self.name(root), dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()), t.storage_offset())


def _ordered(expr: Any, leaves: dict[str, Any], gathers: dict[int, Gather] | None = None
             ) -> tuple[Any, list[torch.Tensor], tuple[tuple[str, str], ...], dict[str, list]]:
    """The expression over in0, in1, ..., the leaves in that order (a floating one first, since the compute type
    follows the first input: a bool mask computes nothing), their (name, dtype) for the KernelSpec, and its
    ``gathers`` attribute. A leaf that views a folded gather's result (``gathers``, by its root's id) is read
    through the gather's index, its value loaded from the table, which comes after the leaves as an input of
    its own: ``{"in2": ["table0", wrap]}``."""
    gathers = gathers or {}

    def value(t: torch.Tensor) -> torch.Tensor:
        return gathers[id(root_of(t))].table if id(root_of(t)) in gathers else t

    order = sorted(leaves, key=lambda v: not value(leaves[v]).dtype.is_floating_point)
    inputs, tables, through = [], {}, {}  # tables: id -> table, in first use order
    for i, var in enumerate(order):
        gather = gathers.get(id(root_of(leaves[var])))
        inputs.append(gather.index if gather is not None else leaves[var])
        if gather is not None:
            tables.setdefault(id(gather.table), gather.table)
            through[f"in{i}"] = [f"table{list(tables).index(id(gather.table))}", gather.wrap]
    named = tuple((f"in{i}", dtype_name(t.dtype)) for i, t in enumerate(inputs))
    named += tuple((f"table{j}", dtype_name(t.dtype)) for j, t in enumerate(tables.values()))
    return (substitute(expr, {old: Var(f"in{i}") for i, old in enumerate(order)}), inputs + list(tables.values()),
            named, through)


def _prologues(graph: Graph, expressions: dict, knobs: dict[str, Any]) -> dict[str, tuple[str, Any, dict]]:
    """Kernel node name -> (its fused producer, the producer's expression, its leaves viewed at the kernel's
    input shape), for the ``prologue.<producer>`` knobs that are on and whose leaves all view that way."""
    nodes = {node.name: node for node in graph.nodes}
    found = {}
    for producer, consumer in prologue_edges(graph).items():
        if not knobs.get(PROLOGUE + producer, False) or producer not in expressions:
            continue
        expr, leaves = expressions[producer]
        shape = tuple(nodes[consumer].inputs[0].shape)
        try:
            views = {var: leaf.view(shape) for var, leaf in leaves.items()}
        except RuntimeError:  # a broadcast leaf whose dims do not merge at the kernel's shape: stays a kernel
            continue
        if views:
            found[consumer] = (producer, expr, views)
    return found


def _folded_gathers(graph: Graph, expressions: dict, skipped: set[str], knobs: dict[str, Any]) -> dict[str, Gather]:
    """Gather node -> gather, for the ``gather.<node>`` knobs that are on, where every expression that reads the
    result is a pointwise kernel's own (one inlined as a prologue keeps the gather)."""
    read_elsewhere = {id(root_of(leaf)) for name, (_, leaves) in expressions.items() if name in skipped
                      for leaf in leaves.values()}
    return {name: g for name, g in gather_edges(graph).items()
            if knobs.get(GATHER + name, False) and id(root_of(g.result)) not in read_elsewhere}


def _identity(graph: Graph, name: str, src: torch.Tensor, dst: torch.Tensor) -> Pointwise:
    return Pointwise(name, Var("v0"), {"v0": src.expand(dst.shape)}, dst, "")


def lower(graph: Graph, knobs: dict[str, Any] | None = None) -> Program:
    """The program under ``knobs`` (missing fusion knobs: fuse; missing fold knobs: copy; missing prologue and
    gather knobs: the producer a kernel of its own)."""
    knobs = knobs or {}
    program = Program(graph.name, [(s, dtype_name(d)) for s, d in graph.input_specs],
                      [(tuple(o.shape), dtype_name(o.dtype)) for o in graph.outputs])
    buffers = _Buffers(graph, program)
    # outputs: a whole result of a node becomes the caller's output buffer; anything else (an input, a view, a
    # value returned twice) is copied there
    nodes = list(graph.nodes)
    produced = {id(root_of(o)) for n in nodes for o in ([n.out] if isinstance(n, Pointwise) else n.outputs)}
    taken: dict[int, int] = {}
    for j, out in enumerate(graph.outputs):
        key = id(root_of(out))
        if is_whole(out) and key in produced and key not in taken:
            taken[key] = j
        else:
            dst = graph.root(tuple(out.shape), out.dtype)
            nodes.append(_identity(graph, f"output{j}", out, dst))
            taken[id(root_of(dst))] = j
    graph_for_fusion = Graph(graph.name, nodes, graph.roots, graph.inputs, graph.input_specs, graph.outputs)
    expressions = fused_expressions(graph_for_fusion, knobs)
    for key, j in taken.items():
        root = next(r for r in graph.roots if id(r) == key)
        buffers.names[key] = f"out{j}"
        program.buffers[f"out{j}"] = Buffer(OUTPUT, dtype_name(root.dtype), root.numel(), j)
    folded = {node.name: node.in_place for node in nodes
              if isinstance(node, Kernel) and node.in_place and knobs.get(FOLD + node.name, False)}
    prologues = _prologues(graph_for_fusion, expressions, knobs)
    skipped = {copy for in_place in folded.values() for copy, _ in in_place.values()}
    skipped |= {producer for producer, _, _ in prologues.values()}
    folded_gathers = _folded_gathers(graph_for_fusion, expressions, skipped, knobs)
    skipped |= set(folded_gathers)
    gathered = {id(root_of(g.result)): g for g in folded_gathers.values()}  # what _ordered reads through
    written: set[int] = set()
    for node in nodes:
        if isinstance(node, Pointwise):
            if node.name not in expressions or node.name in skipped:
                continue  # fused into its consumer, or a copy its reader skips
            expr, inputs, named, through = _ordered(*expressions[node.name], gathered)
            spec = KernelSpec(f"fused[{node.name}]", named, (dtype_name(node.out.dtype),), expr, "broadcast",
                              attrs={"gathers": through} if through else {})
            outputs = [node.out]
        elif node.name in skipped:
            continue  # a gather its readers load through its index
        else:
            case = Case(node.name, node.inputs, node.outputs, node.attrs, spec=node.spec)
            in_place = folded.get(node.name, {})
            spec, outputs = kernel_spec(case), node.outputs
            inputs = [in_place[i][1] if i in in_place else t for i, t in enumerate(node.inputs)]
            if node.name in prologues:  # the producer's expression computes the kernel's elements
                _, expr, views = prologues[node.name]
                expr, inputs, named, _ = _ordered(expr, views)
                spec = KernelSpec(spec.op, named, spec.outputs, expr, spec.layout, spec.dim,
                                  {**spec.attrs, "element": dtype_name(node.inputs[0].dtype)})
        for t in inputs:
            if t.device.type == "meta" and id(root_of(t)) not in graph.inputs and id(root_of(t)) not in written:
                raise LoweringError(f"{graph.name!r}: {node.name} reads a result its kernel does not write "
                                    "(e.g. native_layer_norm's statistics)")
        for o in outputs:
            written.add(id(root_of(o)))
        program.steps.append(Step(node.name, spec, [buffers.view(t) for t in inputs],
                                  [buffers.view(o) for o in outputs], node.source))
    offset = 0
    for key, name in buffers.names.items():
        if name in program.buffers:  # inputs, outputs and constants
            continue
        root = next(r for r in graph.roots if id(r) == key)
        program.buffers[name] = Buffer(SCRATCH, dtype_name(root.dtype), root.numel(), offset)
        offset += math.ceil(root.numel() * _itemsize(dtype_name(root.dtype)) / ALIGN) * ALIGN
    program.scratch_bytes = offset
    return program
