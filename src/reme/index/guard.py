"""Notice index work other processes left unfinished, and say when the index cannot be trusted.

Every catalog transaction bumps `meta.generation` (see `store`), so a live service notices with one
cheap read, at its next search or update-loop tick, that some process changed the index. Intents
still open while no writer holds the index lock belong to a writer that died (a one-shot
`reme start job=...` killed mid-way); their paths are re-synced at once instead of being served
half done until the next restart.
"""

from __future__ import annotations

import logging
from typing import Any

from reme.index.sync import Indexer

log = logging.getLogger(__name__)


class IndexGuard:
    """Catches up with foreign index changes and lists what makes the index untrustworthy."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self._seen = -1  # the generation last checked; -1 so the first look checks
        self.last_catch_up: dict[str, Any] = {}

    def catch_up(self) -> dict[str, Any] | None:
        """Finish what a dead writer left in the catalog; returns a report when it repaired something.

        Intents of a live writer (the lock is busy) are left to it and looked at again next time.
        """
        store = self.indexer.store
        generation = store.generation()
        if generation == self._seen:
            return None
        if not store.intents():
            self._seen = generation
            return None
        with self.indexer.writing_if_free() as free:
            if not free:
                return None
            pending = len(store.intents())
            try:
                report = {**self.indexer.repair().to_dict(), "interrupted_writes": pending}
            except Exception as exc:  # reported by `problems` (indexer.failure) and retried next time
                log.warning("finishing interrupted index writes failed", exc_info=True)
                self.last_catch_up = {"error": f"{type(exc).__name__}: {exc}"}
                return None
            self._seen = store.generation()
        log.warning("finished %d index write(s) another process left interrupted", pending)
        self.last_catch_up = report
        return report

    def problems(self) -> list[str]:
        """Reasons the index may answer wrongly now (empty when it agrees with itself)."""
        indexer = self.indexer
        reasons = []
        pending = len(indexer.store.intents())
        if pending:
            reasons.append(f"{pending} index write(s) pending (in progress, or left by a killed writer)")
        catalogued, engine = indexer.store.keyword_doc_total(), indexer.keyword.num_docs
        if catalogued != engine:
            reasons.append(f"catalog and keyword engine disagree ({catalogued} vs {engine} documents)")
        if indexer.failure:
            reasons.append(f"the last index update failed: {indexer.failure}")
        return reasons


def index_content(indexer: Indexer) -> dict[str, Any]:
    """Everything the index holds, in a form equal for equal content: catalog rows and engine
    documents (scores are left out: deleted documents not yet merged away move them, as in Lucene).
    A crash-recovered index must equal a fresh build of the same files."""
    store = indexer.store
    return {
        "files": store.query(
            "SELECT path, mtime_ns, size, name, description, error FROM files ORDER BY path"
        ),
        "chunks": store.query(
            "SELECT chunk_id, path, seq, start_line, end_line, heading_path, text, role FROM chunks ORDER BY chunk_id"
        ),
        "links": store.query(
            "SELECT source, seq, target, predicate, anchor, alias FROM links ORDER BY source, seq"
        ),
        "intents": store.intents(),
        "engine": indexer.keyword.chunk_ids(),
    }
