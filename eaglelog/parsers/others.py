"""The registry and scanner of others.md's families: llama.cpp (parsers/llamacpp.py), TensorRT-LLM
(parsers/trtllm.py) and the benchmark scripts (parsers/bench.py).

Rows go to two tables of schema.py: ``bench`` (one row per reported result) and ``bench_iters``
(one row per TensorRT-LLM iteration).  The family modules hold the formats: marker regexes,
pure line parsers that never raise (they return a ``_common.Parsed``), and the multi-line
blocks.  ``OthersScanner`` has the interface of ``parsers.scan.Scanner``; these outputs are
small, so it is pure Python: a compiled alternation finds marker lines, and while a multi-line
block is open the lines after it are walked one by one.  What is read is reported once, never
raised: a value that cannot be read (non-ASCII digits, inf/nan, out of range) is a bad value
(row kept, value NA), a record line none of whose values can be read is malformed, a line or
block cut short keeps what survived with complete=False (incomplete_block).
"""
from __future__ import annotations

import datetime as _dt
import re

from .._lazy import pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames
from . import bench, llamacpp, trtllm
from ._common import INTERLEAVED, Block, Parsed
from .prefix import strip_ansi
from .scan import ScannerBase, ScanStats, count_blank, marker_line

# names other modules and older callers import from here
from .bench import (AdaptiveTable, OfflineCollector, PipeTable, SendOneBlock,   # noqa: F401
                    ServingBlock, SpecBenchBlock)
from .llamacpp import RequestBlock, SimpleBlock                                  # noqa: F401
from .trtllm import TrtBlock, align_device_time                                  # noqa: F401

# ---------------------------------------------------------------------------------- markers
# group name -> family; a marker finds the (first) line of a record
KIND_FAMILY = {**{k: "llamacpp" for k in llamacpp.KINDS}, **{k: "trtllm" for k in trtllm.KINDS},
               **{k: "bench" for k in bench.KINDS}}
_MARKER_TEXT = {**llamacpp.MARKER_TEXT, **trtllm.MARKER_TEXT, **bench.MARKER_TEXT}
# Literals one of which every match of a kind's marker contains: a head holding none of them
# has no such marker, found with bytes.find (a regex beginning with ^ or an alternation tries
# every position of a 1 MiB head: ~5 ms each, and --engine auto asks about every kind)
SNIFF_LITERALS = {**llamacpp.SNIFF_LITERALS, **trtllm.SNIFF_LITERALS, **bench.SNIFF_LITERALS}
FAMILY_KINDS = {f: tuple(k for k, v in KIND_FAMILY.items() if v == f)
                for f in ("llamacpp", "trtllm", "bench")}
# the kinds whose regex starts with its own literal (sniffing runs the regex: re finds such a
# prefix fast), for the watch of a scan that reads another family (parsers/__init__.watched):
# each is in every match of its kind's regex (tests/test_others.py)
_WATCH_ONLY = {"llama_stats": (b"#gen drafts",), "trt_block": (b"DECODING STATISTICS",),
               "trt_iter": (b"host_step_time",), "trt_stats": (b'"specDecodingStats"',),
               "serving": (b"Serving Benchmark Result",),
               "vllm_section": (b"-Speculative Decoding-",), "bspec_json": (b'"acc_length":',),
               "mtbench": (b"#questions:",), "mtbench_json": (b'"accept_length":',),
               "adaptive": (b"Avg accept_len:",),
               "run_eval": (b"Speculative accept length (per-request",),
               "sb_answer": (b'"accept_lengths":',), "eagle_answer": (b'"idxs":',)}
KIND_LITERALS = {k: SNIFF_LITERALS.get(k, ()) + _WATCH_ONLY.get(k, ()) for k in KIND_FAMILY}
# a family's literals: one of them is in every record line of the family
WATCH_LITERALS = {f: tuple(dict.fromkeys(lit for k in kinds for lit in KIND_LITERALS[k]))
                  for f, kinds in FAMILY_KINDS.items()}
FAMILY_LABEL = {"llamacpp": "llama.cpp", "trtllm": "TensorRT-LLM",
                "bench": "benchmark-script"}
LINE_PARSERS = {**llamacpp.LINE_PARSERS, **trtllm.LINE_PARSERS, **bench.LINE_PARSERS}
ITER_KINDS = trtllm.ITER_KINDS
JSON_KINDS = {"trt_stats", "bspec_json", "mtbench_json", "sb_answer", "eagle_answer",
              "vllm_response", "sglang_response", "llama_response"}
TABLES_HERE = ("bench", "bench_iters")


def markers(kinds) -> re.Pattern:
    return re.compile(b"(?m)" + b"|".join(b"(?P<%s>%s)" % (k.encode(), _MARKER_TEXT[k])
                                          for k in kinds))


def _clean(line: str) -> str:
    line = strip_ansi(line).rstrip("\r\n")
    if "\r" in line:     # progress-bar fragments before the text
        tail = line.rsplit("\r", 1)[-1]
        line = tail if tail.strip() else line
    return line


# ------------------------------------------------------------------------------- scanner
class _Blocks:
    """What the callers of a scanner look at: ``open`` is truthy while a block is open."""

    def __init__(self) -> None:
        self.open: dict = {}


class OthersScanner(ScannerBase):
    """The ``parsers.scan.Scanner`` interface for the formats of others.md (``kinds``: the
    marker groups this engine reads)."""

    # (+ the llama-server slots processing a task: 'port|slot' -> task, and whether the log
    # shows those lines at all)
    _STATE = ("_line", "_busy", "_slots_seen")

    def __init__(self, source: str, base_date: _dt.date | None = None, kinds=None) -> None:
        self.source = source
        self.base_date = base_date
        self.kinds = tuple(kinds or _MARKER_TEXT)
        self.markers = markers(self.kinds)
        self.rows: dict[str, list[dict]] = {t: [] for t in TABLES_HERE}
        self.parts: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES_HERE}
        self._init_diags()
        self.stats = ScanStats()
        self.blocks = _Blocks()
        self.block: Block | None = None
        self.offline: bench.OfflineCollector | None = None
        self.started: dict[int, int] = {}   # bench_speculative 'Start i=N' -> its line
        self._line = 0
        self._busy: dict[str, str] = {}
        self._slots_seen = False
        self.startup = 0
        self.time_only = False
        self.overrun = False
        self.claimed: list[tuple[int, int]] = []   # byte spans of the lines consumed in the
        # last chunk fed (a mixed-family scan hands the other lines to the server-log scanner)

    # ------------------------------------------------------------------ helpers
    def _emit(self, line_no: int, end_line: int, rec: dict) -> None:
        table = "bench_iters" if rec.get("format", "").startswith("iter_") else "bench"
        for k in [k for k in rec if k.startswith("_")]:
            del rec[k]
        rec["source"] = self.source
        rec["line_no"] = line_no
        rec["startup"] = 0
        if table == "bench":
            rec["end_line"] = end_line
            rec.setdefault("complete", True)
        self.rows[table].append(rec)

    def _report(self, line_no: int, res: Parsed) -> None:
        """The reports of a parsed line that is a row: bad values, broken identities, a cut."""
        rec = res.record
        what = f"{rec.get('tool', 'record')} line"
        for b in res.bad:
            self.diag(line_no, "bad_value", f"{what}: {b}")
        for p in res.problems:
            self.diag(line_no, "identity", f"{what} breaks an identity: {p}")
        if res.cut:
            if rec.get("format", "").startswith("iter_"):      # bench_iters has no 'complete'
                self.diag(line_no, "bad_value", f"{what} cut short ({res.cut}): the fields "
                          "before the cut are kept")
            else:
                rec["complete"] = False
                self.diag(line_no, "incomplete_block", f"{what} cut short ({res.cut}): the "
                          "fields before the cut are kept with complete=False")

    def _close_block(self) -> None:
        b, self.block = self.block, None
        self.blocks.open = {}
        if b is None:
            return
        recs = b.records()
        unread = b.unread() if not recs else None
        if unread:      # record lines, none of whose values could be read: one report
            self.diag(b.line_no, "malformed", f"{b.name} not read: {unread}")
            return
        parsed = getattr(b, "parsed", None)
        if parsed is not None:
            if b.unterminated and not parsed.cut:
                parsed.cut = "last line has no newline"
            self._report(b.line_no, parsed)
        for p in b.problems:
            self.diag(b.line_no, "block_line", f"{b.kind} block: {p}")
        for ln, msg in b.bad:
            self.diag(ln, "bad_value", f"{b.name}: {msg}")
        for p in b.identity_problems():
            self.diag(b.line_no, "identity", f"{b.name} breaks an identity: {p}")
        why = b.incomplete()
        if why and recs and parsed is None:
            at = b.line_no
            for ln, _, rec in recs:
                if rec.get("complete") is False:
                    at = ln
                    break
            else:
                for _, _, rec in recs:
                    rec["complete"] = False
            n = b.end_line - b.line_no + 1
            self.diag(at, "incomplete_block", f"{b.name} cut short after {n} "
                      f"line{'s' if n > 1 else ''} ({why}); kept with complete=False")
        for ln, end, rec in recs:
            self._emit(ln, end, rec)

    def _report_unfinished(self) -> None:
        for i, ln in sorted(self.started.items(), key=lambda kv: kv[1]):
            self.diag(ln, "incomplete_block", f"bench_speculative configuration i={i} started "
                      "and never finished (no 'Finish i=' line: the server failed?)")
        self.started = {}

    def _close_offline(self) -> None:
        c, self.offline = self.offline, None
        if c is None:
            return
        if not c.readable():
            self.diag(c.line_no, "malformed", "vLLM offline example summary not read: no value "
                      "could be read (" + "; ".join(m for _, m in c.bad[:3]) + ")")
            return
        rec, problems = c.record()
        for ln, msg in c.bad:
            self.diag(ln, "bad_value", f"vLLM offline example summary: {msg}")
        why = c.incomplete()
        if why:
            self.diag(c.line_no, "incomplete_block", f"vLLM offline example summary cut short "
                      f"({why}); kept with complete=False")
        for p in problems:
            self.diag(c.line_no, "identity",
                      f"vLLM offline example summary breaks an identity: {p}")
        self._emit(c.line_no, c.end_line, rec)

    # ------------------------------------------------------------------ one line
    def _line_kind(self, raw: bytes) -> str | None:
        m = self.markers.search(raw)
        return m.lastgroup if m else None

    def _open(self, block: Block, unterminated: bool) -> None:
        self.block = block
        block.unterminated = unterminated
        self.blocks.open = {None: block}

    def _dispatch(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        """A marker line outside any block; True when it was consumed.  A last line without
        newline is read like any other and kept with complete=False."""
        line = _clean(line)
        if kind == "trt_block":
            self._open(trtllm.TrtBlock(line_no, line), unterminated)
        elif kind in ("serving", "vllm_section"):
            self._open(bench.ServingBlock(line_no, standalone_section=kind == "vllm_section"),
                       unterminated)
        elif kind == "llama_slot":
            return self._slot_line(line)
        elif kind == "llama_timing":
            if "llama_perf" in line:           # llama-cli's perf print ('N runs'): not a request
                return False
            if not llamacpp.is_timing_line(line):
                # the marker's shape without its numbers ('prompt eval time = ms / 23 tokens')
                self.diag(line_no, "malformed", f"{llamacpp.TimingBlock.name} not read: no "
                          "'N ms / M tokens' after 'prompt eval time ='")
                return True
            self._open(llamacpp.TimingBlock(line_no, line, self._concurrency(line)),
                       unterminated)
        elif kind == "llama_simple":
            block = llamacpp.SimpleBlock(line_no)
            self._open(block, unterminated)
            verdict = block.take(line)
            if verdict == "reject":
                self.block, self.blocks.open = None, {}
                return False
            if verdict == "end" or unterminated:
                self._close_block()
        elif kind in ("obbs_table", "send_one_table"):
            self._open(bench.PipeTable(line_no, line, kind), unterminated)
        elif kind == "adaptive_table":
            self._open(bench.AdaptiveTable(line_no), unterminated)
        elif kind == "specbench":
            self._open(bench.SpecBenchBlock(line_no, line), unterminated)
        elif kind == "specforge":
            self._open(bench.SpecForgeBlock(line_no), unterminated)
            self.block.take(line)
        elif kind == "vllm_offline":
            self._offline_line(line, line_no, unterminated)
        elif kind == "send_one":
            res = bench.parse_send_one(line)
            if res.record is None:
                self._unread(line_no, res, unterminated)
                return True
            self._open(bench.SendOneBlock(line_no, res), unterminated)
        else:
            return self._single(kind, line, line_no, unterminated)
        if unterminated and self.block is not None:
            self._close_block()
        return True

    def _slot_line(self, line: str) -> bool:
        """A llama-server slot starts ('processing task') or ends ('stop processing') a task:
        followed to know how many ran when a request finished."""
        m = llamacpp.SLOT_EVENT.search(line)
        if m is None:
            return False
        port, slot, task = llamacpp._who(line, m.end())
        if slot is None:
            return False
        self._slots_seen = True
        key = f"{port}|{slot}"
        if m["what"] == "processing task":
            self._busy[key] = task
        else:
            self._busy.pop(key, None)
        return True

    def _concurrency(self, line: str) -> int | None:
        """The slots of the same server (router port) processing a task, this one included."""
        if not self._slots_seen:
            return None
        port = llamacpp._who(line, len(line))[0]
        return max(1, sum(1 for k in self._busy if k.split("|", 1)[0] == str(port)))

    def _unread(self, line_no: int, res: Parsed, unterminated: bool) -> None:
        if unterminated:
            self.diag(line_no, "truncated", f"last line has no newline (cut short?); not read: "
                      f"{res.problems[0]}")
        else:
            self.diag(line_no, "malformed", f"line not parsed: {res.problems[0]}")

    def _single(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        res = LINE_PARSERS[kind](line)
        rec = res.record
        if rec is None:
            if res.problems:
                self._unread(line_no, res, unterminated)
                return True
            return False
        if "_start" in rec:
            # the script runs one configuration at a time: one started before this one and
            # not finished failed
            self._report_unfinished()
            self.started[rec["_start"]] = line_no
            return True
        if unterminated and not res.cut and kind not in JSON_KINDS:
            res.cut = "last line has no newline"      # a whole JSON object is whole
        if kind == "llama_req" and rec.get("accept_len") is not None and \
                "per_position" not in rec and not unterminated:
            # the 'mean len' form: its per-position values may follow on a trace line
            self._open(llamacpp.RequestBlock(line_no, res), False)
            return True
        self._report(line_no, res)
        if "_i" in rec:
            self.started.pop(rec["_i"], None)
        self._emit(line_no, line_no, rec)
        return True

    def _offline_line(self, line: str, line_no: int, unterminated: bool) -> None:
        m = bench.OFFLINE.match(line)
        if m is None:
            self._unread(line_no, Parsed(None, ["vLLM offline example line not understood: "
                                                + line.strip()[:60]]), unterminated)
            return
        if self.offline is None:
            self.offline = bench.OfflineCollector(line_no)
        if not self.offline.add(m, line_no):
            self._close_offline()
            self.offline = bench.OfflineCollector(line_no)
            self.offline.add(m, line_no)
        if unterminated:
            self.offline.unterminated = True

    def _block_line(self, line: str, line_no: int, unterminated: bool) -> str:
        """Feed a line to the open block: 'took', 'blank' or 'rejected' (the block is closed
        then)."""
        b = self.block
        text = _clean(line)
        if not text.strip():
            if not b.blank():
                self._close_block()
            return "blank"
        prev_end = b.end_line
        b.end_line = line_no
        b.unterminated = unterminated
        verdict = b.take(text)
        if verdict == "reject":
            b.end_line = prev_end
            b.unterminated = False
            self._close_block()
            return "rejected"
        if verdict == "end" or unterminated:
            self._close_block()
        return "took"

    # ------------------------------------------------------------------ the loop
    def feed(self, chunk: bytes) -> None:
        n = len(chunk)
        nl = chunk.count(b"\n")
        unterminated_tail = n > 0 and not chunk.endswith(b"\n")
        self.stats.lines += nl + (1 if unterminated_tail else 0)
        self.stats.bytes += n
        self.claimed = []
        consumed_here: list[int] = []
        pos = 0
        line_no = self._line + 1
        counted_to = 0
        search = self.markers.search
        while pos < n:
            if self.overrun and self.block is None:
                break
            if self.block is not None:
                le = chunk.find(b"\n", pos)
                end = n if le < 0 else le
                line_no += chunk.count(b"\n", counted_to, pos)
                counted_to = pos
                raw = chunk[pos:end]
                if INTERLEAVED.search(raw):
                    pos = end + 1          # left to the server-log scanner; the block goes on
                    continue
                line = raw.decode("utf-8", "replace")
                got = self._block_line(line, line_no, le < 0)
                if got == "took":
                    self.claimed.append((pos, end))
                    consumed_here.append(line_no)
                    pos = end + 1
                    continue
                if got == "blank":
                    pos = end + 1
                    continue
                # rejected: the line is looked at again as a possible marker line
                m = search(raw)
                if m is None or self.overrun:
                    pos = end + 1
                    continue
                if self._dispatch(m.lastgroup, line, line_no, le < 0):
                    self.claimed.append((pos, end))
                    consumed_here.append(line_no)
                pos = end + 1
                continue
            hit = marker_line(search, chunk, pos, counted_to, line_no)
            if hit is None:
                break
            m, ls, le, end, line_no = hit
            counted_to = ls
            line = chunk[ls:end].decode("utf-8", "replace")
            if self._dispatch(m.lastgroup, line, line_no, le < 0):
                self.claimed.append((ls, end))
                consumed_here.append(line_no)
            pos = end + 1
        # accounting: blank lines and the first line that is neither blank nor consumed
        self.stats.blank += count_blank(chunk)
        self.stats.consumed += len(consumed_here)
        if self.stats.first_skipped is None and \
                self.stats.lines - self.stats.blank > self.stats.consumed:
            taken = set(consumed_here)
            for i, raw in enumerate(chunk.split(b"\n"), self._line + 1):
                if i > self._line + nl + (1 if unterminated_tail else 0):
                    break
                if raw.strip(b"\r") and i not in taken:
                    self.stats.first_skipped = i
                    break
        self._line += nl
        self.flush()

    def _resumable(self) -> bool:
        return self.block is None and self.offline is None and not self.started

    def flush(self) -> None:
        for name, rows in self.rows.items():
            if rows:
                self.parts[name].append(build_frame(TABLES[name], rows, report=self._bad_value))
                rows.clear()

    def frames_so_far(self) -> dict[str, pd.DataFrame]:
        self.flush()
        frames = {}
        for name in TABLES:
            if name not in TABLES_HERE:
                frames[name] = build_frame(TABLES[name], [])
                continue
            df = concat_frames(TABLES[name], self.parts[name])
            if len(df) and not df["line_no"].is_monotonic_increasing:
                df = df.sort_values("line_no", kind="stable", ignore_index=True)
            self.parts[name] = [df] if len(df) else []
            frames[name] = df
        return frames

    def finish(self, mtime: float | None = None) -> dict[str, pd.DataFrame]:
        self._close_block()
        self._close_offline()
        self._report_unfinished()
        frames = self.frames_so_far()
        it = frames["bench_iters"]
        if len(it) and "prev_device_step_time_ms" in it and \
                it["prev_device_step_time_ms"].notna().any():
            frames["bench_iters"] = align_device_time(it)
        self.parts = {t: [] for t in TABLES_HERE}
        return frames
