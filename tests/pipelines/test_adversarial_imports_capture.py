"""Adversarial inputs to the importers and the transcript capture path (hook drain, imports).

Each test asserts the behaviour the docs promise (docs/capture-safety.md, docs/integrations.md,
docs/imports.md) for an input that once broke it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.pipelines.imports_support import dialog

from reme import ReMe
from reme.app.captures import Capture, drain_in_app, write_marker

S = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"


def turn(uuid: str, text: str, ts: str = "2026-06-01T10:00:00Z", **extra: Any) -> str:
    entry = {
        "type": "user",
        "uuid": uuid,
        "sessionId": S,
        "timestamp": ts,
        "message": {"role": "user", "content": text},
        **extra,
    }
    return json.dumps(entry) + "\n"


def capture(transcript: Path) -> Capture:
    return Capture(
        session_id=S, transcript_path=str(transcript), source="claude_code", event="Stop", cwd=None, at=0.0
    )


# capture: the hook's drain ----------------------------------------------------------------------


async def test_hook_drain_survives_a_deeply_nested_json_line(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """One line `[[[[...]]]]` (200 KB, far under the 8 MiB line bound) must be skipped and counted,
    the turns around it saved. Today json.loads raises RecursionError, which read_transcript does not
    catch: the drain itself crashes, nothing is saved, no `.failed` note is written."""
    transcript = tmp_path / f"{S}.jsonl"
    transcript.write_text(
        turn("u1", "first turn") + "[" * 100_000 + "]" * 100_000 + "\n" + turn("u2", "second turn"),
        encoding="utf-8",
    )
    write_marker(str(workspace_dir), capture(transcript))
    report = await drain_in_app(app, str(workspace_dir))
    assert report.saved == [S]
    assert dialog(workspace_dir, S) == ["first turn", "second turn"]


async def test_hook_capture_keeps_the_session_when_one_record_is_nested_over_100_levels(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """A record nested 150 levels deep (valid JSON) must not drop the whole session ("A session is
    never dropped for one bad record"). Today the part is refused by parameter validation
    ("nested more than 100 levels deep") and the capture fails for good: no turn is saved."""
    transcript = tmp_path / f"{S}.jsonl"
    deep = json.loads("[" * 150 + "]" * 150)
    transcript.write_text(
        turn("u1", "first turn")
        + turn("u9", "deep record", "2026-06-01T10:00:01Z", toolUseResult=deep)
        + turn("u2", "second turn", "2026-06-01T10:00:02Z"),
        encoding="utf-8",
    )
    write_marker(str(workspace_dir), capture(transcript))
    report = await drain_in_app(app, str(workspace_dir))
    assert report.failed == {}
    assert "first turn" in dialog(workspace_dir, S) and "second turn" in dialog(workspace_dir, S)


async def test_a_replaced_transcript_is_captured_from_its_start(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """The transcript at the same path is replaced by another, longer file between two captures.
    The saved offset belongs to the old file; today it is applied to the new one, so the new file's
    first turns are never sent and the line cut at the offset is counted as not_json."""
    transcript = tmp_path / f"{S}.jsonl"
    transcript.write_text(turn("u1", "old one") + turn("u2", "old two"), encoding="utf-8")
    write_marker(str(workspace_dir), capture(transcript))
    await drain_in_app(app, str(workspace_dir))
    transcript.write_text(
        turn("n1", "new one alpha", "2026-06-01T11:00:00Z")
        + turn("n2", "new two beta", "2026-06-01T11:00:01Z")
        + turn("n3", "new three gamma", "2026-06-01T11:00:02Z"),
        encoding="utf-8",
    )
    write_marker(str(workspace_dir), capture(transcript))
    await drain_in_app(app, str(workspace_dir))
    saved = dialog(workspace_dir, S)
    assert {"new one alpha", "new two beta", "new three gamma"} <= set(saved), saved
    sent = json.loads((workspace_dir / f"metadata/agent/captures/{S}.sent").read_text())
    assert sent["skipped"].get("not_json", 0) == 0


# imports ------------------------------------------------------------------------------------------


async def test_import_claude_code_skips_a_deeply_nested_transcript_line(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """Today: `internal error (a bug in reme ...): RecursionError` and nothing is imported."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / f"{S}.jsonl").write_text(
        turn("u1", "first turn") + "[" * 100_000 + "]" * 100_000 + "\n" + turn("u2", "second turn"),
        encoding="utf-8",
    )
    response = await app.run("import_claude_code", source=str(project))
    assert response.success, response.answer
    assert dialog(workspace_dir, S) == ["first turn", "second turn"]


async def test_claude_md_headings_that_slug_alike_are_all_imported(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """`## Setup`, `## Setup`, `## Setup 2`: the second gets stem `setup-2` by the duplicate counter,
    the third slugs to `setup-2` too, and the whole import is refused ("maps two source items")."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text(
        "# Title\n\n## Setup\nuse uv\n\n## Setup\nrun make\n\n## Setup 2\nsecond setup\n", encoding="utf-8"
    )
    response = await app.run("import_claude_code", source=str(project / "CLAUDE.md"))
    assert response.success, response.answer
    sections = sorted((workspace_dir / "imports/claude-code/proj-claude").glob("*.md"))
    assert len(sections) == 3
