"""Sync a workspace with its git remote: commit, fetch, merge, push (docs/spec.md §18).

The merge never runs `git merge` in the worktree. `git merge-tree --write-tree` computes it from the
commits alone (every file changed on both sides comes back to `gitmerge` through a local
`* -merge` attribute); the merge commit is built from objects; only then are the changed files
written, under the workspace's write locks and compare-and-set: each must still hold the version of
the local commit (or already the merged one). A file written meanwhile by a dream or by hand makes
the round start over (its change is committed first), so a concurrent writer's update is never
overwritten. An intent in `.git/reme-apply.json` lets the next sync finish a round that a kill
interrupted; the repository itself is only changed by git's own atomic ref and object writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from filelock import FileLock, Timeout

from reme.errors import ReMeError
from reme.workspace import replaced
from reme.workspace.atomic import TEMP_SUFFIX, atomic_write
from reme.workspace.gitmerge import merge
from reme.workspace.gitrepo import GitError, Repo, blob_id, check_remote, git_failure, redact_url
from reme.workspace.layout import Workspace
from reme.workspace.write_log import take

REMOTE = "origin"
ATTEMPTS = 3  # rounds of commit → fetch → merge → push before a busy workspace gives up
LOCK_TIMEOUT = 120.0
STALE_INDEX_LOCK_SECONDS = 2.0
INTENT = "reme-apply.json"
GITLINK = "160000"  # the tree mode of a repository nested in the worktree
SYMLINK = "120000"
_PUSH_BEHIND = re.compile(r"\[rejected\].*\((?:fetch first|non-fast-forward|stale info)\)")
CONFLICT = re.compile(r"\.conflict-[A-Za-z0-9-]+-\d{8}T\d{6}(?:\.|$)")


class SyncBusy(ReMeError):
    """The files a merge changes kept being written; nothing was lost, sync again."""


@dataclass
class SyncReport:
    committed: list[str] = field(default_factory=list)  # commit ids made from local changes
    merged: list[str] = field(default_factory=list)  # paths the merge changed here
    conflicts: list[str] = field(default_factory=list)  # conflict files written by this sync
    pushed: bool = False


def host_name() -> str:
    """This machine's name as commits and conflict files carry it (letters, digits and dashes);
    `REME_SYNC_HOST` names it where the host name says nothing (a container's random id)."""
    return _host_label(os.environ.get("REME_SYNC_HOST") or socket.gethostname()) or "host"


def _host_label(name: str) -> str:
    """`name` in letters, digits and dashes, at most 40 characters ("" when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:40]


def gitignore(ws: Workspace) -> str:
    metadata = ws.folder("metadata")
    return (
        "# written by reme: derived state and temporary files stay out of the repository\n"
        f"/{metadata}/\n*{TEMP_SUFFIX}\n*.lock\n.DS_Store\n"
    )


def is_conflict_file(path: str) -> bool:
    return bool(CONFLICT.search(PurePosixPath(path).name))


def conflict_name(path: str, host: str, now: datetime) -> str:
    """`<stem>.conflict-<host>-<YYYYMMDDTHHMMSS>.<ext>` beside `path`."""
    pure = PurePosixPath(path)
    stamp = now.strftime("%Y%m%dT%H%M%S")
    name = f"{pure.stem}.conflict-{host}-{stamp}{pure.suffix}"
    return str(pure.with_name(name)) if str(pure.parent) != "." else name


def conflict_files(ws: Workspace) -> list[str]:
    """Unresolved conflict files in the workspace (derived state and `.git` not looked at)."""
    found = []
    skip = {".git", ws.folder("metadata")}
    for folder, dirs, files in os.walk(ws.root):
        if Path(folder) == ws.root:
            dirs[:] = [name for name in dirs if name not in skip]
        found += [ws.relative(Path(folder) / name) for name in files if CONFLICT.search(name)]
    return sorted(found)


@contextlib.contextmanager
def repo_lock(repo: Repo) -> Iterator[None]:
    """One reme git writer per repository at a time (the service, a CLI run, a cron)."""
    try:
        with FileLock(repo.git_dir / "reme-sync.lock", timeout=LOCK_TIMEOUT):
            yield
    except Timeout:
        raise ReMeError("another sync or commit holds this repository; try again in a moment") from None


def configure(repo: Repo, ws: Workspace) -> None:
    """The local settings sync relies on: merges of both-sided changes come to reme, the .gitignore."""
    info = repo.git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    attributes = "# written by reme: every file changed on both sides is merged by reme\n* -merge\n"
    if not (info / "attributes").is_file() or (info / "attributes").read_text() != attributes:
        (info / "attributes").write_text(attributes)
    rules = gitignore(ws)
    exclude = info / "exclude"  # this clone's own ignores: they hold whatever the .gitignore says
    held = exclude.read_text(encoding="utf-8", errors="replace") if exclude.is_file() else ""
    if rules not in held:
        exclude.write_text(_appended(held, rules))
    ignore = ws.root / ".gitignore"
    if ignore.is_symlink() or (ignore.exists() and not ignore.is_file()):
        return  # not reme's to rewrite: the exclude file above keeps derived state out here
    text = ignore.read_text(encoding="utf-8", errors="replace") if ignore.exists() else ""
    if f"/{ws.folder('metadata')}/" not in text.splitlines():  # a user's .gitignore: reme's lines added once
        atomic_write(ignore, _appended(text, rules), ws.root)


def _appended(text: str, lines: str) -> str:
    """`text` with `lines` added at its end, on a line of their own."""
    return text + ("\n" if text and not text.endswith("\n") else "") + lines


def recover(repo: Repo, ws: Workspace) -> list[str]:
    """Clean up after a killed sync: a stale index lock, a half-applied merge. The paths written."""
    index_lock = repo.git_dir / "index.lock"
    if index_lock.exists():
        deadline = time.monotonic() + STALE_INDEX_LOCK_SECONDS
        while index_lock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        index_lock.unlink(missing_ok=True)  # held by no git of ours: we hold the repository lock
    check_idle(repo)
    intent_file = repo.git_dir / INTENT
    if not intent_file.exists():
        return []
    try:
        intent = json.loads(intent_file.read_text())
        old, new = str(intent["old"]), str(intent["new"])
    except (ValueError, KeyError, TypeError):
        intent_file.unlink()
        return []
    head = repo.rev("HEAD")
    written: list[str] = []
    if head == old:
        # a file edited since: the files stay as they are, are committed as local and merged again
        with contextlib.suppress(SyncBusy):
            written = apply(repo, ws, old, new)
    elif head == new:
        repo.run("reset", "-q")
    intent_file.unlink(missing_ok=True)
    return written


def check_idle(repo: Repo) -> None:
    """Refuse to commit into a git operation started by hand (a merge, cherry-pick, rebase or a
    conflict left in the index): sync would stage its half-done files as resolved."""
    unfinished = repo.unfinished_operation()
    if unfinished:
        raise ReMeError(
            f"{unfinished} in the workspace's repository; finish or abort it "
            "(`git status` says how), then sync"
        )


def init(repo: Repo, ws: Workspace, remote: str, branch: str) -> str | None:
    """Make the workspace a repository with this remote (idempotent); the commit of what was there
    (None when everything was committed already)."""
    url = check_remote(remote)
    check_branch(repo, branch)
    if not repo.exists():
        repo.run("init", "-q", "-b", branch)
    configure(repo, ws)
    with repo_lock(repo):
        check_idle(repo)
        urls = repo.run("remote", ok=(0,)).stdout.decode().split()
        if REMOTE in urls:
            repo.run("remote", "set-url", REMOTE, url)
        else:
            repo.run("remote", "add", REMOTE, url)
        if repo.rev("HEAD") is None:
            repo.run("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        return commit_all(repo, "reme: the workspace as it was when sync started", "sync_init")


def check_branch(repo: Repo, branch: str) -> None:
    """Refuse a name git would refuse as a branch (`a..b`, `x.lock`, `topic/`, a newline) before
    anything is written."""
    if "\n" in branch or repo.run("check-ref-format", "--branch", branch, ok=(0, 1, 128)).returncode:
        raise ReMeError(
            f"branch {branch!r} is not a valid git branch name (no '..', trailing '/' or '.', '.lock' "
            "ending or line break); give a name such as main"
        )


def clone(repo: Repo, ws: Workspace, remote: str, branch: str) -> list[str]:
    """Fill an empty workspace from the remote; the paths checked out.

    Files reme generated at start (`digest/_buckets.md`) or that equal the remote's do not count as
    content: any other file means the workspace is not empty, and nothing is changed.
    """
    url = check_remote(remote)
    check_branch(repo, branch)
    if repo.exists():
        raise ReMeError(f"{ws.root} is already a git repository; use sync to bring it up to date")
    repo.run("init", "-q", "-b", branch)
    try:
        repo.run("remote", "add", REMOTE, url)
        with repo_lock(repo):
            if not fetch(repo, branch):
                raise ReMeError(
                    f"the remote has no branch {branch!r}; run sync_init on a machine that has the memory"
                )
            upstream = f"{REMOTE}/{branch}"
            generated = {f"{ws.folder('digest')}/_buckets.md", ".gitignore"}
            skip = {ws.folder("metadata"), ".git"}
            for path in sorted(ws.root.rglob("*")):
                relative = path.relative_to(ws.root)
                if relative.parts[0] in skip or not path.is_file() or relative.as_posix() in generated:
                    continue
                if repo.blob(upstream, relative.as_posix()) != path.read_bytes():
                    raise ReMeError(
                        f"the workspace {ws.root} is not empty ({relative.as_posix()}); clone into an empty "
                        "workspace_dir, or use sync_init and sync to merge this one with the remote"
                    )
            repo.run("checkout", "-q", "-f", "-B", branch, upstream)
            repo.run("branch", "-q", f"--set-upstream-to={upstream}", branch)
            configure(repo, ws)
            return [line for line in repo.text("ls-files", "-z").split("\0") if line]
    except BaseException:
        import shutil

        shutil.rmtree(repo.git_dir, ignore_errors=True)  # a refused clone leaves the workspace as it was
        raise


def commit_all(repo: Repo, message: str, job: str, run_id: str | None = None) -> str | None:
    """Commit every change in the worktree (the .gitignore applies); the commit id, None when clean."""
    repo.run("add", "-A")
    if repo.run("diff", "--cached", "--quiet", ok=(0, 1)).returncode == 0:
        return None
    repo.run("commit", "-q", "--no-verify", "-F", "-", input=with_trailers(message, job, run_id).encode())
    return repo.rev("HEAD")


def commit_paths(
    repo: Repo, paths: Iterable[str], message: str, job: str, run_id: str | None = None
) -> str | None:
    """Commit only these paths (a dream run's files); None when none of them changed."""
    wanted = _stage(repo, paths)
    if not wanted:
        return None
    spec = "".join(f":(literal){path}\0" for path in wanted).encode()
    pathspec_file = repo.git_dir / "reme-pathspec"
    pathspec_file.write_bytes(spec)
    before = repo.rev("HEAD")
    try:
        done = repo.run(
            "commit",
            "-q",
            "--no-verify",
            "--only",
            "-F",
            "-",
            f"--pathspec-from-file={pathspec_file}",
            "--pathspec-file-nul",
            input=with_trailers(message, job, run_id).encode(),
            ok=(0, 1),
        )
    finally:
        pathspec_file.unlink(missing_ok=True)
    after = repo.rev("HEAD")
    if done.returncode == 1 and after == before:
        said = (done.stdout + done.stderr).decode("utf-8", "replace")
        if "nothing" in said or "no changes" in said:
            return None
        raise GitError(f"git commit failed: {said.strip()[-2000:]}")
    return after


def _stage(repo: Repo, paths: Iterable[str]) -> list[str]:
    """Stage these paths as the worktree has them; the ones there was something to stage."""
    wanted = sorted(set(paths))
    gone = [path for path in wanted if not (repo.root / path).exists()]
    if gone:  # a path neither on disk nor in HEAD is nothing to commit (git would refuse the pathspec)
        known = repo.tree_entries("HEAD", gone) if repo.rev("HEAD") else {}
        wanted = [path for path in wanted if path not in gone or path in known]
    if wanted:
        spec = "".join(f":(literal){path}\0" for path in wanted).encode()
        repo.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=spec)
    return wanted


def with_trailers(message: str, job: str, run_id: str | None) -> str:
    """The message with reme's trailers: the job, the run, and the host (a conflict file is named after it)."""
    trailers = (
        f"ReMe-Job: {job}" + (f"\nReMe-Run: {run_id}" if run_id else "") + f"\nReMe-Host: {host_name()}"
    )
    return f"{message.strip()}\n\n{trailers}\n"


def _author_host(repo: Repo, ours: str, theirs: str, path: str) -> str:
    """The host of the remote's latest change to `path` (its ReMe-Host trailer), or `remote`."""
    found = repo.text(
        "log",
        "-1",
        "--format=%(trailers:key=ReMe-Host,valueonly)",
        f"{ours}..{theirs}",
        "--",
        f":(literal){path}",
    )
    return _host_label(found.strip()) or "remote"


def fetch(repo: Repo, branch: str) -> bool:
    """Fetch the remote's branch; False when the remote does not have it yet (a new, empty remote)."""
    done = repo.run(
        "fetch",
        "-q",
        "--no-tags",
        REMOTE,
        f"+refs/heads/{branch}:refs/remotes/{REMOTE}/{branch}",
        ok=(0, 128),
    )
    if done.returncode == 0:
        return True
    said = redact_url(done.stderr.decode("utf-8", "replace")).strip()
    if "couldn't find remote ref" in said:
        return False
    raise GitError(f"git fetch failed: {said[-2000:]}", {"git_status": done.returncode})


def remote_url(repo: Repo) -> str | None:
    """The remote's URL; None when none is configured (status 2, or 128 "No such remote" from an
    older git). Any other fatal error is git's own (a broken repository), raised as a GitError, not
    passed off as "no remote"."""
    done = repo.run("remote", "get-url", REMOTE, ok=(0, 2, 128))
    if done.returncode == 128 and b"no such remote" not in done.stderr.lower():
        raise git_failure("remote", done)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def sync(
    repo: Repo, ws: Workspace, *, branch: str, message: str | None, host: str, now: datetime | None = None
) -> SyncReport:
    """One sync: commit local changes, then fetch, merge, apply and push until the remote has it all."""
    if not repo.exists():
        raise ReMeError("the workspace is not a git repository yet; run sync_init remote=<url> first")
    url = remote_url(repo)
    if url is None:
        raise ReMeError("no remote is configured; run sync_init remote=<url> (or set sync.remote)")
    configure(repo, ws)
    report = SyncReport()
    with repo_lock(repo):
        report.merged += recover(repo, ws)
        for _attempt in range(ATTEMPTS):
            report.committed += commit_local(repo, ws, message, host)
            theirs = repo.rev(f"refs/remotes/{REMOTE}/{branch}") if fetch(repo, branch) else None
            ours = repo.rev("HEAD")
            if ours is None:  # nothing here and nothing committed: take the remote as it is
                if theirs is None:
                    return report
                raise ReMeError("the workspace has no commit; use sync_clone to fill an empty workspace")
            target = ours
            if theirs is not None and not repo.is_ancestor(theirs, ours):
                conflicts: list[str] = []
                if repo.is_ancestor(ours, theirs):
                    target = theirs
                else:
                    target, conflicts = _merge_commit(repo, ws, ours, theirs, host, now or datetime.now(UTC))
                try:
                    report.merged += apply(repo, ws, ours, target)
                except SyncBusy:
                    continue  # a file changed meanwhile: commit it and merge again
                report.conflicts += conflicts
            if theirs == target:
                return report
            pushed = repo.run("push", "-q", "--porcelain", REMOTE, f"HEAD:refs/heads/{branch}", ok=(0, 1))
            if pushed.returncode == 0:
                report.pushed = True
                repo.run("update-ref", f"refs/remotes/{REMOTE}/{branch}", target)
                return report
            said = redact_url(
                pushed.stderr.decode("utf-8", "replace") + pushed.stdout.decode("utf-8", "replace")
            )
            if not _PUSH_BEHIND.search(said):  # refused by the host (a hook, a protected branch): say so
                raise GitError(f"git push was refused by the remote: {said.strip()[-2000:]}")
    raise SyncBusy(
        f"the remote or the merged files kept changing during {ATTEMPTS} rounds; nothing was lost, sync again",
        {
            "committed": report.committed,
            "merged": report.merged,
            "conflicts": report.conflicts,
            "pushed": False,
        },
    )


def commit_local(repo: Repo, ws: Workspace, message: str | None, host: str) -> list[str]:
    """Commit the worktree's changes: one commit per job that wrote them (captures and cards batched
    under `auto_memory`, file jobs under theirs), then what changed by hand, said as such. Files of
    the `metadata` folder that a plain git client committed are taken out of the repository first
    (they stay on disk): derived state is never synced, and git would refuse to add them again.

    A rename whose two halves two jobs wrote (`move`, then `write` of the new path) is kept whole,
    so that `git log --follow` and other git tools see it: the deleting job's commit holds the rename
    with the content the note had in HEAD, the other job's commit the change made after it."""
    untracked = untrack_metadata(repo, ws.folder("metadata"))
    changed = repo.worktree_changes()
    ledger = take(repo.git_dir)
    if not changed:
        return []
    writer = {path: _writer(repo, path, ledger) for path in changed}
    renames = _split_renames(repo, writer, f"{ws.folder('journal')}/{replaced.FOLDER}")
    order = _commit_order(set(writer.values()), {(writer[old], writer[new]) for old, new in renames.items()})
    carried: dict[str, dict[str, tuple[str, str]]] = {}  # job → new path → (mode, blob) it is renamed with
    before = repo.tree_entries("HEAD", renames) if renames else {}
    for old, new in renames.items():
        if order.index(writer[old]) < order.index(writer[new]):
            carried.setdefault(writer[old], {})[new] = before[old]
        else:  # the new path's job commits first: the deletion goes in with it
            writer[old] = writer[new]
    commits = []
    for job in order:
        paths = [path for path in changed if writer[path] == job]
        renamed = carried.get(job, {})
        if not paths and not renamed:
            continue
        listed = sorted([*paths, *renamed])
        if job == HAND:
            text = f"{message or f'edited by hand on {host}: {_summary(listed)}'}\n\n{_listing(listed)}"
            job_name = "sync"
        else:
            text, job_name = f"{job}: {_summary(listed)}\n\n{_listing(listed)}", job
        commit = (
            _commit_renames(repo, paths, renamed, text, job_name)
            if renamed
            else commit_paths(repo, paths, text, job_name)
        )
        if commit:
            commits.append(commit)
    rest = commit_all(repo, message or f"sync on {host}", "sync")  # anything the groups missed
    return untracked + commits + ([rest] if rest else [])


def _split_renames(repo: Repo, writer: dict[str, str], kept: str) -> dict[str, str]:
    """The renames in the worktree (old path → new path) whose halves different jobs wrote, as git
    finds them (at least half the content the same), in a scratch index (the real one untouched).

    The copies `write` keeps of what it replaced (`<kept>/<path>/<time>.<ext>`, new or pruned) are
    never a rename's half, so they stay out, and a path they are copies of is compared by the content
    it had before its first replacement: a note moved, then rewritten by `write`, is still found.
    None when git cannot tell (a file gone meanwhile): those renames are then split, as before."""
    copies = {path for path in writer if path.startswith(f"{kept}/")}
    deleted = {path for path in writer if not os.path.lexists(repo.root / path)}
    if not deleted - copies or len(set(writer.values())) < 2 or repo.rev("HEAD") is None:
        return {}
    earliest: dict[str, str] = {}  # a path written over → its oldest new copy (version names sort by time)
    for copy in sorted(copies - deleted):
        earliest.setdefault(str(PurePosixPath(copy).parent)[len(kept) + 1 :], copy)
    earlier = {path: copy for path, copy in earliest.items() if path in writer and path not in deleted}
    contents = [_read(repo.root / copy) for copy in earlier.values()]
    scratch = {"GIT_INDEX_FILE": str(repo.git_dir / "reme-rename-index")}
    spec = "".join(f":(literal){path}\0" for path in writer if path not in copies).encode()
    try:
        repo.run("read-tree", "HEAD", env=scratch)
        added = repo.run(
            "add",
            "-A",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            input=spec,
            env=scratch,
            ok=(0, 1, 128),
        )
        if added.returncode or None in contents:
            return {}
        oids = repo.write_blobs([content for content in contents if content is not None])
        entries = "".join(f"100644 {oid}\t{path}\0" for path, oid in zip(earlier, oids, strict=True))
        repo.run("update-index", "-z", "--add", "--index-info", input=entries.encode(), env=scratch)
        out = repo.run(
            "diff", "--cached", "-M", "-z", "--name-status", "--diff-filter=R", "HEAD", env=scratch
        ).stdout.decode("utf-8", "surrogateescape")
    finally:
        (repo.git_dir / "reme-rename-index").unlink(missing_ok=True)
    fields = out.split("\0")
    pairs = {fields[at + 1]: fields[at + 2] for at in range(0, len(fields) - 2, 3) if fields[at][:1] == "R"}
    return {
        old: new for old, new in pairs.items() if {old, new} <= writer.keys() and writer[old] != writer[new]
    }


def _commit_order(jobs: set[str], first: set[tuple[str, str]]) -> list[str]:
    """The jobs in the order their commits are made: by name with hand edits last, except that a
    job that deleted a renamed file comes before the job that wrote its new path (`first` holds
    those pairs); where such pairs go both ways, by name."""
    left = sorted(jobs, key=lambda name: (name == HAND, name))
    order: list[str] = []
    while left:
        ready = [job for job in left if not any(after == job and before in left for before, after in first)]
        order.append((ready or left)[0])
        left.remove(order[-1])
    return order


def _commit_renames(
    repo: Repo, paths: list[str], renamed: dict[str, tuple[str, str]], message: str, job: str
) -> str:
    """Commit `paths` as in the worktree and each new path of `renamed` (`path → (mode, blob)`) with
    the content its old path had in HEAD: the change made after the rename is another job's commit.
    The index is HEAD's first, so nothing staged by hand slips in (it goes in with its own files)."""
    repo.run("reset", "-q")
    _stage(repo, paths)
    entries = "".join(f"{mode} {oid}\t{path}\0" for path, (mode, oid) in renamed.items())
    repo.run("update-index", "-z", "--add", "--index-info", input=entries.encode())
    repo.run("commit", "-q", "--no-verify", "-F", "-", input=with_trailers(message, job, None).encode())
    return repo.rev("HEAD") or ""


def untrack_metadata(repo: Repo, metadata: str) -> list[str]:
    """Commit the removal of every tracked file under `metadata/` from the repository (not from
    disk); the commit, if there was anything to remove."""
    if repo.rev("HEAD") is None or not repo.text("ls-files", "-z", "--", f":(literal){metadata}"):
        return []
    repo.run("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", f":(literal){metadata}")
    text = with_trailers(f"sync: {metadata}/ is derived state, kept out of the repository", "sync", None)
    repo.run("commit", "-q", "--no-verify", "-F", "-", input=text.encode())
    return [repo.rev("HEAD") or ""]


HAND = ""


def _writer(repo: Repo, path: str, ledger: dict[str, tuple[str, str | None]]) -> str:
    """The job that last wrote `path` as it is now, or HAND when the file is not what reme wrote."""
    pure = PurePosixPath(path)
    entry = ledger.get(path) or next((ledger[str(p)] for p in pure.parents if str(p) in ledger), None)
    if entry is None:
        return HAND
    job, blob = entry
    if blob is None:
        return job
    current = _read(repo.root / path)
    return job if current is not None and blob_id(current) == blob else HAND


def _summary(paths: list[str]) -> str:
    return f"{len(paths)} file(s)" if len(paths) != 1 else paths[0]


def _listing(paths: list[str]) -> str:
    shown = "".join(f"- {path}\n" for path in paths[:20])
    return shown + (f"- and {len(paths) - 20} more\n" if len(paths) > 20 else "")


def _merge_commit(
    repo: Repo, ws: Workspace, ours: str, theirs: str, host: str, now: datetime
) -> tuple[str, list[str]]:
    """The merge commit of `ours` and `theirs` with every both-sided change resolved by reme."""
    done = repo.run(
        "merge-tree",
        "--write-tree",
        "-z",
        "--no-messages",
        "--allow-unrelated-histories",
        ours,
        theirs,
        ok=(0, 1),
    )
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    tree = fields[0]
    stages: dict[str, dict[int, tuple[str, str]]] = {}
    for entry in fields[1:]:
        if not entry:
            break
        meta, path = entry.split("\t", 1)
        mode, oid, stage = meta.split()
        stages.setdefault(path, {})[int(stage)] = (mode, oid)
    blobs = repo.blobs(oid for entries in stages.values() for _mode, oid in entries.values())
    updates: list[str] = []
    conflicts: list[str] = []
    resolved: list[tuple[str, str, bytes]] = []  # (mode, path, merged content)
    for path, entries in sorted(stages.items()):
        base = blobs[entries[1][1]] if 1 in entries else None
        if 2 not in entries and 3 not in entries:  # gone on both sides (renamed differently on each)
            updates.append(f"0 {'0' * len(entries[1][1])}\t{path}")
            continue
        if 2 not in entries or 3 not in entries:  # deleted on one side, changed on the other: keep the change
            mode, oid = entries.get(2) or entries[3]
            updates.append(f"{mode} {oid}\t{path}")
            continue
        merged = merge(
            path,
            base,
            blobs[entries[2][1]],
            blobs[entries[3][1]],
            git=repo.binary,
            digest_folder=ws.folder("digest"),
        )
        resolved.append((entries[2][0], path, merged.content))
        if merged.conflict:
            beside = conflict_name(path, _author_host(repo, ours, theirs, path), now)
            updates.append(f"{entries[3][0]} {entries[3][1]}\t{beside}")
            conflicts.append(beside)
    oids = repo.write_blobs([content for _mode, _path, content in resolved])
    updates += [f"{mode} {oid}\t{path}" for (mode, path, _content), oid in zip(resolved, oids, strict=True)]
    metadata = ws.folder("metadata")  # a remote that tracks derived state: never into the merge
    for path in repo.text("ls-tree", "-r", "-z", "--name-only", tree, "--", metadata).split("\0"):
        if path:
            updates.append(f"0 {'0' * len(tree)}\t{path}")
    if updates:
        index = {"GIT_INDEX_FILE": str(repo.git_dir / "reme-merge-index")}
        repo.run("read-tree", tree, env=index)
        repo.run(
            "update-index",
            "-z",
            "--index-info",
            input="".join(f"{line}\0" for line in updates).encode(),
            env=index,
        )
        tree = repo.text("write-tree", env=index)
        (repo.git_dir / "reme-merge-index").unlink(missing_ok=True)
    count = len(repo.changed_between(ours, tree))
    message = with_trailers(f"sync: merge {REMOTE} into {host} ({count} file(s))", "sync", None)
    commit = repo.text("commit-tree", tree, "-p", ours, "-p", theirs, "-F", "-", input=message.encode())
    return commit, conflicts


def apply(repo: Repo, ws: Workspace, old: str, new: str) -> list[str]:
    """Move the worktree and HEAD from `old` to `new`, compare-and-set per file; the paths written.

    Every file the change touches must hold its version of `old` (or already that of `new`);
    otherwise `SyncBusy` and nothing is written. Files are written under the workspace's write locks.
    """
    metadata = ws.folder("metadata")
    paths = [path for path in repo.changed_between(old, new) if PurePosixPath(path).parts[0] != metadata]
    before = repo.tree_entries(old, paths)
    after = repo.tree_entries(new, paths)
    # A repository nested in another machine's workspace is committed as a link to a commit this
    # one lacks: no file to write (its folder, as git leaves it, empty), and never a nested one removed.
    nested = {path for path in paths if GITLINK in (before.get(path, ("",))[0], after.get(path, ("",))[0])}
    for path in sorted(nested):
        if after.get(path, ("",))[0] == GITLINK:
            (ws.root / path).mkdir(parents=True, exist_ok=True)
    paths = [path for path in paths if path not in nested]
    after = {path: entry for path, entry in after.items() if path not in nested}
    with ws.lock(*paths):
        stale = []
        held: dict[str, str | None] = {}  # each path's current blob id, read once
        for path in paths:
            current = _read(ws.root / path)
            held[path] = None if current is None else blob_id(current)
            accepted = {entry[1] if entry else None for entry in (before.get(path), after.get(path))}
            if held[path] not in accepted:
                stale.append(path)
        if stale:
            raise SyncBusy(f"{len(stale)} file(s) changed while syncing: {', '.join(stale[:5])}")
        (repo.git_dir / INTENT).write_text(json.dumps({"old": old, "new": new}))
        contents = repo.blobs(oid for _mode, oid in after.values())
        for path in paths:
            target = ws.root / path
            if path in after:
                mode, oid = after[path]
                if mode == SYMLINK:  # a link as git keeps it (its target), never a file holding that text
                    if held[path] != oid or not target.is_symlink():
                        target.unlink(missing_ok=True)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        os.symlink(os.fsdecode(contents[oid]), target)
                elif held[path] != oid or target.is_symlink():
                    atomic_write(target, contents[oid], ws.root)
                if mode == "100755":
                    target.chmod(target.stat().st_mode | 0o111)
            else:
                target.unlink(missing_ok=True)
        repo.run("update-ref", "-m", "reme sync", "HEAD", new, old)
        repo.run("reset", "-q")
        (repo.git_dir / INTENT).unlink(missing_ok=True)
    return paths


def _read(path: Path) -> bytes | None:
    """The bytes git would store for `path`: a file's content, a link's target (never what it leads to)."""
    try:
        return os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
