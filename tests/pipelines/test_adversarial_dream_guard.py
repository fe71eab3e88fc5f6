"""auto_dream's integrate guard against a misbehaving scripted model (docs/spec.md §12.1, §12.3, §17.2).

A new node may not take a slug another digest file has (a short `[[slug]]` link would turn ambiguous,
§2.2), a write may not leave a node larger than a dream run and a split can handle, and front-matter
keys whose meaning the code owns (identity, provenance, validity) cannot be set by the model. Each
refusal goes back to the agent; the files on disk prove nothing else happened.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipelines.conftest import MakePipes
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    NODE,
    Outcome,
    Pipes,
    body,
    catalog,
    corroborate_turns,
    extract_run,
    integrate_run,
    put,
    report,
    unit,
)
from tests.support import snapshot

from reme.pipelines.dream.guard import MAX_NODE_CHARS
from reme.workspace import frontmatter

DERIVED = ("metadata", "journal")  # derived state and the run journal
OLD_CARD = "daily/2026-06-10/outage.md"


def write(path: str, content: str, description: str = "Release cadence.") -> dict[str, Any]:
    return {"tool": "digest_write", "args": {"path": path, "content": content, "description": description}}


def refusals(response: Outcome) -> list[str]:
    return [entry["refusal"] for entry in response.metadata.get("refusals", [])]


async def with_node(make_pipes: MakePipes, content: str | None = None) -> Pipes:
    """Pipelines whose digest holds NODE (sourced from an old card) and a changed card today."""
    app = make_pipes()
    put(app.workspace_dir, OLD_CARD, "# Outage\n\nWe had an outage.\n")
    await app.write_node(NODE, content or body(OLD_CARD), "Release cadence.")
    put(app.workspace_dir, CARD, CARD_TEXT)
    return app


# a slug another digest file already has ----------------------------------------------------------


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param(NODE, id="a node in another bucket"),
        pytest.param("digest/wiki/archive/weekly-releases.md", id="a hand-made file in a subfolder"),
    ],
)
async def test_a_slug_another_digest_file_has_is_refused(make_pipes: MakePipes, existing: str) -> None:
    app = make_pipes()
    put(app.workspace_dir, OLD_CARD, "# Outage\n")
    put(app.workspace_dir, existing, "---\ndescription: Release cadence.\n---\n" + body(OLD_CARD))
    put(app.workspace_dir, CARD, CARD_TEXT)
    twin = "digest/personal/weekly-releases.md"
    app.script = [extract_run(unit()), integrate_run([write(twin, body(CARD)), report("CREATE", twin)])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert existing in refusal and "[[weekly-releases]]" in refusal, refusal
    assert catalog(app.workspace_dir) == {}  # the unit failed: its card is retried next run


async def test_after_the_slug_refusal_a_distinct_slug_is_created(make_pipes: MakePipes) -> None:
    app = await with_node(make_pipes)
    twin, distinct = "digest/personal/weekly-releases.md", "digest/personal/release-preference.md"
    turns = [write(twin, body(CARD)), write(distinct, body(CARD)), report("CREATE", distinct)]
    app.script = [extract_run(unit()), integrate_run(turns)]
    response = await app.dream()
    assert response.success, response.answer
    assert (app.workspace_dir / distinct).is_file() and not (app.workspace_dir / twin).exists()
    assert len(refusals(response)) == 1


# the size of what a dream run writes -------------------------------------------------------------


async def test_an_oversized_new_node_is_refused(make_pipes: MakePipes) -> None:
    app = make_pipes()
    put(app.workspace_dir, CARD, CARD_TEXT)
    content = body(CARD, text="Weekly releases. " * (MAX_NODE_CHARS // 17 + 1))
    app.script = [extract_run(unit()), integrate_run([write(NODE, content), report("CREATE")])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert f"at most {MAX_NODE_CHARS} characters" in refusal, refusal


@pytest.mark.parametrize("tool", ["digest_edit", "frontmatter_update"])
async def test_an_update_that_grows_a_node_past_the_bound_is_refused(
    make_pipes: MakePipes, tool: str
) -> None:
    """The refusal goes back to the agent, which then corroborates in a few words: only that is written."""
    app = await with_node(make_pipes)
    padding = "x" * MAX_NODE_CHARS
    grown = f"{padding}\n\n## Sources\n- derived_from:: [[{CARD}]] — again.\n"
    grow = (
        {"tool": tool, "args": {"path": NODE, "old": "## Sources\n", "new": grown}}
        if tool == "digest_edit"
        else {"tool": tool, "args": {"path": NODE, "metadata": {"description": padding}}}
    )
    read, *corroborate = corroborate_turns(CARD)
    app.script = [extract_run(unit()), integrate_run([read, grow, *corroborate])]
    response = await app.dream()
    assert response.success, response.answer
    text = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert padding not in text and f"derived_from:: [[{CARD}]]" in text
    assert len(text) < 1000
    [refusal] = refusals(response)
    assert NODE in refusal and f"at most {MAX_NODE_CHARS} characters" in refusal, refusal


# front-matter keys the code owns -----------------------------------------------------------------

OWNED = [
    ("id", "release-1"),
    ("derived_from", "daily/2026-05-01/forged.md"),
    ("valid_from", "2020-01"),
    ("valid_to", "2026-01"),
    ("source", "chatgpt"),
    ("imported_from", "chatgpt:conversations.json"),
    ("import_id", "abc"),
    ("import_sha256", "0" * 64),
    ("session_id", "victim"),
    ("source_resource", "resource/2026-06-20/report.md"),
    ("source_sha256", "0" * 64),
]


@pytest.mark.parametrize(("key", "value"), OWNED, ids=[key for key, _ in OWNED])
async def test_a_new_node_cannot_set_a_key_the_code_owns(make_pipes: MakePipes, key: str, value: str) -> None:
    content = f"---\n{key}: {value}\n---\n" + body(CARD)
    app = make_pipes([extract_run(unit()), integrate_run([write(NODE, content), report("CREATE")])])
    put(app.workspace_dir, CARD, CARD_TEXT)
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert repr(key) in refusal, refusal


@pytest.mark.parametrize(("key", "value"), OWNED, ids=[key for key, _ in OWNED])
async def test_a_front_matter_update_cannot_set_a_key_the_code_owns(
    make_pipes: MakePipes, key: str, value: str
) -> None:
    app = await with_node(make_pipes)
    node = app.workspace_dir / NODE
    original = node.read_bytes()
    turns = [
        {"tool": "read", "args": {"path": NODE}},
        {"tool": "frontmatter_update", "args": {"path": NODE, "metadata": {key.upper(): value}}},
        report("REFINE"),
    ]
    app.script = [extract_run(unit()), integrate_run(turns)]
    response = await app.dream()
    assert not response.success
    assert node.read_bytes() == original
    [refusal] = refusals(response)
    assert repr(key.upper()) in refusal, refusal


async def test_keys_the_model_may_set_are_written(make_pipes: MakePipes) -> None:
    content = "---\nkind: precedent\ntags: [releases]\n---\n" + body(CARD)
    app = make_pipes([extract_run(unit()), integrate_run([write(NODE, content), report("CREATE")])])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert response.success, response.answer
    front = frontmatter.parse((app.workspace_dir / NODE).read_text(encoding="utf-8")).metadata
    assert front == {
        "name": "weekly-releases",
        "description": "Release cadence.",
        "kind": "precedent",
        "tags": ["releases"],
    }


async def test_an_owned_key_a_node_already_has_may_stay(make_pipes: MakePipes) -> None:
    """A person's node keeps its own keys: an update that leaves them as they are is not refused."""
    app = await with_node(make_pipes, "---\nid: release-1\n---\n" + body(OLD_CARD))
    turns = [
        {"tool": "read", "args": {"path": NODE}},
        {"tool": "frontmatter_update", "args": {"path": NODE, "metadata": {"id": "release-1", "kind": "x"}}},
        *corroborate_turns(CARD)[1:],
    ]
    app.script = [extract_run(unit()), integrate_run(turns)]
    response = await app.dream()
    assert response.success, response.answer
    front = frontmatter.parse((app.workspace_dir / NODE).read_text(encoding="utf-8")).metadata
    assert front["id"] == "release-1" and front["kind"] == "x"
