"""Local model servers that refuse `tool_choice: "required"` (llama-cpp-python) still distil memory."""

from __future__ import annotations

from tests.pipelines.conftest import MakeApp, served_by
from tests.pipelines.test_auto_memory import TRIP, front_matter

from reme.llm.testing.fake_openai import FakeOpenAI

CARD = "daily/2026-06-01/trip-1.md"
SCRIPT = [
    {"tool": "write", "args": {"path": CARD, "content": "- prefers window seats\n"}},
    {"output": {"name": "Kyoto trip", "description": "Seat preferences."}},
]


async def test_auto_memory_on_a_server_that_refuses_tool_choice_required(make_app: MakeApp) -> None:
    server = FakeOpenAI(SCRIPT, refuse_tool_choice=True)
    try:
        app = await make_app(**served_by(server, max_retries=2))
        response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
        assert response.success, response.answer
        assert response.metadata["pending"] is False
        card = app.workspace_dir / response.metadata["note_path"]
        assert "prefers window seats" in card.read_text(encoding="utf-8")
        assert front_matter(card)["name"] == "Kyoto trip"
        # one refused request (a final refusal is not retried), then two answered in prompted mode
        assert [r.get("tool_choice") for r in server.requests] == ["required", "auto", "auto"]
        assert server.statuses == [500, 200, 200]
        assert response.metadata["usage"]["requests"] == 3
    finally:
        server.close()


async def test_output_mode_prompted_sends_no_required_tool_choice(make_app: MakeApp) -> None:
    server = FakeOpenAI(SCRIPT, refuse_tool_choice=True)
    try:
        app = await make_app(**served_by(server, output_mode="prompted"))
        response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
        assert response.success, response.answer
        assert [r.get("tool_choice") for r in server.requests] == ["auto", "auto"]
    finally:
        server.close()


async def test_the_working_mode_is_remembered_across_processes_and_reprobed_for_another_model(
    make_app: MakeApp,
) -> None:
    from reme.llm import output_modes

    server = FakeOpenAI(SCRIPT, profile="llama-cpp-chatml")
    try:
        first = await make_app(**served_by(server))
        assert (await first.run("auto_memory", session_id="trip-1", messages=TRIP)).success
        assert server.statuses == [500, 200, 200]
        await first.close()
        output_modes.forget()  # what a new process knows: only metadata/
        server.set_script(SCRIPT)
        second = await make_app(**served_by(server))
        again = await second.run("auto_memory", session_id="trip-2", messages=TRIP)
        assert again.success, again.answer
        assert server.statuses[3:] == [200, 200]  # no refused request this time
        assert [r.get("tool_choice") for r in server.requests[3:]] == ["auto", "auto"]
        await second.close()
        server.set_script(SCRIPT)
        other = await make_app(**served_by(server, model="another-model"))
        third = await other.run("auto_memory", session_id="trip-3", messages=TRIP)
        assert third.success, third.answer
        assert server.statuses[5:] == [500, 200, 200]  # a new model is probed afresh
    finally:
        server.close()
