"""Stream jobs over HTTP as Server-Sent Events, on an in-process service with a test-only stream job."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from reme.app.config import load_config
from reme.app.jobs import JobContext
from reme.app.registry import STEPS
from reme.service.cli import run_once, show_chunk
from reme.service.runner import run_service

pytestmark = pytest.mark.slow  # runs a service (docs/testing.md)


async def words(ctx: JobContext) -> None:
    for word in ctx.params["text"].split():
        await ctx.emit({"type": "text", "text": word + " "})
    if ctx.params.get("fail"):
        raise RuntimeError("stream broke")


@pytest.fixture(autouse=True, scope="module")
def _test_step():
    """The test double is a step only while this module's tests run."""
    with STEPS.registered({"svc_test_words": words}):
        yield


CONFIG = """
imports: [jobs/system.yaml]
jobs:
  talk:
    kind: stream
    description: Emit the words of `text` one chunk each.
    parameters:
      properties:
        text: {type: string}
        fail: {type: boolean}
      required: [text]
    steps: [{backend: svc_test_words}]
"""


def stream_config(tmp_path):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(CONFIG, encoding="utf-8")
    overrides = {"workspace_dir": str(tmp_path / "ws"), "service.port": 0}
    return load_config(config_path, overrides, load_env_file=False)


@pytest.fixture
async def stream_service(tmp_path):
    """`run_service` in this event loop on a free port; yields the service file's content."""
    workspace = tmp_path / "ws"
    config = stream_config(tmp_path)
    stop = asyncio.Event()
    task = asyncio.create_task(run_service(config, stop))
    service_file = workspace / "metadata" / "service.json"
    for _ in range(1000):
        if service_file.exists() or task.done():
            break
        await asyncio.sleep(0.01)
    if task.done():
        await task  # surfaces the start error
    info = json.loads(service_file.read_text())
    yield info
    stop.set()
    await asyncio.wait_for(task, 10)
    assert not service_file.exists()


async def sse_chunks(info, job: str, body: bytes | dict) -> tuple[httpx.Response, list[dict]]:
    """POST and read the event stream; every non-blank line must be a `data:` JSON line."""
    kwargs = {"json": body} if isinstance(body, dict) else {"content": body}
    url = f"http://{info['host']}:{info['port']}/{job}"
    chunks = []
    async with httpx.AsyncClient(timeout=30) as client, client.stream("POST", url, **kwargs) as reply:
        async for line in reply.aiter_lines():
            if line.strip():
                assert line.startswith("data: "), line
                chunks.append(json.loads(line.removeprefix("data: ")))
    return reply, chunks


async def test_stream_job_answers_event_stream_ending_with_done(stream_service):
    reply, chunks = await sse_chunks(stream_service, "talk", {"text": "one two three"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert [c["text"] for c in chunks[:-1]] == ["one ", "two ", "three "]
    assert chunks[-1]["type"] == "done" and chunks[-1]["success"] is True


async def test_failure_mid_stream_is_an_error_chunk_then_done(stream_service):
    _, chunks = await sse_chunks(stream_service, "talk", {"text": "a b", "fail": True})
    assert [c["type"] for c in chunks] == ["text", "text", "error", "done"]
    assert "stream broke" in chunks[2]["message"]
    assert chunks[3]["success"] is False


async def test_invalid_parameters_stream_an_error_and_done(stream_service):
    _, chunks = await sse_chunks(stream_service, "talk", {"text": 5})
    assert [c["type"] for c in chunks] == ["error", "done"]
    assert "must be of type string" in chunks[0]["message"]


async def test_malformed_body_of_a_stream_job_is_a_plain_400(stream_service):
    url = f"http://{stream_service['host']}:{stream_service['port']}/talk"
    async with httpx.AsyncClient() as client:
        reply = await client.post(url, content=b"{oops")
    assert reply.status_code == 400
    assert reply.json()["success"] is False


async def test_openapi_marks_the_stream_job_as_event_stream(stream_service):
    url = f"http://{stream_service['host']}:{stream_service['port']}/openapi.json"
    async with httpx.AsyncClient() as client:
        spec = (await client.get(url)).json()
    assert "text/event-stream" in spec["paths"]["/talk"]["post"]["responses"]["200"]["content"]


async def test_cli_prints_chunks_and_exits_by_the_done_marker(stream_service, run_reme_async):
    port = f"port={stream_service['port']}"
    ok = await run_reme_async("talk", "text=hello streaming world", port)
    assert (ok.returncode, ok.stdout.strip()) == (0, "hello streaming world")
    failed = await run_reme_async("talk", "text=x", "fail=true", port)
    assert failed.returncode == 1 and "stream broke" in failed.stderr
    as_json = await run_reme_async("talk", "text=x y", port, "--json")
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [c["type"] for c in lines] == ["text", "text", "done"]


async def test_one_shot_stream_job_prints_chunks_as_they_come(tmp_path, capsys):
    assert await run_once(stream_config(tmp_path), "talk", {"text": "a b"}, as_json=False) == 0
    assert capsys.readouterr().out == "a b \n"
    assert await run_once(stream_config(tmp_path), "talk", {"text": "a", "fail": True}, as_json=True) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [c["type"] for c in lines] == ["text", "error", "done"]


def test_cli_prints_an_agents_answer_and_notes_its_tool_calls_on_stderr(capsys):
    """`reme chat`: stdout is the answer, not event JSON."""
    chunks = [
        {"type": "tool_call", "tool": "search", "args": {"query": "solar"}},
        {"type": "tool_result", "tool": "search", "success": True, "refused": False},
        {"type": "text", "text": "Solar panels "},
        {"type": "text", "text": "make power."},
        {"type": "done", "success": True, "metadata": {"sources": []}},
    ]
    assert [show_chunk(chunk, as_json=False) for chunk in chunks][-1] is True
    out, err = capsys.readouterr()
    assert out == "Solar panels make power.\n"
    assert err == '· search {"query": "solar"}\n'


def test_cli_names_the_chat_citations_found_unverified_after_the_streamed_answer(capsys):
    """The terminal showed the model's text as it streamed, links and all; what the check found
    afterwards is said on stderr, so stdout stays the answer."""
    chunks = [
        {"type": "text", "text": "Aisle seats [[daily/osaka.md]]."},
        {
            "type": "done",
            "success": True,
            "metadata": {"unverified_citations": [{"target": "daily/osaka.md", "reason": "not read"}]},
        },
    ]
    assert [show_chunk(chunk, as_json=False) for chunk in chunks][-1] is True
    out, err = capsys.readouterr()
    assert out == "Aisle seats [[daily/osaka.md]].\n"
    assert err == "reme: [[daily/osaka.md]] is unverified (not read)\n"
