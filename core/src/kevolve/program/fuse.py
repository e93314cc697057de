"""Which pointwise nodes fuse into their consumer: one knob per edge, so the search can undo a fusion that does
not pay.

A pointwise producer can fuse into its pointwise consumer when the consumer is its only reader and reads its
result whole, element for element at the same shape (no broadcast, no permuted view): then the producer's
expression replaces the consumer's variable, and the intermediate buffer disappears. A producer that is a graph
output, or is read by several nodes, stays a kernel of its own.

A pointwise producer whose only reader is a kernel of another kind (a reduction) reading its result whole and in
order, through its one input, can become that kernel's prologue (:func:`prologue_edges`): the kernel computes
each element from the producer's leaves, where the target's kernel can (``prologue.<node>``, see
:mod:`kevolve.program.lower`).

A gather from a small table (``index_select`` along a 1-D table, by an index of the result's shape) whose result
only pointwise work reads, whole, can be read through its index instead (``gather.<node>``): the pointwise kernel
loads ``table[index[i]]`` itself, and the gathered buffer (as long as the index) is never written. The hashed
ids of an ads model's features take their per-feature salt this way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kevolve.program.graph import Graph, Kernel, Pointwise, is_whole, root_of
from kevolve.synthesis.expr import Expr, Var, substitute

#: knob name prefix: ``fuse.<producer node>`` -> True (inline it into its consumer) or False (keep its buffer)
PREFIX = "fuse."
#: knob name prefix: ``prologue.<producer node>`` -> True (computed inside the kernel that reads it) or False
#: (missing: its own kernel, its result in a buffer)
PROLOGUE = "prologue."
#: knob name prefix: ``gather.<gather node>`` -> True (its pointwise reader loads through the index) or False
#: (missing: the gather is a kernel, its result a buffer)
GATHER = "gather."


def readers(graph: Graph) -> dict[int, list[tuple[Pointwise | Kernel | None, object]]]:
    """id(root) -> who reads it: (node, the view it reads) for each read; (None, view) for a graph output."""
    found: dict[int, list] = {}
    for node in graph.nodes:
        views = node.leaves.values() if isinstance(node, Pointwise) else node.inputs
        for view in views:
            if view.device.type == "meta":
                found.setdefault(id(root_of(view)), []).append((node, view))
    for out in graph.outputs:
        found.setdefault(id(root_of(out)), []).append((None, out))
    return found


def fusable(graph: Graph) -> dict[str, str]:
    """Producer node name -> consumer node name, for every edge that may fuse."""
    produced = {id(root_of(n.out)): n for n in graph.nodes if isinstance(n, Pointwise)}
    edges = {}
    for key, reads in readers(graph).items():
        producer = produced.get(key)
        consumers = {id(node) for node, _ in reads}
        if producer is None or len(consumers) != 1:
            continue
        consumer = reads[0][0]
        if isinstance(consumer, Pointwise) and all(is_whole(view) and view.shape == producer.out.shape
                                                   for _, view in reads) and _keeps_rounding(producer, consumer):
            edges[producer.name] = consumer.name
    return edges


def prologue_edges(graph: Graph) -> dict[str, str]:
    """Producer node name -> the non-pointwise kernel that is its only reader and reads its result whole, in
    order, as its one input (at any shape: a reduction's rows are a reshape of it)."""
    produced = {id(root_of(n.out)): n for n in graph.nodes if isinstance(n, Pointwise)}
    edges = {}
    for key, reads in readers(graph).items():
        producer = produced.get(key)
        if producer is None or len(reads) != 1:
            continue
        consumer, view = reads[0]
        if isinstance(consumer, Kernel) and len(consumer.inputs) == 1 and is_whole(view) \
                and producer.name not in {copy for copy, _ in consumer.in_place.values()}:  # a fold's business
            edges[producer.name] = consumer.name
    return edges


@dataclass(frozen=True)
class Gather:
    """A gather a pointwise kernel can do itself: ``result = table[index]``, an index below 0 counted from the
    end where ``wrap`` (ATen's ``index`` does, ``index_select`` refuses it)."""

    result: torch.Tensor
    table: torch.Tensor
    index: torch.Tensor
    wrap: bool


def gather_edges(graph: Graph) -> dict[str, Gather]:
    """Gather node name -> the gather, for every ``index_select`` along dim 0 of a 1-D table whose result is read
    whole, at its own shape, by pointwise nodes only."""
    produced = {id(root_of(n.outputs[0])): n for n in graph.nodes
                if isinstance(n, Kernel) and n.spec.layout == "gather" and n.spec.name == "index_select"}
    edges = {}
    for key, reads in readers(graph).items():
        node = produced.get(key)
        if node is None or not all(isinstance(reader, Pointwise) and is_whole(view)
                                   and view.shape == node.outputs[0].shape for reader, view in reads):
            continue
        table, index, geometry = node.inputs
        dim, _, wrap = geometry.tolist() if geometry.device.type != "meta" else (None, None, None)
        if dim == 0 and table.dim() == 1 and index.shape == node.outputs[0].shape:
            edges[node.name] = Gather(node.outputs[0], table, index, bool(wrap))
    return edges


def _keeps_rounding(producer: Pointwise, consumer: Pointwise) -> bool:
    """Inlining skips the producer's store, so a result rounded to a 16-bit float would reach the consumer
    unrounded: fine where the consumer's own result is that dtype (its tolerance is that dtype's), not where it
    is wider (``x.to(torch.bfloat16).float()`` must keep the rounding), nor where the producer is the conversion
    itself: the rounding is what it computes, and a difference of two operands the user rounded
    (``a.bfloat16() - b.bfloat16()``) taken unrounded can miss by far more than its own rounding (1 of 24 row
    sums out of bfloat16's tolerance in tests/program/problems/loss_terms.py)."""
    narrow = (torch.bfloat16, torch.float16)
    if producer.out.dtype not in narrow:
        return True
    converts = isinstance(producer.expr, Var) and any(
        leaf.dtype.is_floating_point and leaf.dtype.itemsize > producer.out.dtype.itemsize
        for leaf in producer.leaves.values())
    return consumer.out.dtype == producer.out.dtype and not converts


def fused_expressions(graph: Graph, knobs: dict[str, bool]) -> dict[str, tuple[Expr, dict[str, object]]]:
    """For each pointwise node that stays a kernel: its expression with every fused producer inlined, and the
    leaves it reads (renamed v0, v1, ... in first-use order, one variable per distinct view)."""
    edges = fusable(graph)
    inline = {name for name in edges if knobs.get(PREFIX + name, True)}
    by_root = {id(root_of(n.out)): n for n in graph.nodes if isinstance(n, Pointwise)}
    result = {}
    for node in graph.nodes:
        if not isinstance(node, Pointwise) or node.name in inline:
            continue
        leaves: dict[str, object] = {}
        keys: dict[tuple, str] = {}

        def expand(n: Pointwise) -> Expr:
            values = {}
            for var, view in n.leaves.items():
                producer = by_root.get(id(root_of(view)))
                if producer is not None and producer.name in inline:
                    values[var] = expand(producer)
                    continue
                key = (id(root_of(view)), tuple(view.shape), tuple(view.stride()), view.storage_offset(),
                       view.dtype)
                if key not in keys:
                    keys[key] = f"v{len(keys)}"
                    leaves[keys[key]] = view
                values[var] = Var(keys[key])
            return substitute(n.expr, values)

        result[node.name] = (expand(node), leaves)
    return result
