"""Transcript roles: what chunks record, which questions keep the fused order, the search job end to end."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from reme.index.chunking import chunk_text
from reme.index.speakers import asks_about_replies
from reme.index.store import SCHEMA_VERSION, MetadataStore


@pytest.mark.parametrize(
    "question",
    [
        "What was the name of the bakery you recommended last time?",
        "Can you remind me what you said about the tax deadline?",
        "In our previous conversation, which laptop did you suggest?",
        "You told me about a hiking trail near Lyon, which one was it?",
        "你之前推荐的那本书叫什么?",
        "What did you suggest for my sourdough starter?",
        "How did we fix the login redirect bug?",
        "We decided on a cache key format, what was it?",
        "我们上次讨论的缓存方案是什么?",
        "What was the third item on the list you’ve recommended?",
        "Did you just say the meeting moved?",
        "Can I see your suggestions for the trip again?",
        "您之前推荐的餐厅在哪里?",
        "你给我推荐过什么书?",
    ],
)
def test_questions_about_the_assistants_words_keep_fusions_order(question: str) -> None:
    assert asks_about_replies(question)


@pytest.mark.parametrize(
    "question",
    [
        "How many plants did I acquire in the last month?",
        "Can you recommend a show for me to watch tonight?",
        "What did Caroline say about the adoption agency?",
        "我上个月买了几盆植物?",
        "你推荐一本书吧",
        "Could you suggest a recipe for dinner?",
        "How did we meet?",
        "What did we name our dog?",
        "Remind me when my dentist appointment is, thank you",
        "When is the last session of my yoga class?",
    ],
)
def test_questions_about_the_user_do_not(question: str) -> None:
    assert not asks_about_replies(question)


def _message(index: int, role: str, content: str) -> str:
    return json.dumps(
        {
            "id": f"m{index}",
            "role": role,
            "name": role,
            "content": content,
            "created_at": "2026-06-01T10:00:00",
        }
    )


def test_transcript_chunks_record_the_role_their_messages_share() -> None:
    lines = [
        _message(0, "user", "hi"),
        _message(1, "assistant", "hello"),
        "",
        _message(2, "assistant", " ".join(["long reply about bread"] * 40)),
        _message(3, "user", " ".join(["long question about flour"] * 40)),
    ]
    chunks = chunk_text("session/dialog/s.jsonl", "\n".join(lines) + "\n", transcript_chunk_chars=400)
    by_lines = {(c.start_line, c.end_line): c.role for c in chunks}
    assert by_lines[(1, 2)] == ""  # a user line and a reply packed together: no one role
    assert {c.role for c in chunks if c.start_line == 4} == {"assistant"}  # every piece of the reply
    assert {c.role for c in chunks if c.start_line == 5} == {"user"}
    note = chunk_text("daily/2026-06-01/n.md", "# Day\n\nassistant: words\n")
    assert {c.role for c in note} == {""}


async def test_search_job_answers_with_the_users_line_first_and_keeps_sessions_in_place(app) -> None:
    root: Path = app.workspace_dir
    said = "I bought a monstera last week and I want to keep it healthy, it sits by the window."
    reply = " ".join(
        f"Repotting tip {n}: houseplants like a monstera need fresh soil when you repot." for n in range(4)
    )
    (root / "session/dialog").mkdir(parents=True)
    (root / "session/dialog/plants.jsonl").write_text(
        _message(0, "user", said) + "\n" + _message(1, "assistant", reply) + "\n", encoding="utf-8"
    )
    other = _message(0, "user", "Tell me about repot schedules for houseplants.")
    (root / "session/dialog/leaves.jsonl").write_text(other + "\n", encoding="utf-8")
    await app.run("reindex")

    async def places(query: str) -> list[tuple[str, int, float]]:
        response = await app.run("search", query=query, limit=5, expand_links=False)
        assert response.success, response.answer
        return [(r["path"], r["start_line"], r["score"]) for r in response.metadata["results"]]

    mine = await places("how do I repot houseplants like my monstera")
    theirs = await places("what did you suggest to repot houseplants like my monstera")
    plants = "session/dialog/plants.jsonl"
    assert [(p, line) for p, line, _ in theirs] == [
        (plants, 2),
        (plants, 1),
        ("session/dialog/leaves.jsonl", 1),
    ]
    assert theirs[0][2] > theirs[1][2]  # fused: the reply matches best, and is what this question asks for
    assert [(p, line) for p, line, _ in mine] == [
        (plants, 1),
        (plants, 2),
        ("session/dialog/leaves.jsonl", 1),
    ]
    assert mine[1][2] > mine[0][2]  # the user's own line leads its session; scores are reported as fused


def test_a_catalog_written_before_roles_is_rebuilt(tmp_path: Path) -> None:
    db_path = tmp_path / "catalog.sqlite"
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("CREATE TABLE chunks (chunk_id TEXT PRIMARY KEY, path TEXT, text TEXT)")
    store = MetadataStore(db_path)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert store.get_meta("layout") is None  # nothing recorded: the index service rebuilds
        columns = [row[1] for row in store.query("PRAGMA table_info(chunks)")]
        assert "role" in columns
    finally:
        store.close()


def test_the_gate_reads_a_bounded_start_of_the_question() -> None:
    """A long hostile question cannot make the gate slow: it reads at most QUESTION_CHARS, and
    no pattern spans more than 200 characters between two words (no backtracking over the rest)."""
    from reme.index.speakers import QUESTION_CHARS

    assert asks_about_replies("x " * (QUESTION_CHARS // 2 - 20) + "did you say so?")
    assert not asks_about_replies("x " * QUESTION_CHARS + "did you say so?")
    assert asks_about_replies("remind me " + "a" * 150 + " what you said")
    assert not asks_about_replies("remind me " + "a" * 250 + " what you found")
    assert not asks_about_replies("remind me " * 100_000)
