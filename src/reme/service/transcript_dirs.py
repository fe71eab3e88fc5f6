"""Which files a capture hook may read: agent transcripts only, never any file a hook input names.

A hook's `transcript_path` comes from its JSON input (or the command line); anything that can feed a
hook could otherwise have reme copy `~/.ssh/config` or a project's `.env` into a searchable
workspace. So the path, with every symlink resolved, must lie in Claude Code's transcript folder
(`~/.claude/projects/`, or `$CLAUDE_CONFIG_DIR/projects/`), Codex's session folders
(`~/.codex/sessions/` and `archived_sessions/`, or under `$CODEX_HOME`), or a folder the user names
in `transcript_dirs=` on the hook's command line or in `$REME_TRANSCRIPT_DIRS` (both a list of
folders separated by the system's path separator, `:` on Linux and macOS), and be a regular file.
The hook queues the resolved path; the drain that reads it later refuses it once a symbolic link or a
non-regular file is found there (`reme.app.captures.read_transcript`). See docs/integrations.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ENV_DIRS = "REME_TRANSCRIPT_DIRS"


class NotATranscript(ValueError):
    """A `transcript_path` outside every transcript folder, or not a regular file."""


def transcript_dirs(assigned: Mapping[str, str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The folders transcripts may come from, each resolved (symlinks too), in the order checked. A
    listed folder that is not absolute (after `~`) is left out: it would mean wherever the hook runs."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    claude = env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    folders = [os.path.join(claude, "projects"), os.path.join(codex, "sessions")]
    folders.append(os.path.join(codex, "archived_sessions"))
    for listed in (assigned.get("transcript_dirs"), env.get(ENV_DIRS)):
        named = (os.path.expanduser(folder) for folder in (listed or "").split(os.pathsep) if folder.strip())
        folders += [folder for folder in named if os.path.isabs(folder)]
    return [os.path.realpath(os.path.expanduser(folder)) for folder in folders]


def allowed_transcript(
    path: str, assigned: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> str:
    """`path` with its symlinks resolved, when it lies inside a transcript folder and is no folder, FIFO,
    device or socket; else NotATranscript."""
    resolved = os.path.realpath(os.path.expanduser(path))
    folders = transcript_dirs(assigned, environ)
    if not any(os.path.commonpath([resolved, folder]) == folder for folder in folders):
        raise NotATranscript(
            f"transcript_path {path} is not inside a transcript folder ({', '.join(folders)}); "
            f"add its folder with transcript_dirs= or {ENV_DIRS} if it holds agent transcripts"
        )
    if os.path.exists(resolved) and not os.path.isfile(resolved):  # a FIFO would block the hook
        raise NotATranscript(
            f"transcript_path {path} is not a regular file (a folder, a FIFO, a device or a socket); "
            "give the agent's .jsonl transcript"
        )
    return resolved
