"""import_obsidian: a vault copied with its links resolvable, attachments, symlinks and the workspace inside it."""

from __future__ import annotations

from pathlib import Path

from tests.pipelines.imports_support import PNG, files_under, front, run_ok
from tests.pipelines.port_jobs import PortApp, app_on_port_fixture, real_app_fixture  # noqa: F401  (the fixture)

from reme import ReMe


def make_vault(root: Path) -> Path:
    vault = root / "My Vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text('{"useMarkdownLinks": false}')
    (vault / ".obsidian" / "workspace.json").write_text("{}")
    (vault / "Projects" / "Ideas").mkdir(parents=True)
    (vault / "attachments").mkdir()
    (vault / "Daily").mkdir()
    (vault / "Home.md").write_text(
        "---\n# my own front matter, comments kept\ntags: [index]\naliases: [Start]\nsource: https://example.org\n---\n"
        "# Home\n\nSee [[Solar]], [[Solar|the solar plan]] and [[Solar#Budget]].\n"
        "![[panel.png]]\n\nMet on [[Meeting 2024-06-01]]. Someday: [[Not written yet]].\n"
        "`[[inside code]]` is no link.\n",
        encoding="utf-8",
    )
    (vault / "Projects" / "Solar.md").write_text(
        "---\nup: '[[Home]]'\n---\n# Solar\n\nBack to [[Start]].\n\n## Budget\n\n12 kW for 9000 EUR.\n",
        encoding="utf-8",
    )
    (vault / "Projects" / "Ideas" / "Solar.md").write_text(
        "# Solar ideas\n\nBatteries later.\n", encoding="utf-8"
    )
    (vault / "Projects" / "Ideas" / "Brainstorm.md").write_text(
        "Compare [[Solar]] with [[../Solar.md|the plan]].\n", encoding="utf-8"
    )
    (vault / "Daily" / "Meeting 2024-06-01.md").write_text(
        "Agreed on [[Projects/Solar]].\n", encoding="utf-8"
    )
    (vault / "attachments" / "panel.png").write_bytes(PNG)
    (vault / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    return vault


async def test_obsidian_vault_is_copied_with_links_resolvable(
    real_app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    app = real_app  # searches, writes or exports: jobs of the application
    vault = make_vault(tmp_path)
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    base = workspace_dir / "imports" / "obsidian" / "My Vault"  # the vault's folder name as written
    assert sorted(files_under(base)) == [
        "Daily/Meeting 2024-06-01.md",
        "Home.md",
        "Projects/Ideas/Brainstorm.md",
        "Projects/Ideas/Solar.md",
        "Projects/Solar.md",
        "attachments/panel.png",
    ]
    assert not (base / ".obsidian").exists()
    assert meta["skipped"] == [{"item": "latin1.md", "reason": "a .md file that is not UTF-8 text"}]
    assert (base / "attachments" / "panel.png").read_bytes() == PNG
    home = (base / "Home.md").read_text(encoding="utf-8")
    prefix = "imports/obsidian/My Vault"
    assert home.startswith("---\n# my own front matter, comments kept\ntags: [index]\naliases: [Start]\n")
    # links that resolve the same way in the workspace stay as written; an ambiguous one gets the
    # shortest spelling that resolves (two notes are called Solar)
    assert "See [[Projects/Solar]], [[Projects/Solar|the solar plan]] and [[Projects/Solar#Budget]]." in home
    assert f"![[{prefix}/attachments/panel.png]]" in home  # attachments resolve by full path only
    assert "[[Meeting 2024-06-01]]" in home
    assert "[[Not written yet]]" in home and "`[[inside code]]`" in home
    keys = front(base / "Home.md")
    assert keys["source"] == "https://example.org"  # the user's own key wins
    assert keys["imported_from"] == str(vault) and keys["import_id"] == "Home.md"
    assert keys["name"] == "Home"  # a note without a name is called by its file name
    # the same folder first, then the shortest path; aliases resolve; front-matter links too
    brainstorm = (base / "Projects" / "Ideas" / "Brainstorm.md").read_text()
    assert "Compare [[Ideas/Solar]] with [[Projects/Solar|the plan]]." in brainstorm
    solar = (base / "Projects" / "Solar.md").read_text()
    assert "Back to [[Home]]." in solar and "up: '[[Home]]'" in solar
    assert "Agreed on [[Projects/Solar]]." in (base / "Daily" / "Meeting 2024-06-01.md").read_text()
    assert meta["links"] == {"kept": 3, "rewritten": 7, "unresolved": 1}

    graph = (await app.run("traverse", path=f"{prefix}/Home.md", depth=1, direction="forward")).metadata
    edges = {(e["target"], e["resolved"]) for e in graph["edges"]}
    assert ("Projects/Solar", f"{prefix}/Projects/Solar.md") in edges
    assert (f"{prefix}/attachments/panel.png", f"{prefix}/attachments/panel.png") in edges
    assert ("Not written yet", None) in edges
    back = (
        await app.run("traverse", path=f"{prefix}/Projects/Solar.md", depth=1, direction="backward")
    ).metadata
    assert {f"{prefix}/Home.md", f"{prefix}/Daily/Meeting 2024-06-01.md"} <= {
        n["path"] for n in back["nodes"]
    }

    again = await run_ok(app, "import_obsidian", source=str(vault))
    assert again["created"] == again["updated"] == [] and len(again["unchanged"]) == 6


async def test_obsidian_symlink_out_of_the_vault_refuses_everything(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    secret = tmp_path / "secret.md"
    secret.write_text("private key\n")
    (vault / "Projects" / "leak.md").symlink_to(secret)
    response = await app.run("import_obsidian", source=str(vault))
    assert not response.success
    assert "symbolic link leading out of" in response.answer
    assert not (workspace_dir / "imports").exists()


async def test_user_edits_survive_a_reimport_of_an_unchanged_source(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault), name="notes")
    note = workspace_dir / "imports" / "obsidian" / "notes" / "Projects" / "Ideas" / "Solar.md"
    note.write_text(note.read_text() + "\nMy own addition.\n", encoding="utf-8")
    meta = await run_ok(app, "import_obsidian", source=str(vault), name="notes")
    assert meta["updated"] == [] and "My own addition." in note.read_text()


async def test_an_attachment_changed_in_the_workspace_is_never_overwritten(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault))
    copy = workspace_dir / "imports/obsidian/My Vault/attachments/panel.png"
    copy.write_bytes(b"edited by hand")
    (vault / "attachments" / "panel.png").write_bytes(PNG + b"v2")
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert {
        "item": "attachments/panel.png",
        "reason": "imports/obsidian/My Vault/attachments/panel.png exists with other content",
    } in meta["skipped"]
    assert copy.read_bytes() == b"edited by hand"


async def test_a_changed_attachment_in_the_vault_updates_its_copy(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault))
    (vault / "attachments" / "panel.png").write_bytes(PNG + b"v2")
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert meta["updated"] == ["imports/obsidian/My Vault/attachments/panel.png"]
    assert (workspace_dir / "imports/obsidian/My Vault/attachments/panel.png").read_bytes() == PNG + b"v2"


async def test_obsidian_notes_reme_cannot_hold_are_skipped_with_the_reason(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "ok.md").write_text("fine\n")
    (vault / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (vault / "what?.md").write_text("a name Windows cannot hold\n")
    (vault / "spoof\u202egpj.md").write_text("a right-to-left override\n")
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert meta["created"] == ["imports/obsidian/v/ok.md"]
    reasons = {entry["item"]: entry["reason"] for entry in meta["skipped"]}
    assert "front matter is not valid YAML" in reasons["broken.md"]
    assert "reserved character" in reasons["what?.md"]
    assert "invisible character U+202E" in reasons["spoof\u202egpj.md"]
    assert not (workspace_dir / "imports/obsidian/v/broken.md").exists()
    again = await run_ok(app, "import_obsidian", source=str(vault))
    assert again["unchanged"] == ["imports/obsidian/v/ok.md"]


async def test_a_vault_holding_the_workspace_never_copies_it_into_itself(tmp_path: Path) -> None:
    vault = make_vault(tmp_path)
    workspace = vault / "Projects" / "reme-notes"
    async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
        first = await run_ok(app, "import_obsidian", source=str(vault))
        assert {"item": "Projects/reme-notes", "reason": "the workspace itself"} in first["skipped"]
        again = await run_ok(app, "import_obsidian", source=str(vault))
        assert again["created"] == [] and again["updated"] == []
        inside = await app.run("import_obsidian", source=str(workspace / "imports"))
        assert not inside.success and "inside the workspace" in inside.answer
