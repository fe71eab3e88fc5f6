"""digest_audit (docs/spec.md §12.5): where the digest is unhealthy, at a glance; no model, no writes.

Per node: `no_source` (no `derived_from::` in `## Sources`), `missing_source` (a source that is not
a file), `dead_link` (a pending link), `orphan` (no digest link in or out), `overloaded` (past the
maintain bounds). Near-duplicates cost one keyword search per node, not a pairwise scan: the node's
own text is the query, each other node's score is divided by the node's score for itself, and a pair
at or over `near_duplicate` is reported once. `conservation_violation` comes from the journal's
run records (the newest `max_runs`). Time (docs/spec.md §17): `contradictory_validity` (a bound that cannot
be read, or ends before it starts), `overlapping_validity` (a replacement that starts before the
statement it supersedes ends), `unresolved_date` (a relative date left without its resolution).

A node that cannot be read (not UTF-8, over the size cap) is left out and named in `skipped`; a node
whose front matter cannot be read is audited by its body alone and named in `warnings`. Neither is a
finding kind of its own (docs/spec.md §12.5 fixes the kinds).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TypedDict

from reme.errors import ReMeError
from reme.pipelines.digest.nodes import Overload, Skipped, body_of, load_nodes, skipped_lines
from reme.pipelines.journal.records import journal_folder, read_record
from reme.pipelines.port import FileText, Notes, NotesRecall, Places, Recall
from reme.workspace import frontmatter, validity
from reme.workspace.digest import SOURCE_PREDICATE, SOURCES_HEADING, source_links
from reme.workspace.edges import describe
from reme.workspace.relative_dates import unresolved
from reme.workspace.wikilinks import Link

MAX_ANSWER_LINES = 500
MIN_QUERY_WORDS = 8
MAX_NEIGHBOURS = 199  # node_search returns at most 200 hits, the node itself among them
MAX_QUERY_CHARS = 8192  # the longest query node_search takes
KINDS = (
    "no_source",
    "missing_source",
    "dead_link",
    "orphan",
    "near_duplicate",
    "overloaded",
    "conservation_violation",
    "contradictory_validity",
    "overlapping_validity",
    "unresolved_date",
)


@dataclass(frozen=True)
class AuditSettings:
    overload: Overload = Overload()
    near_duplicate: float = 0.8  # score against a node / the node's score against itself
    neighbours: int = 5  # hits looked at per node
    max_query_chars: int = 2000
    max_nodes: int = 10_000
    max_runs: int = 500

    def __post_init__(self) -> None:
        """Refuse a setting that would audit wrongly without a word: `max_runs` 0 read every record,
        `neighbours` or `max_query_chars` past what node_search takes dropped every near-duplicate."""
        if not 0 < self.near_duplicate <= 1:
            raise ReMeError(
                f"digest_audit: near_duplicate must be a score ratio above 0 and at most 1 (e.g. 0.8), "
                f"not {self.near_duplicate!r}"
            )
        for name, most in (
            ("neighbours", MAX_NEIGHBOURS),
            ("max_query_chars", MAX_QUERY_CHARS),
            ("max_nodes", None),
            ("max_runs", None),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (most and value > most):
                span = f"from 1 to {most}" if most else "of at least 1"
                raise ReMeError(f"digest_audit: {name} must be a whole number {span}, not {value!r}")


class Finding(TypedDict):
    kind: str  # one of KINDS
    path: str
    detail: str


class FrontMatterWarning(TypedDict):
    """A node audited by its body alone: its front matter cannot be read (the reason says why)."""

    path: str
    reason: str


class AuditReport(TypedDict):
    """The audit's metadata: every finding, the count per kind, and the files it could not fully audit."""

    nodes: int
    findings: list[Finding]
    counts: dict[str, int]
    skipped: list[Skipped]
    warnings: list[FrontMatterWarning]


@dataclass
class AuditOutcome:
    answer: str
    metadata: AuditReport


async def digest_audit(port: NotesRecall, settings: AuditSettings) -> AuditOutcome:
    found = await load_nodes(port, settings.max_nodes)
    nodes = found.loaded
    # an unreadable node is still a node: a link to it is neither dead nor orphaning
    names = {node.path for node in nodes} | {skipped["path"] for skipped in found.skipped}
    findings: list[Finding] = []
    warnings: list[FrontMatterWarning] = []
    for node in nodes:
        body = body_of(node.content)
        problem = frontmatter.parse(node.content).error
        if problem:
            warnings.append({"path": node.path, "reason": f"{problem}; only its body was audited"})
        sources = source_links(body)
        findings += _sources(port, node.path, sources)
        findings += await _links(port, node.path, names, {link.target for link in sources})
        findings += _time(node.path, body)
        reason = settings.overload.reason(node.content)
        if reason:
            findings.append({"kind": "overloaded", "path": node.path, "detail": reason})
    findings += await _near_duplicates(port, nodes, names, settings)
    findings += await _violations(port, settings.max_runs)
    order = {kind: index for index, kind in enumerate(KINDS)}
    findings.sort(key=lambda f: (order[f["kind"]], f["path"], f["detail"]))
    counts = Counter(f["kind"] for f in findings)
    meta: AuditReport = {
        "nodes": len(nodes),
        "findings": findings,
        "counts": {kind: counts.get(kind, 0) for kind in KINDS},
        "skipped": found.skipped,
        "warnings": warnings,
    }
    return AuditOutcome(_report(meta), meta)


def _sources(port: Places, path: str, links: list[Link]) -> list[Finding]:
    if not links:
        return [
            {
                "kind": "no_source",
                "path": path,
                "detail": f"no `derived_from::` link in a ## {SOURCES_HEADING.title()} section",
            }
        ]
    found: list[Finding] = []
    for target in dict.fromkeys(link.target for link in links):
        if not (_is_file(port, target) or _is_file(port, f"{target}.md")):
            found.append(
                {
                    "kind": "missing_source",
                    "path": path,
                    "detail": f"derived_from:: [[{target}]] names no file",
                }
            )
    return found


def _is_file(port: Places, path: str) -> bool:
    """A file inside the workspace (a target that leads outside it names none)."""
    try:
        return port.exists(port.check_path(path))
    except ValueError:
        return False


async def _links(port: Recall, path: str, names: set[str], sources: set[str]) -> list[Finding]:
    """`dead_link`s and `orphan`; `sources`, the targets of the `## Sources` edges, are audited as
    `missing_source` (a `derived_from::` edge elsewhere in the node is an ordinary link here)."""
    try:
        graph = await port.traverse([path], depth=1, direction="both")
    except ReMeError:
        return []  # no index: links are not audited
    found: list[Finding] = []
    linked = False
    for edge in graph.edges:
        audited = edge.predicate == SOURCE_PREDICATE and edge.target in sources
        if edge.source == path and not edge.resolved and not audited:
            shown = describe({"target": edge.target, "predicate": edge.predicate})
            found.append({"kind": "dead_link", "path": path, "detail": f"{shown} names no file"})
        outbound = edge.source == path and edge.resolved in names and edge.resolved != path
        inbound = edge.resolved == path and edge.source in names and edge.source != path
        linked = linked or outbound or inbound
    if not linked:
        found.append({"kind": "orphan", "path": path, "detail": "no digest node links it and it links none"})
    return found


def _query(node: FileText, limit: int) -> str:
    """The node's prose: its body above `## Sources`, without the title line and without links.

    Names, descriptions, titles and link targets are left out: they differ between two nodes that
    say the same thing, or name the other node itself. Too little prose (under MIN_QUERY_WORDS
    words) gives no query: a score ratio over a few words means nothing.
    """
    body = body_of(node.content).split(f"## {SOURCES_HEADING.title()}", 1)[0].strip()
    if body.startswith("# "):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    prose = re.sub(r"!?\[\[[^\]]*\]\]", " ", body)
    return prose.strip()[:limit] if len(prose.split()) >= MIN_QUERY_WORDS else ""


async def _near_duplicates(
    port: Recall, nodes: list[FileText], names: set[str], settings: AuditSettings
) -> list[Finding]:
    """Pairs of `nodes` only: a hit that is no node (a `_` page, a file deeper in the digest) is no twin."""
    seen: dict[tuple[str, str], float] = {}
    for node in nodes:
        query = _query(node, settings.max_query_chars)
        if not query:
            continue
        try:
            # lexical similarity (docs/spec.md §12.5): BM25 scores, never fused ones (scaled per query, meaning-based)
            hits = await port.node_search(query, limit=settings.neighbours + 1, keyword_only=True)
        except ReMeError:
            return []  # no index: near-duplicates are not audited
        own = next((hit.score for hit in hits if hit.path == node.path), 0.0)
        if own <= 0:
            continue
        for hit in hits:
            ratio = hit.score / own
            if hit.path != node.path and hit.path in names and ratio >= settings.near_duplicate:
                pair = (min(node.path, hit.path), max(node.path, hit.path))
                seen[pair] = max(seen.get(pair, 0.0), min(ratio, 1.0))
    return [
        {
            "kind": "near_duplicate",
            "path": left,
            "detail": f"near-duplicate of {right} (similarity {ratio:.2f})",
        }
        for (left, right), ratio in sorted(seen.items())
    ]


def _time(path: str, body: str) -> list[Finding]:
    """Validity that cannot hold and relative dates left without their resolution (docs/spec.md §17)."""
    found: list[Finding] = [
        {"kind": kind, "path": path, "detail": detail} for kind, detail in validity.problems(body)
    ]
    left = list(dict.fromkeys(unresolved(body)))
    if left:
        shown = ", ".join(repr(words) for words in left[:10])
        detail = f"relative date(s) without a resolution: {shown}"
        found.append({"kind": "unresolved_date", "path": path, "detail": detail})
    return found


async def _violations(port: Notes, max_runs: int) -> list[Finding]:
    folder = f"{journal_folder(port)}/runs"
    entries = (await port.list_files(folder, extensions=(".json",)))[-max_runs:]
    found: list[Finding] = []
    for entry in entries:
        record, _problem = await read_record(port, entry.path)
        if record is None:  # an unusable record is the journal listing's to report
            continue
        for violation in record.violations:
            lost = ", ".join(
                [
                    describe({"target": e["target"], "predicate": e.get("predicate")})
                    for e in violation.get("missing_edges", [])
                ]
                + [repr(line) for line in violation.get("dropped_statements", [])]
            )
            detail = f"{record.kind or 'run'} run {record.run_id} refused a change that would drop {lost}"
            found.append({"kind": "conservation_violation", "path": violation["path"], "detail": detail})
    return found


def _report(meta: AuditReport) -> str:
    """The head line, the files not (fully) audited, then one line per finding (the first
    MAX_ANSWER_LINES each; metadata has them all)."""
    total, skipped, warnings = len(meta["findings"]), meta["skipped"], meta["warnings"]
    counts = ", ".join(f"{kind} {n}" for kind, n in meta["counts"].items() if n)
    head = f"digest audit: {meta['nodes']} node(s), {total} finding(s)" + (
        f" ({counts})" if counts else "" if skipped or warnings else "; the digest is clean"
    )
    if skipped:
        head += f"; {len(skipped)} unreadable file(s) not audited"
    lines = skipped_lines(skipped, MAX_ANSWER_LINES)
    lines += [f"FRONT MATTER {w['path']} — {w['reason']}" for w in warnings[:MAX_ANSWER_LINES]]
    if len(warnings) > MAX_ANSWER_LINES:
        lines.append(f"… {len(warnings) - MAX_ANSWER_LINES} more in metadata.warnings")
    lines += [f"{f['kind']}: {f['path']} — {f['detail']}" for f in meta["findings"][:MAX_ANSWER_LINES]]
    if total > MAX_ANSWER_LINES:
        lines.append(f"… {total - MAX_ANSWER_LINES} more finding(s) in metadata.findings")
    return "\n".join([head, *lines])
