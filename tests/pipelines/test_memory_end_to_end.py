"""End to end: `reme start`; `reme auto_memory` over HTTP against the fake OpenAI server; `reme search`; `reme chat`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.pipelines.conftest import LLM_ENV
from tests.support import free_port, reme_env, run_reme_process, start_service_process

from reme.llm.testing.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def test_auto_memory_through_the_service_then_search_finds_the_card(
    tmp_path: Path, fake_server: FakeOpenAI
) -> None:
    fake_server.set_script(
        [
            {"tool": "read", "args": {"path": "daily/2026-06-01/e2e-1.md"}},
            {
                "tool": "write",
                "args": {
                    "path": "daily/2026-06-01/e2e-1.md",
                    "content": "- Ordered 12 solar panels and a Fronius inverter, delivery 2026-06-15\n",
                },
            },
            {
                "output": {
                    "name": "Solar panel order",
                    "description": "Panels and inverter ordered for the roof.",
                }
            },
        ]
    )
    env = {k: v for k, v in reme_env().items() if k not in LLM_ENV}
    env.update(LLM_API_KEY="test-key", LLM_BASE_URL=fake_server.base_url, LLM_MODEL="fake-model")
    workspace = tmp_path / "ws"
    service = start_service_process(workspace, f"service.port={free_port()}", "timezone=UTC", env=env)
    try:
        messages = [
            {
                "role": "user",
                "content": "I ordered 12 solar panels and a Fronius inverter.",
                "created_at": "2026-06-01T10:00:00Z",
            },
            {
                "role": "assistant",
                "content": "Great, delivery is on June 15.",
                "created_at": "2026-06-01T10:00:09Z",
            },
        ]
        where = f"workspace_dir={workspace}"
        memory = run_reme_process(
            "auto_memory", "session_id=e2e-1", f"messages={json.dumps(messages)}", where, "--json", env=env
        )
        assert memory.returncode == 0, memory.stdout + memory.stderr + service.log
        response = json.loads(memory.stdout)
        assert response["metadata"]["note_path"] == "daily/2026-06-01/solar-panel-order.md"
        assert response["metadata"]["usage"]["requests"] == 3
        assert len(fake_server.requests) == 3 and fake_server.requests[0]["model"] == "fake-model"
        found = run_reme_process("search", "query=Fronius inverter", where, "--json", env=env)
        assert found.returncode == 0, found.stdout + found.stderr
        paths = [r["path"] for r in json.loads(found.stdout)["metadata"]["results"]]
        assert "daily/2026-06-01/solar-panel-order.md" in paths
        saved = (workspace / "session/dialog/e2e-1.jsonl").read_text(encoding="utf-8")
        assert saved.count("\n") == 2
        answer = "You ordered a Fronius inverter, see [[daily/2026-06-01/solar-panel-order.md]]."
        fake_server.set_script([{"tool": "search", "args": {"query": "inverter"}}, {"text": answer}])
        chat = run_reme_process("chat", "query=Which inverter did I order?", where, env=env)
        assert chat.returncode == 0, chat.stdout + chat.stderr
        assert chat.stdout == answer + "\n"  # the answer, not event JSON
        assert '· search {"query": "inverter"}' in chat.stderr
    finally:
        assert service.stop() == 0
