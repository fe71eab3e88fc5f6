"""An adversarial review of two places where one install or import undid another's files: a
`reme install claude-code --project` run in the home folder (its `.claude` is the user's own) and two
Obsidian vaults imported under one folder, or names that differ only in case (one file on macOS and
Windows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.imports_support import PNG, files_under
from tests.support import snapshot

from reme import ReMe
from reme.service import install as installer

# install: the user scope and a project in the home folder ----------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME that is also the current folder (where `--project` puts its files), no Claude Code
    config folder or workspace of the developer's."""
    root = tmp_path / "home"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    for name in ("CLAUDE_CONFIG_DIR", "REME_WORKSPACE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.chdir(root)
    return root


def reme(*args: str) -> int:
    return installer.main(["claude-code", *args])


def user_installed(home: Path) -> bool:
    """Whether the user-scope install is whole: its MCP server, its hooks and the skill."""
    servers = json.loads((home / ".claude.json").read_text()).get("mcpServers", {})
    hooks = json.loads((home / ".claude" / "settings.json").read_text()).get("hooks", {})
    skill = home / ".claude" / "skills" / "reme-memory" / "SKILL.md"
    return "reme" in servers and set(installer.HOOKS) <= set(hooks) and skill.is_file()


def project_installed(home: Path) -> bool:
    """Whether the project install of the home folder is whole."""
    mcp, settings = home / ".mcp.json", home / ".claude" / "settings.local.json"
    if not (mcp.is_file() and settings.is_file()):
        return False
    hooks = json.loads(settings.read_text()).get("hooks", {})
    skill = home / ".claude" / "skills" / "reme-memory" / "SKILL.md"
    return (
        "reme" in json.loads(mcp.read_text())["mcpServers"]
        and set(installer.HOOKS) <= set(hooks)
        and skill.is_file()
    )


@pytest.mark.parametrize("first_undone", ["user", "project"])
def test_a_project_install_in_the_home_folder_keeps_the_user_install_and_its_own_record(
    home: Path, first_undone: str
) -> None:
    before = snapshot(home)
    assert reme(f"workspace_dir={home / 'memory'}") == 0
    assert reme("--project") == 0
    assert user_installed(home) and project_installed(home)
    records = {path.name for path in (home / ".claude").glob("reme-install*.json")}
    assert len(records) == 2  # one record per scope
    flags = {"user": [], "project": ["--project"]}
    second = "project" if first_undone == "user" else "user"
    assert reme(*flags[first_undone], "--uninstall") == 0
    assert (project_installed if second == "project" else user_installed)(home)
    assert reme(*flags[second], "--uninstall") == 0
    assert snapshot(home) == before


def test_a_reinstall_of_one_scope_leaves_the_other_whole(home: Path) -> None:
    assert reme(f"workspace_dir={home / 'memory'}") == 0
    assert reme("--project") == 0
    assert reme("--project", "--prompt-recall") == 0
    assert reme(f"workspace_dir={home / 'memory'}") == 0
    assert user_installed(home) and project_installed(home)


def test_uninstall_refuses_a_record_of_the_other_scope(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    assert reme("--project") == 0  # ~/.claude is not the user's config folder now: the usual record name
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    capsys.readouterr()
    installed = snapshot(home)
    assert reme("--uninstall") == 1
    assert "--project --uninstall" in capsys.readouterr().err
    assert snapshot(home) == installed


# vault import: two vaults under one folder, names that differ only in case ----------------------


def vault(root: Path, notes: dict[str, str], files: dict[str, bytes]) -> Path:
    for name, text in notes.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


async def run(app: ReMe, **params: Any) -> tuple[bool, str]:
    response = await app.run("import_obsidian", **params)
    return response.success, response.answer


async def test_an_attachment_of_another_vault_under_the_same_name_is_never_overwritten(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    work = vault(tmp_path / "work" / "Notes", {"plan.md": "![[panel.png]]\n"}, {"panel.png": PNG})
    home = vault(tmp_path / "home" / "Notes", {"diary.md": "![[panel.png]]\n"}, {"panel.png": b"other image"})
    assert (await run(app, source=str(work)))[0]
    base = workspace_dir / "imports" / "obsidian"
    first = files_under(base)
    ok, answer = await run(app, source=str(home))  # no note collides, the picture does
    assert not ok and "Notes/panel.png" in answer and "name=" in answer
    assert files_under(base) == first  # nothing written, the first vault's picture kept
    assert (await run(app, source=str(home), name="Home notes"))[0]
    assert (base / "Notes" / "panel.png").read_bytes() == PNG
    assert (base / "Home notes" / "panel.png").read_bytes() == b"other image"
    assert (await run(app, source=str(work)))[0]  # its own vault still re-imports
    (work / "panel.png").write_bytes(PNG + b"v2")
    assert (await run(app, source=str(work)))[0]
    assert (base / "Notes" / "panel.png").read_bytes() == PNG + b"v2"


async def test_an_attachment_differing_only_in_case_from_another_vaults_is_refused(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    work = vault(tmp_path / "work" / "Notes", {"plan.md": "![[Img.png]]\n"}, {"Img.png": PNG})
    home = vault(tmp_path / "home" / "Notes", {"diary.md": "![[img.png]]\n"}, {"img.png": b"other image"})
    assert (await run(app, source=str(work)))[0]
    ok, answer = await run(app, source=str(home))
    assert not ok and "Notes/img.png" in answer and "Notes/Img.png" in answer and "case" in answer
    assert sorted(files_under(workspace_dir / "imports" / "obsidian" / "Notes")) == ["Img.png", "plan.md"]
    assert (workspace_dir / "imports" / "obsidian" / "Notes" / "Img.png").read_bytes() == PNG


@pytest.mark.parametrize(
    ("notes", "files", "kept", "skipped"),
    [
        ({"Case.md": "upper\n", "case.md": "lower\n"}, {}, "Case.md", "case.md"),
        ({"a.md": "![[img.png]]\n"}, {"Img.png": PNG, "img.png": b"second"}, "Img.png", "img.png"),
        ({"Folder/a.md": "one\n", "folder/A.md": "two\n"}, {}, "Folder/a.md", "folder/A.md"),
    ],
)
async def test_of_two_vault_names_differing_only_in_case_the_second_is_skipped_not_written(
    app: ReMe,
    workspace_dir: Path,
    tmp_path: Path,
    notes: dict[str, str],
    files: dict[str, bytes],
    kept: str,
    skipped: str,
) -> None:
    source = vault(tmp_path / "Notes", notes, files)
    response = await app.run("import_obsidian", source=str(source))
    assert response.success, response.answer
    reasons = {entry["item"]: entry["reason"] for entry in response.metadata["skipped"]}
    assert "differs from it only in case" in reasons[skipped] and "rename" in reasons[skipped]
    copied = files_under(workspace_dir / "imports" / "obsidian" / "Notes")
    assert [name for name in copied if name.casefold() == kept.casefold()] == [kept]
    assert copied[kept].endswith(notes[kept].encode() if kept in notes else files[kept])


async def test_any_import_mapping_two_items_to_names_differing_only_in_case_writes_nothing(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    export = tmp_path / "mem0.json"
    memories = [{"id": "Pref", "memory": "Likes tea", "user_id": "alice"}]
    memories.append({"id": "pref", "memory": "Likes coffee", "user_id": "alice"})
    export.write_text(json.dumps({"results": memories}))
    response = await app.run("import_mem0", source=str(export))
    assert not response.success and "differ only in case" in response.answer and "rename" in response.answer
    assert not (workspace_dir / "imports" / "mem0").exists()
