"""Conformance table: conv operators (being written)."""

from __future__ import annotations

from kevolve.conformance.spec import OpSpec

SPECS: list[OpSpec] = []
