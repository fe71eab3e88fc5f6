"""`reme import obsidian` keeps a vault's shape, through the real console script (issue 23, item 6).

Links stay as the author wrote them where the workspace resolves them to the same note, the vault's
folder keeps its name, notes get a `name`, the summary counts the links, and re-importing after a
note was moved inside reme updates it where it now lives instead of creating a second copy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def _vault(root: Path) -> Path:
    vault = root / "Obsidian Help"
    (vault / "User interface").mkdir(parents=True)
    (vault / "Linking").mkdir()
    (vault / "User interface" / "Settings.md").write_text("Open [[Embed files]] or [[Nowhere]].\n")
    (vault / "Linking" / "Embed files.md").write_text("See [[Settings]] and [[Linking/Embed files]].\n")
    return vault


def _front(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def test_import_keeps_links_folder_name_and_reports_links(run_reme, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    result = run_reme("import", "obsidian", str(_vault(tmp_path)), f"workspace_dir={workspace}")
    assert result.returncode == 0, result.stderr
    assert "links: 3 resolved (3 kept as written, 0 respelled" in result.stdout
    assert "1 unresolved" in result.stdout
    base = workspace / "imports" / "obsidian" / "Obsidian Help"
    settings = base / "User interface" / "Settings.md"
    assert settings.read_text().endswith("Open [[Embed files]] or [[Nowhere]].\n")
    assert _front(settings)["name"] == "Settings"
    embed = base / "Linking" / "Embed files.md"
    assert embed.read_text().endswith("See [[Settings]] and [[Linking/Embed files]].\n")


def test_reimport_after_a_move_inside_reme_updates_the_moved_note(run_reme, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    vault = _vault(tmp_path)
    assert run_reme("import", "obsidian", str(vault), f"workspace_dir={workspace}").returncode == 0
    moved = run_reme(
        "start",
        "job=move",
        "src=imports/obsidian/Obsidian Help/User interface/Settings.md",
        "dst=notes/Settings.md",
        f"workspace_dir={workspace}",
    )
    assert moved.returncode == 0, moved.stderr
    (vault / "User interface" / "Settings.md").write_text("Open [[Embed files]] today.\n")
    again = run_reme("import", "obsidian", str(vault), f"workspace_dir={workspace}", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)["metadata"]
    assert report["created"] == [] and report["updated"] == ["notes/Settings.md"]
    copies = [p for p in workspace.rglob("Settings.md") if "metadata" not in p.parts]
    assert copies == [workspace / "notes" / "Settings.md"]
    assert (workspace / "notes" / "Settings.md").read_text().endswith("Open [[Embed files]] today.\n")
