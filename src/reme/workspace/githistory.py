"""A file's versions from git: history, diff and restore (docs/spec.md §18).

Each version says who (author), which job and run (the `ReMe-Job:` / `ReMe-Run:` trailers) and why
(the subject). `restore` writes an old version back as a new change, compare-and-set against the
version the caller saw (or, without one, against the committed version: uncommitted edits are never
overwritten blindly).

Why history walks the commits itself rather than `git log --follow`: `--follow` tracks one rename
along one line of history, so a note renamed on one machine while edited on another loses the
other machine's edit and the merge that joined them. The walk here follows the note's path back
through every parent of every commit (renames found per commit and parent), at most `MAX_WALK`
commits, and tells a note deleted and created again under the same name from the earlier file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from reme.errors import Conflict, ReMeError
from reme.workspace.atomic import atomic_write
from reme.workspace.gitrepo import Repo
from reme.workspace.gitsync import commit_paths, repo_lock
from reme.workspace.layout import Workspace

_TRAILER = re.compile(r"^(ReMe-Job|ReMe-Run):[ \t]*(\S.*?)\s*$", re.MULTILINE)
_REV = re.compile(r"^[A-Za-z0-9_./~^@{}-]{1,200}$")
_COMMIT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
MAX_DIFF_BYTES = 1_000_000
MAX_WALK = 5000  # commits one history, diff or restore looks at, at most: its cost stays bounded
_PAIRS_PER_CALL = 200  # commit-parent diffs asked of one `git diff-tree` process
_SPLIT_RENAME_WINDOW = 16  # commits back a rename's deletion may lie from its addition (see _Walker.origin)


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


# the walk -------------------------------------------------------------------------------------------


@dataclass
class _Diff:
    """One commit against one of its parents, renames found: each path of the commit the diff names ->
    (status letter, its path in the parent); each path of the parent the commit lacks -> D or R."""

    now: dict[str, tuple[str, str]] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)


@dataclass
class Walk:
    """What walking back from HEAD found of one note: its versions newest first as (commit, path, file),
    the path it had in each commit walked, and the commit that deleted each earlier file.

    `file` 0 is the note now at the path (or, for a path deleted or renamed away now, the file it
    last held: `deleted[0]` says where); 1 is the file that had the path before it was deleted and a
    new one created there (`deleted[1]`); and so on."""

    versions: list[tuple[str, str, int]] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    deleted: dict[int, str] = field(default_factory=dict)
    stopped_early: bool = False


def _graph(repo: Repo, head: str) -> list[tuple[str, list[str]]]:
    """The commits reachable from `head`, every child before its parents (newest first otherwise),
    at most MAX_WALK + 1 (one more says the walk may stop early)."""
    out = repo.text("rev-list", "--date-order", "--parents", f"--max-count={MAX_WALK + 1}", head)
    return [(line.split()[0], line.split()[1:]) for line in out.splitlines() if line]


def _diffs(
    repo: Repo, pairs: list[tuple[str, str]], find: tuple[str, ...] = ("-M",)
) -> dict[tuple[str, str], _Diff]:
    """Each (commit, parent) pair's changes with renames found (`find`: git's options for it), from
    one `git diff-tree` process."""
    if not pairs:
        return {}
    out = repo.run(
        "diff-tree",
        "--stdin",
        "--always",
        "-r",
        *find,
        "--name-status",
        "-z",
        input="".join(f"{commit} {parent}\n" for commit, parent in pairs).encode(),
    ).stdout.decode("utf-8", "surrogateescape")
    found: dict[tuple[str, str], _Diff] = {}
    tokens, at, diff = out.split("\0"), 0, _Diff()
    remaining = iter(pairs)
    while at < len(tokens):
        token = tokens[at]
        if _COMMIT_ID.match(token):  # the header of the next pair (status letters never look like one)
            diff = found.setdefault(next(remaining), _Diff())
            at += 1
        elif token[:1] in ("R", "C"):
            old, new = tokens[at + 1], tokens[at + 2]
            diff.now[new] = (token[0], old)
            if token[0] == "R":
                diff.gone[old] = "R"
            at += 3
        elif token[:1] == "D":
            diff.gone[tokens[at + 1]] = "D"
            at += 2
        elif token:
            diff.now[tokens[at + 1]] = (token[0], tokens[at + 1])
            at += 2
        else:
            at += 1
    return found


def _last_touch(repo: Repo, commit: str, path: str) -> str | None:
    """The newest commit up to `commit` that changed `path` (where it was deleted when `commit` lacks it)."""
    out = repo.text("rev-list", "--max-count=1", commit, "--", f":(literal){path}")
    return out or None


class _Walker:
    """The state of one walk: the path(s) the note has in each commit still to visit, and the commits
    that deleted an earlier file at the path (its versions come next, under the next file number)."""

    def __init__(self, repo: Repo, head: str, limit: int | None, until: str | None) -> None:
        self.repo, self.head, self.limit, self.until = repo, head, limit, until
        self.result = Walk()
        self.notes: dict[str, dict[str, int]] = {}  # commit -> {a path the note has there: file}
        self.ghosts: dict[str, dict[str, int]] = {}  # commit that deleted a file -> {its path: file}
        self.pending: set[str] = set()

    def track(self, table: dict[str, dict[str, int]], commit: str, path: str, number: int) -> None:
        table.setdefault(commit, {}).setdefault(path, number)
        self.pending.add(commit)

    def run(self, path: str) -> Walk:
        graph = _graph(self.repo, self.head)
        order = graph[:MAX_WALK]
        if self.repo.tree_entries(self.head, [path]):
            self.track(self.notes, self.head, path, 0)
        elif (deleted := _last_touch(self.repo, self.head, path)) is not None:
            self.track(self.ghosts, deleted, path, 0)  # a note deleted now: its last versions
        diffs: dict[tuple[str, str], _Diff] = {}
        for index, (commit, parents) in enumerate(order):
            if commit not in self.pending:
                continue
            self.pending.discard(commit)
            if parents and (commit, parents[0]) not in diffs:
                ahead = order[index : index + _PAIRS_PER_CALL]
                diffs = _diffs(self.repo, [(c, p) for c, ps in ahead for p in ps])
            here = [(parent, diffs[(commit, parent)]) for parent in parents]
            for note_path, number in sorted(self.notes.get(commit, {}).items(), key=lambda kv: kv[1]):
                self.result.paths.setdefault(commit, note_path)
                self.visit(commit, here, note_path, number)
            for gone_path, number in self.ghosts.get(commit, {}).items():
                for parent, diff in here:  # an earlier file renamed away lives on: another note now
                    if diff.gone.get(gone_path) == "D" or (number == 0 and gone_path in diff.gone):
                        self.result.deleted.setdefault(number, commit)
                        self.track(self.notes, parent, gone_path, number)
            done = self.limit is not None and len(self.result.versions) >= self.limit
            if done or commit == self.until or not self.pending:
                return self.result
        self.result.stopped_early = len(graph) > MAX_WALK and bool(self.pending)
        return self.result

    def visit(self, commit: str, here: list[tuple[str, _Diff]], path: str, number: int) -> None:
        """A version when the note differs from it in every parent (a merge that took one side as it
        was is none); the note's path carried into each parent that had it."""
        before = [(parent, diff.now.get(path)) for parent, diff in here]
        if all(change is not None for _, change in before):
            self.result.versions.append((commit, path, number))
        for parent, change in before:
            then = path if change is None else None if change[0] == "A" else change[1]
            if then is not None:
                self.track(self.notes, parent, then, number)
        if here and all(change is not None and change[0] == "A" for _, change in before):
            origin = self.origin(commit, here[0][0], path) if len(here) == 1 else None
            if origin is not None:
                self.track(self.notes, *origin, number)
                return
            for parent, _ in here:  # created here: had an earlier file this path, deleted since?
                deleted = _last_touch(self.repo, parent, path)
                if deleted is not None:
                    self.track(self.ghosts, deleted, path, number + 1)

    def origin(self, commit: str, parent: str, path: str) -> tuple[str, str] | None:
        """Where a note that appears at `commit` was before, when its rename was split over two
        commits (sync commits each job's files apart: `edit` adds the new path before `move`
        deletes the old one, `move` deletes it before `write` adds the new one): the commit and path
        to go on from, None for a new file."""
        copied = _diffs(self.repo, [(commit, parent)], ("-C", "-C"))[(commit, parent)].now.get(path)
        if copied and copied[0] in "RC" and not self.repo.tree_entries(self.head, [copied[1]]):
            return parent, copied[1]  # a copy whose original is gone since: the first half of a rename
        chain = self.repo.text(
            "rev-list", "--first-parent", f"--max-count={_SPLIT_RENAME_WINDOW}", parent
        ).split()
        found = _diffs(self.repo, [(commit, older) for older in chain[1:]], ("-C",))
        for older in chain[1:]:  # nearest first: the parent of the commit that deleted it
            change = found[(commit, older)].now.get(path)
            if change and change[0] in "RC" and not self.repo.tree_entries(commit, [change[1]]):
                return older, change[1]
        return None


def walk(repo: Repo, path: str, limit: int | None = None, until: str | None = None) -> Walk:
    """Walk back from HEAD along every parent, following the note's renames on each line (a merge's
    other side included). Stops after `limit` versions, at the commit `until`, when no line of the
    note is left, or after MAX_WALK commits (then `stopped_early` says older versions may exist)."""
    head = repo.rev("HEAD")
    return Walk() if head is None else _Walker(repo, head, limit, until).run(path)


# the jobs -------------------------------------------------------------------------------------------


@dataclass
class History:
    """The versions `history` lists, and what the answer must say beside them: the commit that
    deleted each earlier file at the path, and whether the walk stopped at MAX_WALK commits."""

    versions: list[dict[str, Any]]
    deleted: dict[int, str]
    stopped_early: bool

    def answer(self, path: str) -> str:
        """One line a version; where a file ends (deleted, renamed away) and where the walk stopped
        said between them, so two different notes are never read as one."""
        gone = self.deleted.get(0)
        lines = (
            [f"-- no file at {path} now: deleted or renamed away in {gone[:12]}; before that:"]
            if gone
            else []
        )
        for number, v in enumerate(self.versions):
            if v["file"] and (not number or self.versions[number - 1]["file"] != v["file"]):
                deleted = self.deleted.get(v["file"], "")[:12]
                lines.append(f"-- an earlier, different file at {path}, deleted in {deleted}:")
            lines.append(
                f"{v['rev'][:12]} {v['date']} {v['author']}"
                + (f" [{v['job']}]" if v["job"] else "")
                + (f" ({v['path']})" if v["path"] != path else "")
                + f" {v['message']}"
            )
        if self.stopped_early:
            lines.append(f"-- stopped after {MAX_WALK} commits: older versions may exist")
        return "\n".join(lines) or f"no committed version of {path}"


def path_at(repo: Repo, commit: str, path: str) -> str | None:
    """The path the note now at `path` had in `commit` (another one before a rename, on any line),
    else `path` itself when the commit holds it; None when it did not exist then."""
    found = walk(repo, path, until=commit).paths.get(commit)
    if found is None and repo.tree_entries(commit, [path]):
        return path
    return found


def history(repo: Repo, path: str, limit: int) -> History:
    """The commits that changed the note at `path`, newest first, following renames on every line;
    each version names the path the file had in it and its `file` (0: this note; 1 and up: an
    earlier file that had the path before it was deleted). `restore` and `diff` take the current
    path with any of these revisions."""
    need_repo(repo)
    found = walk(repo, path, limit=limit)
    details = _details(repo, [commit for commit, _, _ in found.versions])
    versions = [{"rev": c, "path": p, **details[c], "file": n} for c, p, n in found.versions]
    return History(versions, found.deleted, found.stopped_early)


def _details(repo: Repo, commits: list[str]) -> dict[str, dict[str, Any]]:
    """Date, author, job, run and subject of each commit, from one `git log` process."""
    if not commits:
        return {}
    out = repo.run(
        "log", "--no-walk=unsorted", "-z", "--format=%H%x1f%aI%x1f%an <%ae>%x1f%B", *dict.fromkeys(commits)
    ).stdout.decode("utf-8", "replace")
    found = {}
    for record in filter(None, out.split("\0")):
        rev, date, author, body = (record.lstrip("\n").split("\x1f", 3) + ["", "", ""])[:4]
        trailers = dict(reversed(_TRAILER.findall(body)))
        found[rev] = {
            "date": date,
            "author": author,
            "job": trailers.get("ReMe-Job"),
            "run_id": trailers.get("ReMe-Run"),
            "message": body.strip().splitlines()[0] if body.strip() else "",
        }
    return found


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
