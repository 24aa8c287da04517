"""The model every analysis reads: ``ParsedLog`` (the typed tables of one or many inputs, what
was said while reading them, and the runs they hold: start-ups and configuration segments),
``SourceInfo`` (what one input gave) and the configuration segments.  Built by ``api.parse``
(logs) and ``metrics`` / ``prom`` (/metrics endpoints and Prometheus); below both, so that they
share it without importing each other (issue 38).  ``eaglelog.api`` re-exports every name."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ._lazy import np, pd
from .frame import cat_codes, categories, is_categorical, is_light, promoted, unique_ints
from .errors import EaglelogError, UsageProblem
from .parsers.scan import Diagnostic
from .schema import TABLES


@dataclass
class SourceInfo:
    """What was read from one input."""

    name: str
    engine: str | None = None
    compression: str | None = None
    size: int | None = None      # bytes on disk
    bytes: int = 0               # decompressed bytes read
    lines: int = 0
    skipped: int = 0             # non-blank lines that carry no record
    first_skipped: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None     # set when the input failed (with keep_going)
    remote: dict | None = None   # for remote inputs: mode, size, transferred bytes, seconds
    cached: bool = False         # the tables came from the table cache


SETTLE_LEAST = 1 << 18   # windows from which ParsedLog.settle gives freed memory back


@dataclass
class ParsedLog:
    """Every table of every input, plus what was reported while reading them.

    Attributes ``prof``, ``prof_phases``, ``decode``, ``prefill``, ``server_args`` and
    ``requests`` are pandas DataFrames with the columns of ``eaglelog.schema``; rows of all inputs
    are concatenated and told apart by the ``source`` column.
    """

    tables: dict[str, pd.DataFrame]
    sources: list[SourceInfo]
    diagnostics: list[Diagnostic]

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    def table(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def config(self, source: str | None = None, startup: int | None = None) -> dict:
        """The server_args of ``source`` (default: the first input) as a dict of plain Python
        values: those of start-up ``startup``, or of the last start-up in the input."""
        src = source if source is not None else self.sources[0].name
        memo = self.__dict__.setdefault("_config_memo", {})
        if (src, startup) in memo:
            return dict(memo[(src, startup)])
        sa = self.tables["server_args"]
        if sa.empty:
            return {}
        if (src, startup) not in memo:
            at = self.positions(src, "server_args")       # positions, then the one row
            if startup is not None and len(at):
                at = at[(sa["startup"].to_numpy()[at] == startup)]
            # (memoised by the row: an input with one start-up asks for the same row twice,
            # as its last and as its start-up's, and a row of 65 typed columns is slow to read)
            memo[(src, startup)] = self._config_row(sa, int(at[-1])) if len(at) else {}
        return dict(memo[(src, startup)])

    def mark_single_use(self) -> "ParsedLog":
        """Say that this log is read by one analysis, once, and nothing reads its tables after
        it nor asks its results for their decode windows (results made by forked workers come
        back without them: library._without_windows): the command line's ``summary`` and
        ``breakeven``.  The one run of such a log may
        let its decode table go once its windows are made (``release``; library.each_run,
        analysis/breakeven.run_windows): a gigabyte log's table is a third of the peak
        (issue 37).  A log the API returns is never marked."""
        self.__dict__["_single_use"] = True
        return self

    @property
    def single_use(self) -> bool:
        return bool(self.__dict__.get("_single_use"))

    def settle(self, n: int) -> None:
        """Between the phases of a single-use log's analysis over ``n`` windows: the memory
        freed so far goes back to the system (_memory.trim).  The heap keeps what is freed
        for reuse (_memory.tune), and a large log's phases free arrays of every window in an
        order the next phase does not reuse: 36 MiB of a gigabyte log's peak.  Only where
        the windows are many (SETTLE_LEAST): a trim walks the heap."""
        if self.single_use and n >= SETTLE_LEAST:
            from ._memory import trim
            trim()

    def release(self, name: str) -> None:
        """Let table ``name``'s rows go (a single-use log, ``mark_single_use``): the table
        becomes a ReleasedTable, any use of which is an internal error — never the silent
        answer of an empty table."""
        self.tables[name] = ReleasedTable(name)
        rows = self.__dict__.get("_one_rows", {})
        for key in [k for k in rows if k[1] == name]:
            del rows[key]
        self.__dict__.get("_rows", {}).pop(name, None)

    def _config_row(self, sa: pd.DataFrame, i: int) -> dict:
        memo = self.__dict__.setdefault("_config_rows", {})
        if i not in memo and len(sa) < 8 and not is_light(sa):
            fixed = set(TABLES["server_args"].names)
            memo[i] = {k: _plain(v) for k, v in sa.iloc[i].items() if k not in fixed}
        elif i not in memo:
            # many inputs: the table's columns as Python lists, once (a row read with iloc
            # crosses 65 typed columns, 0.3 ms; 0.02 ms a row this way; the same values)
            cols = self.__dict__.get("_config_cols")
            if cols is None or cols[0] is not sa:
                fixed = set(TABLES["server_args"].names)
                names = [c for c in sa.columns if c not in fixed]
                cols = self.__dict__["_config_cols"] = (sa, names,
                                                        [sa[c].tolist() for c in names])
            memo[i] = {k: _plain(v[i]) for k, v in zip(cols[1], cols[2])}
        return memo[i]

    @staticmethod
    def _take(df: pd.DataFrame, at: "np.ndarray | slice", renumber: bool = False) -> pd.DataFrame:
        """df's rows at positions ``at`` (ascending, or a slice): a slice when they are
        contiguous (the usual case: the tables concatenate the inputs in order), which copies
        nothing; ``renumber``: with a fresh 0 … n−1 index."""
        sl = at if isinstance(at, slice) else contiguous(at)
        if sl is not None:
            out = df.iloc[sl]
            if renumber and is_light(out):      # (an eaglelog Frame: the same columns anew)
                return out.reset_index(drop=True)
            if renumber:            # a new index on the slice object: its data stay shared
                out.index = pd.RangeIndex(len(out))
            return out
        out = df.take(at)
        return out.reset_index(drop=True) if renumber else out

    def rows_of(self, source: str, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        """The rows of table ``name`` that input ``source`` holds, only ``columns`` of them if
        given (one pass over the table for all inputs, kept: asking for every input of many
        costs no more than asking once)."""
        df, at = self.tables[name], self._where(source, name)
        if columns is not None:        # only these columns' rows: no copy of the table
            return pd.DataFrame({c: self._take(df[c], at) for c in columns if c in df.columns})
        return self._take(df, at)

    def values(self, source: str, name: str, column: str, dtype=float, na=np.nan) -> np.ndarray:
        """Column ``column`` of the rows of table ``name`` that input ``source`` holds, as a
        numpy array of ``dtype`` (NA as ``na``; an empty array when the table lacks it).
        No DataFrame is built: a small log's analyses ask for a few columns many times, and
        each frame costs more than the rows in it."""
        df = self.tables[name]
        if column not in df.columns:
            return np.empty(0, dtype=dtype)
        at = self._where(source, name)
        col = df[column]
        if is_categorical(col):
            if dtype is object:        # (the categories taken by code: no cast of the column)
                codes = cat_codes(col)[at]
                cats = np.append(np.asarray(categories(col), dtype=object), na)
                return cats[codes]     # (code −1, NA: the last)
            col = promoted(col).astype(object)
        return col.to_numpy(dtype=dtype, na_value=na)[at]

    def codes(self, source: str, name: str, column: str) -> tuple[np.ndarray, list[str]]:
        """Column ``column`` of input ``source``'s rows of table ``name`` as (integer codes,
        the label of each code), the labels in the order they first occur; a missing value is
        the label 'nan'.  A categorical column gives its own codes: no string per row is
        made or compared (a long log's profiler phases are hundreds of thousands of rows)."""
        col = self.tables[name][column] if column in self.tables[name].columns else None
        if col is None:
            return np.empty(0, dtype=np.int64), []
        at = self._where(source, name)
        if is_categorical(col):
            raw = np.asarray(cat_codes(col)[at], dtype=np.int64)
            names = [str(c) for c in categories(col)] + ["nan"]
        else:
            vals = self.values(source, name, column, object).astype(str)
            names, raw = np.unique(vals, return_inverse=True)
            names = [str(c) for c in names]
            raw = raw.astype(np.int64)
        if not len(raw):
            return raw, []
        # renumbered by first occurrence (code −1, NA: the label 'nan')
        key = np.where(raw < 0, len(names) - 1, raw) if len(names) else raw
        present, first = np.unique(key, return_index=True)
        order = present[np.argsort(first, kind="stable")]
        new = np.empty(int(key.max()) + 1, dtype=np.int64)
        new[order] = np.arange(len(order))
        return new[key], [names[int(k)] for k in order]

    def positions(self, source: str, name: str) -> np.ndarray:
        """The row positions (ascending) of table ``name`` that input ``source`` holds."""
        at = self._where(source, name)
        return np.arange(at.start, at.stop) if isinstance(at, slice) else at

    def span_s(self, source: str) -> float | None:
        """Seconds from the first to the last timestamp of input ``source``'s rows over every
        table (a missing one skipped; None: none has one)."""
        got = self._span(source)
        if got is None:
            return None
        sec, us = divmod(got[1] - got[0], 1_000_000)   # (as Timedelta.total_seconds adds them)
        return sec + us / 1e6

    def _span(self, source: str) -> tuple[int, int] | None:
        """(first, last) timestamp of ``source``'s rows in microseconds, or None; of many
        inputs, every input's at once (a pass per table, not per input and table: a unit of
        one of them is given its own, ``subset``)."""
        spans = self.__dict__.get("_spans")
        if spans is not None and source in spans:
            return spans[source]
        several = len(self.sources) > 1
        wanted = [i.name for i in self.sources] if several else [source]
        found: dict[str, tuple[int, int]] = {}
        for name, df in self.tables.items():
            if "timestamp" not in df.columns or not len(df):
                continue
            ts = df["timestamp"].to_numpy(dtype="datetime64[us]").view(np.int64)  # (a view)
            rows = self._rows_of(name) if several else None
            for src in wanted:
                if rows is not None and src not in rows:
                    continue
                t = ts[rows[src] if rows is not None else self._where(src, name)]
                got = _stamp_range(t)
                if got is not None:
                    a, b = got
                    got = found.get(src)
                    found[src] = (a, b) if got is None else (min(got[0], a), max(got[1], b))
        spans = self.__dict__.setdefault("_spans", {})
        for src in wanted:
            spans[src] = found.get(src)
        return spans[source] if source in spans else found.get(source)

    def _where(self, source: str, name: str) -> "slice | np.ndarray":
        """positions(), as a slice where they are contiguous — every row of a one-input log's
        table, the usual case — and kept per table: the analyses of a small log ask for the
        same rows dozens of times, and each answer was a pass over the column."""
        df = self.tables[name]
        memo = self.__dict__.setdefault("_one_rows", {})
        got = memo.get((source, name))
        if got is not None and (got[0] is df or got[0] is MINE):
            return got[1]
        rows = self._rows_of(name)
        if rows is not None:
            at = rows.get(source, np.empty(0, dtype=np.int64))
            sl = contiguous(at)
            return sl if sl is not None else at
        if not len(df):
            return slice(0, 0)
        col = df["source"]
        if is_categorical(col):             # (the codes: no comparison of strings, no Series)
            cats = categories(col)
            k = cats.index(source) if source in cats else -2
            hit = cat_codes(col) == k
        else:
            hit = (col == source).to_numpy(dtype=bool)
        if hit.all():
            out: slice | np.ndarray = slice(0, len(df))
        else:
            out = np.flatnonzero(hit)
            sl = contiguous(out)
            if sl is not None:
                out = slice(sl.start, sl.stop)
            else:
                out.setflags(write=False)
        memo[(source, name)] = (df, out)
        return out

    def startups(self, source: str) -> list[tuple[int, int | None]]:
        """(startup, line of its server_args or None for 0) of every start-up segment of
        ``source`` that holds decode lines or profile blocks."""
        seen: set[int] = set()
        for name in ("decode", "prof"):
            df = self.tables[name]
            if "startup" not in df.columns or not len(df):
                continue
            # the distinct start-ups by hashing the integer column where it lies (no float copy
            # and no sort of millions of rows: issue 37)
            seen.update(unique_ints(df["startup"], self._where(source, name)))
        st = self.values(source, "server_args", "startup")
        ln = self.values(source, "server_args", "line_no")
        ok = ~(np.isnan(st) | np.isnan(ln))
        lines = dict(zip(st[ok].astype(int).tolist(), ln[ok].astype(int).tolist()))
        return [(k, lines.get(k)) for k in sorted(seen)]

    def _rows_of(self, name: str) -> dict[str, np.ndarray] | None:
        """Row positions of each input in table ``name`` (one pass over the table, kept: the
        analyses of many inputs ask once per input), or None when one input holds them all."""
        memo = self.__dict__.setdefault("_rows", {})
        if name not in memo:
            if len(self.sources) < 2 or not len(self.tables[name]):
                memo[name] = None
                return None
            src = self.tables[name]["source"]
            codes, uniques = pd.factorize(src.astype(object) if not isinstance(
                src.dtype, pd.CategoricalDtype) else src)
            order = np.argsort(codes, kind="stable")
            cuts = np.flatnonzero(np.diff(codes[order])) + 1
            memo[name] = {str(uniques[codes[g[0]]]): g
                          for g in np.split(order, cuts) if len(g)}
        return memo[name]

    def subset(self, source: str, startup: int | None = None,
               segment: "ConfigSegment | None" = None) -> "ParsedLog":
        """The rows of one input (and one start-up segment of it, and one configuration
        segment of that: ``segments``) as a ParsedLog of their own."""
        whole = startup is None and segment is None
        tables = LazyTables() if whole else {}
        empty = self.__dict__.setdefault("_empty", {})
        for name, df in self.tables.items():
            rows = self._rows_of(name)
            if rows is not None and source not in rows:
                # none of this input's rows: one empty frame per table, shared by the inputs
                if name not in empty:
                    empty[name] = df.iloc[:0].reset_index(drop=True)
                df = empty[name]
            elif rows is not None and len(rows) > 1 and whole:
                tables[name] = _Cut(df, rows[source])     # (cut when first read)
                continue
            elif rows is not None and len(rows) > 1:
                df = self._take(df, rows[source], renumber=True)
            m = None
            if rows is None and len(df):
                m = np.zeros(len(df), dtype=bool)
                m[self._where(source, name)] = True
            if startup is not None:
                s = (df["startup"] == startup).to_numpy(dtype=bool, na_value=False)
                m = s if m is None else m & s
            if segment is not None and name != "server_args" and "line_no" in df.columns:
                s = segment.holds(df["line_no"].to_numpy(dtype=np.int64, na_value=-1))
                m = s if m is None else m & s
            # the whole table (one input, one start-up: the usual case) is shared, not copied
            tables[name] = df if m is None or m.all() else df[m].reset_index(drop=True)
            if segment is not None and segment.parts and name in ("decode", "prefill"):
                t = tables[name]
                tables[name] = t.assign(part=segment.part(
                    t["line_no"].to_numpy(dtype=np.int64, na_value=-1)))
        if segment is not None:
            tables["server_args"] = segment.configured(tables["server_args"])
        named = self.__dict__.get("_sources_by")
        if named is None:
            named = self.__dict__["_sources_by"] = {i.name: i for i in reversed(self.sources)}
        info = named[source]
        by = self.__dict__.get("_diags_by")
        if by is None:
            by = self.__dict__["_diags_by"] = {}
            for d in self.diagnostics:
                by.setdefault(d.source, []).append(d)
        out = ParsedLog(tables, [info], list(by.get(source, ())))
        # every row of every table here is the input's: _where's answers, known (the first
        # question per table was a pass over the source column, 20–70 µs of a small log's run)
        out.__dict__["_one_rows"] = {
            (source, name): (MINE, slice(0, len(df.at) if type(df) is _Cut else len(df)))
            for name, df in dict.items(tables)}
        if isinstance(segment, WholeRun):
            out.__dict__["_config_path"] = segment
        if startup is None and segment is None:
            # every row of the input: its span and configurations are the ones read here
            out.__dict__["_spans"] = {source: self._span(source)}
            memo = self.__dict__.get("_config_memo", {})
            out.__dict__["_config_memo"] = {k: v for k, v in memo.items() if k[0] == source}
        return out

    def select(self, since: str | None = None, until: str | None = None,
               startup: int | None = None) -> "ParsedLog":
        """The rows of a time span and/or one server start-up, as a ParsedLog of their own.

        ``since``/``until``: 'YYYY-MM-DD HH:MM[:SS]', 'HH:MM[:SS]' (on the date of each input's
        first line) or '+N[s|m|h]' (after each input's first line); rows without a timestamp
        are left out of a time selection.  ``startup``: the start-up number (1 for the first
        ``server_args=`` line; 0 for the lines before it).  Raises EaglelogError when nothing
        is left."""
        if since is None and until is None and startup is None:
            return self
        tables = {}
        for name, df in self.tables.items():
            keep = np.ones(len(df), dtype=bool)
            if startup is not None and "startup" in df.columns and name != "server_args":
                keep &= (df["startup"] == startup).to_numpy(dtype=bool, na_value=False)
            if name == "server_args" and startup is not None:
                keep &= (df["startup"] == startup).to_numpy(dtype=bool, na_value=False)
            if (since or until) and "timestamp" in df.columns and name != "server_args":
                ts = self._times(name)
                lo = np.full(len(df), np.datetime64("NaT"), dtype="datetime64[us]")
                hi = lo.copy()
                for info in self.sources:
                    m = (df["source"] == info.name).to_numpy(dtype=bool)
                    if not m.any():
                        continue
                    first = self._first_time(info.name)
                    lo[m] = _when(since, first, "--since") if since else np.datetime64("NaT")
                    hi[m] = _when(until, first, "--until") if until else np.datetime64("NaT")
                ok = ~np.isnat(ts)
                if since:
                    ok &= ts >= lo
                if until:
                    ok &= ts <= hi
                keep &= ok
            tables[name] = df if keep.all() else df[keep].reset_index(drop=True)
        if "prof_phases" in tables and len(tables["prof_phases"]):
            ph, pr = tables["prof_phases"], tables["prof"]
            key = pd.MultiIndex.from_arrays([pr["source"].astype(str), pr["line_no"]])
            m = pd.MultiIndex.from_arrays([ph["source"].astype(str), ph["block"]]).isin(key)
            tables["prof_phases"] = ph[m].reset_index(drop=True)
        if not any(len(tables[t]) for t in ("decode", "prof", "bench", "vllm_spec")
                   if t in tables):
            what = ", ".join(x for x in (f"since {since}" if since else "",
                                         f"until {until}" if until else "",
                                         f"start-up {startup}" if startup is not None else "")
                             if x)
            raise EaglelogError(f"no decode line or EAGLE3_PROF block is left ({what})")
        return ParsedLog(tables, self.sources, self.diagnostics)

    def _times(self, name: str) -> np.ndarray:
        """The table's timestamps; a row without one (an EAGLE3_PROF block printed with
        print(), say) takes that of the last decode line before it in the same input."""
        df = self.tables[name]
        ts = df["timestamp"].to_numpy(dtype="datetime64[us]").copy()
        miss = np.isnat(ts)
        if not miss.any() or name == "decode":
            return ts
        dec = self.tables["decode"]
        for info in self.sources:
            m = miss & (df["source"] == info.name).to_numpy(dtype=bool)
            if not m.any():
                continue
            d = dec[(dec["source"] == info.name).to_numpy(dtype=bool)]
            dt = d["timestamp"].to_numpy(dtype="datetime64[us]")
            ok = ~np.isnat(dt)
            lines, dt = d["line_no"].to_numpy(dtype=np.int64)[ok], dt[ok]
            if not len(lines):
                continue
            order = np.argsort(lines)
            lines, dt = lines[order], dt[order]
            at = np.searchsorted(lines, df["line_no"].to_numpy(dtype=np.int64)[m]) - 1
            ts[np.flatnonzero(m)] = np.where(at >= 0, dt[np.clip(at, 0, None)],
                                             np.datetime64("NaT"))
        return ts

    def _first_time(self, source: str):
        firsts = []
        for df in self.tables.values():
            if "timestamp" in df.columns and len(df):
                t = df.loc[(df["source"] == source).to_numpy(dtype=bool), "timestamp"]
                t = t.dropna()
                if len(t):
                    firsts.append(t.min())
        return min(firsts) if firsts else None

    def segments(self, source: str, startup: int | None = None) -> list["ConfigSegment"]:
        """The configuration segments of one input (one start-up of it): the lines between two
        changes of the speculative configuration at run time — SGLang's 'Adaptive spec params
        updated: steps A -> B' lines (table spec_params) and a change of k between two vLLM
        spec lines.  One segment (the whole run) when nothing changes (docs/engines.md)."""
        def rows(name):
            df = self.tables.get(name)
            if df is None or not len(df):
                return None
            m = (df["source"] == source).to_numpy(dtype=bool)
            if startup is not None:
                m = m & (df["startup"] == startup).to_numpy(dtype=bool, na_value=False)
            return df[m].sort_values("line_no") if m.any() else None

        cfg = self.config(source, startup)
        start = cfg.get("speculative_num_steps")
        start = int(start) if isinstance(start, (int, float)) and not isinstance(start, bool) \
            and math.isfinite(start) else None
        changes: list[tuple[int, int]] = []        # (first line of the new config, its steps)
        sp = rows("spec_params")
        if sp is not None:
            if "tp" in sp.columns and sp["tp"].notna().any():   # every TP rank prints it
                tp = sp["tp"].astype("Int64").fillna(-1)
                sp = sp[(tp == tp.min()).to_numpy(dtype=bool)]
            cur = start
            for line, a, b in zip(sp["line_no"], sp["steps_from"], sp["steps_to"]):
                if pd.isna(b):
                    continue
                if cur is None and not pd.isna(a):
                    cur = start = int(a)
                if int(b) != cur:
                    changes.append((int(line), int(b)))
                    cur = int(b)
        vs = rows("vllm_spec")
        if vs is not None and "k" in vs.columns and vs["k"].notna().any():
            vs = vs[vs["k"].notna().to_numpy(dtype=bool)]
            ks = vs["k"].to_numpy(dtype=np.int64)
            at = vs["paired_line"].fillna(vs["line_no"]).to_numpy(dtype=np.int64) \
                if "paired_line" in vs.columns else vs["line_no"].to_numpy(dtype=np.int64)
            start = int(ks[0])
            for i in np.flatnonzero(ks[1:] != ks[:-1]) + 1:
                changes.append((int(at[i]), int(ks[i])))
        if not changes:
            return [ConfigSegment(None, None, start)]
        changes.sort()
        out, lo, steps = [], None, start
        for line, b in changes:
            out.append(ConfigSegment(lo, line, steps))
            lo, steps = line, b
        out.append(ConfigSegment(lo, None, steps))
        return out

    def units(self) -> list[tuple[str, "ParsedLog"]]:
        """What the analyses look at one by one: each input, each server start-up of an input
        that holds several (labelled 'server.log [start-up 2 at line 615]'), and each
        configuration segment of a run whose speculative config changed at run time
        ('server.log [steps 5 from line 120]', ``segments``) — two configurations are never
        pooled.  Each unit comes with the engine corrections of analysis/engines.py applied."""
        return [(label, self.unit(plan)) for label, plan in self.unit_plans()]

    def unit_plans(self, whole: bool = False) -> list[tuple[str, tuple]]:
        """The units' labels and what each is made of, (source, start-up, segment), without
        building their tables (``unit``): cheap, so that processes can build their own.

        A run whose configuration changed at run time gives one unit per configuration, every
        segment of it pooled (each segment's first window, which holds the change, is left
        out: ``ConfigSegment.parts``); ``whole``: and, first, the whole run across its
        configurations ('server.log [whole run: steps 2, 3, 5 in 46 segments]') — the
        per-stream rate and its verdict need no configuration (breakeven, summary)."""
        out = []
        for info in self.sources:
            if info.error and not any(info.counts.values()):
                continue
            ups = self.startups(info.name)
            several = len(ups) > 1
            for k, line in (ups if several else [(None, None)]):
                where = ("" if not several else f"start-up {k} at line {line}" if line else
                         "before the first start-up")
                segs = self.segments(info.name, k)
                if len(segs) <= 1:
                    out.append((f"{info.name} [{where}]" if where else info.name,
                                (info.name, k, None)))
                    continue
                # (the whole run: when the configuration switched back and forth at run time —
                # adaptive speculation — not for one deliberate change between two configs)
                mixed = whole and (len(segs) >= 3 or self.config(info.name, k).get(
                    "speculative_adaptive") is True)
                for seg in ([whole_run(segs)] if mixed else []) + by_configuration(segs):
                    label = " · ".join(x for x in (where, seg.label) if x)
                    out.append((f"{info.name} [{label}]", (info.name, k, seg)))
        return out

    def unit(self, plan: tuple) -> "ParsedLog":
        """The ParsedLog of one unit_plans() entry, engine corrections applied."""
        from .analysis import engines
        source, startup, segment = plan
        return engines.apply(self.subset(source, startup, segment), source)[0]

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={'released' if isinstance(v, ReleasedTable) else len(v)}"
                           for k, v in self.tables.items())
        return (f"<ParsedLog {len(self.sources)} input(s): {counts}; "
                f"{len(self.diagnostics)} diagnostics>")


MINE = object()     # _where's memo: every row of the table, whichever frame it becomes, is
#                     the input's (subset: a unit's tables)


class _Cut:
    """One input's rows of a table of many inputs, not cut yet (LazyTables)."""

    __slots__ = ("df", "at")

    def __init__(self, df: pd.DataFrame, at: np.ndarray) -> None:
        self.df, self.at = df, at

    def make(self) -> pd.DataFrame:
        return ParsedLog._take(self.df, self.at, renumber=True)


class LazyTables(dict):
    """A unit's tables (ParsedLog.subset of many inputs), each cut from its log's when first
    read: a small log's run reads about half of them, and cutting one of dozens of typed
    columns costs 0.05–0.2 ms (2,000 small logs: issue 37).  Every way of reading a dict
    (item, get, items, values, iteration, dict(...), copy) gives the cut frames."""

    def __getitem__(self, name):
        v = dict.__getitem__(self, name)
        if type(v) is _Cut:
            v = v.make()
            dict.__setitem__(self, name, v)
        return v

    def get(self, name, default=None):
        return self[name] if name in self else default

    def __iter__(self):
        return iter(list(dict.keys(self)))

    def items(self):
        return [(k, self[k]) for k in list(dict.keys(self))]

    def values(self):
        return [self[k] for k in list(dict.keys(self))]

    def copy(self) -> dict:
        return dict(self.items())

    def __reduce__(self):
        return (dict, (self.items(),))


class ReleasedTable:
    """The place of a table a single-use log let go (ParsedLog.release): reading it in any
    way raises, so that an analysis that still needed its rows fails loudly."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name

    def _fail(self, *_):
        raise RuntimeError(f"table {self.__dict__['_name']!r} was released after its windows "
                           "were made, and is read again (ParsedLog.release)")

    __getattr__ = __getitem__ = __len__ = __iter__ = __contains__ = _fail

    def __repr__(self) -> str:
        return f"<released table {self.__dict__['_name']!r}>"


@dataclass(frozen=True)
class ConfigSegment:
    """Lines [lo, hi) of a run (None: open) with one speculative configuration: ``steps`` is
    its num_steps (SGLang) or k (vLLM); None when the log does not say.

    ``parts``: several such line ranges with the same configuration, pooled (``part`` numbers
    each decode and prefill row by its range: a series of its own, whose first window is left
    out, never a window that spans the other configurations' lines).  A whole run across its
    configurations is a ``WholeRun``."""

    lo: int | None
    hi: int | None
    steps: int | None
    parts: tuple | None = None

    def holds(self, lines: np.ndarray) -> np.ndarray:
        return self.part(lines) >= 0 if self.parts else between(lines, self.lo, self.hi)

    def part(self, lines: np.ndarray) -> np.ndarray:
        """Each line's range in ``parts`` (0, 1, …), −1 outside them."""
        out = np.full(len(lines), -1, dtype=np.int64)
        for i, (lo, hi) in enumerate(self.parts or ((self.lo, self.hi),)):
            out[between(lines, lo, hi)] = i
        return out

    @property
    def label(self) -> str:
        what = f"steps {self.steps}" if self.steps is not None else "config unknown"
        if self.parts:
            return f"{what}: {len(self.parts)} segments pooled"
        span = (f"from line {self.lo}" if self.lo is not None else "") + \
            (" " if self.lo is not None and self.hi is not None else "") + \
            (f"until line {self.hi}" if self.hi is not None else "")
        return f"{what} {span}" if span else what

    def configured(self, server_args: pd.DataFrame) -> pd.DataFrame:
        """The start-up rows with this segment's num_steps as the config (and, for a chain,
        num_draft_tokens = num_steps + 1, as SGLang forces it for topk 1)."""
        if self.steps is None or not len(server_args):
            return server_args
        sa = server_args.copy()
        sa["speculative_num_steps"] = self.steps
        if "speculative_num_draft_tokens" in sa.columns and "speculative_eagle_topk" in sa.columns:
            chain = (sa["speculative_eagle_topk"].astype(object) == 1).to_numpy(dtype=bool)
            sa["speculative_num_draft_tokens"] = sa["speculative_num_draft_tokens"].astype(object)
            sa.loc[chain, "speculative_num_draft_tokens"] = self.steps + 1
        return sa


def between(lines: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """lo ≤ line < hi (None: open) for every line number."""
    m = np.ones(len(lines), dtype=bool)
    if lo is not None:
        m &= lines >= lo
    if hi is not None:
        m &= lines < hi
    return m


def whole_run(segs: list[ConfigSegment]) -> "WholeRun":
    """The whole run of configuration segments ``segs``."""
    ks = [s.steps for s in segs if s.steps is not None]
    return WholeRun(None, None, max(ks) if ks else None, None,
                    tuple((s.lo, s.hi, s.steps) for s in segs))


@dataclass(frozen=True)
class WholeRun(ConfigSegment):
    """Every line of a run whose configuration changed at run time; ``path``: its segments,
    (first line, end line, steps) — each window's configuration, for the fit's
    per-configuration levels (analysis/breakeven.run_windows).  ``steps`` is the largest of
    them, for the checks that bound an accept length by it."""

    path: tuple = ()

    @property
    def mixed(self) -> tuple:
        """The distinct steps of the run, ascending ('unknown' where the log does not say)."""
        return tuple(sorted({p[2] for p in self.path if p[2] is not None})) or ("unknown",)

    def holds(self, lines: np.ndarray) -> np.ndarray:
        return np.ones(len(lines), dtype=bool)

    def steps_at(self, lines: np.ndarray) -> np.ndarray:
        """Each line's configuration, as an index into ``path``'s distinct steps (0, 1, …)."""
        codes = {k: i for i, k in enumerate(dict.fromkeys(p[2] for p in self.path))}
        out = np.zeros(len(lines), dtype=np.int64)
        for lo, hi, k in self.path:
            out[between(lines, lo, hi)] = codes[k]
        return out

    @property
    def label(self) -> str:
        return (f"whole run: steps {', '.join(str(k) for k in self.mixed)} in "
                f"{len(self.path)} segments")


def by_configuration(segs: list[ConfigSegment]) -> list[ConfigSegment]:
    """One unit per configuration (in order of first appearance): a lone segment as it is,
    several pooled (ConfigSegment.parts)."""
    groups: dict = {}
    for s in segs:
        groups.setdefault(s.steps, []).append(s)
    return [g[0] if len(g) == 1 else
            ConfigSegment(g[0].lo, g[-1].hi, k, tuple((s.lo, s.hi) for s in g))
            for k, g in groups.items()]


def _stamp_range(t: np.ndarray) -> tuple[int, int] | None:
    """(least, largest) of int64 stamps, NaT (the least int64) left out; None: none.  Without
    a copy of the stamps that are not NaT (a gigabyte log's: 30 MB, made twice a summary):
    NaT is below every stamp, so the largest is the plain max, and the least is the plain min
    unless some stamp is NaT."""
    if not len(t):
        return None
    nat = np.iinfo(np.int64).min
    hi = int(t.max())
    if hi == nat:
        return None
    lo = int(t.min())
    if lo == nat:
        lo = int(np.min(t, where=t != nat, initial=hi))
    return lo, hi


def contiguous(at: np.ndarray) -> slice | None:
    """Ascending positions ``at`` as a slice when they are contiguous (and not empty)."""
    if len(at) and int(at[-1]) - int(at[0]) + 1 == len(at):
        return slice(int(at[0]), int(at[-1]) + 1)
    return None


def _when(text: str, first, option: str):
    """A --since/--until value as a datetime64[us] for an input whose first line is at
    ``first`` (a pandas Timestamp or None)."""
    import re
    t = text.strip()
    m = re.fullmatch(r"\+(\d+(?:\.\d+)?)\s*([smh]?)", t)
    if m:
        if first is None:
            raise EaglelogError(f"{option} {text}: the log has no timestamps to count from")
        secs = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
        return np.datetime64(first + pd.Timedelta(seconds=secs), "us")
    if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", t):
        if first is None:
            raise EaglelogError(f"{option} {text}: the log has no timestamps to take a date from")
        t = f"{first.date()} {t}"
    try:
        ts = pd.Timestamp(t)
    except (ValueError, TypeError):
        raise UsageProblem(f"{option} {text!r}: not a time (YYYY-MM-DD HH:MM[:SS], HH:MM[:SS] or "
                            "+N[s|m|h] after the first line)") from None
    if ts.tzinfo is not None:
        # the log's times are SGLang's wall clock, with no zone: a 'Z' (a docker or kubectl
        # stamp pasted) or an offset would be read as that clock, silently an offset away
        raise UsageProblem(f"{option} {text!r}: a time zone is not taken: the log's times are "
                           "SGLang's local wall clock, which names no zone; write the time as "
                           "the log's prefix prints it (YYYY-MM-DD HH:MM[:SS])")
    return np.datetime64(ts, "us")


def _plain(v):
    """numpy/pandas scalars -> plain Python values (json.dumps-able); NA -> None."""
    t = type(v)
    if t is str or t is int or t is bool:     # (the usual values first: pd.isna is slow)
        return v
    if v is None:
        return None
    if t is float:
        return None if v != v else v
    if isinstance(v, (list, dict)):
        return v
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        return v
    return v.item() if hasattr(v, "item") else v
