"""A griffe extension for the API pages: kevolve's docstrings are prose with reST roles (``:class:`Backend```,
``:func:`kevolve.optimize```); Markdown would show the role's name. This turns each role into inline code."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:attr|class|data|exc|func|meth|mod|obj):`~?([^`]+)`")


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)
