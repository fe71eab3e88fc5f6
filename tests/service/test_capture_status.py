"""The status of queued captures and of failed job runs, as jobs: `capture_status`, `capture_retry`,
`capture_drop`, `recent_errors` (docs/capture-safety.md), through the application and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.service.test_agent_hooks import FIXTURES
from tests.support import REME, reme_env

from reme import ReMe
from reme.app import captures
from reme.app.jobs import execute
from reme.app.recent_errors import MAX_ERRORS, RecentErrors


def queue(workspace: Path, session_id: str, transcript: Path, *, age: float = 0.0) -> str:
    marker = captures.write_marker(
        str(workspace),
        captures.Capture(
            session_id=session_id,
            transcript_path=str(transcript),
            source="claude_code",
            event="Stop",
            cwd=None,
            at=time.time(),
        ),
    )
    if age:
        os.utime(marker, (time.time() - age, time.time() - age))
    return marker


def app(workspace: Path) -> ReMe:
    return ReMe(workspace_dir=workspace, timezone="UTC", **{"scheduler.cron": False})


async def test_status_lists_failed_pending_and_damaged_captures_with_how_to_retry_and_drop(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    broken = queue(workspace, "broken", tmp_path / "gone.jsonl")
    captures.failed(broken, "its transcript cannot be read: No such file or directory")
    captures.failed(broken, "its transcript cannot be read: No such file or directory")
    queue(workspace, "late", transcript, age=600)
    queue(workspace, "fresh", transcript)
    damaged = captures.Capture(
        session_id="damaged",
        transcript_path=str(transcript),
        source="claude_code",
        event="Stop",
        cwd=None,
        at=0,
    )
    captures.saved_up_to(str(workspace), damaged, captures.Part(end=10), {"not_json": 2, "summary": 1})
    async with app(workspace) as reme:
        response = await reme.run("capture_status")
    assert response.success, response.answer
    meta = response.metadata
    assert [f["session_id"] for f in meta["failed"]] == ["broken"]
    failure = meta["failed"][0]
    assert failure["attempts"] == 2 and "cannot be read" in failure["reason"] and failure["at"]
    assert failure["drop"] == f"reme hook drop session_id=broken workspace_dir={workspace.resolve()}"
    assert sorted(p["session_id"] for p in meta["pending"]) == ["fresh", "late"] and meta["stale"] == 1
    assert meta["damaged"] == [
        {"session_id": "damaged", "skipped": {"not_json": 2}}
    ]  # routine skips left out
    assert meta["retry"] == f"reme hook drain workspace_dir={workspace.resolve()}"
    assert "failed: session broken (2 attempt(s)" in response.answer and "not picked up" in response.answer


async def test_retry_saves_what_it_can_and_keeps_the_failed_capture_until_dropped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    queue(workspace, "good", transcript)
    queue(workspace, "broken", tmp_path / "gone.jsonl")
    async with app(workspace) as reme:
        retried = await reme.run("capture_retry")
        assert not retried.success and retried.metadata["saved"] == ["good"]
        assert "session broken failed again: its transcript cannot be read" in retried.answer
        assert (workspace / "session" / "dialog" / "good.jsonl").exists()
        status = (await reme.run("capture_status")).metadata
        assert [f["session_id"] for f in status["failed"]] == ["broken"] and status["pending"] == []
        unknown = await reme.run("capture_drop", session_id="nothing")
        assert not unknown.success and "no capture of session 'nothing' is queued" in unknown.answer
        dropped = await reme.run("capture_drop", session_id="broken")
        assert dropped.success and dropped.metadata["dropped"] == "broken"
        assert (await reme.run("capture_status")).metadata["failed"] == []
        assert captures.markers(str(workspace)) == []
        errors = (await reme.run("recent_errors")).metadata["errors"]
    assert [e["job"] for e in errors] == ["capture_drop", "capture_retry"]  # newest first
    assert "no capture of session 'nothing'" in errors[0]["message"] and errors[0]["at"]


async def test_retry_of_one_session_leaves_the_others_queued(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text((FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    queue(workspace, "one", transcript)
    queue(workspace, "two", transcript)
    async with app(workspace) as reme:
        retried = await reme.run("capture_retry", session_id="one")
        assert retried.success and retried.metadata["saved"] == ["one"], retried.answer
        missing = await reme.run("capture_retry", session_id="three")
        assert not missing.success and "no capture of session 'three'" in missing.answer
    assert [Path(p).name for p, _ in captures.markers(str(workspace))] == ["two.json"]


def test_the_error_ring_keeps_the_newest_failures_bounded() -> None:
    ring = RecentErrors()
    for n in range(MAX_ERRORS + 10):
        ring.add("dream", f"run {n} failed" + "x" * 1000)
    newest = ring.newest()
    assert len(newest) == MAX_ERRORS and newest[0].message.startswith(f"run {MAX_ERRORS + 9} ")
    assert newest[-1].message.startswith("run 10 ") and len(newest[0].message) == 500
    assert [f.message[:6] for f in ring.newest(2)] == ["run 59", "run 58"]


def test_capture_status_through_the_cli(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    captures.failed(
        queue(workspace, "broken", tmp_path / "gone.jsonl"), "the service answered HTTP 400: refused"
    )
    result = subprocess.run(
        [REME, "start", "job=capture_status", f"workspace_dir={workspace}", "scheduler.cron=false", "--json"],
        capture_output=True,
        text=True,
        env=reme_env(),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert (
        reply["success"]
        and reply["metadata"]["failed"][0]["reason"] == "the service answered HTTP 400: refused"
    )


def test_a_burst_of_caller_mistakes_cannot_hide_a_failure_nobody_was_told_of() -> None:
    ring = RecentErrors()
    ring.add("dream", "the model is down")
    for n in range(MAX_ERRORS + 10):
        ring.add("read", f"no note at path {n}", caller_mistake=True)
    ring.add("sync", "the remote refused the push")
    newest = ring.newest()
    assert len(newest) == MAX_ERRORS
    assert [f.job for f in newest[:2]] == ["sync", "read"] and newest[-1].job == "dream"  # newest first
    assert newest[1].message == f"no note at path {MAX_ERRORS + 9}"
    assert [f.job for f in ring.newest(3)] == ["sync", "read", "dream"]
    assert [f.job for f in ring.newest(1)] == ["sync"]
    assert "order" not in newest[0].to_dict()


async def test_a_scheduled_run_failing_is_no_caller_mistake(tmp_path: Path) -> None:
    async with app(tmp_path / "ws") as reme:
        drop = reme.jobs["capture_drop"]
        await execute(reme, drop, {"session_id": "cron"}, scheduled=True)  # nobody waits for its answer
        for n in range(MAX_ERRORS + 5):  # an agent repeating its mistake
            assert not (await reme.run("capture_drop", session_id=f"typo{n}")).success
        errors = (await reme.run("recent_errors", limit=MAX_ERRORS)).metadata["errors"]
    assert len(errors) == MAX_ERRORS and "session 'cron'" in errors[-1]["message"]
    assert f"session 'typo{MAX_ERRORS + 4}'" in errors[0]["message"]
