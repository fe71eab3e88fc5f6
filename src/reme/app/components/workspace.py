"""The `workspace` component (backend `local`): the workspace folder, its layout and its write locks.

Other areas reach the workspace through it: `root`, `dirs` (role → configured folder name), `metadata_dir`,
`resolve(path, write=..., markdown=...)` for a checked absolute path, and `lock(*paths)` to serialise
writes with the file jobs (also across processes).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.from_thread

from reme.app.component import Component
from reme.app.registry import register_component
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource, ScanLinks

log = logging.getLogger(__name__)


@register_component("local")
class WorkspaceComponent(Component):
    kind = "workspace"

    def __init__(
        self, app: Any, name: str, dirs: dict[str, str] | None = None, lock_timeout: float = 30.0
    ) -> None:
        super().__init__(app, name, dirs=dirs, lock_timeout=lock_timeout)
        self.workspace = Workspace(app.workspace_dir, dirs, lock_timeout)

    @property
    def root(self) -> Path:
        return self.workspace.root

    @property
    def dirs(self) -> dict[str, str]:
        return self.workspace.dirs

    def resolve(
        self, path: str, *, write: bool = False, markdown: bool = False, allow_root: bool = False
    ) -> Path:
        """Absolute path of a user path after every safety check (raises a ValueError subclass)."""
        return self.workspace.resolve(path, write=write, markdown=markdown, allow_root=allow_root)

    @contextmanager
    def lock(self, *paths: str) -> Iterator[None]:
        with self.workspace.lock(*paths):
            yield

    async def start(self) -> None:
        self.workspace.ensure_layout()

    def health(self) -> dict[str, Any]:
        missing = [name for name in self.dirs.values() if not (self.root / name).is_dir()]
        if missing:
            return {"status": "error", "root": str(self.root), "missing": missing}
        return {"status": "ok", "root": str(self.root)}


def workspace_of(app: Any) -> Workspace:
    """The configured workspace component's workspace, or the default layout over `app.workspace_dir`."""
    component = app.components.get("workspace")
    if isinstance(component, WorkspaceComponent):
        return component.workspace
    return Workspace(app.workspace_dir)


class IndexLinks:
    """The index component seen as a `LinkSource`, from a job's worker thread (sync or async methods)."""

    def __init__(self, index: Any, fallback: ScanLinks) -> None:
        self.index = index
        self.fallback = fallback

    def inbound(self, path: str) -> list[dict[str, str]]:
        """The graph's answer; a scan of the files when the index cannot give one (moves stay correct)."""
        try:
            entries = _call(self.index.inbound, path)
        except Exception:
            log.warning("index inbound(%r) failed; scanning the workspace instead", path, exc_info=True)
            return self.fallback.inbound(path)
        return [
            {
                "source_path": entry["source_path"],
                "target_path": entry["target_path"],
                "resolved_path": entry.get("resolved_path", entry["target_path"]),
            }
            for entry in entries
        ]

    def ending_with(self, suffix: str) -> list[str]:
        """The index's catalogued files ending like a short link; the scan's answer if it fails."""
        try:
            return list(_call(self.index.ending_with, suffix))
        except Exception:
            log.warning("index ending_with(%r) failed; scanning the workspace instead", suffix, exc_info=True)
            return self.fallback.ending_with(suffix)

    def sync_paths(self, paths: list[str]) -> None:
        """Best effort: the file is already written, so an index failure is logged, not raised."""
        try:
            _call(self.index.sync_paths, list(paths))
        except Exception:
            log.warning("index sync of %s failed; it will catch up on its next sync", paths, exc_info=True)


def link_source(app: Any) -> LinkSource:
    """The index's link graph when an `index` component runs, else a scan of the workspace."""
    index = app.components.get("index")
    scan = ScanLinks(workspace_of(app))
    if index is not None and all(hasattr(index, name) for name in ("inbound", "sync_paths", "ending_with")):
        return IndexLinks(index, scan)
    return scan


def _call(function: Any, *args: Any) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return anyio.from_thread.run(wait)
    return result
