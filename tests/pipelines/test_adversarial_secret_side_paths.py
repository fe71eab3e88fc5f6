"""Secrets reaching disk through side paths (docs/spec.md §14: captures never keep a secret).

A model told (by a prompt injection, or by mistake) to write a secret into its card is redacted in
code: neither the card nor the earlier versions `write` keeps (`journal/replaced/`), nor anything
under `metadata/`, may hold it afterwards. A resource named after a token is the user's file and
stays as it is, but only the card's `source_resource` link (a path, which must name the file to
resolve) repeats that name: the model is shown it redacted, and the card is named without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.pipelines.conftest import MakeApp, scripted, served_by
from tests.pipelines.test_auto_memory import TRIP, front_matter
from tests.pipelines.test_auto_resource import put

from reme.llm.testing.fake_openai import FakeOpenAI
from reme.pipelines.memory.auto_resource import card_stem

SECRET = "ghp_" + "8kQz3VbN1xR7tY2mW9pL4sD6fG0hJ5cA3eU1"
OTHER_SECRET = "ghp_" + "Xy7Wq2Er5Ty8Ui1Op4As6Df9Gh3Jk0Lz2Mc5N"
DAY = "2026-06-01"
NAMED_SOURCE = f"resource/{DAY}/token-{SECRET}.md"
OTHER_SOURCE = f"resource/{DAY}/token-{OTHER_SECRET}.md"


def holding(root: Path, needle: str) -> list[str]:
    """Every file under `root` whose bytes hold `needle`."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and needle.encode() in p.read_bytes()
    )


def kept_versions(root: Path) -> list[Path]:
    return [p for p in (root / "journal" / "replaced").rglob("*") if p.is_file()]


# a secret the model writes -----------------------------------------------------------------------


async def test_a_secret_the_model_writes_into_its_card_twice_is_on_no_file(make_app: MakeApp) -> None:
    """The agent writes the card twice with a token (in the body, its front matter, its
    description, an edit): the first version is kept as the previous one by the second `write`. Every version on
    disk, the index included, holds the redaction, never the token."""
    script = [
        {"tool": "write", "args": {"path": "$card_path", "content": f"# Kyoto\n\ntoken {SECRET}\n"}},
        {
            "tools": [
                {
                    "tool": "write",
                    "args": {
                        "path": "$card_path",
                        "content": f"---\nnote: {SECRET}\n---\n# Kyoto\n\nwindow seats, token {SECRET}\n",
                        "description": f"key {SECRET}",
                    },
                },
                {"tool": "frontmatter_update", "args": {"path": "$card_path", "metadata": {"key": SECRET}}},
                {"tool": "edit", "args": {"path": "$card_path", "old": "window", "new": f"aisle {SECRET}"}},
            ]
        },
        {"tool": "write", "args": {"path": "$card_path", "content": f"# Kyoto\n\n- window seats {SECRET}\n"}},
        {"output": {"name": f"Kyoto {SECRET}", "description": f"Trip, token {SECRET}."}},
    ]
    app = await make_app(**scripted(script))
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert response.success, response.answer
    await app.close()  # everything derived is flushed to metadata/
    root = app.workspace_dir
    assert holding(root, SECRET) == [] and holding(root, SECRET[:20]) == []
    redacted = [p for p in kept_versions(root) if b"[REDACTED:github-pat]" in p.read_bytes()]
    assert len(redacted) >= 2  # the model's earlier versions were kept, redacted
    card = root / response.metadata["note_path"]
    assert "- window seats [REDACTED:github-pat]" in card.read_text(encoding="utf-8")
    assert front_matter(card)["session_id"] == "trip-1"


async def test_a_secret_pieced_together_by_edits_is_on_no_file(make_app: MakeApp) -> None:
    """Each edit adds a few characters, none a secret on its own; the card they make is redacted
    before the model's next `write` keeps it as the previous version."""
    pieces = [SECRET[i : i + 6] for i in range(6, len(SECRET), 6)]
    edits = [
        {"tool": "edit", "args": {"path": "$card_path", "old": "@", "new": f"{piece}@"}} for piece in pieces
    ]
    script = [
        {"tool": "write", "args": {"path": "$card_path", "content": f"# Card\n\nkey {SECRET[:6]}@ end\n"}},
        {"tools": edits},
        {"tool": "write", "args": {"path": "$card_path", "content": "# Card\n\nrewritten\n"}},
        {"output": {"name": "Card", "description": "A card."}},
    ]
    app = await make_app(**scripted(script))
    response = await app.run("auto_memory", session_id="trip-2", messages=TRIP)
    assert response.success, response.answer
    await app.close()
    assert holding(app.workspace_dir, SECRET) == []
    assert kept_versions(app.workspace_dir)
    assert (
        (app.workspace_dir / response.metadata["note_path"])
        .read_text(encoding="utf-8")
        .endswith("rewritten\n")
    )


async def test_a_secret_auto_resource_s_model_writes_twice_is_on_no_file(make_app: MakeApp) -> None:
    source = f"resource/{DAY}/deploy.md"
    script = [
        {"tool": "write", "args": {"path": "$card_path", "content": f"# Deploy\n\nGITHUB_TOKEN={SECRET}\n"}},
        {"tool": "write", "args": {"path": "$card_path", "content": f"# Deploy\n\nShip Friday, {SECRET}.\n"}},
        {"output": {"name": "Deploy", "description": "Deploy notes."}},
    ]
    app = await make_app(**scripted(script))
    put(app, source, "# Deploy\n\nShip on Friday.\n")
    response = await app.run("auto_resource", paths=[source])
    assert response.success, response.answer
    await app.close()
    root = app.workspace_dir
    assert holding(root, SECRET) == [] and len(kept_versions(root)) >= 2
    card = root / response.metadata["processed"][0]["card"]
    assert front_matter(card)["source_resource"] == f"[[{source}]]"
    assert card.read_text(encoding="utf-8").endswith("Ship Friday, [REDACTED:github-pat].\n")


# a secret in a resource's name -------------------------------------------------------------------


def outside_the_link(text: str) -> str:
    """A Markdown file's text without its `source_resource:` line (the provenance link)."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("source_resource:"))


async def test_a_resource_named_after_a_token_gives_a_card_that_names_it_only_in_its_link(
    make_app: MakeApp,
) -> None:
    """The model repeats whatever it was shown of the path in the card's title, description and body.
    The card is named without the token (two such resources get two cards), the day index and every
    kept version do not hold it, and the provenance link still names (and reaches) the resource."""
    echo: list[dict[str, Any]] = [
        {"tool": "read", "args": {"path": "$card_path"}},
        {
            "tool": "write",
            "args": {"path": "$card_path", "content": "# $resource_path\n\nSee [[$resource_path]].\n"},
        },
        {
            "tool": "write",
            "args": {"path": "$card_path", "content": "# $resource_path ($card_path)\n\n$material\n"},
        },
        {"output": {"name": "Reading of $resource_path", "description": "The file $resource_path."}},
    ]
    app = await make_app(**scripted(echo))
    put(app, NAMED_SOURCE, "# Q2\n\nRevenue grew 14%.\n")
    put(app, OTHER_SOURCE, "# Q3\n\nRevenue fell.\n")
    before = {path: (app.workspace_dir / path).read_bytes() for path in (NAMED_SOURCE, OTHER_SOURCE)}
    response = await app.run("auto_resource", paths=[NAMED_SOURCE, OTHER_SOURCE])
    assert response.success, response.answer
    await app.close()
    root = app.workspace_dir
    cards = {row["path"]: row["card"] for row in response.metadata["processed"]}
    assert set(cards) == {NAMED_SOURCE, OTHER_SOURCE} and len(set(cards.values())) == 2
    assert {path: (root / path).read_bytes() for path in before} == before  # the user's files as they were
    for source, card in cards.items():
        meta = front_matter(root / card)
        assert meta["source_resource"] == f"[[{source}]]" and (root / source).is_file()
        assert meta["name"] == f"Reading of resource/{DAY}/[REDACTED:github-pat].md"
        assert "Revenue" in (root / card).read_text(encoding="utf-8")
    derived = [p for p in root.rglob("*") if not p.relative_to(root).as_posix().startswith("resource/")]
    for token in (SECRET, OTHER_SECRET):
        assert not [
            p for p in derived if token[:12] in p.relative_to(root).as_posix()
        ]  # no file named after it
        texts = {
            p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in derived
            if p.is_file() and p.relative_to(root).parts[0] != "metadata"
        }
        assert {path for path, text in texts.items() if token[:12] in outside_the_link(text)} == set()


async def test_the_model_is_never_shown_a_token_in_a_resource_name(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    card = f"daily/{DAY}/{card_stem(NAMED_SOURCE)}.md"
    assert SECRET[:12] not in card
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": card, "content": "# Q2\n\nRevenue grew."}},
            {"output": {"name": "Q2 revenue", "description": "Quarterly figures."}},
        ]
    )
    app = await make_app(**served_by(fake_server))
    put(app, NAMED_SOURCE, "# Q2\n\nRevenue grew 14%.\n")
    response = await app.run("auto_resource", paths=[NAMED_SOURCE])
    assert response.success, response.answer
    assert response.metadata["processed"][0]["card"] == card
    sent = json.dumps(fake_server.requests)
    assert SECRET[:12] not in sent and f"resource/{DAY}/[REDACTED:github-pat].md" in sent
    assert "Revenue grew 14%" in sent
