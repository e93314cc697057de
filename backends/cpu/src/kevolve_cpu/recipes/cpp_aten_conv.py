"""ATen conformance kernels in C++: conv operators (being written)."""

from __future__ import annotations

RECIPES: list = []
