"""What `IndexService`'s intent methods answer: typed values, so callers never read dicts back."""

from __future__ import annotations

from dataclasses import dataclass

from reme.index.progress import ProgressState
from reme.index.sync import SyncReport


@dataclass(frozen=True)
class Readiness:
    """Whether the index has caught up with the files in this process, and how far it has got if not."""

    ready: bool
    progress: ProgressState

    def annotate(self, answer: str) -> str:
        """The answer, with a note first when the index is still catching up (results may be incomplete)."""
        return answer if self.ready else f"{self.progress.note()}\n{answer}"


@dataclass(frozen=True)
class Freshness:
    """What may keep results a moment behind: index writes in flight, chunks not embedded yet, or
    the vector branch failing (`vector_error`, keyword results still stand)."""

    pending_writes: int
    vectors_on: bool
    vectors_pending: int = 0
    vector_error: str | None = None  # "Type: message", for metadata
    vector_error_reason: str = ""  # the message alone, for the answer


@dataclass(frozen=True)
class RebuiltVectors:
    embedded: int  # computed by this rebuild (the rest came from the cache)
    total: int
    pending: int
    pruned: int


@dataclass(frozen=True)
class RebuildReport:
    """What `rebuild` did: the files, the catalog's counts after it, and the vectors when on."""

    sync: SyncReport
    files: int
    chunks: int
    links: int
    vectors: RebuiltVectors | None


@dataclass(frozen=True)
class Overview:
    """The index at a glance (for `reme doctor`): its size, its tokenizer, whether settings changed
    since it was built (a rebuild is due), and how many files it is behind on."""

    files: int
    chunks: int
    tokenizer: str
    rebuild_due: bool
    added: int
    changed: int
    gone: int
