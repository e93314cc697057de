"""Core's modules import each other without a cycle.

The rule: every ``import`` and ``from ... import`` statement of a module counts, at module level and inside
functions alike. A lazy import hides a cycle from the interpreter, not from the reader: ``problem_from_spec``
importing every problem kind from the base class's module, while the catalog problem imported the plugin
manager, made 14 modules one knot though each import ran late. Left out: imports under ``if TYPE_CHECKING:``
(annotations only, never run) and the implicit import of a module's parent packages (``kevolve.store.sqlite``
runs ``kevolve/store/__init__.py`` first; a package re-exporting its modules would otherwise be a cycle with
each of them). The sources are parsed with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core/src"


def module_files(root: Path = CORE) -> dict[str, Path]:
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                                         or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(module: str, path: Path, modules: Collection[str]) -> set[str]:
    """The core modules ``module`` imports: ``import X`` and ``from X import y`` name X, except that the latter
    names ``X.y`` when that is a module (``from kevolve.store import schema``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
    while pending:
        node = pending.pop()
        if _type_checking_only(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return {name for name in names if name in modules and name != module}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {module: imported_modules(module, path, modules.keys()) for module, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle as a path that starts and ends at the same module, or [] when there is none."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, on_path, stack = [start], {start}, [(start, iter(sorted(graph[start])))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return path[path.index(child):] + [child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return []


def test_the_walk_sees_lazy_imports_and_skips_type_checking_ones():
    graph = import_graph(module_files())
    assert "kevolve.api" in graph["kevolve.delivery.load"]  # imported inside load()
    assert "kevolve.registry" not in graph["kevolve.hookspecs"]  # under TYPE_CHECKING
    assert "kevolve.store.schema" in graph["kevolve.store.opening"]  # from kevolve.store import schema


def test_core_has_no_import_cycle():
    cycle = find_cycle(import_graph(module_files()))
    assert not cycle, "import cycle in core: " + " -> ".join(cycle)
