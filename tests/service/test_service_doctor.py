"""`reme doctor`: one command that says what is wrong with an install and what to do about it."""

from __future__ import annotations

import asyncio
import json

import pytest

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI
from reme.service.doctor import doctor

PONG = {"output": {"word": "pong"}}
# the tool round trip (a call, then the answer after it), then native and prompted structured output
PROBE = [{"tool": "ping"}, {"text": "pong"}, PONG, PONG]


@pytest.fixture(autouse=True)
def no_llm_environment(monkeypatch):
    for name in (
        "LLM_API_KEY",
        "LLM_BASE_URL",
        "LLM_MODEL",
        "LLM_BACKEND",
        "LLM_MEMORY_MODEL",
        "LLM_OUTPUT_MODE",
    ):
        monkeypatch.delenv(name, raising=False)


def run_doctor(capsys, **assigned) -> tuple[int, dict[str, list[dict]]]:
    status = doctor(dict(assigned), as_json=True)
    by_area: dict[str, list[dict]] = {}
    for check in json.loads(capsys.readouterr().out):
        by_area.setdefault(check["area"], []).append(check)
    return status, by_area


def made_workspace(path) -> None:
    async def make() -> None:
        async with ReMe(workspace_dir=path, timezone="UTC") as app:
            await app.run("write", path="digest/wiki/solar.md", content="Solar panels.")
            await app.run("search", query="solar")

    asyncio.run(make())


def test_a_fresh_install_gets_warnings_with_fixes(tmp_path, capsys):
    status, areas = run_doctor(capsys, workspace_dir=str(tmp_path / "ws"))
    assert status == 0
    assert areas["workspace"][0]["detail"].endswith("does not exist yet")
    assert areas["service"][0]["status"] == "warn"
    assert f"reme start workspace_dir={tmp_path / 'ws'}" in areas["service"][0]["fix"]
    assert {check["area"] for check in areas["install"]} == {"install"}
    assert not (tmp_path / "ws").exists()  # the doctor creates nothing


def test_index_and_llm_output_modes(tmp_path, capsys):
    workspace = tmp_path / "ws"
    made_workspace(workspace)
    (workspace / "digest" / "wiki" / "wind.md").write_text("Wind power.\n", encoding="utf-8")
    server = FakeOpenAI(PROBE, refuse_tool_choice=True)
    try:
        llm = {"components.llm.model": "fake-model", "components.llm.base_url": server.base_url}
        status, areas = run_doctor(capsys, workspace_dir=str(workspace), **llm)
    finally:
        server.close()
    assert status == 0, areas
    index = areas["index"][0]
    assert index["status"] == "warn" and "behind the files: 1 new, 0 changed, 0 deleted" in index["detail"]
    modes = next(check for check in areas["llm"] if "output modes" in check["detail"])
    assert modes["status"] == "warn"
    assert modes["detail"].startswith("chat: output modes that work: native, prompted; tool failed (")
    assert modes["fix"].startswith("set LLM_OUTPUT_MODE=native")
    trip = next(check for check in areas["llm"] if "tool round trip" in check["detail"])
    assert trip["status"] == "ok"
    # the round trip (auto, auto), then tool (refused once, not retried), native, prompted
    assert [r.get("tool_choice") for r in server.requests] == ["auto", "auto", "required", None, None]
    assert server.statuses == [200, 200, 500, 200, 200]
    assert server.requests[1]["messages"][-2]["content"] == ""  # the tool-call message: "" not null
    remembered = json.loads((workspace / "metadata" / "llm_output_modes.json").read_text(encoding="utf-8"))
    assert remembered[f"openai {server.base_url}"]["mode"] == "prompted"


def test_an_unreachable_llm_is_a_problem(tmp_path, capsys):
    made_workspace(tmp_path / "ws")
    dead = {"components.llm.model": "m", "components.llm.base_url": "http://127.0.0.1:9/v1"}
    status, areas = run_doctor(capsys, workspace_dir=str(tmp_path / "ws"), **dead)
    assert status == 1
    assert (
        areas["llm"][0]["status"] == "fail"
        and "cannot reach http://127.0.0.1:9/v1" in areas["llm"][0]["detail"]
    )
    assert areas["index"][0]["status"] == "ok" and "consistent with the files" in areas["index"][0]["detail"]


@pytest.mark.slow
def test_doctor_names_the_running_service(reme_service, run_reme, tmp_path):
    service = reme_service(tmp_path / "ws", "service.port=0")
    assert service.cli("reindex").returncode == 0  # the service's index is ready once this returns
    result = run_reme("doctor", f"workspace_dir={service.workspace}", "probe=false")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"http service on {service.url} (pid {service.info['pid']}) serves this workspace" in result.stdout
    assert "  ok    ready in the service (1 files, 2 chunks)" in result.stdout  # digest/_buckets.md
    assert "llm\n  warn  chat: not configured, set LLM_MODEL" in result.stdout


class RefusesToolResults(FakeOpenAI):
    """A server that takes a tool call but refuses the turn that carries its result, with a long reason."""

    CAUSE = "('body', 'messages', 2, 'content') Input should be a valid string"

    def refusal(self, body):
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            self.record(body, 500)
            message = "3 validation errors:\n" + "  x" * 150 + f"\n  {self.CAUSE}"
            return 500, {"error": {"message": message, "type": "internal_server_error"}}
        return super().refusal(body)


def test_doctor_names_the_failing_step_of_the_tool_round_trip_and_quotes_the_reason(tmp_path, capsys):
    server = RefusesToolResults([{"tool": "ping"}, PONG, PONG, PONG])
    try:
        llm = {"components.llm.model": "fake-model", "components.llm.base_url": server.base_url}
        status, areas = run_doctor(capsys, workspace_dir=str(tmp_path / "ws"), **llm)
    finally:
        server.close()
    trip = next(check for check in areas["llm"] if "tool round trip" in check["detail"])
    assert status == 1 and trip["status"] == "fail"
    assert trip["detail"].startswith(
        "chat: tool round trip failed at the turn after the tool call: HTTP 500: "
    )
    assert RefusesToolResults.CAUSE in trip["detail"]  # past the first 300 characters of the body
    assert "tool's result" in trip["fix"]
    assert server.statuses[:2] == [200, 500]  # the call, then the refused turn, not retried


def test_doctor_says_when_the_model_never_calls_the_tool(tmp_path, capsys):
    server = FakeOpenAI([{"tool": "ping"}, PONG, PONG, PONG], profile="llama-cpp-template")
    try:
        llm = {"components.llm.model": "fake-model", "components.llm.base_url": server.base_url}
        status, areas = run_doctor(capsys, workspace_dir=str(tmp_path / "ws"), **llm)
    finally:
        server.close()
    trip = next(check for check in areas["llm"] if "tool round trip" in check["detail"])
    assert status == 1
    assert trip["detail"] == (
        "chat: tool round trip failed at the tool call: the model answered without calling the tool"
    )
    assert "chatml-function-calling" in trip["fix"]
