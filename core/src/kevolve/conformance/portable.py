"""The runtime every BackendBench file exported by kevolve carries: its source is copied into each file, so the
exported kernels run where only torch and the kernel's own runtime (a C++ compiler, Triton, ...) are installed.

It binds an ATen call's arguments to the kernel's inputs and constants the way the conformance run bound the
OpInfo samples (:func:`kevolve.conformance.samples.bind` binds through :func:`bind_views` too), allocates the
outputs from a run of the ATen overload on meta tensors, and loads the kernel from the standalone package the
target's backend wrote next to the file. An operator's host-side ``prepare`` step
(:attr:`kevolve.conformance.spec.OpSpec.prepare`) is written into the file by :mod:`~kevolve.conformance.bundle`.
Imports: the standard library and torch only (the export's tests import the written files with kevolve blocked).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

#: an argument without a default, in :data:`ARGS`-style descriptions
REQUIRED = "<required>"
#: in an argument's dtypes: the dtype of the op's input
OP_DTYPE = "op"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def describe(value) -> str:
    """A value as a declined argument's reason names it (a tensor by its shape)."""
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _allowed(dtypes, dtype: torch.dtype) -> tuple:
    return tuple(dtype_name(dtype) if d == OP_DTYPE else d for d in (dtypes or (OP_DTYPE,)))


def bind_arguments(tensors: list, rest: list, kwargs: dict, args: list[dict], dtype: torch.dtype,
                   error: type[Exception] = NotImplementedError) -> tuple[list, dict]:
    """(kernel input tensors, constant attributes) of a call whose leading input tensors are ``tensors``, by the
    argument descriptions ``args`` (name, default, tensor, scalar_ok, accepted, dtypes, many); ``error`` for an
    argument the kernel was not written for. The one binding rule: the conformance run binds OpInfo samples
    with it, and exported files ATen calls."""
    if len(rest) > len(args):
        raise error(f"{len(rest)} positional arguments; the kernel takes {len(args)}")
    names = [a["name"] for a in args]
    values = dict(zip(names, rest))
    for key, value in kwargs.items():
        if key not in names:
            raise error(f"unsupported argument {key}={describe(value)}")
        values[key] = value
    tensors, allowed, attrs = list(tensors), [(dtype_name(dtype),)] * len(tensors), {}
    for arg in args:
        value = values.get(arg["name"], arg["default"])
        if isinstance(value, str) and value == REQUIRED:
            raise error(f"missing required argument {arg['name']}")
        if arg.get("many"):
            if not isinstance(value, (list, tuple)) or not all(v is None or isinstance(v, torch.Tensor) for v in value):
                raise error(f"{arg['name']} is {describe(value)}, not a sequence of tensors")
            present = [v for v in value if v is not None]
            tensors += present
            allowed += [_allowed(arg["dtypes"], dtype)] * len(present)
            attrs[f"{arg['name']}_present"] = [v is not None for v in value]
            continue
        if arg["tensor"]:
            if isinstance(value, torch.Tensor):
                tensors.append(value)
                allowed.append(_allowed(arg["dtypes"], dtype))
            elif arg["scalar_ok"] and (value is None or isinstance(value, (bool, int, float))):
                attrs[arg["name"]] = value if value is None or isinstance(value, bool) else float(value)
            else:
                raise error(f"{arg['name']} is {describe(value)}, not a tensor")
            continue
        if isinstance(value, torch.Tensor):
            raise error(f"{arg['name']} is a tensor; the kernel takes it as a constant")
        if arg["accepted"] is not None and value not in arg["accepted"]:
            raise error(f"{arg['name']}={value!r} (the kernel takes {', '.join(map(repr, arg['accepted']))})")
        if arg["name"] != "inplace":
            attrs[arg["name"]] = value
    for i, (t, ok) in enumerate(zip(tensors, allowed)):
        if dtype_name(t.dtype) not in ok:
            raise error(f"tensor {i} is {dtype_name(t.dtype)}, not {' or '.join(ok)}")
        if t.is_complex() or t.layout != torch.strided:
            raise error(f"tensor {i} has layout {t.layout} / dtype {t.dtype}")
    return tensors, attrs


def split_dim(first: torch.Tensor, attrs: dict, error: type[Exception] = NotImplementedError) -> None:
    """The ``halves`` layout's dim, normalised to the input's rank."""
    if first.dim() == 0:
        raise error("a 0-dim input has no dimension to split")
    attrs["dim"] = int(attrs["dim"]) % first.dim()


def bind_views(first: list, rest: list, kwargs: dict, args: list[dict], layout: str, prepare=None,
               dtype: torch.dtype | None = None, error: type[Exception] = NotImplementedError) -> tuple[list, dict]:
    """(kernel input tensors as ``prepare`` left them, constant attributes) of a call whose leading tensors are
    ``first`` (one, or a list input's), in ``dtype`` (default: the first tensor's); ``error`` for an argument the
    kernel was not written for. The one sequence of binding steps: arguments, ``prepare``, the halves' dim."""
    tensors, attrs = bind_arguments(first, rest, kwargs, args, dtype or first[0].dtype, error)
    if prepare is not None:
        tensors, attrs = prepare(tensors, attrs)
    if layout == "halves":
        split_dim(tensors[0], attrs, error)
    return list(tensors), attrs


def bind(first: list, rest: list, kwargs: dict, args: list[dict], layout: str, prepare=None) -> tuple[list, dict]:
    """:func:`bind_views` of an ATen call, as contiguous copies."""
    tensors, attrs = bind_views(first, rest, kwargs, args, layout, prepare)
    return [t.detach().contiguous().clone() for t in tensors], attrs


def kernel_key(inputs: list, attrs: dict, layout: str) -> str:
    """Which of the exported kernels serves a call (the conformance run's key: attributes, dtypes, layout)."""
    dtypes = [dtype_name(t.dtype) for t in inputs]
    return json.dumps({"attrs": attrs, "dtypes": dtypes, "layout": layout}, sort_keys=True, default=str)


def overload_of(aten: str):
    """The ATen overload named ``aten.<packet>.<overload>``."""
    _, packet, overload = aten.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def positional(aten: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call's arguments in the overload's schema order, every positional parameter present (keywords given for
    them moved into place, the defaults filled in): what the ops' ATen adapters unpack."""
    params = [a for a in overload_of(aten)._schema.arguments if not a.kwarg_only]
    args, kwargs = list(args), dict(kwargs)
    for param in params[len(args):]:
        if param.name in kwargs:
            args.append(kwargs.pop(param.name))
        elif param.has_default_value():
            args.append(param.default_value)
        else:
            raise NotImplementedError(f"{aten}: no {param.name} given")
    return tuple(args), kwargs


def output_like(aten: str, args: tuple, kwargs: dict) -> list:
    """Empty outputs shaped as the ATen overload returns them (its run on meta tensors computes nothing)."""
    def meta(value):
        if isinstance(value, torch.Tensor):
            return torch.empty_like(value, device="meta")
        if isinstance(value, (list, tuple)):
            return type(value)(meta(v) for v in value)
        return value

    shapes = overload_of(aten)(*meta(args), **{k: meta(v) for k, v in kwargs.items()})
    outs = list(shapes) if isinstance(shapes, (tuple, list)) else [shapes]
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    return [torch.empty(o.shape, dtype=o.dtype, device=device) for o in outs]


def load_kernel(directory: Path):
    """``kernel(inputs, outputs)`` of the standalone package in ``directory`` (built on first use)."""
    name = "backendbench_kernel_" + "_".join(directory.parts[-2:]).replace(".", "_").replace("-", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, directory / "__init__.py",
                                                      submodule_search_locations=[str(directory)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name].kernel


def _leading(op: str, value, list_input: bool) -> list:
    """The call's leading input tensors: its first argument, or the tensors of a list input."""
    if list_input:
        if not isinstance(value, (list, tuple)) or not value or not all(isinstance(t, torch.Tensor) for t in value):
            raise NotImplementedError(f"{op}: the first argument is {describe(value)}, not a sequence of tensors")
        return list(value)
    if not isinstance(value, torch.Tensor):
        raise NotImplementedError(f"{op}: the first argument is not a tensor")
    return [value]


def _bound(binding: dict) -> dict:
    """A binding (dict(op, layout, list_input, args, kernels, code)) with its ``code`` run in a namespace of its own:
    its ``PREPARE`` and ``ADAPT`` functions (None where the op has none)."""
    namespace: dict = {"__name__": f"binding_{binding['op']}"}
    exec(compile(binding["code"], f"<{binding['op']} binding>", "exec"), namespace)  # noqa: S102 - the export's own
    return {**binding, "prepare": namespace["PREPARE"], "adapt": namespace["ADAPT"]}


def prepared_call(binding: dict, aten: str, call_args: tuple, kwargs: dict) -> tuple[list, dict, list, int | None]:
    """(kernel inputs, attributes, ATen's outputs allocated, how many of them the kernel writes) of an ATen call of
    ``aten`` bound as ``binding``'s op binds it; NotImplementedError when the op's kernel does not compute it."""
    op = binding["op"]
    outputs = output_like(aten, call_args, kwargs)
    if aten.split(".")[1].endswith("_"):  # in place (``add_``): the kernel writes into the first argument
        target = call_args[0]
        if len(outputs) != 1 or not target.is_contiguous() or target.shape != outputs[0].shape:
            raise NotImplementedError(f"{op}: in place on a {tuple(target.shape)} tensor of strides {target.stride()}")
        outputs = [target]
    written = None
    if binding["adapt"] is not None:
        try:
            call_args, kwargs, written = binding["adapt"](*positional(aten, call_args, kwargs))
        except (TypeError, ValueError) as exc:  # not the call the adapter was written for
            raise NotImplementedError(f"{op}: {exc}") from exc
    if not call_args:
        raise NotImplementedError(f"{op}: no arguments")
    first = _leading(op, call_args[0], binding["list_input"])
    described = binding["args"] + [None] * max(0, len(call_args) - 1 - len(binding["args"]))
    # a Python number ATen wrapped into a 0-dim tensor of another dtype is a number again (where the op takes
    # a number there: a 0-dim index tensor stays a tensor)
    rest = [a.item() if isinstance(a, torch.Tensor) and a.dim() == 0 and a.dtype != first[0].dtype
            and a.dtype != torch.bool and (arg is None or not arg["tensor"] or arg["scalar_ok"]) else a
            for a, arg in zip(call_args[1:], described)]
    inputs, attrs = bind(first, rest, kwargs, binding["args"], binding["layout"], binding["prepare"])
    if written is not None and any(o.numel() for o in outputs[written:]):
        raise NotImplementedError(f"{op}: the kernel writes {written} of the {len(outputs)} outputs")
    if binding["layout"] == "broadcast":
        rank = outputs[0].dim()
        inputs = [t.reshape([1] * (rank - t.dim()) + list(t.shape)) for t in inputs]
    return inputs, attrs, outputs, written


def call_binding(binding: dict, aten: str, call_args: tuple, kwargs: dict, folder: Path):
    """One op's kernel on an ATen call of ``aten``; NotImplementedError when the op's kernel does not compute it."""
    op = binding["op"]
    inputs, attrs, outputs, written = prepared_call(binding, aten, call_args, kwargs)
    key = kernel_key(inputs, attrs, binding["layout"])
    if key not in binding["kernels"]:
        raise NotImplementedError(f"{op}: no kernel was generated for {key}")
    load_kernel(folder / binding["kernels"][key])(inputs, outputs[:written])
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def make_impl(aten: str, bindings: list[dict], here: str):
    """``impl(*args, **kwargs)`` of the ATen overload ``aten``: each binding's op's kernel is tried in turn (the
    first that computes the call answers it); their packages are in folders next to the file ``here``."""
    folder = Path(here).resolve().parent
    bound = [_bound(b) for b in bindings]

    def impl(*call_args, **kwargs):
        declined = []
        for binding in bound:
            try:
                return call_binding(binding, aten, call_args, kwargs, folder)
            except NotImplementedError as exc:
                declined.append(str(exc))
        raise NotImplementedError("; ".join(declined))

    impl.__name__ = "kevolve_" + aten.replace(".", "_")
    return impl
