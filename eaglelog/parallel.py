"""One large local file, both cores: byte ranges split at line boundaries, scanned in parallel
(threads when the C accelerator is built, since it releases the GIL; processes otherwise).

Each worker scans its range with its own Scanner and numbers lines from 1; the parent shifts line
numbers by the lines of the ranges before, and start-up numbers by the server_args lines before.
A record belongs to the range where its line starts; an EAGLE3_PROF block belongs to the range of
its header: a worker whose range ends inside a block reads on (``Scanner.overrun``) until the
block closes, and the next worker's leading block lines, orphans for it, are skipped.  The
result is the same tables as a sequential scan (tests/test_parallel.py).
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pandas as pd

from .parsers import engine_named
from .schema import TABLES
from .tables import concat_frames

MIN_PARALLEL = 32 << 20   # smaller files are scanned in one process
OVERRUN_STEP = 1 << 16


def ranges(path: str, n: int) -> list[tuple[int, int]]:
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(size * k // n, cuts[-1]))
            f.readline()                         # to the next line start
            pos = f.tell()
            if pos >= size or pos <= cuts[-1]:
                break
            cuts.append(pos)
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def scan_range(path: str, start: int, end: int, name: str, engine: str, base_date,
               chunk_size: int, columns: dict | None = None):
    sc = engine_named(engine).scanner(name, base_date, columns)
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(chunk_size, left))
            if not chunk:
                break
            left -= len(chunk)
            if left > 0 and not chunk.endswith(b"\n"):
                extra = f.readline()             # ranges end at line ends: never split a line
                chunk += extra
                left -= len(extra)
            sc.feed(chunk)
        if sc.blocks.open:                       # finish the blocks that started in the range
            lines, blank, nbytes = sc.stats.lines, sc.stats.blank, sc.stats.bytes
            sc.overrun = True
            while sc.blocks.open:
                chunk = f.read(OVERRUN_STEP)
                if not chunk:
                    break
                chunk += f.readline()
                sc.feed(chunk)
            sc.stats.lines, sc.stats.blank, sc.stats.bytes = lines, blank, nbytes
    # where a later run may resume: the end of the range, unless a block is open there
    resumable = not sc.blocks.open and not sc.overrun
    frames = sc.finish(None)
    st = sc.stats
    return (frames, [(d.line_no, d.kind, d.message, d.severity, d.more)
                     for d in sc.diags + sc.overflow()],
            (st.lines, st.blank, st.consumed, st.first_skipped, st.bytes), sc.startup,
            sc.time_only, resumable)


def scan_parallel(path: str, name: str, engine: str, base_date, chunk_size: int, workers: int,
                  columns: dict | None = None):
    """(frames, diagnostics, stats, safe point or None) of a local uncompressed file, or None
    when the file holds time-only prefixes (their dates need one sequential pass)."""
    from .parsers.scan import Diagnostic, ScanStats

    from .parsers.scan import fast_available

    parts = ranges(path, workers)
    # the C accelerator scans with the GIL released: threads share the frames without pickling;
    # the Python parser alone needs processes
    pool_type = ThreadPoolExecutor if fast_available() else ProcessPoolExecutor
    with pool_type(max_workers=len(parts)) as pool:
        results = list(pool.map(scan_range, [path] * len(parts), [a for a, _ in parts],
                                [b for _, b in parts], [name] * len(parts),
                                [engine] * len(parts), [base_date] * len(parts),
                                [chunk_size] * len(parts), [columns] * len(parts)))
    if any(r[4] for r in results):
        return None
    from ._memory import trim
    trim()                      # the workers' scan buffers, before their frames are merged
    line_base, startup_base = 0, 0
    results = list(results)
    resumable = results[-1][5]
    tables: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
    diags, stats = [], ScanStats()
    while results:
        frames, dg, (lines, blank, consumed, first_skipped, nbytes), startups, _, _ = \
            results.pop(0)             # let each worker's frames go once they are merged
        for t, df in frames.items():
            if len(df):                # the worker's frame is ours: columns replaced, not copied
                df["line_no"] = df["line_no"] + line_base
                for col in ("block", "end_line"):
                    if col in df.columns:
                        df[col] = df[col] + line_base
                df["startup"] = df["startup"] + startup_base
            tables[t].append(df)
        diags += [Diagnostic(name, None if ln is None else ln + line_base, k, m, sv, more)
                  for ln, k, m, sv, more in dg]
        stats.lines += lines
        stats.blank += blank
        stats.consumed += consumed
        stats.bytes += nbytes
        if stats.first_skipped is None and first_skipped is not None:
            stats.first_skipped = first_skipped + line_base
        line_base += lines
        startup_base += startups
    frames = {}
    for t in TABLES:
        df = concat_frames(TABLES[t], tables[t], consume=True)
        if len(df) and not df["line_no"].is_monotonic_increasing:   # blocks read past a range
            df = df.sort_values("line_no", kind="stable", ignore_index=True)
        frames[t] = df
    safe = None
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(max(size - 1, 0))
        ends_with_newline = f.read(1) == b"\n"
    if resumable and ends_with_newline:
        safe = {"offset": size, "state": {
            "_line": stats.lines, "startup": startup_base, "_day_offset": 0, "_last_tod": None,
            "time_only": False, "stats": [stats.lines, stats.blank, stats.consumed,
                                          stats.first_skipped, stats.bytes]}}
    return frames, diags, stats, safe
