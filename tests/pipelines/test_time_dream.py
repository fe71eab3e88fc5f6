"""Facts that change keep their time (docs/spec.md §17.2) through auto_dream: scripted model and fake OpenAI server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, MakePipes, served_by
from tests.pipelines.dream_support import Pipes, extract_run, integrate_run, journal_runs, put, report, unit

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI

DAY = "2026-06-20"
OLD_CARD = "daily/2026-06-10/home.md"
CARD = f"daily/{DAY}/move.md"
NODE = "digest/personal/home-city.md"
BERLIN = "- The user lives in Berlin [valid_from:: 2021-03]\n"
OLD_BODY = (
    f"# Home city\n\n{BERLIN}\n## Sources\n- derived_from:: [[{OLD_CARD}]] — said they live in Berlin.\n"
)
UNIT = unit("Home city", CARD, bucket="personal")
READ = {"tool": "read", "args": {"path": NODE}}
SUPERSEDE = {
    "tool": "digest_edit",
    "args": {
        "path": NODE,
        "old": BERLIN,
        "new": "- The user lives in Berlin [valid_from:: 2021-03] [valid_to:: 2026-06-19]\n"
        "- The user lives in Paris since yesterday [valid_from:: 2026-06-19]\n",
    },
}
CITE = {
    "tool": "digest_edit",
    "args": {
        "path": NODE,
        "old": "## Sources\n",
        "new": f"## Sources\n- derived_from:: [[{CARD}]] — moved to Paris, superseding Berlin.\n",
    },
}
DROP = {
    "tool": "digest_edit",
    "args": {"path": NODE, "old": BERLIN, "new": "- The user lives in Paris [valid_from:: 2026-06-19]\n"},
}
SUPERSEDED_TURNS = [READ, SUPERSEDE, CITE, report("CORRECT", NODE, "moved to Paris")]
DROPPING_TURNS = [READ, DROP, DROP, report("CORRECT", NODE, "moved")]


async def with_node(app: ReMe | Pipes) -> Path:
    """NODE (Berlin, from an old card) written by `digest_write`, and today's card about the move."""
    ws = app.workspace_dir
    put(ws, OLD_CARD, "# Home\n\nI live in Berlin, since March 2021.\n")
    if isinstance(app, Pipes):
        await app.write_node(NODE, OLD_BODY, "Where the user lives.")
    else:
        made = await app.run("digest_write", path=NODE, content=OLD_BODY, description="Where the user lives.")
        assert made.success, made.answer
    put(ws, CARD, "# Move\n\nI moved to Paris yesterday.\n")
    return ws / NODE


def assert_superseded(node: Path) -> None:
    text = node.read_text(encoding="utf-8")
    assert "- The user lives in Berlin [valid_from:: 2021-03] [valid_to:: 2026-06-19]\n" in text
    # the relative date the model wrote is resolved against the evidence's day (docs/spec.md §17.1)
    assert "- The user lives in Paris since yesterday (2026-06-19) [valid_from:: 2026-06-19]\n" in text
    assert f"derived_from:: [[{CARD}]]" in text and f"derived_from:: [[{OLD_CARD}]]" in text


async def assert_refused(response: Any, node: Path, before: bytes, ws: Path) -> None:
    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert (
        failure["error"].startswith("ConservationViolation: ") and "superseded statement" in failure["error"]
    )
    assert node.read_bytes() == before
    assert [v["dropped_statements"] for v in response.metadata["violations"]] == [[BERLIN.strip()]] * 2
    assert CARD not in response.metadata["checkpointed"]
    run = journal_runs(ws)[-1]
    assert run["violations"] and run["modified"] == []


async def test_a_superseding_fact_keeps_the_old_statement_with_its_validity(make_pipes: MakePipes) -> None:
    app = make_pipes([extract_run(UNIT), integrate_run(SUPERSEDED_TURNS)])
    node = await with_node(app)
    response = await app.dream()
    assert response.success, response.answer
    assert_superseded(node)
    audit = await app.audit()
    assert not [f for f in audit.metadata["findings"] if f["path"] == NODE and "validity" in f["kind"]]


async def test_an_update_that_drops_the_old_statement_is_refused(make_pipes: MakePipes) -> None:
    app = make_pipes([extract_run(UNIT), integrate_run(DROPPING_TURNS)])
    node = await with_node(app)
    before = node.read_bytes()
    response = await app.dream()
    await assert_refused(response, node, before, app.workspace_dir)


async def test_digest_edit_refuses_the_drop_for_people_and_outside_agents_too(make_app: MakeApp) -> None:
    app = await make_app()
    node = await with_node(app)
    before = node.read_bytes()
    refused = await app.run("digest_edit", **DROP["args"])
    assert not refused.success and refused.metadata["dropped_statements"] == [BERLIN.strip()]
    assert "valid_to" in refused.answer and node.read_bytes() == before


@pytest.fixture
def server() -> Any:
    fake = FakeOpenAI()
    yield fake
    fake.close()


async def test_over_http_the_superseding_fact_is_kept_and_the_drop_refused(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([{"output": {"units": [UNIT]}}, *SUPERSEDED_TURNS])
    app = await make_app(**served_by(server))
    node = await with_node(app)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert_superseded(node)


async def test_over_http_a_drop_is_refused(make_app: MakeApp, server: FakeOpenAI) -> None:
    server.set_script([{"output": {"units": [UNIT]}}, *DROPPING_TURNS])
    app = await make_app(**served_by(server))
    node = await with_node(app)
    before = node.read_bytes()
    response = await app.run("auto_dream", date=DAY)
    await assert_refused(response, node, before, app.workspace_dir)
