"""The `chat` stream job: a read-only agent streaming its tool calls and answer."""

from __future__ import annotations

from typing import Any

from tests.pipelines.conftest import MakeApp, scripted, served_by

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI

ANSWER = "You prefer window seats, see [[daily/2026-06-01/kyoto.md]]."


async def collect(app: ReMe, **params: Any) -> list[dict[str, Any]]:
    return [chunk async for chunk in app.stream("chat", **params)]


async def seed(app: ReMe) -> None:
    wrote = await app.run(
        "write", path="daily/2026-06-01/kyoto.md", content="- prefers window seats\n", name="Kyoto"
    )
    assert wrote.success, wrote.answer


async def test_chat_streams_tool_calls_and_answer(make_app: MakeApp) -> None:
    script = [
        {"tool": "search", "args": {"query": "window seats"}},
        {"tool": "read", "args": {"path": "daily/2026-06-01/kyoto.md"}},
        {"text": ANSWER},
    ]
    app = await make_app(**scripted(script))
    await seed(app)
    chunks = await collect(app, query="Which seats do I like?")
    kinds = [c["type"] for c in chunks]
    assert kinds[:4] == ["tool_call", "tool_result", "tool_call", "tool_result"]
    assert chunks[0]["tool"] == "search" and chunks[1]["success"] is True
    assert "".join(c["text"] for c in chunks if c["type"] == "text") == ANSWER
    assert kinds.count("text") > 1  # streamed in pieces
    assert chunks[-1]["type"] == "done" and chunks[-1].get("success", True) is True
    response = await app.run("chat", query="Which seats do I like?")
    assert response.success and response.answer == ANSWER
    assert response.metadata["sources"] == ["daily/2026-06-01/kyoto.md"]
    assert response.metadata["usage"]["requests"] == 3


async def test_chat_cannot_write(make_app: MakeApp) -> None:
    script = [
        {"tool": "write", "args": {"path": "daily/2026-06-01/kyoto.md", "content": "gone"}},
        {"tool": "edit", "args": {"path": "daily/2026-06-01/kyoto.md", "old": "window", "new": "aisle"}},
        {"text": "Done."},
    ]
    app = await make_app(**scripted(script))
    await seed(app)
    response = await app.run("chat", query="Overwrite my note.")
    assert response.success
    assert response.metadata["tool_calls"] == []  # write tools are not offered to the chat agent at all
    assert "- prefers window seats" in (app.workspace_dir / "daily/2026-06-01/kyoto.md").read_text(
        encoding="utf-8"
    )


async def test_chat_without_llm_names_the_setting(make_app: MakeApp) -> None:
    app = await make_app()
    chunks = await collect(app, query="hello")
    assert chunks[-1]["type"] == "done" and chunks[-1]["success"] is False
    assert any("LLM_MODEL" in str(c) for c in chunks[:-1])


async def test_chat_over_http_streaming_with_history(make_app: MakeApp, fake_server: FakeOpenAI) -> None:
    app = await make_app(**served_by(fake_server))
    await seed(app)
    fake_server.set_script([{"tool": "search", "args": {"query": "seats"}}, {"text": ANSWER}])
    history = [{"role": "user", "content": "I am planning Kyoto."}, {"role": "assistant", "content": "Nice."}]
    chunks = await collect(app, query="Which seats?", history=history)
    assert "".join(c["text"] for c in chunks if c["type"] == "text") == ANSWER
    assert all(r["stream"] for r in fake_server.requests)
    first_prompt = fake_server.requests[0]["messages"][-1]["content"]
    assert "user: I am planning Kyoto." in first_prompt and first_prompt.endswith("Question: Which seats?")
    tool_reply = next(m for m in fake_server.requests[1]["messages"] if m["role"] == "tool")
    assert "daily/2026-06-01/kyoto.md" in tool_reply["content"]  # the search found the note


def test_history_content_blocks_reach_the_model_as_text() -> None:
    from reme.pipelines.chat import render_question

    blob = "QUJD" * 200
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is my boarding pass."},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{blob}"}},
            ],
        },
        {"role": "assistant", "content": "Seat 14A."},
    ]
    assert render_question("Which seat?", history) == (
        "Earlier in this conversation:\nuser: Here is my boarding pass.\n[image]\n"
        "assistant: Seat 14A.\n\nQuestion: Which seat?"
    )


async def test_chat_refuses_history_it_cannot_read(make_app: MakeApp) -> None:
    app = await make_app(**scripted([{"text": "unused"}]))
    response = await app.run("chat", query="hi", history=[{"role": "user", "content": 42}])
    assert not response.success and "history[0]: content must be a string" in response.answer
