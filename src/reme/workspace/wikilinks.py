"""The one wikilink parser and rewriter of reme (docs/spec.md §2.2).

Public API (the index builds its link graph from this):

- `parse_links(text) -> list[Link]` — every link of a whole Markdown document: front-matter links
  (predicate = the top-level key) and body links, skipping fenced code blocks, inline code spans,
  HTML comments and Obsidian comments (`<!-- [[x]] -->` and `%% [[x]] %%` are shown to no reader; a
  `<!--` or `%%` never closed hides the rest, as Obsidian's editor shows it) and escaped links
  (`\\[[x]]` is the text `[[x]]` in Markdown). A link any part of which lies in a code span or a
  comment is no link. Every line is read in one left-to-right pass, so no shape of input (long runs
  of brackets, fields, backticks or comment marks) costs more than linear time.
  A document whose front matter is not valid YAML is parsed as all body.
- `parse_body_links(text) -> list[Link]` — the same for text that has no front matter.
- `Link` fields: `target` (literal workspace-relative path, never completed with `.md`), `anchor`
  (text after `#` or None), `alias` (text after `|` or None), `embed` (`![[...]]`), `predicate`
  (Dataview key of `key:: [[x]]` / `[key:: [[x]]]`, or the front-matter key, else None), `line`
  (1-based line in the parsed text), `in_front_matter`; `link.key` is the edge identity
  `(target, predicate)`. `start`/`end` delimit the target text itself (as written, i.e. still escaped
  inside a quoted YAML value) and do not take part in equality.
- `render(target, anchor=None, alias=None, embed=False, predicate=None) -> str` writes a link;
  `linkable(target)` says whether a link can name that path at all.
- `retarget(text, old, new) -> str` points every link whose target is exactly `old` at `new`;
  `retarget_links(text, mapping) -> (text, count)` does the same for any `target -> new|None` mapping
  and `tree_mapping(src, dst)` maps a moved file or folder. Anchor, alias, embed flag, predicate and every
  other byte of the document are kept; a new target inside a quoted front-matter value is escaped for
  that quote style, so the YAML stays valid.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import yaml

from reme.workspace import yamlsafe
from reme.workspace.fmsplit import TOP_LEVEL_KEY, line_of, split

PREDICATE = r"[A-Za-z][A-Za-z0-9_]*"

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_HIDING = re.compile(r"\\|`|<!--|%%")  # what can open a code span or a comment (a backslash escapes it)
_CLOSER = {"<!--": "-->", "%%": "%%"}  # each comment ends only at its own mark
_BRACKET = re.compile(r"!?\[\[[^\[\]\n]+\]\]|[\[\]]")  # a whole wikilink, else one bracket
_LINE_PREDICATE = re.compile(
    rf"^[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d+[.)])[ \t]+)?(?:\[[ xX]\][ \t]+)?({PREDICATE})::"
)
_INLINE_FIELD = re.compile(rf"(?<!\[)\[({PREDICATE})::")


@dataclass(frozen=True)
class Link:
    """One wikilink occurrence; equality ignores where the target text sits."""

    target: str
    anchor: str | None = None
    alias: str | None = None
    embed: bool = False
    predicate: str | None = None
    line: int = 1
    in_front_matter: bool = False
    start: int = field(default=0, compare=False)
    end: int = field(default=0, compare=False)

    @property
    def key(self) -> tuple[str, str | None]:
        """Edge identity: `[[A]]` and `is_a:: [[A]]` are different edges."""
        return (self.target, self.predicate)


def linkable(target: str) -> bool:
    """Whether `[[target]]` reads back as this very target: `#`, `|`, `[` and `]` would cut it short."""
    return not any(ch in target for ch in "#|[]")


def render(
    target: str,
    anchor: str | None = None,
    alias: str | None = None,
    embed: bool = False,
    predicate: str | None = None,
) -> str:
    """Write a link; with a predicate it is the line form `predicate:: [[...]]`."""
    inner = target + (f"#{anchor}" if anchor else "") + (f"|{alias}" if alias else "")
    link = ("!" if embed else "") + f"[[{inner}]]"
    return f"{predicate}:: {link}" if predicate else link


def parse_links(text: str) -> list[Link]:
    """All links of a Markdown document, front matter first, in document order."""
    if "[[" not in text:
        return []
    parts = split(text)
    if not parts.has_front_matter:
        return parse_body_links(text)
    raw = parts.yaml(text)
    try:
        metadata = yamlsafe.load(raw)
    except yaml.YAMLError:
        return parse_body_links(text)
    if metadata is not None and not isinstance(metadata, dict):
        return parse_body_links(text)
    first_line = line_of(text, parts.yaml_start)
    head = list(_front_matter_links(raw, metadata or {}, first_line, parts.yaml_start))
    body_line = line_of(text, parts.body_start)
    return head + parse_body_links(parts.body(text), body_line, parts.body_start)


def parse_body_links(text: str, first_line: int = 1, offset: int = 0) -> list[Link]:
    """Links of Markdown text without front matter; `first_line`/`offset` place it inside a larger file."""
    links: list[Link] = []
    fence: str | None = None
    comment: str | None = None  # the closing mark of a comment left open (fences in it are text)
    for number, (line_start, line) in enumerate(_lines(text), start=first_line):
        content = line.rstrip("\r\n")
        if comment is None:
            opened = _FENCE.match(content) if "```" in content or "~~~" in content else None
            if fence is not None:
                if _closes(opened, fence):
                    fence = None
                continue
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                fence = opened.group(1)
                continue
        if "[[" not in content and not _marks_comment(content, comment):
            continue
        hidden, comment = _hidden_spans(content, comment)
        if "[[" in content:
            links.extend(_line_links(content, number, offset + line_start, hidden))
    return links


def retarget_links(text: str, mapping: Callable[[str], str | None]) -> tuple[str, int]:
    """Rewrite the target of every link for which `mapping(target)` gives a different path."""
    pieces: list[str] = []
    cursor = 0
    count = 0
    for link in parse_links(text):
        new = mapping(link.target)
        if new is None or new == link.target:
            continue
        pieces.append(text[cursor : link.start])
        pieces.append(_yaml_escaped(text, link.start, new) if link.in_front_matter else new)
        cursor = link.end
        count += 1
    pieces.append(text[cursor:])
    return "".join(pieces), count


def _yaml_escaped(text: str, start: int, target: str) -> str:
    """A new front-matter target escaped for the quoted YAML scalar it sits in."""
    line_start = text.rfind("\n", 0, start) + 1
    return _ESCAPE[_quote_context(text[line_start:start], start - line_start)](target)


def _quote_context(line: str, position: int) -> str:
    """Which YAML quote (`'`, `"` or none) encloses `position` of a front-matter line."""
    prefix = line[:position]
    stripped = prefix.lstrip()
    if stripped.startswith("-"):
        value = stripped[1:]
    elif key := TOP_LEVEL_KEY.match(prefix):
        value = prefix[key.end() :]
    else:
        value = prefix
    if value.count("'") % 2 == 1:
        return "'"
    if (value.count('"') - value.count('\\"')) % 2 == 1:
        return '"'
    return ""


_ESCAPE: dict[str, Callable[[str], str]] = {
    "'": lambda text: text.replace("'", "''"),
    '"': lambda text: text.replace("\\", "\\\\").replace('"', '\\"'),
    "": str,
}
_UNESCAPE: dict[str, Callable[[str], str]] = {
    "'": lambda text: text.replace("''", "'"),
    '"': lambda text: text.replace('\\"', '"').replace("\\\\", "\\"),
    "": str,
}


def retarget(text: str, old: str, new: str) -> str:
    """Point every link whose target is exactly `old` at `new`, changing nothing else."""
    return retarget_links(text, lambda target: new if target == old else None)[0]


def tree_mapping(src: str, dst: str) -> Callable[[str], str | None]:
    """Mapping for a move of `src` to `dst`: the path itself and, for a folder, everything under it."""
    prefix = src.rstrip("/") + "/"

    def mapped(target: str) -> str | None:
        if target == src:
            return dst
        if target.startswith(prefix):
            return dst.rstrip("/") + "/" + target[len(prefix) :]
        return None

    return mapped


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield start, text[start:end]
        start = end


def _closes(opened: re.Match[str] | None, fence: str) -> bool:
    """A closing fence uses the opening character, is at least as long and has no info string."""
    return bool(
        opened
        and opened.group(1)[0] == fence[0]
        and len(opened.group(1)) >= len(fence)
        and not opened.group(2).strip()
    )


def _marks_comment(line: str, comment: str | None) -> bool:
    """Whether `line` may open a comment (`comment` None) or hold `comment`, the open one's closing mark."""
    return comment in line if comment else "<!--" in line or "%%" in line


def _hidden_spans(line: str, comment: str | None) -> tuple[list[tuple[int, int]], str | None]:
    """Code spans and comments of one line, taken left to right as Markdown and Obsidian do (whichever
    opens first wins, so none can fake another), and the closing mark of a comment still open at its end.

    A backtick run opens a span closed by the next run of the same length; an unclosed run is text.
    `<!--` opens an HTML comment closed by the next `-->` (`<!-->` is an empty one, as in HTML), `%%`
    an Obsidian comment closed by the next `%%` (`%%%x%%` hides `%x`); `comment` is the closing mark
    of one opened on an earlier line. A comment not closed on the line runs on into the next lines.
    A backslash makes the next character text (`\\%%` opens nothing, as in Obsidian).
    """
    spans: list[tuple[int, int]] = []
    position = 0
    if comment:
        close = line.find(comment)
        if close < 0:
            return [(0, len(line))], comment
        spans.append((0, close + len(comment)))
        position = close + len(comment)
    runs: dict[int, list[int]] = {}  # run length -> starts of the backtick runs of that length
    for run in _BACKTICKS.finditer(line):
        runs.setdefault(len(run.group()), []).append(run.start())
    while found := _HIDING.search(line, position):
        position = found.start()
        if found.group() == "\\":
            position += 2
        elif closer := _CLOSER.get(found.group()):
            close = line.find(closer, position + 2)
            if close < 0:
                spans.append((position, len(line)))
                return spans, closer
            spans.append((position, close + len(closer)))
            position = close + len(closer)
        else:
            end = position
            while end < len(line) and line[end] == "`":
                end += 1
            starts = runs.get(end - position, [])
            index = bisect_left(starts, end)
            if index == len(starts):
                position = end  # never closed: the backticks are text
                continue
            spans.append((position, starts[index] + end - position))
            position = spans[-1][1]
    return spans, None


def _overlaps(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """Whether `[start, end)` meets one of `spans` (sorted and disjoint, as `_hidden_spans` gives them)."""
    index = bisect_left(spans, end, key=lambda span: span[0]) - 1
    return index >= 0 and spans[index][1] > start


def _inline_fields(line: str, hidden: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """`[key:: value]` fields of a line as (start, end, key), sorted and disjoint.

    A field's `[` closes at the `]` that pairs with it (a whole wikilink inside counts as neither, so
    nested links do not close it); a field inside another belongs to the outer one; one never closed
    is no field. Brackets are paired in one pass, so many fields on a line, closed or not, cost
    linear time rather than a rescan of the rest of the line per field.
    """
    keys = {
        match.start(): match.group(1)
        for match in _INLINE_FIELD.finditer(line)
        if not _overlaps(match.start(), match.start() + 1, hidden)
    }
    opened: list[int] = []  # positions of the `[` not paired yet
    closed: list[tuple[int, int, str]] = []
    for token in _BRACKET.finditer(line):
        if token.group() == "[":
            opened.append(token.start())
        elif token.group() == "]" and opened and (key := keys.get(start := opened.pop())):
            closed.append((start, token.end(), key))
    fields: list[tuple[int, int, str]] = []
    for field_ in sorted(closed):  # pairs nest or are disjoint: keep the outermost
        if not fields or field_[0] >= fields[-1][1]:
            fields.append(field_)
    return fields


def _field_key(position: int, fields: list[tuple[int, int, str]]) -> str | None:
    """The key of the field (sorted and disjoint, as `_inline_fields` gives them) around `position`."""
    index = bisect_left(fields, position, key=lambda field_: field_[0]) - 1
    return fields[index][2] if index >= 0 and fields[index][1] > position else None


def _line_links(line: str, number: int, offset: int, hidden: list[tuple[int, int]]) -> Iterator[Link]:
    """Links of one body line; `hidden` holds its code spans and comments (`_hidden_spans`)."""
    typed = "::" in line
    fields = _inline_fields(line, hidden) if typed else []
    line_predicate = _LINE_PREDICATE.match(line) if typed else None
    for match in _WIKILINK.finditer(line):
        if _overlaps(match.start(), match.end(), hidden) or _escaped(line, match.start(2) - 2):
            continue
        predicate = _field_key(match.start(), fields)
        if predicate is None and line_predicate and match.start() >= line_predicate.end():
            predicate = line_predicate.group(1)
        link = _make_link(match, predicate, number, offset, False, embed=not _escaped(line, match.start()))
        if link is not None:
            yield link


def _escaped(line: str, position: int) -> bool:
    r"""Whether the character at `position` follows an odd run of backslashes: in Markdown `\[[x]]`
    is the text `[[x]]`, no link, and `\![[x]]` a plain link, no embed."""
    start = position
    while start > 0 and line[start - 1] == "\\":
        start -= 1
    return (position - start) % 2 == 1


def _make_link(
    match: re.Match[str],
    predicate: str | None,
    line: int,
    offset: int,
    in_fm: bool,
    unescape: Callable[[str], str] = str,
    embed: bool = True,
) -> Link | None:
    """A Link from a wikilink match; `unescape` undoes YAML quoting for front-matter values; `embed`
    False when the `!` is escaped."""
    inner_start = match.start(2)
    inner = match.group(2)
    target_part, bar, alias = inner.partition("|")
    if bar and target_part.endswith("\\"):
        target_part = target_part[:-1]  # `\|` escapes the bar inside Markdown tables
    target_raw, hash_sign, anchor = target_part.partition("#")
    stripped = target_raw.strip()
    if not stripped:
        return None
    start = inner_start + (len(target_raw) - len(target_raw.lstrip()))
    return Link(
        target=unescape(stripped),
        anchor=(unescape(anchor.strip()) or None) if hash_sign else None,
        alias=unescape(alias) or None,
        embed=embed and bool(match.group(1)),
        predicate=predicate,
        line=line,
        in_front_matter=in_fm,
        start=offset + start,
        end=offset + start + len(stripped),
    )


def _front_matter_links(raw: str, metadata: dict, first_line: int, offset: int) -> Iterator[Link]:
    """Links inside front-matter values; the predicate is the top-level key that holds the value."""
    key: str | None = None
    for number, (line_start, line) in enumerate(_lines(raw), start=first_line):
        content = line.rstrip("\r\n")
        if content and not content[0].isspace() and not content.startswith(("#", "-")):
            found = TOP_LEVEL_KEY.match(content)
            key = next((g for g in found.groups() if g), None) if found else None
        if key is None or key not in metadata:
            continue
        values = list(_strings(metadata[key]))
        for match in _WIKILINK.finditer(content):
            unescape = _UNESCAPE[_quote_context(content, match.start())]
            if not any(unescape(match.group(0)) in value for value in values):
                continue
            link = _make_link(match, key, number, offset + line_start, True, unescape)
            if link is not None:
                yield link


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
