"""Where kevolve keeps its files: ``$KEVOLVE_HOME`` or ``~/.kevolve`` (store, cached machine facts, builds)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    path = Path(os.environ.get("KEVOLVE_HOME") or Path.home() / ".kevolve")
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_store_path() -> Path:
    return home() / "kevolve.sqlite"


def cache_dir(name: str) -> Path:
    path = home() / "cache" / name
    path.mkdir(parents=True, exist_ok=True)
    return path
