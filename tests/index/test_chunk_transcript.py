"""Session transcripts and plain text: rendering and line packing."""

from __future__ import annotations

import json

from reme.index.chunking import chunk_text
from reme.workspace.transcript import is_transcript_path
from reme.workspace.transcript import render_line as render_message


def message(content, name="user", role="user", created_at="2024-03-01T09:30:00") -> str:
    return json.dumps({"id": "m", "role": role, "name": name, "content": content, "created_at": created_at})


def test_message_renders_speaker_time_and_text_on_one_line() -> None:
    assert (
        render_message(message("Hello\nthere  friend")) == "[user @ 2024-03-01T09:30:00] Hello there friend"
    )


def test_content_blocks_of_reme_04_are_read() -> None:
    blocks = [
        {"type": "text", "text": "first"},
        {"type": "image", "url": "x"},
        {"type": "text", "text": "second"},
    ]
    assert render_message(message(blocks, name="Alice")) == "[Alice @ 2024-03-01T09:30:00] first second"


def test_role_is_used_when_name_is_missing_and_bad_lines_are_kept() -> None:
    line = json.dumps({"role": "assistant", "content": "ok", "created_at": "t"})
    assert render_message(line) == "[assistant @ t] ok"
    assert render_message("not json at all") == "not json at all"


def test_transcript_chunks_use_jsonl_line_numbers() -> None:
    lines = [
        message(f"message number {i} about tea", created_at=f"2024-03-01T09:{i:02d}:00") for i in range(30)
    ]
    text = "\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]) + "\n"
    chunks = chunk_text("session/dialog/abc.jsonl", text, transcript_chunk_chars=300)
    assert len(chunks) > 3
    rendered = [line for c in chunks for line in c.text.split("\n")]
    assert rendered[0] == "[user @ 2024-03-01T09:00:00] message number 0 about tea"
    assert len(rendered) == 30
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 31
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.text.count("\n") + 1 == chunk.end_line - chunk.start_line + 1 - (
            1 if chunk.start_line <= 11 <= chunk.end_line else 0
        )


def test_long_message_is_cut_into_labelled_parts_on_its_line() -> None:
    text = message("short") + "\n" + message("word " * 400) + "\n" + message("after")
    chunks = chunk_text("session/dialog/long.jsonl", text, transcript_chunk_chars=500)
    parts = [c for c in chunks if c.start_line == 2]
    assert len(parts) >= 4
    assert all(
        c.end_line == 2 and c.text.startswith(f"[Part {i}/{len(parts)}]") for i, c in enumerate(parts, 1)
    )
    assert chunks[0].text.endswith("short") and chunks[-1].text.endswith("after")


def test_only_dialog_jsonl_is_a_transcript() -> None:
    assert is_transcript_path("session/dialog/x.jsonl")
    assert not is_transcript_path("resource/x.jsonl")
    (chunk,) = chunk_text("resource/x.jsonl", message("raw"))
    assert chunk.text.startswith("{")


def test_plain_text_is_packed_by_lines() -> None:
    rows = ["name,city"] + [f"person {i},city {i}" for i in range(100)]
    text = "\n".join(rows)
    chunks = chunk_text("resource/people.csv", text, chunk_chars=200)
    assert len(chunks) > 5
    joined = [line for c in chunks for line in c.text.split("\n")]
    assert joined == rows
    for chunk in chunks:
        assert chunk.text == "\n".join(rows[chunk.start_line - 1 : chunk.end_line])
        assert len(chunk.text) <= 200 and chunk.heading_path == []


def test_long_chinese_message_is_cut_after_punctuation() -> None:
    sentence = "我们今天在杭州西湖边散步，聊到了明年的旅行计划。"
    text = message(sentence * 40, name="小王")
    chunks = chunk_text("session/dialog/zh.jsonl", text, transcript_chunk_chars=200)
    assert len(chunks) > 3
    for chunk in chunks:
        body = chunk.text.split("\n", 1)[1]
        assert len(chunk.text) <= 200 and body[-1] in "，。"
    joined = "".join(chunk.text.split("\n", 1)[1] for chunk in chunks)
    assert joined == f"[小王 @ 2024-03-01T09:30:00] {sentence * 40}"


def test_transcript_search_text_holds_the_bordering_messages() -> None:
    lines = [message(f"turn {i} mentions topic{i}", created_at=f"t{i}") for i in range(12)]
    chunks = chunk_text(
        "session/dialog/ctx.jsonl", "\n".join(lines), transcript_chunk_chars=120, context_chars=50
    )
    assert len(chunks) >= 4
    for before, chunk, after in zip(chunks, chunks[1:], chunks[2:], strict=False):
        assert before.text.split("\n")[-1] in chunk.search_text
        assert after.text.split("\n")[0] in chunk.search_text
        assert before.text.count("\n") >= 1 and before.text.split("\n")[0] not in chunk.search_text


def test_pieces_of_a_long_message_borrow_nothing_while_whole_messages_do() -> None:
    lines = [
        message("my cat Miso loves tuna", created_at="t0"),
        message("tuna and cats " * 60, name="assistant", role="assistant", created_at="t1"),
        message("thanks, what about a collar", created_at="t2"),
    ]
    chunks = chunk_text(
        "session/dialog/parts.jsonl", "\n".join(lines), transcript_chunk_chars=200, context_chars=400
    )
    pieces = [c for c in chunks if c.start_line == c.end_line == 2]
    assert len(pieces) >= 3 and all(c.text.startswith("[Part ") for c in pieces)
    assert all(c.search_text == c.text for c in pieces)
    first, last = chunks[0], chunks[-1]
    assert "Miso" not in pieces[0].search_text and "collar" not in pieces[-1].search_text
    # Whole messages borrow whole pieces of the reply (labels left out) and count their own text twice.
    assert pieces[0].text.split("\n", 1)[1] in first.search_text
    assert pieces[-1].text.split("\n", 1)[1] in last.search_text
    assert "[Part" not in first.search_text and first.search_text.count("Miso") == 2


def test_transcripts_and_notes_are_sized_apart() -> None:
    """A transcript packs messages to transcript_chunk_chars, a note packs lines to chunk_chars."""
    messages = [message("x" * 90, created_at=f"t{i}") for i in range(8)]
    note = "\n".join(f"- line {i} " + "y" * 80 for i in range(8))
    sizes = {"chunk_chars": 200, "transcript_chunk_chars": 1000}
    transcript = chunk_text("session/dialog/s.jsonl", "\n".join(messages), **sizes)
    notes = chunk_text("notes/n.md", note, **sizes)
    assert len(transcript) == 1 and transcript[0].end_line == 8
    assert len(notes) >= 4 and all(len(c.text) <= 200 for c in notes)
