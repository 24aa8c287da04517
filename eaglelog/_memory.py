"""Give freed heap memory back to the system between the phases of a large parse; keep some
back for the report of running out of it.

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


RESERVE = 8 << 20       # kept back under an address-space limit (keep_reserve)
BLAS_BUFFER = 32 << 20  # what OpenBLAS maps at its first LAPACK call (0.3.31, numpy 2.x wheels)


def keep_reserve(size: int = RESERVE) -> bool:
    """For the command line process, under an address-space limit (RLIMIT_AS, ``ulimit -v``):
    what running out of memory needs, taken while there is memory to take it from.

    - BLAS's working buffer: OpenBLAS maps it at its first LAPACK call (the rate fit's
      ``solve``), 32 MiB of address space; when that fails it prints "Memory allocation still
      failed after 10 retries, giving up" and ends the process (no MemoryError to report).  A
      tiny solve here maps it now, when the limit leaves room for it (else it is left alone:
      a command that needs no fit still runs).
    - ``size`` bytes kept back (eaglelog/_memguard.c) and given back a quarter at each
      allocation that fails: the unwinding of the MemoryError, and its one line, run in them
      (CPython 3.11 can hang for ever unwinding with no memory left: see there).

    Without such a limit, or without the C module (no compiler at install), nothing is done:
    True when the reserve is taken."""
    try:
        import resource
    except ImportError:                 # (not POSIX)
        return False
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return False
    try:
        from . import _memguard
    except ImportError:
        return False
    room = soft - address_space()
    if room > BLAS_BUFFER + 2 * size:
        import numpy as np
        np.linalg.solve(np.eye(2), np.ones(2))
        room -= BLAS_BUFFER
    return room > 2 * size and _memguard.take(size)


def ran_out() -> bool:
    """Whether an allocation has failed since keep_reserve took its reserve (a SystemError
    "error return without exception set" after that is CPython 3.11 failing to say
    MemoryError: a thread's first frames that found no memory)."""
    try:
        from . import _memguard
    except ImportError:
        return False
    return _memguard.state()["failed"]


def address_space() -> int:
    """The process's mapped address space in bytes (what RLIMIT_AS limits); 0 when the system
    does not say (no /proc)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
