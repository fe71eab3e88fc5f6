"""Daily cards as pipelines find them: the cards of a day, a card by a front-matter key, the dated days."""

from __future__ import annotations

from reme.jsontypes import JSONObject
from reme.pipelines.port import MemoryPort
from reme.workspace.dates import is_date


async def cards_of_day(port: MemoryPort, day: str) -> list[tuple[str, JSONObject]]:
    """(path, front matter) of every card `daily/<day>/*.md`."""
    entries = await port.list_files(f"{port.folder('daily')}/{day}", extensions=(".md",))
    return [(entry.path, await port.front_matter(entry.path)) for entry in entries]


async def find_card(port: MemoryPort, day: str, key: str, value: str) -> str | None:
    """The card of `day` whose front matter has `key: value`."""
    for path, front in await cards_of_day(port, day):
        if str(front.get(key, "")) == value:
            return path
    return None


async def daily_days(port: MemoryPort) -> list[str]:
    """The dated folders under `daily/`, oldest first."""
    return [name for name in await port.list_dirs(port.folder("daily")) if is_date(name)]
