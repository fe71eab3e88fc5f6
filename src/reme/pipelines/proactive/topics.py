"""Proactive topics: the record kept per topic, its stable id, and lexical sameness of two titles.

Ids are computed from the title by reme, never taken from a model, with ReMe's rule (SHA-1 of the
normalised title, first 12 hex digits) so files written by ReMe keep their ids. Reading is lenient
(files are written by people and older versions); anything without a usable title is not a topic.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date

from reme.jsontypes import JSONObject, JSONValue

KINDS = ("follow_up", "interest_extend")
DEFAULT_CONFIDENCE = 0.5  # a version-1 topic carries none
MAX_PATHS = 20  # evidence paths kept per topic, most recent first
_SEPARATORS = re.compile(r"[\W_]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def normalise_title(title: str) -> str:
    """NFKC, lower case, every run of anything but letters and digits one space, trimmed."""
    return _SEPARATORS.sub(" ", unicodedata.normalize("NFKC", title).lower()).strip()


def topic_id(title: str) -> str:
    """The stable id of a topic: first 12 hex digits of the SHA-1 of its normalised title."""
    return hashlib.sha1(normalise_title(title).encode("utf-8")).hexdigest()[:12]


def _tokens(normalised: str) -> set[str]:
    """Words, except that runs of wide (CJK) characters, written without spaces, give their bigrams."""
    tokens: set[str] = set()
    for word in normalised.split():
        if any(unicodedata.east_asian_width(c) in "WF" for c in word):
            tokens.update(word[i : i + 2] for i in range(max(1, len(word) - 1)))
        else:
            tokens.add(word)
    return tokens


def similarity(a: str, b: str) -> float:
    """Lexical similarity of two titles in [0, 1]: Dice overlap of their words (CJK: of character bigrams).

    Whole words keep "flights to Tokyo" apart from "flights to Kyoto"; bigrams make it work for
    scripts written without spaces.
    """
    ta, tb = _tokens(normalise_title(a)), _tokens(normalise_title(b))
    if not ta or not tb:
        return 0.0
    return 2 * len(ta & tb) / (len(ta) + len(tb))


def workspace_path(text: str) -> str | None:
    """`text` as a workspace-relative POSIX path (`[[...]]`, alias and anchor stripped), or None.

    Paths written into the proactive files come from a model or a hand-edited file: anything that
    could point outside the workspace is not a path.
    """
    path = text.strip().removeprefix("[[").removesuffix("]]").split("|")[0].split("#")[0].strip()
    parts = path.split("/")
    if not path or path.startswith(("/", "~")) or "\\" in path or any(p in ("", ".", "..") for p in parts):
        return None
    return path


def path_date(path: str) -> str | None:
    """The date a daily path belongs to (its second segment, or the day page's stem)."""
    parts = path.split("/")
    if len(parts) >= 2:
        candidate = parts[1].removesuffix(".md")
        if _DATE.fullmatch(candidate):
            return candidate
    return None


@dataclass(frozen=True)
class Topic:
    """One topic as the truth source keeps it; `to_exposure` is its shape in `interests.yaml`."""

    id: str
    title: str
    reason: str = ""
    kind: str = "follow_up"
    confidence: float = DEFAULT_CONFIDENCE
    first_seen: str = ""
    last_evidence_at: str = ""
    paths: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    extra: JSONObject = field(default_factory=dict, compare=False)  # keys a person added, kept

    @property
    def evidence(self) -> str:
        return self.paths[0] if self.paths else ""

    def with_evidence(self, paths: list[str]) -> Topic:
        """This topic with new evidence paths in front (most recent first)."""
        newest = sorted(paths, key=lambda p: (path_date(p) or "", p), reverse=True)
        merged = list(dict.fromkeys([*newest, *self.paths]))[:MAX_PATHS]
        dates = [d for d in (path_date(p) for p in merged) if d]
        last = max([*dates, self.last_evidence_at]) if dates else self.last_evidence_at
        return replace(self, paths=tuple(merged), last_evidence_at=last)

    def to_exposure(self) -> JSONObject:
        """The version-2 `interests.yaml` fields, in the order docs/spec.md §13.1 shows."""
        data: JSONObject = {
            "id": self.id,
            "title": self.title,
            "reason": self.reason,
            "kind": self.kind,
            "confidence": round(self.confidence, 3),
            "first_seen": self.first_seen,
            "last_evidence_at": self.last_evidence_at,
            "evidence": self.evidence,
            "paths": [*self.paths],
        }
        if self.keywords:
            data["keywords"] = [*self.keywords]
        return data

    def age_days(self, day: date) -> int | None:
        """Days from the last evidence to `day`; None when unknown."""
        try:
            return (day - date.fromisoformat(self.last_evidence_at)).days
        except ValueError:
            return None


def _text(value: object) -> str:
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""


def _strings(value: object) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list):
        return ()
    return tuple(dict.fromkeys(s for s in (_text(v) for v in values) if s))


def iso_day(value: object) -> str:
    """`YYYY-MM-DD` of a date or a text starting with one; "" for anything else (`June 19`)."""
    text = value.isoformat() if isinstance(value, date) else _text(value)
    return text[:10] if _DATE.fullmatch(text[:10]) else ""


def confidence_of(value: object) -> float:
    """A written confidence in [0, 1]; the default for none, a text or a number that is not finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, float(value)))


_KNOWN_KEYS = {
    "id",
    "title",
    "reason",
    "kind",
    "confidence",
    "first_seen",
    "last_evidence_at",
    "evidence",
    "paths",
    "keywords",
}


def topic_from(data: JSONValue) -> Topic | None:
    """A topic read from a version-1 or version-2 mapping; None when it has no usable title.

    The id is recomputed from the title (a hand-edited id never splits a topic in two).
    """
    if not isinstance(data, Mapping):
        return None
    title = _text(data.get("title"))
    if not title or not normalise_title(title):
        return None
    paths = list(_strings(data.get("paths")))
    evidence = _text(data.get("evidence"))
    if path_date(evidence) and evidence not in paths:  # version 2: the evidence is a path
        paths.insert(0, evidence)
    kind = _text(data.get("kind"))
    dates = [d for d in (path_date(p) for p in paths) if d]
    last = iso_day(data.get("last_evidence_at")) or (max(dates) if dates else "")
    return Topic(
        id=topic_id(title),
        title=title,
        reason=_text(data.get("reason")),
        kind=kind if kind in KINDS else "follow_up",
        confidence=confidence_of(data.get("confidence")),
        first_seen=iso_day(data.get("first_seen")) or (min(dates) if dates else last),
        last_evidence_at=last,
        paths=tuple(paths[:MAX_PATHS]),
        keywords=_strings(data.get("keywords")),
        extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
    )
