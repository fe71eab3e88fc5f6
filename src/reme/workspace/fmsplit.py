"""Locate a YAML front-matter block without parsing it.

Kept apart from `frontmatter` so the wikilink parser and the readers share one notion of where the
front matter ends and the body begins, and can slice the original text byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = re.compile(r"\A(\ufeff?)---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
# A line that starts a top-level YAML key (`key:`, `"key":`, `'key':`); the key is the first non-None group.
TOP_LEVEL_KEY = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([^\s#'"?:\-][^:]*?))[ \t]*:(?:[ \t]|\r?$)""")


@dataclass(frozen=True)
class Split:
    """Offsets of a document's parts: `text[yaml_start:yaml_end]` is the YAML, `text[body_start:]` the body."""

    has_front_matter: bool
    yaml_start: int = 0
    yaml_end: int = 0
    body_start: int = 0

    def yaml(self, text: str) -> str:
        return text[self.yaml_start : self.yaml_end]

    def body(self, text: str) -> str:
        return text[self.body_start :]

    def head(self, text: str) -> str:
        """Everything before the body: fences and YAML, verbatim."""
        return text[: self.body_start]


def split(text: str) -> Split:
    """Find the `---` fenced block at the very start of `text` (an unclosed block is no front matter)."""
    opened = _OPEN.match(text)
    if not opened:
        return Split(False)
    start = opened.end()
    closed = _CLOSE.search(text, start)
    if closed is None:
        return Split(False)
    return Split(True, start, closed.start(), closed.end())


def line_of(text: str, offset: int) -> int:
    """1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1
