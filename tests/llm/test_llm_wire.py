"""What goes over the wire: requests every server accepts, which refusals are final, the reason quoted."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reme.llm import output_modes, wire
from reme.llm.settings import resolve_settings
from reme.llm.testing.server_profiles import profile

CALL = {"id": "c1", "type": "function", "function": {"name": "write", "arguments": "{}"}}


def test_null_fields_are_sent_in_the_form_the_strictest_servers_accept() -> None:
    body = {
        "model": "m",
        "seed": None,
        "max_completion_tokens": 256,
        "messages": [
            {"role": "system", "content": "s", "name": None},
            {"role": "assistant", "content": None, "tool_calls": [CALL], "refusal": None},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done", "tool_calls": []},
        ],
    }
    fixed = wire.compatible_body(body, openai_host=False)
    assert fixed["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    assert "seed" not in fixed and fixed["max_tokens"] == 256 and "max_completion_tokens" not in fixed
    # every profile takes it, the llama-cpp-python ones included (they refuse the original)
    for name in ("llama-cpp-chatml", "llama-cpp-template", "strict-openai", "ollama"):
        assert profile(name).refusal(fixed) is None, name
    assert profile("llama-cpp-chatml").refusal(body) is not None
    # OpenAI itself keeps its own field name
    assert wire.compatible_body(body, openai_host=True)["max_completion_tokens"] == 256


LLAMA_BODY = profile("llama-cpp-chatml").refusal(
    {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
        ]
    }
)


@pytest.mark.parametrize(
    ("status", "body", "asked", "final"),
    [
        (400, {"error": {"message": "bad"}}, False, True),
        (404, "not found", False, True),
        (422, {"detail": [{"msg": "x"}]}, False, True),
        (429, {"error": {"message": "slow down"}}, False, False),
        (408, "", False, False),
        (500, LLAMA_BODY[1] if LLAMA_BODY else None, False, True),
        (500, {"error": {"message": "Input should be 'text' or 'json_object'"}}, False, True),
        (500, {"error": {"message": "", "type": "internal_server_error"}}, True, True),  # a bare assert
        (500, {"error": {"message": "", "type": "internal_server_error"}}, False, False),
        (500, {"error": {"message": "CUDA out of memory"}}, True, False),
        (503, {"error": {"message": "Input should be a valid string"}}, False, False),
    ],
)
def test_which_answers_are_final(status: int, body: object, asked: bool, final: bool) -> None:
    assert wire.deterministic(status, body, asked_feature=asked) is final


def test_the_reason_leads_with_the_error_that_names_the_cause_and_is_bounded() -> None:
    assert LLAMA_BODY is not None
    raw = json.dumps(LLAMA_BODY[1])
    assert len(raw) > 1500
    reason = wire.reason(raw, 300)
    assert len(reason) <= 300
    assert "'ChatCompletionRequestAssistantMessage', 'content')" in reason
    assert "Input should be a valid string" in reason and "'input': None" in reason
    assert wire.reason({"error": {"message": ""}}) == "no reason given"


def test_a_fallback_is_remembered_across_processes_per_endpoint_and_model(tmp_path: Path) -> None:
    modes = tmp_path / "metadata" / "llm_output_modes.json"
    settings = replace(
        resolve_settings({"model": "small", "base_url": "http://127.0.0.1:8000/v1"}), modes_file=str(modes)
    )
    assert output_modes.mode_for(settings) == "tool"
    output_modes.remember(settings, "prompted", "HTTP 500: no reason given")
    output_modes.forget()  # a new process: only the file is left
    assert output_modes.mode_for(settings) == "prompted"
    kept = json.loads(modes.read_text(encoding="utf-8"))["openai http://127.0.0.1:8000/v1"]
    assert (kept["model"], kept["configured"], kept["mode"]) == ("small", "tool", "prompted")
    # another model at the same endpoint, or another configured mode, is probed afresh
    assert output_modes.mode_for(replace(settings, model="bigger")) == "tool"
    assert output_modes.mode_for(replace(settings, output_mode="native")) == "native"
    output_modes.forget(settings)
    assert output_modes.mode_for(settings) == "tool"
    assert "openai http://127.0.0.1:8000/v1" not in json.loads(modes.read_text(encoding="utf-8"))


def test_a_damaged_modes_file_is_probed_again(tmp_path: Path) -> None:
    modes = tmp_path / "modes.json"
    modes.write_text("{not json", encoding="utf-8")
    settings = replace(resolve_settings({"model": "m", "base_url": "http://x/v1"}), modes_file=str(modes))
    assert output_modes.mode_for(settings) == "tool"
    output_modes.remember(settings, "prompted")
    assert json.loads(modes.read_text(encoding="utf-8"))["openai http://x/v1"]["mode"] == "prompted"
