"""Run records that cannot be used: an over-cap record and malformed ones through the service and CLI.

Each is skipped in the `journal` listing with one line naming it (the good run is still listed), and
`dream_revert` of it answers success=false with a sentence, never a Python exception's text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

GOOD = "20260101T000000-000000-aaaaaa"
BAD = {
    "20260102T000000-000000-bbbbbb": None,  # over the size cap (written below)
    "20260103T000000-000000-cccccc": "[" * 100_000 + "]" * 100_000,  # nests too deeply to parse
    "20260104T000000-000000-dddddd": json.dumps(
        {"run_id": "x", "kind": "auto_dream", "modified": [{"sha256_after": "0"}]}
    ),
    "20260105T000000-000000-eeeeee": json.dumps({"run_id": "x", "kind": "auto_dream", "actions": "abc"}),
    "20260106T000000-000000-ffffff": json.dumps(["a", "list"]),
}
EXCEPTION_TEXT = ("Traceback", "RecursionError", "KeyError", "TypeError", "string indices", "object has no")


def plant(workspace: Path) -> None:
    runs = workspace / "journal" / "dream" / "runs"
    runs.mkdir(parents=True)
    good = {"run_id": GOOD, "kind": "auto_dream", "started_at": "2026-01-01T00:00:00", "actions": []}
    (runs / f"{GOOD}.json").write_text(json.dumps(good), encoding="utf-8")
    for run_id, text in BAD.items():
        path = runs / f"{run_id}.json"
        if text is None:
            with path.open("w", encoding="utf-8") as handle:  # 17 MiB of one JSON string
                handle.write('{"run_id": "' + "x" * (17 << 20) + '"}')
        else:
            path.write_text(text, encoding="utf-8")


def test_bad_run_records_are_skipped_in_the_listing_and_refused_by_revert(
    tmp_path: Path, reme_service, run_reme
) -> None:
    workspace = tmp_path / "ws"
    plant(workspace)
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    listed = run_reme("start", "job=journal", "limit=20", f"workspace_dir={workspace}", "--json")
    assert listed.returncode == 0, listed.stderr + listed.stdout
    answer = json.loads(listed.stdout)
    assert answer["success"] and [r["run_id"] for r in answer["metadata"]["runs"]] == [GOOD]
    skipped = answer["metadata"]["skipped_records"]
    assert sorted(Path(s["path"]).stem for s in skipped) == sorted(BAD)
    for run_id in BAD:
        (line,) = [x for x in answer["answer"].splitlines() if run_id in x]
        assert line.startswith(f"skipped journal/dream/runs/{run_id}.json: ")
    assert not any(text in answer["answer"] for text in EXCEPTION_TEXT)
    for run_id in BAD:
        before = (workspace / "journal" / "dream" / "runs" / f"{run_id}.json").stat().st_size
        revert = run_reme(
            "start", "job=dream_revert", f"run_id={run_id}", f"workspace_dir={workspace}", "--json"
        )
        reply = json.loads(revert.stdout)
        assert reply["success"] is False, reply
        assert reply["answer"].startswith(f"run record journal/dream/runs/{run_id}.json is unreadable: ")
        assert "nothing was changed" in reply["answer"]
        assert not any(text in reply["answer"] for text in EXCEPTION_TEXT), reply["answer"]
        assert (workspace / "journal" / "dream" / "runs" / f"{run_id}.json").stat().st_size == before
