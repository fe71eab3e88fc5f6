"""Imports (Claude Code memory files, ChatGPT, mem0, Obsidian) and the digest export, through the jobs.

Fixtures are hand-written in each real format (`imports_data/`; the Obsidian vault is built per test).
Every test asserts the files on disk, and every import is run twice: the second run creates nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, scripted
from tests.pipelines.test_auto_memory import card_script

from reme import ReMe
from reme.pipelines.export_digest import parse_bundle
from reme.workspace import frontmatter
from reme.workspace.wikilinks import parse_links

DATA = Path(__file__).with_name("imports_data")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def front(path: Path) -> dict[str, Any]:
    return frontmatter.parse(path.read_text(encoding="utf-8")).metadata


def transcript(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def run_ok(app: ReMe, job: str, **params: Any) -> dict[str, Any]:
    response = await app.run(job, **params)
    assert response.success, response.answer
    return response.metadata


# Claude Code ----------------------------------------------------------------------------------


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    project = tmp_path / "acme"
    shutil.copytree(DATA, project, ignore=shutil.ignore_patterns("*.json"))
    return project


async def test_claude_md_sections_become_notes_and_imports_are_followed(
    app: ReMe, workspace_dir: Path, claude_project: Path
) -> None:
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
    app: ReMe, workspace_dir: Path, claude_project: Path
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


# ChatGPT --------------------------------------------------------------------------------------


async def test_chatgpt_export_keeps_only_the_branch_the_user_saw(app: ReMe, workspace_dir: Path) -> None:
    meta = await run_ok(app, "import_chatgpt", source=str(DATA / "conversations.json"))
    kyoto_id = "chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab"
    kyoto = transcript(workspace_dir / "session" / "dialog" / f"{kyoto_id}.jsonl")
    assert [m["id"] for m in kyoto] == ["u1", "a1", "u2b", "a2b", "a3"]  # no system, hidden, old branch, tool
    assert kyoto[2]["content"].startswith("[image]\nMake it 5 days, with a day in Nara.")
    assert kyoto[3]["content"].startswith("[tool call python: ")
    assert kyoto[0]["created_at"] == "2024-06-01T00:00:00.500000+00:00"
    assert "vegetarian" not in json.dumps(kyoto) and "regenerated away" not in json.dumps(kyoto)
    # a conversation without current_node follows the last child from the root
    sourdough = transcript(
        workspace_dir / "session" / "dialog" / "chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl"
    )
    assert [m["role"] for m in sourdough] == ["user", "assistant"]
    note = workspace_dir / "imports" / "chatgpt" / "6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md"
    keys = front(note)
    assert keys["name"] == "Trip to Kyoto"
    assert keys["source"] == "chatgpt"
    assert keys["source_conversation"] == f"[[session/dialog/{kyoto_id}.jsonl]]"
    assert keys["import_id"] == "6650a1b2-0c3d-4e5f-8a9b-0123456789ab"
    assert {s["item"].split(" ", 1)[0] for s in meta["skipped"]} == {"conversations[2]", "conversations[3]"}
    assert len(meta["created"]) == 4  # two transcripts, two notes

    hits = (await app.run("search", query="Nara five day plan", limit=3)).metadata["results"]
    assert any(hit["path"] == f"session/dialog/{kyoto_id}.jsonl" for hit in hits)

    again = await run_ok(app, "import_chatgpt", source=str(DATA))  # the export folder works too
    assert again["created"] == again["updated"] == []
    assert len(again["unchanged"]) == 4


async def test_a_chatgpt_export_is_redacted_like_a_captured_session(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    data = json.loads((DATA / "conversations.json").read_text())
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    data[1]["mapping"]["q"]["message"]["content"]["parts"] = [f"my key is {secret}, keep it safe"]
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    await run_ok(app, "import_chatgpt", source=str(export))
    written = "".join(
        p.read_text(encoding="utf-8")
        for p in workspace_dir.rglob("*")
        if p.is_file() and "metadata" not in p.parts
    )
    assert secret not in written and "keep it safe" in written


async def test_a_longer_chatgpt_conversation_adds_only_its_new_turns(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    data = json.loads((DATA / "conversations.json").read_text())
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    await run_ok(app, "import_chatgpt", source=str(export))
    path = workspace_dir / "session" / "dialog" / "chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl"
    first = path.read_text(encoding="utf-8")
    mapping = data[1]["mapping"]
    mapping["r"]["children"] = ["q2"]
    mapping["q2"] = {
        "id": "q2",
        "parent": "r",
        "children": [],
        "message": {
            "id": "q2",
            "author": {"role": "user"},
            "create_time": 1718000900.0,
            "content": {"content_type": "text", "parts": ["And in the fridge?"]},
        },
    }
    export.write_text(json.dumps(data[1:2]), encoding="utf-8")
    meta = await run_ok(app, "import_chatgpt", source=str(export), queue_distillation=True)
    assert meta["updated"] == [
        "imports/chatgpt/7770c0de-0000-4000-8000-000000000002.md",
        "session/dialog/chatgpt-7770c0de-0000-4000-8000-000000000002.jsonl",
    ]
    second = path.read_text(encoding="utf-8")
    assert second.startswith(first) and [m["id"] for m in transcript(path)] == ["q", "r", "q2"]
    # the changed conversation waits for auto_memory_pending as a pending card
    [card] = meta["pending_cards"]
    card_front = front(workspace_dir / card)
    assert card_front["pending"] is True
    assert card_front["session_id"] == "chatgpt-7770c0de-0000-4000-8000-000000000002"
    assert card.startswith("daily/2024-06-10/")


# mem0 -----------------------------------------------------------------------------------------


async def test_mem0_memories_become_one_note_each(app: ReMe, workspace_dir: Path, tmp_path: Path) -> None:
    meta = await run_ok(app, "import_mem0", source=str(DATA / "mem0.json"))
    assert sorted(meta["created"]) == [
        "imports/mem0/alice/3c90c3cc-0d44-4b50-8888-8dd25736052a.md",
        "imports/mem0/alice/5d7a1e2f-1111-4c2b-9d3e-abcdefabcdef.md",
        "imports/mem0/travel-bot/agent-note-1.md",
    ]
    assert [s["reason"] for s in meta["skipped"]] == ["no id", "no memory text"]
    note = workspace_dir / "imports/mem0/alice/3c90c3cc-0d44-4b50-8888-8dd25736052a.md"
    keys = front(note)
    assert keys["memory_id"] == keys["import_id"] == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert keys["user_id"] == "alice" and keys["categories"] == ["preferences", "food"]
    assert keys["mem0_metadata"] == {"source": "chat", "confidence": 0.9}
    assert keys["source"] == "mem0"
    assert frontmatter.parse(note.read_text()).body == "Prefers green tea over coffee in the morning\n"
    hits = (await app.run("search", query="green tea coffee", limit=1)).metadata["results"]
    assert hits[0]["path"] == "imports/mem0/alice/3c90c3cc-0d44-4b50-8888-8dd25736052a.md"

    data = json.loads((DATA / "mem0.json").read_text())
    data["results"][1]["memory"] = "Is training for the Berlin marathon on 29 September"
    changed = tmp_path / "mem0.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    again = await run_ok(app, "import_mem0", source=str(changed))
    assert again["updated"] == ["imports/mem0/alice/5d7a1e2f-1111-4c2b-9d3e-abcdefabcdef.md"]
    assert again["created"] == [] and len(again["unchanged"]) == 2


# Obsidian -------------------------------------------------------------------------------------


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
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    base = workspace_dir / "imports" / "obsidian" / "my-vault"
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
    prefix = "imports/obsidian/my-vault"
    assert home.startswith("---\n# my own front matter, comments kept\ntags: [index]\naliases: [Start]\n")
    assert f"[[{prefix}/Projects/Solar.md|the solar plan]]" in home
    assert f"[[{prefix}/Projects/Solar.md#Budget]]" in home
    assert f"![[{prefix}/attachments/panel.png]]" in home
    assert f"[[{prefix}/Daily/Meeting 2024-06-01.md]]" in home
    assert "[[Not written yet]]" in home and "`[[inside code]]`" in home
    keys = front(base / "Home.md")
    assert keys["source"] == "https://example.org"  # the user's own key wins
    assert keys["imported_from"] == str(vault) and keys["import_id"] == "Home.md"
    # the same folder first, then the shortest path; aliases resolve; front-matter links too
    brainstorm = (base / "Projects" / "Ideas" / "Brainstorm.md").read_text()
    assert f"[[{prefix}/Projects/Ideas/Solar.md]]" in brainstorm
    assert f"[[{prefix}/Projects/Solar.md|the plan]]" in brainstorm
    solar = (base / "Projects" / "Solar.md").read_text()
    assert f"[[{prefix}/Home.md]]" in solar and f"up: '[[{prefix}/Home.md]]'" in solar

    graph = (await app.run("traverse", path=f"{prefix}/Home.md", depth=1, direction="forward")).metadata
    edges = {(e["target"], e["resolved"]) for e in graph["edges"]}
    assert (f"{prefix}/Projects/Solar.md", f"{prefix}/Projects/Solar.md") in edges
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
    app: ReMe, workspace_dir: Path, tmp_path: Path
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
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault), name="notes")
    note = workspace_dir / "imports" / "obsidian" / "notes" / "Projects" / "Ideas" / "Solar.md"
    note.write_text(note.read_text() + "\nMy own addition.\n", encoding="utf-8")
    meta = await run_ok(app, "import_obsidian", source=str(vault), name="notes")
    assert meta["updated"] == [] and "My own addition." in note.read_text()


# bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "content", "expected"),
    [
        ("import_chatgpt", '[{"title": "x", "mapping": ', "is not valid JSON"),
        ("import_mem0", '{"results": 3}', "a mem0 export is a JSON array"),
        ("import_mem0", (DATA / "conversations.json").read_text(), "this is not a mem0 export"),
        ("import_chatgpt", (DATA / "mem0.json").read_text(), "is a JSON array of conversations"),
        ("import_chatgpt", '[{"title": "x"}]', "not a ChatGPT conversations.json"),
        ("import_chatgpt", "\x00\x01binary", "holds binary data, not text"),
        ("import_mem0", "[" * 100_000 + "]" * 100_000, "nests its JSON too deeply"),
    ],
)
async def test_bad_sources_are_refused_and_nothing_is_written(
    app: ReMe, workspace_dir: Path, tmp_path: Path, job: str, content: str, expected: str
) -> None:
    source = tmp_path / "export.json"
    source.write_text(content, encoding="utf-8")
    response = await app.run(job, source=str(source))
    assert not response.success
    assert expected in response.answer
    assert not (workspace_dir / "imports").exists()
    assert not list((workspace_dir / "session").rglob("*.jsonl"))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"source": "/nonexistent/conversations.json"}, "does not exist"),
        ({"source": str(DATA / "conversations.json"), "folder": "digest/wiki"}, "inside digest/"),
        ({"source": str(DATA / "conversations.json"), "folder": "../outside"}, ".."),
        ({"source": str(DATA / "conversations.json"), "shell": "rm -rf /"}, "shell"),
    ],
)
async def test_bad_parameters_are_refused(
    app: ReMe, workspace_dir: Path, params: dict[str, Any], expected: str
) -> None:
    response = await app.run("import_chatgpt", **params)
    assert not response.success
    assert expected in response.answer
    assert not (workspace_dir / "imports").exists()


async def test_a_note_in_the_way_refuses_the_whole_import(app: ReMe, workspace_dir: Path) -> None:
    mine = workspace_dir / "imports" / "mem0" / "alice" / "5d7a1e2f-1111-4c2b-9d3e-abcdefabcdef.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own note\n", encoding="utf-8")
    response = await app.run("import_mem0", source=str(DATA / "mem0.json"))
    assert not response.success
    assert "were not written by this import" in response.answer
    assert response.metadata["conflicts"] == ["imports/mem0/alice/5d7a1e2f-1111-4c2b-9d3e-abcdefabcdef.md"]
    assert files_under(workspace_dir / "imports") == {
        "mem0/alice/5d7a1e2f-1111-4c2b-9d3e-abcdefabcdef.md": b"my own note\n"
    }


async def test_dry_run_reports_and_writes_nothing(app: ReMe, workspace_dir: Path) -> None:
    meta = await run_ok(app, "import_mem0", source=str(DATA / "mem0.json"), dry_run=True)
    assert len(meta["created"]) == 3 and meta["dry_run"] is True
    assert not (workspace_dir / "imports").exists()


def test_import_jobs_are_never_served() -> None:
    from reme.app.config import load_config
    from reme.app.jobs import build_job
    from reme.app.registry import load_plugins

    load_plugins()
    jobs = {name: build_job(name, raw) for name, raw in load_config(None, {})["jobs"].items()}
    for name in ("import_claude_code", "import_chatgpt", "import_mem0", "import_obsidian"):
        assert not jobs[name].served
    assert jobs["export_digest"].served


# export ---------------------------------------------------------------------------------------


async def make_digest(app: ReMe) -> None:
    await run_ok(
        app, "write", path="daily/2026-06-20/session.md", content="Weekly releases after the outage.\n"
    )
    await run_ok(
        app,
        "digest_write",
        path="digest/procedure/weekly-release.md",
        description="How we release: weekly, with a rollback rule.",
        content="# Weekly release\n\nShip on Tuesdays; see [[digest/wiki/rollback.md#rule|the rule]].\n\n"
        "```yaml\nnot: front matter\n```\n\n## Sources\n"
        "- derived_from:: [[daily/2026-06-20/session.md]] — the team chose weekly releases.\n",
        metadata={"tags": ["release"], "related": "[[digest/wiki/rollback.md]]"},
    )
    await run_ok(
        app,
        "digest_write",
        path="digest/wiki/rollback.md",
        description="Roll back first, debug later.",
        content="## rule\n\nRoll back within 10 minutes.\n\n## Sources\n"
        "- derived_from:: [[daily/2026-06-20/session.md]] — the outage postmortem.",
    )


async def test_export_round_trips_markdown_and_json(app: ReMe, workspace_dir: Path) -> None:
    await make_digest(app)
    bundle = await app.run("export_digest")
    assert bundle.success and isinstance(bundle.answer, str)
    as_json = await app.run("export_digest", format="json")
    assert as_json.success
    nodes = as_json.answer["nodes"]
    assert [n["path"] for n in nodes] == ["digest/procedure/weekly-release.md", "digest/wiki/rollback.md"]
    assert parse_bundle(bundle.answer) == nodes
    release = nodes[0]
    on_disk = (workspace_dir / "digest/procedure/weekly-release.md").read_text(encoding="utf-8")
    assert release["body"] == frontmatter.parse(on_disk).body
    assert release["front_matter"]["tags"] == ["release"]
    assert {
        "target": "digest/wiki/rollback.md",
        "predicate": None,
        "anchor": "rule",
        "alias": "the rule",
        "embed": False,
    } in release["edges"]
    assert {
        "target": "digest/wiki/rollback.md",
        "predicate": "related",
        "anchor": None,
        "alias": None,
        "embed": False,
    } in release["edges"]
    assert {(link.target, link.predicate) for link in parse_links(on_disk)} == {
        (e["target"], e["predicate"]) for e in release["edges"]
    }
    assert nodes[1]["body"].endswith("the outage postmortem.")  # no final newline, kept so
    only_wiki = await app.run("export_digest", format="json", bucket="wiki")
    assert [n["path"] for n in only_wiki.answer["nodes"]] == ["digest/wiki/rollback.md"]
    assert not (await app.run("export_digest", bucket="../daily")).success


async def test_auto_memory_index_brings_its_topic_files(
    app: ReMe, workspace_dir: Path, tmp_path: Path
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


def test_assistant_calls_to_tools_become_tool_call_notes() -> None:
    from reme.pipelines.import_chatgpt import message_of

    node = {
        "id": "d1",
        "message": {
            "id": "d1",
            "author": {"role": "assistant"},
            "recipient": "dalle.text2im",
            "content": {"content_type": "text", "parts": ['{"prompt": "a fox in snow"}']},
        },
    }
    message = message_of(node)
    assert message is not None
    assert message["content"] == [
        {"type": "tool_use", "name": "dalle.text2im", "input": '{"prompt": "a fox in snow"}'}
    ]
    assert (
        message_of({"id": "x", "message": {"id": "x", "author": {"role": "tool"}, "content": "out"}}) is None
    )


async def test_an_attachment_changed_in_the_workspace_is_never_overwritten(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault))
    copy = workspace_dir / "imports/obsidian/my-vault/attachments/panel.png"
    copy.write_bytes(b"edited by hand")
    (vault / "attachments" / "panel.png").write_bytes(PNG + b"v2")
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert {
        "item": "attachments/panel.png",
        "reason": "imports/obsidian/my-vault/attachments/panel.png exists with other content",
    } in meta["skipped"]
    assert copy.read_bytes() == b"edited by hand"


async def test_a_changed_attachment_in_the_vault_updates_its_copy(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    vault = make_vault(tmp_path)
    await run_ok(app, "import_obsidian", source=str(vault))
    (vault / "attachments" / "panel.png").write_bytes(PNG + b"v2")
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert meta["updated"] == ["imports/obsidian/my-vault/attachments/panel.png"]
    assert (workspace_dir / "imports/obsidian/my-vault/attachments/panel.png").read_bytes() == PNG + b"v2"


async def test_claude_md_imports_never_pull_secrets_or_files_outside_the_project(
    app: ReMe, workspace_dir: Path, tmp_path: Path
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
    app: ReMe, workspace_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
    assert b"[REDACTED:secret_assignment]" in everything


async def test_queued_conversations_are_distilled_later_by_auto_memory_pending(make_app: MakeApp) -> None:
    app = await make_app(**scripted(card_script("- learned from ChatGPT\n", "From $session_id")))
    meta = await run_ok(
        app, "import_chatgpt", source=str(DATA / "conversations.json"), queue_distillation=True
    )
    assert sorted(meta["pending_cards"]) == [
        "daily/2024-06-01/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md",
        "daily/2024-06-10/chatgpt-7770c0de-0000-4000-8000-000000000002.md",
    ]
    distilled = await run_ok(app, "auto_memory_pending")
    assert len(distilled["distilled"]) == 2
    card = app.workspace_dir / "daily/2024-06-01/from-chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.md"
    keys = front(card)
    assert "pending" not in keys
    assert (
        keys["source_conversation"] == "[[session/dialog/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.jsonl]]"
    )
    assert "learned from ChatGPT" in card.read_text()
    # a re-import of the same export queues nothing and leaves the distilled cards alone
    again = await run_ok(
        app, "import_chatgpt", source=str(DATA / "conversations.json"), queue_distillation=True
    )
    assert again["pending_cards"] == [] and "pending" not in front(card)


async def test_obsidian_notes_reme_cannot_hold_are_skipped_with_the_reason(
    app: ReMe, workspace_dir: Path, tmp_path: Path
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


def test_the_bundle_keeps_bodies_that_look_like_its_own_syntax() -> None:
    from reme.pipelines.export_digest import as_bundle, node_of

    texts = {
        "digest/wiki/bare.md": "```yaml\nkey: in the body\n```\n\nNo front matter; see [[digest/wiki/odd.md]].\n",
        "digest/wiki/odd.md": '---\nname: odd\nnote: "```"\n---\n<!-- reme:node path="x" -->\n\n\n',
        "digest/wiki/empty.md": "",
    }
    nodes = [node_of(path, text) for path, text in texts.items()]
    bundle = as_bundle(nodes, texts, "2026-06-21T09:00:00+00:00")
    assert parse_bundle(bundle) == nodes
    with pytest.raises(ValueError, match="has no end marker"):
        parse_bundle(bundle.replace('<!-- reme:end path="digest/wiki/odd.md" -->', ""))


@pytest.mark.parametrize(
    "text",
    [
        "plain note without front matter\n",
        "---\ntags: [a, b]   # a comment\n---\nbody\n",
        "---\n---\nempty front matter\n",
        "---\r\ntags: [a]\r\n---\r\nwindows line endings\r\n",
        "---\n{tags: [a]}\n---\nflow style mapping\n",
        "---\nimport_id: someone else's\n---\nkey already there\n",
    ],
)
def test_provenance_is_merged_into_any_front_matter(text: str) -> None:
    from reme.pipelines.imports import ImportedNote, stamped

    note = ImportedNote("imports/x/n.md", text, "n.md")
    result = frontmatter.parse(stamped(note, "obsidian", "/vault"))
    own = frontmatter.parse(text)
    assert result.metadata == {
        **own.metadata,
        "source": "obsidian",
        "imported_from": "/vault",
        "import_id": "n.md",
        "import_sha256": note.sha256,
    }
    assert result.body == own.body


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


async def test_imports_are_followed_five_hops_deep_as_claude_code_does(app: ReMe, tmp_path: Path) -> None:
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


def test_uploaded_files_are_named_and_the_answering_model_kept() -> None:
    from reme.pipelines.import_chatgpt import message_of

    upload = {
        "id": "u9",
        "message": {
            "id": "u9",
            "author": {"role": "user"},
            "content": {"content_type": "text", "parts": ["Summarise this."]},
            "metadata": {"attachments": [{"id": "file-1", "name": "report.pdf", "size": 1200}]},
        },
    }
    assert message_of(upload)["content"] == ["Summarise this.", "[attachment: report.pdf]"]  # type: ignore[index]
    answer = {
        "id": "a9",
        "message": {
            "id": "a9",
            "author": {"role": "assistant"},
            "content": {"content_type": "text", "parts": ["It says..."]},
            "metadata": {"model_slug": "gpt-4o"},
        },
    }
    assert message_of(answer)["metadata"] == {"model": "gpt-4o"}  # type: ignore[index]
