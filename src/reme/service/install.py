"""`reme install claude-code [--project] [--uninstall]`: reme's MCP server, hooks and skill in Claude Code.

What it writes (and prints), with absolute paths for the `reme` executable and the workspace, since
Claude Code starts servers and hooks from folders of its own choosing:

| scope | MCP server (`mcpServers.reme`) | hooks | skill |
|---|---|---|---|
| user (default) | `~/.claude.json` | `~/.claude/settings.json` | `~/.claude/skills/reme-memory/SKILL.md` |
| `--project` | `<project>/.mcp.json` | `<project>/.claude/settings.local.json` | `<project>/.claude/skills/reme-memory/SKILL.md` |

`~/.claude` is `$CLAUDE_CONFIG_DIR` when set (then `.claude.json` lives there too); `home=` and
`project_dir=` point elsewhere (tests, scripted setups). JSON files are merged: other keys and
other hooks stay as they were. A project's hooks go to `settings.local.json`, Claude Code's
personal (git-ignored) settings, since they hold this machine's absolute paths.

Uninstall must put back exactly what was there, so the manifest `reme-install.json` sits beside
the settings file (not in the workspace's `metadata/`, which is derived and may be deleted): for
each file, its bytes before the install (or that it did not exist) and the sha256 after. A file
still as reme left it gets its old bytes back; one edited since (Claude Code rewrites
`~/.claude.json` often) loses only reme's entries.

Each scope has a record of its own, which names its scope: a `--project` install in the home folder
(its `.claude` is the user's config folder) keeps `reme-install-project.json` there, and neither
scope's install or uninstall touches the other's. A file both name (the skill) goes back to what
was there before either install only with the last uninstall.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from reme.jsontypes import JSONObject, JSONValue

PLUGIN = Path(__file__).with_name("claude_code")
SKILL_NAME = "reme-memory"
MANIFEST = "reme-install.json"
PROJECT_MANIFEST = "reme-install-project.json"  # a project's record where its .claude is the user's
SERVER = "reme"
# event → (matcher or None, timeout seconds)
HOOKS: dict[str, tuple[str | None, int]] = {
    "SessionStart": ("startup|resume|clear|compact", 30),
    "Stop": (None, 10),
    "PreCompact": ("manual|auto", 10),
    "SessionEnd": (None, 10),
}
PROMPT_HOOK = ("UserPromptSubmit", (None, 10))
USAGE = (
    "usage: reme install claude-code [--project] [--uninstall] [--prompt-recall] [--read-only]\n"
    "                                [workspace_dir=DIR] [project_dir=DIR] [home=DIR]"
)


class InstallError(Exception):
    """Nothing was written; the message says why."""


class Target:
    """Where one scope's files are; `other`: the other scope's record when it sits in this one's
    folder (a project in the home folder), whose install may name the same files."""

    def __init__(self, project: bool, assigned: dict[str, str]) -> None:
        home = Path(assigned.get("home") or os.environ.get("HOME") or Path.home()).expanduser().absolute()
        config_env = None if "home" in assigned else os.environ.get("CLAUDE_CONFIG_DIR")
        config = Path(config_env).expanduser().absolute() if config_env else home / ".claude"
        self.project = project
        self.scope = "project" if project else "user"
        if project:
            root = Path(assigned.get("project_dir") or os.getcwd()).expanduser().absolute()
            shared = os.path.realpath(root / ".claude") == os.path.realpath(config)
            self.mcp = root / ".mcp.json"
            self.settings = root / ".claude" / "settings.local.json"
            self.skill = root / ".claude" / "skills" / SKILL_NAME / "SKILL.md"
            self.manifest = root / ".claude" / (PROJECT_MANIFEST if shared else MANIFEST)
            self.other: Path | None = config / MANIFEST if shared else None
            default_workspace = root / ".reme"
        else:
            self.mcp = (config if config_env else home) / ".claude.json"
            self.settings = config / "settings.json"
            self.skill = config / "skills" / SKILL_NAME / "SKILL.md"
            self.manifest = config / MANIFEST
            self.other = config / PROJECT_MANIFEST
            default_workspace = home / ".reme"
        chosen = assigned.get("workspace_dir") or os.environ.get("REME_WORKSPACE_DIR")
        self.workspace = Path(chosen).expanduser().absolute() if chosen else default_workspace


def reme_executable() -> str:
    """The absolute path of this installation's `reme` script."""
    beside = Path(sys.executable).with_name("reme")
    found = str(beside) if beside.is_file() else shutil.which("reme")
    if not found:
        raise InstallError("cannot find the `reme` executable (not beside this Python, not on PATH)")
    return str(Path(found).absolute())


def server_entry(reme: str, workspace: Path, read_only: bool) -> JSONObject:
    args: list[JSONValue] = [
        "start",
        "service.backend=mcp",
        "service.transport=stdio",
        f"workspace_dir={workspace}",
    ]
    if read_only:
        args.append("service.mcp_profile=read_only")
    return {"type": "stdio", "command": reme, "args": args, "env": {}}


def hook_groups(reme: str, workspace: Path, prompt_recall: bool) -> dict[str, JSONObject]:
    """One matcher group per event, each running `reme hook <event> workspace_dir=<abs>`."""
    events = dict(HOOKS)
    if prompt_recall:
        events[PROMPT_HOOK[0]] = PROMPT_HOOK[1]
    groups: dict[str, JSONObject] = {}
    for event, (matcher, timeout) in events.items():
        words = [reme, "hook", event, f"workspace_dir={workspace}"]
        if event == PROMPT_HOOK[0]:
            words.append("prompt_recall=true")
        group: JSONObject = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": shlex.join(words), "timeout": timeout}]
        groups[event] = group
    return groups


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _json_of(path: Path, raw: bytes | None) -> JSONObject:
    if raw is None or not raw.strip():
        return {}
    try:
        data: JSONValue = json.loads(raw)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, nothing was written") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was written")
    return data


def _dump(data: JSONObject) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _sha(raw: bytes | None) -> str | None:
    return None if raw is None else hashlib.sha256(raw).hexdigest()


def _write(path: Path, raw: bytes) -> None:
    """Replace the file atomically, through a symlink (a dotfiles link stays a link) and with its
    permissions kept (`~/.claude.json` may hold tokens); a failed write leaves no temporary file."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = real.with_name(f".{real.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        private = 0o666 if mode is None else 0o600  # an existing file's mode is set once written
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, private), "wb") as out:
            out.write(raw)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _missing_dirs(paths: list[Path]) -> list[str]:
    """The folders the install will create (so uninstall can remove them again when empty)."""
    return sorted({str(p) for path in paths for p in path.parents if not p.exists()})


def _encode(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode("ascii")


def _decode(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _with_server(data: JSONObject, entry: JSONObject) -> JSONObject:
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InstallError("mcpServers is not a JSON object; nothing was written")
    return {**data, "mcpServers": {**(servers or {}), SERVER: entry}}


def _reme_group(group: JSONValue, event: str) -> bool:
    """Whether a matcher group only runs `<path>/reme hook <event> ...`: one an earlier install left
    without its record (dotfiles copied, another virtual environment), replaced so it does not run twice."""
    hooks = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(hooks, list) or not hooks:
        return False
    for hook in hooks:
        command = hook.get("command") if isinstance(hook, dict) else None
        try:
            words = shlex.split(command) if isinstance(command, str) else []
        except ValueError:
            return False
        if len(words) < 3 or Path(words[0]).name != "reme" or words[1:3] != ["hook", event]:
            return False
    return True


def _with_hooks(data: JSONObject, groups: dict[str, JSONObject]) -> JSONObject:
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InstallError("hooks is not a JSON object; nothing was written")
    merged: JSONObject = dict(hooks or {})
    for event, group in groups.items():
        existing = merged.get(event) or []
        if not isinstance(existing, list):
            raise InstallError(f"hooks.{event} is not a list; nothing was written")
        merged[event] = [*(g for g in existing if not _reme_group(g, event)), group]
    return {**data, "hooks": merged}


def plan(
    target: Target, reme: str, prompt_recall: bool, read_only: bool
) -> list[tuple[Path, bytes, JSONObject]]:
    """(file, new bytes, what reme adds there) for every file; raises InstallError before any write."""
    entry = server_entry(reme, target.workspace, read_only)
    groups = hook_groups(reme, target.workspace, prompt_recall)
    try:
        mcp = _with_server(_json_of(target.mcp, _read(target.mcp)), entry)
        settings = _with_hooks(_json_of(target.settings, _read(target.settings)), groups)
        _read(target.skill)  # recorded before the install: one that cannot be read is refused here
    except OSError as exc:  # a folder in its place, no permission
        raise InstallError(f"cannot read {exc.filename} ({exc.strerror}); nothing was written") from None
    skill = (PLUGIN / "skills" / SKILL_NAME / "SKILL.md").read_bytes()
    hooks: JSONObject = {**groups}
    return [
        (target.mcp, _dump(mcp), {"mcpServers": {SERVER: entry}}),
        (target.settings, _dump(settings), {"hooks": hooks}),
        (target.skill, skill, {}),
    ]


def install(target: Target, prompt_recall: bool, read_only: bool) -> list[str]:
    """Write everything (after uninstalling an earlier install); the lines to print."""
    reme = reme_executable()
    plan(target, reme, prompt_recall, read_only)  # refuse a broken file before undoing an earlier install
    fresh = _missing_dirs([target.manifest])
    with _one_at_a_time(target, create=True):
        return _install(target, reme, prompt_recall, read_only, fresh)


def _install(target: Target, reme: str, prompt_recall: bool, read_only: bool, fresh: list[str]) -> list[str]:
    """`install` holding the lock; `fresh`: the folders missing before the lock made the record's."""
    lines = _uninstall(target) if target.manifest.exists() else []
    steps = plan(target, reme, prompt_recall, read_only)
    other = _other(target)
    shared = _shared(other)
    files = [Recorded(path, _before(path, shared), _sha(raw), added) for path, raw, added in steps]
    written = [target.manifest, *(path for path, _, _ in steps)]
    created: list[JSONValue] = [*sorted({*fresh, *_missing_dirs(written), *_their_dirs(other, written)})]
    manifest: JSONObject = {
        "version": 1,
        "scope": target.scope,
        "files": [entry.to_json() for entry in files],
        "created_dirs": created,
    }
    path = target.manifest
    try:
        _write(path, _dump(manifest))  # first: a crash mid-install can still be undone
        for path, raw, _ in steps:
            _write(path, raw)
        _hand_over(target, files)
    except OSError as exc:
        earlier = "; the earlier install was removed first" if lines else ""
        raise InstallError(f"cannot write {path} ({exc.strerror or exc}); {_undo(target)}{earlier}") from None
    lines.append(f"wrote {target.manifest}: the install record (--uninstall puts every file back from it)")
    for (path, _, added), entry in zip(steps, files, strict=True):
        added_hooks = added.get("hooks")
        what = ", ".join(f"hooks.{e}" for e in (added_hooks if isinstance(added_hooks, dict) else {})) or (
            "mcpServers.reme (stdio)" if "mcpServers" in added else "the reme-memory skill"
        )
        how = "new file" if entry.before is None else "changed; its other entries kept"
        lines.append(f"wrote {path}: {what} ({how})")
    lines.append(f"workspace: {target.workspace}")
    if target.project:
        lines += gitignore_lines(target, [target.manifest, *(path for path, _, _ in steps)])
    lines.append(f"undo with: reme install claude-code{' --project' if target.project else ''} --uninstall")
    return lines


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _other(target: Target) -> Record | None:
    """The other scope's record beside this one's; None when there is none."""
    return _load(target.other) if target.other else None


def _shared(other: Record | None) -> dict[str, Recorded]:
    """The other scope's recorded files by real path ({} when it has no record beside this one's)."""
    return {} if other is None else {_real(entry.path): entry for entry in other.files}


def _their_dirs(other: Record | None, written: list[Path]) -> set[str]:
    """The folders the other scope's install created that hold files this one writes too: recorded
    here as well, so the last uninstall removes them."""
    parents = {str(folder) for path in written for folder in path.parents}
    return {str(folder) for folder in other.created if str(folder) in parents} if other else set()


def _before(path: Path, shared: dict[str, Recorded]) -> str | None:
    """What to put back at `path` once no install is left: for a file the other scope's install wrote
    too, what was there before that one (its bytes now are reme's)."""
    other = shared.get(_real(path))
    return other.before if other else _encode(_read(path))


def _hand_over(target: Target, files: list[Recorded]) -> None:
    """Give the other scope's record the hash of what this install wrote to a file both name, so the
    last uninstall still knows that file as reme's (a newer reme writes another skill)."""
    record = _other(target)
    if target.other is None or record is None:
        return
    ours = {_real(entry.path): entry.after_sha256 for entry in files}
    updated = [replace(e, after_sha256=ours.get(_real(e.path), e.after_sha256)) for e in record.files]
    if updated != record.files:
        _write(target.other, _dump({**record.data, "files": [entry.to_json() for entry in updated]}))


def _undo(target: Target) -> str:
    """Put back what a failed install wrote; says whether that worked."""
    try:
        if target.manifest.exists():
            _uninstall(target)
    except (OSError, InstallError) as exc:
        return f"putting back what was written failed too ({exc}); run --uninstall once the cause is fixed"
    return "every file this install wrote was put back"


def gitignore_lines(target: Target, written: list[Path]) -> list[str]:
    """A project install holds this machine's absolute paths: the .gitignore lines for what it wrote
    (and the workspace when it lies in the project), less those the project's .gitignore has."""
    root = target.mcp.parent
    wanted = []
    for path in [*written, target.workspace]:
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            continue  # outside the project: not git's business here
        if relative.startswith(".claude/skills/"):
            relative = "/".join(relative.split("/")[:3]) + "/"
        elif path == target.workspace:
            relative += "/"
        wanted.append(f"/{relative}")
    present = _read(root / ".gitignore") or b""
    have = {line.strip() for line in present.decode("utf-8", "replace").splitlines()}
    missing = [line for line in dict.fromkeys(wanted) if line not in have and line.lstrip("/") not in have]
    if not missing:
        return [f"{root / '.gitignore'} already ignores everything it wrote"]
    return [
        f"these files hold this machine's absolute paths; add to {root / '.gitignore'} (the workspace too, "
        "unless the team shares it):",
        *(f"  {line}" for line in missing),
    ]


def _without(data: JSONObject, added: JSONObject) -> JSONObject:
    """`data` minus the entries reme added (only where they are still exactly as written)."""
    out = dict(data)
    servers = out.get("mcpServers")
    for name, entry in _object(added.get("mcpServers")).items():
        if isinstance(servers, dict) and servers.get(name) == entry:
            servers = {k: v for k, v in servers.items() if k != name}
            out["mcpServers"] = servers
            if not servers:
                del out["mcpServers"]
    hooks = out.get("hooks")
    for event, group in _object(added.get("hooks")).items():
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        if isinstance(hooks, dict) and isinstance(groups, list):
            kept = [g for g in groups if g != group]
            hooks = {**hooks, event: kept} if kept else {k: v for k, v in hooks.items() if k != event}
            out["hooks"] = hooks
            if not hooks:
                del out["hooks"]
    return out


def _object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Recorded:
    """One file of the install record: its bytes before (base64, None: it did not exist), the hash of
    what reme wrote, and the entries reme added to it (to remove just those once the user edited it)."""

    path: Path
    before: str | None
    after_sha256: str | None
    added: JSONObject

    def to_json(self) -> JSONObject:
        return {
            "path": str(self.path),
            "before": self.before,
            "after_sha256": self.after_sha256,
            "added": self.added,
        }

    @classmethod
    def from_json(cls, value: JSONValue) -> Recorded:
        """Raises ValueError naming what is wrong with a damaged entry."""
        if not isinstance(value, dict):
            raise ValueError(f"a file entry is {type(value).__name__}, not an object")
        path, before, sha, added = (value.get(k) for k in ("path", "before", "after_sha256", "added"))
        if not isinstance(path, str):
            raise ValueError(f"a file entry has no path: {value!r}")
        if not (isinstance(before, str | None) and isinstance(sha, str | None) and isinstance(added, dict)):
            raise ValueError(f"the entry of {path} lacks before, after_sha256 or added")
        return cls(Path(path), before, sha, added)


def _restore(entry: Recorded) -> str:
    path = entry.path
    now = _read(path)
    before = _decode(entry.before)
    if _sha(now) == entry.after_sha256 or now == before:
        if before is None:
            if now is not None:
                Path(os.path.realpath(path)).unlink()  # what it wrote through a link, not the link
            return f"removed {path}"
        if now != before:
            _write(path, before)
        return f"restored {path}"
    if now is None:
        return f"{path} is gone already"
    if not entry.added:
        return f"left {path}: edited since the install"
    try:
        data = _json_of(path, now)
    except InstallError as exc:
        return f"left {path}: {exc}"
    _write(path, _dump(_without(data, entry.added)))
    return f"removed reme's entries from {path} (edited since the install, the rest kept)"


@contextmanager
def _one_at_a_time(target: Target, create: bool) -> Iterator[None]:
    """Hold an exclusive flock on the record's folder: two installs at once undid and recorded each
    other's half-written files (reme's hooks stayed after uninstall). Uninstall creates no folder.
    A lock on the folder leaves no lock file in the user's config; where there is no flock (Windows)
    installs are not serialised."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    folder = target.manifest.parent
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        handle = os.open(folder, os.O_RDONLY)
    except FileNotFoundError:  # nothing recorded there: uninstall says so
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def uninstall(target: Target) -> list[str]:
    """Put back every file the install record names; the lines to print."""
    with _one_at_a_time(target, create=False):
        return _uninstall(target)


@dataclass(frozen=True)
class Record:
    """An install record as read (`data`, rewritten whole), its files and the folders it created."""

    data: JSONObject
    files: list[Recorded]
    created: list[JSONValue]


def _load(path: Path) -> Record | None:
    """The install record at `path`; None when there is none."""
    raw = _read(path)
    if raw is None:
        return None
    try:
        manifest: JSONValue = json.loads(raw)
        if not isinstance(manifest, dict):
            raise TypeError("the record is no JSON object")
        files, created = manifest["files"], manifest.get("created_dirs", [])
        if not isinstance(files, list) or not isinstance(created, list):
            raise TypeError("files and created_dirs must be lists")
        return Record(manifest, [Recorded.from_json(entry) for entry in files], created)
    except (ValueError, KeyError, TypeError) as exc:
        raise InstallError(f"{path} is damaged ({exc}); nothing was changed") from None


def _uninstall(target: Target) -> list[str]:
    record = _load(target.manifest)
    if record is None:
        raise InstallError(f"no reme install recorded at {target.manifest}; nothing to remove")
    scope = record.data.get("scope", target.scope)  # a record from before scopes were named: this one's
    if scope != target.scope:
        flag = " --project" if scope == "project" else ""
        raise InstallError(
            f"{target.manifest} records the {scope} install, not the {target.scope} one; nothing was "
            f"changed (undo that one with: reme install claude-code{flag} --uninstall, where it was made)"
        )
    shared = _shared(_other(target))
    other = "user" if target.project else "project"
    lines = [
        f"left {entry.path}: the {other} install uses it too"
        if _real(entry.path) in shared
        else _restore(entry)
        for entry in record.files
    ]
    target.manifest.unlink()
    lines.append(f"removed {target.manifest} (the install record)")
    for folder in sorted((str(name) for name in record.created), key=len, reverse=True):
        try:
            os.rmdir(folder)  # only when empty: nothing of anyone else's goes
        except OSError:
            continue
    return lines


def main(args: list[str]) -> int:
    from reme.service.cli_values import split_words

    flags = {a for a in args if a.startswith("--")}
    assigned, bare = split_words([a for a in args if not a.startswith("--")])
    unknown = flags - {"--project", "--uninstall", "--prompt-recall", "--read-only"}
    if bare != ["claude-code"] or unknown or set(assigned) - {"workspace_dir", "project_dir", "home"}:
        print(USAGE, file=sys.stderr)
        return 2
    target = Target("--project" in flags, assigned)
    try:
        if "--uninstall" in flags:
            lines = uninstall(target)
        else:
            lines = install(target, "--prompt-recall" in flags, "--read-only" in flags)
    except InstallError as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a folder it cannot make, a file it cannot put back: the record stays
        print(f"reme: {exc}; run it again once the cause is fixed", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
