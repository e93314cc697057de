"""ATen conformance kernels in C++: reduction operators (being written)."""

from __future__ import annotations

RECIPES: list = []
