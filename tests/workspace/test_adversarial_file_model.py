"""Adversarial review of the file model (docs/spec.md §2, §3, §17.1): a person's YAML survives writes
byte for byte, escaped links are text, link text never resolves outside the workspace, Unicode normal
forms name one file, and relative-date annotation leaves headings and indented code alone."""

from __future__ import annotations

import unicodedata
from datetime import date
from pathlib import Path

import pytest

from reme.workspace import frontmatter
from reme.workspace.edges import missing_edges
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks
from reme.workspace.relative_dates import annotate
from reme.workspace.resolving import resolve, spellings
from reme.workspace.wikilinks import parse_links, retarget

# ---- front matter: an update changes the changed key's value and nothing else ------------------


@pytest.mark.parametrize(
    ("line", "changes", "expected"),
    [
        ("name: Solar   # keep this comment\n", {"name": "Sun"}, "name: Sun   # keep this comment\n"),
        ("name: 'Solar'  # single\n", {"name": "Sun"}, "name: 'Sun'  # single\n"),
        ('name: "Solar"\n', {"name": "Sun"}, 'name: "Sun"\n'),
        ('"title": Solar\n', {"title": "Sun"}, '"title": Sun\n'),
        ("status: v\t# tab before the comment\n", {"status": "w"}, "status: w\t# tab before the comment\n"),
        ("country: no  # Norway, not false\n", {"country": "se"}, "country: se  # Norway, not false\n"),
    ],
)
def test_an_updated_key_keeps_its_comment_quotes_and_spelling(
    line: str, changes: dict, expected: str
) -> None:
    text = f"---\n# by hand\n{line}tags:\n    - energy\nwhen: 2026-06-01\n---\nbody [[a.md]]\n"
    assert frontmatter.update(text, changes) == text.replace(line, expected)


@pytest.mark.parametrize(
    ("text", "changes", "expected"),
    [
        ("body\r\nmore\r\n", {"name": "x"}, "---\r\nname: x\r\n---\r\nbody\r\nmore\r\n"),
        ("\ufeffbody\n", {"name": "x"}, "\ufeff---\nname: x\n---\nbody\n"),
        ("---\r\n---\r\nbody\r\n", {"name": "x"}, "---\r\nname: x\r\n---\r\nbody\r\n"),
        ("\ufeff---\r\n---\r\nbody\r\n", {"name": "x"}, "\ufeff---\r\nname: x\r\n---\r\nbody\r\n"),
        # a flow mapping is rewritten whole (no line of its own per key), still in the file's endings
        ("---\r\n{name: n, k: v}\r\n---\r\nb\r\n", {"k": "w"}, "---\r\n{name: n, k: w}\r\n---\r\nb\r\n"),
    ],
)
def test_written_front_matter_follows_the_files_line_endings_and_bom(
    text: str, changes: dict, expected: str
) -> None:
    assert frontmatter.update(text, changes) == expected


def test_a_key_that_needs_quotes_is_appended_quoted_so_later_updates_stay_line_by_line() -> None:
    text = "---\ntags:   [a, b]\nz:    1\n---\nb\n"
    appended = frontmatter.update(text, {"a:b": 1})
    assert appended == "---\ntags:   [a, b]\nz:    1\n'a:b': 1\n---\nb\n"
    assert frontmatter.update(appended, {"z": 2}) == "---\ntags:   [a, b]\nz: 2\n'a:b': 1\n---\nb\n"


@pytest.mark.parametrize(
    "yaml_block",
    [
        "base: &b\n  x: 1\nother: *b\n",
        "note: |\n  line1\n  line2\nfolded: >-\n  a\n  b\n",
        "when: 2026-06-01\nts: 2026-06-01 10:00:00\n",
        "country: no\nflag: on\nanswer: yes\n",
        "k:\tv\n'quoted key': \"v\"  # c\n",
    ],
)
def test_untouched_yaml_survives_byte_for_byte(yaml_block: str) -> None:
    body = "text\n```\n---\nx: 1\n---\n```\n"
    text = f"---\n{yaml_block}---\n{body}"
    assert frontmatter.update(text, {"added": "v"}) == f"---\n{yaml_block}added: v\n---\n{body}"


# ---- wikilinks: an escaped link is text ---------------------------------------------------------


def test_an_escaped_wikilink_is_text_not_a_link() -> None:
    text = "\\[[digest/a.md]] and \\\\[[digest/b.md]] and \\![[digest/c.md]] and ![[digest/d.md]]\n"
    links = parse_links(text)
    assert [(link.target, link.embed) for link in links] == [
        ("digest/b.md", False),
        ("digest/c.md", False),
        ("digest/d.md", True),
    ]
    assert retarget(text, "digest/a.md", "digest/z.md") == text  # text about a link is not rewritten


@pytest.mark.parametrize(
    "new",
    [
        "see \\[[digest/wiki/solar.md]] now",  # escaped: shown as text, no link
        "see `[[digest/wiki/solar.md]]` now",  # code span
        "see [[Digest/Wiki/Solar.md]] now",  # another target as written
    ],
)
def test_edge_conservation_sees_a_link_turned_into_text(new: str) -> None:
    assert missing_edges("see [[digest/wiki/solar.md]] now", new) == [
        {"target": "digest/wiki/solar.md", "predicate": None}
    ]


# ---- resolution (docs/spec.md §2.2) -------------------------------------------------------------


@pytest.mark.parametrize("target", ["../secret.md", "../secret", "/etc/hostname", "digest/../../secret.md"])
def test_link_text_never_resolves_outside_the_workspace(tmp_path: Path, target: str) -> None:
    root = tmp_path / "ws"
    (root / "digest").mkdir(parents=True)
    (tmp_path / "secret.md").write_text("outside\n", encoding="utf-8")

    def exists(path: str) -> bool:  # a naive check, as a caller might write one
        return (root / path).is_file()

    assert resolve(target, exists, lambda suffix: []) is None


def test_a_target_with_a_trailing_slash_names_no_file(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    (ws.root / "digest" / "wiki").mkdir(parents=True)
    (ws.root / "digest" / "wiki" / "solar.md").write_text("# Solar\n", encoding="utf-8")

    def exists(path: str) -> bool:  # the workspace's own check reads `a/` as `a`
        return ws.resolve(path).exists()

    assert exists("digest/wiki/solar.md/")
    assert resolve("digest/wiki/solar.md/", exists, lambda suffix: []) is None


def test_a_link_in_another_unicode_normal_form_names_the_same_file(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "digest/wiki/café.md")
    nfd_short = unicodedata.normalize("NFD", "café")
    ws = Workspace(tmp_path / "ws")
    (ws.root / "digest" / "wiki").mkdir(parents=True)
    (ws.root / nfc).write_text("# Café\n", encoding="utf-8")
    (ws.root / "note.md").write_text(f"see [[{nfd_short}]]\n", encoding="utf-8")

    files = {nfc}
    ending = {"café.md": [nfc], "wiki/café.md": [nfc]}
    assert resolve(nfd_short, files.__contains__, lambda suffix: ending.get(suffix, [])) == nfc
    assert nfd_short in spellings(nfc)
    assert ScanLinks(ws).inbound(nfc) == [
        {"source_path": "note.md", "target_path": nfd_short, "resolved_path": nfc}
    ]


# ---- relative dates (docs/spec.md §17.1): headings are link targets, indented code is code -----

REF = date(2026, 3, 10)


def test_heading_lines_stay_unannotated() -> None:
    text = (
        "# Yesterday\n"
        "We met yesterday.\n"
        "\n"
        "Plans for tomorrow\n"
        "==================\n"
        "\n"
        "> ## Today\n"
        "> today we ship\n"
        "\n"
        "Notes from yesterday\n"
        "---\n"
    )
    assert annotate(text, REF) == (
        "# Yesterday\n"
        "We met yesterday (2026-03-09).\n"
        "\n"
        "Plans for tomorrow\n"
        "==================\n"
        "\n"
        "> ## Today\n"
        "> today (2026-03-10) we ship\n"
        "\n"
        "Notes from yesterday\n"
        "---\n"
    )


def test_indented_code_stays_unannotated_but_nested_list_items_do_not() -> None:
    text = (
        "Run this yesterday:\n"
        "\n"
        "    deploy --since yesterday\n"
        "\n"
        "    echo today\n"
        "\n"
        "\tcheck tomorrow\n"
        "after that, today\n"
        "  a paragraph line indented a little, yesterday\n"
        "    and its continuation, yesterday\n"
        "\n"
        "- a list item from yesterday\n"
        "    - a nested item from today\n"
    )
    assert annotate(text, REF) == (
        "Run this yesterday (2026-03-09):\n"
        "\n"
        "    deploy --since yesterday\n"
        "\n"
        "    echo today\n"
        "\n"
        "\tcheck tomorrow\n"
        "after that, today (2026-03-10)\n"
        "  a paragraph line indented a little, yesterday (2026-03-09)\n"
        "    and its continuation, yesterday (2026-03-09)\n"
        "\n"
        "- a list item from yesterday (2026-03-09)\n"
        "    - a nested item from today (2026-03-10)\n"
    )


def test_an_edited_nested_list_item_is_annotated_though_it_starts_indented() -> None:
    assert annotate("    - met them yesterday\n", REF) == "    - met them yesterday (2026-03-09)\n"


def test_a_link_to_a_heading_still_finds_it_after_annotation() -> None:
    note = "# Yesterday\nshipped\n"
    linking = "See [[daily/2026-03-10/note.md#Yesterday]], written today.\n"
    annotated_note = annotate(note, REF)
    [link] = parse_links(annotate(linking, REF))
    assert f"# {link.anchor}\n" in annotated_note
