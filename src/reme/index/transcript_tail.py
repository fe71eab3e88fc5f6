"""The end of a transcript that grew, chunked alone: what chunking the whole file gives from there on.

A capture appends a session's new messages to its transcript part by part, and re-chunking and
re-indexing the whole file for every part made a long session's capture grow with the square of
its parts (benchmarks/README.md, "Huge transcript"). When a transcript only grew (its old bytes
unchanged, the old text ending with a newline), its old chunks stay what they were except the last
ones: the last span may take the new messages, and a chunk whose borrowed context ran to the old
end borrows new lines now. Those few are chunked again with the new lines; the index replaces only
them. The result equals chunking the whole new text (tests/index/test_transcript_tail.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reme.index.chunk_base import Chunk, make_chunk, searchable_lines, take_lines, with_neighbour_context
from reme.index.chunk_transcript import chunk_transcript
from reme.index.store import ChunkRow


@dataclass(frozen=True)
class Tail:
    keep: int  # the first `keep` catalogued chunks stay as they are
    old: list[Chunk]  # the catalogued chunks from `keep` on, with the search text they were indexed with
    new: list[Chunk]  # what replaces them: the whole new text's chunks from `keep` on


def transcript_tail(
    path: str, rows: Sequence[ChunkRow], text: str, chunk_chars: int, context_chars: int
) -> Tail | None:
    """The chunks of `text` (the grown transcript) that differ from `rows` (the old text's chunks,
    made with the same settings: a change of settings rebuilds the index first); None when a row
    this needs is not a chunk this chunker makes (then index the file whole). Only the rows near
    the end are read again: the work is bounded by the context, not by the file."""
    if not rows:
        return None
    keep = _first_changed(rows, context_chars)
    before = _context_start(rows, keep, context_chars)
    old = [make_chunk(path, r.start_line, r.end_line, r.text, [], role=r.role) for r in rows[before:]]
    if any(chunk.id != row.chunk_id for chunk, row in zip(old, rows[before:], strict=True)):
        return None
    start = rows[keep].start_line
    lines = text.split("\n")
    new = chunk_transcript(path, "\n".join(lines[start - 1 :]), chunk_chars, first_line=start)
    borrowed = with_neighbour_context(old[: keep - before] + new, context_chars, cut_pieces_borrow=False)
    indexed = with_neighbour_context(old, context_chars, cut_pieces_borrow=False)
    return Tail(keep, indexed[keep - before :], borrowed[keep - before :])


def _first_changed(rows: Sequence[ChunkRow], context_chars: int) -> int:
    """The first old chunk that new lines can change: the last span (it may take them), any chunk
    whose context took every line to the old end, and a long line's earlier pieces with its last."""
    first = len(rows) - 1
    after = searchable_lines(rows[first].text)
    for index in range(len(rows) - 2, -1, -1):
        if len(take_lines(after, context_chars)) < len(after):
            break  # its context stops before the old end, and so does every earlier chunk's
        first = index
        after = searchable_lines(rows[index].text) + after
    while first > 0 and rows[first - 1].end_line >= rows[first].start_line:
        first -= 1  # the pieces of one long line are chunked together
    return first


def _context_start(rows: Sequence[ChunkRow], keep: int, context_chars: int) -> int:
    """The first old chunk the context of chunk `keep` can borrow from: going back until the lines
    passed exceed what `take_lines` takes."""
    index, size = keep, 0
    while index > 0 and size <= context_chars:
        index -= 1
        size += sum(len(line) + 1 for line in searchable_lines(rows[index].text))
    return index
