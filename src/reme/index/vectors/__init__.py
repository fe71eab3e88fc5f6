"""The vector index (docs/spec.md §5.2): a cache of chunk embeddings in `metadata/vectors.sqlite3`,
searched brute force in memory. numpy is imported only here, and this package only when an
embedder is configured. One module per job:

- `cache`: the persistent `key -> vector` cache, stamped with the model, shared by every process;
- `queue`: the chunks still waiting for a vector, and embedding a batch (bisecting rejections);
- `rows`: the in-memory matrix, one row per embedded chunk, reused as chunks come and go;
- `mix`: the neighbour context mixed into each chunk's ranking, kept up to date incrementally;
- `breaker`: the circuit breaker that pauses query embedding after a failure;
- `index`: `VectorIndex`, which follows the catalog and puts these together for search.
"""

from reme.index.vectors.cache import VectorCache
from reme.index.vectors.index import VectorIndex

__all__ = ["VectorCache", "VectorIndex"]
