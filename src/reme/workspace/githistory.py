"""A file's versions from git: history, diff and restore (docs/spec.md §18).

Each version says who (author), which job and run (the `ReMe-Job:` / `ReMe-Run:` trailers) and why
(the subject). `restore` writes an old version back as a new change, compare-and-set against the
version the caller saw (or, without one, against the committed version: uncommitted edits are never
overwritten blindly).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from reme.errors import Conflict, ReMeError
from reme.workspace.atomic import atomic_write
from reme.workspace.gitrepo import Repo
from reme.workspace.gitsync import commit_paths, repo_lock
from reme.workspace.layout import Workspace

_TRAILER = re.compile(r"^(ReMe-Job|ReMe-Run):[ \t]*(\S.*?)\s*$", re.MULTILINE)
_REV = re.compile(r"^[A-Za-z0-9_./~^@{}-]{1,200}$")
MAX_DIFF_BYTES = 1_000_000


def check_rev(repo: Repo, rev: str) -> str:
    """The commit id of a revision name; a clear error for anything else (options included)."""
    if not _REV.match(rev) or rev.startswith("-"):
        raise ReMeError(f"{rev!r} is not a revision; give a commit id from `history` (or HEAD, HEAD~1)")
    commit = repo.rev(rev)
    if commit is None:
        raise ReMeError(f"no commit {rev!r} in the workspace's history; see `history` for the versions")
    return commit


def need_repo(repo: Repo) -> None:
    if not repo.exists() or repo.rev("HEAD") is None:
        raise ReMeError(
            "the workspace has no history yet; run sync_init remote=<url> to make it a git repository"
        )


def paths_in_history(repo: Repo, path: str, limit: int | None = None) -> dict[str, str]:
    """Each commit of `path`'s history (renames followed) -> the path the file had in that commit."""
    out = repo.run(
        "log",
        *([f"--max-count={limit}"] if limit else []),
        "--follow",
        "--name-only",
        "-z",
        "--format=%x1e%H",
        "--",
        f":(literal){path}",
    ).stdout.decode("utf-8", "surrogateescape")
    found: dict[str, str] = {}
    commit = None
    for token in out.split("\0"):
        token = token.lstrip("\n")
        if token.startswith("\x1e"):
            commit = token[1:]
        elif token and commit is not None:
            found.setdefault(commit, token)
    return found


def path_at(repo: Repo, commit: str, path: str) -> str | None:
    """The path the file now at `path` had in `commit` (another one before a rename), None when it
    did not exist then."""
    if repo.tree_entries(commit, [path]):
        return path
    return paths_in_history(repo, path).get(commit)


def history(repo: Repo, path: str, limit: int) -> list[dict[str, Any]]:
    """The commits that changed `path`, newest first, following renames; each version names the
    path the file had in it (`restore` and `diff` take the current path with any of these revisions)."""
    need_repo(repo)
    paths = paths_in_history(repo, path, limit)
    out = repo.run(
        "log",
        f"--max-count={limit}",
        "--follow",
        "-z",
        "--format=%H%x1f%aI%x1f%an <%ae>%x1f%B",
        "--",
        f":(literal){path}",
    ).stdout.decode("utf-8", "replace")
    versions = []
    for record in filter(None, out.split("\0")):
        rev, date, author, body = (record.lstrip("\n").split("\x1f", 3) + ["", "", ""])[:4]
        trailers = dict(reversed(_TRAILER.findall(body)))
        versions.append(
            {
                "rev": rev,
                "path": paths.get(rev, path),
                "date": date,
                "author": author,
                "job": trailers.get("ReMe-Job"),
                "run_id": trailers.get("ReMe-Run"),
                "message": body.strip().splitlines()[0] if body.strip() else "",
            }
        )
    return versions


def diff(repo: Repo, path: str, rev_a: str, rev_b: str) -> str:
    """A unified diff of one file between two revisions (`rev_b` may be WORKTREE for the file on disk)."""
    need_repo(repo)
    a = check_rev(repo, rev_a)
    b = None if rev_b == "WORKTREE" else check_rev(repo, rev_b)
    path_a, path_b = path_at(repo, a, path), path if b is None else path_at(repo, b, path)
    if path_a is None or path_b is None or path_a == path_b == path:
        args = [a] if b is None else [a, b]
        text = repo.run("diff", "--no-color", "--no-ext-diff", *args, "--", f":(literal){path}").stdout
    else:  # renamed in between: the two versions compared blob to blob, each under its own path
        after = ["--", path] if b is None else [f"{b}:{path_b}"]
        text = repo.run("diff", "--no-color", "--no-ext-diff", f"{a}:{path_a}", *after).stdout
    if len(text) > MAX_DIFF_BYTES:
        return text[:MAX_DIFF_BYTES].decode("utf-8", "replace") + "\n[diff cut at 1 MB]\n"
    return text.decode("utf-8", "replace")


def restore(repo: Repo, ws: Workspace, path: str, rev: str, expected_sha256: str | None) -> dict[str, Any]:
    """Write `path` as it was at `rev` as a new committed change; compare-and-set against the current file."""
    need_repo(repo)
    commit = check_rev(repo, rev)
    then = path_at(repo, commit, path)
    old = None if then is None else repo.blob(commit, then)
    if old is None:
        raise ReMeError(f"{path!r} did not exist at {rev}; see `history path={path}` for its versions")
    target = ws.root / path
    with repo_lock(repo), ws.lock(path):
        current = target.read_bytes() if target.is_file() else None
        current_sha = hashlib.sha256(current).hexdigest() if current is not None else None
        if expected_sha256 is not None:
            if current_sha != expected_sha256:
                raise Conflict(
                    f"{path!r} changed since you read it (sha256 {current_sha}); read it again and retry",
                    {"path": path, "sha256": current_sha},
                )
        elif current != repo.blob("HEAD", path):
            raise Conflict(
                f"{path!r} has changes that are not committed yet; sync first, or pass expected_sha256 "
                "(from `load`) to replace them knowingly",
                {"path": path, "sha256": current_sha},
            )
        if current != old:
            atomic_write(target, old, ws.root)
        commit_id = commit_paths(repo, [path], f"restore {path} to {commit[:12]}", "restore")
    return {
        "path": path,
        "rev": commit,
        "sha256": hashlib.sha256(old).hexdigest(),
        "commit": commit_id,
        "changed": current != old,
    }
