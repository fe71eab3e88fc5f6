"""Markdown chunker: AST blocks folded into sections, packed by size, split by kind when too big.

Chunks never cross a heading. A section with no body of its own (e.g. ``# 2023-05-08`` right
above ``## Session 1``) lends its heading line to the next chunk, so no text goes unindexed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token

from reme.index.chunk_base import Chunk, Span, label_parts, make_chunk, pack_lines, trim_blank_edges
from reme.workspace.fmsplit import split as split_front_matter

# Only block structure is needed: skipping inline parsing halves the cost (titles stay raw text).
_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table").disable(["inline", "text_join"])
_LABEL_ROOM = 20
# A larger file is parsed in windows of about this many characters (what it costs stays bounded).
WINDOW_CHARS = 1 << 20
FENCE_WINDOWS = 4
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
MAX_TITLE_CHARS = 200  # a heading's share of the heading path, which every chunk under it carries


@dataclass
class _Block:
    """One top-level block: ``start``..``end`` are 1-based inclusive file lines."""

    kind: str
    start: int
    end: int
    tokens: list[Token] = field(default_factory=list)


@dataclass
class _Section:
    heading_path: list[str]
    heading: _Block | None
    blocks: list[_Block] = field(default_factory=list)


@dataclass(frozen=True)
class _Unit:
    """A piece to pack: verbatim units are file lines and may share a chunk; split parts stand alone."""

    span: Span
    verbatim: bool
    block_start: int  # first line of the block the unit came from (headings waiting go before it)


class _Document:
    def __init__(self, path: str, text: str, chunk_chars: int) -> None:
        self.path = path
        self.lines = [line.rstrip("\r") for line in text.split("\n")]
        self.budget = chunk_chars
        # offsets[i] = characters (each line + newline) before line i+1 (1-based line numbers).
        self.offsets = [0, *accumulate(len(line) + 1 for line in self.lines)]

    def chars(self, start: int, end: int) -> int:
        return self.offsets[end] - self.offsets[start - 1]

    def text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start - 1 : end])

    def numbered(self, start: int, end: int) -> list[tuple[int, str]]:
        return [(n, self.lines[n - 1]) for n in range(start, end + 1)]


def front_matter_lines(text: str) -> int:
    """Lines taken by the front matter, found as every reader finds it (0 when there is none)."""
    matter = split_front_matter(text)
    if not matter.has_front_matter:
        return 0
    head = matter.head(text)
    return head.count("\n") + (not head.endswith("\n"))  # a closing fence may end the file


def markdown_windows(
    path: str, text: str, chunk_chars: int, window_chars: int = WINDOW_CHARS
) -> Iterator[list[Chunk]]:
    """The chunks of a Markdown file (front matter counted in line numbers, not chunked), one
    window of about `window_chars` at a time.

    The parser's block tokens cost many times the text, so a large file is parsed in windows cut
    at a heading (or else a blank line) outside code fences; the heading path carries over from one
    window to the next. A file within one window chunks exactly as a whole.
    """
    doc = _Document(path, text, chunk_chars)
    matter_lines = front_matter_lines(text)
    stack: list[tuple[int, str]] = []
    produced = False
    for start, end in window_bounds(doc.lines, matter_lines + 1, window_chars):
        # Blank out the front matter so the parser's line map stays the file's line numbers.
        source = "\n" * (start - 1 if start == matter_lines + 1 else 0) + "\n".join(
            doc.lines[start - 1 : end]
        )
        offset = 0 if start == matter_lines + 1 else start - 1
        # a `\r` left inside a line (CR line endings, a stray one) is a line break to the parser but
        # not to the file's numbering: the parser reads it as a space, so both count lines alike
        sections, stack = _sections(_PARSER.parse(source.replace("\r", " ")), offset, stack)
        chunks = _chunk_sections(doc, sections)
        if chunks and not produced and matter_lines > 2:
            matter = doc.text(2, matter_lines - 1)
            first = chunks[0]
            chunks[0] = make_chunk(
                path, first.start_line, first.end_line, first.text, first.heading_path, matter
            )
        produced = produced or bool(chunks)
        if chunks:
            yield chunks
    if not produced:
        spans = pack_lines(doc.numbered(1, len(doc.lines)), chunk_chars)
        yield [make_chunk(path, s.start, s.end, s.text, []) for s in spans]


def window_bounds(lines: list[str], first: int, window_chars: int) -> Iterator[tuple[int, int]]:
    """1-based inclusive line ranges from `first` on, each about `window_chars`, never cut inside a
    fence (up to FENCE_WINDOWS windows); the cut goes before the last heading of the window's second
    half, else its last blank line."""
    start, size, fence = first, 0, ""
    heading = blank = 0
    for number in range(first, len(lines) + 1):
        line = lines[number - 1]
        opened = _FENCE_LINE.match(line)
        if fence:
            fence = (
                ""
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
                else fence
            )
        elif opened:
            fence = opened.group(1)
        elif _HEADING_LINE.match(line):
            heading = number
        elif not line.strip():
            blank = number
        size += len(line) + 1
        if size < window_chars or (fence and size < FENCE_WINDOWS * window_chars):
            continue  # a fence is kept whole unless it is huge (then memory wins over its shape)
        half = start + (number - start) // 2
        cut = heading if heading > half else blank + 1 if blank >= start else number + 1
        if cut <= start:
            cut = number + 1
        yield start, cut - 1
        size = sum(len(lines[n - 1]) + 1 for n in range(cut, number + 1))
        start = cut
    if start <= len(lines):
        yield start, len(lines)


def _sections(
    tokens: list[Token], offset: int = 0, stack: list[tuple[int, str]] | None = None
) -> tuple[list[_Section], list[tuple[int, str]]]:
    """Sections of one parsed window (lines shifted by `offset`), continuing the heading `stack` of
    the window before; returns them with the stack at the window's end."""
    stack = list(stack or [])
    sections = [_Section([title for _, title in stack], None)]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.level != 0 or token.map is None:
            index += 1
            continue
        close = _closing_index(tokens, index)
        block = _Block(
            token.type.removesuffix("_open"),
            token.map[0] + 1 + offset,
            token.map[1] + offset,
            tokens[index : close + 1],
        )
        if token.type == "heading_open":
            level = int(token.tag[1:])
            title = _heading_title(tokens[index + 1].content)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append(_Section([title for _, title in stack], block))
        else:
            sections[-1].blocks.append(block)
        index = close + 1
    return sections, stack


def _heading_title(content: str) -> str:
    """A heading's text as it goes into the heading path of every chunk below it, cut to
    MAX_TITLE_CHARS: a breadcrumb, not a copy of a heading that runs for pages."""
    title = content.strip()
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1].rstrip() + "…"


def _closing_index(tokens: list[Token], index: int) -> int:
    """Index of the token closing the block opened at ``index`` (itself for self-contained blocks)."""
    if tokens[index].nesting != 1:
        return index
    depth = 0
    for position in range(index, len(tokens)):
        depth += tokens[position].nesting
        if depth == 0:
            return position
    return len(tokens) - 1


def _chunk_sections(doc: _Document, sections: list[_Section]) -> list[Chunk]:
    """Chunks of the sections; headings without a body of their own wait for the next chunk, up to
    the budget (an outline of bare headings is packed like lines, not gathered into one chunk)."""
    chunks: list[Chunk] = []
    pending_start: int | None = None  # first line of headings not yet placed in a chunk
    last_heading_end = 0
    last_path: list[str] = []
    for section in sections:
        if section.heading is not None:
            if pending_start is not None and doc.chars(pending_start, section.heading.end) > doc.budget:
                chunks.extend(_heading_chunks(doc, pending_start, last_heading_end, last_path))
                pending_start = None
            pending_start = pending_start or section.heading.start
            last_heading_end = section.heading.end
            last_path = section.heading_path
        units = [unit for block in section.blocks for unit in _units(doc, block)]
        if units:
            if pending_start is not None and doc.chars(pending_start, last_heading_end) > doc.budget:
                chunks.extend(_heading_chunks(doc, pending_start, last_heading_end, last_path))
                pending_start = None
            chunks.extend(_pack(doc, units, pending_start, section.heading_path))
            pending_start = None
    if pending_start is not None:
        chunks.extend(_heading_chunks(doc, pending_start, last_heading_end, sections[-1].heading_path))
    return chunks


def _heading_chunks(doc: _Document, start: int, end: int, heading_path: list[str]) -> list[Chunk]:
    """Headings `start`..`end` with no body between them, packed into chunks of the budget (one
    chunk when they fit; an over-long heading is cut into labelled parts)."""
    spans = pack_lines(doc.numbered(start, end), doc.budget)
    return [make_chunk(doc.path, s.start, s.end, s.text, heading_path) for s in spans]


def _pack(
    doc: _Document, units: list[_Unit], prefix_start: int | None, heading_path: list[str]
) -> list[Chunk]:
    """Pack runs of verbatim units into even chunks; split parts become chunks of their own."""
    chunks: list[Chunk] = []
    run: list[_Unit] = []
    pending = prefix_start  # headings waiting for a chunk ride along with what comes first

    def close_run() -> None:
        nonlocal pending
        if run:
            for start, end in _balanced_cuts(doc, run, pending):
                chunks.append(make_chunk(doc.path, start, end, doc.text(start, end), heading_path))
            run.clear()
            pending = None

    for unit in units:
        if unit.verbatim:
            run.append(unit)
            continue
        close_run()
        text, start = unit.span.text, unit.span.start
        if pending is not None:
            prefix = trim_blank_edges(doc.numbered(pending, unit.block_start - 1))
            if prefix:
                text = "\n".join(line for _, line in prefix) + "\n" + text
                start = pending
            pending = None
        chunks.append(make_chunk(doc.path, start, unit.span.end, text, heading_path))
    close_run()
    return chunks


def _balanced_cuts(doc: _Document, run: list[_Unit], prefix_start: int | None) -> list[tuple[int, int]]:
    """Line ranges that cut a run of units into as few chunks as the budget allows, of even size.

    Even sizes avoid a tail chunk of a line or two, which BM25's length norm would over-rank and
    which carries too little context to match a question.
    """
    first = prefix_start if prefix_start is not None else run[0].span.start
    pieces = -(-doc.chars(first, run[-1].span.end) // doc.budget)
    target = doc.chars(first, run[-1].span.end) / pieces
    ranges: list[tuple[int, int]] = []
    start, end = first, run[0].span.end
    for unit in run[1:]:
        without, with_unit = doc.chars(start, end), doc.chars(start, unit.span.end)
        if with_unit > doc.budget or (with_unit > target and with_unit - target > target - without):
            ranges.append((start, end))
            start = unit.span.start
        end = unit.span.end
    ranges.append((start, end))
    return ranges


def _units(doc: _Document, block: _Block) -> list[_Unit]:
    start, end = _trimmed_range(doc, block.start, block.end)
    if start > end:
        return []
    if doc.chars(start, end) <= doc.budget:
        return [_Unit(Span(start, end, doc.text(start, end)), True, start)]
    if block.kind == "table":
        return _table_parts(doc, start, end)
    if block.kind == "fence":
        return _fence_parts(doc, start, end)
    if block.kind in ("bullet_list", "ordered_list"):
        return _list_units(doc, block)
    return _line_parts(doc, start, end)


def _trimmed_range(doc: _Document, start: int, end: int) -> tuple[int, int]:
    group = trim_blank_edges(doc.numbered(start, end))
    return (group[0][0], group[-1][0]) if group else (start, start - 1)


def _line_parts(doc: _Document, start: int, end: int) -> list[_Unit]:
    spans = pack_lines(doc.numbered(start, end), max(doc.budget - _LABEL_ROOM, 1), label_cuts=False)
    texts = label_parts([span.text for span in spans])
    return [
        _Unit(Span(span.start, span.end, text), False, start) for span, text in zip(spans, texts, strict=True)
    ]


def _table_parts(doc: _Document, start: int, end: int) -> list[_Unit]:
    """Split a table by rows, each part repeating the header and separator rows; a header that
    leaves less than half the budget for rows is not repeated (`_line_parts`): each row would be
    cut into pieces of a few characters, each carrying the whole header."""
    header_end = start + 1  # header row, then the separator row
    header = doc.text(start, header_end)
    budget = doc.budget - len(header) - 1
    if budget < doc.budget // 2:
        return _line_parts(doc, start, end)
    spans = pack_lines(doc.numbered(header_end + 1, end), budget)
    return [_Unit(Span(s.start, s.end, f"{header}\n{s.text}"), False, start) for s in spans]


def _fence_parts(doc: _Document, start: int, end: int) -> list[_Unit]:
    """Split fenced code by lines, each part repeating the opening and closing fence (unless they
    leave less than half the budget for the code, as with a table's header)."""
    opening = doc.lines[start - 1]
    marker = opening.strip()[:3]
    closed = end > start and doc.lines[end - 1].strip().startswith(marker)
    closing = doc.lines[end - 1] if closed else marker
    inner_end = end - 1 if closed else end
    budget = doc.budget - len(opening) - len(closing) - 2
    if budget < doc.budget // 2:  # a long info string: repeating it would cut the code to shreds
        return _line_parts(doc, start, end)
    spans = pack_lines(doc.numbered(start + 1, inner_end), budget)
    return [_Unit(Span(s.start, s.end, f"{opening}\n{s.text}\n{closing}"), False, start) for s in spans]


def _list_units(doc: _Document, block: _Block) -> list[_Unit]:
    """A list packs by whole items; an item too long on its own is split by lines."""
    units: list[_Unit] = []
    for token in block.tokens:
        if token.type == "list_item_open" and token.level == 1 and token.map is not None:
            item = _Block("list_item", token.map[0] + 1, token.map[1])
            units.extend(_units(doc, item))
    return units
