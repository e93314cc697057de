"""How a conformance kernel binds an OpInfo sample: :class:`Arg` per argument, :class:`OpSpec` per operator.

The per-operator tables live in :mod:`kevolve.conformance.ops` (one module per group of the suite); this module
only holds the vocabulary they share, so that the samples module and every table read one definition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kevolve.synthesis.expr import Const, Expr

REQUIRED = object()

#: an ATen call's (args, kwargs), every positional parameter of its schema in ``args`` (defaults filled in:
#: :func:`kevolve.conformance.portable.positional`) -> the op's own (args, kwargs) (the first argument is the
#: input) and how many of
#: the ATen outputs the op's kernel writes (None: all; the others must be empty); raises ``Declined`` for a call
#: the op's kernel does not compute (e.g. ``_softmax`` with ``half_to_float``)
AtenCall = Callable[[tuple, dict], tuple[tuple, dict, "int | None"]]

#: in :attr:`Arg.dtypes`: the dtype the sample is drawn in (float32, or bfloat16 for a target's bf16 samples)
OP_DTYPE = "op"

#: layouts whose kernel is one scalar expression per output element (printed from :meth:`OpSpec.expression`)
EXPRESSION_LAYOUTS = ("same", "broadcast", "halves")


@dataclass(frozen=True)
class Arg:
    """One argument after the op's input tensor: bound by position, then by keyword."""

    name: str
    default: Any = REQUIRED
    tensor: bool = False
    #: values the kernel accepts for this (non-tensor) argument; anything else declines the sample
    accepted: tuple[Any, ...] | None = None
    #: a tensor argument that may also be a Python number (or None): then it is a constant of the kernel
    scalar_ok: bool = False
    #: dtype names a tensor argument may have (default: the op's dtype, :data:`OP_DTYPE`)
    dtypes: tuple[str, ...] | None = None
    #: a sequence of tensors (e.g. index_put's indices): each tensor becomes a kernel input; attrs gets
    #: ``<name>_present``, one bool per element (None elements pass no tensor)
    many: bool = False


@dataclass(frozen=True, eq=False)
class OpSpec:
    """How to write a kernel for one OpInfo name.

    ``layout`` names the kind of kernel the target's recipes are asked for. The expression layouts: ``same``
    (every tensor has the output's elements), ``broadcast`` (tensors broadcast to the output, NumPy rules after
    :attr:`prepare`), ``halves`` (the output is the input split in two halves along ``attrs["dim"]``: variables
    ``a`` and ``b``); for them ``build(*tensor_args, attrs)`` returns the scalar expression: ``x`` for the
    input, then each tensor argument: its variable (named after the argument) when it is a tensor, a constant
    when the sample gave a number, None when it gave None. Every other layout (``reduce``, ``scan``, ``conv``,
    ...) is a kernel kind of its own, written by the recipes that support it from the op name and the
    attributes; ``build`` is then None (or an expression those recipes use, e.g. a reduction's element map)."""

    name: str
    build: Callable[..., Expr] | None = None
    args: tuple[Arg, ...] = ()
    layout: str = "same"
    #: output dtype name when not the input's (e.g. "bool")
    out_dtype: str | None = None
    #: how many outputs the op returns (e.g. 2 for sort's values and indices), or the counts it may return
    #: depending on its arguments (e.g. (1, 2) for max_pool2d's return_indices); the kernel writes all of them
    outputs: int | tuple[int, ...] = 1
    #: the op's input is a sequence of tensors (e.g. cat): each one is a kernel input
    list_input: bool = False
    #: host-side argument normalisation: (tensors, attrs) -> (tensors, attrs): contiguous copies, views,
    #: permutations that bring the dimensions a kernel works on into place, packing constants; no computation
    prepare: Callable[[list[Any], dict[str, Any]], tuple[list[Any], dict[str, Any]]] | None = None
    #: the two larger random samples, from the input's shape and a tensor maker: (args, kwargs), or
    #: (input, args, kwargs) to replace the input drawn at that shape
    large: Callable[[tuple[int, ...], Any], tuple] | None = None
    #: ``(source, prepared)`` -> a view of ``source``'s memory that a kernel reading strided inputs may take
    #: instead of ``prepared``, a contiguous copy :attr:`prepare` made of ``source`` (None where there is none):
    #: a program can then skip the copy (:attr:`kevolve.synthesis.recipe.Recipe.reads_in_place`)
    in_place: Callable[[Any, Any], Any] | None = None
    #: shapes of the larger random samples when the suite's defaults do not fit the op (e.g. 4-D for conv2d)
    large_shapes: tuple[tuple[int, ...], ...] | None = None
    #: ATen overloads whose calls the op's kernel computes, where a call's arguments are not the op's own (e.g.
    #: ``aten._softmax.default`` for softmax, ``aten.convolution.default`` for conv2d): overload -> an
    #: :data:`AtenCall` adapter. The op's own overload (``aten.<name>.*``) needs none when its arguments are
    #: the op's. Used by the BackendBench export (:mod:`kevolve.conformance.export`).
    aten: dict[str, AtenCall] | None = None
    #: OpInfo entries of this name that compute something else (e.g. ``max``'s ``binary`` variant, a pointwise
    #: maximum, beside its reductions): variant_test_name -> the entry to bind their samples with
    variants: dict[str, OpSpec] | None = None

    def for_entry(self, variant: str) -> OpSpec:
        """The entry that binds the samples of the OpInfo variant ``variant``."""
        return (self.variants or {}).get(variant, self)

    def tensor_names(self, attrs: dict[str, Any]) -> tuple[str, ...]:
        """The kernel's tensor variables for a sample bound with ``attrs`` (tensor arguments given as numbers are
        in ``attrs``)."""
        if self.layout == "halves":
            return ("a", "b")
        return ("x", *(a.name for a in self.args if a.tensor and a.name not in attrs))

    def expression(self, attrs: dict[str, Any]) -> Expr | None:
        from kevolve.synthesis.expr import Var

        if self.build is None:
            return None
        operands: list[Any] = [Var(n) for n in self.tensor_names(attrs)] if self.layout == "halves" else [Var("x")]
        if self.layout != "halves":
            for arg in self.args:
                if arg.tensor:
                    value = attrs.get(arg.name, REQUIRED)
                    operands.append(Var(arg.name) if value is REQUIRED else None if value is None else const(value))
        return self.build(*operands, attrs)


def same_call(args: tuple, kwargs: dict) -> tuple[tuple, dict, None]:
    """An :data:`AtenCall` for an overload whose arguments are the op's own (e.g. ``aten._prelu_kernel``)."""
    return args, kwargs, None


def const(value: float) -> Const:
    return Const(float(value))
