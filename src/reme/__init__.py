"""reme: local-first, file-first memory for AI agents.

`import reme` stays light: the application is imported only when `reme.ReMe` is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["ReMe", "ReMeSync", "__version__"]

if TYPE_CHECKING:
    from reme.app.embedded import ReMe, ReMeSync


def __getattr__(name: str) -> Any:
    if name in ("ReMe", "ReMeSync"):
        from reme.app import embedded

        return getattr(embedded, name)
    raise AttributeError(f"module 'reme' has no attribute {name!r}")
