"""Hand freed memory back to the operating system after a large file.

Python frees a large file's chunks, but glibc's allocator keeps the pages for reuse, so a
long-running service would stay at its peak size for good (two 16 MiB notes once left it near
1 GB). `malloc_trim` returns them; elsewhere this is a garbage collection only.

`malloc_trim` only returns whole free pages, though: after the first large block is freed, glibc
raises its mmap threshold (up to 32 MiB), so later multi-MiB strings (a transcript part, a session
file being rewritten and re-chunked) are carved out of the heap arenas of whichever worker thread
ran them, and the small objects left between them keep those pages. A long-running service pins
the threshold instead (`keep_large_blocks_apart`): every block over 256 KiB gets its own mapping,
returned whole on free.
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


M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
MMAP_THRESHOLD = 256 << 10


def keep_large_blocks_apart() -> None:
    """Serve every allocation over 256 KiB by its own mmap (fixed threshold, no dynamic raise).

    Measured (benchmarks/README.md, "Huge transcript"): three 16 MiB transcripts appended in one
    process left it +54, +105, +93 MiB; with the fixed threshold +25, +22, +22 MiB (caches), same
    speed. A no-op where the C library has no `mallopt`."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = getattr(ctypes.CDLL(name), "mallopt", None) if name else None
    except OSError:
        return
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def release_memory() -> None:
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
