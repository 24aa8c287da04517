"""Turn one input's byte chunks into records: the hot loop.

Only lines that contain a family marker are decoded and parsed: a compiled alternation finds the
next marker in the chunk, the line around it is cut out, and its parser is called.  After an
EAGLE3_PROF header the scanner walks line by line until every open block is closed, because block
lines carry no marker.  Line numbers come from counting newlines between hits (memchr speed).
Lines that carry no record are counted, never parsed.

``Scanner`` holds the state that crosses chunk boundaries (open blocks, the running day for
time-only prefixes, counters), so chunks can be fed one by one as they are read.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import dataclass


from ..errors import printable
from .. import frame as _frame
from .._lazy import pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames, light_all_na
from . import eagle3_prof, sglang
from .prefix import (cri_partial, read_prefix, split_bracketed, strip_ansi, strip_wrapper,
                     valid_datetime)

try:   # the C accelerator (setup.py); without it every line takes the Python path
    from . import _fastscan
except ImportError:  # pragma: no cover - a build without a C compiler
    _fastscan = None

MARKERS = re.compile(
    rb"(?P<prof>EAGLE3_PROF)|(?P<decode>Decode batch)|(?P<prefill>Prefil)|"
    rb"(?P<server_args>server_args=)|(?P<finish>Finish: obj=)|(?P<req_json>\"request\.finished\")|"
    rb"(?P<legacy_prefill>new fill batch\. )|(?P<legacy_decode>#running-req: )|"
    rb"(?P<spec_params>Adaptive spec params updated: )")

LINE_PARSERS = {
    "decode": ("decode", sglang.parse_decode_line),
    "legacy_decode": ("decode", sglang.parse_decode_line),
    "prefill": ("prefill", sglang.parse_prefill_line),
    "legacy_prefill": ("prefill", sglang.parse_prefill_line),
    "server_args": ("server_args", sglang.parse_server_args_line),
    "finish": ("requests", sglang.parse_finish_line),
    "req_json": ("requests", sglang.parse_request_json_line),
    "spec_params": ("spec_params", sglang.parse_spec_params_line),
}
DOCKER_SPLIT = 16000
EPOCH = _dt.date(1970, 1, 1)  # docker's json-file driver splits lines longer than 16 KiB
# the tables that keep a wrapper's time (the schema's wrapper_time column)
_WRAPPER_TABLES = frozenset(n for n, t in TABLES.items() if "wrapper_time" in t.names)
# diagnostics kept per kind and input; the rest are counted (a generated log can break an
# identity in every one of its 100,000 blocks: the records are kept, 1,000 warnings say so)
MAX_KEPT = 1000
FLUSH_ROWS = 20_000    # Python-parsed rows kept as dicts until a table has this many
_PURE = os.environ.get("EAGLELOG_PURE_PYTHON", "") not in ("", "0")


@dataclass
class Diagnostic:
    source: str
    line_no: int | None
    # malformed (a record line that could not become a record), truncated (last line without
    # newline), bad_value (record kept, one value unreadable), incomplete_block, identity,
    # block_line (unknown line inside a block), date (dates completed), input_error
    kind: str
    message: str
    severity: str = "warning"  # or "error"
    more: int = 0              # > 0: stands for this many diagnostics of its kind not kept

    def __str__(self) -> str:
        # one line on a terminal: a log's control characters (ESC, NUL, CR, U+2028 …) quoted
        # in a message are written as escapes, never sent raw (issue 13: a log must not be
        # able to drive the terminal or forge a second message line)
        where = f"{self.source}:{self.line_no}" if self.line_no else self.source
        return printable(f"{where}: {self.message}")


class _IdentityWords:
    """The identity problems of one EAGLE3_PROF block the C scan read (its lines' bytes, from
    the header at line ``line``), worded by the Python parser when a message is first read."""

    __slots__ = ("raw", "line", "_words")

    def __init__(self, raw: bytes, line: int):
        self.raw, self.line, self._words = raw, line, None

    def words(self) -> list[str]:
        if self._words is None:
            asm = eagle3_prof.BlockAssembler()
            for ln, raw in enumerate(self.raw.split(b"\n")[:-1], self.line):
                text = raw.decode("ascii")
                if ln == self.line:
                    idx = text.find("EAGLE3_PROF")
                    asm.start(ln, read_prefix(text[:idx]), eagle3_prof.parse_header(text[idx:]))
                else:
                    asm.feed(ln, *split_bracketed(text))
            asm.finish()
            self._words = [f"EAGLE3_PROF block breaks an identity: {p}"
                           for p in asm.done[0].identity_problems()]
        return self._words


class _IdentityDiagnostic(Diagnostic):
    """The ``i``-th identity warning of a block (_IdentityWords): a Diagnostic whose message is
    worded when read.  It equals, copies (dataclasses.replace) and pickles (the table cache, a
    process pool) as a plain Diagnostic with that message."""

    def __init__(self, source: str, line_no: int | None, kind: str = "identity",
                 message: str | None = None, severity: str = "warning", more: int = 0, *,
                 words: _IdentityWords | None = None, i: int = 0):
        self.source, self.line_no, self.kind = source, line_no, kind
        self.severity, self.more = severity, more
        self._fixed, self._words, self._i = message, words, i

    @property
    def message(self) -> str:        # type: ignore[override]
        if self._fixed is None:
            w = self._words.words()
            self._fixed = w[self._i] if self._i < len(w) else \
                "EAGLE3_PROF block breaks an identity"
            self._words = None
        return self._fixed

    def _key(self) -> tuple:
        return (self.source, self.line_no, self.kind, self.message, self.severity, self.more)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Diagnostic):
            return NotImplemented
        return self._key() == (other.source, other.line_no, other.kind, other.message,
                                other.severity, other.more)

    __hash__ = None              # (as the dataclass's: mutable, compared by value)

    def __reduce__(self):
        return (Diagnostic, self._key())


@dataclass
class ScanStats:
    lines: int = 0
    blank: int = 0
    consumed: int = 0
    first_skipped: int | None = None
    bytes: int = 0

    @property
    def skipped(self) -> int:
        return max(self.lines - self.blank - self.consumed, 0)


def _key_spec(keys: dict) -> list[tuple[str, str, str]]:
    """sglang's key table as the C accelerator takes it: (key, column, kind); keys whose values
    need Python (ISO timestamps) get kind 'python' and their lines go to the Python parser."""
    kinds = {sglang._int: "int", sglang._int32: "int32", sglang._float: "float",
             sglang._pct: "pct"}
    spec = [(k, col, kinds.get(conv, "python")) for k, (col, conv) in keys.items()]
    return spec + [(label, "graph_backend", "graph") for label in sglang.GRAPH_LABELS]


_SPECS: tuple | None = None    # (decode key spec, prefill key spec, FastScanner.types())


def _fast_scanner(columns: dict | None):
    """A C accelerator for a Scanner: the key tables made once (every scanner's are the same:
    a glob of small logs made them again for each), the columns kept as sets (the C code asks
    each of its columns 'in' them)."""
    global _SPECS
    if _SPECS is None:
        d, p = _key_spec(sglang.DECODE_KEYS), _key_spec(sglang.PREFILL_KEYS)
        _SPECS = (d, p, _fastscan.FastScanner(d, p).types())
    keep = None if columns is None else \
        {t: None if v is None else frozenset(v) for t, v in columns.items()
         if t in ("decode", "prefill")}
    return _fastscan.FastScanner(_SPECS[0], _SPECS[1], keep)


def fast_available() -> bool:
    return _fastscan is not None


def marker_line(search, chunk: bytes, pos: int, counted_to: int, line_no: int):
    """The next line from ``pos`` that holds a marker: (match, line start, newline offset or -1,
    line end, its line number), or None.  ``line_no`` is the number of the line starting at
    ``counted_to``; newlines are counted between the two (memchr speed)."""
    m = search(chunk, pos)
    if m is None:
        return None
    ls = chunk.rfind(b"\n", 0, m.start()) + 1
    le = chunk.find(b"\n", m.end())
    return m, ls, le, len(chunk) if le < 0 else le, line_no + chunk.count(b"\n", counted_to, ls)


class ScannerBase:
    """What every family's scanner shares: diagnostics (the first MAX_KEPT per kind kept, the
    rest counted) and the state a later run resumes from (the attributes named in _STATE plus
    the line counts).  A subclass says when it cannot be resumed (a block open, say)."""

    _STATE: tuple[str, ...] = ("_line",)

    def _init_diags(self) -> None:
        self.diags: list[Diagnostic] = []
        self.dropped: dict[str, int] = {}     # kind -> diagnostics counted, not kept
        self._kept: dict[str, int] = {}

    def diag(self, line_no, kind, message, severity="warning") -> None:
        n = self._kept.get(kind, 0)
        if n >= MAX_KEPT:
            self.dropped[kind] = self.dropped.get(kind, 0) + 1
            return
        self._kept[kind] = n + 1
        self.diags.append(Diagnostic(self.source, line_no, kind, message, severity))

    def _bad_value(self, line_no, message) -> None:
        """A value a table column cannot hold (tables.build_frame): reported at its line."""
        self.diag(line_no, "bad_value", message)

    def overflow(self) -> list[Diagnostic]:
        """One diagnostic per kind standing for those counted and not kept (in kind order: a
        parallel scan cannot tell which kind overflowed first, parallel.merge_diagnostics)."""
        return [Diagnostic(self.source, None, kind, f"{n:,} more not listed (the first "
                           f"{MAX_KEPT:,} are)", "warning", more=n)
                for kind, n in sorted(self.dropped.items()) if n]

    def _check_parsed(self, table: str, res, line_no: int, unterminated: bool) -> bool | None:
        """What a parser's LineResult for a marker line means for the scan: False, not a
        record; True, accounted for by a report (malformed, or a last line cut short); None,
        a record to keep (its unreadable values reported)."""
        if res.record is None:
            if res.problems:
                self.diag(line_no, "malformed", f"{table} line not parsed: {res.problems[0]}")
                return True
            return False
        if unterminated:
            self.diag(line_no, "truncated", f"last line has no newline (cut short?); "
                      f"{table} record not parsed")
            return True
        for p in res.problems:
            self.diag(line_no, "bad_value", f"{table} line: {p}")
        return None

    def _resumable(self) -> bool:
        return True

    def checkpoint(self) -> dict | None:
        """The state after the last fed chunk, or None where a later run cannot resume."""
        if not self._resumable():
            return None
        st = self.stats
        return {**{k: getattr(self, k) for k in self._STATE},
                "stats": [st.lines, st.blank, st.consumed, st.first_skipped, st.bytes]}

    def restore(self, state: dict) -> None:
        for k in self._STATE:
            setattr(self, k, state[k])
        st = self.stats
        st.lines, st.blank, st.consumed, st.first_skipped, st.bytes = state["stats"]


class Scanner(ScannerBase):
    engine = "sglang"

    def __init__(self, source: str, base_date: _dt.date | None = None,
                 fast: bool = True, columns: dict[str, tuple[str, ...]] | None = None) -> None:
        self.source = source
        # {table: columns to keep} (schema.ANALYSIS_COLUMNS) or None for every column
        self.columns = columns
        # the C accelerator reads the common layouts; EAGLELOG_PURE_PYTHON=1 turns it off
        self.fast = _fast_scanner(columns) if fast and _fastscan is not None and not _PURE \
            else None
        self.base_date = base_date
        self.rows: dict[str, list[dict]] = {t: [] for t in TABLES}   # not yet flushed
        self.parts: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
        # (every scanner _fast_scanner makes has the same column types: the columns kept do not
        # change them)
        self._types = _SPECS[2] if self.fast is not None else None
        self._fast_acc = FastRows(self.fast, columns, self._types)
        self._walked = None           # feed: the stretches the C scan walked, and their lines
        self._on_watch_hit = None     # watch_lines: the owner's check of a line the C scan found
        self._watched_chunk = False   # … made for the rest of the current chunk
        self._watch_lits: tuple = ()  # the literals the C scan watches for
        self._init_diags()
        self.stats = ScanStats()
        self.blocks = eagle3_prof.BlockAssembler()
        self._line = 0            # number of lines before the current chunk
        self._next_expected = 1   # first line not yet accounted for (consumed or skipped)
        self._acct_pos = 0        # byte offset of that line in the current chunk
        self._day_offset = 0
        self._last_tod: float | None = None
        self.time_only = False    # some prefix had a time but no date
        self.startup = 0          # server_args lines seen so far
        self.overrun = False      # past the end of a byte range: only finish open blocks

    # ------------------------------------------------------------------ helpers
    def _identity_diags(self, chunk: bytes, line: int, start: int, end: int, n: int) -> None:
        """The ``n`` warnings of a block the C accelerator read and found to break an identity
        (the bytes [start, end) of the chunk, from its header at line ``line``): kept with the
        block's bytes and worded when first read (_IdentityWords) — a generated log breaks
        one in every block, and wording the first thousand took 48 ms of a 10 MB log's 78."""
        kept = self._kept.get("identity", 0)
        take = max(0, min(n, MAX_KEPT - kept))
        if take < n:
            self.dropped["identity"] = self.dropped.get("identity", 0) + n - take
        if not take:
            return
        self._kept["identity"] = kept + take
        words = _IdentityWords(bytes(chunk[start:end]), line)
        self.diags.extend(_IdentityDiagnostic(self.source, line, words=words, i=i)
                          for i in range(take))

    def _account(self, chunk: bytes, ls: int, line_no: int, end: int) -> None:
        """The line(s) at bytes [ls, end) ending at ``line_no`` were consumed; the lines between
        the previous consumed line and ls were skipped (note the first non-blank one)."""
        if self.stats.first_skipped is None and ls > self._acct_pos:
            self._first_skipped_in(chunk, self._acct_pos, ls)
        self._next_expected = line_no + 1
        self._acct_pos = end + 1

    def _first_skipped_in(self, chunk: bytes, a: int, b: int) -> None:
        ln = self._next_expected
        for raw in chunk[a:b].split(b"\n"):
            if raw.strip():
                self.stats.first_skipped = ln
                return
            ln += 1

    def _stamp(self, rec: dict) -> str | None:
        """Replace the _date/_time parts by an ISO timestamp text (dates completed); a date or
        time that names no instant ('14:00:92', '2026-02-30', other digits) leaves the record
        without a timestamp and is returned, to be reported."""
        d, t = rec.pop("_date", None), rec.pop("_time", None)
        if t is None:
            rec["timestamp"] = None
            return None
        if not valid_datetime(d, t):
            rec["timestamp"] = None
            rec.pop("_time_only", None)
            return f"{d} {t}" if d else t
        if d is None:
            # time-only prefix (v0.2.14 – v0.3.3): count midnights; without --date the dates
            # are provisional (from 1970-01-01) and shifted in finish()
            tod = int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
            if self._last_tod is not None and tod < self._last_tod - 12 * 3600:
                self._day_offset += 1
            self._last_tod = tod
            d = (self.base_date or EPOCH) + _dt.timedelta(days=self._day_offset)
            rec["_time_only"] = True
            self.time_only = True
        rec["timestamp"] = f"{d} {t}"
        return None

    def _emit(self, table: str, line_no: int, rec: dict, startup: int | None = None) -> None:
        wrapper = rec.pop("_wtime", None)
        if wrapper is not None and table in _WRAPPER_TABLES:
            rec["wrapper_time"] = wrapper      # (the rate model's clock: rate.decode_windows)
        bad = self._stamp(rec)
        if bad is not None:
            self.diag(line_no, "bad_value", f"{table} line: timestamp {bad!r} is not a valid "
                      "date and time; the record is kept without a timestamp")
        if table == "server_args":
            self.startup += 1
        rec["line_no"] = line_no
        rec["source"] = self.source
        rec["startup"] = self.startup if startup is None else startup
        self.rows[table].append(rec)

    def _close_blocks(self) -> None:
        for b in self.blocks.done:
            rec = b.record()
            self._emit("prof", b.line_no, rec, b.startup)
            for ph in b.phase_records():
                ph["source"] = self.source
                ph["startup"] = b.startup
                self.rows["prof_phases"].append(ph)
            if not b.complete:
                missing = [n for n, v in (("TOTAL", b.total), ("Accept len", b.accept),
                                          ("Eff tok/s", b.eff)) if v is None]
                self.diag(b.line_no, "incomplete_block",
                          f"EAGLE3_PROF block cut short after {b.end_line - b.line_no + 1} "
                          f"line{'s' if b.end_line > b.line_no else ''} "
                          f"(no {', '.join(missing)} line); kept with complete=False")
            else:
                for p in b.identity_problems():
                    self.diag(b.line_no, "identity", f"EAGLE3_PROF block breaks an identity: {p}")
        self.blocks.done.clear()

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        """Parse one marker line; returns True when the line was accounted for (record or
        report)."""
        if "\r" in line:
            parts = [p for p in line.split("\r") if p.strip()]
            if len(parts) > 1:
                return any([self._dispatch_one(kind_of(p), p, line_no, unterminated)
                            for p in parts if kind_of(p)])
            line = parts[0] if parts else ""
        return self._dispatch_one(kind, line, line_no, unterminated)

    def _dispatch_one(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        line = strip_ansi(line)
        if kind == "prof":
            idx = line.find("EAGLE3_PROF")
            header = eagle3_prof.parse_header(line[idx:])
            if header is None:
                self.diag(line_no, "malformed", "EAGLE3_PROF header not understood: "
                          + line[idx:idx + 80].strip())
                return True
            if unterminated:
                self.diag(line_no, "truncated", "last line has no newline (cut short?); "
                          "EAGLE3_PROF block not parsed")
                return True
            self.blocks.start(line_no, read_prefix(line[:idx]), header)
            self.blocks.open[read_prefix(line[:idx]).rank_key()].startup = self.startup
            return True
        table, fn = LINE_PARSERS[kind]
        res = fn(line)
        if res.record is None and res.problems and cri_partial(line):
            self.diag(line_no, "malformed", f"{table} line not parsed: a Kubernetes log file "
                      "split it into pieces at 16 KiB ('stdout P'), which are not joined here; "
                      "kubectl logs joins them")
            return True
        done = self._check_parsed(table, res, line_no, unterminated)
        if done is not None:
            return done
        if table == "requests":
            for p in sglang.check_request_identities(res.record):
                self.diag(line_no, "identity", f"request breaks an identity: {p}")
        self._emit(table, line_no, res.record)
        return True

    # ------------------------------------------------------------------ the loop
    def watch_lines(self, literals: tuple[bytes, ...], on_hit) -> bool:
        """Have the C accelerator look for ``literals`` (the families this scan does not read:
        parsers.WATCH_LITERALS) in the lines it passes over as holding no record and no marker
        — the walk it makes over them anyway, where a search of every chunk for every literal
        cost an eighth of a gigabyte's scan.  ``on_hit(chunk, offset, line_no)`` is called with
        the first such line of a chunk; it checks the rest of the chunk and returns the literals
        still to watch.  False (nothing set) without the accelerator: the owner watches the
        chunks itself."""
        if self.fast is None:
            return False
        self.fast.set_watch(tuple(literals))
        self._watch_lits = tuple(literals)
        self._on_watch_hit = on_hit if literals else None
        return True

    def feed(self, chunk: bytes) -> None:
        """Scan one chunk (it ends after a newline unless it is the last one)."""
        self._watched_chunk = False
        n = len(chunk)
        fast = self.fast if not self.overrun else None
        if fast is None:
            nl = self._count_lines(chunk, ())
        else:          # (counted after the loop: the C scan counts the lines it walks)
            walked = self._walked = []
        self.stats.bytes += n
        try:
            self._feed(chunk, fast)
        finally:
            if fast is not None:
                nl = self._count_lines(chunk, walked)
                self._walked = None
        self._line += nl
        self.flush(every=False)

    def _count_lines(self, chunk: bytes, walked) -> int:
        """The chunk's lines and blank lines added to the stats; its newlines returned.  The
        C scan counted those of the bytes it walked (``walked``: (start, end, newlines, blank)
        in order, each starting at a line start); the rest are counted here."""
        n = len(chunk)
        if _fastscan is None:
            nl, blank = chunk.count(b"\n"), count_blank(chunk)
        else:
            nl = blank = at = 0
            for a, b, k, bl in walked:
                if a > at:
                    x, y = _fastscan.line_stats(chunk, at, a)
                    nl, blank = nl + x, blank + y
                nl, blank, at = nl + k, blank + bl, b
            if at < n:
                x, y = _fastscan.line_stats(chunk, at, n)
                nl, blank = nl + x, blank + y
        unterminated_tail = n > 0 and not chunk.endswith(b"\n")
        self.stats.lines += nl + (1 if unterminated_tail else 0)
        self.stats.blank += blank
        return nl

    def _feed(self, chunk: bytes, fast) -> None:
        n = len(chunk)
        self._acct_pos = 0
        self._next_expected = self._line + 1
        pos = 0
        counted_to = 0
        line_no = self._line + 1  # line number of the line starting at counted_to
        search = MARKERS.search
        while pos < n:
            if self.overrun and not self.blocks.open:
                break
            if self.blocks.open:
                # walk line by line until every open block is closed
                le = chunk.find(b"\n", pos)
                end = n if le < 0 else le
                line_no += chunk.count(b"\n", counted_to, pos)
                counted_to = pos
                self._block_line(chunk, pos, end, line_no, le < 0)
                pos = end + 1
                continue
            if fast is not None:
                line_no += chunk.count(b"\n", counted_to, pos)
                pos, line_no = self._fast_scan(chunk, pos, line_no)
                counted_to = pos
                if pos >= n:
                    break
            hit = marker_line(search, chunk, pos, counted_to, line_no)
            if hit is None:
                break
            m, ls, le, end, line_no = hit
            counted_to = ls
            line = chunk[ls:end].decode("utf-8", "replace")
            if m.lastgroup == "server_args" and len(line) >= DOCKER_SPLIT:
                end, line = self._rejoin(chunk, end, line)
            if self._dispatch(m.lastgroup, line, line_no, le < 0):
                extra = chunk.count(b"\n", ls, end)  # lines rejoined to this one
                self._account(chunk, ls, line_no + extra, end)
                self.stats.consumed += 1 + extra
                if extra:
                    line_no += extra
                    counted_to = chunk.rfind(b"\n", 0, end) + 1
            pos = end + 1
        if self.stats.first_skipped is None and self._acct_pos < n and not self.overrun:
            self._first_skipped_in(chunk, self._acct_pos, n)

    def _fast_scan(self, chunk: bytes, pos: int, line_no: int) -> tuple[int, int]:
        """Let the C accelerator read from pos (line line_no) to the next line it leaves to the
        Python parser; returns that line's offset and number."""
        st = self.stats
        if st.first_skipped is None and pos > self._acct_pos:
            self._first_skipped_in(chunk, self._acct_pos, pos)
        self._acct_pos, self._next_expected = pos, line_no   # all before pos is accounted for
        start, first = pos, line_no
        pos, line_no, consumed, first_skipped, last_line, last_end, bad, whit, whit_line, \
            blank = self.fast.scan(chunk, pos, line_no, self.startup)
        self._walked.append((start, pos, line_no - first, blank))
        if whit >= 0:
            self._watch_hit(chunk, whit, whit_line)
        if bad:        # int64 quadruples: (header line, start, end, problems)
            q = memoryview(bad).cast("q")
            if self._kept.get("identity", 0) >= MAX_KEPT:     # counted, not worded
                self.dropped["identity"] = self.dropped.get("identity", 0) + sum(q[3::4])
            else:
                for i in range(0, len(q), 4):
                    self._identity_diags(chunk, q[i], q[i + 1], q[i + 2], q[i + 3])
        st.consumed += consumed
        if first_skipped and st.first_skipped is None:
            st.first_skipped = first_skipped
        if last_end >= 0:
            self._next_expected = last_line + 1
            self._acct_pos = last_end
        return pos, line_no

    def _watch_hit(self, chunk: bytes, offset: int, line_no: int) -> None:
        """A watched literal in the line at ``offset``: the owner checks the rest of the chunk
        (once a chunk) and says which literals are still to watch."""
        if self._on_watch_hit is None or self._watched_chunk:
            return
        self._watched_chunk = True
        rest = self._on_watch_hit(chunk, offset, line_no)
        self.fast.set_watch(tuple(rest))
        self._watch_lits = tuple(rest)
        if not rest:
            self._on_watch_hit = None

    def _block_line(self, chunk: bytes, pos: int, end: int, line_no: int,
                    unterminated: bool) -> None:
        raw = chunk[pos:end]
        full = strip_ansi(raw.decode("utf-8", "replace")).rstrip("\r\n")
        line = strip_wrapper(full)     # (a print() line's docker or Kubernetes stamp: what the
        # block sees; a record that ends the block is read whole, its wrapper's time kept)
        if not line.strip():
            self.blocks.blank()
            self._close_blocks()
            return
        if unterminated:
            self.diag(line_no, "truncated", "last line has no newline (cut short?); not parsed")
            self._account(chunk, pos, line_no, end)
            self.stats.consumed += 1
            return
        m = MARKERS.search(raw)
        if self.overrun and m is not None and m.lastgroup == "prof":
            # past the range: a header belongs to the next range; it only ends blocks here,
            # the block of the rank key it starts with (read as _dispatch_one reads it: a
            # damaged bracket, '[2026-03-02 １４:00:00 TP0]', is no BRACKET_RX match)
            self.blocks.feed(line_no, read_prefix(full[:full.find("EAGLE3_PROF")]), "x")
            self._close_blocks()
            return
        if m is None or m.lastgroup != "prof":
            prefix, body = split_bracketed(line.rsplit("\r", 1)[-1])
            verdict = self.blocks.feed(line_no, prefix, body)
            if verdict != "other":
                if verdict == "unknown":
                    self.diag(line_no, "block_line", "line inside an EAGLE3_PROF block not "
                              "understood: " + body.strip()[:80])
                self._account(chunk, pos, line_no, end)
                self.stats.consumed += 1
                return
        self._close_blocks()
        if self.overrun:
            return        # a record past the range is the next range's
        if m is None and self._on_watch_hit is not None and \
                any(lit in raw for lit in self._watch_lits):
            # (a line of no record that ends a block is read here, not by the C scan, which
            # watches such lines for other families' records: watched here as it would be)
            self._watch_hit(chunk, pos, line_no)
        if m is not None and self._dispatch(m.lastgroup, full, line_no, unterminated):
            self._account(chunk, pos, line_no, end)
            self.stats.consumed += 1
        self._close_blocks()

    def _rejoin(self, chunk: bytes, end: int, line: str) -> tuple[int, str]:
        """A server_args line split by docker at 16 KiB: append following lines until the repr
        parses (at most 64 pieces)."""
        if sglang.parse_server_args(line[line.find("server_args="):])[1]:
            return end, line
        e, text = end, line
        for _ in range(64):
            if e >= len(chunk) - 1:
                break
            ne = chunk.find(b"\n", e + 1)
            ne = len(chunk) if ne < 0 else ne
            text += chunk[e + 1:ne].decode("utf-8", "replace")
            e = ne
            if sglang.parse_server_args(text[text.find("server_args="):])[1]:
                return e, text
        return end, line

    # the state that lets a later run resume after the last chunk (eaglelog/io/cache.py)
    _STATE = ("_line", "startup", "_day_offset", "_last_tod", "time_only")

    def _resumable(self) -> bool:
        return not self.blocks.open          # a block open at the end of the chunk

    def flush(self, every: bool = True) -> None:
        """Turn the rows the Python parser collected into typed partial frames (the C
        accelerator keeps its rows in its own growing arrays until parts_so_far takes them).
        After a chunk (``every`` False) only a table holding FLUSH_ROWS rows or more: memory
        stays bounded, and a scan whose few odd lines the C accelerator left does not need
        pandas before its end (the command imports it meanwhile)."""
        for name, rows in self.rows.items():
            if rows and (every or len(rows) >= FLUSH_ROWS):
                df = build_frame(TABLES[name], rows, keep=("_time_only",),
                                 report=self._bad_value)
                rows.clear()
                if name == "prof":
                    col = df["phase_sum_ms"]
                    df["phase_sum_ms"] = _sum_rounded(col.to_numpy() if _frame.is_light(col)
                                                      else col)
                keep = (self.columns or {}).get(name)
                if keep is not None:
                    df = df[[c for c in df.columns if c in keep or c == "_time_only"]]
                self.parts[name].append(df)

    def parts_so_far(self) -> dict[str, list[pd.DataFrame]]:
        """The rows read so far as parts per table (the C accelerator's rows, then the Python
        parser's), each part in line order but the parts interleaved: concat_frames(...,
        order_by="line_no") merges them with one copy.  The scanner keeps nothing."""
        fast_rows, out = self.finish_raw(close=False)
        for name in TABLES:
            fast = fast_rows.frame(name, self.source)
            if fast is not None:
                out[name].insert(0, fast)
        return out

    def finish_raw(self, close: bool = True) -> tuple["FastRows", dict[str, list[pd.DataFrame]]]:
        """The rows read so far, without a frame for the C accelerator's: (its rows as column
        arrays, the Python parser's partial frames per table); the scanner keeps nothing.  With
        ``close``, the open blocks are closed first (the end of the input).  parallel.py merges
        the arrays of several byte ranges in place (FastRows.merge)."""
        if close:
            self.blocks.finish()
            self._close_blocks()
        self.flush()
        if self.fast is not None:
            self._fast_acc.add()
        fast_rows, self._fast_acc = self._fast_acc, FastRows(self.fast, self.columns, self._types)
        out = {}
        for name in TABLES:
            out[name] = self.parts[name]
            self.parts[name] = []
        return fast_rows, out

    def finish_rows(self) -> tuple["FastRows", dict[str, list[dict]], dict[str, list]]:
        """The end of a small input whose rows are typed together with other inputs' (a batch,
        eaglelog/io/batch.py): blocks closed; (the C accelerator's rows as column arrays, the
        Python parser's rows per table not yet typed, the frames flushed before).  Only for an
        input with full dates (no time-only prefixes to shift); the scanner keeps nothing."""
        self.blocks.finish()
        self._close_blocks()
        if self.fast is not None:
            self._fast_acc.add()
        fast_rows, self._fast_acc = self._fast_acc, FastRows(self.fast, self.columns, self._types)
        rows, self.rows = self.rows, {t: [] for t in TABLES}
        parts, self.parts = self.parts, {t: [] for t in TABLES}
        return fast_rows, rows, parts

    def frames_so_far(self) -> dict[str, pd.DataFrame]:
        """Every table of the rows read so far, in line order (blocks still open excluded)."""
        frames = {}
        for name, parts in self.parts_so_far().items():
            df = concat_frames(TABLES[name], parts, consume=True, order_by="line_no")
            self.parts[name] = [df] if len(df) else []
            frames[name] = df
        return frames

    def finish(self, mtime: float | None = None) -> dict[str, pd.DataFrame]:
        """Close open blocks and return this input's tables, in line order."""
        self.blocks.finish()
        self._close_blocks()
        frames = {name: concat_frames(TABLES[name], parts, consume=True, order_by="line_no")
                  for name, parts in self.parts_so_far().items()}
        shift = self._date_shift(mtime) if self.time_only else None
        for name, df in frames.items():
            if "_time_only" in df.columns:
                if shift is not None:
                    mask = df["_time_only"].fillna(False).astype(bool).to_numpy()
                    df.loc[mask, "timestamp"] = df.loc[mask, "timestamp"] + shift
                frames[name] = df.drop(columns="_time_only")
        self.parts = {name: [] for name in self.parts}
        return frames

    def _date_shift(self, mtime: float | None):
        """Time-only prefixes: --date gives the first line's date; otherwise the file's mtime
        is taken as the last line's date, else today; either way it is said in a note."""
        if self.base_date is not None:
            self.diag(None, "date", f"log prefixes carry no date; dates from --date "
                      f"{self.base_date} for the first line")
            return None
        if mtime is not None:
            first = _dt.date.fromtimestamp(mtime) - _dt.timedelta(days=self._day_offset)
            how = f"from the file's modification date (first line taken as {first})"
        else:
            first = _dt.date.today() - _dt.timedelta(days=self._day_offset)
            how = f"assumed to end today ({first} for the first line)"
        self.diag(None, "date", f"log prefixes carry no date; dates {how}; pass --date "
                  "YYYY-MM-DD (the first line's date) to set it")
        return pd.Timedelta(days=(first - EPOCH).days)

_HEADER_LABELS = [".", ",", "[N],"]   # codes 0/1/2 of the C accelerator's header column
_FAST_DTYPES = {"q": "int64", "l": "int32", "d": "float64", "i": "int32", "b": "int8"}
_LABELLED = ("ranks", "mode", "phase")   # category columns coded by the scanner's label lists


class FastRows:
    """The C accelerator's rows as one array per column (``_fastscan.Column``: the scanner's
    own array, handed over by FastScanner.take_into without a copy), made into one typed frame
    per table (numpy views of those arrays).  The arrays of later byte ranges are appended in
    place (merge)."""

    def __init__(self, fast, columns: dict | None = None, types: dict | None = None) -> None:
        self.fast = fast
        # table -> column -> 'q'|'d'|… (``types``: fast.types() known already)
        self.types = types if types is not None else fast.types() if fast is not None else {}
        self.keep = columns or {}       # table -> the columns kept (C stores no others)
        self.cols: dict[str, dict] = {}  # table -> {column: bytearray, "": rows}
        self.labels: dict[str, list[str]] = {}

    def add(self) -> None:
        self.labels = self.fast.take_into(self.cols)

    def merge(self, other: "FastRows", line_base: int, startup_base: int) -> None:
        """Append the rows of a later byte range (its line and start-up numbers counted from
        its own start) in place: its numbers shifted, its category codes recoded to ours, each
        column appended to ours (Column.absorb: its pages moved, not copied, on Linux)."""
        import numpy as np
        for lab, theirs in other.labels.items():
            ours = self.labels.setdefault(lab, [])
            for x in theirs:
                if x not in ours:
                    ours.append(x)
        for name, acc in other.cols.items():
            n_other = acc.get("", 0)
            if not n_other:
                continue
            mine = self.cols.setdefault(name, {})
            n_mine = mine.get("", 0)
            types = self.types[name]
            seen = set()
            for col in [c for c in acc if c != ""]:
                buf = acc.pop(col)        # theirs goes as soon as it is appended
                seen.add(col)
                if col in ("line_no", "block", "end_line") and line_base:
                    np.frombuffer(buf, dtype="int64")[:] += line_base
                elif col == "startup" and startup_base:
                    np.frombuffer(buf, dtype=_FAST_DTYPES[types[col]])[:] += startup_base
                elif col in _LABELLED and other.labels.get(col):
                    ours = self.labels[col]
                    lut = [ours.index(x) for x in other.labels[col]]
                    if lut != list(range(len(lut))):   # (the same labels in the same order:
                        codes = np.frombuffer(buf, dtype=_FAST_DTYPES[types[col]])  # kept)
                        lut = np.array(lut, dtype=codes.dtype)
                        known = codes >= 0
                        codes[known] = lut[codes[known]]
                        del codes
                if col not in mine:
                    if not n_mine:
                        mine[col] = buf          # nothing of ours to append to: theirs
                        continue
                    mine[col] = _fastscan.Column.na(types[col], n_mine)
                mine[col].absorb(buf)            # its pages moved onto ours, not copied
                del buf
            for col in mine:
                if col != "" and col not in seen:
                    mine[col].extend(_fastscan.Column.na(types[col], n_other))
            mine[""] = n_mine + n_other
        other.cols = {}

    def frame(self, name: str, source: str) -> pd.DataFrame | None:
        acc = self.cols.pop(name, {})
        rows = acc.pop("", 0)
        if not rows:
            return None
        cats = {"ranks": self.labels["ranks"], "mode": self.labels["mode"],
                "phase": self.labels["phase"], "header": _HEADER_LABELS,
                "graph_backend": list(sglang.GRAPH_LABELS)}
        table = TABLES[name]
        keep = self.keep.get(name)
        # (a Frame: the same arrays a DataFrame holds; pandas' when the log is not light)
        light = self._light(name, source, acc, rows, cats, table, keep)
        return light if _frame.LIGHT else light.promote()

    def _light(self, name, source, acc, rows, cats, table, keep) -> "_frame.Frame":
        """frame()'s table as a Frame: the scanner's arrays typed (codes into their labels, NA
        as a mask), without a copy and without pandas."""
        import numpy as np
        Column = _frame.Column
        cols: dict[str, object] = {}
        for c in table.columns:
            if keep is not None and c.name not in keep:
                continue
            if c.name == "source":
                cols["source"] = Column.categorical(np.zeros(rows, dtype=np.int8), [source])
                continue
            if c.name not in acc:
                if c.name == "complete":
                    cols[c.name] = Column.masked(np.ones(rows, dtype=bool),
                                                 np.zeros(rows, dtype=bool))
                elif c.core:
                    cols[c.name] = light_all_na(c.dtype, rows)
                continue
            a = np.frombuffer(acc.pop(c.name), dtype=_FAST_DTYPES[self.types[name][c.name]])
            if c.dtype == "category":
                if not c.core and (a < 0).all():
                    continue
                cols[c.name] = Column.categorical(a, cats[c.name])
            elif c.dtype.startswith("datetime64"):
                if not c.core and (a == np.iinfo(np.int64).min).all():
                    continue
                cols[c.name] = Column.of(a.view("datetime64[us]"))
            elif c.dtype == "float64":
                if not c.core and np.isnan(a).all():
                    continue
                cols[c.name] = Column.of(_sum_rounded(a) if c.name == "phase_sum_ms" else a)
            elif c.dtype == "boolean":
                na = a < 0
                if not c.core and na.all():
                    continue
                cols[c.name] = Column.masked(a > 0, na)
            else:
                na = a == np.iinfo(a.dtype).min
                if not c.core and na.all():
                    continue
                if na.any():
                    a[na] = 0
                cols[c.name] = Column.masked(a, na)
        return _frame.Frame(cols, rows)


def _sum_rounded(a):
    """phase_sum_ms to 9 decimals: C and Python add the phases in different orders"""
    import numpy as np
    return np.round(a, 9)


def count_blank(chunk: bytes) -> int:
    """Empty lines ('' or a lone CR) in a chunk that starts at a line start; runs count fully
    (bytes.count(b"\\n\\n") would count a run of three blank lines as one)."""
    if not chunk:
        return 0
    import numpy as np
    a = np.frombuffer(chunk, dtype=np.uint8)
    nl = a == 10
    n = int(nl[0]) + int(np.count_nonzero(nl[1:] & nl[:-1]))
    if len(a) > 1:
        n += int(a[0] == 13 and nl[1])
    if len(a) > 2:
        n += int(np.count_nonzero(nl[2:] & (a[1:-1] == 13) & nl[:-2]))
    return n


def kind_of(text: str) -> str | None:
    m = MARKERS.search(text.encode("utf-8", "replace"))
    return m.lastgroup if m else None
