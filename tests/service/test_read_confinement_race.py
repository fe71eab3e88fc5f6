"""Reads confined like writes (issue 21 item 3): `digest/race` flips between a real folder and a
symlink to an outside folder holding a secret marker while every read job runs over the real HTTP
service and the read-only MCP profile, and while the indexer syncs the file. Not one answer, nor the
index, may carry a byte of the outside files."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from reme import ReMe
from reme.index.guard import index_content

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

MARKER = "zanzibarquokka"  # the outside secret: one word, so a search could find it
PNG = b"\x89PNG\r\n\x1a\n"
INSIDE_NOTE = "---\nname: inside\n---\nA note that belongs here, about ordinary things.\n"
OUTSIDE_NOTE = f"---\nname: {MARKER}\ndescription: {MARKER}\n---\n{MARKER} {MARKER} outside secret text\n" * 3
HTTP_ROUNDS = 250  # each round asks every HTTP read job once
MCP_ROUNDS = 80
INDEX_SYNCS = 300
# 2,500 HTTP answers + 720 MCP answers + 300 index syncs: over 3,000 attempts in all


FLIPPER = """
import os, random, sys, time
race, parked, outside, stop = sys.argv[1:]
flips = 0
while not os.path.exists(stop):
    try:
        os.rename(race, parked)
        os.symlink(outside, race)
        flips += 1
    except OSError:
        pass
    time.sleep(random.random() * 0.0004)  # each state lasts a while, up to a few requests' reads
    try:
        os.unlink(race)
        os.rename(parked, race)
    except OSError:
        pass
    time.sleep(random.random() * 0.0004)
print(flips)
"""


@contextlib.contextmanager
def flipping(root: Path, outside: Path) -> Iterator[list[int]]:
    """`digest/race` swaps between the real folder and a link to `outside`, as fast as a process of
    its own can (a thread would share the reader's interpreter lock and flip far less often)."""
    race, parked, stop = root / "digest/race", root / "digest/parked", root.parent / "stop-flipping"
    flipper = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(race), str(parked), str(outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    flips = [0]
    try:
        time.sleep(0.2)
        yield flips
    finally:
        stop.touch()
        flips[0] = int(flipper.communicate(timeout=30)[0] or 0)
        stop.unlink()
        if race.is_symlink():  # leave the real folder in place
            os.unlink(race)
        if parked.is_dir():
            os.rename(parked, race)


def lay_out(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose `digest/race/` holds a note and an image, and an outside folder holding
    the same names with the secret (at other sizes, so a stat of the outside file shows too)."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "digest/race").mkdir(parents=True)
    outside.mkdir()
    (workspace / "digest/race/note.md").write_text(INSIDE_NOTE)
    (workspace / "digest/race/pic.png").write_bytes(PNG + b"inside pixels")
    (outside / "note.md").write_text(OUTSIDE_NOTE)
    (outside / "pic.png").write_bytes(PNG + MARKER.encode() * 40)
    (outside / f"{MARKER}.md").write_text(OUTSIDE_NOTE)
    return workspace, outside


OUTSIDE_SIZES = {len(OUTSIDE_NOTE.encode()), len(PNG) + len(MARKER) * 40}
READS: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "digest/race/note.md"}),
    ("load", {"path": "digest/race/note.md"}),
    ("stat", {"path": "digest/race/note.md"}),
    ("stat", {"path": "digest/race/pic.png"}),
    ("frontmatter_read", {"path": "digest/race/note.md"}),
    ("read_image", {"path": "digest/race/pic.png"}),
    ("list", {"path": "digest", "recursive": True}),
    ("list", {"path": "digest/race"}),
    ("export", {"format": "json"}),
    ("search", {"query": MARKER}),
]


def leaked(job: str, answer: dict[str, Any]) -> bool:
    """Whether an answer carries anything of the outside files: the marker anywhere (images decoded),
    or the size of an outside file (a `stat` or `list` of it)."""
    metadata = answer.get("metadata") or {}
    text = json.dumps(metadata.get("results") if job == "search" else answer)  # search repeats its query
    if job == "read_image" and metadata.get("data"):
        text += base64.b64decode(metadata["data"]).decode("latin-1")
    if MARKER in text:
        return True
    if job == "stat" and metadata.get("size") in OUTSIDE_SIZES:
        return True
    entries = metadata.get("entries") or []
    return any(entry.get("size") in OUTSIDE_SIZES for entry in entries)


def test_http_read_jobs_never_return_outside_bytes_while_a_folder_flips(tmp_path, reme_service):
    workspace, outside = lay_out(tmp_path)
    service = reme_service(workspace, "service.port=0", "scheduler.cron=false")
    answers: Counter[str] = Counter()
    leaks: list[tuple[str, str]] = []

    def worker(jobs: list[tuple[str, dict[str, Any]]]) -> None:
        with httpx.Client(base_url=service.url, timeout=30) as http:
            for _ in range(HTTP_ROUNDS):
                for job, params in jobs:
                    answer = http.post(f"/{job}", json=params).json()
                    answers[f"{job} {'ok' if answer.get('success') else 'refused'}"] += 1
                    if leaked(job, answer):
                        leaks.append((job, json.dumps(answer)[:300]))

    with flipping(workspace, outside) as flips:
        threads = [threading.Thread(target=worker, args=(READS[i::2],)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        reindexed = httpx.post(f"{service.url}/reindex", json={}, timeout=60).json()
    attempts = sum(answers.values())
    assert attempts == HTTP_ROUNDS * len(READS)
    assert flips[0] > 100, "the folder hardly flipped: the race was not run"
    assert leaks == [], f"{len(leaks)} of {attempts} answers carried outside bytes: {leaks[:3]}"
    assert reindexed["success"] is True
    # the race was real: reads both succeeded inside and were refused while the link was in place
    assert answers["read ok"] > 0 and answers["read refused"] > 0, answers
    back = httpx.post(f"{service.url}/read", json={"path": "digest/race/note.md"}).json()
    assert back["success"] is True and "ordinary things" in back["answer"]  # the real folder is back
    found = httpx.post(f"{service.url}/search", json={"query": MARKER}).json()
    assert found["success"] is True and not leaked("search", found)


def test_a_link_leading_out_is_refused_with_a_clear_error(tmp_path, reme_service):
    workspace, outside = lay_out(tmp_path)
    os.symlink(outside, workspace / "digest/out")
    service = reme_service(workspace, "service.port=0", "scheduler.cron=false")
    for job, params in [
        ("read", {"path": "digest/out/note.md"}),
        ("stat", {"path": "digest/out/note.md"}),
        ("read_image", {"path": "digest/out/pic.png"}),
    ]:
        answer = httpx.post(f"{service.url}/{job}", json=params).json()
        assert answer["success"] is False, (job, answer)
        assert "leads outside the workspace through a symbolic link" in answer["answer"]
    listed = httpx.post(f"{service.url}/list", json={"path": "digest", "recursive": True}).json()
    paths = [e["path"] for e in listed["metadata"]["entries"]]
    assert "digest/race/note.md" in paths and not [p for p in paths if p.startswith("digest/out")]


async def test_read_only_mcp_tools_never_return_outside_bytes_while_a_folder_flips(tmp_path, reme_command):
    workspace, outside = lay_out(tmp_path)
    params = StdioServerParameters(
        command=reme_command,
        args=[
            "start",
            f"workspace_dir={workspace}",
            "service.backend=mcp",
            "service.transport=stdio",
            "service.mcp_profile=read_only",
            "scheduler.cron=false",
        ],
        cwd=str(tmp_path),
    )
    leaks, attempts, refused = [], 0, 0
    tools = [(job, arguments) for job, arguments in READS if job != "export"]  # export: not read-only
    async with Client(params) as client:
        with flipping(workspace, outside) as flips:
            for _ in range(MCP_ROUNDS):  # each round: every tool at once
                results = await asyncio.gather(*(client.call_tool(job, args) for job, args in tools))
                for (job, _args), result in zip(tools, results, strict=True):
                    attempts += 1
                    refused += bool(result.is_error)
                    answer = result.structured_content or {"answer": result.content[0].text}
                    if leaked(job, answer):
                        leaks.append((job, json.dumps(answer)[:300]))
    assert flips[0] > 10
    assert attempts == MCP_ROUNDS * (len(READS) - 1) and refused > 0
    assert leaks == [], f"{len(leaks)} of {attempts} MCP answers carried outside bytes: {leaks[:3]}"


async def test_the_indexer_never_indexes_outside_bytes_while_a_folder_flips(tmp_path):
    workspace, outside = lay_out(tmp_path)
    async with ReMe(workspace_dir=workspace, **{"components.index.watch": False}) as app:
        index = app.component("index").service
        index.ensure_ready()
        store, leaks = index.indexer.store, 0
        with flipping(workspace, outside) as flips:
            for i in range(INDEX_SYNCS):
                path = "digest/race/note.md" if i % 2 else "digest/race"
                index.indexer.sync_paths([path], force=True)
                # after every sync, not only at the end: a later sync would overwrite what leaked
                leaks += bool(store.query("SELECT 1 FROM chunks WHERE text LIKE ? LIMIT 1", [f"%{MARKER}%"]))
        assert flips[0] > 10
        assert leaks == 0, f"{leaks} of {INDEX_SYNCS} syncs left outside text in the index"
        content = json.dumps(index_content(index.indexer), default=str)
        assert MARKER not in content
        index.indexer.sync_paths(["digest/race"], force=True)
        assert "ordinary things" in json.dumps(index_content(index.indexer), default=str)
    for file in (workspace / "metadata").rglob("*"):
        if file.is_file():
            assert MARKER.encode() not in file.read_bytes(), file
