"""Steps of `auto_resource` and the background `resource_watch_loop`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from reme.app.jobs import JobContext, Response
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.pipelines.memory.auto_resource import ResourceLimits, auto_resource, check_resource_path
from reme.pipelines.memory.resource_text import SUPPORTED
from reme.pipelines.port import MemoryPort

if TYPE_CHECKING:
    from watchfiles import Change

log = logging.getLogger(__name__)


@register_step("auto_resource")
async def auto_resource_step(
    ctx: JobContext, max_bytes: int = 5_000_000, max_chars: int = 60_000, extract_seconds: float = 60.0
) -> None:
    try:
        report = await auto_resource(
            AppPort(ctx.app),
            paths=ctx.params["paths"],
            deleted=ctx.params["deleted"],
            limits=ResourceLimits(int(max_bytes), int(max_chars), float(extract_seconds)),
            add_usage=ctx.add_usage,
        )
    except ReMeError as failure:
        raise ReMeError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    metadata = {**report.metadata(), "usage": dict(ctx.usage)}
    if report.failed:
        raise ReMeError(report.answer(), metadata)
    ctx.response.answer = report.answer()
    ctx.response.metadata.update(metadata)


@register_step("resource_watch")
async def resource_watch_step(
    ctx: JobContext, debounce_ms: int = 800, scan_on_start: bool = True, force_polling: bool = False
) -> None:
    """Run `auto_resource` for each batch of changes under `resource/` until cancelled."""
    from watchfiles import Change, awatch

    app = ctx.app
    port = AppPort(app)
    root_name = port.folder("resource")
    root = Path(app.workspace_dir) / root_name
    root.mkdir(parents=True, exist_ok=True)
    base = root.resolve()

    def wanted(change: Change, path: str) -> bool:
        # New folders pass too: files written into them before the watch reaches them are found by a scan.
        return supported(Path(path)) or (change == Change.added and Path(path).is_dir())

    one_at_a_time = asyncio.Lock()

    async def run(**params: object) -> None:
        async with one_at_a_time:
            _log_outcome(await app.run("auto_resource", **params))

    # The scan runs beside the watcher, so changes made while it runs are not missed.
    scan = asyncio.create_task(run()) if scan_on_start else None
    try:
        async for changes in awatch(
            root, watch_filter=wanted, debounce=debounce_ms, force_polling=force_polling, recursive=True
        ):
            paths, deleted = (
                [p for p in batch if _acceptable(port, p)] for batch in split_batch(changes, base, root_name)
            )
            if paths or deleted:
                await run(paths=paths, deleted=deleted)
        if scan is not None:
            await scan
    finally:
        if scan is not None and not scan.done():
            scan.cancel()


def supported(path: Path) -> bool:
    return path.suffix.lstrip(".").lower() in SUPPORTED and not path.name.startswith(".")


def split_batch(
    changes: Iterable[tuple[Change, str]], base: Path, root_name: str
) -> tuple[list[str], list[str]]:
    """(added or modified, deleted) workspace paths of a watch batch; new folders are scanned."""
    from watchfiles import Change

    found = [(change, Path(absolute)) for change, absolute in changes]
    for _change, absolute in list(found):
        if absolute.is_dir():
            found += [(Change.added, f) for f in sorted(absolute.rglob("*")) if f.is_file() and supported(f)]
    paths: dict[str, None] = {}
    deleted: dict[str, None] = {}
    for change, absolute in found:
        try:
            relative = f"{root_name}/{absolute.resolve().relative_to(base).as_posix()}"
        except ValueError:
            continue
        if change == Change.deleted and not absolute.exists():
            deleted[relative] = None
            paths.pop(relative, None)
        elif not absolute.is_dir():
            paths[relative] = None
            deleted.pop(relative, None)
    return list(paths), list(deleted)


def _acceptable(port: MemoryPort, path: str) -> bool:
    """Whether the workspace accepts this name; one badly named file must not fail its whole batch."""
    try:
        check_resource_path(port, path)
    except ValueError as refused:
        log.warning("resource_watch: skipped %s", refused)
        return False
    return True


def _log_outcome(response: Response) -> None:
    if response.success:
        log.info("auto_resource: %s", response.answer)
    else:
        log.warning("auto_resource: %s", response.answer)
