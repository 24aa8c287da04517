"""Keep the command's peak memory close to what its tables hold.

glibc raises its mmap threshold each time a large block is freed (up to 32 MB), after which
column-sized arrays come from the heap, where freed space is fragmented and not given back: a
gigabyte log's parse then peaked at 1.4× the memory of the same parse with the threshold fixed
(benchmarks/parse_speed.py).  The command-line entry point fixes it at glibc's default 128 KiB;
the library leaves the host process's allocator alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_MMAP_THRESHOLD = -3


def fix_mmap_threshold(size: int = 128 * 1024) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, size))
    except (OSError, AttributeError):   # not glibc (musl has no mallopt)
        return False
