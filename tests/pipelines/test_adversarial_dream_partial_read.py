"""auto_dream's integrate guard: an update is never decided from a snippet (docs/spec.md §12.3).

`read` answers a long node in pages (metadata.next_start_line) and any node in the slice asked for; an
update (`digest_edit`, `frontmatter_update`) goes through only once the agent was shown every line of
the node's current version. `digest_write` never replaces a node, and its `metadata` is refused rather
than dropped. The scripted model misbehaves; the files on disk prove what happened.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.pipelines.conftest import MakePipes
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    NODE,
    Pipes,
    body,
    corroborate_turns,
    extract_run,
    integrate_run,
    put,
    report,
    unit,
)
from tests.pipelines.test_adversarial_dream_guard import DERIVED, OLD_CARD, refusals, with_node, write
from tests.support import snapshot

from reme.llm.runner import MAX_TOOL_ANSWER_CHARS
from reme.llm.tools import ToolSpec
from reme.pipelines.dream.guard import MAX_NODE_CHARS
from reme.workspace import frontmatter

STEPS = "\n".join(f"- Step {n:03}: check the rollback plan before the weekly release." for n in range(450))
KIND = {"metadata": {"kind": "precedent"}}


def read(start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
    lines = {"start_line": start_line, "end_line": end_line}
    return {"tool": "read", "args": {"path": NODE, **{k: v for k, v in lines.items() if v is not None}}}


def update(tool: str) -> dict[str, Any]:
    """An update by `tool` that the guard lets through once the node was read whole."""
    edit, _ = corroborate_turns(CARD)[1:]
    return edit if tool == "digest_edit" else {"tool": tool, "args": {"path": NODE, **KIND}}


async def page_starts(app: Pipes) -> list[int]:
    """The start_line of every page `read` answers for NODE, as an agent paging through it is told."""
    starts = [1]
    while True:
        page = await app.port.run_job("read", path=NODE, start_line=starts[-1])
        following = page.metadata["next_start_line"]
        if following is None:
            return starts
        starts.append(following)


def expose_metadata(app: Pipes) -> None:
    """Give the agent `digest_write`'s `metadata`, as a config with `agent: {writes: true, hide: []}` does."""
    job = app.port.jobs["digest_write"]
    agent = ToolSpec.of_job(job.name, job.description, job.parameters, writes=True)
    app.port.jobs = {**app.port.jobs, "digest_write": replace(job, agent=agent)}


def lines_of(app: Pipes) -> int:
    return len((app.workspace_dir / NODE).read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("tool", ["digest_edit", "frontmatter_update"])
async def test_an_update_after_the_first_page_of_a_long_node_is_refused(
    make_pipes: MakePipes, tool: str
) -> None:
    app = await with_node(make_pipes, body(OLD_CARD, text=STEPS))
    starts = await page_starts(app)
    assert len(starts) > 2  # a 30 000-character node comes in several pages
    app.script = [extract_run(unit()), integrate_run([read(), update(tool), report("CORROBORATE")])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert f"lines {starts[1]}-{lines_of(app)}" in refusal and f"start_line={starts[1]}" in refusal, refusal


@pytest.mark.parametrize("tool", ["digest_edit", "frontmatter_update"])
async def test_a_slice_of_a_short_node_is_not_a_read_of_it(make_pipes: MakePipes, tool: str) -> None:
    app = await with_node(make_pipes)
    app.script = [extract_run(unit()), integrate_run([read(1, 3), update(tool), report("CORROBORATE")])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert f"lines 4-{lines_of(app)}" in refusal and "start_line=4" in refusal, refusal


@pytest.mark.parametrize("order", ["in order", "last page first"])
async def test_pages_read_in_turn_add_up(make_pipes: MakePipes, order: str) -> None:
    """The refused update is tried again once the rest was read, in whatever order: only then it is written."""
    app = await with_node(make_pipes, body(OLD_CARD, text=STEPS))
    first, *rest = await page_starts(app)
    pages = [read(start) for start in (rest if order == "in order" else reversed(rest))]
    edit, done = corroborate_turns(CARD)[1:]
    app.script = [extract_run(unit()), integrate_run([read(first), edit, *pages, edit, done])]
    response = await app.dream()
    assert response.success, response.answer
    text = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert f"derived_from:: [[{CARD}]]" in text and STEPS in text
    assert len(refusals(response)) == 1


async def test_a_node_changed_between_pages_is_read_again_whole(make_pipes: MakePipes) -> None:
    """Pages of two versions do not add up: the lines read before the change are unread again."""
    app = await with_node(make_pipes, body(OLD_CARD, text=STEPS))
    first, *rest = await page_starts(app)
    node = app.workspace_dir / NODE
    hand_edited = node.read_text(encoding="utf-8").replace("Step 000:", "Step 000 (by hand):")
    reads = app.port.run_job

    async def a_person_edits_after_the_first_read(job: str, **params: object) -> Any:
        answer = await reads(job, **params)
        if job == "read" and node.read_text(encoding="utf-8") != hand_edited:
            node.write_text(hand_edited, encoding="utf-8")
        return answer

    app.port.run_job = a_person_edits_after_the_first_read
    edit, done = corroborate_turns(CARD)[1:]
    app.script = [extract_run(unit()), integrate_run([read(first), *map(read, rest), edit, done])]
    response = await app.dream()
    assert not response.success
    assert node.read_text(encoding="utf-8") == hand_edited
    [refusal] = refusals(response)
    assert f"lines 1-{rest[0] - 1} of" in refusal and "start_line=1" in refusal, refusal


async def test_a_line_longer_than_a_tool_answer_is_never_read_whole(make_pipes: MakePipes) -> None:
    """The agent runner shows a tool answer's first MAX_TOOL_ANSWER_CHARS characters: a longer line is a snippet."""
    long_line = "The team releases weekly. " * (MAX_TOOL_ANSWER_CHARS // 26 + 100)
    app = await with_node(make_pipes, body(OLD_CARD, text=long_line))
    starts = await page_starts(app)
    app.script = [extract_run(unit()), integrate_run([*map(read, starts), *corroborate_turns(CARD)[1:]])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before
    [refusal] = refusals(response)
    assert f"more than a tool answer shows ({MAX_TOOL_ANSWER_CHARS})" in refusal, refusal


async def test_a_node_over_the_bound_read_page_by_page_may_be_shrunk(make_pipes: MakePipes) -> None:
    long_text = "Weekly releases, long form.\n" * (MAX_NODE_CHARS // 28 + 10)
    app = await with_node(make_pipes, body(OLD_CARD, text=long_text))
    shrink = {"tool": "digest_edit", "args": {"path": NODE, "old": long_text, "new": "Weekly releases.\n"}}
    starts = await page_starts(app)
    app.script = [
        extract_run(unit()),
        integrate_run([*map(read, starts), shrink, *corroborate_turns(CARD)[1:]]),
    ]
    response = await app.dream()
    assert response.success, response.answer
    text = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert len(text) < 1000 and f"derived_from:: [[{CARD}]]" in text


@pytest.mark.parametrize("pages", [0, 1, None], ids=["unread", "first page", "whole"])
async def test_digest_write_never_replaces_a_node(make_pipes: MakePipes, pages: int | None) -> None:
    """A full rewrite is no way around reading: `digest_write` refuses a node that exists, read or not."""
    app = await with_node(make_pipes, body(OLD_CARD, text=STEPS))
    starts = await page_starts(app)
    turns = [*map(read, starts[:pages]), write(NODE, body(CARD))]
    app.script = [extract_run(unit()), integrate_run([*turns, report("CORROBORATE")])]
    before = snapshot(app.workspace_dir, skip=DERIVED, folders=False)
    response = await app.dream()
    assert not response.success
    assert snapshot(app.workspace_dir, skip=DERIVED, folders=False) == before


@pytest.mark.parametrize("exposed", [False, True], ids=["hidden from the agent", "exposed by a config"])
async def test_metadata_given_to_digest_write_is_refused_not_dropped(
    make_pipes: MakePipes, exposed: bool
) -> None:
    """digest.yaml hides `metadata` from agents; a config may list it (`agent.hide: []`), and then the guard
    refuses it, pointing at `frontmatter_update`, instead of creating the node without those keys."""
    app = make_pipes()
    put(app.workspace_dir, CARD, CARD_TEXT)
    if exposed:
        expose_metadata(app)
    create = write(NODE, body(CARD))
    create["args"].update(KIND)
    app.script = [extract_run(unit()), integrate_run([create, report("CREATE")])]
    response = await app.dream()
    assert not response.success
    assert not (app.workspace_dir / NODE).exists()
    if exposed:
        [refusal] = refusals(response)
        assert "`metadata`" in refusal and "frontmatter_update" in refusal, refusal


async def test_after_the_metadata_refusal_frontmatter_update_sets_the_key(make_pipes: MakePipes) -> None:
    app = make_pipes()
    put(app.workspace_dir, CARD, CARD_TEXT)
    expose_metadata(app)
    create = write(NODE, body(CARD))
    turns = [{**create, "args": {**create["args"], **KIND}}, create, update("frontmatter_update")]
    app.script = [extract_run(unit()), integrate_run([*turns, report("CREATE")])]
    response = await app.dream()
    assert response.success, response.answer
    front = frontmatter.parse((app.workspace_dir / NODE).read_text(encoding="utf-8")).metadata
    assert front["kind"] == "precedent"
