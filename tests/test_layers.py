"""The layering rules, checked on the source: no module imports a layer above its own.

workspace → index → llm → pipelines → app → service, with `reme.errors` at the bottom. Imports under
`TYPE_CHECKING` and inside functions count too. Pipelines also never touch files themselves: their
file access goes through `MemoryPort`.

The thin-service rule (issue #20 item 5): a module under `reme.service` imports from reme only
- `reme` itself (`__version__`), `reme.errors`, `reme.jsontypes` and `reme.service.*`;
- the app's facade modules, `APP_FACADE`: the application and its config, jobs (specs, parameters,
  responses), the local-job table, value parsing, spelling hints, `reme.app.captures` (the agent
  capture queue the hooks feed), `reme.app.diagnostics` (typed answers for `reme doctor`) and
  `reme.app.progress` (the progress callbacks the service draws).
Never `reme.app.components`, `reme.app.steps`, `reme.app.port` or any layer below the app: the service
reaches them through jobs or a facade. `from reme.x import y` counts as importing `reme.x.y` when
that is a module. And only the service draws: no module outside `reme.service` imports rich.
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


APP_FACADE = frozenset(
    {
        "reme.app.application",
        "reme.app.captures",
        "reme.app.config",
        "reme.app.diagnostics",
        "reme.app.jobs",
        "reme.app.local_jobs",
        "reme.app.progress",
        "reme.app.spelling",
        "reme.app.values",
    }
)
SERVICE_MAY_IMPORT = frozenset({"reme", "reme.errors", "reme.jsontypes"}) | APP_FACADE


def _target(name: str, imported: list[str]) -> list[str]:
    """`from name import a, b`: the modules it reaches (`name.a` where that is a module, else `name`)."""
    found = []
    for alias in imported:
        candidate = f"{name}.{alias}"
        parts = candidate.split(".")[1:]
        is_module = (PACKAGE.joinpath(*parts).with_suffix(".py")).is_file() or PACKAGE.joinpath(
            *parts
        ).is_dir()
        found.append(candidate if is_module else name)
    return found


def _outside_facade(name: str) -> bool:
    inside = name == "reme" or name.startswith("reme.")
    service = name == "reme.service" or name.startswith("reme.service.")
    return inside and not service and name not in SERVICE_MAY_IMPORT


def thin_service_violations(module: str, path: Path) -> list[str]:
    """The imports of `module` (a module under `reme.service`, source at `path`) that break the
    thin-service rule of this file's docstring, as `line N: reme.x.y`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative import: resolve against this module's package
                base = ".".join(module.split(".")[: -node.level] + [node.module])
            names = _target(base, [alias.name for alias in node.names])
        else:
            continue
        wrong += [f"line {node.lineno}: {name}" for name in names if _outside_facade(name)]
    return wrong


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


SERVICE_MODULES = [(m, p) for m, p in _modules() if m == "reme.service" or m.startswith("reme.service.")]


@pytest.mark.parametrize(("module", "path"), SERVICE_MODULES, ids=[m for m, _ in SERVICE_MODULES])
def test_the_service_reaches_the_rest_only_through_the_app_facade(module: str, path: Path) -> None:
    wrong = thin_service_violations(module, path)
    assert not wrong, f"{module} reaches past the app's facade (tests/test_layers.py docstring): {wrong}"


def test_the_thin_service_rule_fails_on_a_planted_violation(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\n"
        "from reme import __version__, workspace\n"  # line 2: the version is fine, the workspace package not
        "from reme.app.jobs import JobSpec\n"
        "from reme.service.client import call_job\n"
        "from reme.jsontypes import JSONObject\n"
        "if TYPE_CHECKING:\n"
        "    from reme.app.components.index import index_service\n"  # line 7
        "def check():\n"
        "    import reme.index.service\n"  # line 9
        "    from ..pipelines.capture import transcripts\n",  # line 10: relative, to reme.pipelines...
        encoding="utf-8",
    )
    assert thin_service_violations("reme.service.planted", planted) == [
        "line 2: reme.workspace",
        "line 7: reme.app.components.index",
        "line 9: reme.index.service",
        "line 10: reme.pipelines.capture.transcripts",
    ]


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_only_the_service_draws(module: str, path: Path) -> None:
    """Progress and output drawing (rich) is the service's; steps report through `reme.app.progress`."""
    if module.startswith("reme.service."):
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    drawing = [
        f"line {line}: {name}" for line, name in _imports(tree, module) if name.split(".")[0] == "rich"
    ]
    assert not drawing, f"{module} draws itself; report through reme.app.progress instead: {drawing}"
