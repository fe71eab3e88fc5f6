"""The modules of `reme.app` import each other without a circle, `TYPE_CHECKING` imports included:
components see a `Host`, steps a `JobHost`, so nothing below the application imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import reme

PACKAGE = Path(reme.__file__).parent


def _modules() -> dict[str, Path]:
    modules = {}
    for path in (PACKAGE / "app").rglob("*.py"):
        parts = ("reme", *path.relative_to(PACKAGE).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(source: str, known: set[str]) -> set[str]:
    """The known modules `source` imports, at any depth (functions and `TYPE_CHECKING` blocks too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & known


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for target in sorted(graph[module]):
            found = walk(target, [*path, module])
            if found:
                return found
        done.add(module)
        return None

    for module in sorted(graph):
        found = walk(module, [])
        if found:
            return found
    return None


def test_no_module_of_the_app_layer_imports_itself_back() -> None:
    modules = _modules()
    graph = {
        name: imports_of(path.read_text(encoding="utf-8"), set(modules)) - {name}
        for name, path in modules.items()
    }
    assert circle(graph) is None, " -> ".join(circle(graph) or [])


def test_the_check_finds_a_planted_circle() -> None:
    known = {"reme.app.a", "reme.app.b"}
    graph = {
        "reme.app.a": imports_of("from reme.app.b import x\n", known),
        "reme.app.b": imports_of(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import reme.app.a\n", known
        ),
    }
    assert circle(graph) == ["reme.app.a", "reme.app.b", "reme.app.a"]
