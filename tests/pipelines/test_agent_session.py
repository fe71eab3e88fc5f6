"""agent_session_append / agent_session_flush over hand-written Claude Code and Codex session files.

Every assertion reads the files on disk: the saved transcript, the pending card, the queue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from tests.pipelines.conftest import scripted
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)

from reme import ReMe
from reme.pipelines.capture.transcripts import codex_session_id, read_claude_code, read_codex
from reme.pipelines.recall import OPEN

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
S1 = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
S2 = "9d3e5b71-2c4a-4f8e-b6d0-7a1c3e9f2b44"
CODEX = "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"
SECRETS = (
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "ghp_R2d2C3poBb8Ee4Ll9Ww0Xx7Yy6Zz5Aa1Kk3Mm",
    "eyJhbGciOiJIUzI1NiJ9",
    "AKIAQ3EGUKLB7XRZ2M4P",
    "hunter2hunter2",
)


def entries(name: str) -> list[dict[str, Any]]:
    path = next(FIXTURES.glob(name))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def saved(app: ReMe, session_id: str) -> list[dict[str, Any]]:
    path = app.workspace_dir / f"session/dialog/{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def front_matter(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n", 2)[1])


# readers ---------------------------------------------------------------------------------------


def test_claude_code_reader_keeps_the_conversation_and_leaves_out_the_noise() -> None:
    reading = read_claude_code(entries("claude_session.jsonl"), S1)
    by_id = {m["id"]: m for m in reading.messages}
    assert reading.skipped == {"summary": 1, "sidechain": 2, "meta": 1, "compact_summary": 1}
    assert "SIDECHAIN" not in json.dumps(reading.messages) and "COMPACT-RECAP" not in json.dumps(
        reading.messages
    )
    first_reply = by_id["e8a2c4d6-0000-4000-8000-00000000a001"]["content"]
    assert first_reply.startswith("I'll look at the HTTP client first.\n[tool call Read:")
    assert "The user wants retry logic" not in first_reply  # thinking is dropped
    result = by_id["e8a2c4d6-0000-4000-8000-00000000t001"]
    assert result["name"] == "tool" and result["metadata"] == {"kind": "tool_result"}
    assert result["content"].startswith("[tool result: import httpx") and len(result["content"]) < 500
    assert by_id["e8a2c4d6-0000-4000-8000-00000000u002"]["content"].endswith("[image]")
    compaction = by_id["e8a2c4d6-0000-4000-8000-00000000c001"]
    assert compaction["role"] == "system" and compaction["content"] == "[conversation compacted (auto)]"
    assert all(m["created_at"].startswith("2026-06-01T") for m in reading.messages)


def test_codex_reader_reads_the_rollout_and_its_session_id() -> None:
    lines = entries("rollout-*.jsonl")
    reading = read_codex(lines)
    assert codex_session_id(lines) == CODEX
    assert [m["role"] for m in reading.messages] == ["user", "assistant", "user", "assistant"]
    assert reading.messages[1]["content"].startswith(
        '[tool call shell: {"command": ["bash", "-lc", "make build"]'
    )
    assert reading.messages[2]["content"].startswith("[tool result: fatal error: openssl/ssl.h")
    assert "environment_context" not in json.dumps(reading.messages)
    assert reading.skipped["event_msg"] == 2 and reading.skipped["reasoning"] == 1


# append ----------------------------------------------------------------------------------------


async def test_append_saves_a_redacted_transcript_and_queues_a_pending_card(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    response = await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    assert response.success, response.answer
    meta = response.metadata
    assert meta["added"] == 10 and meta["queued"] is True
    assert meta["note_paths"] == [f"daily/2026-06-01/{S1}.md"]
    records = saved(app, S1)
    assert [r["id"][-4:] for r in records] == [
        "u001",
        "a001",
        "t001",
        "a002",
        "t002",
        "a003",
        "u002",
        "u003",
        "c001",
        "a004",
    ]
    text = (app.workspace_dir / f"session/dialog/{S1}.jsonl").read_text(encoding="utf-8")
    assert not [s for s in SECRETS if s in text]
    assert "[REDACTED:high-entropy-token]" in text and "[REDACTED:github-pat]" in text
    assert "[REDACTED:authorization-header]" in text
    assert "base64" not in text and "iVBOR" not in text
    assert "reme-context" not in text and "RECALLED" not in text  # recalled memory is never re-memorised
    assert records[7]["content"] == "Also log every retry at WARNING level."
    card = app.workspace_dir / meta["note_paths"][0]
    assert front_matter(card)["pending"] is True and front_matter(card)["session_id"] == S1
    queue = json.loads((app.workspace_dir / "metadata/agent_sessions.json").read_text(encoding="utf-8"))
    assert set(queue["sessions"]) == {S1} and queue["sessions"][S1]["source"] == "claude_code"


async def test_the_same_turns_twice_change_nothing_and_new_turns_add_only_themselves(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    lines = entries("claude_session.jsonl")
    await app.run("agent_session_append", session_id=S1, messages=lines[:5], source="claude_code")
    path = app.workspace_dir / f"session/dialog/{S1}.jsonl"
    first = path.read_bytes()
    again = await app.run("agent_session_append", session_id=S1, messages=lines[:5], source="claude_code")
    assert again.success and again.metadata["added"] == 0 and again.metadata["queued"] is False
    assert path.read_bytes() == first
    grown = await app.run("agent_session_append", session_id=S1, messages=lines, source="claude_code")
    assert grown.metadata["added"] == 6
    assert path.read_bytes().startswith(first)  # the earlier turns stay as they were, in order
    assert len(saved(app, S1)) == 10


async def test_a_resumed_session_keeps_the_copied_turns_once_and_marks_where_they_came_from(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    lines = entries("claude_resumed.jsonl")
    response = await app.run("agent_session_append", session_id=S2, messages=lines, source="claude_code")
    assert response.success and response.metadata["added"] == 4
    records = saved(app, S2)
    assert [r.get("metadata", {}).get("session_id") for r in records] == [S1, S1, None, None]
    assert records[2]["content"] == "Resuming: make the attempt count configurable."
    # the copied turns (2026-06-01) belong to S1's own card: only the new day is pending for S2
    assert response.metadata["note_paths"] == [f"daily/2026-06-02/{S2}.md"]
    assert response.metadata["carried_over"] == 2
    assert not (app.workspace_dir / f"daily/2026-06-01/{S2}.md").exists()
    copied_only = await app.run(
        "agent_session_append", session_id="copy-only", messages=lines[:2], source="claude_code"
    )
    assert copied_only.success and copied_only.metadata["added"] >= 1
    assert copied_only.metadata["queued"] is False
    assert copied_only.metadata["note_paths"] == []
    again = await app.run("agent_session_append", session_id=S2, messages=lines, source="claude_code")
    assert again.metadata["added"] == 0


async def test_codex_rollout_is_captured_with_stable_ids(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    lines = entries("rollout-*.jsonl")
    first = await app.run("agent_session_append", session_id=CODEX, messages=lines, source="codex")
    assert first.success and first.metadata["added"] == 4
    text = (app.workspace_dir / f"session/dialog/{CODEX}.jsonl").read_text(encoding="utf-8")
    assert "AKIAQ3EGUKLB7XRZ2M4P" not in text and "hunter2hunter2" not in text
    again = await app.run("agent_session_append", session_id=CODEX, messages=lines, source="codex")
    assert again.metadata["added"] == 0


async def test_plain_messages_are_cleaned_too(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    messages = [
        {
            "id": "m1",
            "role": "user",
            "content": "my token: abcd1234efgh <reme-context>old memory</reme-context> go",
        },
        {
            "id": "m2",
            "role": "assistant",
            "content": f"{OPEN}only recalled",
        },  # recall's own, unclosed: to the end
        {"id": "m3", "role": "user", "content": "what does <reme-context> do? and the rest stays"},
    ]
    response = await app.run("agent_session_append", session_id="plain-1", messages=messages)
    assert response.success and response.metadata["added"] == 2
    assert [r["content"] for r in saved(app, "plain-1")] == [
        "my token: [REDACTED:secret-assignment]  go",
        "what does <reme-context> do? and the rest stays",
    ]


def test_strip_context_cuts_whole_blocks_and_only_recalls_own_unclosed_one() -> None:
    from reme.pipelines.capture.session import strip_context

    assert strip_context("a <reme-context x='1'>old</REME-CONTEXT> b") == "a  b"
    assert strip_context(f"keep {OPEN}recalled to the end") == "keep"
    assert strip_context("I typed <reme-context trust='x'> by hand, keep this") == (
        "I typed <reme-context trust='x'> by hand, keep this"
    )
    many = "<reme-context>" * 50_000 + " tail"  # linear: no closing tag is searched for twice
    assert strip_context(many) == many.strip()


async def test_bad_input_is_refused_and_nothing_is_written(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    lines = entries("claude_session.jsonl")
    for params, needle in (
        ({"session_id": "../escape", "messages": lines, "source": "claude_code"}, "session_id"),
        ({"session_id": "ok", "messages": lines, "source": "cursor"}, "source"),
        ({"session_id": "ok", "messages": [{"content": "no role"}]}, "role"),
        ({"session_id": "ok", "messages": "not a list"}, "messages"),
    ):
        response = await app.run("agent_session_append", **params)
        assert response.success is False and needle in response.answer, response.answer
    assert not (app.workspace_dir / "session/dialog").exists() or not list(
        (app.workspace_dir / "session/dialog").iterdir()
    )
    assert not (app.workspace_dir / "metadata/agent_sessions.json").exists()


# flush and the queue ---------------------------------------------------------------------------


def card_script(body: str, name: str) -> list[dict[str, Any]]:
    return [
        {"tool": "read", "args": {"path": "$card_path"}},
        {"tool": "write", "args": {"path": "$card_path", "content": body}},
        {"output": {"name": name, "description": "Retries for the solar API."}},
    ]


async def test_flush_distils_the_pending_card_and_empties_the_queue(make_port_app: MakePortApp) -> None:
    app = make_port_app(
        **scripted(card_script("# Solar retries\n\n- tenacity, 5 attempts\n", "solar-retries"))
    )
    await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    response = await app.run("agent_session_flush", session_id=S1)
    assert response.success, response.answer
    card = app.workspace_dir / response.metadata["note_path"]
    assert card.name == "solar-retries.md"
    assert "tenacity, 5 attempts" in card.read_text(encoding="utf-8")
    assert not front_matter(card).get("pending")
    queue = json.loads((app.workspace_dir / "metadata/agent_sessions.json").read_text(encoding="utf-8"))
    assert queue["sessions"] == {}


async def test_flush_without_a_model_says_so_and_keeps_the_card_pending(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    response = await app.run("agent_session_flush", session_id=S1)
    assert response.success is False and "pending" in response.answer and "LLM" in response.answer
    assert front_matter(app.workspace_dir / f"daily/2026-06-01/{S1}.md")["pending"] is True
    unknown = await app.run("agent_session_flush", session_id="never-seen")
    assert unknown.success is False and "capture it first" in unknown.answer


async def test_the_queue_run_distils_only_idle_sessions(make_port_app: MakePortApp) -> None:
    from reme.pipelines.capture.session import distil_queue

    app = make_port_app(**scripted(card_script("# Done\n", "done")))
    await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    port = app.port
    waiting = await distil_queue(port, idle_seconds=3600, limit=10, add_usage=lambda usage: None)
    assert waiting.metadata["distilled"] == []
    assert front_matter(app.workspace_dir / f"daily/2026-06-01/{S1}.md")["pending"] is True
    done = await distil_queue(port, idle_seconds=0, limit=10, add_usage=lambda usage: None)
    assert done.metadata == {"distilled": [S1], "failed": []}
    assert not front_matter(app.workspace_dir / "daily/2026-06-01/done.md").get("pending")


async def test_the_queue_run_without_a_model_moves_nothing(make_port_app: MakePortApp) -> None:
    from reme.pipelines.capture.session import distil_queue

    app = make_port_app()
    await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    outcome = await distil_queue(app.port, idle_seconds=0, limit=10, add_usage=lambda usage: None)
    assert "1 session(s) wait" in outcome.answer
    queue = json.loads((app.workspace_dir / "metadata/agent_sessions.json").read_text(encoding="utf-8"))
    assert set(queue["sessions"]) == {S1}


async def test_a_session_that_keeps_failing_is_left_alone_until_it_grows(make_port_app: MakePortApp) -> None:
    from reme.pipelines.capture.session import MAX_FAILURES, distil_queue

    app = make_port_app(**scripted([{"tool": "no_such_tool", "args": {}}] * 200))
    lines = entries("claude_session.jsonl")
    await app.run("agent_session_append", session_id=S1, messages=lines[:5], source="claude_code")
    port = app.port
    for _ in range(MAX_FAILURES):
        outcome = await distil_queue(port, idle_seconds=0, limit=10, add_usage=lambda usage: None)
        assert [f["session_id"] for f in outcome.metadata["failed"]] == [S1]
    rested = await distil_queue(port, idle_seconds=0, limit=10, add_usage=lambda usage: None)
    assert rested.metadata == {"distilled": [], "failed": []}
    await app.run("agent_session_append", session_id=S1, messages=lines, source="claude_code")
    retried = await distil_queue(port, idle_seconds=0, limit=10, add_usage=lambda usage: None)
    assert [f["session_id"] for f in retried.metadata["failed"]] == [S1]
    assert front_matter(app.workspace_dir / f"daily/2026-06-01/{S1}.md")["pending"] is True


def test_a_failed_tool_call_and_unknown_entries_read_as_such() -> None:
    failed = {
        "type": "user",
        "uuid": "u-err",
        "timestamp": "2026-06-01T10:00:00Z",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "is_error": True,
                    "content": "Exit code 1\nmake: *** [build] Error 1",
                }
            ],
        },
    }
    reading = read_claude_code([failed, {"type": "file-history-snapshot", "messageId": "x"}, "junk"], "s")
    assert [m["content"] for m in reading.messages] == [
        "[tool result (error): Exit code 1 make: *** [build] Error 1]"
    ]
    assert reading.skipped == {"file-history-snapshot": 1, "not_an_object": 1}


def test_the_older_codex_rollout_form_reads_the_same() -> None:
    """Early Codex CLI rollouts: a first `{id, timestamp, instructions}` line, then bare items."""
    lines = [
        {"id": CODEX, "timestamp": "2026-03-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the tests"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command": ["ls", "tests"]}',
            "call_id": "c1",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output": "test_a.py\\n", "metadata": {}}',
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "One test file."}],
        },
    ]
    reading = read_codex(lines)
    assert codex_session_id(lines) == CODEX
    assert [m["content"] for m in reading.messages] == [
        "List the tests",
        '[tool call shell: {"command": ["ls", "tests"]}]',
        "[tool result: test_a.py]",
        "One test file.",
    ]
