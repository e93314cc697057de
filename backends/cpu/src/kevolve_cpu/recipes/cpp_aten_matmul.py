"""ATen conformance kernels in C++: matmul operators (being written)."""

from __future__ import annotations

RECIPES: list = []
