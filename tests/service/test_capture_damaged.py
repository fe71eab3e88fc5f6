"""A session is never dropped for one bad record: damaged transcripts through the real hook, service and doctor."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.service.test_agent_hooks import FIXTURES, S1, doctor_agents, event, hook, markers, saved
from tests.support import REME, reme_env


def damaged_transcript(folder: Path) -> Path:
    """The fixture session with a line that is not JSON, one cut off mid-record, one that is a
    JSON array, one of a type no reader knows and an over-long line between its turns."""
    lines = (FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    bad = [
        "this is not json at all\n",
        '{"type": "user", "message": {"role": "user", "content": "cut off mid-rec\n',
        "[1, 2, 3]\n",
        json.dumps({"type": "queue-operation", "operation": "enqueue", "uuid": "x"}) + "\n",
        json.dumps({"type": "user", "message": "not an object", "uuid": "y"}) + "\n",
    ]
    mixed = [line for pair in zip(lines, bad + [""] * len(lines), strict=False) for line in pair]
    path = folder / f"{S1}.jsonl"
    path.write_text("".join(mixed), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_damaged_transcript_keeps_every_valid_turn_and_doctor_names_the_skips(
    tmp_path: Path, reme_service
) -> None:
    workspace = tmp_path / "ws"
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    transcript = damaged_transcript(tmp_path)
    stop = hook("Stop", event("Stop", transcript), workspace, REME_TRANSCRIPT_DIRS=str(tmp_path))
    assert stop.returncode == 0 and stop.stdout == "", stop.stderr
    assert len(saved(workspace, S1)) == 10  # all ten turns of the clean fixture
    assert markers(workspace) == []
    sent = json.loads((workspace / "metadata" / "agent" / "captures" / f"{S1}.sent").read_text())
    assert sent["skipped"]["not_json"] == 2 and sent["skipped"]["not_an_object"] == 1
    assert sent["skipped"]["queue-operation"] == 1 and sent["skipped"]["no_message"] == 1
    (check,) = doctor_agents(workspace)
    assert check["status"] == "ok" and f"session {S1} saved; 4 record(s)" in check["detail"]
    assert "2 not_json" in check["detail"] and "1 not_an_object" in check["detail"]


@pytest.mark.slow
def test_the_answer_of_a_capture_says_what_was_skipped(tmp_path: Path) -> None:
    entries: list[Any] = [json.loads(line) for line in (FIXTURES / "claude_session.jsonl").open()]
    entries.insert(
        5, {"type": "assistant", "message": {"role": "assistant", "content": "hi"}, "timestamp": "never"}
    )
    result = subprocess.run(
        [
            REME,
            "start",
            "job=agent_session_append",
            f"workspace_dir={tmp_path / 'ws'}",
            f"session_id={S1}",
            "source=claude_code",
            f"messages={json.dumps(entries)}",
            'skipped={"not_json": 2, "not_an_object": 1}',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=reme_env(),
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "10 new message(s) saved" in result.stdout
    assert "4 record(s) skipped: 1 not_an_object, 2 not_json, 1 unreadable" in result.stdout


def test_a_failed_capture_keeps_its_marker_until_it_succeeds_or_is_dropped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    allowed = {"REME_TRANSCRIPT_DIRS": str(tmp_path)}  # transcripts are read only from such folders
    gone = tmp_path / "gone.jsonl"
    gone.write_text((FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    assert hook("Stop", event("Stop", gone), workspace, REME_HOOK_SPAWN="0", **allowed).returncode == 0
    gone.rename(tmp_path / "moved.jsonl")
    drained = hook("drain", "", workspace, **allowed)
    assert drained.returncode == 0 and "it stays queued" in drained.stderr
    assert markers(workspace) == [f"{S1}.json"]  # kept: not silently dropped
    (check,) = doctor_agents(workspace)
    assert check["status"] == "warn" and "its transcript cannot be read" in check["detail"]
    assert "reme hook drain" in check["fix"] and f"reme hook drop session_id={S1}" in check["fix"]

    (tmp_path / "moved.jsonl").rename(gone)  # back: the retry the doctor names succeeds
    assert hook("drain", "", workspace, **allowed).returncode == 0
    assert markers(workspace) == [] and len(saved(workspace, S1)) == 10
    assert doctor_agents(workspace) == []

    assert (
        hook(
            "Stop", event("Stop", tmp_path / "never.jsonl"), workspace, REME_HOOK_SPAWN="0", **allowed
        ).returncode
        == 0
    )
    assert hook("drain", "", workspace, **allowed).returncode == 0 and markers(workspace) == [f"{S1}.json"]
    dropped = hook("drop", "", workspace, f"session_id={S1}", **allowed)
    assert dropped.returncode == 0 and "dropped the capture" in dropped.stdout
    assert markers(workspace) == [] and doctor_agents(workspace) == []


def test_a_transcript_is_read_in_bounded_parts_and_an_over_long_line_is_skipped(
    tmp_path: Path, monkeypatch
) -> None:
    from reme.app import captures as hooks

    monkeypatch.setattr(hooks, "MAX_LINE_BYTES", 200)
    monkeypatch.setattr(hooks, "MAX_PART_BYTES", 100)
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"n": n, "pad": "x" * 40}) + "\n" for n in range(6)]
    lines.insert(3, json.dumps({"n": "long", "pad": "y" * 1000}) + "\n")
    path.write_text("".join(lines) + '{"n": 99, "still": "being wri', encoding="utf-8")
    got: list[Any] = []
    skipped: dict[str, int] = {}
    offset, parts = 0, 0
    while True:
        part = hooks.read_transcript(str(path), offset)
        parts += 1
        assert len(part.entries) <= 2  # a part stops once it holds MAX_PART_BYTES
        got += [e["n"] for e in part.entries]
        for reason, count in part.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + count
        offset = part.end
        if not part.more:
            break
    assert got == [0, 1, 2, 3, 4, 5] and skipped == {"over_size": 1} and parts >= 3
    assert offset == len("".join(lines).encode())  # the line still being written waits
