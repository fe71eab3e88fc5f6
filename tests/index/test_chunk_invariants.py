"""Chunker invariants on generated Markdown and on the real LoCoMo day notes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from reme.index.chunking import Chunk, chunk_text
from reme.workspace.fmsplit import split as split_front_matter

WORDS = st.sampled_from(
    ["alpha", "beta", "gamma", "delta", "tea", "2024", "**bold**", "`code`", "[[link]]", "你好"]
)
PHRASE = st.one_of(
    st.lists(WORDS, min_size=1, max_size=8).map(" ".join),
    st.lists(WORDS, min_size=20, max_size=80).map(" ".join),  # often longer than the budget
)


def _block(kind: str, phrases: list[str]) -> list[str]:
    if kind == "heading":
        return [f"{'#' * (len(phrases) % 4 + 1)} {phrases[0]}"]
    if kind == "list":
        return (
            [f"- {p}" if i % 3 else f"  {p}" for i, p in enumerate(phrases)]
            if len(phrases) > 1
            else [f"- {phrases[0]}"]
        )
    if kind == "ordered":
        return [f"{i + 1}. {p}" for i, p in enumerate(phrases)]
    if kind == "table":
        return ["| a | b |", "|---|---|", *[f"| {p} | {i} |" for i, p in enumerate(phrases)]]
    if kind == "fence":
        return ["```text", *phrases, "```"]
    if kind == "open_fence":
        return ["~~~", *phrases]
    if kind == "quote":
        return [f"> {p}" for p in phrases]
    if kind == "setext":
        return [phrases[0], "---"]
    if kind == "html":
        return ["<div>", *phrases, "</div>"]
    return phrases  # paragraph


BLOCK = st.tuples(
    st.sampled_from(
        ["heading", "list", "ordered", "table", "fence", "open_fence", "quote", "setext", "html", "para"]
    ),
    st.lists(PHRASE, min_size=1, max_size=12),
    st.sampled_from(["", "\n"]),
)
FRONT_MATTER = st.sampled_from(["", "---\nname: x\n---\n", "---\nname: [broken\n---\n", "---\nno end\n"])


def check_invariants(path: str, text: str, chunks: list[Chunk], budget: int) -> None:
    lines = text.split("\n")
    assert len({c.id for c in chunks}) == len(chunks)
    previous_end = 0
    headings = _heading_lines(text)
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        same_cut_line = chunk.start_line == chunk.end_line == previous_end
        assert chunk.start_line > previous_end or same_cut_line, "chunks overlap or go backwards"
        previous_end = chunk.end_line
        assert chunk.text.strip() and chunk.text in chunk.search_text
        assert chunk.text.count("[Part ") <= 1
        # Headings waiting for content ride along with the next chunk, on top of its budget.
        span = range(chunk.start_line, chunk.end_line + 1)
        heading_room = sum(len(lines[n - 1]) + 1 for n in span if n in headings)
        assert len(chunk.text) <= budget + heading_room + 40
    # Front matter is searchable through the first chunk's search text, not its text.
    shown = {line for chunk in chunks for line in chunk.search_text.split("\n")}
    for line in lines:
        if line.strip() and line.strip() not in ("---", "..."):
            assert line.rstrip("\r") in shown or len(line) > budget - 20, f"line lost: {line!r}"


def _heading_lines(text: str) -> set[int]:
    """1-based numbers of the lines that make up headings (ATX and setext), per markdown-it, in the
    body as the chunker sees it: front matter blanked (an unclosed fence in it must not swallow the body)."""
    head = split_front_matter(text).head(text)
    tokens = MarkdownIt("commonmark").parse("\n" * head.count("\n") + text[len(head) :])
    return {n + 1 for t in tokens if t.type == "heading_open" and t.map for n in range(t.map[0], t.map[1])}


@settings(max_examples=60, deadline=None)
@given(FRONT_MATTER, st.lists(BLOCK, min_size=1, max_size=14), st.integers(min_value=60, max_value=500))
@example(
    "---\nno end\n",
    [("open_fence", ["alpha"], ""), ("setext", ["alpha"], ""), ("heading", ["alpha " * 20], "")],
    60,
)
def test_generated_markdown_keeps_every_invariant(front: str, blocks, budget: int) -> None:
    parts = [front.rstrip("\n")] if front else []
    for kind, phrases, gap in blocks:
        parts.append("\n".join(_block(kind, phrases)) + gap)
    text = "\n".join(parts) + "\n"
    chunks = chunk_text("digest/gen/x.md", text, chunk_chars=budget)
    check_invariants("digest/gen/x.md", text, chunks, budget)
    assert [c.id for c in chunk_text("digest/gen/x.md", text, chunk_chars=budget)] == [c.id for c in chunks]


LOCOMO_NOTES = sorted(
    (Path(__file__).resolve().parents[2].parent / "shared/data/locomo/notes").glob("*/notes/*.md")
)


@pytest.mark.skipif(not LOCOMO_NOTES, reason="evaluation data not mounted")
def test_locomo_day_notes_chunk_exactly_into_their_lines() -> None:
    for note in LOCOMO_NOTES:
        text = note.read_text(encoding="utf-8")
        path = f"daily/{note.name}"
        chunks = chunk_text(path, text, chunk_chars=600)
        check_invariants(path, text, chunks, 600)
        lines = text.split("\n")
        date = note.stem
        for chunk in chunks:
            assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
            assert chunk.heading_path[0] == date and chunk.heading_path[1].startswith("Session ")
            assert chunk.search_text.startswith(f"{date} > Session ")
        turns = {n for n, line in enumerate(lines, 1) if line.startswith("- **")}
        covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
        assert turns <= covered


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(PHRASE, st.just("")), min_size=1, max_size=40),
    st.integers(min_value=40, max_value=400),
)
def test_generated_plain_text_is_packed_without_loss(lines: list[str], budget: int) -> None:
    text = "\n".join(lines)
    chunks = chunk_text("resource/notes.txt", text, chunk_chars=budget)
    check_invariants("resource/notes.txt", text, chunks, budget)
    pieces = [c.text.split("\n", 1)[1] if c.text.startswith("[Part ") else c.text for c in chunks]
    rebuilt = "".join("".join(p.split()) for p in pieces)
    assert rebuilt == "".join("".join(line.split()) for line in lines)
