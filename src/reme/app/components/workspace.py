"""The `workspace` component (backend `local`): the workspace folder, its layout and its write locks.

Other areas reach the workspace through it: `root`, `dirs` (role → configured folder name), `metadata_dir`,
`resolve(path, write=..., markdown=...)` for a checked absolute path, and `lock(*paths)` to serialise
writes with the file jobs (also across processes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reme.app.component import Component
from reme.app.registry import register_component
from reme.workspace.layout import CREATED_ON_WRITE, Workspace

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
        missing = [
            name
            for role, name in self.dirs.items()
            if role not in CREATED_ON_WRITE and not (self.root / name).is_dir()
        ]
        if missing:
            return {"status": "error", "root": str(self.root), "missing": missing}
        return {"status": "ok", "root": str(self.root)}


def workspace_of(app: Any) -> Workspace:
    """The configured workspace component's workspace, or the default layout over `app.workspace_dir`."""
    component = app.components.get("workspace")
    if isinstance(component, WorkspaceComponent):
        return component.workspace
    return Workspace(app.workspace_dir)
