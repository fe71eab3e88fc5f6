"""The `sync` component (backend `git`): the workspace's repository, its settings and its health.

Settings come from the top-level `sync` block (`remote`, `interval`, `author`; docs/spec.md §18). Health
lists unresolved conflict files under `conflicts` and is `degraded` while any exists; it also shows
the remote (credentials redacted), the branch and the last sync's outcome (`metadata/sync.json`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TypedDict

from reme.app.component import Component, Host, Report
from reme.app.components.workspace import workspace_of
from reme.app.registry import register_component
from reme.errors import ReMeError
from reme.jsontypes import JSONObject
from reme.workspace.atomic import atomic_write
from reme.workspace.gitrepo import Identity, Repo, redact_url
from reme.workspace.gitsync import conflict_files, host_name, remote_url

LAST_SYNC = "sync.json"


class SyncSettings(TypedDict):
    remote: str | None
    interval: str | None
    author: str | None


def sync_settings(app: Host) -> SyncSettings:
    """The `sync` block of the configuration (remote, interval, author), empty values as None."""
    block = app.config.get("sync")
    block = block if isinstance(block, dict) else {}

    def text(key: str) -> str | None:
        value = block.get(key)
        return str(value) if value else None  # checked at load (`reme.app.config`): text when set

    return {"remote": text("remote"), "interval": text("interval"), "author": text("author")}


def repo_of(app: Host) -> Repo:
    """The workspace's repository handle, committing as `sync.author` (or reme on this host)."""
    return Repo(app.workspace_dir, Identity.parse(sync_settings(app)["author"], host_name()))


def last_sync(app: Host) -> JSONObject | None:
    ws = workspace_of(app)
    try:
        data = json.loads((ws.root / ws.folder("metadata") / LAST_SYNC).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_sync(app: Host, outcome: JSONObject) -> None:
    """Keep the last sync's outcome for health and doctor (derived state: under metadata/)."""
    ws = workspace_of(app)
    entry = {"at": datetime.now(UTC).isoformat(timespec="seconds"), **outcome}
    atomic_write(ws.root / ws.folder("metadata") / LAST_SYNC, json.dumps(entry, indent=1))


@register_component("git")
class SyncComponent(Component):
    kind = "sync"
    requires = ("workspace",)

    def health(self) -> Report:
        try:
            repo = repo_of(self.app)
        except ReMeError as exc:
            return {"status": "unconfigured", "reason": exc.message, "conflicts": []}
        if not repo.exists():
            return {
                "status": "unconfigured",
                "reason": "not a git repository (run sync_init)",
                "conflicts": [],
            }
        conflicts = conflict_files(workspace_of(self.app))
        try:
            url = remote_url(repo)
        except ReMeError as exc:  # a damaged repository (a broken HEAD): git says what
            return {"status": "error", "reason": exc.message, "conflicts": conflicts}
        health: dict[str, object] = {
            "status": "ok",
            "remote": redact_url(url) if url else None,
            "conflicts": conflicts,
            "last_sync": last_sync(self.app),
        }
        if conflicts:
            health["status"] = "degraded"
            health["reason"] = (
                f"{len(conflicts)} unresolved sync conflict file(s), e.g. {conflicts[0]}: merge it into the "
                "note beside it by hand, delete it, then sync"
            )
        return health
