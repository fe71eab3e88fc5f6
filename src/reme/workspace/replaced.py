"""Previous versions of files that `write` replaced: an overwrite is never silent nor unrecoverable.

Before `write` replaces an existing file with different text, the old bytes are kept at
`journal/replaced/<path>/<UTC time>.<ext>` (one folder per replaced file, its versions sorted by
time; `journal/` is reme's own record and is never indexed). The newest `KEEP_VERSIONS` of each
file are kept, so repeated rewrites cost a bounded amount of disk.
"""

from __future__ import annotations

import posixpath
import re
from datetime import UTC, datetime

from reme.workspace.atomic import atomic_write
from reme.workspace.layout import Workspace

FOLDER = "replaced"
KEEP_VERSIONS = 10
_VERSION_NAME = re.compile(r"\d{8}T\d{6}\.\d{6}Z")  # the stamp `keep_previous` names a version by


def versions_folder(ws: Workspace, relative: str) -> str:
    """`journal/replaced/<relative>`: where the earlier versions of `relative` are kept."""
    return f"{ws.folder('journal')}/{FOLDER}/{relative}"


def keep_previous(ws: Workspace, relative: str, old: bytes) -> str:
    """Save `old` (the text `relative` held) as its newest earlier version; the saved path.

    The caller holds the lock of `relative`; versions of one file are written under that lock.
    """
    folder = versions_folder(ws, relative)
    ext = posixpath.splitext(relative)[1]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    kept = ws.check(f"{folder}/{stamp}{ext}", write=True)
    atomic_write(ws.absolute(kept, write=True), old, ws.root)
    _prune(ws, folder)
    return kept


def _prune(ws: Workspace, folder: str) -> None:
    """Keep the newest KEEP_VERSIONS versions (names sort by time); any other file there (one moved in
    by hand or by a job) is not a version and is never deleted."""
    versions = sorted(p for p in ws.absolute(folder).iterdir() if p.is_file() and _VERSION_NAME.match(p.name))
    for stale in versions[:-KEEP_VERSIONS]:
        stale.unlink(missing_ok=True)
