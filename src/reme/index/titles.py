"""What a note is called: its `name`, its title heading and the words of its path.

A person looking for a known note types what it is called ("embed files"), and those words also
appear in the bodies of every page that mentions it. The keyword engine keeps these words in a
field of their own (`title`) weighed above body words (`reme.index.keyword.TITLE_BOOST`), so the
note itself outranks the pages that talk about it (benchmarks/README.md, "Known-item search").
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_TITLE_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_HEAD_CHARS = 4096  # the title heading is looked for near the top only (after any front matter)
_PART_CHARS = 300  # of each part: every chunk of the note carries the title, so a page-long name costs each


def title_text(path: str, name: str | None, body: str | None) -> str:
    """The words a note is known by: `name`, the first level-1 heading near the top, the file's
    stem and its folder's name (`User interface/Embed files.md` → `Embed files`, `User interface`).

    A bare date (`daily/2023-05-08.md`, `# 2023-05-08`) is no title: a day page is a log, found by
    what it says, and its date already reaches the body's search text in words."""
    pure = PurePosixPath(path)
    parts = [name or "", _heading(body or ""), pure.stem]
    if len(pure.parts) > 1:
        parts.append(pure.parent.name)
    kept = (part.strip()[:_PART_CHARS] for part in parts if part and part.strip())
    return "\n".join(dict.fromkeys(part for part in kept if not _DATE.fullmatch(part)))


def _heading(body: str) -> str:
    match = _TITLE_HEADING.search(body[:_HEAD_CHARS])
    return match.group(1) if match else ""
