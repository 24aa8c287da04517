"""One large local file, both cores: byte ranges split at line boundaries, scanned in parallel
(threads when the C accelerator is built, since it releases the GIL; processes otherwise).

Each worker scans its range with its own Scanner and numbers lines from 1; the parent shifts line
numbers by the lines of the ranges before, and start-up numbers by the server_args lines before.
A record belongs to the range where its line starts; an EAGLE3_PROF block belongs to the range of
its header: a worker whose range ends inside a block reads on (``Scanner.overrun``) until the
block closes, and the next worker's leading block lines, orphans for it, are skipped.  The
result is the same tables as a sequential scan (tests/test_parallel.py), and the same
diagnostics: the first MAX_KEPT of a kind in the whole file are kept and the rest counted, as
one scanner does (merge_diagnostics).  A line longer than sources.MAX_LINE is dropped by the
sequential scan's own rule: a range that holds one gives the file back to it (scan_range ->
None).

Memory is touched as little as possible, since on a virtual machine every fresh page is a fault
that can cost tens of microseconds: each worker reads its chunks into one reused buffer, the C
accelerator's column arrays are the final storage (a later range's pages are moved onto the
first's, FastRows.merge), and the few rows the Python parser read are interleaved in line order
with one copy (tables.concat_frames(order_by="line_no")).
"""
from __future__ import annotations

import os
import sys

from .._lazy import pd
from ..parsers import engine_named
from ..schema import TABLES
from .sources import MAX_LINE, _has_long_line, _line_end, read_at
from ..tables import concat_frames

MIN_PARALLEL = 32 << 20   # smaller files are scanned in one process
OVERRUN_STEP = 1 << 16
SWITCH_INTERVAL = 0.0002   # seconds (Python's default is 0.005)
HEADER_TAIL = 16 << 10     # a chunk ending this near a block's header ends before it


def ranges(path: str, n: int) -> list[tuple[int, int]]:
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(size * k // n, cuts[-1]))
            _rest_of_line(f, None)               # to the next line start
            pos = f.tell()
            if pos >= size or pos <= cuts[-1]:
                break
            cuts.append(pos)
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _rest_of_line(f, limit: int | None) -> bytes | None:
    """Read f to the end of its current line, OVERRUN_STEP bytes at a time: the bytes read, or
    None once they pass ``limit`` (a line longer than MAX_LINE, not read on); with limit None
    nothing is kept."""
    parts, n = [], 0
    while True:
        piece = f.readline(OVERRUN_STEP)
        n += len(piece)
        if limit is not None:
            if n > limit:
                return None
            parts.append(piece)
        if not piece or piece.endswith(b"\n"):
            return b"".join(parts)


def _before_last_header(buf: bytearray) -> int:
    """A chunk that ends within HEADER_TAIL bytes of an EAGLE3_PROF header line ends before
    that line (buf is cut there; its new length is returned): the block is then read whole from
    the next chunk, by the C accelerator, where one cut by the chunk's end is the Python
    parser's — and a single such block among the accelerator's rows costs a copy of the whole
    prof and prof_phases tables to interleave it (tables.concat_frames).  Any line start is a
    chunk boundary the scan reads the same across."""
    n = len(buf)
    h = buf.rfind(b"EAGLE3_PROF", max(0, n - HEADER_TAIL))
    if h < 0:
        return n
    ls = buf.rfind(b"\n", 0, h) + 1
    if ls > 0:
        del buf[ls:]
        return ls
    return n


def scan_range(path: str, start: int, end: int, name: str, engine: str, base_date,
               chunk_size: int, columns: dict | None = None, requested: str = "auto"):
    """The range's rows, diagnostics and counts (scan_parallel unpacks them), or None when it
    holds a line longer than MAX_LINE: sources.iter_chunks drops such a line by a rule of its
    own (and rejects a file that starts with one), so the file is the sequential scan's."""
    from ..parsers import WATCH_LITERALS, other_family_message, report_watched, watched
    from ..parsers.scan import Scanner
    from ..parsers.scan import MARKERS

    sc = engine_named(engine).scanner(name, base_date, columns)
    # the families not read: each one's first line in the range is reported as the sequential
    # scan reports it (SniffingScanner._watch_chunk); scan_parallel keeps the file's first
    watch = {f: lit for f, lit in WATCH_LITERALS.items() if f not in engine.split("+")}
    how = (f"--engine {requested}" if requested != "auto" else
           f"read as {engine}, the family of its first lines")
    # (a C-accelerated SGLang scan watches the lines it passes over; the others, each chunk)
    inner = isinstance(sc, Scanner) and bool(watch) and sc.watch_lines(
        tuple(lit for v in watch.values() for lit in v),
        lambda chunk, off, ln: report_watched(sc, chunk, off, ln, watch, how))
    with open(path, "rb") as f:
        fd = f.fileno()
        pos = start
        # one buffer for every chunk, resized in place (a bytearray keeps its allocation when
        # it shrinks by less than half): fresh memory costs a page fault per 4 KiB, and a
        # gigabyte read into new buffers is 250,000 of them
        buf = bytearray(chunk_size + OVERRUN_STEP)
        while pos < end:
            cut = _line_end(fd, pos + chunk_size, end)     # chunks end at line ends
            if cut < 0:
                return None
            n = cut - pos
            got = read_at(fd, buf, pos, n)
            if not got:
                break
            if cut < end and got == n:
                got = _before_last_header(buf)
            if got > MAX_LINE and _has_long_line(buf):
                return None
            pos += got
            for fam, m in ([] if inner else watched(buf, watch)):
                sc.diag(sc.stats.lines + buf.count(b"\n", 0, m.start()) + 1, "other_family",
                        other_family_message(fam, how))
                del watch[fam]
            sc.feed(buf)
        del buf
        f.seek(pos)
        orphans: list[int] = []                  # the next range's lines read here
        if sc.blocks.open:                       # finish the blocks that started in the range
            lines, blank, nbytes = sc.stats.lines, sc.stats.blank, sc.stats.bytes
            sc.overrun = True
            account, marked = sc._account, []

            def _account(chunk, ls, line_no, end):
                # every line a block takes past the range is accounted here (Scanner._block_line)
                orphans.append(line_no - lines)
                if MARKERS.search(chunk, ls, end) is not None and _a_record(chunk[ls:end]):
                    marked.append(line_no)
                account(chunk, ls, line_no, end)
            sc._account = _account
            while sc.blocks.open:
                chunk = f.read(OVERRUN_STEP)
                if not chunk:
                    break
                rest = _rest_of_line(f, MAX_LINE + 1)
                if rest is None:     # a line of the next range: that range gives the file back
                    return None
                chunk += rest
                sc.feed(chunk)
            sc.stats.lines, sc.stats.blank, sc.stats.bytes = lines, blank, nbytes
            del sc._account
            if marked:
                # a block line that reads as a record or a malformed one ('  Decode batch. …',
                # a line of the block for the sequential scan): the next range, which has no
                # block open there, would read it so
                return None
    # where a later run may resume: the end of the range, unless a block is open there
    resumable = not sc.blocks.open and not sc.overrun
    raw, parts = sc.finish_raw()
    st = sc.stats
    return (raw, parts, [(d.line_no, d.kind, d.message, d.severity, d.more)
                     for d in sc.diags + sc.overflow()],
            (st.lines, st.blank, st.consumed, st.first_skipped, st.bytes), sc.startup,
            sc.time_only, resumable, orphans)


def _a_record(raw: bytes) -> bool:
    """Whether a line with a record marker gives a record or a report when no block is open
    (Scanner._dispatch's reading of it, without its side effects)."""
    from ..parsers.prefix import strip_ansi
    from ..parsers.scan import LINE_PARSERS, kind_of

    for part in strip_ansi(raw.decode("utf-8", "replace")).split("\r"):
        kind = kind_of(part)
        if kind == "prof":
            return True
        if kind is not None:
            res = LINE_PARSERS[kind][1](part)
            if res.record is not None or res.problems:
                return True
    return False


def _first_skipped_past(path: str, start: int, end: int, orphans: list[int], name: str,
                        engine: str, base_date, chunk_size: int) -> int | None:
    """The first line without a record in the range [start, end), its orphans (the lines, 1 for
    its first, that the range before read to finish its blocks; records and block lines for
    the sequential scan) not counted.  The range's own scan skipped them, having no block open:
    it is scanned again with those lines blank (a blank line ends what they end), up to its
    first skipped line."""
    sc = engine_named(engine).scanner(name, base_date, {t: () for t in TABLES})
    drop = set(orphans)
    with open(path, "rb") as f:
        f.seek(start)
        head = []
        for ln in range(1, max(drop) + 1):
            line = f.readline()               # no line of the range is longer than MAX_LINE
            if not line:
                break
            head.append((b"\n" if line.endswith(b"\n") else b"") if ln in drop else line)
        sc.feed(b"".join(head))
        pos = f.tell()
        while sc.stats.first_skipped is None and pos < end:
            chunk = f.read(min(chunk_size, end - pos))
            if not chunk:
                break
            if not chunk.endswith(b"\n"):
                chunk += f.readline()
            pos += len(chunk)
            sc.feed(chunk)
    return sc.stats.first_skipped


def scan_parallel(path: str, name: str, engine: str, base_date, chunk_size: int, workers: int,
                  columns: dict | None = None, requested: str = "auto"):
    """(frames, diagnostics, stats, safe point or None) of a local uncompressed file, or None
    when the file holds time-only prefixes (their dates need one sequential pass), a line
    longer than MAX_LINE (the sequential scan's rule for it), or the ranges would need
    processes (no C accelerator) in a process that may not start them (a daemonic one)."""
    from ..parsers.scan import ScanStats

    from ..parsers.scan import fast_available

    from .._cores import may_start_processes
    if not fast_available() and not may_start_processes():
        return None         # (the ranges need processes, which this one may not start)
    spans = ranges(path, workers)
    # the C accelerator scans with the GIL released: threads share the frames without pickling;
    # the Python parser alone needs processes
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
    pool_type = ThreadPoolExecutor if fast_available() else ProcessPoolExecutor
    switch = sys.getswitchinterval()
    # the workers take the GIL between chunks, for a few Python lines; while another thread
    # runs Python (the command's imports, cli._preload) each of those waits out the switch
    # interval: shorter, they cost microseconds instead of milliseconds
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
    try:
        with pool_type(max_workers=len(spans)) as pool:
            results = list(pool.map(scan_range, [path] * len(spans), [a for a, _ in spans],
                                    [b for _, b in spans], [name] * len(spans),
                                    [engine] * len(spans), [base_date] * len(spans),
                                    [chunk_size] * len(spans), [columns] * len(spans),
                                    [requested] * len(spans)))
    finally:
        sys.setswitchinterval(switch)
    if any(r is None or r[5] for r in results):
        return None
    from .._memory import trim
    trim()                      # the workers' scan buffers, before their frames are merged
    line_base, startup_base = 0, 0
    results = list(results)
    resumable = results[-1][6]
    tables: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
    stats, range_diags = ScanStats(), []
    fast = None
    orphans: list[int] = []            # the lines of this range the range before read
    for start, end in spans:
        raw, parts, dg, (lines, blank, consumed, first_skipped, nbytes), startups, _, _, \
            next_orphans = results.pop(0)      # let each worker's rows go once they are merged
        seen = {m for _, d in range_diags for _, k, m, _, _ in d if k == "other_family"}
        dg = [d for d in dg if d[1] != "other_family" or d[2] not in seen]
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
        range_diags.append((line_base, dg))
        stats.lines += lines
        stats.blank += blank
        stats.consumed += consumed
        stats.bytes += nbytes
        if stats.first_skipped is None:
            if first_skipped is not None and first_skipped in set(orphans):
                first_skipped = _first_skipped_past(path, start, end, orphans, name, engine,
                                                    base_date, chunk_size)
            if first_skipped is not None:
                stats.first_skipped = first_skipped + line_base
        # a block read past the range may run on past the next range too
        orphans = sorted(set(next_orphans) | {o - lines for o in orphans if o > lines})
        line_base += lines
        startup_base += startups
    diags = merge_diagnostics(name, range_diags)
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


def merge_diagnostics(name: str, range_diags) -> list:
    """The ranges' diagnostics, [(line_base, [(line_no, kind, message, severity, more)])] in
    file order, kept as one scanner of the whole file keeps them: the first MAX_KEPT of a kind
    (each range kept its own first MAX_KEPT, so the file's first are among them), the rest
    counted in one diagnostic per kind (Diagnostic.more).  What is listed and counted is then
    the same for every worker count."""
    from ..parsers.scan import ScannerBase

    acc = ScannerBase()
    acc.source = name
    acc._init_diags()
    for line_base, dg in range_diags:
        for ln, kind, message, severity, more in dg:
            if more:                     # counted by the range's scanner, not kept
                acc.dropped[kind] = acc.dropped.get(kind, 0) + more
            else:
                acc.diag(None if ln is None else ln + line_base, kind, message, severity)
    return acc.diags + acc.overflow()
