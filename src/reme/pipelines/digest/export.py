"""The digest exported as one Markdown bundle or as JSON, and the bundle read back.

A node is `{path, front_matter, body, edges}`; `edges` are its wikilinks as `{target, predicate,
anchor, alias, embed}` (front-matter links included, predicate = the key). The Markdown bundle is a
readable document: each node sits between `<!-- reme:node path="..." -->` and `<!-- reme:end
path="..." -->`, its front matter in a fenced `yaml` block, its body verbatim. `parse_bundle` reads
a bundle back into the same nodes. A node that cannot be read (not UTF-8, over the size cap) is left
out, named in the bundle's head and in the job's `skipped`; the others are exported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

import yaml

from reme.errors import ReMeError
from reme.jsontypes import JSONObject
from reme.pipelines.digest.nodes import Skipped, load_files
from reme.pipelines.port import Notes
from reme.workspace import frontmatter, yamlsafe
from reme.workspace.wikilinks import parse_links

FORMAT = "reme-digest-export"
VERSION = 1
_NODE = re.compile(r'^<!-- reme:node path="([^"]+)"( final_newline="false")? -->$')
_BACKTICKS = re.compile(r"`{3,}")


@dataclass(frozen=True)
class ExportLimits:
    max_nodes: int = 20_000
    max_bytes: int = 50_000_000


class ExportEdge(TypedDict):
    target: str
    predicate: str | None
    anchor: str | None
    alias: str | None
    embed: bool


class ExportNode(TypedDict):
    path: str
    front_matter: JSONObject
    body: str
    edges: list[ExportEdge]


class ExportDocument(TypedDict):
    """The JSON export (`format` and `version` say how to read it)."""

    format: str
    version: int
    exported_at: str
    nodes: list[ExportNode]


def edges_of(text: str) -> list[ExportEdge]:
    """The distinct links of a node, in document order (a set of seen keys: a node of 100 000 links
    must not cost 10^10 comparisons in a served job)."""
    edges: list[ExportEdge] = []
    seen: set[tuple[object, ...]] = set()
    for link in parse_links(text):
        edge: ExportEdge = {
            "target": link.target,
            "predicate": link.predicate,
            "anchor": link.anchor,
            "alias": link.alias,
            "embed": link.embed,
        }
        if tuple(edge.values()) not in seen:
            seen.add(tuple(edge.values()))
            edges.append(edge)
    return edges


def node_of(path: str, text: str) -> ExportNode:
    document = frontmatter.parse(text)
    return {"path": path, "front_matter": document.metadata, "body": document.body, "edges": edges_of(text)}


@dataclass
class DigestFiles:
    texts: dict[str, str]  # path -> text, sorted by path
    skipped: list[Skipped]  # nodes that could not be read


async def digest_files(port: Notes, *, bucket: str | None, limits: ExportLimits) -> DigestFiles:
    """Every readable digest node (files starting with `_` are not nodes) within the limits, and the
    nodes that could not be read."""
    folder = port.folder("digest")
    if bucket:
        folder = port.check_path(f"{folder}/{bucket}")
        parent, _, name = folder.rstrip("/").rpartition("/")
        if name not in await port.list_dirs(parent):  # a typo must not export an empty digest
            buckets = ", ".join(await port.list_dirs(port.folder("digest"))) or "none"
            raise ReMeError(f"no bucket {bucket!r} in {port.folder('digest')}/ (its buckets: {buckets})")
    entries = [
        e
        for e in await port.list_files(folder, extensions=(".md",), recursive=True)
        if not e.path.rsplit("/", 1)[-1].startswith("_")
    ]
    if len(entries) > limits.max_nodes:
        raise ReMeError(
            f"the digest holds {len(entries)} nodes, over max_nodes {limits.max_nodes}; export one bucket="
        )
    total = sum(e.size for e in entries)
    if total > limits.max_bytes:
        raise ReMeError(
            f"the digest holds {total} bytes, over max_bytes {limits.max_bytes}; export one bucket="
        )
    found = await load_files(port, [entry.path for entry in entries])
    return DigestFiles({node.path: node.content for node in found.loaded}, found.skipped)


def as_json(nodes: list[ExportNode], exported_at: str) -> ExportDocument:
    return {"format": FORMAT, "version": VERSION, "exported_at": exported_at, "nodes": nodes}


def _yaml_block(text: str) -> str:
    head = frontmatter.parse(text).head
    lines = head.splitlines(keepends=True)
    return "".join(lines[1:-1]) if len(lines) >= 2 else ""


def as_bundle(
    nodes: list[ExportNode], texts: dict[str, str], exported_at: str, skipped: list[Skipped] | None = None
) -> str:
    """One Markdown document holding every node; `texts` are the files as read (front matter verbatim)."""
    parts = [f"# Digest export\n\n{len(nodes)} node(s), exported {exported_at} ({FORMAT} {VERSION}).\n"]
    if skipped:
        lines = "".join(f"- {s['path']} — {s['reason']}\n" for s in skipped)
        parts.append(f"\nNot exported ({len(skipped)} node(s) that cannot be read):\n\n{lines}")
    for node in nodes:
        path, body = node["path"], node["body"]
        end = f'<!-- reme:end path="{path}" -->'
        if end in body.splitlines():
            raise ReMeError(f"{path} contains the bundle's own end marker; export it as JSON")
        flag = "" if body.endswith("\n") or not body else ' final_newline="false"'
        piece = f'\n<!-- reme:node path="{path}"{flag} -->\n'
        # always a block, empty without front matter: a body may start with one
        raw = _yaml_block(texts[path])
        if raw and not raw.endswith("\n"):
            raw += "\n"
        fence = "`" * max(3, 1 + max((len(m) for m in _BACKTICKS.findall(raw)), default=0))
        piece += f"{fence}yaml\n{raw}{fence}\n\n"
        piece += body + ("\n" if flag else "") + end + "\n"
        parts.append(piece)
    return "".join(parts)


def parse_bundle(text: str) -> list[ExportNode]:
    """The nodes of a Markdown bundle; a ValueError says where the bundle is broken."""
    lines = text.splitlines(keepends=True)
    nodes: list[ExportNode] = []
    index = 0
    while index < len(lines):
        opened = _NODE.match(lines[index].rstrip("\n"))
        index += 1
        if not opened:
            continue
        path, no_newline = opened.group(1), bool(opened.group(2))
        fence = re.match(r"^(`{3,})yaml$", lines[index].rstrip("\n")) if index < len(lines) else None
        if not fence:
            raise ValueError(f"{path} has no front-matter block after its node marker")
        close = next(
            (i for i in range(index + 1, len(lines)) if lines[i].rstrip("\n") == fence.group(1)), None
        )
        if close is None:
            raise ValueError(f"the front matter of {path} has no closing fence")
        raw = "".join(lines[index + 1 : close])
        try:
            loaded = yamlsafe.load(raw)
        except yaml.YAMLError as exc:
            raise ValueError(f"the front matter of {path} is not valid YAML: {exc}") from None
        metadata = frontmatter.to_json(loaded or {})
        index = close + 2  # the fence and the blank line after it
        end = f'<!-- reme:end path="{path}" -->'
        stop = next((i for i in range(index, len(lines)) if lines[i].rstrip("\n") == end), None)
        if stop is None:
            raise ValueError(f"{path} has no end marker")
        body = "".join(lines[index:stop])
        if no_newline:
            body = body[:-1]
        rebuilt = f"---\n{raw}---\n{body}" if metadata else body  # as written: edges in the file's order
        nodes.append({"path": path, "front_matter": metadata, "body": body, "edges": edges_of(rebuilt)})
        index = stop + 1
    return nodes
