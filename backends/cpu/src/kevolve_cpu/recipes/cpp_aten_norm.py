"""ATen conformance kernels in C++: norm operators (being written)."""

from __future__ import annotations

RECIPES: list = []
