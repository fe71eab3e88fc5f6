"""Steps of the sync jobs (docs/spec.md §18): thin adapters over `reme.workspace.{gitsync,githistory}`.

`sync_commit` is the hook at the end of the dream, maintain and revert jobs: one commit per run,
its message saying what the run did, its trailers naming the job and the run. `sync_loop` is the
cron of `sync.interval`: it syncs only while the workspace has a remote.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import datetime
from typing import Any

from reme.app.components.index import index_service
from reme.app.components.sync import record_sync, repo_of, sync_settings
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.workspace import githistory, gitsync
from reme.workspace.gitrepo import Repo
from reme.workspace.paths import UnsafePathError, check_relative

log = logging.getLogger(__name__)


def _remote(ctx: JobContext) -> str:
    remote = ctx.params.get("remote") or sync_settings(ctx.app)["remote"]
    if not remote:
        raise ReMeError("give remote=<url> (or set sync.remote): the git repository to sync with")
    return str(remote)


def _reindex(ctx: JobContext, paths: list[str]) -> None:
    """Bring the index up to date for the files a merge wrote: only those, never a full rebuild.

    A file whose name no job can take (`why?.md`, made by hand or another tool) is synced like any
    other but left out here: the index could not name it, and refusing it would fail a sync that
    has already merged and pushed."""
    paths = [path for path in paths if _addressable(path)]
    if not paths:
        return
    try:
        service = index_service(ctx.app)
    except ReMeError:
        return  # no index configured: nothing derived to update
    service.sync_paths(paths)


def _addressable(path: str) -> bool:
    try:
        check_relative(path)
    except UnsafePathError:
        return False
    return True


@register_step("sync_init")
def sync_init(ctx: JobContext) -> None:
    repo = repo_of(ctx.app)
    first = gitsync.init(repo, workspace_of(ctx.app), _remote(ctx), ctx.params["branch"])
    report = gitsync.sync(
        repo, workspace_of(ctx.app), branch=ctx.params["branch"], message=None, host=gitsync.host_name()
    )
    report.committed[:0] = [first] if first else []
    _reindex(ctx, report.merged)
    _answer(ctx, report)
    ctx.response.metadata["head"] = repo.rev("HEAD")
    ctx.response.answer = f"the workspace is a git repository syncing with its remote\n{ctx.response.answer}"


@register_step("sync_clone")
def sync_clone(ctx: JobContext) -> None:
    repo = repo_of(ctx.app)
    paths = gitsync.clone(repo, workspace_of(ctx.app), _remote(ctx), ctx.params["branch"])
    _reindex(ctx, paths)
    ctx.response.metadata.update({"files": len(paths), "head": repo.rev("HEAD")})
    ctx.response.answer = f"cloned {len(paths)} file(s) into {ctx.app.workspace_dir}"


@register_step("sync")
def sync(ctx: JobContext) -> None:
    repo = repo_of(ctx.app)
    ws = workspace_of(ctx.app)
    configured = sync_settings(ctx.app)["remote"]
    if configured and not repo.exists():
        gitsync.init(repo, ws, configured, "main")
    branch = _branch(repo)
    try:
        report = gitsync.sync(
            repo, ws, branch=branch, message=ctx.params.get("message"), host=gitsync.host_name()
        )
    except ReMeError as exc:
        record_sync(ctx.app, {"success": False, "error": exc.message})
        raise
    _reindex(ctx, report.merged)
    record_sync(ctx.app, {"success": True, **_metadata(report)})
    _answer(ctx, report)


def _branch(repo: Repo) -> str:
    if not repo.exists():
        raise ReMeError("the workspace is not a git repository yet; run sync_init remote=<url> first")
    gitsync.check_idle(repo)  # a rebase stopped half way is on a detached HEAD: name the rebase
    name = repo.run("symbolic-ref", "--short", "-q", "HEAD", ok=(0, 1)).stdout.decode().strip()
    if not name:
        raise ReMeError("the workspace's repository is on a detached HEAD; check out its branch, then sync")
    return str(name)


def _metadata(report: gitsync.SyncReport) -> dict[str, Any]:
    return {
        "committed": report.committed,
        "merged": sorted(set(report.merged)),
        "conflicts": report.conflicts,
        "pushed": report.pushed,
    }


def _answer(ctx: JobContext, report: gitsync.SyncReport) -> None:
    ctx.response.metadata.update(_metadata(report))
    lines = [
        f"committed {len(report.committed)} local commit(s), merged {len(report.merged)} file(s), "
        + ("pushed" if report.pushed else "nothing to push")
    ]
    lines += [f"CONFLICT: the remote version is kept beside the note as {path}" for path in report.conflicts]
    ctx.response.answer = "\n".join(lines)


@register_step("history")
def history(ctx: JobContext) -> None:
    path = workspace_of(ctx.app).check(ctx.params["path"])
    found = githistory.history(repo_of(ctx.app), path, ctx.params["limit"])
    ctx.response.metadata.update({"versions": found.versions, "stopped_early": found.stopped_early})
    ctx.response.answer = found.answer(path)


@register_step("diff")
def diff(ctx: JobContext) -> None:
    path = workspace_of(ctx.app).check(ctx.params["path"])
    text = githistory.diff(repo_of(ctx.app), path, ctx.params["rev_a"], ctx.params["rev_b"])
    ctx.response.metadata.update({"path": path, "diff": text})
    ctx.response.answer = text or f"{path} is the same in both versions"


@register_step("restore")
def restore(ctx: JobContext) -> None:
    ws = workspace_of(ctx.app)
    path = ws.check(ctx.params["path"], write=True)
    outcome = githistory.restore(
        repo_of(ctx.app), ws, path, ctx.params["rev"], ctx.params.get("expected_sha256")
    )
    _reindex(ctx, [path])
    ctx.response.metadata.update(outcome)
    ctx.response.answer = (
        f"restored {path} to {outcome['rev'][:12]} as a new change"
        if outcome["changed"]
        else f"{path} already holds its version of {outcome['rev'][:12]}"
    )


# the hook of pipeline runs ------------------------------------------------------------------------------


def _run_paths(ctx: JobContext, meta: dict[str, Any]) -> list[str]:
    """Every file a dream, maintain or revert run wrote, its journal entries included."""
    paths: set[str] = set()
    for key in ("modified_paths", "restored", "deleted"):
        paths.update(str(path) for path in meta.get(key) or [])
    paths.update(
        str(action["target_path"]) for action in meta.get("actions") or [] if action.get("target_path")
    )
    for split in meta.get("splits") or []:
        paths.update([str(split.get("parent")), *map(str, split.get("children") or [])])
    if meta.get("journal_path"):
        paths.add(str(meta["journal_path"]))
    for run in (meta.get("run_id"), meta.get("revert_run_id")):
        if run:
            paths.add(f"{workspace_of(ctx.app).folder('journal')}/dream/runs/{run}.json")
    return sorted(path for path in paths if path and path != "None")


def _run_message(job: str, meta: dict[str, Any]) -> str:
    """`dream <run_id>: 2 CREATE, 1 CORROBORATE`, `dream_revert <run_id>: 3 restored, 1 deleted`."""
    run_id = meta.get("revert_run_id") or meta.get("run_id")
    counts = Counter(str(action.get("action")) for action in meta.get("actions") or [])
    parts = [f"{count} {name}" for name, count in counts.items()]
    if meta.get("splits"):
        parts.append(f"{len(meta['splits'])} split(s)")
    for key in ("restored", "deleted"):
        if meta.get(key):
            parts.append(f"{len(meta[key])} {key}")
    if meta.get("failed_units"):
        parts.append(f"{len(meta['failed_units'])} failed unit(s)")
    name = "dream" if job in ("auto_dream", "dream_cron") else job
    return f"{name} {run_id}: {', '.join(parts) or 'journal only'}"


@register_step("sync_commit")
def sync_commit(ctx: JobContext) -> None:
    """Commit the run's files when the workspace is a repository; a failure here never fails the run."""
    meta = ctx.response.metadata
    run_id = meta.get("revert_run_id") or meta.get("run_id")
    try:
        repo = repo_of(ctx.app)
    except ReMeError:
        return
    if not run_id or not repo.exists() or repo.rev("HEAD") is None:
        return
    try:
        with gitsync.repo_lock(repo):
            commit = gitsync.commit_paths(
                repo, _run_paths(ctx, meta), _run_message(ctx.job.name, meta), ctx.job.name, str(run_id)
            )
    except ReMeError as exc:
        log.warning("commit of run %s failed: %s", run_id, exc.message)
        meta["sync_commit_error"] = exc.message
        return
    if commit:
        meta["commit"] = commit


@register_step("sync_loop")
async def sync_loop(ctx: JobContext) -> None:
    """Sync at every time of `sync.interval` while the workspace has a remote; off without an interval."""
    from croniter import croniter

    interval = sync_settings(ctx.app)["interval"]
    if not interval:
        return
    schedule = croniter(interval, datetime.now(ctx.app.tz))
    while True:
        fire_at: datetime = schedule.get_next(datetime)
        while (wait := (fire_at - datetime.now(ctx.app.tz)).total_seconds()) > 0:
            await asyncio.sleep(wait)
        try:
            repo = repo_of(ctx.app)
            active = bool(sync_settings(ctx.app)["remote"]) or (
                repo.exists() and gitsync.remote_url(repo) is not None
            )
        except ReMeError:
            active = False  # no git binary: doctor says so; the service goes on
        if not active:
            continue  # no remote: the cron is off
        response = await ctx.app.run("sync")
        if not response.success:
            log.warning("scheduled sync failed: %s", response.answer)
