"""File names for cards chosen from titles: readable, safe on every platform, stable."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_UNSAFE = re.compile(r'[<>:"/\\|?*#\[\]^\x00-\x1f]+')
_SPACES = re.compile(r"[\s_]+")
_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}
MAX_STEM = 80


def slugify(title: str) -> str:
    """`Trip to Kyoto: plan` → `trip-to-kyoto-plan`; letters of every script are kept."""
    text = unicodedata.normalize("NFC", title).strip().lower()
    text = _SPACES.sub("-", _UNSAFE.sub(" ", text))
    text = re.sub(r"-{2,}", "-", text).strip("-. ")[:MAX_STEM].strip("-. ")
    return "" if text in _WINDOWS_RESERVED else text


def short_hash(text: str, length: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]
