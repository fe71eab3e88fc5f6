"""The layering rule, checked on the source: no module imports a layer above its own.

workspace → index → llm → pipelines → app → service, with `reme.errors` at the bottom. Imports under
`TYPE_CHECKING` and inside functions count too. Pipelines also never touch files themselves: their
file access goes through `MemoryPort`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "reme"
LAYERS = ("jsontypes", "errors", "workspace", "index", "llm", "pipelines", "app", "testing", "service")
# Names that open, stat or walk files: a pipeline asks the port instead.
FILE_ACCESS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "iterdir",
    "rglob",
    "glob",
    "is_file",
    "is_dir",
    "stat",
    "unlink",
    "mkdir",
    "Path",
    "listdir",
    "scandir",
    "walk",
}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "reme" or len(parts) < 2:
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative import: resolve against this module's package
                base = ".".join(module.split(".")[: -node.level] + [node.module])
            found.append((node.lineno, base))
    return found


def _is_port(node: ast.expr) -> bool:
    """`port` or `self.port`: the MemoryPort a pipeline was given."""
    return (isinstance(node, ast.Name) and node.id == "port") or (
        isinstance(node, ast.Attribute) and node.attr == "port"
    )


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        out.append((".".join(p for p in relative.parts if p != "__init__"), path))
    return out


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_no_module_imports_a_layer_above_its_own(module: str, path: Path) -> None:
    own = _layer(module)
    if own is None:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    upward = [f"line {line}: {name}" for line, name in _imports(tree, module) if (_layer(name) or 0) > own]
    assert not upward, f"{module} ({LAYERS[own]}) imports from above: {upward}"


@pytest.mark.parametrize(
    ("module", "path"),
    [(m, p) for m, p in _modules() if m.startswith("reme.pipelines.")],
    ids=[m for m, _ in _modules() if m.startswith("reme.pipelines.")],
)
def test_pipelines_reach_files_only_through_the_port(module: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    touches = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_port(node.value):
            continue  # `port.read_bytes(...)` is the port's own operation
        name = (
            node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        )
        if name in FILE_ACCESS and isinstance(getattr(node, "ctx", None), ast.Load):
            touches.append(f"line {node.lineno}: {name}")
    names = {alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for alias in n.names}
    assert not touches and "Path" not in names, f"{module} touches files itself: {touches}"
