"""Adversarial digest upkeep (docs/spec.md §12.4-12.5): one damaged node does not stop the audit,
maintain or the export of the others (it is named and left as it is); front matter that cannot be
read is not audited or split as body; a forced revert never overwrites a file changed after the
caller was shown it; the journal's revert preview says what the revert really does."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.pipelines import conftest as pipeline_fixtures
from tests.pipelines.conftest import MakeApp, MakePipes
from tests.pipelines.dream_support import put
from tests.pipelines.maintain_support import CHILDREN, PARENT, setup_digest, split_run, split_turns
from tests.pipelines.test_revert import HIRING, NODE, dreamed
from tests.support import snapshot

from reme import ReMe

CARD = "daily/2026-06-20/notes.md"
HUB = "digest/wiki/solar-panels.md"
PEER = "digest/wiki/battery-storage.md"
BROKEN = "digest/wiki/latin1.md"
BROKEN_BYTES = "---\nname: latin1\ndescription: A node.\n---\n# latin1\n\nCaf\xe9 cr\xe8me.\n".encode(
    "latin-1"
)
SPOKE = "digest/wiki/spoke.md"  # links only the damaged node
UNSOURCED = "digest/wiki/unsourced.md"
TANGLED = "digest/wiki/tangled.md"  # front matter that is no YAML, a short body
# a YAML error (the unclosed quote) in a block of 7 000 characters that says "next Friday"
TANGLED_HEAD = "---\nname: tangled\ndescription: 'moved to next Friday\n" + "tag: solar\n" * 700 + "---\n"
METADATA = ("metadata",)
make_app = pipeline_fixtures.make_app  # the pipeline tests' fixtures: scripted runs, then the app's jobs
make_pipes = pipeline_fixtures.make_pipes


def node(path: str, text: str, *, sources: str | None = CARD, head: str | None = None) -> str:
    name = path.rsplit("/", 1)[1].removesuffix(".md")
    tail = f"\n## Sources\n- derived_from:: [[{sources}]] — where it comes from.\n" if sources else "\n"
    head = head if head is not None else f"---\nname: {name}\ndescription: A node.\n---\n"
    return f"{head}# {name}\n\n{text}\n{tail}"


def plant(ws: Path, *extra: tuple[str, str]) -> None:
    """Two healthy nodes, a node that is not UTF-8, a node linking only it, and `extra` nodes."""
    put(ws, CARD, "# Notes\n\nSolar, batteries and the garden.\n")
    put(ws, HUB, node(HUB, f"Rooftop photovoltaic modules convert sunlight; pairs with [[{PEER}]]."))
    put(ws, PEER, node(PEER, f"Lithium cells buffer evening demand, charged by [[{HUB}]]."))
    put(ws, SPOKE, node(SPOKE, f"Cafe notes live in [[{BROKEN}]]."))
    (ws / BROKEN).write_bytes(BROKEN_BYTES)
    for path, text in extra:
        put(ws, path, text)


def named(skipped: list[dict[str, str]]) -> list[str]:
    assert all("not UTF-8" in s["reason"] for s in skipped), skipped
    return [s["path"] for s in skipped]


# one damaged node: the others are served, the damaged one named and left as it is -------------------


async def test_the_audit_audits_the_other_nodes_and_names_the_damaged_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    plant(ws, (UNSOURCED, node(UNSOURCED, f"Gravel drains rain, near [[{HUB}]].", sources=None)))
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        before = snapshot(ws, skip=METADATA, folders=False)
        response = await app.run("digest_audit")
        assert snapshot(ws, skip=METADATA, folders=False) == before
    assert response.success, response.answer
    meta = response.metadata
    assert named(meta["skipped"]) == [BROKEN] and meta["nodes"] == 4
    # the others are audited; a link to the damaged node is neither dead nor leaves its source orphaned
    assert {(f["kind"], f["path"]) for f in meta["findings"]} == {("no_source", UNSOURCED)}
    assert f"SKIPPED {BROKEN}" in response.answer and "the digest is clean" not in response.answer
    assert (ws / BROKEN).read_bytes() == BROKEN_BYTES


async def test_maintain_splits_the_others_and_names_the_damaged_one(make_pipes: MakePipes) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    setup_digest(ws)
    (ws / BROKEN).write_bytes(BROKEN_BYTES)
    response = await app.maintain()
    assert response.success, response.answer
    assert response.metadata["splits"][0]["parent"] == PARENT and all((ws / c).is_file() for c in CHILDREN)
    assert named(response.metadata["skipped"]) == [BROKEN] and f"SKIPPED {BROKEN}" in response.answer
    assert (ws / BROKEN).read_bytes() == BROKEN_BYTES


async def test_maintain_with_nothing_to_split_still_names_the_damaged_node(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    plant(ws)
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        response = await app.run("digest_maintain")
    assert response.success and "nothing to split" in response.answer, response.answer
    assert named(response.metadata["skipped"]) == [BROKEN] and f"SKIPPED {BROKEN}" in response.answer
    assert (ws / BROKEN).read_bytes() == BROKEN_BYTES


async def test_the_export_exports_the_other_nodes_and_names_the_damaged_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    plant(ws)
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        bundle = await app.run("export_digest")
        document = await app.run("export_digest", format="json")
    assert bundle.success and document.success, bundle.answer
    for response in (bundle, document):
        assert response.metadata["paths"] == [PEER, HUB, SPOKE]
        assert named(response.metadata["skipped"]) == [BROKEN]
    assert BROKEN in bundle.answer and "Not exported" in bundle.answer  # said in the bundle itself
    assert [n["path"] for n in document.answer["nodes"]] == [PEER, HUB, SPOKE]
    assert (ws / BROKEN).read_bytes() == BROKEN_BYTES


# front matter that cannot be read: the body alone is audited and measured --------------------------


async def test_front_matter_that_cannot_be_read_is_not_audited_as_body(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    tangled = node(TANGLED, f"Panels pair with [[{HUB}]].", head=TANGLED_HEAD)
    plant(ws, (TANGLED, tangled))
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        audit = await app.run("digest_audit")
        maintain = await app.run("digest_maintain")  # no model: a split would fail for the lack of one
    assert audit.success, audit.answer
    # neither `overloaded` (7 000 characters of front matter) nor `unresolved_date` ("next Friday" in it)
    assert [f for f in audit.metadata["findings"] if f["path"] == TANGLED] == []
    [warning] = audit.metadata["warnings"]
    assert warning["path"] == TANGLED and "not valid YAML" in warning["reason"]
    assert f"FRONT MATTER {TANGLED}" in audit.answer
    assert maintain.success and maintain.metadata["candidates"] == [], maintain.answer
    assert (ws / TANGLED).read_text(encoding="utf-8") == tangled


async def test_an_overloaded_node_whose_front_matter_cannot_be_read_is_not_split(
    make_pipes: MakePipes,
) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    parent = setup_digest(ws)
    text = parent.read_text(encoding="utf-8").replace(
        "description: How we ship.", "description: 'How we ship"
    )
    parent.write_text(text, encoding="utf-8")
    response = await app.maintain()
    assert response.success and response.metadata["splits"] == [], response.answer
    [declined] = response.metadata["declined"]
    assert declined["parent"] == PARENT and "not valid YAML" in declined["reason"]
    assert parent.read_text(encoding="utf-8") == text and not any((ws / c).exists() for c in CHILDREN)


# forced revert: only what the caller was shown -----------------------------------------------------


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_forced_revert_never_overwrites_a_file_changed_after_it_was_confirmed(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    _, before, run_id = await dreamed(make_pipes)
    app = await make_app()
    ws = app.workspace_dir
    edited = (ws / NODE).read_text(encoding="utf-8") + "\nAdded by hand.\n"
    (ws / NODE).write_text(edited, encoding="utf-8")
    preview = await app.run("dream_revert", run_id=run_id)  # what a person is shown: NODE would be lost
    assert preview.success and [s["path"] for s in preview.metadata["skipped"]] == [NODE]
    assert preview.metadata["skipped_sha256"] == {NODE: sha(ws / NODE)}

    again = edited + "And more, after the confirmation.\n"
    (ws / NODE).write_text(again, encoding="utf-8")
    forced = await app.run(
        "dream_revert", run_id=run_id, force=True, confirmed=preview.metadata["skipped_sha256"]
    )
    assert forced.success, forced.answer
    assert (ws / NODE).read_text(encoding="utf-8") == again  # the later change is not lost unseen
    assert [s["path"] for s in forced.metadata["skipped"]] == [NODE] and forced.metadata["restored"] == []
    assert "changed again after it was confirmed" in forced.metadata["skipped"][0]["reason"]
    assert f"SKIPPED {NODE}" in forced.answer

    shown = await app.run("dream_revert", run_id=run_id)
    confirmed = await app.run(
        "dream_revert", run_id=run_id, force=True, confirmed=shown.metadata["skipped_sha256"]
    )
    assert (
        confirmed.success
        and confirmed.metadata["restored"] == [NODE]
        and confirmed.metadata["forced"] == [NODE]
    )
    assert (ws / NODE).read_bytes() == before and "forced" in confirmed.answer


async def test_a_forced_revert_overwrites_only_the_confirmed_files(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    _, _, run_id = await dreamed(make_pipes)
    app = await make_app()
    ws = app.workspace_dir
    (ws / NODE).write_text((ws / NODE).read_text(encoding="utf-8") + "\nMine.\n", encoding="utf-8")
    (ws / HIRING).write_text((ws / HIRING).read_text(encoding="utf-8") + "\nMine too.\n", encoding="utf-8")
    shown = await app.run("dream_revert", run_id=run_id)
    only_node = {NODE: shown.metadata["skipped_sha256"][NODE]}
    forced = await app.run("dream_revert", run_id=run_id, force=True, confirmed=only_node)
    assert forced.success and forced.metadata["restored"] == [NODE], forced.answer
    assert "Mine too." in (ws / HIRING).read_text(encoding="utf-8")
    [skipped] = forced.metadata["skipped"]
    assert skipped["path"] == HIRING and "not among the confirmed files" in skipped["reason"]


async def test_confirmed_without_force_or_of_the_wrong_shape_is_refused(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    _, _, run_id = await dreamed(make_pipes)
    app = await make_app()
    ws = app.workspace_dir
    before = snapshot(ws, skip=METADATA, folders=False)
    alone = await app.run("dream_revert", run_id=run_id, confirmed={NODE: "0" * 64})
    assert not alone.success and "pass force=true with it" in alone.answer
    wrong = await app.run("dream_revert", run_id=run_id, force=True, confirmed=[NODE])
    assert not wrong.success
    assert snapshot(ws, skip=METADATA, folders=False) == before


# the preview says what the revert really does -------------------------------------------------------


async def revert_run(make_pipes: MakePipes, make_app: MakeApp) -> tuple[ReMe, str]:
    """An app over a workspace where a revert run deleted HIRING (the node a dream created); its run id."""
    _, _, run_id = await dreamed(make_pipes)
    app = await make_app()
    undone = await app.run("dream_revert", run_id=run_id)
    assert undone.success and undone.metadata["deleted"] == [HIRING], undone.answer
    return app, undone.metadata["revert_run_id"]


def preview(response: Any) -> dict[str, str]:
    return {d["path"]: d["revert"] for d in response.metadata["diffs"]}


def done(response: Any) -> dict[str, str]:
    meta = response.metadata
    found = {path: "restore" for path in meta["restored"]} | {path: "delete" for path in meta["deleted"]}
    found |= {s["path"]: "skip" for s in meta["skipped"]} | {path: "unchanged" for path in meta["unchanged"]}
    return found


async def test_the_preview_of_a_node_created_again_by_hand_says_the_revert_skips_it(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    app, undo_id = await revert_run(make_pipes, make_app)
    ws = app.workspace_dir
    mine = "---\nname: hiring-bar\ndescription: Mine.\n---\n# Hiring bar\n\nWritten again by hand.\n"
    put(ws, HIRING, mine)
    shown = await app.run("journal", run_id=undo_id)
    assert shown.success, shown.answer
    [diff] = [d for d in shown.metadata["diffs"] if d["path"] == HIRING]
    assert diff["revert"] == "skip" and "created again since the run deleted it" in diff["revert_reason"]
    reverted = await app.run("dream_revert", run_id=undo_id)
    assert reverted.success, reverted.answer
    assert done(reverted) == preview(shown)  # the preview said what the revert did, file by file
    assert (ws / HIRING).read_text(encoding="utf-8") == mine


async def test_the_preview_of_a_node_created_again_as_it_was_says_nothing_changes(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    app, undo_id = await revert_run(make_pipes, make_app)
    ws = app.workspace_dir
    record = json.loads((ws / f"journal/dream/runs/{undo_id}.json").read_text(encoding="utf-8"))
    [deleted] = record["deleted"]
    put(ws, HIRING, deleted["content_before"])  # restored by hand, byte for byte
    shown = await app.run("journal", run_id=undo_id)
    assert preview(shown)[HIRING] == "unchanged"
    reverted = await app.run("dream_revert", run_id=undo_id)
    assert done(reverted) == preview(shown)
