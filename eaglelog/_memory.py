"""Give freed heap memory back to the system between the phases of a large parse.

glibc keeps freed blocks of its heap (and of the worker threads' arenas) for reuse; after the
scan of a gigabyte log that is a few hundred MB the next phase does not reuse, and the peak of
the whole command grows by it.  ``malloc_trim(0)`` returns it (madvise on free pages; about
10 ms).  Elsewhere than glibc this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

_libc = None


def trim() -> None:
    global _libc
    if not sys.platform.startswith("linux"):
        return
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _libc.malloc_trim(0)
    except (OSError, AttributeError):     # not glibc (musl has no malloc_trim)
        _libc = False
