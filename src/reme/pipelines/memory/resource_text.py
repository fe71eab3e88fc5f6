"""Readable text of a resource file, or the reason it has none.

Text formats are decoded as UTF-8; HTML is reduced to its visible text; PDF uses its text layer via
pypdf, an optional extra (`pip install 'reme[pdf]'`).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser

TEXT_FORMATS = ("md", "markdown", "txt", "json", "jsonl", "csv", "yaml", "yml")
HTML_FORMATS = ("html", "htm")
SUPPORTED = (*TEXT_FORMATS, *HTML_FORMATS, "pdf")


class Unreadable(ValueError):
    """The file has no text reme can read; the message is the reason."""


@dataclass(frozen=True)
class ResourceText:
    kind: str
    text: str


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


def html_text(markup: str) -> str:
    parser = _VisibleText()
    parser.feed(markup)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def pdf_text(data: bytes) -> str:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise Unreadable("PDF text needs the optional extra: pip install 'reme[pdf]'") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for damaged files
        raise Unreadable(f"PDF could not be read: {exc}") from None
    if not any(pages):
        raise Unreadable("PDF has no text layer (scanned images are not read)")
    return "\n\n".join(f"[page {i}]\n{text}" for i, text in enumerate(pages, 1) if text)


def extract(data: bytes, extension: str) -> ResourceText:
    """The text of a file's bytes by its extension; raise Unreadable with the reason."""
    kind = extension.lower().lstrip(".")
    if kind not in SUPPORTED:
        raise Unreadable(f"unsupported format .{kind} (supported: {', '.join(SUPPORTED)})")
    if kind == "pdf":
        return ResourceText(kind, pdf_text(data))
    if b"\x00" in data:
        raise Unreadable("binary data, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    if kind in HTML_FORMATS:
        text = html_text(text)
    if not text.strip():
        raise Unreadable("empty: no text to read")
    return ResourceText(kind, text)
