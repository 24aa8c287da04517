"""vLLM server logs (vllm.md): V0 and V1 speculative-decoding metric lines, the throughput lines
they are printed with, V0 stage times and the V1 per-iteration line.

Line parsers are pure and never raise: each returns a ``LineResult`` (a record dict, or None,
plus problems).  ``VllmScanner`` has the interface of ``scan.Scanner`` (feed / finish / stats /
diags / checkpoint / restore …) and keeps the state that crosses lines:

* **pairing** (vllm.md §4.6): the stat logger prints the spec line right after the throughput
  line of the same process.  A throughput line stays *pending* until the next throughput or spec
  line of its process; a spec line joins the pending throughput line and the pair becomes one
  engine-neutral ``decode`` row (a throughput line alone: a row without accept_len; a spec line
  alone: a row without throughput).  A V0 'Prefix cache hit rate: GPU:' line is folded into the
  pending throughput line.
* **V0 differencing** (§2.2): the counters of a V0 spec line are cumulative.  Per series (process
  and pid), each line's window is its difference from the previous line; a counter that drops
  starts a new segment whose first window is the counters themselves; the very first line of a
  series has no window (its start is unknown).
* **years**: the prefix has no year.  Rows keep month-day and the number of December → January
  steps so far; the year is set when the frames are built (--date, else the file's mtime, else
  today).
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field


from .._lazy import pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames
from .prefix import WRAPPER_TIME_RX, strip_ansi
from .scan import Diagnostic, ScannerBase, ScanStats, count_blank, marker_line
from .sglang import _int, _int32      # counts: 64 bits (32 for a batch size), else a bad value

MARKERS = re.compile(
    rb"(?P<v1spec>SpecDecoding metrics: )|(?P<spec>Speculative metrics: )|"
    rb"(?P<stages>SpecDecodeWorker stage times: )|(?P<tput>Avg prompt throughput: )|"
    rb"(?P<cache>Prefix cache hit rate: GPU: )|(?P<iter>Iteration\(\d+\): )")
SNIFF_LITERALS = (b"SpecDecoding metrics: ", b"Speculative metrics: ",
                  b"SpecDecodeWorker stage times: ", b"Avg prompt throughput: ",
                  b"Prefix cache hit rate: GPU: ", b"Iteration(")   # one is in every match
TABLE_OF = {"v1spec": "vllm_spec", "spec": "vllm_spec", "stages": "vllm_stages",
            "tput": "vllm_stats", "cache": "vllm_stats", "iter": "vllm_iterations"}
# what `grep` finds for each table (tests and docs)
GREP_MARKERS = {"vllm_spec": ("Speculative metrics: ", "SpecDecoding metrics: "),
                "vllm_stats": ("Avg prompt throughput: ",),
                "vllm_stages": ("SpecDecodeWorker stage times: ",),
                "vllm_iterations": ("iteration elapsed time: ",)}
OWN_TABLES = ("decode",) + tuple(GREP_MARKERS)

PREFIX_RX = re.compile(
    r"(?:\((?P<proc>\w+) pid=(?P<pid>\d{1,18})[^)]*\) )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<md>\d{2}-\d{2}) (?P<hms>\d{2}:\d{2}:\d{2})(?:\.\d+)? \[?(?P<src>[\w./-]+):(?P<lineno>\d+)"
    r"\] ")
_DP_RX = re.compile(r"_DP(\d{1,9})$")
_NUM = r"(\d+(?:\.\d+)?)"
def _put(rec: dict, col: str, conv, text: str, problems: list[str]) -> bool:
    """rec[col] = conv(text), or a problem said when the value is unreadable."""
    try:
        rec[col] = conv(text)
        return True
    except (ValueError, OverflowError):
        problems.append(f"bad value {text[:30]!r} for {col}")
        return False


@dataclass
class LineResult:
    record: dict | None
    problems: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------- prefix
def read_prefix(text: str) -> dict:
    """The vLLM prefix of a line (the text before its message): private _md/_hms keys for the
    timestamp, process, pid, level, dp.  Wrappers before it are ignored; with no vLLM prefix, a
    wrapper's ISO date-time is used."""
    out: dict = {}
    m = None
    for m in PREFIX_RX.finditer(text):
        pass
    if m is not None:
        out["_md"], out["_hms"] = m.group("md"), m.group("hms")
        out["level"] = m.group("level")
        if m.group("proc"):
            out["process"] = m.group("proc")
            out["pid"] = int(m.group("pid"))
            d = _DP_RX.search(m.group("proc"))
            if d:
                out["dp"] = int(d.group(1))
        return out
    w = WRAPPER_TIME_RX.search(text)
    if w is not None:
        out["_iso"] = f"{w.group('date')} {w.group('time')}"
    return out


def _leftover(body: str, spans: list[tuple[int, int]]) -> str | None:
    """Text of ``body`` outside the matched spans, separators trimmed; None when nothing."""
    keep, at = [], 0
    for a, b in sorted(spans):
        keep.append(body[at:a])
        at = max(at, b)
    keep.append(body[at:])
    rest = re.sub(r"(?:\s*,\s*)+", ", ", "".join(keep)).strip(" ,.\r\n\t")
    return rest or None


# ------------------------------------------------------------------------------- spec lines
_V0_KEYS = {
    "draft_acceptance_rate": (re.compile(r"Draft acceptance rate: " + _NUM), float),
    "system_efficiency": (re.compile(r"System efficiency: " + _NUM), float),
    "k": (re.compile(r"Number of speculative tokens: (\d+)"), _int),
    "accepted_tokens": (re.compile(r"Number of accepted tokens: (\d+)"), _int),
    "draft_tokens": (re.compile(r"Number of draft tokens(?: tokens)?: (\d+)"), _int),
    "emitted_tokens": (re.compile(r"Number of emitted tokens(?: tokens)?: (\d+)"), _int),
}
_V1_KEYS = {
    "draft_acceptance_rate": (re.compile(r"(?:^|: |, )Draft acceptance rate: " + _NUM + r"(%?)"),
                              float),
    "avg_rate": (re.compile(r"Avg Draft acceptance rate: " + _NUM + "%"), float),
    "mean_acceptance_length": (re.compile(r"Mean acceptance length: " + _NUM), float),
    "accepted_throughput": (re.compile(r"Accepted throughput: " + _NUM + " tokens/s"), float),
    "drafted_throughput": (re.compile(r"Drafted throughput: " + _NUM + " tokens/s"), float),
    "accepted_tokens": (re.compile(r"Accepted: (\d+) tokens"), _int),
    "draft_tokens": (re.compile(r"Drafted: (\d+) tokens"), _int),
}
_PP_KEY = re.compile(r"Per-position acceptance rate: ")
_PP_NUM = re.compile(r"\d+\.\d+")


def _per_position(body: str) -> tuple[list[float] | None, bool, tuple[int, int] | None]:
    """(values, elided, span) of the per-position list: values separated by ', ' or a bracketed
    array, up to the first token that is not a number."""
    m = _PP_KEY.search(body)
    if m is None:
        return None, False, None
    at = m.end()
    vals: list[float] = []
    elided = False
    if body.startswith("[", at):
        close = body.find("]", at)
        end = len(body) if close < 0 else close + 1
        for tok in re.split(r"[\s,]+", body[at + 1:end - (close >= 0)].strip()):
            if _PP_NUM.fullmatch(tok):
                vals.append(float(tok))
            elif tok.startswith("..."):
                elided = True
                break
            elif tok:
                break
        return vals, elided, (m.start(), end)
    end = at
    while True:
        n = _PP_NUM.match(body, at)
        if n is None:
            if body.startswith("...", at):
                elided = True
                end = at + 3
            break
        vals.append(float(n.group()))
        end = n.end()
        if body.startswith(", ", end):
            at = end + 2
        else:
            break
    return vals, elided, (m.start(), end)


def parse_spec_line(line: str) -> LineResult:
    """A 'Speculative metrics:' (V0, V1-a) or 'SpecDecoding metrics:' (V1-b … e) line."""
    try:
        return _parse_spec(line)
    except (ValueError, OverflowError) as e:   # pragma: no cover - regexes keep values numeric
        return LineResult(None, [f"value not understood ({e})"])


def _parse_spec(line: str) -> LineResult:
    i = line.find("SpecDecoding metrics: ")
    v1 = i >= 0
    if not v1:
        i = line.find("Speculative metrics: ")
        if i < 0:
            return LineResult(None)
    head = "SpecDecoding metrics: " if v1 else "Speculative metrics: "
    body = line[i + len(head):]
    rec = read_prefix(line[:i])
    spans: list[tuple[int, int]] = []
    problems: list[str] = []
    if not v1 and "System efficiency" in body:          # V0
        for col, (rx, conv) in _V0_KEYS.items():
            m = rx.search(body)
            if m is not None:
                spans.append(m.span())
                _put(rec, col, conv, m.group(1), problems)
        missing = [c for c in ("k", "accepted_tokens", "draft_tokens", "emitted_tokens")
                   if c not in rec]
        if missing:
            return LineResult(None, problems or [f"V0 spec line without {', '.join(missing)}"])
        rec["variant"] = "v0-a" if "tokens tokens" in body else "v0-b"
        rec["cumulative"] = True
        rec["rate_unit"] = "fraction"
        if rec["k"] <= 0:
            problems.append(f"Number of speculative tokens is {rec['k']}")
    else:
        keys = _V1_KEYS if v1 else {"draft_acceptance_rate": _V1_KEYS["draft_acceptance_rate"],
                                    "accepted_tokens": (re.compile(r"Number of accepted tokens: "
                                                                   r"(\d+)"), _int),
                                    "draft_tokens": (re.compile(r"Number of draft tokens: (\d+)"),
                                                     _int)}
        got: dict = {}
        unit = "fraction"
        for col, (rx, conv) in keys.items():
            m = rx.search(body)
            if m is not None:
                spans.append(m.span())
                if not _put(got, col, conv, m.group(1), problems):
                    continue
                if col == "draft_acceptance_rate" and m.group(2):
                    unit = "percent"
        if "accepted_tokens" not in got or "draft_tokens" not in got:
            return LineResult(None, problems or ["spec line without the accepted and drafted "
                                                 "token counts"])
        if "avg_rate" in got:
            got["draft_acceptance_rate"] = got.pop("avg_rate")
            unit = "percent"
        if "draft_acceptance_rate" in got:
            rec["draft_acceptance_rate"] = got["draft_acceptance_rate"] / (
                100.0 if unit == "percent" else 1.0)
            rec["rate_unit"] = unit
        for col in ("mean_acceptance_length", "accepted_throughput", "drafted_throughput",
                    "accepted_tokens", "draft_tokens"):
            if col in got:
                rec[col] = got[col]
        pp, elided, span = _per_position(body)
        if span is not None:
            spans.append(span)
            rec["per_position"] = json.dumps(pp)
            rec["per_position_elided"] = elided
            if elided:
                problems.append(f"per-position list shortened with '...' after {len(pp)} "
                                "values: kept, k unknown")
            elif pp:
                rec["k"] = len(pp)
        if not v1:
            variant = "v1-a"
        elif "Avg Draft acceptance rate" in body:
            variant = "v1-e"
        elif "accepted_throughput" in got or "drafted_throughput" in got:
            variant = "v1-d"
        elif "mean_acceptance_length" in got or span is not None:
            variant = "v1-c"
        else:
            variant = "v1-b"
        rec["variant"] = variant
        rec["cumulative"] = False
        rec["window_accepted"] = rec["accepted_tokens"]
        rec["window_draft_tokens"] = rec["draft_tokens"]
        if rec["draft_tokens"]:
            rec["window_acceptance_rate"] = rec["accepted_tokens"] / rec["draft_tokens"]
        if rec.get("drafted_throughput"):
            rec["window_s"] = rec["draft_tokens"] / rec["drafted_throughput"]
        _v1_drafts(rec)
    extra = _leftover(body, spans)
    if extra:
        rec["extra"] = extra
    return LineResult(rec, problems)


def _v1_drafts(rec: dict) -> None:
    """Number of drafts of a V1 window (vllm.md §3.2): drafted / k when every draft has k tokens
    (checked against the printed mean acceptance length), else accepted / (MAL − 1)."""
    acc, drafted, k = rec["accepted_tokens"], rec["draft_tokens"], rec.get("k")
    mal = rec.get("mean_acceptance_length")
    drafts, how = None, None
    if k and drafted % k == 0 and drafted:
        n = drafted // k
        if mal is None or abs(1 + acc / n - mal) <= 0.005 + 1e-9:
            drafts, how = n, "draft_tokens/k"
    if drafts is None and mal is not None and mal > 1 and acc:
        drafts, how = float(round(acc / (mal - 1))), "accepted/(mal-1)"
    if drafts:
        rec["drafts"] = float(drafts)
        rec["drafts_from"] = how
        _derive(rec, acc, drafts)


def _derive(rec: dict, accepted: int, drafts: float, emitted: int | None = None) -> None:
    """accept_len (bonus included) and the comparable accept_rate of a window."""
    tau = (emitted / drafts) if emitted is not None else 1 + accepted / drafts
    rec["accept_len"] = tau
    k = rec.get("k")
    if k:
        rec["accept_rate"] = (tau - 1) / k
    drafted = rec.get("window_draft_tokens")
    if drafted:
        rec["window_acceptance_rate"] = accepted / drafted


# ------------------------------------------------------------------------------- other lines
_TPUT_KEYS = {
    "prompt_throughput": (re.compile(r"Avg prompt throughput: " + _NUM + " tokens/s"), float),
    "gen_throughput": (re.compile(r"Avg generation throughput: " + _NUM + " tokens/s"), float),
    "running_req": (re.compile(r"Running: (\d+) reqs"), _int32),
    "swapped_req": (re.compile(r"Swapped: (\d+) reqs"), _int),
    "waiting_req": (re.compile(r"(?:Waiting|Pending): (\d+) reqs"), _int),
    "deferred_req": (re.compile(r"Deferred: (\d+) reqs"), _int),
    "preemptions": (re.compile(r"Preemptions: (\d+)"), _int),
    "corrupted_req": (re.compile(r"Corrupted: (\d+) reqs"), _int),
    "gpu_kv_usage": (re.compile(r"GPU KV cache usage: " + _NUM + "%"), float),
    "cpu_kv_usage": (re.compile(r"CPU KV cache usage: " + _NUM + "%"), float),
    "prefix_hit_rate": (re.compile(r"(?<!External p)(?<!External P)Prefix cache hit rate: "
                                   + _NUM + "%"), float),
    "external_prefix_hit_rate": (re.compile(r"External prefix cache hit rate: " + _NUM + "%"),
                                 float),
    "mm_cache_hit_rate": (re.compile(r"MM cache hit rate: " + _NUM + "%"), float),
}
_ENGINE_RX = re.compile(r"(?:Engine (?P<engine>\d{1,9})|(?P<n>\d{1,9}) Engines Aggregated): $")
_CONDITIONAL = ("deferred_req", "preemptions", "corrupted_req", "external_prefix_hit_rate",
                "mm_cache_hit_rate")


def parse_throughput_line(line: str) -> LineResult:
    """A V0 or V1 'Avg prompt throughput: …' line."""
    i = line.find("Avg prompt throughput: ")
    if i < 0:
        return LineResult(None)
    before, body = line[:i], line[i:]
    e = _ENGINE_RX.search(before)
    rec = read_prefix(before[:e.start()] if e else before)
    if e is not None:
        if e.group("engine") is not None:
            rec["dp"] = int(e.group("engine"))
        else:
            rec["engines_aggregated"] = int(e.group("n"))
    spans = []
    problems: list[str] = []
    for col, (rx, conv) in _TPUT_KEYS.items():
        m = rx.search(body)
        if m is not None:
            spans.append(m.span())
            _put(rec, col, conv, m.group(1), problems)
    if "gen_throughput" not in rec or "running_req" not in rec:
        return LineResult(None, problems or ["throughput line without generation throughput or "
                                             "Running"])
    if "swapped_req" in rec or "cpu_kv_usage" in rec:
        rec["variant"] = "v0"
    elif "engines_aggregated" in rec or any(c in rec for c in _CONDITIONAL):
        rec["variant"] = "T4"
    elif e is not None:
        rec["variant"] = "T3"
    else:
        rec["variant"] = "T2" if "gpu_kv_usage" in rec else "T1"
    extra = _leftover(body, spans)
    if extra:
        rec["extra"] = extra
    return LineResult(rec, problems)


_CACHE_RX = re.compile(r"Prefix cache hit rate: GPU: " + _NUM + r"%, CPU: " + _NUM + "%")


def parse_cache_line(line: str) -> LineResult:
    """The V0 'Prefix cache hit rate: GPU: X%, CPU: Y%' line (folded into a throughput row)."""
    m = _CACHE_RX.search(line)
    if m is None:
        return LineResult(None, ["prefix-cache line not understood"]) \
            if "Prefix cache hit rate: GPU: " in line else LineResult(None)
    rec = read_prefix(line[:m.start()])
    rec["prefix_hit_gpu"], rec["prefix_hit_cpu"] = float(m.group(1)), float(m.group(2))
    return LineResult(rec)


_STAGE_KEYS = {"proposal_ms_per_token": "average_time_per_proposal_tok_ms",
               "scoring_ms": "scoring_time_ms", "verification_ms": "verification_time_ms",
               "prefill_sync_ms": "prefill_sync_time_ms"}
_STAGE_RX = {col: re.compile(r"(?:^| )" + key + r"=" + _NUM) for col, key in _STAGE_KEYS.items()}


def parse_stages_line(line: str) -> LineResult:
    """A V0 'SpecDecodeWorker stage times:' line."""
    i = line.find("SpecDecodeWorker stage times: ")
    if i < 0:
        return LineResult(None)
    rec = read_prefix(line[:i])
    body = line[i + len("SpecDecodeWorker stage times: "):]
    for col, rx in _STAGE_RX.items():
        m = rx.search(body)
        if m is not None:
            rec[col] = float(m.group(1))
    missing = [k for c, k in _STAGE_KEYS.items() if c not in rec and c != "prefill_sync_ms"]
    if missing:
        return LineResult(None, [f"stage-times line without {', '.join(missing)}"])
    return LineResult(rec)


_ITER_RX = re.compile(
    r"Iteration\((?P<iteration>\d+)\): (?P<ctx_req>\d+) context requests, (?P<ctx_tokens>\d+) "
    r"context tokens, (?P<gen_req>\d+) generation requests, (?P<gen_tokens>\d+) generation "
    r"tokens, iteration elapsed time: (?P<iter_ms>\d+(?:\.\d+)?) ms")


def parse_iteration_line(line: str) -> LineResult:
    """A V1 'Iteration(N): … iteration elapsed time: X ms' line."""
    m = _ITER_RX.search(line)
    if m is None:
        return LineResult(None, ["iteration line not understood"]) \
            if "iteration elapsed time" in line else LineResult(None)
    rec = read_prefix(line[:m.start()])
    problems: list[str] = []
    for k, v in m.groupdict().items():
        _put(rec, k, float if k == "iter_ms" else _int, v, problems)
    return LineResult(rec, problems)


PARSERS = {"v1spec": parse_spec_line, "spec": parse_spec_line, "tput": parse_throughput_line,
           "cache": parse_cache_line, "stages": parse_stages_line, "iter": parse_iteration_line}


def _series(rec: dict) -> str:
    return f"{rec.get('process') or ''}|{rec.get('pid') or ''}"


# ------------------------------------------------------------------------------- scanner
class _NoBlocks:
    """vLLM lines form no blocks: an always-empty ``blocks.open``."""
    open: dict = {}

    def finish(self) -> None:
        pass


class VllmScanner(ScannerBase):
    """Scan one input's chunks for vLLM lines (the interface of ``scan.Scanner``)."""

    engine = "vllm"

    def __init__(self, source: str, base_date: _dt.date | None = None,
                 columns: dict | None = None) -> None:
        self.source = source
        self.base_date = base_date
        self.columns = columns     # vLLM logs are small: every column is kept
        self.rows: dict[str, list[dict]] = {t: [] for t in OWN_TABLES}
        self._init_diags()
        self.stats = ScanStats()
        self.blocks = _NoBlocks()
        self.startup = 0
        self.time_only = False
        self.overrun = False
        self.consumed_spans: list[tuple[int, int]] = []   # of the last chunk (MixedScanner)
        self._line = 0
        self._yoff = 0
        self._last_month: int | None = None
        self._v0: dict[str, list] = {}       # series -> [acc, draft, emitted, segment]
        self._k: dict[str, int] = {}         # process -> k of its latest V0 spec line
        self._pending: dict[str, dict] = {}  # process -> throughput record awaiting its spec
        self._years_used = False

    # ------------------------------------------------------------------ the loop
    def feed(self, chunk: bytes) -> None:
        n = len(chunk)
        nl = chunk.count(b"\n")
        unterminated_tail = n > 0 and not chunk.endswith(b"\n")
        st = self.stats
        st.lines += nl + (1 if unterminated_tail else 0)
        st.bytes += n
        st.blank += count_blank(chunk)
        self.consumed_spans = []
        pos, counted_to, acct = 0, 0, 0
        line_no = self._line + 1
        expected = self._line + 1          # first line not yet accounted for
        while pos < n:
            hit = marker_line(MARKERS.search, chunk, pos, counted_to, line_no)
            if hit is None:
                break
            m, ls, le, end, line_no = hit
            counted_to = ls
            line = strip_ansi(chunk[ls:end].decode("utf-8", "replace"))
            if "\r" in line:          # progress-bar fragments: the one with the marker
                line = next((p for p in reversed(line.split("\r"))
                             if MARKERS.search(p.encode("utf-8", "replace"))), line)
            if self._dispatch(m.lastgroup, line, line_no, le < 0):
                if st.first_skipped is None and ls > acct:
                    self._first_skipped_in(chunk, acct, ls, expected)
                expected, acct = line_no + 1, end + 1
                st.consumed += 1
                self.consumed_spans.append((ls, end))
            pos = end + 1
        if st.first_skipped is None and acct < n:
            self._first_skipped_in(chunk, acct, n, expected)
        self._line += nl

    def _first_skipped_in(self, chunk: bytes, a: int, b: int, ln: int) -> None:
        for raw in chunk[a:b].split(b"\n"):
            if raw.strip():
                self.stats.first_skipped = ln
                return
            ln += 1

    def _dispatch(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        table = TABLE_OF[kind]
        res = PARSERS[kind](line)
        done = self._check_parsed(table, res, line_no, unterminated)
        if done is not None:
            return done
        rec = res.record
        rec["line_no"] = line_no
        self._date(rec, line_no)
        proc = _series(rec)
        if kind == "tput":
            self._resolve(proc)
            self._pending[proc] = rec
        elif kind == "cache":
            pend = self._pending.get(proc)
            if pend is None:
                self.diag(line_no, "malformed", "vllm_stats line not parsed: a prefix-cache line "
                          "with no throughput line before it")
                return True
            pend["prefix_hit_gpu"], pend["prefix_hit_cpu"] = (rec["prefix_hit_gpu"],
                                                              rec["prefix_hit_cpu"])
        elif kind in ("spec", "v1spec"):
            pend = self._pending.pop(proc, None)
            if pend is not None and "dp" in pend:
                rec["dp"] = pend["dp"]
            if rec.get("cumulative"):
                self._difference(rec, proc, line_no)
                self._k[proc] = rec["k"]
            if pend is not None:
                rec["paired_line"] = pend["line_no"]
            self.rows["vllm_spec"].append(rec)
            self._emit_window(pend, rec)
        elif kind == "stages":
            k = self._k.get(proc)
            if k is not None:
                rec["k"] = k
                rec["draft_ms"] = k * rec["proposal_ms_per_token"]
                rec["stage_sum_ms"] = rec["draft_ms"] + rec["scoring_ms"] + \
                    rec["verification_ms"] + rec.get("prefill_sync_ms", 0.0)
            self.rows["vllm_stages"].append(rec)
        else:
            self.rows["vllm_iterations"].append(rec)
        return True

    def _date(self, rec: dict, line_no: int) -> None:
        md = rec.get("_md")
        if md is None:
            return
        month = int(md[:2])
        if self._last_month is not None and month < self._last_month - 6:
            self._yoff += 1                      # December → January
        self._last_month = month
        rec["_yoff"] = self._yoff
        self._years_used = True

    def _difference(self, rec: dict, series: str, line_no: int) -> None:
        """Window counts of a V0 line from the previous line of its series (vllm.md §2.2)."""
        cur = [rec["accepted_tokens"], rec["draft_tokens"], rec["emitted_tokens"]]
        last = self._v0.get(series)
        if last is None:
            seg, win = 0, None
        elif any(c < p for c, p in zip(cur, last[:3])):
            seg, win = last[3] + 1, cur
            self.diag(line_no, "restart", "V0 spec counters dropped: the engine restarted; a new "
                      f"segment ({seg}) starts here", "note")
        else:
            seg, win = last[3], [c - p for c, p in zip(cur, last[:3])]
        self._v0[series] = cur + [seg]
        rec["segment"] = seg
        if win is None:
            return
        rec["window_accepted"], rec["window_draft_tokens"], rec["window_emitted"] = win
        k = rec["k"]
        if k > 0 and win[1] > 0:
            rec["drafts"] = win[1] / k
            rec["drafts_from"] = "draft_tokens/k"
            _derive(rec, win[0], win[1] / k, emitted=win[2])

    def _resolve(self, proc: str) -> None:
        """The pending throughput line of ``proc`` gets no spec line: a window without one."""
        pend = self._pending.pop(proc, None)
        if pend is not None:
            self._emit_window(pend, None)

    def _emit_window(self, tput: dict | None, spec: dict | None) -> None:
        """The vllm_stats row of a throughput line and the decode row of the window."""
        row: dict = {"engine": "vllm"}
        base = tput if tput is not None else spec
        for k in ("line_no", "_md", "_hms", "_yoff", "_iso", "dp"):
            if k in base:
                row[k] = base[k]
        if tput is not None:
            self.rows["vllm_stats"].append(tput)
            row["running_req"] = tput["running_req"]
            row["queue_req"] = tput.get("waiting_req")
            row["gen_throughput"] = tput["gen_throughput"]
            row["prompt_throughput"] = tput.get("prompt_throughput")
            if tput.get("gpu_kv_usage") is not None:
                row["token_usage"] = tput["gpu_kv_usage"] / 100
        if spec is not None:
            for k in ("accept_len", "accept_rate", "drafts"):
                row[k] = spec.get(k)
        self.rows["decode"].append(row)

    # ------------------------------------------------------------------ state
    _STATE = ("_line", "_yoff", "_last_month", "_v0", "_k", "startup")

    def _resumable(self) -> bool:
        return not self._pending        # a throughput line awaits its spec line

    # ------------------------------------------------------------------ frames
    def _year0(self, mtime: float | None, note: bool) -> int:
        if self.base_date is not None:
            how, year = f"from --date ({self.base_date.year} for the first line)", \
                self.base_date.year
        elif mtime is not None:
            year = _dt.date.fromtimestamp(mtime).year - self._yoff
            how = f"from the file's modification date ({year} for the first line)"
        else:
            year = _dt.date.today().year - self._yoff
            how = f"assumed to end this year ({year} for the first line)"
        if note and self._years_used:
            self.diag(None, "date", f"vLLM prefixes carry no year; years {how}; pass --date "
                      "YYYY-MM-DD (the first line's date) to set it", "note")
        return year

    def _frames(self, year0: int) -> dict[str, pd.DataFrame]:
        frames = {}
        for name in TABLES:
            rows = self.rows.get(name)
            if not rows:
                frames[name] = build_frame(TABLES[name], [])
                continue
            out = []
            for r in rows:
                r = dict(r)
                md, hms, iso = r.pop("_md", None), r.pop("_hms", None), r.pop("_iso", None)
                yoff = r.pop("_yoff", 0)
                ts = iso
                if md is not None:
                    try:
                        ts = _dt.datetime.strptime(f"{year0 + yoff}-{md} {hms}",
                                                   "%Y-%m-%d %H:%M:%S").isoformat(sep=" ")
                    except ValueError:
                        self.diag(r["line_no"], "bad_value", f"date {md} does not exist in "
                                  f"{year0 + yoff}; timestamp left empty")
                r["timestamp"] = ts
                r["source"] = self.source
                r["startup"] = self.startup
                out.append(r)
            out.sort(key=lambda r: r["line_no"])
            frames[name] = build_frame(TABLES[name], out)
        return frames

    def frames_so_far(self) -> dict[str, pd.DataFrame]:
        return self._frames(self._year0(None, False))

    def finish(self, mtime: float | None = None) -> dict[str, pd.DataFrame]:
        for proc in list(self._pending):
            self._resolve(proc)
        return self._frames(self._year0(mtime, True))


# ------------------------------------------------------------------------------- both families
class MixedScanner:
    """A log that holds SGLang and vLLM lines: the vLLM scanner reads each chunk first, and the
    SGLang scanner reads the same chunk with the lines the vLLM scanner consumed emptied (line
    numbers unchanged), so every line lands in its own family's tables."""

    engine = "sglang+vllm"

    def __init__(self, source: str, base_date: _dt.date | None = None,
                 columns: dict | None = None) -> None:
        from .scan import Scanner

        self.source = source
        self.sg = Scanner(source, base_date, columns=columns)
        self.vl = VllmScanner(source, base_date)
        # one list of diagnostics for both
        self.vl.diags, self.vl.dropped, self.vl._kept = (self.sg.diags, self.sg.dropped,
                                                          self.sg._kept)
        self.overrun = False

    diags = property(lambda self: self.sg.diags)
    dropped = property(lambda self: self.sg.dropped)
    _kept = property(lambda self: self.sg._kept)
    blocks = property(lambda self: self.sg.blocks)
    startup = property(lambda self: self.sg.startup)
    time_only = property(lambda self: self.sg.time_only)

    def diag(self, *a, **kw) -> None:
        self.sg.diag(*a, **kw)

    def overflow(self) -> list[Diagnostic]:
        return self.sg.overflow()

    @property
    def stats(self) -> ScanStats:
        v, s = self.vl.stats, self.sg.stats
        return ScanStats(v.lines, v.blank, s.consumed + v.consumed, s.first_skipped, v.bytes)

    def feed(self, chunk: bytes) -> None:
        self.vl.feed(chunk)
        spans = self.vl.consumed_spans
        if spans:
            parts, at = [], 0
            for a, b in spans:
                parts.append(chunk[at:a])
                at = b
            parts.append(chunk[at:])
            chunk = b"".join(parts)
        self.sg.feed(chunk)

    def checkpoint(self) -> dict | None:
        a, b = self.sg.checkpoint(), self.vl.checkpoint()
        if a is None or b is None:
            return None
        return {"_line": b["_line"], "sg": a, "vl": b}

    def restore(self, state: dict) -> None:
        self.sg.restore(state["sg"])
        self.vl.restore(state["vl"])

    def _merge(self, a: dict, b: dict) -> dict[str, pd.DataFrame]:
        out = {}
        for name in TABLES:
            df = concat_frames(TABLES[name], [a[name], b[name]])
            if len(df) and not df["line_no"].is_monotonic_increasing:
                df = df.sort_values("line_no", kind="stable", ignore_index=True)
            out[name] = df
        return out

    def frames_so_far(self) -> dict[str, pd.DataFrame]:
        return self._merge(self.sg.frames_so_far(), self.vl.frames_so_far())

    def finish(self, mtime: float | None = None) -> dict[str, pd.DataFrame]:
        return self._merge(self.sg.finish(mtime), self.vl.finish(mtime))
