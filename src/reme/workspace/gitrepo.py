"""The workspace as a git repository: a thin wrapper over the real `git` binary (docs/spec.md §18).

Why the binary and not a library: it is what users already run against the same repository, its
`merge-tree --write-tree` merges without touching the worktree, and its credential helpers and ssh
agent are the user's own (reme never sees a password). Every call runs with a fixed environment:
no terminal prompts, C locale, reme's identity for commits it makes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from reme.errors import ReMeError
from reme.workspace.write_log import blob_id

GIT_TIMEOUT = 300.0  # seconds for one git command (a fetch over a slow link included)
_CREDENTIALS_IN_URL = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@]*:[^/@]*@", re.IGNORECASE)
_UNFINISHED = (
    ("MERGE_HEAD", "a git merge started by hand is in progress"),
    ("CHERRY_PICK_HEAD", "a git cherry-pick started by hand is in progress"),
    ("REVERT_HEAD", "a git revert started by hand is in progress"),
    ("rebase-merge", "a git rebase started by hand is in progress"),
    ("rebase-apply", "a git rebase or am started by hand is in progress"),
)
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", re.IGNORECASE)


__all__ = ["GitError", "Identity", "Repo", "blob_id", "check_remote", "redact_url"]


class GitError(ReMeError):
    """A git command failed; the message carries git's own words (never a URL's credentials)."""


def check_remote(url: str) -> str:
    """The remote URL, refused when it embeds a password: credentials belong to git's helpers."""
    url = url.strip()
    if not url:
        raise ReMeError("remote is empty; give the repository URL, e.g. git@github.com:me/memory.git")
    if url.startswith("-"):
        raise ReMeError(f"remote must be a URL or a path, not an option: {redact_url(url)!r}")
    if _CREDENTIALS_IN_URL.match(url):
        raise ReMeError(
            "the remote URL embeds a password; reme never stores credentials. Give the URL without it "
            "(https://host/owner/repo.git) and let git's credential helper or your ssh agent supply them"
        )
    return url


def redact_url(text: str) -> str:
    """`https://user:secret@host/x` → `https://***@host/x`: for anything that may reach a log."""
    return _USERINFO.sub(r"\1***@", text)


def git_binary() -> str | None:
    return shutil.which("git")


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    @classmethod
    def parse(cls, text: str | None, host: str) -> Identity:
        """`Name <email>` from `sync.author`; reme on this host when unset."""
        if text:
            found = re.fullmatch(r"\s*([^<>]+?)\s*<([^<>\s]+)>\s*", text)
            if not found:
                raise ReMeError(f"sync.author must look like 'Name <email>', got {text!r}")
            return cls(found.group(1), found.group(2))
        return cls("reme", f"reme@{host}")


def git_failure(command: str, done: subprocess.CompletedProcess[bytes]) -> GitError:
    """The error of a failed git command, in git's words (URLs redacted, the last 2,000 characters)."""
    said = redact_url(
        done.stderr.decode("utf-8", "replace").strip() or done.stdout.decode("utf-8", "replace")
    )
    return GitError(f"git {command} failed: {said[-2000:]}", {"git_status": done.returncode})


class Repo:
    """Git commands on one worktree (the workspace root)."""

    def __init__(self, root: Path, identity: Identity | None = None) -> None:
        self.root = root
        self.identity = identity or Identity("reme", "reme@localhost")
        binary = git_binary()
        if binary is None:
            raise ReMeError("git is not installed (or not on PATH); install git 2.38 or later to sync")
        self.binary = binary

    @property
    def git_dir(self) -> Path:
        return self.root / ".git"

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def _env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        env = {
            **os.environ,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": os.environ.get("GIT_ASKPASS", "true"),
            "LC_ALL": "C",
            "GIT_AUTHOR_NAME": self.identity.name,
            "GIT_AUTHOR_EMAIL": self.identity.email,
            "GIT_COMMITTER_NAME": self.identity.name,
            "GIT_COMMITTER_EMAIL": self.identity.email,
        }
        env.pop("GIT_INDEX_FILE", None)
        # Exactly this workspace's repository: never a parent one (a `.reme/` inside a project's repo).
        env["GIT_DIR"] = str(self.git_dir)
        env["GIT_WORK_TREE"] = str(self.root)
        return {**env, **(extra or {})}

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        ok: Iterable[int] = (0,),
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `git <args>` in the worktree; a GitError (git's stderr, URLs redacted) on another status
        or after `timeout` seconds (GIT_TIMEOUT by default)."""
        command = [self.binary, "-c", "core.quotepath=off", "-c", "core.autocrlf=false", *args]
        # A session of its own: no terminal to prompt on, and a hung transfer is killed with its
        # ssh or https helper (killing git alone would leave them waiting on the remote).
        with subprocess.Popen(
            command,
            cwd=self.root,
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._env(env),
            start_new_session=True,
        ) as process:
            limit = timeout or GIT_TIMEOUT
            try:
                stdout, stderr = process.communicate(input, timeout=limit)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise GitError(
                    f"git {args[0]} took longer than {limit:.0f}s (is the remote "
                    "reachable?); nothing was lost, try again"
                ) from None
        done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        if done.returncode not in tuple(ok):
            raise git_failure(args[0], done)
        return done

    def unfinished_operation(self) -> str | None:
        """What a git command run by hand left half done (a merge, a rebase, a conflict in the
        index), said in words; None when there is nothing."""
        for name, what in _UNFINISHED:
            if (self.git_dir / name).exists():
                return what
        if self.run("ls-files", "-u", "-z").stdout:
            return "git left conflicts unresolved in the index (a merge or stash pop by hand)"
        return None

    def text(self, *args: str, **kwargs: object) -> str:
        return self.run(*args, **kwargs).stdout.decode("utf-8", "replace").strip()  # type: ignore[arg-type]

    # refs and objects ------------------------------------------------------------------------------

    def rev(self, name: str) -> str | None:
        """The commit a name points at, or None."""
        done = self.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}", ok=(0, 1, 128)
        )
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, ok=(0, 1)).returncode == 0

    def blob(self, rev: str, path: str) -> bytes | None:
        """A file's bytes at a revision, or None when it is not there."""
        done = self.run("cat-file", "blob", f"{rev}:{path}", ok=(0, 128))
        return done.stdout if done.returncode == 0 else None

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """Many blobs in one process (`cat-file --batch`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode()).stdout
        found: dict[str, bytes] = {}
        at = 0
        for oid in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) < 3 or header[1] != b"blob":
                raise GitError(f"object {oid} is not a blob")
            size = int(header[2])
            found[oid] = out[at : at + size]
            at += size + 1
        return found

    def write_blobs(self, contents: list[bytes]) -> list[str]:
        """Store these contents as blobs with one git process; their ids in order."""
        if not contents:
            return []
        with tempfile.TemporaryDirectory(prefix="reme-blobs-", dir=self.git_dir) as folder:
            names = []
            for number, data in enumerate(contents):
                name = os.path.join(folder, str(number))
                with open(name, "wb") as handle:
                    handle.write(data)
                names.append(name)
            out = self.text(
                "hash-object", "-w", "--no-filters", "--stdin-paths", input="\n".join(names).encode()
            )
        return out.split()

    def tree_entries(self, rev: str, paths: Iterable[str]) -> dict[str, tuple[str, str]]:
        """`path → (mode, blob id)` at a revision for these paths (absent ones left out)."""
        wanted = list(paths)
        if not wanted:
            return {}
        out = self.run(
            "ls-tree", "-z", "--full-tree", rev, "--", *[f":(literal){p}" for p in wanted]
        ).stdout.decode("utf-8", "surrogateescape")
        entries = {}
        for record in filter(None, out.split("\0")):
            meta, path = record.split("\t", 1)
            mode, _kind, oid = meta.split()
            entries[path] = (mode, oid)
        return entries

    def changed_between(self, old: str, new: str) -> list[str]:
        """Paths whose content differs between two commits (renames as delete + add)."""
        out = self.run("diff", "--name-only", "-z", "--no-renames", old, new).stdout.decode(
            "utf-8", "surrogateescape"
        )
        return [path for path in out.split("\0") if path]

    def worktree_changes(self) -> list[str]:
        """Paths changed in the worktree since HEAD, untracked ones included (the .gitignore applies)."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames").stdout
        paths = []
        for record in out.decode("utf-8", "surrogateescape").split("\0"):
            if len(record) > 3:
                paths.append(record[3:])
        return paths
