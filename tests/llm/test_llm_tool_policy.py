"""The path allow-list of agent tools fails closed; job results reach the model bounded."""

from __future__ import annotations

import json

import pytest
from tests.support import packaged_tools

from reme.app.jobs import Response, build_job
from reme.llm.runner import MAX_TOOL_ANSWER_CHARS, _tool_reply
from reme.llm.tools import PathPolicy

CARD = "daily/2026-06-01/trip.md"


TOOLS = packaged_tools()


@pytest.mark.parametrize(
    ("path", "writing", "allowed"),
    [
        (CARD, True, True),
        (CARD, False, True),  # what may be written may be read
        ("daily/2026-06-01/other.md", True, False),
        ("session/dialog/s.jsonl", False, True),
        ("session/dialog/s.jsonl", True, False),
        ("session/dialog/../s.jsonl", False, False),
        ("./" + CARD, True, False),
        ("/" + CARD, True, False),
        ("daily/2026-06-01/trip", True, False),  # no extension guessing
        ("", False, False),
        (None, False, False),
        ("digest/x.md", False, True),  # folder rule
        ("digest", False, False),
    ],
)
def test_allow_list(path: object, writing: bool, allowed: bool) -> None:
    policy = PathPolicy(read=("session/dialog/s.jsonl", "digest/"), write=(CARD,))
    assert policy.allows(path, writing=writing) is allowed


def test_empty_policy_allows_nothing_and_star_allows_reading_everything() -> None:
    assert not PathPolicy().allows(CARD, writing=False)
    reader = PathPolicy(read=("*",))
    assert reader.allows(CARD, writing=False) and reader.allows("", writing=False)
    assert not reader.allows(CARD, writing=True)


def test_refusal_names_the_path_and_what_is_allowed() -> None:
    policy = PathPolicy(write=(CARD,))
    assert policy.refusal(TOOLS["write"], {"path": CARD, "content": "x"}) is None
    message = policy.refusal(TOOLS["edit"], {"path": "daily/x.md", "old": "a", "new": "b"})
    assert message == f"refused: this agent may not write 'daily/x.md'; allowed: {CARD}"
    assert policy.refusal(TOOLS["list"], {}) is not None  # the workspace root is not allowed
    assert policy.refusal(TOOLS["search"], {"query": "x"}) is None  # no path argument


def test_tool_schemas_are_the_job_schemas_minus_what_an_agent_must_not_set() -> None:
    assert set(TOOLS["write"].parameters["properties"]) == {"path", "content", "name", "description"}
    assert set(TOOLS["edit"].parameters["required"]) == {"path", "old", "new"}
    assert TOOLS["frontmatter_update"].writes and not TOOLS["read"].writes
    assert "overwrite" not in TOOLS and "delete" not in TOOLS  # jobs without `agent:` are no tools
    assert "min_score" not in TOOLS["search"].parameters["properties"]
    assert TOOLS["traverse"].path_params == () and TOOLS["list"].path_params == ("path",)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"hide": ["nope"]}, "agent.hide: must list parameters of the job"),
        ({"paths": "path"}, "agent.paths: must list parameters"),
        ({"write": True}, "unknown config key 'jobs.x.agent.write'"),
    ],
)
def test_a_bad_agent_block_is_a_config_error_naming_the_key(block: dict, message: str) -> None:
    from reme.app.config import ConfigError

    raw = {
        "parameters": {"properties": {"path": {"type": "string"}}},
        "steps": [{"backend": "read"}],
        "agent": block,
    }
    with pytest.raises(ConfigError, match=message):
        build_job("x", raw)


def test_tool_replies_are_bounded() -> None:
    small = json.loads(_tool_reply(Response(True, "text", {"path": CARD, "content": "dup"})))
    assert small == {"success": True, "answer": "text", "metadata": {"path": CARD}}
    huge = Response(
        True, "x" * (3 * MAX_TOOL_ANSWER_CHARS), {"results": [{"text": "y" * 1000}] * 50, "total": 50}
    )
    reply = _tool_reply(huge)
    assert len(reply) < 2 * MAX_TOOL_ANSWER_CHARS + 500
    decoded = json.loads(reply)
    assert decoded["answer"].endswith(f"[... truncated, {2 * MAX_TOOL_ANSWER_CHARS} more characters]")
    assert decoded["metadata"]["total"] == 50 and "results" not in decoded["metadata"]


def test_arguments_outside_the_tool_schema_are_refused() -> None:
    assert TOOLS["write"].invalid({"path": CARD, "content": "x"}) is None
    assert "Additional properties are not allowed ('metadata'" in (
        TOOLS["write"].invalid({"path": CARD, "content": "x", "metadata": {"a": 1}}) or ""
    )
    assert TOOLS["read"].invalid({"path": CARD, "start_line": 0}) == (
        "invalid arguments for read: start_line: 0 is less than the minimum of 1"
    )
    assert "'content' is a required property" in (TOOLS["write"].invalid({"path": CARD}) or "")
