"""Op attributes: each has a type (its default's) and may declare a range or a set of choices.

Values come from the command line (``--attr NAME=VALUE``, read as JSON where it parses) or from Python. Checked
when the problem is made, a wrong one is one line naming the attribute, what it must be and what was given,
instead of a traceback, a failed session, a kernel blamed for a wrong result, or "no recipe" as the cause.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kevolve.errors import ProblemError


@dataclass(frozen=True)
class AttrRule:
    """What an attribute's value may be beyond its default's type: a number in [``low``, ``high``], or one of
    ``choices``."""

    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    def allows(self, value: Any) -> bool:
        if self.choices:
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def describe(self, kind: str) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.low is not None and self.high is not None:
            return f"{kind} from {_number(self.low)} to {_number(self.high)}"
        if self.low is not None:
            return f"{kind} >= {_number(self.low)}"
        return f"{kind} <= {_number(self.high)}" if self.high is not None else kind


_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _conforms(value: Any, default: Any) -> bool:
    """Of the default's type; an int is taken where a float is expected, nothing else converts."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and math.isfinite(value)
    return type(value) is type(default)


def check_attrs(op: str, defaults: Mapping[str, Any], rules: Mapping[str, AttrRule],
                given: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with the ``given`` values, each checked against its default's type and its rule."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ProblemError(f"{op} has attributes {sorted(defaults) or 'none'}; got unknown {unknown}")
    values = dict(defaults)
    for name, value in given.items():
        default, rule = defaults[name], rules.get(name, AttrRule())
        if not (_conforms(value, default) and rule.allows(value)):
            must = rule.describe(_KINDS.get(type(default), type(default).__name__))
            raise ProblemError(f"{op}: attribute {name} must be {must}, got {value!r}; e.g. --attr "
                               f"{name}={_spelled(default)} (attrs={{{name!r}: {default!r}}})")
        values[name] = float(value) if isinstance(default, float) else value
    return values


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _spelled(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
