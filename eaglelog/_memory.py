"""Give freed heap memory back to the system between the phases of a large parse.

glibc keeps freed blocks of its heap (and of the worker threads' arenas) for reuse; after the
scan of a gigabyte log that is a few hundred MB the next phase does not reuse, and the peak of
the whole command grows by it.  ``malloc_trim(0)`` returns it (madvise on free pages; about
10 ms).  ``tune()`` is the other side (see there).  Elsewhere than glibc both do nothing.
"""
from __future__ import annotations

import ctypes
import sys

_libc = None
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3     # mallopt parameters (malloc.h)
MMAP_THRESHOLD = 64 << 20     # blocks below this come from the heap, and are reused there
TRIM_THRESHOLD = 256 << 20    # free heap kept for reuse (trim() still returns it all)


def _glibc():
    global _libc
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            try:
                # (glibc's own name first: ctypes.util's search loads subprocess, a few ms of
                # every command's start)
                lib = _libc_named("libc.so.6")
                lib.malloc_trim, lib.mallopt      # glibc has both; musl neither
                _libc = lib
            except (OSError, AttributeError):
                pass
    return _libc


def _libc_named(name: str):
    try:
        return ctypes.CDLL(name)
    except OSError:
        from ctypes.util import find_library
        return ctypes.CDLL(find_library("c") or name)


def trim() -> None:
    lib = _glibc()
    if lib:
        lib.malloc_trim(0)


def tune() -> None:
    """For the command line process: the analysis of a gigabyte log allocates and frees arrays
    of tens of MB many times over.  glibc maps each such block fresh and unmaps it when freed,
    and every 4 KiB of fresh memory is a page fault (on a virtual machine, up to tens of
    microseconds each).  Serving them from the heap reuses the memory instead: 0.1–0.2 s less
    per GB of log, with the same peak (trim() still returns the free heap after the scan)."""
    lib = _glibc()
    if lib:
        lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        lib.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
