"""The reader: ``parse(paths) -> ParsedLog`` and ``load`` turn logs, benchmark outputs and
exports into tables and run no analysis; the analyses of what it reads are library.py's.

Layer 5 (docs/dev/architecture.md): it imports the model, io and the parsers, never an analysis.
``eaglelog.parse``, ``eaglelog.ParsedLog`` and ``eaglelog.SourceInfo`` are these; the model's
types are re-exported here from model.py, so ``eaglelog.api.ParsedLog`` keeps working.
"""
from __future__ import annotations

import datetime as _dt
import os
from typing import TYPE_CHECKING, Iterable


from ._cores import workers as _workers
from . import frame as _frame
from ._lazy import np, pd
from .errors import EaglelogError, InputError, NoRecordsError
from .parsers import (ENGINES, choose_engine, chosen_where, engine_named, found_families,
                      reported_families, sniffing_scanner)
from .parsers.scan import Diagnostic
from .schema import TABLES
from .io.sources import CHUNK_SIZE, iter_chunks, open_source
from .io import parallel
from .io.batch import SMALL, BATCH_BYTES, Batch
from .parsers.scan import Scanner
from .tables import concat_frames, conform

if TYPE_CHECKING:
    from .io.remote import RemoteOptions

# the model (its home: model.py), re-exported: eaglelog.api.ParsedLog and the rest stay
from .model import (ConfigSegment, ParsedLog, SourceInfo, WholeRun, _plain,  # noqa: F401
                    _when, between, by_configuration, contiguous, whole_run)


def error_line(message: str) -> tuple[int | None, str]:
    """An input error's line and the rest of it: 'f.log:2: binary data …' → (2, 'binary
    data …'); 'f.log: empty file' → (None, 'empty file')."""
    head, _, rest = message.partition(": ")
    line = head.rsplit(":", 1)[-1] if ":" in head else ""
    return (int(line), rest) if line.isdigit() else (None, rest)


def _scan_one(spec: str, engine: str, base_date, chunk_size: int, keep_going: bool,
              info: SourceInfo, diags: list[Diagnostic], use_cache: bool = False,
              mtime: float | None = None, columns: dict | None = None,
              batch: Batch | None = None) -> dict[str, pd.DataFrame] | None:
    """Scan one input (``spec`` is its local path; ``info.name`` its label).  With use_cache, a
    local file's tables come from the table cache when the file is unchanged, and a file that
    grew is scanned only from the cache's last safe point.  With ``batch``, a small SGLang
    input's rows are added to it and None is returned (its tables come from Batch.frames)."""
    from .io import cache

    state = cache.file_state(spec) if use_cache and spec != "-" else None
    cdir = cache.table_dir(spec, engine, base_date) if state else None
    meta = cache.load_tables_meta(cdir) if cdir else None
    if meta and not _covers(meta.get("columns"), columns):
        meta = None                    # the cached tables lack columns asked for now
    resume = None
    cached = None                      # the tables before the safe point, for a resume
    if meta and cache.unchanged(meta["state"], state, spec):
        try:
            frames = _from_cache(cdir, meta, info, diags, columns)
        except cache.CacheDamage:      # not what was written: drop it, parse again
            cache.drop(cdir)
            meta = None
        else:
            cache.settle(cdir, meta, state)
            return frames
    if meta and cache.grew(meta["state"], state):
        safe = meta.get("safe")
        if safe and meta.get("compression") is None and \
                cache.fingerprint(spec, safe["offset"] - cache.FP_BYTES) == safe["fp"] and \
                cache.prefix_crc(spec, safe["offset"]) == safe["crc"]:
            try:
                engine_named(meta["engine"]).scanner(info.name, base_date,
                                                     columns).restore(safe["state"])
                cached = _cached_frames(cdir, meta, upto=safe["state"]["_line"],
                                        columns=columns)
                resume = safe
            except cache.CacheDamage:
                cache.drop(cdir)
            except (KeyError, TypeError, ValueError):
                pass                   # a state this scanner cannot take: parse it all
    with open_source(spec) as src:
        src.name = info.name
        name = info.name
        info.compression, info.size = src.compression, src.size
        workers = _workers()
        if resume is None and src.compression is None and workers > 1 and src.size and \
                src.size >= parallel.MIN_PARALLEL:
            # the head the sequential scan sniffs (the first MiB); a peek gives only what
            # the buffer holds
            with open(spec, "rb") as fh:
                head = fh.read(1 << 20)
            eng = choose_engine(engine, head)
            # only SGLang logs are large enough to split; the other families scan in one pass,
            # and so does an input whose head holds no family's lines (the sequential scan
            # looks further for them)
            got = parallel.scan_parallel(spec, name, eng.name, base_date, chunk_size, workers,
                                         columns, requested=engine) \
                if eng.name == "sglang" and (engine != "auto" or found_families(head)) else None
            if got is not None:
                frames, pdiags, st, safe = got
                info.engine = eng.name
                if safe is not None and state is not None:
                    safe["fp"] = cache.fingerprint(spec, safe["offset"] - cache.FP_BYTES)
                    safe["crc"] = cache.prefix_crc(spec, safe["offset"])
                return _finish_scan(info, frames, st, pdiags, diags, head.find(b"\x00"), head,
                                    cdir if state else None, state, safe, False, columns,
                                    engine, head)
        scanner = None
        nul = -1
        chunk_head = b""
        offset = 0
        safe = None
        old_frames = None
        if resume:
            src.raw.seek(resume["offset"])
            offset = resume["offset"]
            info.engine = meta["engine"]
            scanner = engine_named(info.engine).scanner(info.name, base_date, columns)
            scanner.restore(resume["state"])
            old_frames, old_diags = cached
            for d in old_diags:
                d.source = info.name
                if d.more:
                    scanner.dropped[d.kind] = scanner.dropped.get(d.kind, 0) + d.more
                else:
                    scanner.diags.append(d)
                    scanner._kept[d.kind] = scanner._kept.get(d.kind, 0) + 1
        # the chunks read before the family is chosen: it is chosen from the first MiB whatever
        # the chunk size (chunks smaller than that are read ahead; 4 KiB chunks once chose from
        # the first 4 KiB and reported, not read, a family the first MiB holds)
        pending: list[bytes] = []

        def start() -> None:
            nonlocal scanner, nul, chunk_head, pending
            head = b"".join(pending)[:1 << 20] if len(pending) > 1 else \
                bytes(memoryview(pending[0])[:1 << 20])      # (bytes, of a bytearray too)
            nul = head.find(b"\x00", 0, 65536)
            chunk_head = head[:65536]
            # the family from the head, else from the first later chunk with its lines
            scanner = sniffing_scanner(engine, head, info.name, base_date, columns,
                                       lambda n: setattr(info, "engine", n))
            read, pending = pending, []
            for c in read:
                feed(c)

        def feed(chunk: bytes) -> None:
            nonlocal offset, safe
            scanner.feed(chunk)
            offset += len(chunk)
            if chunk.endswith(b"\n") and src.compression is None:
                cp = scanner.checkpoint()
                if cp is not None:
                    safe = {"offset": offset, "state": cp}
        chunks = iter_chunks(src, chunk_size)
        try:
            for chunk in chunks:
                if scanner is None:
                    pending.append(chunk)
                    if sum(map(len, pending)) >= 1 << 20:
                        start()
                    elif isinstance(chunk, bytearray):
                        # (a file's chunks are one buffer, read again for the next: one kept
                        # while the head is gathered is kept as a copy)
                        pending[-1] = bytes(chunk)
                    continue
                feed(chunk)
            if pending:
                start()
        except InputError as e:
            if pending:               # (what was read before the damage: kept with keep_going)
                try:
                    start()
                except InputError:
                    pass
            if scanner is None or not keep_going:
                raise
            line, what = error_line(str(e))
            scanner.diag(line, "input_error", what + "; the records before it are kept", "error")
            info.error = str(e)
            state = None                      # never cache a damaged read
        finally:
            # closed here, not when the loop lets go of it: out of memory (a MemoryError from
            # feed) a generator's close can itself run out, and a close at its deallocation
            # then prints "Exception ignored in: <generator …>" above the error's one line;
            # closed here, that MemoryError is raised as the error
            chunks.close()
        if scanner is None:
            raise InputError(f"{name}: empty file" if name != "-" else "-: empty input")
        inner = getattr(scanner, "inner", None)
        if batch is not None and old_frames is None and type(inner) is Scanner and \
                not inner.time_only and scanner.stats.bytes <= SMALL:
            # a small SGLang input: its rows join the batch's, typed with theirs (batch.py)
            for line, message in src.notes:
                scanner.diag(line, "long_line", message)
            counts = batch.add(info.name, scanner.stats.bytes, *inner.finish_rows())
            return _finish_scan(info, None, scanner.stats, scanner.diags + scanner.overflow(),
                                diags, nul, chunk_head if nul >= 0 else b"", None, None, None,
                                False, columns, engine, chunk_head, counts=counts)
        frames = scanner.finish(mtime if mtime is not None else src.mtime)
        for line, message in src.notes:
            scanner.diag(line, "long_line", message)
    if old_frames is not None:
        frames = {t: concat_frames(TABLES[t], [old_frames[t], frames[t]]) for t in TABLES}
    if safe is not None and state is not None:
        safe["fp"] = cache.fingerprint(spec, safe["offset"] - cache.FP_BYTES)
        safe["crc"] = cache.prefix_crc(spec, safe["offset"])
    return _finish_scan(info, frames, scanner.stats, scanner.diags + scanner.overflow(), diags, nul,
                        chunk_head if nul >= 0 else b"", cdir, state, safe, scanner.time_only,
                        columns, engine, chunk_head)


def _covers(cached: dict | None, wanted: dict | None) -> bool:
    """Whether tables cached with projection ``cached`` hold every column of ``wanted``
    (None: every column)."""
    if cached is None:
        return True
    if wanted is None:
        return False
    return all(t in wanted and set(wanted[t]) <= set(cols) for t, cols in cached.items())


def _finish_scan(info: SourceInfo, frames, st, scan_diags, diags: list[Diagnostic], nul: int,
                 head: bytes, cdir, state, safe, time_only: bool, columns: dict | None = None,
                 requested: str = "auto", sniffed: bytes = b"", counts: dict | None = None):
    """Counts, the no-record errors, and the table cache, for both scan paths (``frames`` None:
    a batched input, its row ``counts`` given)."""
    from .io import cache

    name = info.name
    info.bytes, info.lines, info.skipped, info.first_skipped = (st.bytes, st.lines, st.skipped,
                                                                 st.first_skipped)
    info.counts = counts if frames is None else {t: len(f) for t, f in frames.items()}
    if not any(info.counts.values()):
        if nul >= 0:
            nul_line = head.count(b"\n", 0, nul) + 1
            raise InputError(f"{name}:{nul_line}: binary data (NUL byte at offset {nul}) and no "
                             "record: not a text log")
        # families whose lines the input holds and the scan did not read: the head's, and
        # those the scan found later (their first line)
        later = dict(reported_families(scan_diags))
        other = [e.name for e in ENGINES.values() if e.name != info.engine and
                 (e.name in later or e.sniff(sniffed))]
        hint = ""
        if other:
            where = [f"{o} (from line {later[o]:,})" if later.get(o) else o for o in other]
            hint = (f"; it holds {' and '.join(where)} lines: "
                    + ("drop --engine (auto) or " if requested != "auto" else "")
                    + f"pass --engine {other[0]}")
        unread = [d for d in scan_diags if d.kind in ("malformed", "truncated")]
        if unread:        # record lines there were, but none could be read: say the first
            first = min((d for d in unread if d.line_no), key=lambda d: d.line_no, default=None)
            n = sum(d.more or 1 for d in unread)
            if first is not None:
                raise NoRecordsError(
                    f"{name}:{first.line_no}: no record could be read: {first.message}"
                    + (f" (and {n - 1:,} more record line{'s' if n > 2 else ''} not parsed)"
                       if n > 1 else "") + hint)
        lines = f"{st.lines:,} line{'s' if st.lines != 1 else ''}"
        if requested != "auto":
            tried = f"families tried: {requested}"
        elif chosen_where(scan_diags) == "nowhere":
            tried = (f"families tried: {', '.join(ENGINES)} (looked for in every line: SGLang "
                     "'Decode batch' lines and EAGLE3_PROF blocks, vLLM 'SpecDecoding metrics' "
                     "and throughput lines, llama.cpp and TensorRT-LLM statistics, benchmark "
                     "summaries)")
        else:
            tried = f"families tried: {info.engine} (the family whose markers it holds)"
        raise NoRecordsError(f"{name}: no speculative-decoding records in {lines}; {tried}"
                             + hint)
    scan_diags = sorted(scan_diags, key=lambda d: (d.line_no is None, d.line_no or 0))
    diags.extend(scan_diags)
    if state is not None and cdir is not None and not time_only and frames is not None:
        cache.store_tables(cdir, {
            "state": state, "safe": safe, "compression": info.compression,
            "engine": info.engine, "columns": columns,
            "info": [info.bytes, info.lines, info.skipped, info.first_skipped],
            "diags": [[d.line_no, d.kind, d.message, d.severity, d.more] for d in scan_diags]},
            frames)
    return frames


BIG_TABLE = 1 << 20          # rows: a cached table this long is read a column at a time


def _cached_frames(cdir: str, meta: dict, upto: int | None = None, columns: dict | None = None):
    """The cached tables and diagnostics of the entry ``cdir`` (up to line ``upto``); raises
    cache.CacheDamage when a table is not exactly what the entry wrote."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    # malloc for these buffers: what arrow frees goes back to the heap for pandas to reuse
    # (arrow's own pool keeps it: a GB log's cached tables then peaked 300 MB higher)
    default_pool = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        return _read_cached(cdir, meta, upto, columns, pq)
    except (OSError, ValueError, TypeError, KeyError, pa.ArrowException) as e:
        from .io.cache import CacheDamage      # truncated, a directory, bad pages, wrong types …
        raise CacheDamage(str(e)) from None
    finally:
        pa.set_memory_pool(default_pool)


def _read_cached(cdir: str, meta: dict, upto: int | None, columns: dict | None, pq):
    from .io.cache import check_table
    frames = {}
    for t in TABLES:
        path = os.path.join(cdir, f"{t}.parquet")
        keep = (columns or {}).get(t)
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        check_table(pf, TABLES[t], meta["tables"][t], meta.get("columns"))
        want = [c for c in pf.schema_arrow.names if keep is None or c in keep]
        # pyarrow straight to pandas, each column its own block and each arrow buffer freed
        # once converted (4× faster than pandas.read_parquet on a GB log's decode table); a
        # large table column by column, so that its arrow and pandas forms never coexist whole
        if pf.metadata.num_rows >= BIG_TABLE:
            df = pd.DataFrame({c: pf.read(columns=[c]).to_pandas(self_destruct=True)[c]
                               for c in want}, copy=False)
        else:
            df = pf.read(columns=want).to_pandas(split_blocks=True, self_destruct=True)
        df = conform(TABLES[t], df)
        if len(df) != pf.metadata.num_rows:
            raise ValueError(f"{t}: {len(df)} rows read of {pf.metadata.num_rows}")
        if upto is not None:
            df = df[df["line_no"] <= upto].reset_index(drop=True)
        frames[t] = df
    diags = [Diagnostic("", ln, kind, msg, sev, more) for ln, kind, msg, sev, more in meta["diags"]
             if upto is None or more or (ln is not None and ln <= upto)]
    return frames, diags


def _from_cache(cdir: str, meta: dict, info: SourceInfo, diags: list[Diagnostic],
                columns: dict | None = None):
    frames, old = _cached_frames(cdir, meta, columns=columns)
    name = info.name
    for t, df in frames.items():
        if len(df):
            df["source"] = pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int8), [name])
    for d in old:
        d.source = name
    diags.extend(old)
    info.engine = meta.get("engine")
    info.compression = meta.get("compression")
    info.size = meta["state"]["size"]
    info.bytes, info.lines, info.skipped, info.first_skipped = meta["info"]
    info.counts = {t: len(f) for t, f in frames.items()}
    info.cached = True
    return frames

def parse(paths: str | os.PathLike | Iterable[str | os.PathLike], *, engine: str = "auto",
          keep_going: bool = False, base_date: _dt.date | str | None = None,
          chunk_size: int = CHUNK_SIZE, remote: "RemoteOptions | None" = None,
          cache: bool = False, columns: dict[str, tuple[str, ...]] | None = None,
          light: bool = False) -> ParsedLog:
    """Parse one or many logs (paths, '-' for stdin, .gz/.xz/.bz2/.zst, and remote
    ``[user@]host:/path`` or ``ssh://[user@]host[:port]/path``, globs expanded remotely).

    engine:     'auto' (sniff) or a name from ``eaglelog.parsers.ENGINES``.
    keep_going: an input that fails (missing, corrupt, unreachable, no records) becomes an error
                diagnostic instead of an exception; the records read before a corruption are
                kept.
    base_date:  the date of the first line for logs whose prefixes carry only a time of day.
    remote:     how to reach remote logs (eaglelog.io.remote.RemoteOptions); defaults apply.
    cache:      use the table cache in $XDG_CACHE_HOME/eaglelog (eaglelog/io/cache.py) for local
                files; the CLI turns it on unless --no-cache.
    columns:    {table: columns} to keep of those tables (the others whole), e.g.
                ``eaglelog.schema.ANALYSIS_COLUMNS``: what the analyses need of a large log.
    light:      the tables as eaglelog.frame.Frame, not pandas DataFrames, where no cache is
                used: for a log read once by the command line's summary or breakeven, which
                then never imports pandas (a Frame becomes a DataFrame if asked for more than
                it answers).  The API's logs keep the default.  (The switch is the process's
                while the call runs — frame.building — so that the scan's threads and forked
                workers see it: not for parses running at once in other threads.)
    """
    from .io.remote import RemoteOptions

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    specs = [os.fspath(p) for p in paths]
    from .io.sources import is_metrics_source    # http(s)://…/metrics, prom+http(s)://…
    if any(is_metrics_source(s) for s in specs):          # (eaglelog/live/metrics.py, prom.py)
        from .live.live_sources import parse_with
        return parse_with(specs, parse, engine=engine, keep_going=keep_going, base_date=base_date,
                          chunk_size=chunk_size, remote=remote, cache=cache, columns=columns)
    if not specs:
        raise EaglelogError("no input given")
    from .io.sources import export_refusal, looks_like_export
    for s in specs:
        if looks_like_export(s):         # one run's estimates, not log lines (issue 36 item 11)
            raise EaglelogError(export_refusal(s))
    if engine != "auto" and engine not in ENGINES:
        raise EaglelogError(f"unknown engine {engine!r}; known: auto, {', '.join(ENGINES)}")
    if isinstance(base_date, str):
        base_date = _dt.date.fromisoformat(base_date)
    remote = remote or RemoteOptions()
    with _frame.building(light and not cache):
        return _parse(specs, engine, keep_going, base_date, chunk_size, remote, cache, columns)


def _parse(specs, engine, keep_going, base_date, chunk_size, remote, cache, columns) -> ParsedLog:
    import tempfile

    from .io.remote import fetch_progressive, is_glob, parse_remote

    parts: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
    infos: list[SourceInfo] = []
    diags: list[Diagnostic] = []
    with tempfile.TemporaryDirectory(prefix="eaglelog-") as work:
        rspecs = {s: parse_remote(s) for s in specs}
        todo = list({r.text: r for r in rspecs.values() if r is not None}.values())
        # the remote files are read as they arrive, while the rest are still coming
        # (remote.fetch_progressive); every transfer has ended before the folder goes
        arrivals, wait_all = fetch_progressive(todo, remote, work) if todo else ([], None)
        arrivals = dict(zip([r.text for r in todo], arrivals))
        late: list[tuple[SourceInfo, object, int]] = []   # transfer notes, once final
        try:
            # small inputs are typed together (batch.py): a dozen frames per input cost more
            # than a small log's scan
            several = len(specs) > 1 or any(r is not None and is_glob(r.path)
                                            for r in rspecs.values())
            batch = Batch(columns) if several else None
            _parse_inputs(_inputs(specs, rspecs, arrivals, keep_going), engine, base_date,
                          chunk_size, keep_going, cache, columns, batch, parts, infos, diags, late)
        finally:
            if wait_all is not None:
                wait_all()
        # what each transfer cost is known once it has ended: its notes go where the input's
        # own diagnostics are (in reverse, so that the places before stay where they were)
        for info, item, at in reversed(late):
            notes: list[Diagnostic] = []
            _remote_info(info, item, notes)
            diags[at:at] = notes
    if all(i.error and not any(i.counts.values()) for i in infos):
        raise EaglelogError("no input could be read: " + "; ".join(i.error or "" for i in infos))
    tables = {name: concat_frames(TABLES[name], parts[name], consume=True) for name in TABLES}
    if sum(i.bytes for i in infos) >= parallel.MIN_PARALLEL:
        from ._memory import trim
        trim()                  # the scan's freed buffers back to the system before analysis
    return ParsedLog(tables, infos, diags)


def _inputs(specs, rspecs, arrivals, keep_going):
    """Every input, in order, as (name, local path or None, Fetched or error); a remote spec's
    files as they arrive (the same spec given twice: its files again, once read)."""
    for spec in specs:
        r = rspecs[spec]
        if r is None:
            yield spec, spec, None
            continue
        arr = arrivals[r.text]
        for item in arr:
            if item.mode == "error" and item.partial and keep_going:
                # the host's decompressor failed mid-file: the lines before it are read,
                # as a local --keep-going read of the same file keeps them (remote.py)
                yield item.name, item.partial, item
            elif item.mode == "error":
                yield item.name, None, InputError(f"{item.name}: {item.notes[0]}")
            else:
                yield item.name, item.local_path, item
        if isinstance(arr.result, EaglelogError):
            yield spec, None, arr.result


def _parse_inputs(inputs, engine, base_date, chunk_size, keep_going, cache, columns, batch,
                  parts, infos, diags, late) -> None:
    """Scan each input into ``parts`` (per table), ``infos`` and ``diags``; ``late`` collects
    the remote inputs, whose transfer notes are added once every transfer has ended."""
    times: dict[str, int] = {}         # how often each input was given (a count, not a scan)
    for name, local, extra in inputs:
        seen = times.get(name, 0)
        times[name] = seen + 1
        info = SourceInfo(name if not seen else f"{name} ({seen + 1})")  # same input twice
        infos.append(info)
        try:
            if isinstance(extra, EaglelogError):
                raise extra
            # the table cache serves local files and whole fetched copies (stable paths)
            frames = _scan_one(local, engine, base_date, chunk_size, keep_going, info, diags,
                               use_cache=cache and (extra is None or
                                                    extra.mode in ("fetch", "cache")),
                               mtime=extra.mtime if extra is not None else None,
                               columns=columns, batch=batch)
            if extra is not None and extra.mode == "error":
                info.error = f"{info.name}: {extra.notes[0]}"
                diags.append(Diagnostic(info.name, extra.failed_line, "input_error",
                                        extra.notes[0] + "; the records before it are kept",
                                        "error"))
            elif extra is not None:
                late.append((info, extra, len(diags)))
        except EaglelogError as e:
            if not keep_going:
                raise
            info.error = str(e)
            line, what = error_line(str(e))
            diags.append(Diagnostic(info.name, line, "input_error", what, "error"))
            continue
        if frames is None and batch.bytes < BATCH_BYTES:
            continue                       # batched: typed with the next ones
        if batch:                          # the batched inputs before this one, in order
            for t, f in batch.frames().items():
                parts[t].append(f)
        for t, f in (frames or {}).items():
            parts[t].append(f)
    if batch:
        for t, f in batch.frames().items():
            parts[t].append(f)


def _remote_info(info: SourceInfo, item, diags: list[Diagnostic]) -> None:
    """What crossing the network cost, for the overview and a note on stderr."""
    from .units import fmt_bytes

    info.remote = {"mode": item.mode, "size": item.size, "transferred": item.transferred,
                   "seconds": round(item.seconds, 3), "filtered_lines": item.filtered_lines}
    info.size = item.size
    if item.mode == "reduce":
        # the lines the host did not send came back as empty lines: count them as skipped, but
        # for those that were blank there too
        info.skipped += item.filtered_lines - item.blank_filtered
        if item.first_filtered and (info.first_skipped is None or
                                    item.first_filtered < info.first_skipped):
            info.first_skipped = item.first_filtered
        info.bytes = item.size
    if item.mode == "reduce":
        share = f" ({item.transferred / item.size:.1%})" if item.size else ""
        msg = (f"reduced on the remote host: {fmt_bytes(item.transferred)} of "
               f"{fmt_bytes(item.size)} transferred{share} in {item.seconds:.1f} s")
    elif item.mode == "cache":
        msg = "unchanged since the last --fetch: read from the cache, nothing transferred"
    else:
        msg = f"fetched whole: {fmt_bytes(item.transferred)} in {item.seconds:.1f} s (cached)"
    diags.append(Diagnostic(info.name, None, "transfer", msg, "note"))
    for n in item.notes:
        if isinstance(n, str):
            diags.append(Diagnostic(info.name, None, "transfer", n, "warning"))


def load(logs, *, engine: str = "auto", base_date=None, keep_going: bool = False,
         since=None, until=None, startup: int | None = None, cache: bool = True):
    """A ``ParsedLog`` of ``logs`` (a path, a list of them, or a ParsedLog, returned as it is
    unless a selection is asked for), with only what ``since``/``until``/``startup`` select."""
    from .schema import ANALYSIS_COLUMNS

    if isinstance(logs, ParsedLog):
        log = logs
    else:
        paths = [os.fspath(logs)] if isinstance(logs, (str, os.PathLike)) else \
            [os.fspath(p) for p in logs]
        if not paths:
            raise EaglelogError("no input given")
        log = parse(paths, engine=engine, keep_going=keep_going, base_date=base_date,
                    cache=cache, columns=ANALYSIS_COLUMNS)
    if since is not None or until is not None or startup is not None:
        log = log.select(since=since, until=until, startup=startup)
    return log
