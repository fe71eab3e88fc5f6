"""Imports shared by every format (bad input, dry runs, never served), mem0, and the digest export.

Fixtures are hand-written in each real format (`imports_data/`; the Obsidian vault is built per test).
Every test asserts the files on disk, and every import is run twice: the second run creates nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.imports_support import DATA, files_under, front, run_ok
from tests.pipelines.port_jobs import PortApp, app_on_port_fixture, real_app_fixture  # noqa: F401  (the fixture)

from reme import ReMe
from reme.pipelines.digest.export import parse_bundle
from reme.workspace import frontmatter
from reme.workspace.wikilinks import parse_links


async def test_mem0_memories_become_one_note_each(
    real_app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    app = real_app  # searches, writes or exports: jobs of the application
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
    app: PortApp, workspace_dir: Path, tmp_path: Path, job: str, content: str, expected: str
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
    app: PortApp, workspace_dir: Path, params: dict[str, Any], expected: str
) -> None:
    response = await app.run("import_chatgpt", **params)
    assert not response.success
    assert expected in response.answer
    assert not (workspace_dir / "imports").exists()


async def test_a_note_in_the_way_refuses_the_whole_import(app: PortApp, workspace_dir: Path) -> None:
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


async def test_dry_run_reports_and_writes_nothing(app: PortApp, workspace_dir: Path) -> None:
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


async def make_digest(app: PortApp) -> None:
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


async def test_export_round_trips_markdown_and_json(real_app: ReMe, workspace_dir: Path) -> None:
    app = real_app  # searches, writes or exports: jobs of the application
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


def test_the_bundle_keeps_bodies_that_look_like_its_own_syntax() -> None:
    from reme.pipelines.digest.export import as_bundle, node_of

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
    from reme.pipelines.imports.writing import ImportedNote, stamped

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
