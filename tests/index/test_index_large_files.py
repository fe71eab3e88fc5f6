"""Large files: chunked window by window (bounded memory), the index cap equal to the write cap."""

from __future__ import annotations

import gc
import itertools
import weakref
from pathlib import Path

from reme.index.chunk_markdown import window_bounds
from reme.index.chunking import chunk_text, chunk_windows
from reme.workspace.textio import Limits

FENCE = "```python\n# not a heading\n\nx = 1\n\ny = 2\n```\n"


def document(sections: int = 12) -> str:
    parts = ["---\nname: Big\n---\n# Title\n\nintro line\n\n"]
    for number in range(sections):
        parts.append(f"## Part {number}\n\n")
        parts += [f"paragraph {number}.{p} with some words in it\n\n" for p in range(6)]
        if number % 3 == 0:
            parts.append(FENCE + "\n")
            parts.append(f"### Detail {number}\n\ndetail text {number}\n\n")
    return "".join(parts)


def heading_at(chunks, line: int) -> list[str]:
    return next(c.heading_path for c in chunks if c.start_line <= line <= c.end_line)


def test_windows_keep_lines_headings_and_fences_of_the_whole_file() -> None:
    text = document()
    lines = text.split("\n")
    whole = chunk_text("digest/big.md", text)
    windows = list(chunk_windows("digest/big.md", text, window_chars=300))
    assert len(windows) > 5
    pieces = [chunk for window in windows for chunk in window]
    for chunk in pieces:  # line numbers are the file's, heading paths as if chunked whole
        assert chunk.text.split("\n")[0] in lines[chunk.start_line - 1]
        assert chunk.heading_path == heading_at(whole, chunk.start_line)
    covered = {n for c in pieces for n in range(c.start_line, c.end_line + 1)}
    assert covered >= {n for n in range(5, len(lines) + 1) if lines[n - 1].strip()}  # nothing lost
    assert not any("Big" in c.text for c in pieces)  # front matter stays out of the chunks
    fence_lines = [n for n, line in enumerate(lines, 1) if line.startswith("```")]
    cuts = [start for start, _ in window_bounds(lines, 4, 300)]
    for opening, closing in zip(fence_lines[::2], fence_lines[1::2], strict=True):
        assert not any(opening < cut <= closing for cut in cuts)  # never inside a code fence


def test_a_huge_code_fence_is_still_cut() -> None:
    lines = ["# Dump", "```", *(f"row {n}" for n in range(2000)), "```", "after"]
    bounds = list(window_bounds(lines, 1, 1000))
    sizes = [sum(len(line) + 1 for line in lines[start - 1 : end]) for start, end in bounds]
    assert len(bounds) > 3 and max(sizes) <= 4 * 1000 + 10  # at most FENCE_WINDOWS windows long
    assert bounds[0][0] == 1 and bounds[-1][1] == len(lines)
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(bounds))  # each line in one window


def test_a_file_within_one_window_chunks_exactly_as_before() -> None:
    text = document(3)
    assert [c for window in chunk_windows("digest/a.md", text) for c in window] == chunk_text(
        "digest/a.md", text
    )
    plain = "\n".join(f"line {n}" for n in range(500))
    pieces = [c for w in chunk_windows("notes/a.txt", plain, window_chars=400) for c in w]
    assert sorted(n for c in pieces for n in range(c.start_line, c.end_line + 1)) == list(range(1, 501))
    assert all(c.text == "\n".join(plain.split("\n")[c.start_line - 1 : c.end_line]) for c in pieces)


async def test_the_indexer_drops_each_window_before_chunking_the_next(app, monkeypatch) -> None:
    import reme.index.sync as sync

    real = sync.chunk_windows
    earlier: list[list[weakref.ref]] = []
    held: list[int] = []

    def spied(path: str, text: str, **kwargs):
        for window in real(path, text, window_chars=2000, **kwargs):
            gc.collect()  # chunks still alive from windows before the one just handed over:
            held.append(sum(ref() is not None for refs in earlier[:-1] for ref in refs))
            earlier.append([weakref.ref(chunk) for chunk in window])
            yield window

    monkeypatch.setattr(sync, "chunk_windows", spied)
    text = document(40)
    response = await app.run("write", path="digest/big.md", content=text)
    assert response.success and len(held) > 5
    assert held == [0] * len(held)  # at most the window in hand and the one before it
    index = app.component("index").service
    rows = index.store.query("SELECT COUNT(*), MIN(start_line), MAX(end_line) FROM chunks")[0]
    assert rows[0] == index.keyword.num_docs and rows[2] == len(text.rstrip("\n").split("\n"))
    hits = (await app.run("search", query="detail text 39")).metadata["results"]
    assert hits[0]["path"] == "digest/big.md" and "detail text 39" in hits[0]["text"]


async def test_index_cap_is_the_write_cap(app) -> None:
    assert (
        app.component("index").service.settings.max_file_bytes == Limits().max_text_bytes == 16 * 1024 * 1024
    )


async def test_a_file_over_the_cap_is_catalogued_not_chunked(app, tmp_path: Path) -> None:
    index = app.component("index").service
    big = app.workspace_dir / "digest/huge.md"
    with big.open("wb") as out:
        out.truncate(index.settings.max_file_bytes + 1)  # sparse: no memory, no time
    index.sync_paths(["digest/huge.md"])
    row = index.store.file("digest/huge.md")
    assert "larger than max_file_bytes" in row.error and row.keyword_docs == 0
