"""ATen conformance kernels in C++: index operators (being written)."""

from __future__ import annotations

RECIPES: list = []
