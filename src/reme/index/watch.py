"""Live indexing: watch the indexed folders and sync changed paths in batches.

watchfiles groups a burst of events (an editor's save, a dream run touching many notes) into one
set; each set becomes one `sync_paths` call, so a burst costs one engine commit. Events for a
folder (a moved or deleted directory) are passed on as folder paths and expanded by the indexer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path

from watchfiles import Change, awatch


def _relevant(change: Change, raw_path: str) -> bool:
    """Skip hidden files (atomic-write temporaries, editor swap files) and backups."""
    name = Path(raw_path).name
    return not name.startswith(".") and not name.endswith("~")


async def watch_paths(
    root: Path,
    folders: Iterable[str],
    on_changes: Callable[[list[str]], object],
    *,
    debounce_ms: int = 200,
    stop_event: asyncio.Event | None = None,
    ignore: Callable[[str], bool] | None = None,
) -> None:
    """Call `on_changes(workspace-relative paths)` (in a worker thread) for each burst of changes.

    `ignore(relative path)` drops events the index never wants (the index's own `metadata/` writes
    when the whole workspace is watched)."""
    root = root.resolve()
    roots = []
    for folder in folders:
        path = root / folder if folder else root
        path.mkdir(parents=True, exist_ok=True)
        roots.append(path)
    async for changes in awatch(
        *roots,
        watch_filter=_relevant,
        debounce=debounce_ms,
        step=50,
        stop_event=stop_event,
        recursive=True,
    ):
        paths = sorted({Path(raw).relative_to(root).as_posix() for _, raw in changes})
        if ignore is not None:
            paths = [path for path in paths if not ignore(path)]
        if paths:
            await asyncio.to_thread(on_changes, paths)
