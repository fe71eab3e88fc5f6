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

from reme.app.component import Component, Host, Report
from reme.app.registry import register_component
from reme.app.settings import Setting, SettingsTable
from reme.workspace.atomic import sweep_stale_temps
from reme.workspace.layout import CREATED_ON_WRITE, DEFAULT_DIRS, Workspace
from reme.workspace.links import LinkSource, ScanLinks
from reme.workspace.moving import recover_moves
from reme.workspace.transaction import recover as recover_transactions

log = logging.getLogger(__name__)


SETTINGS = SettingsTable(
    Setting(
        "lock_timeout", float, 30.0, "seconds a writer waits for another writer of the same path", minimum=0
    ),
    Setting(
        "dirs",
        dict,
        dict(DEFAULT_DIRS),
        "role -> folder name inside the workspace (roles: "
        + ", ".join(DEFAULT_DIRS)
        + "); journal is created on first write",
    ),
)


@register_component("local")
class WorkspaceComponent(Component):
    kind = "workspace"
    settings_table = SETTINGS

    def __init__(self, app: Host, name: str, *, dirs: dict[str, str], lock_timeout: float) -> None:
        super().__init__(app, name, dirs=dirs, lock_timeout=lock_timeout)
        self.workspace = Workspace(app.workspace_dir, dirs, lock_timeout)
        self.recovered_moves: list[dict[str, Any]] = []  # the latest reports, for health
        self.recovered_transactions: list[dict[str, Any]] = []
        self._links: LinkSource = ScanLinks(self.workspace)  # the index's graph once it runs (`use_links`)

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

    def use_links(self, links: LinkSource) -> None:
        """The link source repairs rewrite links with: the index's graph once the index has started."""
        self._links = links

    async def start(self) -> None:
        """Create the layout, then clean up after a crashed writer: half-done moves, temporary files."""
        self.workspace.ensure_layout()
        # The index starts after this component and reconciles with the files, so no sync is needed here.
        self.recovered_moves = recover_moves(self.workspace, self._links)
        self.recovered_transactions = recover_transactions(self.workspace)
        sweep_stale_temps(self.root)

    async def repair(self) -> None:
        """A one-shot process killed mid-move or mid-transaction while this one runs: finished now, not
        only at the next start (the `health_check` job asks before reading `health()`)."""
        missing = self._missing()
        if missing:
            return  # nothing safe to do in a broken layout; health says what is missing
        recovered = recover_moves(self.workspace, self._links)
        self.recovered_moves = (self.recovered_moves + recovered)[-20:]  # the latest reports
        rolled_back = recover_transactions(self.workspace, self._links)
        self.recovered_transactions = (self.recovered_transactions + rolled_back)[-20:]

    def _missing(self) -> list[str]:
        return [
            name
            for role, name in self.dirs.items()
            if role not in CREATED_ON_WRITE and not (self.root / name).is_dir()
        ]

    def health(self) -> Report:
        missing = self._missing()
        if missing:
            return {"status": "error", "root": str(self.root), "missing": missing}
        health: dict[str, object] = {"status": "ok", "root": str(self.root)}
        if self.recovered_moves:
            health["recovered_moves"] = self.recovered_moves
        if self.recovered_transactions:
            health["recovered_transactions"] = self.recovered_transactions
        failed = [move for move in self.recovered_moves if move["state"] == "failed"]
        if failed:
            health["status"] = "degraded"
            health["reason"] = f"{len(failed)} interrupted move(s) could not be finished; see recovered_moves"
        stuck = [entry for entry in self.recovered_transactions if entry["state"] == "failed"]
        if stuck:
            health["status"] = "degraded"
            health["reason"] = (
                f"{len(stuck)} interrupted transaction(s) could not be rolled back; see recovered_transactions"
            )
        edited = [path for entry in self.recovered_transactions for path in entry.get("conflicts", [])]
        if edited:
            health["status"] = "degraded"
            health["reason"] = (
                f"interrupted transaction(s) left {', '.join(edited)} as edited after the crash "
                "(the rest was rolled back); check them by hand, see recovered_transactions"
            )
        return health


def workspace_of(app: Host) -> Workspace:
    """The configured workspace component's workspace; `Unavailable` naming the config key without one."""
    return app.components.need("workspace", WorkspaceComponent).workspace
