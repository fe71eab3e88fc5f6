"""Readable text of a resource file, or the reason it has none.

Text formats are decoded as UTF-8; HTML is reduced to its visible text; PDF uses its text layer via
pypdf, an optional extra (`pip install 'reme[pdf]'`). Parsing HTML and PDF runs in a child process
with a time and memory limit: a hostile file (a page tree that never ends, nesting that costs
quadratic time, a stream that inflates to gigabytes) costs one skipped resource, never a hung or
exhausted service. Control characters are dropped from every text, so none reaches a model or a card.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import sys
import warnings
from dataclasses import dataclass
from html.parser import HTMLParser

TEXT_FORMATS = ("md", "markdown", "txt", "json", "jsonl", "csv", "yaml", "yml")
HTML_FORMATS = ("html", "htm")
SUPPORTED = (*TEXT_FORMATS, *HTML_FORMATS, "pdf")
PARSED = (*HTML_FORMATS, "pdf")  # read in a child process
CHILD_MEMORY = 1 << 30  # bytes of address space a parsing child may use
_CHILD = "from reme.pipelines.memory.resource_text import child_main; child_main()"
_BREAKS = str.maketrans({"\x0b": "\n", "\x0c": "\n"})
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class Unreadable(ValueError):
    """The file has no text reme can read; the message is the reason.

    `lasting` is False when the cause may be gone next time without the file changing (a missing
    extra, a reader that could not start or was killed from outside), so it is not remembered."""

    def __init__(self, reason: str, *, lasting: bool = True) -> None:
        super().__init__(reason)
        self.lasting = lasting


@dataclass(frozen=True)
class ResourceText:
    """The text read (at most the `limit` asked for) and the length of the whole, None when reading
    stopped at the limit before the end (a long PDF is not read past what will be shown)."""

    kind: str
    text: str
    chars: int | None


class _VisibleText(HTMLParser):
    BLOCKS = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "table",
        "ul",
        "ol",
    }
    HIDDEN = {"script", "style", "noscript", "template", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def clean(text: str) -> str:
    """The text without control characters (tab and line breaks kept) or lone surrogates."""
    return _CONTROL.sub("", text.translate(_BREAKS))


def html_text(markup: str) -> str:
    parser = _VisibleText()
    parser.feed(markup)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def pdf_text(data: bytes, limit: int) -> tuple[str, bool]:
    """(text of the pages, whether every page was read); pages after `limit` characters are not read."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError
    except ImportError:
        raise Unreadable(
            "PDF text needs the optional extra: pip install 'reme[pdf]'", lasting=False
        ) from None
    pages: list[str] = []
    size = 0
    try:
        reader = PdfReader(io.BytesIO(data))
        for number, page in enumerate(reader.pages, 1):
            if text := clean(page.extract_text() or "").strip():
                pages.append(f"[page {number}]\n{text}")
                size += len(pages[-1]) + 2
            if size > limit:
                return "\n\n".join(pages), number == len(reader.pages)
    except FileNotDecryptedError:
        raise Unreadable("PDF is encrypted with a password; put an unencrypted copy in its place") from None
    except MemoryError:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files
        raise Unreadable(f"PDF could not be read: {exc}") from None
    if not pages:
        raise Unreadable("PDF has no text layer (scanned images are not read)")
    return "\n\n".join(pages), True


def extract(data: bytes, extension: str, *, limit: int) -> ResourceText:
    """The text of a file's bytes by its extension, cut at `limit` characters; raise Unreadable with the reason.

    This parses in the calling process: for HTML and PDF use `text_of`, which bounds time and memory.
    """
    kind = extension.lower().lstrip(".")
    if kind not in SUPPORTED:
        raise Unreadable(f"unsupported format .{kind} (supported: {', '.join(SUPPORTED)})")
    if kind == "pdf":
        text, complete = pdf_text(data, limit)
        return ResourceText(kind, text[:limit], len(text) if complete else None)
    if b"\x00" in data:
        raise Unreadable("binary data, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    text = clean(html_text(text) if kind in HTML_FORMATS else text)
    if not text.strip():
        raise Unreadable("empty: no text to read")
    return ResourceText(kind, text[:limit], len(text))


async def text_of(data: bytes, extension: str, *, limit: int, seconds: float) -> ResourceText:
    """`extract`, with HTML and PDF parsed in a child process that is stopped after `seconds`."""
    kind = extension.lower().lstrip(".")
    if kind not in PARSED:
        return extract(data, kind, limit=limit)
    # The child gets no environment but where reme is: no key or token of the parent is handed on.
    environment = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    if "SYSTEMROOT" in os.environ:  # Windows cannot start Python without it
        environment["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",
            "-c",
            _CHILD,
            kind,
            str(limit),
            str(CHILD_MEMORY),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
        )
    except OSError as exc:
        raise Unreadable(
            f"the {kind} reader could not start ({sys.executable!r}): {exc}", lasting=False
        ) from None
    try:
        out, err = await asyncio.wait_for(child.communicate(data), seconds)
    except TimeoutError:
        raise Unreadable(
            f"reading its {kind} text took over {seconds:g} s and was stopped (a damaged or hostile "
            "file?); convert it to text or Markdown, or raise the step's extract_seconds"
        ) from None
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    return _answer(kind, out, err, child.returncode)


def _answer(kind: str, out: bytes, err: bytes, status: int | None) -> ResourceText:
    """The child's answer, or Unreadable saying how it ended (an exit by a signal, as a shutdown sends,
    is no fault of the file: only a child that failed on its own says something lasting)."""
    try:
        answer = json.loads(out)
    except ValueError:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise Unreadable(
            f"the {kind} reader stopped without an answer (exit status {status}: {clean(last[0])[:300]})",
            lasting=status is not None and status > 0,
        ) from None
    if "unreadable" in answer:
        raise Unreadable(str(answer["unreadable"]), lasting=answer.get("lasting") is not False)
    return ResourceText(kind, str(answer["text"]), answer["chars"])


def child_main() -> None:
    """The child process of `text_of`: bytes on stdin, one JSON answer on stdout."""
    kind, limit, memory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ImportError, ValueError, OSError):  # not on this platform: the time limit still holds
        pass
    logging.disable(logging.CRITICAL)  # pypdf warns once per damaged object: only the answer goes out
    warnings.simplefilter("ignore")
    data = sys.stdin.buffer.read()
    answer: dict[str, object]
    try:
        found = extract(data, kind, limit=limit)
        answer = {"text": found.text, "chars": found.chars}
    except Unreadable as reason:
        answer = {"unreadable": str(reason), "lasting": reason.lasting}
    except MemoryError:
        answer = {"unreadable": f"reading its {kind} text needs more than {memory >> 20} MiB of memory"}
    except RecursionError:
        answer = {"unreadable": f"its {kind} structure is nested too deeply to read"}
    sys.stdout.write(json.dumps(answer))
