"""`reme doctor`'s sync checks (docs/spec.md §18): the git binary, the remote and its credentials, the last sync.

Kept apart from `doctor` so the sync area owns them. Reaching the remote runs `git ls-remote` with
prompts off: a missing or refused credential is a failure that names git's own fix, never a prompt.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from reme.jsontypes import JSONObject, JSONValue
from reme.service.client import dig
from reme.service.doctor import Check

MIN_GIT = (2, 38)  # `merge-tree --write-tree`
REMOTE_TIMEOUT = 20.0
STALE_SYNC_SECONDS = 86_400


def sync_checks(workspace: Path, config: JSONObject) -> list[Check]:
    """Nothing when the workspace does not sync; otherwise git, remote, credentials, last sync, conflicts."""
    from reme.app.diagnostics import conflict_files, git_install, reach_remote
    from reme.errors import ReMeError

    configured = dig(config, "sync", "remote")
    repository = os.path.isdir(workspace / ".git")  # never raises, on a folder it may not enter either
    if not repository and not configured:
        return []
    git = git_install()
    if git is None:
        return [
            Check(
                "sync",
                "fail",
                "git is not installed, so the workspace cannot sync",
                "install git 2.38 or later",
            )
        ]
    said = git.said
    if git.version < MIN_GIT:
        return [Check("sync", "fail", f"{said} is too old to sync (needs 2.38)", "install git 2.38 or later")]
    checks = [Check("sync", "ok", said)]
    if not repository:
        return [
            *checks,
            Check(
                "sync",
                "warn",
                "sync.remote is set but the workspace is no repository yet",
                f"reme sync_init workspace_dir={workspace}",
            ),
        ]
    try:
        remote = reach_remote(workspace, REMOTE_TIMEOUT)
    except ReMeError as exc:
        return [*checks, Check("sync", "fail", exc.message, "install git")]
    if remote.url is None:
        return [*checks, Check("sync", "warn", "the repository has no remote", "reme sync_init remote=<url>")]
    if remote.error:
        checks.append(
            Check(
                "sync",
                "fail",
                f"cannot reach {remote.url}: {remote.error[-300:]}",
                "check the URL, then git's credentials: your ssh agent (ssh -T) or credential helper (git credential)",
            )
        )
    else:
        checks.append(Check("sync", "ok", f"{remote.url} answers with these credentials"))
    checks += _last_sync(workspace, config)
    conflicts = conflict_files(workspace)
    if conflicts:
        checks.append(
            Check(
                "sync",
                "warn",
                f"{len(conflicts)} unresolved conflict file(s), e.g. {conflicts[0].relative_to(workspace)}",
                "merge each into the note beside it, delete it, then `reme sync` (docs/sync.md)",
            )
        )
    return checks


def _last_sync(workspace: Path, config: JSONObject) -> list[Check]:
    metadata = dig(config, "components", "workspace", "dirs", "metadata") or "metadata"
    try:
        last: JSONValue = json.loads((workspace / str(metadata) / "sync.json").read_text())
    except (OSError, ValueError):
        return [Check("sync", "warn", "no sync has run yet", "reme sync")]
    if not isinstance(last, dict):
        return [Check("sync", "warn", "no sync has run yet", "reme sync")]
    merged = last.get("merged")
    if not last.get("success"):
        return [
            Check(
                "sync", "fail", f"the last sync ({last.get('at')}) failed: {last.get('error')}", "reme sync"
            )
        ]
    try:
        age = (datetime.now(UTC) - datetime.fromisoformat(str(last.get("at")))).total_seconds()
    except (ValueError, TypeError):  # no time, not ISO 8601, or one without a zone
        detail = f"the record of the last sync names no time it ran ({last.get('at')!r})"
        return [Check("sync", "warn", detail, "reme sync (it records the next one afresh)")]
    if age > STALE_SYNC_SECONDS:
        return [
            Check(
                "sync",
                "warn",
                f"the last sync was {int(age // 3600)} h ago",
                "start a service (its cron syncs) or reme sync",
            )
        ]
    return [
        Check(
            "sync",
            "ok",
            f"last sync {last.get('at')}: {len(merged) if isinstance(merged, list) else 0} file(s) merged",
        )
    ]
