"""Failures that escape the job runner, over HTTP and MCP: sorted by the error tree, a bug logged and named."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from reme.errors import LLMUnavailable, UserError
from reme.service.failures import STATUS, escaped
from reme.service.http import sse_events


def test_a_bug_is_logged_with_its_traceback_and_says_it_is_one(caplog: pytest.LogCaptureFixture) -> None:
    try:
        {}["missing"]
    except KeyError as exc:
        with caplog.at_level(logging.ERROR, logger="reme.service.failures"):
            kind, message = escaped(exc, "HTTP /search")
    assert (kind, STATUS[kind]) == ("bug", 500)
    assert message == "internal error (a bug in reme; its traceback is in the log): KeyError: 'missing'"
    (record,) = caplog.records
    assert record.getMessage() == "HTTP /search failed (a bug)" and record.exc_info is not None


@pytest.mark.parametrize(
    ("exc", "kind", "status"),
    [(LLMUnavailable("set LLM_MODEL"), "unavailable", 503), (UserError("no such note"), "user", 400)],
)
def test_other_failures_answer_their_message_without_a_traceback(
    exc: Exception, kind: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="reme.service.failures"):
        assert escaped(exc, "MCP tool chat") == (kind, exc.args[0])
    assert STATUS[escaped(exc, "x")[0]] == status and caplog.records == []


class BrokenStream:
    """An application whose stream machinery fails after one chunk."""

    async def stream(self, job: str, **params: object):
        yield {"type": "text", "text": "partial"}
        raise RuntimeError("queue gone")


def test_a_stream_that_breaks_mid_way_ends_with_the_bug_named_and_a_done_chunk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def collect() -> list[dict[str, object]]:
        lines = [line async for line in sse_events(BrokenStream(), "chat", {})]  # type: ignore[arg-type]
        return [json.loads(line.decode().removeprefix("data: ")) for line in lines]

    with caplog.at_level(logging.ERROR, logger="reme.service.failures"):
        chunks = asyncio.run(collect())
    assert chunks == [
        {"type": "text", "text": "partial"},
        {
            "type": "error",
            "message": "internal error (a bug in reme; its traceback is in the log): RuntimeError: queue gone",
        },
        {"type": "done", "success": False},
    ]
    assert [r.getMessage() for r in caplog.records] == ["stream chat failed (a bug)"]
