"""auto_memory over a real ten-day Chinese conversation (MemoryBank, ../shared/data beside the checkout)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, scripted

from reme.workspace.relative_dates import annotate as annotate_relative_dates

MEMORY_BANK = Path(__file__).resolve().parents[2].parent / "shared/data/memorybank/memory_bank_cn.json"

COPY_TRANSCRIPT = [
    {"tool": "write", "args": {"path": "$card_path", "content": "$transcript\n"}},
    {"output": {"name": "对话 $date", "description": "当天的对话。"}},
]


def days_of_first_user() -> dict[str, list[dict[str, Any]]]:
    if not MEMORY_BANK.exists():
        pytest.skip(f"{MEMORY_BANK} is not available")
    user = next(iter(json.loads(MEMORY_BANK.read_text(encoding="utf-8")).values()))
    days: dict[str, list[dict[str, Any]]] = {}
    for day, pairs in sorted(user["history"].items()):
        messages = days.setdefault(day, [])
        for i, pair in enumerate(pairs):
            stamp = f"{day}T09:{i:02d}:00+08:00"
            messages.append({"role": "user", "content": pair["query"], "created_at": stamp})
            messages.append({"role": "assistant", "content": pair["response"], "timestamp": stamp})
    return days


async def test_ten_days_of_chat_become_one_card_per_day(make_app: MakeApp) -> None:
    """Through the whole application: the cards are then found by the `search` job (the index)."""
    days = days_of_first_user()
    app = await make_app("Asia/Shanghai", **scripted(COPY_TRANSCRIPT))
    for day, messages in days.items():
        response = await app.run("auto_memory", session_id="memorybank-1", messages=messages)
        assert response.success, response.answer
        assert response.metadata["date"] == day
    cards = sorted(app.workspace_dir.glob("daily/*/*.md"))
    assert [c.parent.name for c in cards] == sorted(days)
    # Each day's first message as the agent saw it (relative day words pinned).
    first_of = {d: annotate_relative_dates(m[0]["content"], date.fromisoformat(d)) for d, m in days.items()}
    for card in cards:
        text = card.read_text(encoding="utf-8")
        day = card.parent.name
        assert first_of[day] in text
        assert not any(first in text for d, first in first_of.items() if d != day)
    saved = (app.workspace_dir / "session/dialog/memorybank-1.jsonl").read_text(encoding="utf-8").splitlines()
    total = sum(len(m) for m in days.values())
    assert len(saved) == total
    stamps = [json.loads(line)["created_at"] for line in saved]
    assert stamps == sorted(stamps)
    everything = [m for messages in days.values() for m in messages]
    again = await app.run(
        "auto_memory", session_id="memorybank-1", messages=everything, date=sorted(days)[-1]
    )
    assert again.success and again.metadata["usage"] == {}  # nothing new: no model call, nothing rewritten
    found = await app.run("search", query=days[sorted(days)[0]][0]["content"][:12], limit=5)
    assert any(r["path"].startswith(f"daily/{sorted(days)[0]}/") for r in found.metadata["results"])
