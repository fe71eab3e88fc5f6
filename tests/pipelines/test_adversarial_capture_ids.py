"""Secrets in the fields of a capture that are not its text: message ids, roles, names, metadata,
tool call ids, the session id (it names files), the record types a reader skips, a failure's reason.

docs/capture-safety.md promises that a secret never reaches the workspace: every test reads every
file under it afterwards (the transcript, the card, the day page, `metadata/` with the index, the
queue and the hook's capture folder), by name and by bytes, lowercased (the index keeps tokens so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reme import ReMe
from reme.app.captures import Capture, append_params, drain_in_app, saved_up_to, write_marker

# assembled at run time, so that no scanner takes this file for a leak
GITHUB = "ghp_" + "8kQz3VbN1xR7tY2mW9pL4sD6fG0hJ5cA3eU1"
OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
OTHER = "ghp_" + "R2d2C3poBb8Ee4Ll9Ww0Xx7Yy6Zz5Aa1Kk3Mm"
SECRETS = (GITHUB, OPENAI, OTHER)
S = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"


def leaks(workspace: Path) -> list[str]:
    """Every file under the workspace whose name or bytes hold a secret (its random part, any case)."""
    bodies = [secret.split("_", 1)[-1].removeprefix("sk-proj-").lower() for secret in SECRETS]
    found = []
    for path in sorted(workspace.rglob("*")):
        name = str(path.relative_to(workspace)).lower()
        data = path.read_bytes().lower() if path.is_file() else b""
        if any(body in name or body.encode() in data for body in bodies):
            found.append(name)
    return found


def records(workspace: Path, session_path: str) -> list[dict[str, Any]]:
    lines = (workspace / session_path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def messages() -> list[dict[str, Any]]:
    """Turns carrying secrets everywhere but in their text (one without an id, one in its role)."""
    return [
        {
            "id": f"msg-{GITHUB}",
            "role": "user",
            "name": f"alice {OPENAI}",
            "content": "please retry the upload",
            "created_at": "2026-06-01T10:00:00Z",
            "metadata": {"tool_call_id": OPENAI, f"key {GITHUB}": "value", "trace": [OTHER]},
        },
        {
            "id": f"msg-{OTHER}",
            "role": "assistant",
            "content": "retrying now",
            "created_at": "2026-06-01T10:01:00Z",
            "tool_calls": [
                {
                    "id": f"call_{GITHUB}",
                    "type": "function",
                    "function": {"name": "upload", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_use", "id": f"toolu_{OPENAI}", "name": "upload", "input": {}}],
            "created_at": "2026-06-01T10:02:00Z",
        },
        {"id": "r1", "role": f"bot {OTHER}", "content": "upload done", "created_at": "2026-06-01T10:02:30Z"},
    ]


async def test_secrets_in_ids_names_roles_and_metadata_reach_no_file(app: ReMe, workspace_dir: Path) -> None:
    response = await app.run("agent_session_append", session_id=S, messages=messages(), source="reme")
    assert response.success, response.answer
    assert leaks(workspace_dir) == []
    saved = records(workspace_dir, response.metadata["session_path"])
    assert [r["content"] for r in saved][:2] == [
        "please retry the upload",
        "retrying now\n[tool call upload: {}]",
    ]
    assert [r["role"] for r in saved] == ["user", "assistant", "user", "bot [REDACTED:github-pat]"]
    assert len({r["id"] for r in saved}) == 4  # two secret-bearing ids stay two ids


async def test_a_secret_bearing_id_is_saved_once_however_often_it_is_appended(
    app: ReMe, workspace_dir: Path
) -> None:
    first = await app.run("agent_session_append", session_id=S, messages=messages(), source="reme")
    again = await app.run("agent_session_append", session_id=S, messages=messages(), source="reme")
    assert first.metadata["added"] == 4
    assert again.success and again.metadata["added"] == 0 and again.answer.startswith("nothing new")
    grown = [
        *messages(),
        {
            "id": f"msg-{OPENAI}",
            "role": "user",
            "content": "and log it",
            "created_at": "2026-06-01T10:03:00Z",
        },
    ]
    third = await app.run("agent_session_append", session_id=S, messages=grown, source="reme")
    assert third.metadata["added"] == 1
    saved = records(workspace_dir, first.metadata["session_path"])
    assert len(saved) == 5 and len({r["id"] for r in saved}) == 5
    assert leaks(workspace_dir) == []


async def test_a_session_id_holding_a_secret_names_no_file(app: ReMe, workspace_dir: Path) -> None:
    turn = {
        "id": "u1",
        "role": "user",
        "content": "remember the release date",
        "created_at": "2026-06-01T10:00:00Z",
    }
    response = await app.run("agent_session_append", session_id=GITHUB, messages=[turn], source="reme")
    assert response.success, response.answer
    assert leaks(workspace_dir) == []
    assert GITHUB not in response.answer and GITHUB not in json.dumps(response.metadata)
    # the same raw id finds the same session: a repeat changes nothing, flush finds its transcript
    again = await app.run("agent_session_append", session_id=GITHUB, messages=[turn], source="reme")
    assert (
        again.answer.startswith("nothing new")
        and again.metadata["session_path"] == response.metadata["session_path"]
    )
    flush = await app.run("agent_session_flush", session_id=GITHUB)
    assert "capture it first" not in flush.answer and "pending" in flush.answer
    (card,) = response.metadata["note_paths"]
    stored = Path(response.metadata["session_path"]).stem
    assert f"session_id: {stored}" in (workspace_dir / card).read_text(encoding="utf-8")
    queue = json.loads((workspace_dir / "metadata/agent_sessions.json").read_text(encoding="utf-8"))
    assert set(queue["sessions"]) == {stored}
    # the index (compressed on disk, so asked instead of read) knows the turn, not the secret
    assert (await app.run("search", query="release date")).metadata["results"]
    assert (await app.run("search", query=GITHUB)).metadata["results"] == []


async def test_auto_memory_stores_a_secret_session_id_as_append_does(app: ReMe, workspace_dir: Path) -> None:
    """auto_memory saves the conversation before it needs a model: under the same safe name."""
    turn = {"id": f"msg-{OPENAI}", "role": "user", "content": "remember the release date"}
    response = await app.run("auto_memory", session_id=GITHUB, messages=[turn])
    assert "pending" in response.answer and GITHUB not in response.answer
    appended = await app.run("agent_session_append", session_id=GITHUB, messages=[turn], source="reme")
    assert appended.answer.startswith("nothing new")  # the same file, the same message id
    assert leaks(workspace_dir) == []


def claude_turn(uuid: str, text: str, ts: str, session: str = GITHUB, kind: str = "user") -> str:
    entry = {
        "type": kind,
        "uuid": uuid,
        "sessionId": session,
        "timestamp": ts,
        "message": {"role": "user", "content": text},
    }
    return json.dumps(entry) + "\n"


async def test_a_hook_capture_of_a_secret_named_session_leaves_no_trace(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """Claude Code names the transcript after its session: the id, the path, the uuids, a record type
    the reader skips all carry the secret. Each drain saves what is new, as turns of this session."""
    transcript = tmp_path / f"{GITHUB}.jsonl"
    transcript.write_text(
        claude_turn(f"u1-{OPENAI}", "first turn", "2026-06-01T10:00:00Z")
        + claude_turn("x1", "noise", "2026-06-01T10:00:01Z", kind=f"custom-{OTHER}")
        + claude_turn("u2", "carried over", "2026-06-01T09:00:00Z", session=f"old-{OTHER}"),
        encoding="utf-8",
    )
    capture = Capture(
        session_id=GITHUB,
        transcript_path=str(transcript),
        source="claude_code",
        event="Stop",
        cwd=None,
        at=0.0,
    )
    write_marker(str(workspace_dir), capture)
    report = await drain_in_app(app, str(workspace_dir))
    assert report.failed == {} and len(report.saved) == 1
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(claude_turn(f"u3-{OPENAI}", "second turn", "2026-06-01T10:05:00Z"))
    write_marker(str(workspace_dir), capture)
    assert (await drain_in_app(app, str(workspace_dir))).failed == {}
    assert leaks(workspace_dir) == []
    (dialog,) = (workspace_dir / "session" / "dialog").glob("*.jsonl")
    saved = [json.loads(line) for line in dialog.read_text(encoding="utf-8").splitlines()]
    assert [r["content"] for r in saved] == ["carried over", "first turn", "second turn"]
    assert saved[0]["metadata"]["session_id"] != dialog.stem  # from the session it resumed
    assert all("metadata" not in r for r in saved[1:])  # this session's own turns, to be distilled
    (card,) = (workspace_dir / "daily" / "2026-06-01").glob("*.md")
    assert "pending: true" in card.read_text(encoding="utf-8")


async def test_a_failed_capture_notes_its_reason_without_the_secret(
    app: ReMe, workspace_dir: Path, tmp_path: Path
) -> None:
    """A message the job refuses (a secret pasted as its timestamp) is quoted in the answer; the
    failure note beside the queued marker keeps the reason, not the secret."""
    transcript = tmp_path / "capture.jsonl"
    bad = {"id": "m1", "role": "user", "content": "hi", "created_at": f"token {GITHUB}"}
    transcript.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    capture = Capture(
        session_id=f"s-{OPENAI}",
        transcript_path=str(transcript),
        source="reme",
        event="capture",
        cwd=None,
        at=0.0,
    )
    write_marker(str(workspace_dir), capture)
    report = await drain_in_app(app, str(workspace_dir))
    ((session, reason),) = report.failed.items()
    assert "not ISO 8601" in reason and GITHUB not in reason
    assert (workspace_dir / "metadata" / "agent" / "captures" / f"{session}.failed").exists()
    assert leaks(workspace_dir) == []


async def test_a_uuid_session_keeps_its_file_name(app: ReMe, workspace_dir: Path) -> None:
    """A UUID is an id, never a secret: the token scanner takes this one (`acca` names a provider)
    for a key, yet the session keeps its name, so its earlier captures and card stay its own."""
    uuid = "4f1c2a9e-8b7d-4c3e-9a10-1acca2b6f0d5"
    turn = {"id": uuid, "role": "user", "content": "hello", "created_at": "2026-06-01T10:00:00Z"}
    response = await app.run("agent_session_append", session_id=uuid, messages=[turn], source="reme")
    assert response.metadata["session_path"] == f"session/dialog/{uuid}.jsonl"
    assert records(workspace_dir, response.metadata["session_path"])[0]["id"] == uuid


def test_a_sent_note_written_by_an_earlier_reme_still_says_where_to_go_on(
    workspace_dir: Path, tmp_path: Path
) -> None:
    """`.sent` keeps a hash of the transcript's path now; one that names the path itself is read as
    before, so an upgrade does not send a long transcript again from its start."""
    transcript = tmp_path / "rollout.jsonl"
    transcript.write_text(claude_turn("u1", "one", "2026-06-01T10:00:00Z"), encoding="utf-8")
    capture = Capture(
        session_id=S, transcript_path=str(transcript), source="claude_code", event="Stop", cwd=None, at=0.0
    )
    write_marker(str(workspace_dir), capture)
    _params, part = append_params(str(workspace_dir), capture)
    saved_up_to(str(workspace_dir), capture, part)
    sent = workspace_dir / "metadata" / "agent" / "captures" / f"{S}.sent"
    note = json.loads(sent.read_text(encoding="utf-8"))
    assert str(transcript) not in sent.read_text(encoding="utf-8")
    note["transcript_path"] = str(transcript)
    del note["transcript"]
    sent.write_text(json.dumps(note), encoding="utf-8")
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(claude_turn("u2", "two", "2026-06-01T10:01:00Z"))
    params, _part = append_params(str(workspace_dir), capture)
    assert [entry["uuid"] for entry in params["messages"]] == ["u2"]
