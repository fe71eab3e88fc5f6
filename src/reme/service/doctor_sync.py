"""`reme doctor`'s sync checks (docs/spec.md §18): the git binary, the remote and its credentials, the last sync.

Kept apart from `doctor` so the sync area owns them. Reaching the remote runs `git ls-remote` with
prompts off: a missing or refused credential is a failure that names git's own fix, never a prompt.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reme.service.doctor import Check

MIN_GIT = (2, 38)  # `merge-tree --write-tree`
REMOTE_TIMEOUT = 20.0
STALE_SYNC_SECONDS = 86_400


def sync_checks(workspace: Path, config: dict[str, Any]) -> list[Check]:
    """Nothing when the workspace does not sync; otherwise git, remote, credentials, last sync, conflicts."""
    from reme.errors import ReMeError
    from reme.workspace.gitrepo import Repo, git_binary, redact_url
    from reme.workspace.gitsync import CONFLICT, remote_url

    configured = (config.get("sync") or {}).get("remote")
    if not (workspace / ".git").is_dir() and not configured:
        return []
    binary = git_binary()
    if binary is None:
        return [
            Check(
                "sync",
                "fail",
                "git is not installed, so the workspace cannot sync",
                "install git 2.38 or later",
            )
        ]
    said = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    found = re.search(r"(\d+)\.(\d+)", said)
    version = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if version < MIN_GIT:
        return [Check("sync", "fail", f"{said} is too old to sync (needs 2.38)", "install git 2.38 or later")]
    checks = [Check("sync", "ok", said)]
    if not (workspace / ".git").is_dir():
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
        repo = Repo(workspace)
    except ReMeError as exc:
        return [*checks, Check("sync", "fail", exc.message, "install git")]
    url = remote_url(repo)
    if url is None:
        return [*checks, Check("sync", "warn", "the repository has no remote", "reme sync_init remote=<url>")]
    try:
        reached = repo.run("ls-remote", "--heads", "origin", ok=range(256))
        error = "" if reached.returncode == 0 else reached.stderr.decode("utf-8", "replace").strip()
    except ReMeError as exc:
        error = exc.message
    if error:
        checks.append(
            Check(
                "sync",
                "fail",
                f"cannot reach {redact_url(url)}: {redact_url(error)[-300:]}",
                "check the URL, then git's credentials: your ssh agent (ssh -T) or credential helper (git credential)",
            )
        )
    else:
        checks.append(Check("sync", "ok", f"{redact_url(url)} answers with these credentials"))
    checks += _last_sync(workspace, config)
    conflicts = [
        p for p in workspace.rglob("*.conflict-*") if CONFLICT.search(p.name) and ".git" not in p.parts
    ]
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


def _last_sync(workspace: Path, config: dict[str, Any]) -> list[Check]:
    metadata = (
        ((config.get("components") or {}).get("workspace") or {}).get("dirs", {}).get("metadata", "metadata")
    )
    try:
        last = json.loads((workspace / metadata / "sync.json").read_text())
    except (OSError, ValueError):
        return [Check("sync", "warn", "no sync has run yet", "reme sync")]
    at = datetime.fromisoformat(str(last.get("at")))
    age = (datetime.now(UTC) - at).total_seconds()
    if not last.get("success"):
        return [
            Check(
                "sync", "fail", f"the last sync ({last.get('at')}) failed: {last.get('error')}", "reme sync"
            )
        ]
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
        Check("sync", "ok", f"last sync {last.get('at')}: {len(last.get('merged') or [])} file(s) merged")
    ]
