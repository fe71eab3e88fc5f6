"""The chunk record and the line-packing helpers every chunker shares."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from reme.workspace.dates import path_day

# Notes and transcripts are sized apart, each by leave-one-out over LoCoMo and LongMemEval
# (benchmarks/README.md, "Round two"): notes pack lines into 300 characters (LoCoMo turn recall
# within 2,000 characters up in every fold); transcripts keep 400, as 300 cuts long replies into
# more pieces and loses LongMemEval session recall.
DEFAULT_CHUNK_CHARS = 300
DEFAULT_TRANSCRIPT_CHUNK_CHARS = 400
# Neighbouring text (whole lines, at least one per side) added to a chunk's search text only.
DEFAULT_CONTEXT_CHARS = 400
# Bump when the same text and settings would give different chunks or search text (indexes rebuild).
CHUNKER_VERSION = 6  # 6: bare headings packed by the budget, long headings cut in the heading path


@dataclass(frozen=True)
class Chunk:
    """A searchable span of one file: 1-based inclusive line range plus where it sits."""

    id: str
    path: str
    start_line: int
    end_line: int
    text: str
    heading_path: list[str] = field(default_factory=list)
    # What the keyword index tokenizes: heading path, the path's date in words, bordering lines and
    # the chunk's own text, counted twice (see with_neighbour_context).
    search_text: str = ""
    # Transcripts: the role every message of the chunk shares (`user`, `assistant`); '' when mixed or not a transcript.
    role: str = ""


def make_chunk(
    path: str,
    start_line: int,
    end_line: int,
    text: str,
    heading_path: list[str],
    extra_search_text: str = "",
    role: str = "",
) -> Chunk:
    """Build a chunk whose id is a stable hash of (path, lines, text)."""
    digest = hashlib.sha1(f"{path}\0{start_line}\0{end_line}\0{text}".encode()).hexdigest()[:16]
    context = " > ".join(heading_path)
    parts = (context, path_date_words(path), extra_search_text, text)
    search_text = "\n".join(part for part in parts if part)
    return Chunk(digest, path, start_line, end_line, text, list(heading_path), search_text, role)


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def path_date_words(path: str) -> str:
    """The date that starts a path's second segment (``daily/2023-05-08.md``) as ``8 May 2023``.

    A question names a day the way people write it ("on 8 May", "in May 2023"), which the
    file's ``2023-05-08`` alone never matches. Empty for undated paths.
    """
    day = path_day(path)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}" if day else ""


_BREAK_AFTER = (" ", "\t", "\u3002", "\uff01", "\uff1f", "\uff1b", "\uff0c", "\u3001")  # space, 。！？；，、


def split_long_line(line: str, budget: int) -> list[str]:
    """Cut one over-long line into pieces of at most ``budget`` characters.

    Cuts go after the last space or Chinese punctuation mark in the second half of the budget
    (Chinese has no spaces), and mid-word only when there is none.
    """
    pieces: list[str] = []
    start = 0
    while len(line) - start > budget:
        limit = start + budget
        cut = max(line.rfind(mark, start + budget // 2, limit) for mark in _BREAK_AFTER) + 1
        cut = cut if cut > 0 else limit
        pieces.append(line[start:cut].rstrip())
        start = cut
        while start < len(line) and line[start].isspace():
            start += 1
    if start < len(line) or not pieces:
        pieces.append(line[start:])
    return pieces


@dataclass(frozen=True)
class Span:
    """Text covering file lines ``start``..``end`` (1-based, inclusive)."""

    start: int
    end: int
    text: str


_LABEL_ROOM = 20
_PART_LABEL = re.compile(r"^\[Part \d+/\d+\]$")  # room kept for a "[Part i/N]" label


def pack_lines(numbered: Iterable[tuple[int, str]], budget: int, *, label_cuts: bool = True) -> list[Span]:
    """Greedily pack (line number, text) pairs into spans of at most ``budget`` characters.

    Blank lines at the edges of a span are dropped. A line longer than the budget becomes
    its own spans, cut into pieces that all keep its line number, labelled ``[Part i/N]``
    unless the caller labels the parts itself (``label_cuts=False``).
    """
    spans: list[Span] = []
    current: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        group = trim_blank_edges(current)
        if group:
            spans.append(Span(group[0][0], group[-1][0], "\n".join(line for _, line in group)))
        current, size = [], 0

    for number, line in numbered:
        if len(line) > budget:
            flush()
            pieces = split_long_line(line, max(budget - _LABEL_ROOM, 1))
            if label_cuts:
                pieces = label_parts(pieces)
            spans.extend(Span(number, number, piece) for piece in pieces)
            continue
        if current and size + len(line) + 1 > budget:
            flush()
        current.append((number, line))
        size += len(line) + 1
    flush()
    return spans


def trim_blank_edges(group: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Drop blank lines at both ends of a run of numbered lines."""
    start, end = 0, len(group)
    while start < end and not group[start][1].strip():
        start += 1
    while end > start and not group[end - 1][1].strip():
        end -= 1
    return group[start:end]


def label_parts(texts: list[str]) -> list[str]:
    """Prefix each piece of a split leaf with ``[Part i/N]`` (a single piece stays unlabelled)."""
    if len(texts) == 1:
        return texts
    return [f"[Part {i}/{len(texts)}]\n{text}" for i, text in enumerate(texts, 1)]


def with_neighbour_context(
    chunks: list[Chunk], context_chars: int, *, cut_pieces_borrow: bool = True
) -> list[Chunk]:
    """Let each chunk's search text also hold the lines around it in its section, and its own twice.

    A question often shares its words with the turns next to the answer (a question and its
    reply, a heading and its first line); borrowing up to ``context_chars`` of whole lines on each
    side (at least one, across as many neighbouring chunks of the section as that takes) lets small,
    precise chunks match like bigger ones, while the returned text stays the chunk's own lines.
    The chunk's own text is counted twice, so of two chunks sharing the same words the one that
    holds them itself outranks the one that only borders them.

    With ``cut_pieces_borrow=False`` the ``[Part i/N]`` pieces of one over-long line keep their
    own text only: the pieces of a long transcript message are each other's neighbours, and
    borrowing would let every piece of one long reply match the same words and crowd the results.
    """
    if context_chars <= 0:
        return chunks
    edges = [searchable_lines(chunk.text) for chunk in chunks]
    result = []
    for index, chunk in enumerate(chunks):
        if not cut_pieces_borrow and _is_cut_piece(chunk):
            result.append(chunk)
            continue
        before = take_lines(_section_lines(chunks, edges, index, -1), context_chars)
        after = take_lines(_section_lines(chunks, edges, index, 1), context_chars)
        head = chunk.search_text[: len(chunk.search_text) - len(chunk.text)]
        body = "\n".join([*reversed(before), chunk.text, *after, chunk.text])
        result.append(dataclasses.replace(chunk, search_text=head + body))
    return result


def _is_cut_piece(chunk: Chunk) -> bool:
    """A labelled piece of one over-long line (a long message's ``[Part i/N]``)."""
    return chunk.start_line == chunk.end_line and chunk.text.startswith("[Part ")


def searchable_lines(text: str) -> list[str]:
    """The lines of a chunk worth borrowing: not blank, not a ``[Part i/N]`` label."""
    return [line for line in text.split("\n") if line.strip() and not _PART_LABEL.match(line)]


def _section_lines(chunks: list[Chunk], edges: list[list[str]], index: int, step: int) -> Iterator[str]:
    """Lines of the chunks before (``step`` -1, nearest first) or after (+1) ``index`` in its section."""
    position = index + step
    while 0 <= position < len(chunks) and chunks[position].heading_path == chunks[index].heading_path:
        yield from reversed(edges[position]) if step < 0 else edges[position]
        position += step


def take_lines(lines: Iterable[str], budget: int) -> list[str]:
    """Whole lines in the order given: at least one, then more while within ``budget`` characters."""
    taken: list[str] = []
    size = 0
    for line in lines:
        if taken and size + len(line) > budget:
            break
        taken.append(line)
        size += len(line) + 1
    return taken
