"""Python source that defines a function of kevolve's tables with everything it needs, for a file that must run
without kevolve: an exported BackendBench file carries its operator's ``prepare`` step this way.

The function's own source is written with, before it, what its code loads by name: modules become imports,
functions of kevolve are written the same way (recursively), functions of other packages are imported, literal
constants are assigned, and kevolve's ``Declined`` (an argument the kernel was not written for) becomes
``NotImplementedError``, which an exported file raises for the same reason. A closure's captured values are
assigned as globals before its (dedented) source. Anything else (an object Python cannot write back, two
different objects under one name) raises :class:`Unbundleable` with the name, so the caller can say why it left
the function out.
"""

from __future__ import annotations

import builtins
import dis
import inspect
import math
import textwrap
import types
from typing import Any

import torch

#: kevolve's exceptions that mean "this call is not for this kernel", and what an exported file raises instead
_DECLINING = {"Declined": "NotImplementedError"}


class Unbundleable(Exception):
    """A function refers to something that cannot be written as source."""


def source_of(function: Any, name: str) -> str:
    """Source defining ``name`` as ``function`` (a kevolve function or closure), preceded by its dependencies."""
    written: dict[str, Any] = {}
    parts: list[str] = []
    _write(function, written, parts)
    parts.append(f"{name} = {function.__name__}\n")
    return "\n".join(parts)


def _loaded_names(code: types.CodeType) -> set[str]:
    """Global names the code (and the functions, lambdas and comprehensions inside it) loads."""
    names = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(instruction.argval)
        elif instruction.opname == "IMPORT_NAME" and str(instruction.argval).split(".")[0] == "kevolve":
            raise Unbundleable(f"{code.co_name} imports {instruction.argval} when it runs")
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _loaded_names(const)
    return names


def _claim(name: str, value: Any, written: dict[str, Any]) -> bool:
    """Whether ``name`` still has to be written (False when it already is, as the same object)."""
    if name in written:
        if written[name] is not value and written[name] != value:
            raise Unbundleable(f"two different objects are named {name!r}")
        return False
    written[name] = value
    return True


def _literal(value: Any) -> str | None:
    text = repr(value)
    try:
        back = eval(text, {"torch": torch, "inf": math.inf, "nan": math.nan})  # our own repr of a value
    except (SyntaxError, NameError, TypeError, AttributeError):
        return None
    same = back == value or (isinstance(value, float) and math.isnan(value) and math.isnan(back))
    return text if type(back) is type(value) and same else None


def _write(function: Any, written: dict[str, Any], parts: list[str]) -> None:
    if not _claim(function.__name__, function, written):
        return
    code = function.__code__
    for var, cell in zip(code.co_freevars, function.__closure__ or ()):
        _write_value(var, cell.cell_contents, written, parts)
    for var in sorted(_loaded_names(code)):
        if var in function.__globals__:
            _write_value(var, function.__globals__[var], written, parts)
        elif not hasattr(builtins, var):
            raise Unbundleable(f"{function.__name__} loads {var!r}, defined nowhere")
    parts.append(textwrap.dedent(inspect.getsource(function)))


def _write_value(var: str, value: Any, written: dict[str, Any], parts: list[str]) -> None:
    if isinstance(value, type) and var in _DECLINING:
        if _claim(var, value, written):
            parts.append(f"{var} = {_DECLINING[var]}\n")
        return
    if isinstance(value, types.ModuleType):
        if value.__name__.split(".")[0] == "kevolve":
            raise Unbundleable(f"{var!r} is kevolve's module {value.__name__}")
        if _claim(var, value, written):
            parts.append(f"import {value.__name__} as {var}\n" if value.__name__ != var else f"import {var}\n")
        return
    if isinstance(value, types.FunctionType):
        module = value.__module__ or ""
        if module.split(".")[0] == "kevolve":
            if value.__name__ == "<lambda>":
                raise Unbundleable(f"{var!r} is a lambda (its source is not its own)")
            _write(value, written, parts)
            if value.__name__ != var and _claim(var, value, written):
                parts.append(f"{var} = {value.__name__}\n")
        elif _claim(var, value, written):
            parts.append(f"from {module} import {value.__qualname__} as {var}\n")
        return
    if isinstance(value, types.BuiltinFunctionType) and value.__module__:
        if _claim(var, value, written):
            parts.append(f"from {value.__module__} import {value.__name__} as {var}\n")
        return
    text = _literal(value)
    if text is not None and "torch." in text:
        _write_value("torch", torch, written, parts)
    if text is None:
        raise Unbundleable(f"{var!r} is a {type(value).__name__}, not a literal Python can write back")
    if _claim(var, value, written):
        parts.append(f"{var} = {text}\n")
