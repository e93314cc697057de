"""Issue 37: every public function and class of ``kevolve`` (its ``__all__``) has a docstring that lists its
parameters (``:param name:``, the Sphinx field the docs site renders), and every public method and field of its
classes says what it is."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap

import pytest

import kevolve

PUBLIC = [getattr(kevolve, name) for name in kevolve.__all__]
FUNCTIONS = [obj for obj in PUBLIC if inspect.isfunction(obj)]
CLASSES = [obj for obj in PUBLIC if inspect.isclass(obj) and not issubclass(obj, BaseException)]


def _params(fn) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _undocumented(fn) -> list[str]:
    doc = inspect.getdoc(fn) or ""
    return [name for name in _params(fn) if f":param {name}:" not in doc]


def _methods(cls) -> list[tuple[str, object]]:
    """The class's own public methods and properties (not inherited from object or a dataclass's machinery)."""
    return [(name, member) for name, member in vars(cls).items()
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_public_functions_list_their_parameters(fn):
    assert inspect.getdoc(fn), f"kevolve.{fn.__name__} has no docstring"
    assert not _undocumented(fn), f"kevolve.{fn.__name__}: no ':param NAME:' for {_undocumented(fn)}"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_public_classes_say_what_each_member_is(cls):
    assert inspect.getdoc(cls) and cls.__doc__ != _dataclass_default_doc(cls), f"{cls.__name__} has no docstring"
    missing = [name for name, member in _methods(cls)
               if not inspect.getdoc(member.fget if isinstance(member, property) else member)]
    missing += [f"{name}()" for name, member in _methods(cls) if inspect.isfunction(member) and _undocumented(member)]
    missing += [f"field {name}" for name in _undocumented_fields(cls)]
    assert not missing, f"{cls.__name__}: undocumented {missing}"


def _dataclass_default_doc(cls) -> str | None:
    """The docstring dataclasses invent for an undocumented class (its signature), which is not documentation."""
    if not dataclasses.is_dataclass(cls):
        return None
    return cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")


def _undocumented_fields(cls) -> list[str]:
    """Annotated class attributes with neither a ``#:`` comment above them nor an ``:ivar NAME:`` in the class
    docstring (both read by the docs site)."""
    if not dataclasses.is_dataclass(cls):
        return []
    lines, _ = inspect.getsourcelines(cls)
    body = ast.parse(textwrap.dedent("".join(lines))).body[0]
    doc = inspect.getdoc(cls) or ""
    missing = []
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            if not above.startswith("#:") and f":ivar {node.target.id}:" not in doc:
                missing.append(node.target.id)
    return missing


def test_the_check_can_fail():
    def documented(a, b):
        """Adds.

        :param a: one
        """

    @dataclasses.dataclass
    class Bare:
        x: int = 0

    assert _undocumented(documented) == ["b"]
    assert _undocumented_fields(Bare) == ["x"]
