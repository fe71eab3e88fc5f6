"""Helpers of the Studio tests: a workspace with real content, the browser, screenshots.

The browser is Debian's `chromium` (installed by .ci/run) driven by Playwright; Playwright's own
browser downloads are never used. Tests skip, saying why, when either is missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import threading
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import ServiceProcess

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "notes" / "conv-42" / "notes"
if not LOCOMO.is_dir():
    LOCOMO = Path("/work/shared/data/locomo/notes/conv-42/notes")


def _png(width: int = 24, height: int = 16) -> bytes:
    """A small valid PNG (an orange block), enough for the browser to decode."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes([242, 142, 43]) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = _png()
TODAY = datetime.now(UTC).date().isoformat()
# Each payload, if it ran, sets window.__pwned.
XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
XSS_NAME = "<img src=x onerror=window.__pwned=1>.md"


def require_browser() -> Any:
    """The Playwright sync API, or a skip naming what is missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return sync_playwright


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
    )


def screenshot(page: Any, name: str, tmp: Path) -> None:
    """Into $STUDIO_SCREENSHOTS (docs/images/studio when refreshing the docs), else the test's tmp."""
    folder = Path(os.environ.get("STUDIO_SCREENSHOTS") or tmp)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def put(ws: Path, path: str, text: str | bytes) -> None:
    target = ws / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")


def build_workspace(ws: Path) -> None:
    """Day notes (LoCoMo's when present), digest nodes with every link form, an image, an agenda, payloads."""
    if LOCOMO.is_dir():
        for note in sorted(LOCOMO.glob("*.md")):
            put(ws, f"daily/{note.name}", note.read_text(encoding="utf-8"))
    else:
        for day in range(1, 21):
            put(ws, f"daily/2022-08-{day:02d}.md", f"# 2022-08-{day:02d}\n\n- Joanna wrote about her dog.\n")
    put(ws, "resource/2026-06-01/chart.png", PNG)
    put(
        ws,
        "digest/wiki/writing.md",
        "---\nname: Writing\ndescription: Why Joanna writes.\nsource: '[[daily/2022-08-14.md]]'\n---\n"
        "# Writing\n\nJoanna keeps a **journal**; see [[desserts]] and [[digest/people/nate.md#Recipes|Nate's recipes]].\n\n"
        "- related:: [[digest/people/joanna.md]]\n- [[no-such-note]] is not written yet.\n\n"
        "![[resource/2026-06-01/chart.png]]\n\n## Sources\n- derived_from:: [[daily/2022-08-14.md]] — the day she said it.\n",
    )
    put(
        ws,
        "digest/wiki/desserts.md",
        "---\nname: Dairy-free desserts\n---\n# Desserts\n\nNate makes coconut milk ice cream. Back to [[writing]].\n",
    )
    put(
        ws,
        "digest/people/nate.md",
        "# Nate\n\n## Recipes\nCoconut milk ice cream [friend:: [[digest/people/joanna.md]]].\n",
    )
    put(ws, "digest/people/joanna.md", "---\nname: Joanna\n---\n# Joanna\n\nWrites; friends with [[nate]].\n")
    put(
        ws,
        f"daily/{TODAY}/interests.yaml",
        f"date: {TODAY}\ntopics:\n  - title: Coconut ice cream recipe\n    reason: Nate offered to share it.\n"
        "    evidence: I can share the recipe with you\n    keywords: [recipe]\n    paths: [digest/wiki/desserts.md]\n",
    )
    # Longer than one page of the read job (10,000 characters): the note view reads on by request.
    put(
        ws,
        "digest/wiki/long.md",
        "# Long\n\n" + "".join(f"- line {i}: {'words ' * 8}\n" for i in range(1, 601)),
    )
    # Untrusted content: every place a note can carry text Studio shows.
    put(
        ws,
        "digest/wiki/payload.md",
        f"---\nname: '{XSS}'\ndescription: '{XSS}'\nnote: '<svg onload=window.__pwned=1>'\n---\n"
        f"# Title {XSS}\n\nBody {XSS} [click](javascript:window.__pwned=1) ![x](javascript:window.__pwned=1)\n\n"
        '[[<img src=x onerror=window.__pwned=1>]] <a href="javascript:window.__pwned=1">a</a>\n',
    )
    put(ws, f"digest/wiki/{XSS_NAME}", f"# {XSS}\n\nA note whose file name is a payload.\n")


LINKS = """() => [...document.querySelectorAll(".note-body a")].map((a) => [a.textContent, a.getAttribute("href")])"""


def show(page: Any, service: ServiceProcess, path: str, text: str) -> Any:
    """Write `text` to `path` through the write job (its links are indexed at once) and open its view."""
    reply = httpx.post(f"{service.url}/write", json={"path": path, "content": text}, timeout=30).json()
    assert reply["success"], reply["answer"]
    page.goto(f"{service.url}/studio#/note/{path.replace('/', '%2F')}")
    page.wait_for_selector(".note-body", state="attached", timeout=10_000)
    return page.locator(".note-body")


def outlinks(service: ServiceProcess, path: str) -> set[str]:
    """The targets the index holds as links of `path`."""
    reply = httpx.post(
        f"{service.url}/traverse", json={"path": path, "depth": 1, "direction": "forward"}, timeout=30
    ).json()
    assert reply["success"], reply["answer"]
    return {edge["target"] for edge in reply["metadata"]["edges"] if edge["source"] == path}


def snapshot(ws: Path, *folders: str) -> dict[str, str]:
    """sha256 of every file under `folders` of the workspace."""
    return {
        str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in folders
        for p in sorted((ws / folder).rglob("*"))
        if p.is_file()
    }


class EventListener:
    """Reads a running service's `/studio/events` stream in a thread, holding every chunk it got."""

    def __init__(self, url: str, timeout: float = 30) -> None:
        self.got: list[bytes] = []
        self._thread = threading.Thread(target=self._listen, args=(url, timeout), daemon=True)
        self._thread.start()

    def _listen(self, url: str, timeout: float) -> None:
        try:
            with httpx.stream("GET", f"{url}/studio/events", timeout=timeout) as stream:
                for chunk in stream.iter_bytes():
                    self.got.append(chunk)
        except httpx.HTTPError:
            pass

    def text(self) -> bytes:
        return b"".join(self.got)

    def wait_open(self, deadline: float) -> None:
        """Until the stream's first bytes, then half a second more: the watcher starts with the first stream."""
        while not self.got and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)

    def wait_for(self, needle: bytes, deadline: float) -> bool:
        while needle not in self.text() and time.monotonic() < deadline:
            time.sleep(0.05)
        return needle in self.text()

    def join(self, timeout: float = 5) -> None:
        self._thread.join(timeout)
