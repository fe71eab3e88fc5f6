"""Overwrites are never silent (issue 23.11, docs/overwrites.md), as a user and a client meet them:
`reme write` over an existing note says "Replaced" with the old size and keeps the previous
version recoverable under journal/replaced/; the same text again is "Unchanged"; versions are bounded."""

from __future__ import annotations

import json

import httpx
import pytest

from reme.llm.testing.fake_openai import FakeOpenAI
from reme.workspace.replaced import KEEP_VERSIONS

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


@pytest.fixture(scope="module")
def service(module_services, tmp_path_factory):
    return module_services(
        tmp_path_factory.mktemp("overwrites") / "ws", "service.port=0", "scheduler.cron=false"
    )


def test_the_cli_says_replaced_with_the_old_size_and_the_old_text_can_be_read_back(service):
    note = service.workspace / "digest/wiki/solar.md"
    created = service.cli("write", "path=digest/wiki/solar.md", "content=Solar panels turn light into power.")
    assert created.returncode == 0 and created.stdout.strip() == "Created digest/wiki/solar.md"
    first = note.read_bytes()

    replaced = service.cli("write", "path=digest/wiki/solar.md", "content=Panels.")
    assert replaced.returncode == 0, replaced.stderr
    line = replaced.stdout.strip()
    assert line.startswith(
        f"Replaced digest/wiki/solar.md (was {len(first)} bytes, now {len(note.read_bytes())});"
    )
    kept = line.split("the previous version is kept at ")[1]
    assert kept.startswith("journal/replaced/digest/wiki/solar.md/") and kept.endswith(".md")
    assert (service.workspace / kept).read_bytes() == first
    read_back = service.cli("read", f"path={kept}")
    assert read_back.returncode == 0 and read_back.stdout == first.decode() + "\n"

    same = service.cli("write", "path=digest/wiki/solar.md", "content=Panels.")
    assert (
        same.stdout.strip()
        == f"Unchanged digest/wiki/solar.md (it already held these {len(note.read_bytes())} bytes)"
    )
    assert len(list((service.workspace / "journal/replaced/digest/wiki/solar.md").iterdir())) == 1

    found = json.loads(service.cli("search", "query=light power", "--json").stdout)["metadata"]["results"]
    assert not any(hit["path"].startswith("journal/") for hit in found)  # versions are never search hits


def test_http_answers_the_same_and_keeps_only_the_newest_versions(service):
    url = f"{service.url}/write"
    texts = [f"version {n}\n" for n in range(KEEP_VERSIONS + 3)]
    answers = [
        httpx.post(url, json={"path": "notes/loop.txt", "content": text}, timeout=30).json() for text in texts
    ]
    assert answers[0]["metadata"]["created"] is True and answers[0]["answer"].startswith(
        "Created notes/loop.txt"
    )
    assert all(a["answer"].startswith("Replaced notes/loop.txt") for a in answers[1:])
    last = answers[-1]
    assert last["success"] and last["metadata"]["replaced"] is True
    assert last["metadata"]["previous_size"] == len(texts[-2]) and last["metadata"]["size"] == len(texts[-1])
    versions = sorted((service.workspace / "journal/replaced/notes/loop.txt").iterdir())
    assert [v.read_text() for v in versions] == texts[-1 - KEEP_VERSIONS : -1]  # the newest, in order


def test_an_agent_that_overwrites_a_note_is_told_so_and_the_old_card_is_kept(reme_service, tmp_path):
    """The memory agent's `write` tool is the job: over the session's card it answers "Replaced", which
    the model reads back as the tool result, and the card's earlier text is kept (served over HTTP)."""
    server = FakeOpenAI(
        [
            {
                "tool": "write",
                "args": {"path": "daily/2026-06-01/trip.md", "content": "# Kyoto\n\n- window seat\n"},
            },
            {"output": {"name": "trip", "description": "Kyoto trip."}},
        ]
    )
    try:
        llm = (
            f"components.llm.base_url={server.base_url}",
            "components.llm.model=fake",
            "components.llm.api_key=k",
        )
        service = reme_service(
            tmp_path / "ws", "service.port=0", "scheduler.cron=false", "timezone=UTC", *llm
        )
        message = {
            "id": "u1",
            "role": "user",
            "content": "Kyoto, window seat",
            "created_at": "2026-06-01T09:00:00Z",
        }
        answer = httpx.post(
            f"{service.url}/auto_memory", json={"session_id": "trip", "messages": [message]}, timeout=60
        ).json()
        assert answer["success"], answer["answer"]
        results = [
            json.loads(m["content"])
            for body in server.requests
            for m in body.get("messages", [])
            if m.get("role") == "tool" and str(m.get("content", "")).startswith("{")
        ]
        told = [
            r for r in results if str(r.get("answer")).startswith("Replaced daily/2026-06-01/trip.md (was ")
        ]
        assert told, results
        kept = told[0]["metadata"]["previous_version"]
        assert f"the previous version is kept at {kept}" in told[0]["answer"]
        assert (service.workspace / kept).read_text(encoding="utf-8").startswith("---\nname: trip")
    finally:
        server.close()
