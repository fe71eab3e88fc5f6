"""Steps read the parameters the job's schema filled: no step re-defaults one, so a 0 stays a 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme import ReMe

TRIP = [
    {
        "id": "u1",
        "role": "user",
        "content": "Flight to Lisbon on Monday.",
        "created_at": "2026-06-01T09:00:00Z",
    }
]


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_BACKEND", "LLM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)


async def test_a_limit_of_zero_is_not_swallowed_into_the_default(tmp_path: Path) -> None:
    """`int(params.get("limit") or 20)` once turned a deployment's `limit: 0` into 20 cards."""
    overrides = {
        "components.llm.backend": "scripted",
        "components.llm.script": [],
        "jobs.auto_memory_pending.parameters.properties.limit.minimum": 0,  # a deployment allowing a dry 0
    }
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        first = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
        assert not first.success and first.metadata["pending"] is True
        app.component("llm").script = [{"text": "not a card"}]  # type: ignore[attr-defined]
        none = await app.run("auto_memory_pending", limit=0)
        assert none.success, none.answer
        assert none.metadata == {"distilled": [], "failed": [], "usage": {}}
        default = await app.run("auto_memory_pending")  # the schema's default (20) reaches the card
        reached = default.metadata["distilled"] + [entry["path"] for entry in default.metadata["failed"]]
        assert len(reached) == 1, default.metadata


async def test_the_cron_job_runs_with_the_defaults_of_the_on_demand_job(tmp_path: Path) -> None:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        assert app.jobs["dream_cron"].parameters == app.jobs["auto_dream"].parameters
        assert app.jobs["digest_maintain_cron"].parameters == app.jobs["digest_maintain"].parameters
