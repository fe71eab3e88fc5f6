"""`reme import` and `reme export` through the real console script, and the import jobs from the Python API.

The import jobs read host paths, so a running service must refuse them while `reme import` still
works in-process beside it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from reme import ReMeSync
from reme.pipelines.digest.export import parse_bundle

DATA = Path(__file__).resolve().parents[1] / "pipelines" / "imports_data"


@pytest.mark.slow
def test_reme_import_is_idempotent_and_reports(run_reme, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    first = run_reme("import", "chatgpt", str(DATA / "conversations.json"), f"workspace_dir={workspace}")
    assert first.returncode == 0, first.stderr
    assert "4 created, 0 updated, 0 unchanged, 2 skipped" in first.stdout
    assert "+ session/dialog/chatgpt-6650a1b2-0c3d-4e5f-8a9b-0123456789ab.jsonl" in first.stdout
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and "metadata" not in p.parts}
    second = run_reme(
        "import", "chatgpt", str(DATA / "conversations.json"), f"workspace_dir={workspace}", "--json"
    )
    assert second.returncode == 0
    report = json.loads(second.stdout)["metadata"]
    assert report["created"] == report["updated"] == [] and len(report["unchanged"]) == 4
    after = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and "metadata" not in p.parts}
    assert after == before


@pytest.mark.slow
def test_reme_import_refuses_bad_input_with_a_clear_message(run_reme, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    unknown = run_reme("import", "notion", str(DATA), f"workspace_dir={workspace}")
    assert unknown.returncode == 2 and "claude-code|codex|chatgpt|mem0|obsidian" in unknown.stderr
    missing = run_reme("import", "mem0", str(tmp_path / "nope.json"), f"workspace_dir={workspace}")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [', encoding="utf-8")
    malformed = run_reme("import", "mem0", str(broken), f"workspace_dir={workspace}")
    assert malformed.returncode == 1 and "is not valid JSON" in malformed.stderr
    assert not (workspace / "imports").exists()


@pytest.mark.slow
def test_a_running_service_refuses_imports_while_the_cli_imports_beside_it(
    reme_service, run_reme, tmp_path: Path, free_port: int
) -> None:
    workspace = tmp_path / "ws"
    service = reme_service(workspace, f"service.port={free_port}", "scheduler.cron=false")
    served = httpx.post(f"{service.url}/import_mem0", json={"source": str(DATA / "mem0.json")}, timeout=30)
    assert served.status_code == 404, served.text
    assert not (workspace / "imports").exists()
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("Links to [[b]].\n", encoding="utf-8")
    (vault / "b.md").write_text("Target.\n", encoding="utf-8")
    imported = run_reme("import", "obsidian", str(vault), f"workspace_dir={workspace}")
    assert imported.returncode == 0, imported.stderr
    imported_note = (workspace / "imports/obsidian/vault/notes/a.md").read_text()
    assert "Links to [[b]]." in imported_note  # resolves as written
    # the service sees the imported notes and their resolved links
    traversed = service.cli("traverse", "path=imports/obsidian/vault/notes/a.md", "--json")
    edges = json.loads(traversed.stdout)["metadata"]["edges"]
    assert [e["resolved"] for e in edges] == ["imports/obsidian/vault/b.md"]
    # export_digest only reads, so the service answers it
    exported = service.cli("export_digest", "format=json", "--json")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["answer"]["nodes"] == []


@pytest.mark.slow
def test_reme_export_writes_a_bundle_and_json_that_round_trip(run_reme, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with ReMeSync(workspace_dir=workspace, timezone="UTC") as app:
        assert app.run("write", path="daily/2026-06-20/s.md", content="We release weekly.\n").success
        written = app.run(
            "digest_write",
            path="digest/procedure/release.md",
            description="Weekly releases.",
            content="Ship weekly.\n\n## Sources\n- derived_from:: [[daily/2026-06-20/s.md]] — decided there.\n",
        )
        assert written.success, written.answer
    bundle_path, json_path = tmp_path / "digest.md", tmp_path / "digest.json"
    as_md = run_reme("export", f"out={bundle_path}", f"workspace_dir={workspace}")
    as_json = run_reme("export", "format=json", f"out={json_path}", f"workspace_dir={workspace}")
    assert as_md.returncode == as_json.returncode == 0, as_md.stderr + as_json.stderr
    assert as_md.stdout.strip() == f"wrote {bundle_path}"
    nodes = json.loads(json_path.read_text(encoding="utf-8"))["nodes"]
    assert [n["path"] for n in nodes] == ["digest/procedure/release.md"]
    assert parse_bundle(bundle_path.read_text(encoding="utf-8")) == nodes
    to_stdout = run_reme("export", f"workspace_dir={workspace}")
    assert parse_bundle(to_stdout.stdout) == nodes


def test_the_python_api_imports_a_vault(tmp_path: Path) -> None:
    vault = tmp_path / "Research"
    shutil.copytree(DATA / "docs", vault)
    with ReMeSync(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        response = app.run("import_obsidian", source=str(vault), folder="library")
        assert response.success, response.answer
        assert sorted(response.metadata["created"]) == [
            "library/Research/architecture.md",
            "library/Research/storage.md",
        ]
        hits = app.run("search", query="PostgreSQL alembic migrations").metadata["results"]
        assert hits[0]["path"] == "library/Research/storage.md"
