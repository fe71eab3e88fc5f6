"""File names for cards chosen from titles: readable, safe on every platform, stable."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from reme.workspace.paths import check_segment

_UNSAFE = re.compile(r'[<>:"/\\|?*#\[\]^\x00-\x1f\x7f-\x9f]+')
_SPACES = re.compile(r"[\s_]+")
MAX_STEM = 80


def slugify(title: str) -> str:
    """`Trip to Kyoto: plan` → `trip-to-kyoto-plan`; letters of every script are kept.

    "" when the workspace would refuse the name (a Windows device name such as `con.plan`).
    """
    text = unicodedata.normalize("NFC", title).strip().lower()
    text = _SPACES.sub("-", _UNSAFE.sub(" ", text))
    text = re.sub(r"-{2,}", "-", text).strip("-. ")[:MAX_STEM].strip("-. ")
    try:
        check_segment(f"{text}.md")
    except ValueError:
        return ""
    return text


def short_hash(text: str, length: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]
