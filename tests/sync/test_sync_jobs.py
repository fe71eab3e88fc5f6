"""Sync end to end with real git (docs/spec.md §18): a bare remote, three machines, what is on disk and in the index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.sync.conftest import Machine, git, tree

from reme import ReMe
from reme.app.config import ConfigError, load_config
from reme.workspace.edges import edges

NOTE = "# Solar\n\nOne.\n\nTwo.\n\nThree.\n\nFour.\n"


async def _round(*apps: ReMe) -> None:
    """Every machine syncs, twice around: afterwards all hold the same commit."""
    for _ in range(2):
        for app in apps:
            response = await app.run("sync")
            assert response.success, response.answer


async def test_three_machines_converge_on_edits_of_different_and_the_same_notes(
    machine: Machine, remote: Path
) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/solar.md", content=NOTE, name="solar", description="Solar.")
    await a.run("write", path="daily/2026-01-01/wind.md", content="# Wind\n\nGusty.\n", name="wind")
    init = await a.run("sync_init", remote=str(remote))
    assert init.success and init.metadata["pushed"], init.answer
    assert (a.workspace_dir / ".gitignore").read_text().startswith("# written by reme")
    assert "metadata" not in git(a.workspace_dir, "ls-files")
    b, c = await machine("b"), await machine("c")
    for other in (b, c):
        clone = await other.run("sync_clone", remote=str(remote))
        assert clone.success, clone.answer
    assert tree(b.workspace_dir) == tree(a.workspace_dir) == tree(c.workspace_dir)
    found = await c.run("search", query="gusty")  # the clone is indexed
    assert [hit["path"] for hit in found.metadata["results"]] == ["daily/2026-01-01/wind.md"]

    await a.run("edit", path="daily/2026-01-01/solar.md", old="One.", new="One, from a.")
    await b.run("edit", path="daily/2026-01-01/solar.md", old="Four.", new="Four, from b.")
    await c.run(
        "write", path="daily/2026-01-02/hydro.md", content="# Hydro\n\nTurbines and dams.\n", name="hydro"
    )
    await c.run("frontmatter_update", path="daily/2026-01-01/solar.md", metadata={"owner": "c"})
    await _round(a, b, c)

    assert tree(a.workspace_dir) == tree(b.workspace_dir) == tree(c.workspace_dir)
    solar = (a.workspace_dir / "daily/2026-01-01/solar.md").read_text()
    assert "One, from a." in solar and "Four, from b." in solar and "owner: c" in solar
    for app in (a, b, c):
        hits = await app.run("search", query="turbines dams")
        assert [hit["path"] for hit in hits.metadata["results"]][:1] == ["daily/2026-01-02/hydro.md"]
        hits = await app.run("search", query="from b")
        assert "daily/2026-01-01/solar.md" in [hit["path"] for hit in hits.metadata["results"]]
        assert git(app.workspace_dir, "status", "--porcelain") == ""
    assert git(a.workspace_dir, "rev-parse", "HEAD") == git(c.workspace_dir, "rev-parse", "HEAD")


async def test_a_true_conflict_keeps_both_versions_and_is_reported_until_resolved(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/solar.md", content=NOTE, name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    await a.run("edit", path="daily/2026-01-01/solar.md", old="Two.", new="Two, says a.")
    await b.run("edit", path="daily/2026-01-01/solar.md", old="Two.", new="Two, says b.")
    monkeypatch.setenv("REME_SYNC_HOST", "laptop")
    assert (await a.run("sync")).success
    monkeypatch.setenv("REME_SYNC_HOST", "desktop")
    clash = await b.run("sync")
    assert clash.success, clash.answer
    [conflict] = clash.metadata["conflicts"]  # named after the host whose version it holds
    assert re.fullmatch(r"daily/2026-01-01/solar\.conflict-laptop-\d{8}T\d{6}\.md", conflict), conflict
    assert "Two, says b." in (b.workspace_dir / "daily/2026-01-01/solar.md").read_text()  # local stays
    assert "Two, says a." in (b.workspace_dir / conflict).read_text()  # remote beside it
    assert "CONFLICT" in clash.answer
    assert (await a.run("sync")).success  # the conflict file reaches the other machine too
    for app in (a, b):
        health = await app.run("health_check")
        sync = health.metadata["components"]["sync"]
        assert sync["status"] == "degraded" and sync["conflicts"] == [conflict]
    # resolved by hand on b: the note takes both sentences, the conflict file goes
    await b.run("edit", path="daily/2026-01-01/solar.md", old="Two, says b.", new="Two, says a and b.")
    (b.workspace_dir / conflict).unlink()
    await _round(b, a)
    for app in (a, b):
        sync = (await app.run("health_check")).metadata["components"]["sync"]
        assert sync["status"] == "ok" and sync["conflicts"] == []
        assert "Two, says a and b." in (app.workspace_dir / "daily/2026-01-01/solar.md").read_text()


async def test_transcripts_appended_on_two_hosts_are_a_union(machine: Machine, remote: Path) -> None:
    a = await machine("a")
    first = [
        {
            "id": "m1",
            "role": "user",
            "content": "we chose weekly releases",
            "created_at": "2026-01-01T10:00:00",
        }
    ]
    assert (await a.run("auto_memory", session_id="s1", messages=first)).metadata["pending"]
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    for app, tag, minute in ((a, "laptop", 1), (b, "desktop", 2)):
        more = [
            {
                "id": f"{tag}-{n}",
                "role": "user",
                "content": f"{tag} turn {n} about zeppelins",
                "created_at": f"2026-01-01T10:0{minute}:0{n}",
            }
            for n in range(3)
        ]
        saved = await app.run("auto_memory", session_id="s1", messages=first + more)
        assert saved.metadata["session_path"] == "session/dialog/s1.jsonl", saved.answer
    await _round(a, b)
    for app in (a, b):
        lines = (app.workspace_dir / "session/dialog/s1.jsonl").read_text().splitlines()
        ids = [json.loads(line)["id"] for line in lines]
        assert ids == ["m1", "laptop-0", "laptop-1", "laptop-2", "desktop-0", "desktop-1", "desktop-2"]
        hits = await app.run("search", query="desktop zeppelins", limit=10)
        assert any(hit["path"] == "session/dialog/s1.jsonl" for hit in hits.metadata["results"])


async def test_history_diff_and_restore_with_compare_and_set(machine: Machine, remote: Path) -> None:
    a = await machine("a", **{"sync.author": "Ana <ana@example.org>"})
    path = "daily/2026-01-01/solar.md"
    await a.run("write", path=path, content=NOTE, name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    first = (a.workspace_dir / path).read_text()
    (a.workspace_dir / path).write_text(first.replace("One.", "One, later."))  # by hand
    assert (await a.run("sync", message="solar: say when")).success
    versions = (await a.run("history", path=path)).metadata["versions"]
    assert [v["job"] for v in versions] == ["sync", "sync_init"]
    assert versions[0]["message"] == "solar: say when" and versions[0]["author"] == "Ana <ana@example.org>"
    old = versions[1]["rev"]
    diff = await a.run("diff", path=path, rev_a=old)
    assert "-One." in diff.answer and "+One, later." in diff.answer

    await a.run("edit", path=path, old="Two.", new="Two, not committed.")  # a newer edit, not synced
    refused = await a.run("restore", path=path, rev=old)
    assert not refused.success and "not committed" in refused.answer
    assert "Two, not committed." in (a.workspace_dir / path).read_text()  # untouched
    stale = await a.run("restore", path=path, rev=old, expected_sha256="0" * 64)
    assert not stale.success and "changed since" in stale.answer
    current = (await a.run("load", path=path)).metadata["sha256"]
    restored = await a.run("restore", path=path, rev=old, expected_sha256=current)
    assert restored.success, restored.answer
    assert (a.workspace_dir / path).read_text() == first
    latest = (await a.run("history", path=path, limit=1)).metadata["versions"][0]
    assert latest["job"] == "restore" and latest["rev"] == restored.metadata["commit"]
    assert (await a.run("search", query="later")).metadata["results"] == []  # re-indexed
    for bad in ("--output=/tmp/x", "nope"):
        answer = await a.run("diff", path=path, rev_a=bad)
        assert not answer.success and "revision" in answer.answer or "no commit" in answer.answer


async def test_a_url_with_a_password_is_refused_and_never_echoed(machine: Machine, tmp_path: Path) -> None:
    a = await machine("a")
    answer = await a.run("sync_init", remote="https://ana:hunter2@git.example.org/ana/memory.git")
    assert (
        not answer.success and "password" in answer.answer and "hunter2" not in json.dumps(answer.to_dict())
    )
    assert not (a.workspace_dir / ".git").exists()
    with pytest.raises(ConfigError, match="sync.remote") as caught:
        load_config(None, {"sync.remote": "https://ana:hunter2@git.example.org/x.git"})
    assert "hunter2" not in str(caught.value)
    no_remote = await a.run("sync")
    assert not no_remote.success and "sync_init" in no_remote.answer
    assert not (await a.run("history", path="daily/x.md")).success
    assert (await a.run("sync_init", remote=str(tmp_path / "gone.git"))).success is False  # unreachable
    gone = await a.run("sync")
    assert not gone.success and "git fetch failed" in gone.answer and "gone.git" in gone.answer
    health = (await a.run("health_check")).metadata["components"]["sync"]
    assert health["last_sync"]["success"] is False and "fetch" in health["last_sync"]["error"]


async def test_clone_refuses_a_workspace_with_notes(machine: Machine, remote: Path) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/a.md", content="a\n")
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    await b.run("write", path="daily/2026-01-01/mine.md", content="mine\n")
    refused = await b.run("sync_clone", remote=str(remote))
    assert not refused.success and "not empty" in refused.answer
    assert not (b.workspace_dir / ".git").exists() and (b.workspace_dir / "daily/2026-01-01/mine.md").exists()


async def test_digest_node_edges_survive_edits_on_both_machines(machine: Machine, remote: Path) -> None:
    node = "digest/wiki/solar.md"
    body = "# Solar\n\nPanels.\n\n## Sources\n- derived_from:: [[daily/2026-01-01/a.md]]\n"
    a = await machine("a")
    await a.run("write", path=node, content=body, name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    await a.run("edit", path=node, old="Panels.", new="Panels on the roof.")
    await a.run("edit", path=node, old="a.md]]\n", new="a.md]]\n- derived_from:: [[daily/2026-01-02/b.md]]\n")
    await b.run("edit", path=node, old="Panels.", new="Panels in the field.")
    await b.run("edit", path=node, old="a.md]]\n", new="a.md]]\nsee:: [[digest/wiki/wind.md]]\n")
    await _round(a, b)
    for app in (a, b):
        text = (app.workspace_dir / node).read_text()
        assert {
            ("daily/2026-01-01/a.md", "derived_from"),
            ("daily/2026-01-02/b.md", "derived_from"),
            ("digest/wiki/wind.md", "see"),
        } <= set(edges(text))
        graph = await app.run("traverse", path=node, depth=1, direction="forward")
        assert {edge["target"] for edge in graph.metadata["edges"]} >= {
            "daily/2026-01-02/b.md",
            "digest/wiki/wind.md",
        }


async def test_the_merge_is_compare_and_set_against_files_written_meanwhile(
    machine: Machine, remote: Path
) -> None:
    from reme.app.components.sync import repo_of
    from reme.app.components.workspace import workspace_of
    from reme.workspace import gitsync

    path = "daily/2026-01-01/solar.md"
    a = await machine("a")
    await a.run("write", path=path, content=NOTE, name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    await a.run("edit", path=path, old="One.", new="One, from a.")
    assert (await a.run("sync")).success
    repo, ws = repo_of(b), workspace_of(b)
    ours = repo.rev("HEAD")
    assert ours and gitsync.fetch(repo, "main")
    theirs = repo.rev("refs/remotes/origin/main")
    assert theirs
    await b.run("edit", path=path, old="Three.", new="Three, written while b syncs.")  # after b's commit step
    with pytest.raises(gitsync.SyncBusy):
        gitsync.apply(repo, ws, ours, theirs)
    assert repo.rev("HEAD") == ours  # nothing moved, nothing overwritten
    assert "Three, written while b syncs." in (b.workspace_dir / path).read_text()
    assert "One, from a." not in (b.workspace_dir / path).read_text()
    assert (await b.run("sync")).success  # the next round commits the edit first, then merges
    text = (b.workspace_dir / path).read_text()
    assert "Three, written while b syncs." in text and "One, from a." in text


async def test_commits_say_which_job_wrote_what_and_what_changed_by_hand(
    machine: Machine, remote: Path
) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/seed.md", content="seed\n")
    assert (await a.run("sync_init", remote=str(remote))).success
    messages = [{"id": "m1", "role": "user", "content": "hello", "created_at": "2026-01-01T10:00:00"}]
    await a.run("auto_memory", session_id="s1", messages=messages)  # a capture: transcript and card
    await a.run("write", path="daily/2026-01-01/by-job.md", content="written by a job\n")
    (a.workspace_dir / "daily/2026-01-01/by-hand.md").write_text("typed in an editor\n")
    await a.run("write", path="daily/2026-01-01/seed.md", content="seed, rewritten by a job\n")
    with (a.workspace_dir / "daily/2026-01-01/seed.md").open("a") as handle:  # then touched by hand
        handle.write("and a line by hand\n")
    synced = await a.run("sync")
    assert synced.success and len(synced.metadata["committed"]) == 3, synced.answer
    by_job = {}
    for commit in synced.metadata["committed"]:
        job = git(
            a.workspace_dir, "show", "-s", "--format=%(trailers:key=ReMe-Job,valueonly)", commit
        ).strip()
        subject = git(a.workspace_dir, "show", "-s", "--format=%s", commit).strip()
        paths = set(git(a.workspace_dir, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split())
        by_job[job] = (subject, paths)
    assert by_job["auto_memory"][1] == {
        "session/dialog/s1.jsonl",
        "daily/2026-01-01/s1.md",
        "daily/2026-01-01.md",
    }
    # the rewrite of seed.md kept its previous version under journal/replaced/ (docs/overwrites.md): the job's too
    written = {path for path in by_job["write"][1] if not path.startswith("journal/replaced/")}
    kept = by_job["write"][1] - written
    assert written == {"daily/2026-01-01/by-job.md"} and by_job["write"][0].startswith("write: ")
    assert len(kept) == 1 and next(iter(kept)).startswith("journal/replaced/daily/2026-01-01/seed.md/")
    subject, paths = by_job["sync"]
    assert subject.startswith("edited by hand on ") and paths == {
        "daily/2026-01-01/by-hand.md",
        "daily/2026-01-01/seed.md",
    }


async def test_sync_init_on_a_machine_with_its_own_notes_merges_both_memories(
    machine: Machine, remote: Path
) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/a.md", content="from a\n")
    await a.run(
        "auto_memory",
        session_id="s1",
        messages=[{"id": "a1", "role": "user", "content": "a", "created_at": "1"}],
    )
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")  # a second memory, started on its own
    await b.run("write", path="daily/2026-01-01/b.md", content="from b\n")
    await b.run(
        "auto_memory",
        session_id="s1",
        messages=[{"id": "b1", "role": "user", "content": "b", "created_at": "2"}],
    )
    joined = await b.run("sync_init", remote=str(remote))
    assert joined.success and joined.metadata["pushed"], joined.answer
    assert (await a.run("sync")).success
    assert tree(a.workspace_dir) == tree(b.workspace_dir)
    ids = [
        json.loads(x)["id"] for x in (a.workspace_dir / "session/dialog/s1.jsonl").read_text().splitlines()
    ]
    assert ids == ["a1", "b1"] and (a.workspace_dir / "daily/2026-01-01/b.md").exists()


async def test_sync_jobs_are_mcp_tools_and_clone_stays_local(machine: Machine, remote: Path) -> None:
    from mcp import Client

    from reme.service.mcp import build_mcp_server

    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/a.md", content="from a\n")
    async with Client(build_mcp_server(a)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"sync_init", "sync", "history", "diff", "restore"} <= set(tools) and "sync_clone" not in tools
        assert tools["history"].annotations.read_only_hint and tools["diff"].annotations.read_only_hint
        init = await client.call_tool("sync_init", {"remote": str(remote)})
        assert init.is_error is False and init.structured_content["metadata"]["pushed"]
        versions = await client.call_tool("history", {"path": "daily/2026-01-01/a.md"})
        assert versions.structured_content["metadata"]["versions"][0]["job"] == "sync_init"


async def test_a_workspace_inside_a_project_repository_never_touches_the_project(
    machine: Machine, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    a = await machine("project/.reme")
    await a.run("write", path="daily/2026-01-01/a.md", content="a\n")
    assert not (await a.run("history", path="daily/2026-01-01/a.md")).success  # not the project's history
    assert not (await a.run("sync")).success
    assert not (a.workspace_dir / ".git").exists()
    assert git(project, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""  # no commit in the project
    assert git(project, "ls-files") == ""
