"""One large local file, both cores: byte ranges split at line boundaries, scanned in parallel
(threads when the C accelerator is built, since it releases the GIL; processes otherwise).

Each worker scans its range with its own Scanner and numbers lines from 1; the parent shifts line
numbers by the lines of the ranges before, and start-up numbers by the server_args lines before.
A record belongs to the range where its line starts; an EAGLE3_PROF block belongs to the range of
its header: a worker whose range ends inside a block reads on (``Scanner.overrun``) until the
block closes, and the next worker's leading block lines, orphans for it, are skipped.  The
result is the same tables as a sequential scan (tests/test_parallel.py).

Memory is touched as little as possible, since on a virtual machine every fresh page is a fault
that can cost tens of microseconds: each worker reads its chunks into one reused buffer, the C
accelerator's column arrays are the final storage (a later range's pages are moved onto the
first's, FastRows.merge), and the few rows the Python parser read are interleaved in line order
with one copy (tables.concat_frames(order_by="line_no")).
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from ._lazy import pd
from .parsers import engine_named
from .schema import TABLES
from .tables import concat_frames

MIN_PARALLEL = 32 << 20   # smaller files are scanned in one process
OVERRUN_STEP = 1 << 16
SWITCH_INTERVAL = 0.0002   # seconds (Python's default is 0.005)


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


def _line_end(fd: int, at: int, end: int) -> int:
    """The offset just after the newline that ends the line holding byte ``at - 1`` (``end``
    when that is at or past ``end``, which is a line end)."""
    if at >= end:
        return end
    pos = at - 1
    while pos < end:
        piece = os.pread(fd, min(OVERRUN_STEP, end - pos), pos)
        if not piece:
            return end
        nl = piece.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(piece)
    return end


def scan_range(path: str, start: int, end: int, name: str, engine: str, base_date,
               chunk_size: int, columns: dict | None = None):
    sc = engine_named(engine).scanner(name, base_date, columns)
    with open(path, "rb") as f:
        fd = f.fileno()
        pos = start
        # one buffer for every chunk, resized in place (a bytearray keeps its allocation when
        # it shrinks by less than half): fresh memory costs a page fault per 4 KiB, and a
        # gigabyte read into new buffers is 250,000 of them
        buf = bytearray(chunk_size + OVERRUN_STEP)
        while pos < end:
            cut = _line_end(fd, pos + chunk_size, end)     # chunks end at line ends
            n = cut - pos
            if n < len(buf):
                del buf[n:]
            elif n > len(buf):
                buf.extend(bytes(n - len(buf)))
            got = os.preadv(fd, [buf], pos)
            if got < n:                                     # the file shrank meanwhile
                del buf[got:]
            if not got:
                break
            pos += got
            sc.feed(buf)
        del buf
        f.seek(pos)
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
    raw, parts = sc.finish_raw()
    st = sc.stats
    return (raw, parts, [(d.line_no, d.kind, d.message, d.severity, d.more)
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
    switch = sys.getswitchinterval()
    # the workers take the GIL between chunks, for a few Python lines; while another thread
    # runs Python (the command's imports, cli._preload) each of those waits out the switch
    # interval: shorter, they cost microseconds instead of milliseconds
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
    try:
        with pool_type(max_workers=len(parts)) as pool:
            results = list(pool.map(scan_range, [path] * len(parts), [a for a, _ in parts],
                                    [b for _, b in parts], [name] * len(parts),
                                    [engine] * len(parts), [base_date] * len(parts),
                                    [chunk_size] * len(parts), [columns] * len(parts)))
    finally:
        sys.setswitchinterval(switch)
    if any(r[5] for r in results):
        return None
    from ._memory import trim
    trim()                      # the workers' scan buffers, before their frames are merged
    line_base, startup_base = 0, 0
    results = list(results)
    resumable = results[-1][6]
    tables: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
    diags, stats = [], ScanStats()
    fast = None
    while results:
        raw, parts, dg, (lines, blank, consumed, first_skipped, nbytes), startups, _, _ = \
            results.pop(0)             # let each worker's rows go once they are merged
        if fast is None:
            fast = raw
        else:                          # the C accelerator's arrays: appended in place
            fast.merge(raw, line_base, startup_base)
        del raw
        for t, dfs in parts.items():
            for df in dfs:             # the worker's frame is ours: columns replaced, not copied
                if line_base:
                    df["line_no"] = df["line_no"] + line_base
                    for col in ("block", "end_line"):
                        if col in df.columns:
                            df[col] = df[col] + line_base
                if startup_base:
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
    # one copy into line order: the ranges, and in each the C accelerator's rows and the few
    # the Python parser read (blocks across chunk ends, odd layouts, blocks read past a range)
    frames = {}
    for t in TABLES:
        df = fast.frame(t, name)
        frames[t] = concat_frames(TABLES[t], ([df] if df is not None else []) + tables[t],
                                  consume=True, order_by="line_no")
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
