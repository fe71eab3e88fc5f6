"""The pipelines' view of the workspace: reme jobs called through `app.run`, failures raised.

Pipelines never touch user files directly, so every write goes through the same path checks, locks
and index updates as any other client.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from reme.app.application import Application

DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


_LOCKS: WeakKeyDictionary[Any, dict[str, asyncio.Lock]] = WeakKeyDictionary()


def keyed_lock(app: Application, key: str) -> asyncio.Lock:
    """One lock per application and key (a session, a resource): runs on the same card take turns."""
    return _LOCKS.setdefault(app, {}).setdefault(key, asyncio.Lock())


class StepFailed(RuntimeError):
    """A job the pipeline depends on failed; the message says which and why."""


async def call(app: Application, job: str, **params: Any) -> Any:
    response = await app.run(job, **params)
    if not response.success:
        raise StepFailed(f"{job} failed: {response.answer}")
    return response


def folder(app: Application, role: str) -> str:
    """The configured folder name of a workspace role (`daily`, `session`, `resource`, ...)."""
    workspace = app.components.get("workspace")
    dirs = getattr(workspace, "dirs", None) or {}
    return str(dirs.get(role, role))


def exists(app: Application, path: str) -> bool:
    return (Path(app.workspace_dir) / path).is_file()


async def load_text(app: Application, path: str) -> tuple[str, str | None]:
    """(content, sha256) of a file, or ("", None) when it does not exist."""
    if not exists(app, path):
        return "", None
    response = await call(app, "load", path=path)
    return str(response.metadata.get("content", response.answer) or ""), response.metadata.get("sha256")


async def save_text(app: Application, path: str, content: str, expected_sha256: str | None) -> None:
    params: dict[str, Any] = {"path": path, "content": content}
    if expected_sha256:
        params["expected_sha256"] = expected_sha256
    await call(app, "save", **params)


async def cards_of_day(app: Application, day: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, front matter) of every card `daily/<day>/*.md`."""
    day_folder = f"{folder(app, 'daily')}/{day}"
    if not (Path(app.workspace_dir) / day_folder).is_dir():
        return []
    listing = await call(app, "list", path=day_folder, extensions=["md"])
    cards = []
    for entry in listing.metadata.get("entries", []):
        if entry.get("type") != "file" or not str(entry["path"]).endswith(".md"):
            continue
        front = await call(app, "frontmatter_read", path=entry["path"])
        cards.append((entry["path"], front.metadata.get("front_matter") or {}))
    return cards


async def find_card(app: Application, day: str, key: str, value: str) -> str | None:
    """The card of `day` whose front matter has `key: value`."""
    for path, front in await cards_of_day(app, day):
        if str(front.get(key, "")) == value:
            return path
    return None


async def daily_days(app: Application) -> list[str]:
    """The dated folders under `daily/`, oldest first."""
    root = Path(app.workspace_dir) / folder(app, "daily")
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and DATE_RE.fullmatch(p.name))
