"""YAML front matter: fast, forgiving reads and minimal-change writes (docs/spec.md §2.1).

Reading uses PyYAML's C loader and never raises: a block that is not a YAML mapping leaves the
metadata empty, the body equal to the whole text and the problem in `Document.error`.

Writing merges: keys already present keep their place, their comments and their exact bytes unless
their value really changes; new keys are appended. Only the lines of changed keys are re-emitted
(by ruamel.yaml), so a user's hand-written YAML survives; the result is re-read and compared with the
intended mapping, and a full ruamel round-trip is the fallback when the line surgery cannot be proven
right. The body is never touched.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any, overload

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    LiteralScalarString,
    ScalarString,
    SingleQuotedScalarString,
)

from reme.jsontypes import JSONObject, JSONValue
from reme.workspace import yamlsafe
from reme.workspace.fmsplit import TOP_LEVEL_KEY, split

RESERVED_KEYS = ("name", "description")

_PLAIN_STRING_RESOLVER = yaml.resolver.Resolver()
# Strings starting with a YAML indicator (links `[[...]]` among them) are always written quoted: PyYAML
# and ruamel disagree on some of them unquoted (e.g. `?x` inside a flow sequence).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


class FrontMatterError(ValueError):
    """The front matter cannot be changed safely (invalid YAML, not a mapping, or a bad value)."""


@dataclass(frozen=True)
class Document:
    """A Markdown text split into metadata and body; `head` is the verbatim front-matter block."""

    metadata: dict[str, Any]
    body: str
    head: str
    has_front_matter: bool
    error: str | None = None


def parse(text: str) -> Document:
    """Split and load front matter; invalid YAML gives empty metadata, body = whole text, and `error`."""
    parts = split(text)
    if not parts.has_front_matter:
        return Document({}, text, "", False)
    try:
        loaded = yamlsafe.load(parts.yaml(text))
    except yamlsafe.YAMLLimitError as exc:
        return Document({}, text, "", False, f"front matter is refused: {exc}")
    except yaml.YAMLError as exc:
        return Document({}, text, "", False, f"front matter is not valid YAML: {_first_line(exc)}")
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return Document(
            {}, text, "", False, f"front matter must be a YAML mapping, not {type(loaded).__name__}"
        )
    return Document(_json_object(loaded), parts.body(text), parts.head(text), True)


def _json_object(mapping: Mapping[object, object]) -> JSONObject:
    return {str(key): to_json(item) for key, item in mapping.items()}


@overload
def to_json(value: Mapping[object, object]) -> JSONObject: ...
@overload
def to_json(value: object) -> JSONValue: ...
def to_json(value: object) -> JSONValue:
    """A JSON-serialisable copy of loaded YAML: dates as ISO strings, keys as strings."""
    if isinstance(value, dict):
        return _json_object(value)
    if isinstance(value, (list, tuple, set)):
        return [to_json(item) for item in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def check_metadata(metadata: object) -> dict[str, object]:
    """Refuse metadata that cannot be front matter; `name`/`description` must be strings."""
    if not isinstance(metadata, Mapping):
        raise FrontMatterError("metadata must be an object of key: value pairs")
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip():
            raise FrontMatterError("metadata keys must be non-empty strings")
        if key in RESERVED_KEYS and value is not None and not isinstance(value, str):
            raise FrontMatterError(f"front-matter key {key!r} is reserved and must be a string")
    _check_size(metadata)
    return {str(key): value for key, value in metadata.items()}


def _check_size(metadata: Mapping[str, object]) -> None:
    """Front matter is read back within `yamlsafe`'s limits, so nothing larger is written either."""
    count = 0
    stack: list[tuple[object, int]] = [(metadata, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > yamlsafe.MAX_NODES:
            raise FrontMatterError(
                f"metadata is too large: more than {yamlsafe.MAX_NODES} values; store it in the body"
            )
        if isinstance(value, Mapping):
            children = [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple)):
            children = list(value)
        else:
            continue
        if depth > yamlsafe.MAX_DEPTH:
            raise FrontMatterError(
                f"metadata is nested more than {yamlsafe.MAX_DEPTH} levels deep; flatten it"
            )
        stack.extend((child, depth + 1) for child in children)


def render_new(metadata: Mapping[str, object]) -> str:
    """A fresh front-matter block (fences included) with `name` and `description` first."""
    ordered = {key: metadata[key] for key in RESERVED_KEYS if key in metadata}
    ordered.update({key: value for key, value in metadata.items() if key not in RESERVED_KEYS})
    return f"---\n{_dump(ordered)}---\n" if ordered else ""


def update(text: str, changes: Mapping[str, object]) -> str:
    """`text` with `changes` merged into its front matter; the body stays byte-identical."""
    changes = check_metadata(changes)
    document = _strict(text)
    if not document.has_front_matter:
        return _prepend(render_new(changes), text) if changes else text
    current = document.metadata
    changed = {key: value for key, value in changes.items() if key not in current or current[key] != value}
    if not changed:
        return text
    expected = {**current, **changed}
    parts = split(text)
    raw = parts.yaml(text)
    nested = any(isinstance(value, (dict, list)) for value in changed.values())
    indent = _guess_indent(raw) if nested else (2, 0)  # only nested values show indentation
    newline = _newline(parts.head(text))
    replace = {key: value for key, value in changed.items() if key in current}
    replaced = _surgery(raw, replace, set(), indent, newline)
    if replaced is not None:
        appended = {key: value for key, value in changed.items() if key not in current}
        if appended:
            ending = "" if not replaced or replaced.endswith("\n") else newline
            replaced += ending + _dump(appended, indent).replace("\n", newline)
        if _loads_as(replaced, expected):
            return text[: parts.yaml_start] + replaced + text[parts.yaml_end :]
    rewritten = _round_trip(raw, changed, (), expected, newline)
    return text[: parts.yaml_start] + rewritten + text[parts.yaml_end :]


def delete(text: str, keys: Iterable[str]) -> tuple[str, list[str], list[str]]:
    """Remove `keys` from the front matter; returns (text, deleted, missing). The body is untouched."""
    keys = list(dict.fromkeys(keys))
    if not all(isinstance(key, str) for key in keys):
        raise FrontMatterError("keys must be strings")
    document = _strict(text)
    deleted = [key for key in keys if key in document.metadata]
    missing = [key for key in keys if key not in document.metadata]
    if not deleted:
        return text, deleted, missing
    expected = {key: value for key, value in document.metadata.items() if key not in deleted}
    parts = split(text)
    raw = parts.yaml(text)
    newline = _newline(parts.head(text))
    replaced = _surgery(raw, {}, set(deleted), (2, 0), newline)
    if replaced is None or not _loads_as(replaced, expected):
        replaced = _round_trip(raw, {}, deleted, expected, newline)
    return text[: parts.yaml_start] + replaced + text[parts.yaml_end :], deleted, missing


def _prepend(block: str, text: str) -> str:
    """A new front-matter block put before `text`: after its byte-order mark, in its line endings."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    return bom + block.replace("\n", _newline(text)) + text[len(bom) :]


def _strict(text: str) -> Document:
    document = parse(text)
    if document.error:
        raise FrontMatterError(f"{document.error}; fix the front matter by hand (e.g. with `save`) first")
    return document


def _surgery(
    raw: str, replace: Mapping[str, object], remove: set[str], indent: tuple[int, int], newline: str
) -> str | None:
    """Re-emit only the lines of top-level keys in `replace`, drop those in `remove`; None when unsure."""
    lines = raw.splitlines(keepends=True)
    starts: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        found = TOP_LEVEL_KEY.match(line)
        if found:
            starts.append((index, next(group for group in found.groups() if group)))
        elif line.strip() and not line[0].isspace() and not line.startswith(("#", "-")):
            return None  # flow mappings, anchors at top level, ...: leave it to the round trip
    names = [name for _, name in starts]
    if len(set(names)) != len(names) or not set(replace).union(remove) <= set(names):
        return None
    out: list[str] = lines[: starts[0][0]] if starts else list(lines)
    for position, (index, name) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(lines)
        block = lines[index:end]
        trailing = _trailing_comments(block)
        if name in remove:
            out.extend(block[len(block) - trailing :] if trailing else [])
        elif name in replace:
            out.append(_replacement(block[0], name, replace[name], indent).replace("\n", newline))
            out.extend(block[len(block) - trailing :] if trailing else [])
        else:
            out.extend(block)
    return "".join(out)


def _replacement(first_line: str, key: str, value: object, indent: tuple[int, int]) -> str:
    """The lines of `key: value` in place of a key whose first line was `first_line`, keeping its
    spelling of the key, the quotes of a one-line string and its end-of-line comment: a person's YAML
    changes no more than the value."""
    quote, comment = _line_style(first_line) or ("", "")
    if quote and isinstance(value, str) and "\n" not in value:
        value = (SingleQuotedScalarString if quote == "'" else DoubleQuotedScalarString)(value)
    first, _, rest = _dump({key: value}, indent).partition("\n")
    old, new = TOP_LEVEL_KEY.match(first_line), TOP_LEVEL_KEY.match(first)
    if old and new:
        first = first_line[: _colon_end(old)] + first[_colon_end(new) :]
    if comment and _line_style(first) is not None:  # the value ends on this line: the comment can follow
        first += comment
    return f"{first}\n{rest}"


def _colon_end(key: re.Match[str]) -> int:
    """Offset just past the `:` of a `TOP_LEVEL_KEY` match."""
    return key.start() + len(key.group(0).rstrip(" \t\r\n"))


def _line_style(line: str) -> tuple[str, str] | None:
    """(the quote of a value that is one quoted string, else ""; the end-of-line comment with the
    blanks before it, else "") of a top-level key's first line; None when the line is no YAML alone."""
    content = line.rstrip("\r\n")
    try:
        tokens = list(yaml.scan(content, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return None
    value_at = next((i for i, token in enumerate(tokens) if isinstance(token, yaml.ValueToken)), None)
    if value_at is None:
        return None
    value = [t for t in tokens[value_at:] if not isinstance(t, (yaml.BlockEndToken, yaml.StreamEndToken))]
    last = value[-1]
    one_string = len(value) == 2 and isinstance(last, yaml.ScalarToken) and last.style in ("'", '"')
    tail = content[last.end_mark.index :]
    return (last.style if one_string else ""), (tail if tail.strip() else "")


def _newline(text: str) -> str:
    """The line ending `text` starts with (its first line break); written lines follow it."""
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _trailing_comments(block: list[str]) -> int:
    """How many lines at the end of a key's block are column-0 comments or blank (they stay put)."""
    count = 0
    for line in reversed(block[1:]):
        if line.strip() == "" or line.startswith("#"):
            count += 1
        else:
            break
    return count


def _round_trip(
    raw: str, changes: Mapping[str, object], remove: Iterable[str], expected: JSONValue, newline: str
) -> str:
    """Whole-block ruamel round trip: comments and order survive, indentation may be normalised."""
    try:
        loader = YAML(typ="rt")
        loader.preserve_quotes = True  # untouched values keep their quotes
        data = loader.load(raw) or {}
    except Exception as exc:  # ruamel is stricter than PyYAML (duplicate keys, ...)
        problem = getattr(exc, "problem", None) or str(exc).strip().split("\n", 1)[0]  # not ruamel's essay
        raise FrontMatterError(
            f"cannot rewrite this front matter safely: {problem}; fix it by hand first"
        ) from None
    for key in remove:
        data.pop(key, None)
    for key, value in changes.items():
        data[_styled_key(key)] = _styled(value)
    emitter = _emitter(_guess_indent(raw))
    stream = io.StringIO()
    emitter.dump(data, stream)
    result = stream.getvalue().replace("\n", newline) if data else ""
    if not _loads_as(result, expected):
        raise FrontMatterError("could not write the front matter so that it reads back unchanged")
    return result


def _loads_as(raw: str, expected: JSONValue) -> bool:
    try:
        loaded = yamlsafe.load(raw)
    except yaml.YAMLError:
        return False
    return to_json(loaded or {}) == expected


def _guess_indent(raw: str) -> tuple[int, int]:
    """(sequence indent, dash offset) of the user's YAML, so re-emitted keys look like their neighbours."""
    from ruamel.yaml.util import load_yaml_guess_indent

    try:
        _, indent, dash_offset = load_yaml_guess_indent(raw)
    except Exception:
        return (2, 0)
    return (indent or 2, dash_offset or 0)


def _emitter(indent: tuple[int, int] = (2, 0)) -> YAML:
    emitter = YAML(typ="rt")
    sequence, offset = indent
    emitter.indent(mapping=sequence - offset if offset else sequence, sequence=sequence, offset=offset)
    emitter.width = 4096
    emitter.allow_unicode = True
    emitter.default_flow_style = False
    return emitter


def _dump(mapping: Mapping[str, object], indent: tuple[int, int] = (2, 0)) -> str:
    """Emit a mapping block; each value reads back with PyYAML exactly as given or this raises."""
    if not mapping:
        return ""
    stream = io.StringIO()
    _emitter(indent).dump({_styled_key(key): _styled(value) for key, value in mapping.items()}, stream)
    text = stream.getvalue()
    if not _loads_as(text, to_json(dict(mapping))):
        stream = io.StringIO()
        _emitter(indent).dump(dict(mapping), stream)
        text = stream.getvalue()
        if not _loads_as(text, to_json(dict(mapping))):
            raise FrontMatterError(f"cannot write {list(mapping)} as YAML that reads back the same")
    return text


def _styled(value: object) -> object:
    """Quote links, indicator-led strings and strings YAML 1.1 would read otherwise; multi-line text as a block."""
    if isinstance(value, dict):
        return {_styled_key(key): _styled(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_styled(item) for item in value]
    if not isinstance(value, str) or isinstance(value, ScalarString):
        return value  # not text, or text already given its style
    if "\n" in value and not any(line != line.rstrip() for line in value.split("\n")):
        return LiteralScalarString(value)
    if value[:1] in _INDICATORS or _plain_would_change(value):
        return SingleQuotedScalarString(value)
    return value


def _styled_key(key: str) -> str:
    """Keys like `no` or `2026` would read back as a bool or a number unless quoted; one like `a:b`
    or `-x` is quoted too, so a later update still finds its line (`TOP_LEVEL_KEY`)."""
    plain = TOP_LEVEL_KEY.match(f"{key}: x") is not None
    return SingleQuotedScalarString(key) if _plain_would_change(key) or not plain else key


def _plain_would_change(value: str) -> bool:
    """True when PyYAML would read the unquoted string as a bool, number, date or null."""
    tag = _PLAIN_STRING_RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    return tag != "tag:yaml.org,2002:str"


def _first_line(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        where = f" at line {exc.problem_mark.line + 2}" if exc.problem_mark else ""
        return f"{exc.problem}{where}"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
