"""import_claude_code: CLAUDE.md sections, `@` imports (bounded, Markdown only), auto-memory topic files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.pipelines.imports_support import DATA, files_under, front, run_ok
from tests.pipelines.port_jobs import PortApp, app_on_port_fixture, real_app_fixture  # noqa: F401  (the fixture)

from reme import ReMe


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    project = tmp_path / "acme"
    shutil.copytree(DATA, project, ignore=shutil.ignore_patterns("*.json"))
    return project


async def test_claude_md_sections_become_notes_and_imports_are_followed(
    real_app: ReMe, workspace_dir: Path, claude_project: Path
) -> None:
    app = real_app  # searches, writes or exports: jobs of the application
    meta = await run_ok(app, "import_claude_code", source=str(claude_project / "CLAUDE.md"))
    folder = workspace_dir / "imports" / "claude-code"
    assert sorted(meta["created"]) == sorted(
        [
            "imports/claude-code/acme-claude.md",
            "imports/claude-code/acme-claude/commands.md",
            "imports/claude-code/acme-claude/code-style.md",
            "imports/claude-code/acme-claude/code-style-2.md",
            "imports/claude-code/docs-architecture.md",
            "imports/claude-code/docs-storage.md",
        ]
    )
    # the missing personal file is reported, the import inside a code block is never followed
    assert [s["item"] for s in meta["skipped"]] == [
        f"@~/.claude/missing-personal-notes.md in {claude_project / 'CLAUDE.md'}"
    ]
    assert "never-followed" not in json.dumps(meta)
    style = (folder / "acme-claude" / "code-style.md").read_text(encoding="utf-8")
    assert "## Code style\n\n- Type hints everywhere" in style
    assert "## Not a section" in style  # code blocks stay inside their section
    keys = front(folder / "acme-claude" / "code-style.md")
    assert keys["name"] == "Code style"
    assert keys["source"] == "claude-code"
    assert keys["imported_from"] == str(claude_project / "CLAUDE.md")
    assert keys["import_id"] == f"{(claude_project / 'CLAUDE.md').resolve()}#code-style"
    overview = (folder / "acme-claude.md").read_text(encoding="utf-8")
    assert "This service is the public API of Acme." in overview
    assert "[[imports/claude-code/docs-architecture.md]]" in overview
    assert "[[imports/claude-code/docs-storage.md]]" in (folder / "docs-architecture.md").read_text()

    graph = (await app.run("traverse", path="imports/claude-code/acme-claude.md", depth=2)).metadata
    resolved = {edge["resolved"] for edge in graph["edges"]}
    assert "imports/claude-code/acme-claude/commands.md" in resolved
    assert "imports/claude-code/docs-storage.md" in resolved

    again = await run_ok(app, "import_claude_code", source=str(claude_project / "CLAUDE.md"))
    assert again["created"] == again["updated"] == []
    assert len(again["unchanged"]) == 6


async def test_a_changed_section_updates_only_its_note(
    app: PortApp, workspace_dir: Path, claude_project: Path
) -> None:
    entry = claude_project / "CLAUDE.md"
    await run_ok(app, "import_claude_code", source=str(entry))
    before = files_under(workspace_dir / "imports")
    entry.write_text(entry.read_text().replace("runs the tests", "runs the unit tests"), encoding="utf-8")
    meta = await run_ok(app, "import_claude_code", source=str(entry))
    assert meta["updated"] == ["imports/claude-code/acme-claude/commands.md"]
    assert meta["created"] == []
    after = files_under(workspace_dir / "imports")
    changed = {path for path in after if after[path] != before.get(path)}
    assert changed == {"claude-code/acme-claude/commands.md"}
    assert "runs the unit tests" in after["claude-code/acme-claude/commands.md"].decode()


async def test_auto_memory_index_brings_its_topic_files(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    memory = tmp_path / ".claude" / "projects" / "-home-alice-acme" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "- [User prefers uv](user_prefers_uv.md) — tooling preference\n"
        "- [Flaky CI test](<project flaky ci.md>) — known flake\n"
        "- [The docs](https://docs.example.org/guide.md) are online.\n",
        encoding="utf-8",
    )
    (memory / "user_prefers_uv.md").write_text(
        "---\nname: User prefers uv\ndescription: The user wants uv, never pip\ntype: feedback\n---\n"
        "Use `uv add`, never `pip install`.\n",
        encoding="utf-8",
    )
    (memory / "project flaky ci.md").write_text("test_upload fails about one run in ten.\n", encoding="utf-8")
    meta = await run_ok(app, "import_claude_code", source=str(memory / "MEMORY.md"))
    assert sorted(meta["created"]) == [
        "imports/claude-code/home-alice-acme-memory.md",
        "imports/claude-code/home-alice-acme-project-flaky-ci.md",
        "imports/claude-code/home-alice-acme-user-prefers-uv.md",
    ]
    topic = front(workspace_dir / "imports/claude-code/home-alice-acme-user-prefers-uv.md")
    assert (topic["name"], topic["type"]) == ("User prefers uv", "feedback")
    index = (workspace_dir / "imports/claude-code/home-alice-acme-memory.md").read_text()
    assert "[[imports/claude-code/home-alice-acme-user-prefers-uv.md]]" in index
    # the memory folder itself gives the same notes: nothing new
    folder = await run_ok(app, "import_claude_code", source=str(memory))
    assert folder["created"] == folder["updated"] == [] and len(folder["unchanged"]) == 3


async def test_claude_md_imports_never_pull_secrets_or_files_outside_the_project(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "cloned-repo"
    project.mkdir()
    (tmp_path / "outside.md").write_text("private notes\n")
    (project / ".env").write_text("API_KEY=sk-live-123\n")
    (project / "CLAUDE.md").write_text("# Rules\n\nSee @../outside.md, @.env and @/etc/hostname.\n")
    meta = await run_ok(app, "import_claude_code", source=str(project / "CLAUDE.md"))
    reasons = {entry["item"].split(" ")[0]: entry["reason"] for entry in meta["skipped"]}
    assert set(reasons) == {"@../outside.md", "@.env", "@/etc/hostname"}
    assert "is outside" in reasons["@../outside.md"] and "is outside" in reasons["@/etc/hostname"]
    assert "hidden file" in reasons["@.env"]
    assert meta["created"] == ["imports/claude-code/cloned-repo-claude.md"]
    everything = b"".join(files_under(workspace_dir / "imports").values())
    assert b"sk-live" not in everything and b"private notes" not in everything


async def test_claude_md_follows_only_memory_markdown_under_the_claude_home(
    app: PortApp, workspace_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    claude = home / ".claude"
    (claude / "rules").mkdir(parents=True)
    (claude / "projects" / "-repo").mkdir(parents=True)
    (claude / "settings.json").write_text('{"env": {"API_TOKEN": "settings-secret-1"}}\n')
    (claude / "history.jsonl").write_text('{"display": "history-secret-2"}\n')
    (claude / "projects" / "-repo" / "abc.jsonl").write_text('{"t": "transcript-secret-3"}\n')
    (claude / "projects" / "-repo" / "notes.md").write_text("transcript-adjacent-4\n")
    (claude / "CLAUDE.md").write_text("# Mine\n\npersonal-rules-5\n")
    (claude / "rules" / "style.md").write_text("# Style\n\nstyle-rule-6\n")
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "cloned-repo"
    project.mkdir()
    (project / "notes.txt").write_text("plain-text-7\n")
    (project / "CLAUDE.md").write_text(
        "# Rules\n\n@~/.claude/settings.json @~/.claude/history.jsonl @~/.claude/projects/-repo/abc.jsonl "
        "@~/.claude/projects/-repo/notes.md @notes.txt @~/.claude/CLAUDE.md @~/.claude/rules/style.md\n\n"
        "password=hunter2hunter2\n"
    )
    meta = await run_ok(app, "import_claude_code", source=str(project / "CLAUDE.md"))
    refused = {entry["item"].split(" ")[0] for entry in meta["skipped"]}
    assert refused == {
        "@~/.claude/settings.json",
        "@~/.claude/history.jsonl",
        "@~/.claude/projects/-repo/abc.jsonl",
        "@~/.claude/projects/-repo/notes.md",
        "@notes.txt",
    }
    everything = b"".join(files_under(workspace_dir / "imports").values())
    for leak in (b"secret-1", b"secret-2", b"secret-3", b"adjacent-4", b"plain-text-7", b"hunter2hunter2"):
        assert leak not in everything
    assert b"personal-rules-5" in everything and b"style-rule-6" in everything
    assert b"[REDACTED:password-assignment]" in everything


async def test_an_import_chain_longer_than_the_cap_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for number in range(4):
        (project / f"f{number}.md").write_text(f"# File {number}\n\nNext: @f{number + 1}.md\n")
    (project / "CLAUDE.md").write_text("Start at @f0.md\n")
    steps = [{"backend": "import_claude_code", "max_items": 3}]
    async with ReMe(
        workspace_dir=tmp_path / "ws", timezone="UTC", **{"jobs.import_claude_code.steps": steps}
    ) as app:
        response = await app.run("import_claude_code", source=str(project / "CLAUDE.md"))
    assert not response.success and "imports more than 3 files (max_items)" in response.answer
    assert not (tmp_path / "ws" / "imports").exists()


async def test_imports_are_followed_five_hops_deep_as_claude_code_does(app: PortApp, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for number in range(7):
        (project / f"f{number}.md").write_text(f"File {number}; next: @f{number + 1}.md\n")
    (project / "CLAUDE.md").write_text("Start at @f0.md\n")
    meta = await run_ok(app, "import_claude_code", source=str(project / "CLAUDE.md"))
    assert sorted(meta["created"]) == [
        f"imports/claude-code/p-{name}.md" for name in ("claude", "f0", "f1", "f2", "f3", "f4")
    ]
    assert meta["skipped"] == [
        {"item": f"@f5.md in {(project / 'f4.md').resolve()}", "reason": "more than 5 hops deep"}
    ]
