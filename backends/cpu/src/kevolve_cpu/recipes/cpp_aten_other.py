"""ATen conformance kernels in C++: other operators (being written)."""

from __future__ import annotations

RECIPES: list = []
