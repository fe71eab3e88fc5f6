"""Hand freed memory back to the operating system after a large file.

Python frees a large file's chunks, but glibc's allocator keeps the pages for reuse, so a
long-running service would stay at its peak size for good (two 16 MiB notes once left it near
1 GB). `malloc_trim` returns them; elsewhere this is a garbage collection only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_memory() -> None:
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
