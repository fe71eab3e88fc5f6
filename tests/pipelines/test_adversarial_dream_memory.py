"""auto_dream and auto_memory against a misbehaving scripted model: the code refuses, the files on disk prove it.

Attacks not covered by test_auto_dream_guards.py / test_auto_memory.py: provenance that cites what the
unit was not given, path tricks, front matter the model sets, oversize bodies, broken YAML and
secrets copied into a card.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.pipelines.conftest import MakePipes, scripted
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    body,
    catalog,
    corroborate_turns,
    create_turns,
    extract_run,
    integrate_run,
    journal_runs,
    put,
    report,
    unit,
)
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.support import snapshot

DERIVED = ("metadata", "journal")  # derived state and the run journal
GHOST = f"daily/{DAY}/ghost.md"
OLD_NOTE = "daily/2026-05-01/old.md"


def digest_nodes(ws: Path) -> list[str]:
    return sorted(
        p.relative_to(ws).as_posix() for p in (ws / "digest").rglob("*.md") if p.name != "_buckets.md"
    )


# auto_dream: provenance ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cited",
    [
        pytest.param(GHOST, id="a daily note that does not exist"),
        pytest.param(OLD_NOTE, id="a daily note that was not among the unit's evidence"),
        pytest.param("digest/wiki/outage-review.md", id="a digest node"),
    ],
)
async def test_dream_a_new_source_beyond_the_units_evidence_is_refused(
    make_pipes: MakePipes, cited: str
) -> None:
    app = make_pipes([extract_run(unit()), integrate_run(create_turns(content=body(CARD, cited)))])
    put(app.workspace_dir, CARD, CARD_TEXT)
    put(app.workspace_dir, OLD_NOTE, "# Old\n\nSomething else entirely.\n")
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert cited in failure["error"], failure["error"]
    assert (
        snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
        and catalog(app.workspace_dir) == {}
    )


@pytest.mark.parametrize(
    "link",
    [f"[[{CARD}|the release talk]]", f"[[{CARD}#Release]]", f"[[{CARD[:-3]}]]"],
    ids=["alias", "anchor", "no-md"],
)
async def test_dream_cites_the_evidence_with_an_alias_an_anchor_or_without_md(
    make_pipes: MakePipes, link: str
) -> None:
    content = f"# Weekly releases\n\nWeekly.\n\n## Sources\n- derived_from:: {link} — the decision.\n"
    app = make_pipes([extract_run(unit()), integrate_run(create_turns(content=content))])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert response.success, response.answer
    assert digest_nodes(app.workspace_dir) == [NODE] and catalog(app.workspace_dir).keys() == {CARD}


async def test_dream_evidence_cited_only_outside_sources_fails(make_pipes: MakePipes) -> None:
    content = f"# Weekly releases\n\nSee [derived_from:: [[{CARD}]]].\n\n## Sources\n- derived_from:: [[{OLD_NOTE}]] — x.\n"
    app = make_pipes([extract_run(unit()), integrate_run(create_turns(content=content))])
    put(app.workspace_dir, CARD, CARD_TEXT)
    put(app.workspace_dir, OLD_NOTE, "# Old\n")
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert (
        snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
        and catalog(app.workspace_dir) == {}
    )


async def test_dream_an_update_may_keep_the_old_sources_it_did_not_add(make_pipes: MakePipes) -> None:
    app = make_pipes()
    put(app.workspace_dir, OLD_NOTE, "# Old\n\nWeekly releases.\n")
    await app.write_node(NODE, body(OLD_NOTE), "Release cadence.")
    put(app.workspace_dir, CARD, CARD_TEXT)
    app.script = [extract_run(unit()), integrate_run(corroborate_turns(CARD))]
    response = await app.dream()
    assert response.success, response.answer
    text = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert f"[[{OLD_NOTE}]]" in text and f"[[{CARD}]]" in text


# auto_dream: paths, buckets, front matter, size -----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "digest/wiki/../../daily/2026-06-20/evil.md",
        "digest/wiki/sub/evil.md",
        "digest/wiki/Weekly-Releases.md",
        "digest/wiki/_buckets.md",
        "digest/_buckets.md",
        "digest/wiki/a b.md",
        "digest/wiki/.md",
        "/etc/evil.md",
        "digest/wiki/" + "x" * 81 + ".md",
    ],
)
async def test_dream_a_bad_slug_or_path_writes_nothing(make_pipes: MakePipes, path: str) -> None:
    turns = [create_turns(path)[0], report("CREATE", path)]
    app = make_pipes([extract_run(unit()), integrate_run(turns)])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    assert not response.success
    assert (
        snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
        and digest_nodes(app.workspace_dir) == []
    )
    assert catalog(app.workspace_dir) == {}


async def test_dream_front_matter_in_the_content_cannot_rename_or_link(make_pipes: MakePipes) -> None:
    renamed = "---\nname: something-else\n---\n" + body(CARD)
    linked = f"---\nderived_from: '[[{GHOST}]]'\nsee: '[[digest/wiki/x.md]]'\n---\n" + body(CARD)
    turns = [
        {"tool": "digest_write", "args": {"path": NODE, "content": renamed, "description": "x"}},
        {"tool": "digest_write", "args": {"path": NODE, "content": linked, "description": "x"}},
        report("CREATE"),
    ]
    app = make_pipes([extract_run(unit()), integrate_run(turns)])
    put(app.workspace_dir, CARD, CARD_TEXT)
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success, response.answer
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before


async def test_dream_front_matter_update_cannot_rename_or_add_links(make_pipes: MakePipes) -> None:
    app = make_pipes()
    put(app.workspace_dir, CARD, CARD_TEXT)
    await app.write_node(NODE, body(CARD), "Release cadence.")
    put(app.workspace_dir, CARD, CARD_TEXT + "- changed\n")
    node = app.workspace_dir / NODE
    original = node.read_bytes()
    turns = [
        {"tool": "read", "args": {"path": NODE}},
        {"tool": "frontmatter_update", "args": {"path": NODE, "metadata": {"name": "other"}}},
        {"tool": "frontmatter_update", "args": {"path": NODE, "metadata": {"derived_from": f"[[{GHOST}]]"}}},
        report("REFINE"),
    ]
    app.script = [extract_run(unit()), integrate_run(turns)]
    response = await app.dream()
    assert not response.success
    assert node.read_bytes() == original
    assert len(response.metadata["refusals"]) == 2


async def test_dream_second_unit_fails_after_writing_first_is_journaled_and_revertible(
    make_pipes: MakePipes,
) -> None:
    other_card = f"daily/{DAY}/hiring.md"
    second = "digest/wiki/hiring-bar.md"
    script = [
        extract_run(unit(), unit("Hiring bar", other_card)),
        integrate_run(create_turns(), "Weekly releases"),
        integrate_run([*create_turns(second, body(other_card))[:1], report("CREATE", NODE)], "Hiring bar"),
    ]
    app = make_pipes(script)
    put(app.workspace_dir, CARD, CARD_TEXT)
    put(app.workspace_dir, other_card, "# Hiring\n\nWe hire slowly.\n")
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert digest_nodes(app.workspace_dir) == [NODE]  # the failed unit's node is put back
    [run] = journal_runs(app.workspace_dir)
    assert run["created"] == [NODE] and run["failed_units"][0]["paths"] == [other_card]
    reverted = await app.revert(response.metadata["run_id"])
    assert reverted.success, reverted.answer
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before


# auto_memory ------------------------------------------------------------------------------------------

TRIP = [
    {"id": "u1", "role": "user", "content": "I prefer window seats.", "created_at": "2026-06-01T09:00:00Z"},
]


def _ghp() -> str:
    return "ghp_" + "".join(random.choices(string.ascii_letters + string.digits, k=36))


def card_files(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in sorted((ws / "daily").rglob("*.md"))}


async def test_memory_a_card_for_another_session_is_refused(make_port_app: MakePortApp) -> None:
    other = "daily/2026-06-01/other.md"
    script = [
        {"tool": "write", "args": {"path": other, "content": "# Stolen\n"}},
        {"tool": "frontmatter_update", "args": {"path": "$card_path", "metadata": {"session_id": "victim"}}},
        {
            "tool": "write",
            "args": {"path": "$card_path", "content": "---\nsession_id: victim\n---\n# Seats\n"},
        },
        {"output": {"name": "Seats", "description": "Seat preference."}},
    ]
    app = make_port_app(**scripted(script))
    put(app.workspace_dir, other, "---\nname: other\nsession_id: victim\n---\n# Victim\n")
    victim = (app.workspace_dir / other).read_bytes()
    response = await app.run("auto_memory", session_id="trip", messages=TRIP)
    assert response.success, response.answer
    assert (app.workspace_dir / other).read_bytes() == victim
    card = app.workspace_dir / response.metadata["note_path"]
    meta = yaml.safe_load(card.read_text(encoding="utf-8").split("---\n", 2)[1])
    assert meta["session_id"] == "trip" and meta["source_conversation"] == "[[session/dialog/trip.jsonl]]"


@pytest.mark.parametrize(
    "content",
    ["---\nname: [unclosed\n---\n# Broken\n", "---\n- a list\n---\n# Body\n", "---\nname: x\n"],
    ids=["unclosed", "list", "unterminated"],
)
async def test_memory_front_matter_that_breaks_yaml_leaves_a_readable_card(
    make_port_app: MakePortApp, content: str
) -> None:
    script = [
        {"tool": "write", "args": {"path": "$card_path", "content": content}},
        {"output": {"name": "Seats", "description": "Seat preference."}},
    ]
    app = make_port_app(**scripted(script))
    response = await app.run("auto_memory", session_id="trip", messages=TRIP)
    [card] = (app.workspace_dir / "daily/2026-06-01").glob("*.md")
    text = card.read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(meta, dict) and meta["session_id"] == "trip", text
    if not response.success:
        assert meta.get("pending") is True and "Broken" not in text


@pytest.mark.parametrize("where", ["body", "name", "description"])
async def test_memory_a_secret_the_model_writes_is_redacted_on_disk(
    make_port_app: MakePortApp, where: str
) -> None:
    secret = _ghp()
    text = f"# Seats\n\n- token {secret}\n" if where == "body" else "# Seats\n"
    output = {"name": "Seats", "description": "Seat preference."}
    if where != "body":
        output[where] = f"token {secret}"
    script = [{"tool": "write", "args": {"path": "$card_path", "content": text}}, {"output": output}]
    app = make_port_app(**scripted(script))
    messages: list[dict[str, Any]] = [{**TRIP[0], "content": f"my token is {secret}"}]
    response = await app.run("auto_memory", session_id="trip", messages=messages)
    assert response.success, response.answer
    for path, data in card_files(app.workspace_dir).items():
        assert secret.encode() not in data, path
        assert secret[:12] not in path
    everywhere = [
        p for p in app.workspace_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()
    ]
    assert everywhere == []
