"""Neighbour context for the vector index (docs/spec.md §5.2): a chunk is ranked by
`normalise(v + context·(v_prev + v_next))`, where v_prev / v_next are the vectors of the chunks just
before / after it in the same file (0 when there is none or it has no vector yet).

The mix is derived from the cached vectors, never embedded. The neighbour links follow the
catalog, so an edit re-mixes the chunks around it. It is kept up to date incrementally: a change
re-mixes only the rows it touches (the changed chunks and their neighbours), so a search during
background embedding does not redo every row. Scores mix linearly (mixed·q = s + context·(s_prev +
s_next)), so a query costs one extra pass over the scores, never a second matrix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from reme.index.vectors.rows import RowStore, grow

REMIX_FULL_FRACTION = 0.25  # re-mix every row once more than this share of them is touched
Links = tuple[str | None, str | None]  # (previous, next) chunk id in the same file


class NeighbourMix:
    """Per row of `rows`: the rows of its previous / next chunk and the inverse norm of its mixed
    vector; guarded by the `VectorIndex` lock like the row store."""

    def __init__(self, context: float, rows: RowStore) -> None:
        self.context = context
        self.rows = rows
        self.links: dict[str, Links] = {}  # chunk id -> (previous, next) in its file
        # per row, grown with the matrix: -1 for none, no vector or a free row; inverse 0 for a free row
        self.prev = np.zeros(0, dtype=np.int64)
        self.next = np.zeros(0, dtype=np.int64)
        self.inverse = np.zeros(0, dtype=np.float32)
        self.changed: set[str] | None = None  # chunk ids changed since the last mix; None: every row

    def follow(self, order: Sequence[tuple[str, str]], replaced: Iterable[str] | None = None) -> None:
        """New links from the catalog's (chunk id, path) rows in file order: every chunk's, or when
        `replaced` (the old chunk ids of the files in `order`) is given, only those files'. A chunk
        whose links changed (moved, edited around) is re-mixed."""
        links = neighbours(order)
        old = self.links
        if self.changed is not None:
            self.changed.update(c for c, link in links.items() if old.get(c) != link)
        if replaced is None:
            self.links = links
            return
        for chunk_id in replaced:
            old.pop(chunk_id, None)
        old.update(links)

    def placed(self, chunk_id: str) -> None:
        """A chunk got a row (its vector arrived): size the arrays, re-mix it and its neighbours."""
        capacity = self.rows.capacity
        if self.prev.shape[0] < capacity:
            self.prev = grow(self.prev, capacity, fill=-1)
            self.next = grow(self.next, capacity, fill=-1)
            self.inverse = grow(self.inverse, capacity)
        if self.changed is not None:
            self.changed.add(chunk_id)

    def freed(self, row: int) -> None:
        """A reused row starts unmixed; the rows that pointed here changed links, so `follow` marks them."""
        self.prev[row] = self.next[row] = -1
        self.inverse[row] = 0.0

    def current(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The per-row (previous, next, inverse norm) arrays, brought up to date.

        Only the rows the changes since the last call touch are re-mixed, every row when they are
        many (a re-index, the first search) or unknown. The arrays returned are views of the mix's
        own, valid until the next change."""
        touched = None if self.changed is None else self._touched(self.changed)
        if touched is None or len(touched) > REMIX_FULL_FRACTION * len(self.rows):
            self.mix_all()
        elif touched:
            self.mix_some(np.fromiter(touched, dtype=np.int64, count=len(touched)))
        self.changed = set()
        used = self.rows.used
        return self.prev[:used], self.next[:used], self.inverse[:used]

    def _touched(self, chunk_ids: set[str]) -> set[int]:
        """The rows whose mix may have changed: the changed chunks' own rows and their neighbours'
        (whose previous / next chunk got a vector or a new row). Dropped chunks are not among
        them: their rows were reset, and their old neighbours' links changed."""
        row_of = self.rows.row_of
        touched: set[int] = set()
        for chunk_id in chunk_ids:
            for linked in (chunk_id, *self.links.get(chunk_id, ())):
                if linked is not None and linked in row_of:
                    touched.add(row_of[linked])
        return touched

    def mix_all(self) -> None:
        """Re-mix every row (free rows: no neighbours, inverse 0)."""
        self.prev[:] = -1
        self.next[:] = -1
        self.inverse[:] = 0.0
        self.mix_some(np.flatnonzero(self.rows.alive[: self.rows.used]))

    def mix_some(self, rows: np.ndarray) -> None:
        """Re-link and re-normalise these live rows from the links and the matrix."""
        ids, links, found, matrix = self.rows.chunk_at, self.links, self.rows.row_of, self.rows.matrix
        befores, afters, none = [], [], (None, None)
        for row in rows.tolist():
            before, after = links.get(ids[row], none)
            befores.append(-1 if before is None else found.get(before, -1))  # -1 also: no vector yet
            afters.append(-1 if after is None else found.get(after, -1))
        self.prev[rows], self.next[rows] = befores, afters
        for start in range(0, len(rows), 4096):  # bounded temporaries
            block = rows[start : start + 4096]
            mixed = matrix[block]  # a copy (fancy indexing)
            for side in (self.prev[block], self.next[block]):
                has = side >= 0
                mixed[has] += self.context * matrix[side[has]]
            norms = np.linalg.norm(mixed, axis=1)
            self.inverse[block] = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)

    def mixed(self, scores: np.ndarray) -> np.ndarray:
        """Own cosines -> cosines of the neighbour-mixed vectors."""
        prev, nxt, inverse = self.current()
        mixed = scores.copy()
        for side in (prev, nxt):
            has = side >= 0
            mixed[has] += self.context * scores[side[has]]
        return mixed * inverse


def neighbours(order: Sequence[tuple[str, str]]) -> dict[str, Links]:
    """(chunk id, path) rows in file order -> each chunk's previous and next chunk in the same file."""
    found: dict[str, Links] = {}
    for i, (chunk_id, path) in enumerate(order):
        before = order[i - 1][0] if i > 0 and order[i - 1][1] == path else None
        after = order[i + 1][0] if i + 1 < len(order) and order[i + 1][1] == path else None
        found[chunk_id] = (before, after)
    return found
