"""File and daily jobs through the real interfaces: HTTP requests and the `reme` CLI against a live service."""

from __future__ import annotations

import json

import httpx


def post(service, job: str, statuses: tuple[int, ...] = (200,), **params) -> dict:
    """POST a job; a step's refusal answers 200, a schema refusal 422 — both with the Response shape."""
    reply = httpx.post(f"{service.url}/{job}", json=params, timeout=30)
    assert reply.status_code in statuses
    return reply.json()


def test_http_write_read_move_and_delete(workspace_service):
    root = workspace_service.workspace
    written = post(workspace_service, "write", path="digest/http/solar", content="Sun\n", name="Solar")
    assert written == {
        "success": True,
        "answer": "Created digest/http/solar.md",
        "metadata": {
            "path": "digest/http/solar.md",
            "created": True,
            "indexed": True,
            "workspace": str(root.resolve()),  # a change names the workspace it changed
        },
    }
    assert (root / "digest/http/solar.md").read_text() == "---\nname: Solar\n---\nSun\n"
    post(workspace_service, "write", path="digest/http/ev.md", content="[[digest/http/solar.md|S]]\n")
    read = post(workspace_service, "read", path="digest/http/solar.md", start_line=4)
    assert read["answer"] == "Sun\n" and read["metadata"]["total_lines"] == 4
    moved = post(workspace_service, "move", src="digest/http/solar.md", dst="digest/http/sun.md")
    assert moved["metadata"]["retargeted_files"] == ["digest/http/ev.md"]
    assert (root / "digest/http/ev.md").read_text() == "[[digest/http/sun.md|S]]\n"
    deleted = post(workspace_service, "delete", path="digest/http/sun.md")
    assert deleted["metadata"]["inbound"] == [
        {
            "source_path": "digest/http/ev.md",
            "target_path": "digest/http/sun.md",
            "resolved_path": "digest/http/sun.md",
        }
    ]


def test_http_refusals_are_clean_failures_that_write_nothing(workspace_service):
    root = workspace_service.workspace
    for job, params in [
        ("write", {"path": "../escape.md", "content": "x"}),
        ("write", {"path": "metadata/x.md", "content": "x"}),
        ("save", {"path": "/etc/x", "content": "x"}),
        ("daily_create", {"date": "2026-02-30"}),
        ("edit", {"path": "digest/none.md", "old": "", "new": "x"}),
    ]:
        reply = post(workspace_service, job, (200, 422), **params)
        assert reply["success"] is False and reply["answer"], (job, params)
    assert not (root.parent / "escape.md").exists() and not (root / "metadata/x.md").exists()


def test_http_load_save_conflict(workspace_service):
    post(workspace_service, "save", path="digest/http/doc.md", content="one\n")
    loaded = post(workspace_service, "load", path="digest/http/doc.md")
    post(workspace_service, "save", path="digest/http/doc.md", content="two\n")
    stale = post(
        workspace_service,
        "save",
        path="digest/http/doc.md",
        content="three\n",
        expected_sha256=loaded["metadata"]["sha256"],
    )
    assert stale["success"] is False and stale["metadata"]["conflict"] is True
    assert (workspace_service.workspace / "digest/http/doc.md").read_text() == "two\n"


def test_cli_runs_file_jobs_with_typed_values(workspace_service):
    root = workspace_service.workspace
    created = workspace_service.cli(
        "write", "path=digest/cli/note.md", "content=line one\nline two\n", 'metadata={"tags": ["x"]}'
    )
    assert created.returncode == 0, created.stderr
    assert (root / "digest/cli/note.md").read_text() == "---\ntags:\n- x\n---\nline one\nline two\n"
    read = workspace_service.cli("read", "path=digest/cli/note", "start_line=5")
    assert (read.returncode, read.stdout.strip()) == (0, "line one\nline two")
    updated = workspace_service.cli(
        "--json", "frontmatter_update", "path=digest/cli/note.md", 'metadata={"code": "007"}'
    )
    assert json.loads(updated.stdout)["metadata"]["front_matter"] == {"tags": ["x"], "code": "007"}
    deleted = workspace_service.cli("frontmatter_delete", "path=digest/cli/note.md", 'keys=["tags", "gone"]')
    assert deleted.returncode == 0
    assert (root / "digest/cli/note.md").read_text() == "---\ncode: '007'\n---\nline one\nline two\n"
    refused = workspace_service.cli("read", "path=../../etc/passwd")
    assert refused.returncode == 1 and ".." in refused.stderr


def test_cli_daily_jobs(workspace_service):
    root = workspace_service.workspace
    card = workspace_service.cli(
        "--json", "daily_create", "date=2026-06-01", "session_id=s42", "description=From the CLI"
    )
    assert json.loads(card.stdout)["metadata"] == {
        "path": "daily/2026-06-01/s42.md",
        "created": True,
        "workspace": str(root.resolve()),
    }
    assert workspace_service.cli("daily_reindex", "date=2026-06-01").returncode == 0
    assert (root / "daily/2026-06-01.md").read_text() == (
        "---\nname: '2026-06-01'\ndescription: 1 note(s).\n---\n<!-- notes:auto -->\n"
        "- [[daily/2026-06-01/s42.md]] name: s42 description: From the CLI\n<!-- /notes:auto -->\n"
    )
    listed = workspace_service.cli("--json", "daily_list", "date=2026-06-01")
    assert json.loads(listed.stdout)["metadata"]["notes"] == [
        {"path": "daily/2026-06-01/s42.md", "name": "s42", "description": "From the CLI"}
    ]
    assert workspace_service.cli("daily_list", "date=June").returncode == 1
