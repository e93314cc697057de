"""``kevolve.load``: a kernel's op back from a saved package or a stored session, so that kernels found on one
machine can be shipped to another."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from kevolve.errors import KevolveError, StoreError


def load(where: str | Path, store: Any = None) -> Any:
    """The op (``torch.ops.kevolve.<name>.default``) of a package written by ``result.save(DIR)``, or of the best
    kernel of a stored session (by id or unique prefix, in ``store`` or the default store).

    :param where: a directory written by ``result.save(DIR)``, or a session id (or unique prefix)
    :param store: for a session: the store holding it (path or ``Store``); None for ``$KEVOLVE_STORE`` or the
        default
    """
    path = Path(where)
    if path.is_dir():
        if not (path / "kevolve.json").is_file() or not (path / "__init__.py").is_file():
            raise KevolveError(f"{path} is not a package saved by kevolve (no kevolve.json and __init__.py in it); "
                               "write one with result.save(DIR) or `kevolve optimize ... --save DIR`")
        return _import_package(path).op
    from kevolve.api import session_result

    try:
        result = session_result(str(where), store)
    except StoreError as exc:
        raise KevolveError(f"{where!s} is neither a saved package directory nor a stored session: {exc}") from None
    return result.as_torch_op()


def _import_package(path: Path) -> ModuleType:
    """Import the package at ``path`` under its own name (its modules import each other relatively), or under a
    name made unique by its path when another module already has that name."""
    init = (path / "__init__.py").resolve()
    name = path.resolve().name
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == init:
        return loaded
    if loaded is not None:
        name = f"{name}_{hashlib.sha256(str(init).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module
