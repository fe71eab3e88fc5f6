"""The digest's rules (docs/spec.md §12.1, 12.3): where a node may live and what its body must hold.

- Path is identity: `digest/<bucket>/<slug>.md`. A slug is letters of any script (with their
  combining marks), digits, `-` and `_`, at most 80 characters, Latin letters lower-case, in NFC.
  A path that breaks a rule is refused with what to write instead; it is never normalised.
- A file whose name starts with `_` (such as the generated `_buckets.md`) is not a node.
- Provenance: the body keeps a `## Sources` section with at least one `derived_from::` edge (line or
  inline form) to an existing file under the configured `daily/` or `resource/` folder.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection

from reme.errors import ReMeError
from reme.workspace.layout import Workspace
from reme.workspace.paths import UnsafePathError, check_relative, first_segment
from reme.workspace.wikilinks import Link, parse_body_links

MAX_SLUG_CHARS = 80
NODE_SUFFIX = ".md"
SOURCE_PREDICATE = "derived_from"
SOURCES_HEADING = "sources"
SOURCE_ROLES = ("daily", "resource")
EXAMPLE_SOURCES = "## Sources\n- derived_from:: [[daily/2026-06-20/session.md]] — what this source supports."


class DigestRuleError(ReMeError, ValueError):
    """A digest write or edit breaks a rule; the message says what to change. Nothing was written."""


def check_slug(slug: str, what: str = "slug") -> str:
    """Refuse a name that is not a slug, saying which character or rule is wrong."""
    if not slug:
        raise DigestRuleError(f"the {what} is empty; use letters, digits, '-' or '_'")
    if len(slug) > MAX_SLUG_CHARS:
        raise DigestRuleError(f"the {what} {slug!r} has {len(slug)} characters; at most {MAX_SLUG_CHARS}")
    if slug.startswith("_"):
        raise DigestRuleError(
            f"the {what} {slug!r} starts with '_': such files are generated pages (like _buckets.md), "
            "not nodes; start it with a letter or digit"
        )
    if unicodedata.normalize("NFC", slug) != slug:
        raise DigestRuleError(
            f"the {what} {slug!r} is not in Unicode NFC form; write it with precomposed characters"
        )
    for position, char in enumerate(slug):
        category = unicodedata.category(char)
        if category in ("Lu", "Lt") and "LATIN" in unicodedata.name(char, ""):
            raise DigestRuleError(
                f"the {what} {slug!r} has the capital letter {char!r}; Latin letters are lower-case in "
                f"a slug, e.g. {slug.lower()!r}"
            )
        mark_after_letter = category[0] == "M" and position > 0
        if not (category[0] == "L" or category == "Nd" or char in "-_" or mark_after_letter):
            raise DigestRuleError(
                f"the {what} {slug!r} contains {char!r}; a slug holds only letters, digits, '-' and '_' "
                "(use '-' between words)"
            )
    return slug


def node_parts(relative: str, digest_dir: str) -> tuple[str, str]:
    """(bucket, stem) of a node path `digest/<bucket>/<stem>.md`; refuse any other shape."""
    parts = relative.split("/")
    example = f"{digest_dir}/wiki/solar-power.md"
    if len(parts) != 3 or parts[0] != digest_dir:
        raise DigestRuleError(
            f"{relative!r} is not a digest node path; a node lives at {digest_dir}/<bucket>/<slug>.md, "
            f"e.g. {example!r}"
        )
    bucket, filename = parts[1], parts[2]
    if not filename.endswith(NODE_SUFFIX) or filename == NODE_SUFFIX:
        raise DigestRuleError(f"{relative!r} must name a Markdown file ending in '.md', e.g. {example!r}")
    stem = filename[: -len(NODE_SUFFIX)]
    if bucket.startswith("_") or stem.startswith("_"):
        raise DigestRuleError(f"{relative!r} starts with '_': such files are generated pages, not nodes")
    return bucket, stem


def check_new_node_path(relative: str, digest_dir: str, buckets: Collection[str]) -> tuple[str, str]:
    """(bucket, slug) of a path a new node may take: a configured bucket and a valid slug."""
    bucket, stem = node_parts(relative, digest_dir)
    if bucket not in buckets:
        raise DigestRuleError(
            f"bucket {bucket!r} is not configured (configured: {', '.join(buckets)}); put the node in one "
            "of those, or in 'unknown' when none fits"
        )
    check_slug(stem)
    return bucket, stem


def is_node(relative: str, digest_dir: str = "digest") -> bool:
    """Whether a workspace-relative path is a digest node (not a generated `_` page, not elsewhere)."""
    try:
        node_parts(relative, digest_dir)
    except DigestRuleError:
        return False
    return True


def source_links(body: str) -> list[Link]:
    """`derived_from::` links inside the body's `## Sources` section(s), in order."""
    sections = _sources_sections(body)
    return [
        link
        for link in parse_body_links(body)
        if link.predicate == SOURCE_PREDICATE and any(start < link.line <= end for start, end in sections)
    ]


def check_sources(ws: Workspace, path: str, body: str) -> Link:
    """The first `derived_from::` edge of the `## Sources` section naming an existing source file."""
    if not _sources_sections(body):
        raise DigestRuleError(
            f"the body of {path!r} has no '## Sources' section; every node says where it comes from:\n"
            f"{EXAMPLE_SOURCES}"
        )
    links = source_links(body)
    if not links:
        raise DigestRuleError(
            f"the '## Sources' section of {path!r} holds no `{SOURCE_PREDICATE}::` link; add one per "
            f"source, as a line or inline field:\n{EXAMPLE_SOURCES}"
        )
    folders = tuple(ws.folder(role) for role in SOURCE_ROLES)
    problems: list[str] = []
    first: dict[str, Link] = {}
    for link in links:
        first.setdefault(link.target, link)  # each target is looked up once
    for target, link in first.items():
        if _is_source_file(ws, target, folders):
            return link
        problems.append(target)
    shown = ", ".join(repr(target) for target in problems[:10])
    raise DigestRuleError(
        f"no `{SOURCE_PREDICATE}::` link in the '## Sources' section of {path!r} names an existing file "
        f"under {' or '.join(f'{folder}/' for folder in folders)} ({shown}); link the full path of "
        "the daily note or resource the node comes from"
    )


def _is_source_file(ws: Workspace, target: str, folders: tuple[str, ...]) -> bool:
    """A literal path (or `<path>.md`) of a file inside one of the source folders."""
    try:
        relative = check_relative(target)
    except UnsafePathError:
        return False
    if first_segment(relative) not in folders or "/" not in relative:
        return False
    for candidate in (relative, relative + NODE_SUFFIX):
        try:
            if ws.absolute(candidate).is_file():
                return True
        except UnsafePathError:
            return False
    return False


def section_count(body: str) -> int:
    """H2 sections of a body besides `## Sources`: many of them make a node a catch-all page."""
    return sum(
        1
        for _, level, title in _headings(body)
        if level == 2 and title.strip().rstrip(":").strip().casefold() != SOURCES_HEADING
    )


def _sources_sections(body: str) -> list[tuple[int, int]]:
    """1-based (heading line, last line) of each top-level `## Sources` section of the body."""
    headings = _headings(body)
    total = body.count("\n") + 1
    sections = []
    for index, (line, level, title) in enumerate(headings):
        if level == 2 and title.strip().rstrip(":").strip().casefold() == SOURCES_HEADING:
            end = next((later - 1 for later, lvl, _ in headings[index + 1 :] if lvl <= 2), total)
            sections.append((line, end))
    return sections


def _headings(body: str) -> list[tuple[int, int, str]]:
    """(1-based line, level, title) of the body's top-level headings, as CommonMark reads them."""
    from markdown_it import MarkdownIt  # only digest writes need a Markdown parser

    tokens = MarkdownIt("commonmark").disable(["inline", "text_join"]).parse(body)
    found = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            title = tokens[index + 1].content if index + 1 < len(tokens) else ""
            found.append((token.map[0] + 1, int(token.tag[1:]), title))
    return found
