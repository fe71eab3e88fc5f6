"""Adversarial review of `export_digest` / `reme export` and the Obsidian, mem0 and claude imports.

Each test is an attack that broke a promise of docs/imports.md (a refused source writes nothing, one
bad item is skipped with its reason, a re-import changes nothing, secrets are redacted, a note of
another source is never overwritten, the bundle reads back as the JSON export), or one that held and
is kept so that it keeps holding.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.pipelines.imports_support import PNG, files_under, front, run_ok
from tests.pipelines.port_jobs import PortApp, app_on_port_fixture  # noqa: F401  (the fixture)

from reme.pipelines.digest.export import as_bundle, edges_of, node_of, parse_bundle
from reme.workspace import frontmatter

# --- export ------------------------------------------------------------------------------------


def test_a_node_with_tens_of_thousands_of_links_exports_in_linear_time() -> None:
    """`edges_of` compared each edge with every earlier one: 50 000 links took about a minute of a
    served job's CPU (0.5 s for 5 000)."""
    text = "".join(f"[[digest/wiki/n{i}.md]] [[digest/wiki/n{i}.md]]\n" for i in range(50_000))
    started = time.monotonic()
    edges = edges_of(text)
    assert len(edges) == 50_000 and edges[0]["target"] == "digest/wiki/n0.md"
    assert time.monotonic() - started < 15


@pytest.mark.parametrize(
    "text",
    [
        # the bundle re-rendered the front matter (name, description first): edges came back reordered
        "---\nname: d\nrelated: '[[a]]'\ndescription: see [[b]]\nwhen: 2024-06-01\n1: one\n---\nbody [[c]]\n",
        "---\ntitle: [unclosed\n---\nbroken front matter [[x]]\n",
        "---\r\nname: c\r\nup: '[[u]]'\r\n---\r\nline\r\nend [[e]]",
        "a\x0cform feed\u2028line separator\x85next line\rcr [[f]]",
        "---\n# only a comment [[not a link]]\n---\n",
    ],
    ids=["front-matter-order", "broken-yaml", "crlf", "line-breaks-of-splitlines", "comment-only"],
)
def test_the_bundle_reads_back_exactly_as_the_json_export(text: str) -> None:
    texts = {"digest/wiki/node.md": text}
    nodes = [node_of(path, body) for path, body in texts.items()]
    assert parse_bundle(as_bundle(nodes, texts, "2026-06-21T09:00:00+00:00")) == nodes


async def test_a_bucket_that_does_not_exist_is_refused_not_exported_empty(
    app: PortApp, workspace_dir: Path
) -> None:
    (workspace_dir / "digest" / "wiki").mkdir(parents=True)
    (workspace_dir / "digest" / "wiki" / "rollback.md").write_text("Roll back first.\n", encoding="utf-8")
    (workspace_dir / "digest" / "odd bucket").mkdir()
    (workspace_dir / "digest" / "odd bucket" / "x.md").write_text("odd\n", encoding="utf-8")
    for bucket in ("wikki", "wiki/rollback.md", "_buckets.md"):
        response = await app.run("export_digest", format="json", bucket=bucket)
        assert not response.success and "its buckets: odd bucket, wiki" in response.answer
    for bucket in ("../daily", ".git", "/wiki"):
        assert not (await app.run("export_digest", bucket=bucket)).success
    odd = await app.run("export_digest", format="json", bucket="odd bucket")
    assert [n["path"] for n in odd.answer["nodes"]] == ["digest/odd bucket/x.md"]


def _export_cli(workspace: Path, out: Path, *more: str) -> int:
    from reme.service import cli

    return cli.main(["export", f"out={out}", f"workspace_dir={workspace}", *more])


def test_reme_export_out_never_clobbers_a_users_file_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my own notes\n", encoding="utf-8")
    assert _export_cli(tmp_path / "ws", mine) == 2
    assert "exists; add overwrite=true to replace it" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == "my own notes\n"
    assert _export_cli(tmp_path / "ws", mine, "overwrite=true") == 0
    assert mine.read_text(encoding="utf-8").startswith("# ")  # the bundle, written whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "ws"]  # no temporary file left


def test_reme_export_out_never_writes_into_the_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    node = workspace / "digest" / "wiki" / "rollback.md"
    node.parent.mkdir(parents=True)
    node.write_text("Roll back first.\n", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(node)
    for out in (node, tmp_path / "link.md", workspace / "fresh.md"):
        assert _export_cli(workspace, out, "overwrite=true") == 2
        assert "is inside the workspace" in capsys.readouterr().err
    assert node.read_text(encoding="utf-8") == "Roll back first.\n"
    assert not (workspace / "fresh.md").exists()


# --- mem0 --------------------------------------------------------------------------------------


def _source(tmp_path: Path, memories: object, name: str = "mem0.json") -> str:
    path = tmp_path / name
    path.write_text(memories if isinstance(memories, str) else json.dumps(memories), encoding="utf-8")
    return str(path)


async def test_a_memory_the_workspace_cannot_hold_is_skipped_and_nothing_half_written(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """A NUL in one memory stopped the write midway: 300 notes written, then 'content contains NUL
    characters', and every re-run stopped at the same place."""
    memories = [{"id": f"m{i}", "memory": f"fact {i}", "user_id": "alice"} for i in range(300)]
    memories.append({"id": "nul", "memory": "a\u0000b", "user_id": "alice"})
    source = _source(tmp_path, memories)
    meta = await run_ok(app, "import_mem0", source=source)
    assert len(meta["created"]) == 300
    assert meta["skipped"] == [
        {"item": "nul", "reason": "the note contains NUL characters; binary data cannot be written as text"}
    ]
    assert not (workspace_dir / "imports/mem0/alice/nul.md").exists()
    again = await run_ok(app, "import_mem0", source=source)
    assert again["created"] == again["updated"] == [] and len(again["unchanged"]) == 300


async def test_one_memory_with_odd_values_is_skipped_not_the_whole_export(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """NaN in mem0's metadata or a lone surrogate refused the whole export ('nothing was imported')."""
    source = _source(
        tmp_path,
        '[{"id": "nan", "memory": "scored", "metadata": {"score": NaN}},'
        ' {"id": "sur", "memory": "broken \\ud800 text"},'
        ' {"id": "ok", "memory": "Likes tea", "metadata": {"n": 1, "deep": {"list": [1, "x", null]}}}]',
    )
    meta = await run_ok(app, "import_mem0", source=source)
    assert meta["created"] == ["imports/mem0/shared/ok.md"]
    assert [entry["item"] for entry in meta["skipped"]] == ["memories[0] nan", "memories[1] sur"]
    assert front(workspace_dir / "imports/mem0/shared/ok.md")["mem0_metadata"] == {
        "n": 1,
        "deep": {"list": [1, "x", None]},
    }


async def test_duplicated_ids_device_names_and_odd_owners(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """Two copies of one id (two exports joined) refused everything with 'rename one of them in the
    source'; an id `con` refused everything with 'rename it'; a user_id object named a folder `{'x'-1}`."""
    source = _source(
        tmp_path,
        [
            {"id": "dup", "memory": "first copy"},
            {"id": "dup", "memory": "second copy"},
            {"id": 7, "memory": "seven"},
            {"id": "7", "memory": "seven again"},
            {"id": "con", "memory": "a Windows device name"},
            {"id": "u1", "memory": "odd owner", "user_id": {"x": 1}, "agent_id": "bot"},
        ],
    )
    meta = await run_ok(app, "import_mem0", source=source)
    assert {entry["item"]: entry["reason"] for entry in meta["skipped"]} == {
        "memories[1] dup": "the same id as memories[0]",
        "memories[3] 7": "the same id as memories[2]",
    }
    notes = sorted(files_under(workspace_dir / "imports" / "mem0"))
    assert "shared/dup.md" in notes and "shared/7.md" in notes and "bot/u1.md" in notes
    assert "shared/con.md" not in notes
    con = next(n for n in notes if front(workspace_dir / "imports/mem0" / n)["memory_id"] == "con")
    assert (
        frontmatter.parse((workspace_dir / "imports/mem0" / con).read_text()).body
        == "a Windows device name\n"
    )
    assert (workspace_dir / "imports/mem0/shared/dup.md").read_text().endswith("first copy\n")
    again = await run_ok(app, "import_mem0", source=source)
    assert again["created"] == again["updated"] == []


# --- obsidian ----------------------------------------------------------------------------------


async def test_a_note_over_the_write_cap_is_skipped_before_anything_is_written(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """A 17 MB note is under max_file_bytes (20 MB) but over the 16 MiB a write takes: attachments and
    notes before it were written, then the import failed, at every re-run."""
    vault = tmp_path / "Vault"
    vault.mkdir()
    (vault / "a.md").write_text("first\n", encoding="utf-8")
    (vault / "big.md").write_text("x" * (17 * 1024 * 1024), encoding="utf-8")
    (vault / "panel.png").write_bytes(PNG)
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    assert sorted(meta["created"]) == ["imports/obsidian/Vault/a.md", "imports/obsidian/Vault/panel.png"]
    assert (
        meta["skipped"][0]["item"] == "big.md"
        and "over the 16777216-byte cap" in meta["skipped"][0]["reason"]
    )
    again = await run_ok(app, "import_obsidian", source=str(vault))
    assert again["created"] == again["updated"] == []


async def test_two_vaults_with_one_folder_name_never_overwrite_each_other(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """~/work/Notes and ~/home/Notes both land in imports/obsidian/Notes/ with import_id `Home.md`:
    each import 'updated' the other's notes, your edits to them included."""
    work, home = tmp_path / "work" / "Notes", tmp_path / "home" / "Notes"
    for vault, text in ((work, "work plan\n"), (home, "home plan\n")):
        vault.mkdir(parents=True)
        (vault / "Home.md").write_text(text, encoding="utf-8")
    await run_ok(app, "import_obsidian", source=str(work))
    note = workspace_dir / "imports/obsidian/Notes/Home.md"
    response = await app.run("import_obsidian", source=str(home))
    assert not response.success and "were not written by this import" in response.answer
    assert note.read_text(encoding="utf-8").endswith("work plan\n")
    assert front(note)["imported_from"] == str(work)
    await run_ok(app, "import_obsidian", source=str(home), name="Home Notes")
    assert (workspace_dir / "imports/obsidian/Home Notes/Home.md").read_text().endswith("home plan\n")
    again = await run_ok(app, "import_obsidian", source=str(work))
    assert again["unchanged"] == ["imports/obsidian/Notes/Home.md"]


async def test_text_attachments_are_redacted_like_notes(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """A `.txt` or `.canvas` beside the notes came in byte for byte, its password readable by `read`."""
    vault = tmp_path / "Vault"
    vault.mkdir()
    (vault / "creds.txt").write_text("db password=hunter2hunter2\n", encoding="utf-8")
    (vault / "board.canvas").write_text('{"nodes": [{"text": "password=hunter2hunter2"}]}', encoding="utf-8")
    (vault / "panel.png").write_bytes(PNG)
    (vault / "plain.txt").write_bytes("\ufeffno secret here\n".encode())
    await run_ok(app, "import_obsidian", source=str(vault))
    copied = files_under(workspace_dir / "imports/obsidian/Vault")
    assert b"hunter2" not in copied["creds.txt"] and b"[REDACTED:" in copied["creds.txt"]
    assert json.loads(copied["board.canvas"])["nodes"][0]["text"].startswith("password=[REDACTED:")
    assert copied["panel.png"] == PNG and copied["plain.txt"] == "\ufeffno secret here\n".encode()
    again = await run_ok(app, "import_obsidian", source=str(vault))
    assert again["created"] == again["updated"] == [] and not again["skipped"]


async def test_odd_vault_contents_that_hold(app: PortApp, workspace_dir: Path, tmp_path: Path) -> None:
    """Attacks that held: anchors, aliases and embeds kept; attachments of one name in two folders;
    duplicate keys kept as written; YAML errors skipped with the reason; 0-byte files; notes named like
    reme's folders; case-only names (the second skipped: one file on macOS); `.obsidian/`; non-UTF-8;
    symlinks inside the vault."""
    vault = tmp_path / "Vault"
    for folder in (".obsidian", "a", "b", "metadata", "journal", "session"):
        (vault / folder).mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / "a" / "img.png").write_bytes(PNG + b"a")
    (vault / "b" / "img.png").write_bytes(PNG + b"b")
    (vault / "a" / "Note.md").write_text(
        "![[img.png]] [[Other#Head|text]] [[Other#^blk]] [[#local]] [[Alt]]\n", encoding="utf-8"
    )
    (vault / "b" / "Other.md").write_text("---\naliases: [Alt]\n---\n# Head\n\nx ^blk\n", encoding="utf-8")
    (vault / "dup.md").write_text("---\ntags: a\ntags: b\n---\nduplicate keys\n", encoding="utf-8")
    (vault / "bad.md").write_text("---\n: : :\n---\nbad yaml\n", encoding="utf-8")
    (vault / "empty.md").write_bytes(b"")
    (vault / "empty.png").write_bytes(b"")
    for folder in ("metadata", "journal", "session"):
        (vault / folder / "x.md").write_text(f"in {folder}\n", encoding="utf-8")
    (vault / "Case.md").write_text("upper\n", encoding="utf-8")
    (vault / "case.md").write_text("lower\n", encoding="utf-8")
    (vault / "latin.md").write_bytes("caf\xe9".encode("latin-1"))
    (vault / "again.md").symlink_to(vault / "Case.md")
    (vault / "loop").symlink_to(vault)
    meta = await run_ok(app, "import_obsidian", source=str(vault))
    base = workspace_dir / "imports/obsidian/Vault"
    assert sorted(files_under(base)) == [
        "Case.md", "a/Note.md", "a/img.png", "again.md", "b/Other.md", "b/img.png", "dup.md",
        "empty.md", "empty.png", "journal/x.md", "metadata/x.md", "session/x.md",
    ]  # fmt: skip
    assert {entry["item"] for entry in meta["skipped"]} == {"bad.md", "latin.md", "loop", "case.md"}
    note = (base / "a/Note.md").read_text(encoding="utf-8")
    assert "![[imports/obsidian/Vault/a/img.png]] [[Other#Head|text]] [[Other#^blk]] [[#local]]" in note
    assert "[[Other]]" in note or "[[b/Other]]" in note  # the alias respelled to the note
    assert (base / "dup.md").read_text(encoding="utf-8").startswith("---\ntags: a\ntags: b\n")
    again = await run_ok(app, "import_obsidian", source=str(vault))
    assert again["created"] == again["updated"] == []


# --- claude ------------------------------------------------------------------------------------


async def test_a_claude_ai_export_is_refused_not_imported_as_one_json_note(
    app: PortApp, workspace_dir: Path, tmp_path: Path
) -> None:
    """`reme import claude conversations.json` (claude.ai's export) made one note of the raw JSON."""
    conversations = tmp_path / "conversations.json"
    conversations.write_text(
        json.dumps([{"uuid": "c1", "name": "Trip", "chat_messages": [{"sender": "human", "text": "hi"}]}]),
        encoding="utf-8",
    )
    response = await app.run("import_claude_code", source=str(conversations))
    assert (
        not response.success and "a claude.ai export (conversations.json) is not a format" in response.answer
    )
    assert not (workspace_dir / "imports").exists()
