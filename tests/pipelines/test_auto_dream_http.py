"""auto_dream over the real HTTP client path (the local fake OpenAI server): faults, thinking models, CAS."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, served_by
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    body,
    catalog,
    journal_runs,
    put,
    report,
    unit,
)

from reme.llm.testing.fake_openai import FakeOpenAI

EXTRACT = {"output": {"units": [unit()]}}
WRITE = {
    "tool": "digest_write",
    "args": {"path": NODE, "content": body(CARD), "description": "Release cadence."},
}


class Meddling(FakeOpenAI):
    """A fake server that lets 'someone else' act just before it answers request number n."""

    def __init__(self, script: Sequence[Mapping[str, Any]], before: dict[int, Callable[[], None]]) -> None:
        super().__init__(script)
        self.before = before

    def next_entry(self, body: dict[str, Any]) -> dict[str, Any]:
        action = self.before.get(len(self.requests))
        if action:
            action()
        return super().next_entry(body)


@pytest.fixture
def server() -> Any:
    fake = FakeOpenAI()
    yield fake
    fake.close()


def nodes(ws: Any) -> list[str]:
    return sorted(
        p.relative_to(ws).as_posix() for p in (ws / "digest").rglob("*.md") if not p.name.startswith("_")
    )


async def test_http_500_fails_the_run_without_asking_again_and_checkpoints_nothing(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([{"fault": "http", "status": 500}])
    app = await make_app(**served_by(server, max_retries=1))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert not response.success and "extraction failed" in response.answer and "500" in response.answer
    # One request plus one transport retry: a 500 that is no validation error is a passing fault,
    # so no output-mode fallback; no extraction retry on top.
    assert len(server.requests) == 2
    assert catalog(app.workspace_dir) == {} and nodes(app.workspace_dir) == []
    [run] = journal_runs(app.workspace_dir)
    assert run["error"].startswith("extraction failed") and run["actions"] == []


async def test_a_429_is_retried_by_the_client_and_the_run_succeeds(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([{"fault": "http", "status": 429}, EXTRACT, WRITE, report("CREATE")])
    app = await make_app(**served_by(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert nodes(app.workspace_dir) == [NODE] and set(catalog(app.workspace_dir)) == {CARD}
    assert response.metadata["usage"]["integrate"]["input_tokens"] == 2 * 11
    asked = len(server.requests)
    again = await app.run("auto_dream", date=DAY)  # nothing changed since: no model request at all
    assert again.success and again.metadata["changed"] == [] and len(server.requests) == asked


async def test_a_timeout_in_a_unit_fails_it_and_leaves_its_source_unprocessed(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([EXTRACT, {"fault": "slow", "seconds": 1.5, "then": WRITE}])
    app = await make_app(**served_by(server, timeout=0.3, max_retries=0))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert not response.success
    assert response.metadata["failed_units"][0]["error"].startswith("AgentFailed: LLM request failed")
    assert catalog(app.workspace_dir) == {} and nodes(app.workspace_dir) == []


async def test_malformed_tool_json_is_retried_within_the_unit(make_app: MakeApp, server: FakeOpenAI) -> None:
    server.set_script([EXTRACT, {"fault": "bad_tool_json", "tool": "digest_write"}, WRITE, report("CREATE")])
    app = await make_app(**served_by(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert nodes(app.workspace_dir) == [NODE] and not (app.workspace_dir / "daily/oops.md").exists()


async def test_empty_then_think_only_extraction_replies_fail_after_exactly_two_requests(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([{"text": ""}, {"text": "<think>the user talked about releases</think>"}, EXTRACT])
    app = await make_app(**served_by(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert not response.success and "unusable twice" in response.answer
    assert len(server.requests) == 2
    assert catalog(app.workspace_dir) == {} and nodes(app.workspace_dir) == []


async def test_think_text_is_ignored_and_an_empty_unit_list_checkpoints(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    server.set_script([{"text": "<think>hmm</think>"}, {"output": {"units": []}}])
    app = await make_app(**served_by(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert response.metadata["units"] == [] and response.metadata["checkpointed"] == [CARD]
    assert journal_runs(app.workspace_dir) == []  # nothing changed, nothing failed: no journal entry


async def test_a_think_only_reply_inside_a_unit_is_asked_again(make_app: MakeApp, server: FakeOpenAI) -> None:
    server.set_script([EXTRACT, {"text": "<think>which bucket?</think>"}, WRITE, report("CREATE")])
    app = await make_app(**served_by(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert nodes(app.workspace_dir) == [NODE]


async def test_a_node_edited_by_someone_else_between_read_and_write_is_re_read_no_edit_lost(
    make_app: MakeApp,
) -> None:
    old_card = "daily/2026-06-10/outage.md"
    read = {"tool": "read", "args": {"path": NODE}}
    edit = {
        "tool": "digest_edit",
        "args": {
            "path": NODE,
            "old": "## Sources\n",
            "new": f"## Sources\n- derived_from:: [[{CARD}]] — confirmed.\n",
        },
    }
    script = [EXTRACT, read, edit, read, edit, report("REFINE")]
    holder: dict[str, Any] = {}

    def someone_else() -> None:
        node = holder["ws"] / NODE
        node.write_text(node.read_text(encoding="utf-8").replace("The team", "Our team"), encoding="utf-8")

    server = Meddling(script, {2: someone_else})
    try:
        app = await make_app(**served_by(server))
        holder["ws"] = app.workspace_dir
        put(app.workspace_dir, old_card, "# Outage\n")
        made = await app.run(
            "digest_write", path=NODE, content=body(old_card), description="Release cadence."
        )
        assert made.success, made.answer
        put(app.workspace_dir, CARD, CARD_TEXT)
        response = await app.run("auto_dream", date=DAY)
    finally:
        server.close()
    assert response.success, response.answer
    text = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert (
        "Our team releases weekly" in text and f"derived_from:: [[{CARD}]] — confirmed" in text
    )  # both kept
    conflict = server.requests[3]["messages"][-1]["content"]
    assert "conflict" in conflict and "changed since you read it" in conflict
    [run] = journal_runs(app.workspace_dir)
    assert "Our team releases weekly" in run["modified"][0]["content_before"]


async def test_prompts_carry_material_cuts_buckets_and_the_language_rule(
    make_app: MakeApp, server: FakeOpenAI
) -> None:
    chinese = f"daily/{DAY}/发布.md"
    server.set_script([{"output": {"units": [unit("每周发布", chinese)]}}, WRITE, report("CREATE")])
    overrides = served_by(server)
    overrides["jobs.auto_dream.steps"] = [{"backend": "auto_dream", "max_chars_per_file": 300}]
    app = await make_app(**overrides)
    put(app.workspace_dir, chinese, "# 发布\n\n团队决定每周发布一次。\n" + "细节。" * 200)
    await app.run("auto_dream", date=DAY)

    def text(request: dict[str, Any]) -> str:
        return "\n".join(str(m.get("content") or "") for m in request["messages"])

    extract, integrate = text(server.requests[0]), text(server.requests[1])
    assert f"=== {chinese} ===" in extract and "团队决定每周发布一次" in extract
    assert "more characters of" in extract and "not shown" in extract  # the cut is said
    assert "language of the material" in extract and "`procedure`: how to do X" in extract
    assert "Unit: 每周发布" in integrate and "团队决定每周发布一次" in integrate
    assert "language of the material" in integrate and "## Failure modes" in integrate
