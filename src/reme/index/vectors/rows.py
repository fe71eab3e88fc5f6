"""The in-memory row store of the vector index: each embedded chunk of the catalog is one row of a
float32 matrix, searched brute force (one matrix-vector product over the rows the filters admit).

Rows are reused as chunks come and go (a dropped chunk's row goes to a free list); the matrix grows
by doubling. Not thread-safe on its own: `VectorIndex` guards it with its lock.
"""

from __future__ import annotations

import numpy as np

from reme.index.search import SearchFilters


class RowStore:
    """Chunk id ↔ row, the matrix, and per row its path and whether it is live."""

    def __init__(self) -> None:
        self.matrix = np.zeros((0, 0), dtype=np.float32)  # re-shaped by `start` once the dimension is known
        self.row_of: dict[str, int] = {}  # chunk id -> matrix row
        self.key_of: dict[str, str] = {}  # chunk id -> cache key of its vector
        self.chunk_at: list[str] = []  # row -> chunk id (stale for free rows)
        self.free: list[int] = []
        self.used = 0  # rows ever handed out (live or free)
        self.alive = np.zeros(0, dtype=bool)
        self._row_path = np.zeros(0, dtype=np.int32)  # row -> index into _paths
        self._paths: list[str] = []
        self._path_ids: dict[str, int] = {}

    def start(self, dimension: int) -> None:
        """Size the (still empty) matrix for the model's dimension."""
        self.matrix = np.zeros((0, dimension), dtype=np.float32)

    @property
    def capacity(self) -> int:
        """Rows allocated (the per-row arrays of the neighbour mix grow to the same)."""
        return int(self.matrix.shape[0])

    def __len__(self) -> int:
        return len(self.row_of)

    def add(self, chunk_id: str, path: str, key: str, vector: np.ndarray) -> int:
        """Place a chunk's vector in a free row or a new one; the row."""
        if self.free:
            row = self.free.pop()
        else:
            row, self.used = self.used, self.used + 1
            self.chunk_at.append(chunk_id)
            if row >= self.capacity:
                grown = max(16, 2 * self.capacity)
                self.matrix = grow(self.matrix, grown)
                self._row_path = grow(self._row_path, grown)
                self.alive = grow(self.alive, grown)
        if path not in self._path_ids:
            self._path_ids[path] = len(self._paths)
            self._paths.append(path)
        self.matrix[row] = vector
        self._row_path[row] = self._path_ids[path]
        self.alive[row] = True
        self.row_of[chunk_id] = row
        self.key_of[chunk_id] = key
        self.chunk_at[row] = chunk_id
        return row

    def drop(self, chunk_id: str) -> int:
        """Free a chunk's row; the row."""
        del self.key_of[chunk_id]
        row = self.row_of.pop(chunk_id)
        self.alive[row] = False
        self.free.append(row)
        return row

    def admitted(self, filters: SearchFilters) -> np.ndarray:
        """Per used row: live and its path admitted by the filters (filters judge the chunk itself)."""
        admitted = self.alive[: self.used]
        if filters != SearchFilters():
            allowed = np.fromiter(map(filters.admits, self._paths), dtype=bool, count=len(self._paths))
            admitted = admitted & allowed[self._row_path[: self.used]]
        return admitted

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The dot product of every used row with the query vector (no copy of the matrix)."""
        return self.matrix[: self.used] @ query


def grow(array: np.ndarray, rows: int, fill: float = 0) -> np.ndarray:
    """A copy of `array` with `rows` rows, the new ones `fill`."""
    grown = np.full((rows, *array.shape[1:]), fill, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
