"""What `reme doctor` asks of the layers below the app, answered as typed values (docs/architecture.md).

The service words the checks (`service/doctor.py`, `service/doctor_sync.py`); the reading happens
here, so the service imports nothing below `reme.app` (the thin-service rule, tests/test_layers.py).
Nothing here changes the workspace except what opening its index repairs and the output mode a
model probe finds to work — as `reme doctor` always did.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from reme.jsontypes import JSONObject
from reme.llm.probe import ModeReport, RoundTrip
from reme.llm.settings import ModelSettings

__all__ = [
    "GitInstall",
    "IndexState",
    "Layout",
    "ModeReport",
    "ModelProbe",
    "ModelSettingsError",
    "RemoteReach",
    "RoleModel",
    "RoundTrip",
    "conflict_files",
    "git_install",
    "index_state",
    "reach_remote",
    "role_models",
    "workspace_layout",
]

# workspace ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    folders: dict[str, str]  # role → folder name: the defaults with the configured names over them
    missing: list[str]  # folder names the workspace lacks (ones created on first write aside), sorted


def workspace_layout(workspace: Path, dirs: Mapping[str, str]) -> Layout:
    """The folders `workspace` should have with the configured `dirs`, and which of them are missing."""
    from reme.workspace.layout import CREATED_ON_WRITE, DEFAULT_DIRS

    folders = {**DEFAULT_DIRS, **dirs}
    missing = sorted(
        name
        for role, name in folders.items()
        if role not in CREATED_ON_WRITE and not (workspace / name).is_dir()
    )
    return Layout(folders, missing)


# index -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexState:
    files: int
    chunks: int
    tokenizer: str
    rebuild_due: bool  # settings changed since the index was built
    added: int  # files the index is behind on: new, changed, deleted
    changed: int
    gone: int


async def index_state(config: JSONObject) -> IndexState | None:
    """The index of `config`'s workspace, opened in this process; None when no index is configured.

    Raises whatever keeps the application or its index from opening (the doctor reports it).
    """
    from reme.app.application import Application
    from reme.app.components.index import index_service

    async with Application(config) as app:
        if "index" not in app.components:
            return None
        seen = index_service(app).overview()
        return IndexState(
            seen.files, seen.chunks, seen.tokenizer, seen.rebuild_due, seen.added, seen.changed, seen.gone
        )


# models ------------------------------------------------------------------------------------------


class ModelSettingsError(ValueError):
    """A model setting is not valid; the message names it (`components.llm.timeout`)."""


@dataclass(frozen=True)
class ModelProbe:
    round_trip: RoundTrip
    modes: list[ModeReport]


@dataclass(frozen=True)
class RoleModel:
    """The model one role (`chat`, `memory`) uses, as configured."""

    role: str
    settings: ModelSettings

    @property
    def scripted(self) -> bool:
        return self.settings.backend == "scripted"

    @property
    def output_mode(self) -> str:
        return self.settings.output_mode

    def missing(self) -> str | None:
        """The first setting that keeps the model from working, None when it is usable."""
        return self.settings.missing()

    def name(self) -> str:
        from reme.llm.probe import endpoint

        settings = self.settings
        return f"{self.role} model {settings.model} ({settings.backend} at {endpoint(settings)})"

    async def unreachable(self) -> str | None:
        """Why the model's server cannot be reached, None when it answers."""
        from reme.llm.probe import unreachable

        return await unreachable(self.settings)

    async def probe(self) -> ModelProbe:
        """A tool round trip and every output mode, probed afresh; when the configured mode fails
        and `prompted` works, `prompted` is remembered for this endpoint (what jobs then use)."""
        from reme.llm import output_modes
        from reme.llm.probe import probe_output_modes, probe_round_trip
        from reme.llm.providers import build_model

        settings = self.settings
        output_modes.forget(settings)  # probe afresh; what works is remembered again below
        async with build_model(settings) as model:
            trip = await probe_round_trip(model, settings)
            reports = await probe_output_modes(model, settings)
        works = [r.mode for r in reports if r.works]
        if works and settings.output_mode not in works and "prompted" in works:
            output_modes.remember(settings, "prompted", f"reme doctor: {settings.output_mode} failed")
        return ModelProbe(trip, reports)


def role_models(component: JSONObject, modes_file: str = "") -> list[RoleModel]:
    """Each role's model once: a memory model that is the chat model is not listed twice (the roles'
    own limits, such as max_tokens, do not make another model). Raises ModelSettingsError."""
    from reme.llm.settings import resolve_settings

    models: list[RoleModel] = []
    seen: list[tuple[str, str, str, str, str]] = []
    for role in ("chat", "memory"):
        try:
            settings = replace(resolve_settings(component, role), modes_file=modes_file)
        except ValueError as exc:
            raise ModelSettingsError(str(exc)) from exc
        same = (settings.backend, settings.base_url, settings.model, settings.api_key, settings.output_mode)
        if same not in seen:
            seen.append(same)
            models.append(RoleModel(role, settings))
    return models


# sync --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitInstall:
    said: str  # `git --version`'s own line
    version: tuple[int, int]  # (0, 0) when the line names none


def git_install() -> GitInstall | None:
    """The git on PATH, None when there is none."""
    from reme.workspace.gitrepo import git_binary

    binary = git_binary()
    if binary is None:
        return None
    said = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    found = re.search(r"(\d+)\.(\d+)", said)
    return GitInstall(said, (int(found.group(1)), int(found.group(2))) if found else (0, 0))


@dataclass(frozen=True)
class RemoteReach:
    url: str | None  # the remote's URL with any credentials redacted; None when there is no remote
    error: str  # why `git ls-remote` failed (redacted), "" when the remote answered


def reach_remote(workspace: Path, timeout: float | None = None) -> RemoteReach:
    """Ask the workspace repository's remote for its branches, with git's prompts off (a missing or
    refused credential is an error, never a prompt) and at most `timeout` seconds (a remote that
    hangs is an error). Raises ReMeError when the repository cannot be used."""
    from reme.errors import ReMeError
    from reme.workspace.gitrepo import Repo, redact_url
    from reme.workspace.gitsync import remote_url

    repo = Repo(workspace)
    url = remote_url(repo)
    if url is None:
        return RemoteReach(None, "")
    try:
        reached = repo.run("ls-remote", "--heads", "origin", ok=range(256), timeout=timeout)
        error = "" if reached.returncode == 0 else reached.stderr.decode("utf-8", "replace").strip()
    except ReMeError as exc:
        error = exc.message
    return RemoteReach(redact_url(url), redact_url(error))


def conflict_files(workspace: Path) -> list[Path]:
    """The conflict copies a sync left beside the notes (`x.conflict-<host>-<time>.md`), outside `.git`."""
    from reme.workspace.gitsync import CONFLICT

    return [p for p in workspace.rglob("*.conflict-*") if CONFLICT.search(p.name) and ".git" not in p.parts]
