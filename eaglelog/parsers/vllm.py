"""vLLM server logs (vllm.md): V0 and V1 speculative-decoding metric lines, the throughput lines
they are printed with, V0 stage times, the V1 per-iteration line, and the start-up lines that
give a run's configuration (docs/formats-vllm.md).

Line parsers are pure and never raise: each returns a ``LineResult`` (a record dict, or None,
plus problems).  Every number is range-checked: ASCII digits only, finite, within its column's
range (a rate in [0, 1], a percentage in [0, 100], a mean acceptance length ≥ 1, a count within
64 bits); anything else is a reported bad value (the line is not parsed when it is a value the
line cannot do without).  ``VllmScanner`` has the interface of ``scan.Scanner`` (feed / finish /
stats / diags / checkpoint / restore …) and keeps the state that crosses lines:

* **pairing** (vllm.md §4.6): the stat logger prints the spec line right after the throughput
  line of the same process.  A throughput line stays *pending* until the next throughput or spec
  line of its process; a spec line joins the pending throughput line and the pair becomes one
  engine-neutral ``decode`` row (a throughput line alone: a row without accept_len; a spec line
  alone: a row without throughput).  A V0 'Prefix cache hit rate: GPU:' line is folded into the
  pending throughput line.
* **V0 differencing** (§2.2): the counters of a V0 spec line are cumulative.  Per series (process
  and pid), each line's window is its difference from the previous line; a counter that drops, a
  change of k (``Number of speculative tokens``: another engine run) or a start-up line since the
  previous line starts a new segment whose first window is the counters themselves; the very
  first line of a series has no window (its start is unknown) unless a start-up line came
  before it.  A window whose derived values are impossible (τ < 1 or > k + 1, a rate outside
  [0, 1]) is reported as a bad window and gets no derived values.
* **start-ups** (docs/formats-vllm.md): 'non-default args: {…}', 'args: Namespace(…)' and
  'Initializing … LLM engine (v…) with config: …' lines printed together (no metrics line
  between them) make one ``server_args`` row, its keys mapped to SGLang's names where the
  meaning is the same (speculative_algorithm, speculative_num_steps, tp_size …); rows after it
  carry its ``startup`` number.
* **years**: the prefix has no year.  Rows keep month-day and the number of December → January
  steps so far; the year is set when the frames are built (--date, else the file's mtime, else
  today).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field


from .._lazy import pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames
from .numbers import (I64, MAX_MEASURE, config_count_problem, literal_eval, to_float, to_int,
                      to_int32)
from .prefix import WRAPPER_TIME_RX, strip_ansi, valid_datetime
from .scan import Diagnostic, ScannerBase, ScanStats, count_blank, marker_line

MARKERS = re.compile(
    rb"(?P<v1spec>SpecDecoding metrics: )|(?P<spec>Speculative metrics: )|"
    rb"(?P<stages>SpecDecodeWorker stage times: )|(?P<tput>Avg prompt throughput: )|"
    rb"(?P<cache>Prefix cache hit rate: GPU: )|(?P<iter>Iteration\([^)\n]{1,40}\): )|"
    rb"(?P<config>non-default args: |args: Namespace\(|Initializing an? (?:V1 )?LLM engine "
    rb"(?:\(v[^)\n]{0,40}\) )?with config: )")
# every match of MARKERS starts with one of these (the scan finds them first, then matches)
SNIFF_LITERALS = (b"SpecDecoding metrics: ", b"Speculative metrics: ",
                  b"SpecDecodeWorker stage times: ", b"Avg prompt throughput: ",
                  b"Prefix cache hit rate: GPU: ", b"Iteration(", b"non-default args: ",
                  b"args: Namespace(", b"Initializing a")


class _Finder:
    """MARKERS.search over one chunk, 50× faster on lines that are not vLLM's (health checks,
    request logs): each literal a match starts with is found with bytes.find (its next
    occurrence remembered), and MARKERS is matched only there."""

    __slots__ = ("data", "next")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.next: dict[bytes, tuple[int, re.Match | None]] = {}

    def search(self, data: bytes, pos: int = 0):
        best = None
        for lit in SNIFF_LITERALS:
            i, m = self.next.get(lit, (-2, None))
            if i != -1 and i < pos:
                i = data.find(lit, pos)
                m = None
                while i >= 0:
                    m = MARKERS.match(data, i)
                    if m is not None:
                        break
                    i = data.find(lit, i + 1)
                self.next[lit] = (i, m)
            if i >= 0 and (best is None or i < best.start()):
                best = m
        return best


# what every vLLM metrics line holds one of (a later family found beyond the head, __init__.py)
WATCH_LITERALS = (b"SpecDecoding metrics: ", b"Speculative metrics: ", b"Avg prompt throughput: ",
                  b"SpecDecodeWorker stage times: ", b"iteration elapsed time: ")
TABLE_OF = {"v1spec": "vllm_spec", "spec": "vllm_spec", "stages": "vllm_stages",
            "tput": "vllm_stats", "cache": "vllm_stats", "iter": "vllm_iterations",
            "config": "server_args"}
# what `grep` finds for each table (tests and docs); start-up lines are not here: the lines of
# one start-up make one server_args row
GREP_MARKERS = {"vllm_spec": ("Speculative metrics: ", "SpecDecoding metrics: "),
                "vllm_stats": ("Avg prompt throughput: ",),
                "vllm_stages": ("SpecDecodeWorker stage times: ",),
                "vllm_iterations": ("iteration elapsed time: ",)}
OWN_TABLES = ("decode", "server_args") + tuple(GREP_MARKERS)

PREFIX_RX = re.compile(
    r"(?:\((?P<proc>\w+) pid=(?P<pid>\d{1,18})[^)]*\) )?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<md>\d{2}-\d{2}) (?P<hms>\d{1,3}:\d{1,3}:\d{1,3})(?:\.\d+)? "
    r"\[?(?P<src>[\w./-]+):(?P<lineno>\d+)"
    r"\] ", re.ASCII)
# the same shape with any Unicode digit: a prefix of other digits is reported, not read
_LOOSE_PREFIX_RX = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d{2}-\d{2} \d{2}:\d{2}:"
                              r"\d{2}) ")
_DP_RX = re.compile(r"_DP(\d{1,9})$", re.ASCII)
WRAPPER_STAMP_RX = re.compile(r"\S+ [\d:.,]{1,24}")   # an outer stamp as printed, for a report


# ------------------------------------------------------------------------------- numbers
# A number as vLLM prints it ('%d', '%.Nf'): the shared converters (numbers.py: ASCII digits,
# finite, within 64 bits — not Arabic-Indic digits, '1_000', 'inf', 'nan', '1e400'), then the
# column's range.
_I64 = I64
_V = r"([^\s,%]*)"          # the text of one value (up to a space, comma or percent sign)


class BadValue(ValueError):
    """A printed value out of its column's range (the message says which)."""


def _count(v: str) -> int:
    """A count: an integer within 64 bits, not negative."""
    x = to_int(v)
    if x < 0:
        raise BadValue("a count is not negative")
    return x


def _count_end(v: str) -> int:
    """A count that may end a sentence (V0's 'Number of emitted tokens: N.')."""
    return _count(v[:-1] if v.endswith(".") else v)


def _count32(v: str) -> int:
    """A count small by nature (a batch size): its column holds 32-bit integers."""
    x = to_int32(v)
    if x < 0:
        raise BadValue("a count is not negative")
    return x


def _dec(v: str) -> float:
    """A finite number, not negative (every vLLM number is a count, a rate or a time)."""
    x = to_float(v)
    if x < 0:
        raise BadValue("not negative")
    if x > MAX_MEASURE:
        raise BadValue("beyond any measured count, rate or time")
    return x


def _frac(v: str) -> float:
    x = _dec(v)
    if x > 1:
        raise BadValue("out of range [0, 1]")
    return x


def _pct(v: str) -> float:
    x = _dec(v)
    if x > 100:
        raise BadValue("out of range [0, 100] %")
    return x


def _mal(v: str) -> float:
    x = _dec(v)
    if x < 1:
        raise BadValue("a mean acceptance length is at least 1 (the bonus token)")
    return x


def _put(rec: dict, col: str, conv, text: str, problems: list[str],
         name: str | None = None) -> bool:
    """rec[col] = conv(text), or a problem said (for column ``name``, default ``col``) when the
    value is unreadable."""
    try:
        rec[col] = conv(text)
        return True
    except (ValueError, OverflowError) as e:
        why = str(e) if isinstance(e, BadValue) else ""
        problems.append(f"bad value {text[:30]!r} for {name or col}" +
                        (f": {why}" if why else ""))
        return False


@dataclass
class LineResult:
    record: dict | None
    problems: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------- prefix
def _valid_md_hms(md: str, hms: str) -> bool:
    """A prefix's 'MM-DD' and 'HH:MM:SS' (PREFIX_RX takes 1 to 3 digits a field, so that a
    damaged time such as '10:999:20' is reported and its line keeps its process) in range."""
    mo, d = int(md[:2]), int(md[3:])
    parts = hms.split(":")
    if any(len(p) != 2 for p in parts):
        return False
    h, mi, s = map(int, parts)
    return 1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60


def read_prefix(text: str, problems: list[str] | None = None) -> dict:
    """The vLLM prefix of a line (the text before its message): private _md/_hms keys for the
    timestamp, process, pid, level, dp.  Wrappers before it are ignored; with no vLLM prefix, a
    wrapper's ISO date-time is used.  A timestamp that names no instant (13-40, 14:00:92) or is
    printed in other digits is left out, and said in ``problems``."""
    out: dict = {}
    m = None
    for m in PREFIX_RX.finditer(text):
        pass
    if m is not None:
        if _valid_md_hms(m.group("md"), m.group("hms")):
            out["_md"], out["_hms"] = m.group("md"), m.group("hms")
        elif problems is not None:
            problems.append(f"timestamp '{m.group('md')} {m.group('hms')}' is not a valid date "
                            "and time; the record is kept without a timestamp")
        out["level"] = m.group("level")
        if m.group("proc"):
            out["process"] = m.group("proc")
            out["pid"] = int(m.group("pid"))
            d = _DP_RX.search(m.group("proc"))
            if d:
                out["dp"] = int(d.group(1))
        return out
    if problems is not None and not text.isascii():
        loose = _LOOSE_PREFIX_RX.search(text)
        if loose is not None:
            problems.append(f"timestamp {loose.group(1)!r} is not printed in ASCII digits; the "
                            "record is kept without a timestamp")
            return out
    w = WRAPPER_TIME_RX.search(text)
    if w is not None:
        # the outer stamp is range-checked as the vLLM one is ('14:00:999' reads as 14:00:99)
        if valid_datetime(w.group("date"), w.group("time")) and \
                not text[w.end("time"):w.end("time") + 1].isdigit():
            out["_iso"] = f"{w.group('date')} {w.group('time')}"
        elif problems is not None:
            printed = WRAPPER_STAMP_RX.match(text, w.start())
            stamp = printed.group(0) if printed is not None else w.group(0)
            problems.append(f"timestamp {stamp!r} is not a valid date and time; the record is "
                            "kept without a timestamp")
    return out


def _leftover(body: str, spans: list[tuple[int, int]]) -> str | None:
    """Text of ``body`` outside the matched spans, separators trimmed; None when nothing."""
    keep, at = [], 0
    for a, b in sorted(spans):
        keep.append(body[at:a])
        at = max(at, b)
    keep.append(body[at:])
    # separators collapsed to ', ' (split, not a regex: a long run of spaces stays linear)
    parts = [p.strip() for p in "".join(keep).split(",")]
    rest = ", ".join(p for p in parts if p).strip(" ,.\r\n\t")
    return rest or None


# ------------------------------------------------------------------------------- spec lines
_V0_KEYS = {
    "draft_acceptance_rate": (re.compile(r"Draft acceptance rate: " + _V), _frac),
    "system_efficiency": (re.compile(r"System efficiency: " + _V), _frac),
    "k": (re.compile(r"Number of speculative tokens: " + _V), _count_end),
    "accepted_tokens": (re.compile(r"Number of accepted tokens: " + _V), _count_end),
    "draft_tokens": (re.compile(r"Number of draft tokens(?: tokens)?: " + _V), _count_end),
    "emitted_tokens": (re.compile(r"Number of emitted tokens(?: tokens)?: " + _V), _count_end),
}
_V1_RATE = re.compile(r"(?:^|: |, )Draft acceptance rate: " + _V + r"(%?)")
_V1_KEYS = {
    "avg_rate": (re.compile(r"Avg Draft acceptance rate: " + _V + "%"), _pct),
    "mean_acceptance_length": (re.compile(r"Mean acceptance length: " + _V), _mal),
    "accepted_throughput": (re.compile(r"Accepted throughput: " + _V + " tokens/s"), _dec),
    "drafted_throughput": (re.compile(r"Drafted throughput: " + _V + " tokens/s"), _dec),
    "accepted_tokens": (re.compile(r"Accepted: " + _V + " tokens"), _count),
    "draft_tokens": (re.compile(r"Drafted: " + _V + " tokens"), _count),
}
_V1A_KEYS = {
    "accepted_tokens": (re.compile(r"Number of accepted tokens: " + _V), _count),
    "draft_tokens": (re.compile(r"Number of draft tokens: " + _V), _count),
}
_PP_KEY = re.compile(r"Per-position acceptance rate: ")
_PP_NUM = re.compile(r"[0-9]+\.[0-9]+", re.ASCII)
_PP_TOKEN = re.compile(r"[^\s,\]]+")
# a token that tried to be a number (and is not one vLLM prints): reported, not taken for the
# end of the list
_NUMBERISH = re.compile(r"(?i)[+-]?(?:\d|\.\d|nan\b|inf(?:inity)?\b)")


def _per_position(body: str, problems: list[str]) -> tuple[list[float] | None, bool,
                                                            tuple[int, int] | None, bool]:
    """(values, elided, span, whole) of the per-position list: values separated by ', ' or a
    bracketed array, up to the first token that is not a number.  A value that is no number
    vLLM prints (nan, Arabic-Indic digits, > 1) ends the list with a problem (whole False)."""
    m = _PP_KEY.search(body)
    if m is None:
        return None, False, None, True
    at = m.end()
    vals: list[float] = []
    elided, whole = False, True

    def bad(tok: str) -> None:
        nonlocal whole
        whole = False
        problems.append(f"bad value {tok[:30]!r} in the per-position list: the list is kept up "
                        f"to it ({len(vals)} values), k unknown")

    def take(tok: str) -> bool:
        if _PP_NUM.fullmatch(tok):
            x = float(tok)
            if x <= 1:
                vals.append(x)
                return True
        if _NUMBERISH.match(tok):
            bad(tok)
        return False

    if body.startswith("[", at):
        close = body.find("]", at)
        end = len(body) if close < 0 else close + 1
        for tok in re.split(r"[\s,]+", body[at + 1:end - (close >= 0)].strip()):
            if tok.startswith("..."):
                elided = True
                break
            if tok and not take(tok):
                break
        return vals, elided, (m.start(), end), whole
    end = at
    while True:
        t = _PP_TOKEN.match(body, at)
        if t is None:
            if vals and body.startswith(",", at):       # '0.5, , 0.3': a value left out
                bad("")
            break
        if t.group().startswith("..."):
            elided = True
            end = at + 3
            break
        if not take(t.group()):
            break
        end = t.end()
        if body.startswith(", ", end):
            at = end + 2
        else:
            break
    return vals, elided, (m.start(), end), whole


def parse_spec_line(line: str) -> LineResult:
    """A 'Speculative metrics:' (V0, V1-a) or 'SpecDecoding metrics:' (V1-b … e) line."""
    try:
        return _parse_spec(line)
    except (ValueError, OverflowError) as e:   # pragma: no cover - values are checked
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
    problems: list[str] = []
    rec = read_prefix(line[:i], problems)
    spans: list[tuple[int, int]] = []
    if not v1 and "System efficiency" in body:          # V0
        for col, (rx, conv) in _V0_KEYS.items():
            m = rx.search(body)
            if m is not None:
                spans.append(m.span())
                _put(rec, col, conv, m.group(1), problems)
        missing = [c for c in ("k", "accepted_tokens", "draft_tokens", "emitted_tokens")
                   if c not in rec]
        if missing:
            bad = [p for p in problems if p.startswith("bad value")]
            return LineResult(None, bad or [f"V0 spec line without {', '.join(missing)}"])
        rec["variant"] = "v0-a" if "tokens tokens" in body else "v0-b"
        rec["cumulative"] = True
        rec["rate_unit"] = "fraction"
        if rec["k"] <= 0:
            problems.append(f"Number of speculative tokens is {rec['k']}")
    else:
        keys = _V1_KEYS if v1 else _V1A_KEYS
        got: dict = {}
        unit = "fraction"
        m = _V1_RATE.search(body)
        if m is not None:
            spans.append(m.span())
            unit = "percent" if m.group(2) else "fraction"
            _put(got, "draft_acceptance_rate", _pct if m.group(2) else _frac, m.group(1),
                 problems)
        for col, (rx, conv) in keys.items():
            m = rx.search(body)
            if m is not None:
                spans.append(m.span())
                _put(got, col, conv, m.group(1), problems,
                     "draft_acceptance_rate" if col == "avg_rate" else col)
        if "accepted_tokens" not in got or "draft_tokens" not in got:
            bad = [p for p in problems if p.startswith("bad value")]
            return LineResult(None, bad or ["spec line without the accepted and drafted token "
                                            "counts"])
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
        pp, elided, span, whole = _per_position(body, problems)
        if span is not None:
            spans.append(span)
            rec["per_position"] = json.dumps(pp)
            rec["per_position_elided"] = elided
            if elided:
                problems.append(f"per-position list shortened with '...' after {len(pp)} "
                                "values: kept, k unknown")
            elif pp and whole:
                rec["k"] = len(pp)
        if not v1:
            variant = "v1-a"
        elif "Avg Draft acceptance rate" in body:
            variant = "v1-e"
        elif "Accepted throughput" in body or "Drafted throughput" in body:
            variant = "v1-d"
        elif "Mean acceptance length" in body or span is not None:
            variant = "v1-c"
        else:
            variant = "v1-b"
        rec["variant"] = variant
        rec["cumulative"] = False
        rec["window_accepted"] = rec["accepted_tokens"]
        rec["window_draft_tokens"] = rec["draft_tokens"]
        if rec.get("drafted_throughput"):
            rec["window_s"] = rec["draft_tokens"] / rec["drafted_throughput"]
        bad = _impossible_v1(rec)
        if bad:
            rec["_bad_window"] = bad
        else:
            if rec["draft_tokens"]:
                rec["window_acceptance_rate"] = rec["accepted_tokens"] / rec["draft_tokens"]
            _v1_drafts(rec)
    extra = _leftover(body, spans)
    if extra:
        rec["extra"] = extra
    return LineResult(rec, problems)


def _impossible_v1(rec: dict) -> str | None:
    """Why a V1 window's counts cannot be (more accepted than drafted tokens), or None."""
    if rec["accepted_tokens"] > rec["draft_tokens"]:
        return (f"{rec['accepted_tokens']} accepted of {rec['draft_tokens']} drafted tokens "
                "(acceptance rate above 1)")
    return None


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
        tau = 1 + acc / drafts
        if k and not tau <= k + 1 + 1e-9:
            rec["_bad_window"] = (f"accept length {tau:.3f} from {acc} accepted tokens in "
                                  f"{drafts:g} drafts is above k + 1 = {k + 1}")
            return
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
    "prompt_throughput": (re.compile(r"Avg prompt throughput: " + _V + " tokens/s"), _dec),
    "gen_throughput": (re.compile(r"Avg generation throughput: " + _V + " tokens/s"), _dec),
    "running_req": (re.compile(r"Running: " + _V + " reqs"), _count32),
    "swapped_req": (re.compile(r"Swapped: " + _V + " reqs"), _count),
    "waiting_req": (re.compile(r"(?:Waiting|Pending): " + _V + " reqs"), _count),
    "deferred_req": (re.compile(r"Deferred: " + _V + " reqs"), _count),
    "preemptions": (re.compile(r"Preemptions: " + _V), _count),
    "corrupted_req": (re.compile(r"Corrupted: " + _V + " reqs"), _count),
    "gpu_kv_usage": (re.compile(r"(?:GPU|NPU|XPU|HPU|TPU) KV cache usage: " + _V + "%"), _pct),
    "kv_fetch_waiting": (re.compile(r"KV fetch: " + _V + " waiting to start"), _count),
    "kv_fetch_in_progress": (re.compile(r"KV fetch: [0-9]+ waiting to start, " + _V
                                        + " in progress"), _count),
    "kv_fetch_completed": (re.compile(r"KV fetch: [0-9]+ waiting to start, [0-9]+ in progress, "
                                      + _V + " completed waiting"), _count),
    "cpu_kv_usage": (re.compile(r"CPU KV cache usage: " + _V + "%"), _pct),
    "prefix_hit_rate": (re.compile(r"(?<!External p)(?<!External P)Prefix cache hit rate: "
                                   + _V + "%"), _pct),
    "external_prefix_hit_rate": (re.compile(r"External prefix cache hit rate: " + _V + "%"),
                                 _pct),
    "mm_cache_hit_rate": (re.compile(r"MM cache hit rate: " + _V + "%"), _pct),
}
_ENGINE_RX = re.compile(r"(?:Engine (?P<engine>\d{1,9})|(?P<n>\d{1,9}) Engines Aggregated): $",
                        re.ASCII)
_CONDITIONAL = ("deferred_req", "preemptions", "corrupted_req", "external_prefix_hit_rate",
                "mm_cache_hit_rate", "kv_fetch_waiting")
_KV_DEVICE_RX = re.compile(r"(NPU|XPU|HPU|TPU) KV cache usage: ")


def parse_throughput_line(line: str) -> LineResult:
    """A V0 or V1 'Avg prompt throughput: …' line."""
    i = line.find("Avg prompt throughput: ")
    if i < 0:
        return LineResult(None)
    before, body = line[:i], line[i:]
    e = _ENGINE_RX.search(before)
    problems: list[str] = []
    rec = read_prefix(before[:e.start()] if e else before, problems)
    if e is not None:
        if e.group("engine") is not None:
            rec["dp"] = int(e.group("engine"))
        else:
            rec["engines_aggregated"] = int(e.group("n"))
    spans = []
    for col, (rx, conv) in _TPUT_KEYS.items():
        m = rx.search(body)
        if m is not None:
            spans.append(m.span())
            _put(rec, col, conv, m.group(1), problems)
    if "gen_throughput" not in rec or "running_req" not in rec:
        bad = [p for p in problems if p.startswith("bad value")]
        return LineResult(None, bad or ["throughput line without generation throughput or "
                                        "Running"])
    if "Swapped: " in body or "CPU KV cache usage: " in body:
        rec["variant"] = "v0"
    elif "engines_aggregated" in rec or any(c in rec for c in _CONDITIONAL):
        rec["variant"] = "T4"
    elif e is not None:
        rec["variant"] = "T3"
    else:
        rec["variant"] = "T2" if "gpu_kv_usage" in rec else "T1"
    dev = _KV_DEVICE_RX.search(body)
    if dev is not None:
        rec["kv_device"] = dev.group(1)
    extra = _leftover(body, spans)
    if extra:
        rec["extra"] = extra
    return LineResult(rec, problems)


_CACHE_RX = re.compile(r"Prefix cache hit rate: GPU: " + _V + r"%, CPU: " + _V + "%")


def parse_cache_line(line: str) -> LineResult:
    """The V0 'Prefix cache hit rate: GPU: X%, CPU: Y%' line (folded into a throughput row)."""
    m = _CACHE_RX.search(line)
    if m is None:
        return LineResult(None, ["prefix-cache line not understood"]) \
            if "Prefix cache hit rate: GPU: " in line else LineResult(None)
    problems: list[str] = []
    rec = read_prefix(line[:m.start()], problems)
    _put(rec, "prefix_hit_gpu", _pct, m.group(1), problems)
    _put(rec, "prefix_hit_cpu", _pct, m.group(2), problems)
    return LineResult(rec, problems)


_STAGE_KEYS = {"proposal_ms_per_token": "average_time_per_proposal_tok_ms",
               "scoring_ms": "scoring_time_ms", "verification_ms": "verification_time_ms",
               "prefill_sync_ms": "prefill_sync_time_ms"}
_STAGE_RX = {col: re.compile(r"(?:^| )" + key + r"=([^\s,]*)") for col, key in _STAGE_KEYS.items()}


def parse_stages_line(line: str) -> LineResult:
    """A V0 'SpecDecodeWorker stage times:' line."""
    i = line.find("SpecDecodeWorker stage times: ")
    if i < 0:
        return LineResult(None)
    problems: list[str] = []
    rec = read_prefix(line[:i], problems)
    body = line[i + len("SpecDecodeWorker stage times: "):]
    for col, rx in _STAGE_RX.items():
        m = rx.search(body)
        if m is not None:
            _put(rec, col, _dec, m.group(1), problems)
    missing = [k for c, k in _STAGE_KEYS.items() if c not in rec and c != "prefill_sync_ms"]
    if missing:
        bad = [p for p in problems if p.startswith("bad value")]
        return LineResult(None, bad or [f"stage-times line without {', '.join(missing)}"])
    return LineResult(rec, problems)


# vLLM 0.26 → prefixes the engine ('Engine 000: ', the DP engine's index) and appends
# ' (dummy)' and the KV usage (vllm 0.34.0: v1/metrics/loggers.py:176–213, "%sIteration(%d):
# … iteration elapsed time: %.2f ms%s, %s KV cache usage: %.1f%%%s")
_ITER_RX = re.compile(
    r"(?:Engine (?P<engine>[0-9]{1,6}): )?"
    r"Iteration\((?P<iteration>[0-9]+)\): (?P<ctx_req>[0-9]+) context requests, "
    r"(?P<ctx_tokens>[0-9]+) context tokens, (?P<gen_req>[0-9]+) generation requests, "
    r"(?P<gen_tokens>[0-9]+) generation tokens, iteration elapsed time: "
    r"(?P<iter_ms>[^\s,]+) ms(?P<dummy> \(dummy\))?"
    r"(?:, \S+ KV cache usage: (?P<kv>[0-9.]+)%)?", re.ASCII)


def parse_iteration_line(line: str) -> LineResult:
    """A V1 'Iteration(N): … iteration elapsed time: X ms' line (with 0.26 →'s engine index,
    '(dummy)' flag and KV usage)."""
    m = _ITER_RX.search(line)
    if m is None:
        return LineResult(None, ["iteration line not understood"]) \
            if "iteration elapsed time" in line or "Iteration(" in line else LineResult(None)
    problems: list[str] = []
    rec = read_prefix(line[:m.start()], problems)
    g = m.groupdict()
    engine, dummy, kv = g.pop("engine"), g.pop("dummy"), g.pop("kv")
    for k, v in g.items():
        _put(rec, k, _dec if k == "iter_ms" else _count, v, problems)
    if "iter_ms" not in rec:
        return LineResult(None, problems)
    if engine is not None:
        # whose iteration it is: the frontend logs every DP engine's, 'Engine 001: …' (the
        # index says it where the process label is the API server's)
        rec["dp"] = int(engine)          # DP engines are series of their own, never merged
    rec["dummy"] = dummy is not None
    if kv is not None:
        _put(rec, "kv_cache_usage", _dec, kv, problems)
        if "kv_cache_usage" in rec:
            rec["kv_cache_usage"] /= 100.0
    return LineResult(rec, problems)


# ------------------------------------------------------------------------------- start-up lines
_CONFIG_RX = re.compile(r"(?P<nd>non-default args: )|(?P<ns>args: (?=Namespace\())|"
                        r"(?P<eng>Initializing an? (?:V1 )?LLM engine "
                        r"(?:\(v(?P<ver>[^)]{0,40})\) )?with config: )")
# vLLM key -> SGLang's server_args key of the same meaning (docs/formats-vllm.md)
CONFIG_NAMES = {
    "model": "model_path", "tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size", "max_model_len": "context_length",
    "max_seq_len": "context_length", "seed": "random_seed",
    "speculative_model": "speculative_draft_model_path",
    "num_speculative_tokens": "speculative_num_steps",
}
# keys of the speculative config (a dict in the arguments; SpeculativeConfig(...)'s repr in the
# engine line) -> server_args keys
_SPEC_NAMES = {"method": "speculative_algorithm", "model": "speculative_draft_model_path",
               "draft_model": "speculative_draft_model_path",
               "num_speculative_tokens": "speculative_num_steps",
               "num_spec_tokens": "speculative_num_steps"}
UNKNOWN_METHOD = "unknown"     # speculation on, its method not printed (V0, or a draft model only)
_KEY_RX = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)\Z", re.S)
_DICT_KEY_RX = re.compile(r"\s*(['\"])([^'\"]*)\1\s*:(.*)\Z", re.S)


def _split_top(text: str) -> tuple[list[str], bool]:
    """``text`` split at commas outside brackets and quotes; and whether every bracket and
    quote was closed."""
    parts, depth, quote, esc, start = [], 0, None, False, 0
    for i, ch in enumerate(text):
        if quote is not None:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()], depth == 0 and quote is None


def _value(text: str):
    """A printed value: a Python literal when it is one, else its text."""
    text = text.strip()
    try:
        return literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def _pairs(text: str, dict_keys: bool, closed: bool = True) -> tuple[dict, bool]:
    """'k=v, k=v' (or "'k': v, …") -> ({k: v}, whole).  A part that starts no pair belongs to
    the value before it (an unquoted value with a comma).  Text cut short (``closed`` False, or
    a bracket or quote left open) loses its last pair: its value may be cut inside."""
    parts, whole = _split_top(text)
    whole = whole and closed
    if not whole and len(parts) > 1:
        parts = parts[:-1]
    out: dict = {}
    last = None
    for p in parts:
        m = (_DICT_KEY_RX if dict_keys else _KEY_RX).match(p)
        if m is None:
            if last is not None and isinstance(out[last], str):
                out[last] += "," + p
            continue
        key, val = (m.group(2), m.group(3)) if dict_keys else (m.group(1), m.group(2))
        out[key] = _value(val)
        last = key
    return out, whole


def _config_args(kind: str, text: str) -> tuple[dict, bool]:
    """The key/values of a start-up line's text after its marker, and whether it was whole."""
    text = text.strip()
    if kind == "nd":                               # a dict repr
        try:
            v = literal_eval(text)
            if isinstance(v, dict):
                return {str(k): x for k, x in v.items()}, True
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        closed = text.endswith("}") and text.startswith("{")
        inner = text[1:-1] if closed else text[1:] if text.startswith("{") else text
        return _pairs(inner, True, closed)
    if kind == "ns":                               # Namespace(k=v, …)
        body = text[len("Namespace("):]
        closed = body.endswith(")")
        return _pairs(body[:-1] if closed else body, False, closed)
    return _pairs(text, False)                     # the engine line: k=v, … to the end


def _spec_config(v) -> dict | None:
    """The speculative config as a dict: from a dict, JSON text, or SpeculativeConfig(...)'s
    repr; None when speculation is off."""
    if v is None or v == "None":
        return None
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("SpeculativeConfig("):
            inner = s[len("SpeculativeConfig("):]
            return _pairs(inner[:-1] if inner.endswith(")") else inner, False)[0]
        try:
            v = json.loads(s)
        except ValueError:
            return {"raw": s}
    return v if isinstance(v, dict) else {"raw": v}


def config_keys(raw: dict) -> dict:
    """vLLM's configuration keys as server_args columns: SGLang's names where the meaning is the
    same (CONFIG_NAMES, and the speculative config spread into speculative_algorithm,
    speculative_draft_model_path, speculative_num_steps, speculative_<key>), the rest as vLLM
    names them."""
    out: dict = {}
    spec_seen = False
    for k, v in raw.items():
        if k == "speculative_config":
            spec_seen = True
            sc = _spec_config(v)
            if sc is None:
                out["speculative_algorithm"] = None
                continue
            for sk, sv in sc.items():
                name = _SPEC_NAMES.get(sk, "speculative_" + sk)
                out[name] = sv
            out.setdefault("speculative_algorithm", UNKNOWN_METHOD)
        elif k == "model_tag":
            out.setdefault("model_path", v)
        else:
            out[CONFIG_NAMES.get(k, k)] = v
    # V0's --speculative-model ('[ngram]' for n-gram lookup)
    path = out.get("speculative_draft_model_path")
    if isinstance(path, str) and path.strip("[]") == "ngram":
        out["speculative_algorithm"] = "ngram"
        out["speculative_draft_model_path"] = None
    elif "speculative_model" in raw and not spec_seen:
        spec_seen = True
        out.setdefault("speculative_algorithm", UNKNOWN_METHOD if path else None)
    if out.get("speculative_algorithm") == UNKNOWN_METHOD and path is None and \
            out.get("speculative_num_steps") is None:
        out["speculative_algorithm"] = None
    return out


def _checked(args: dict, problems: list[str]) -> dict:
    """Numbers a typed column cannot hold (ints beyond 64 bits, inf/nan floats), and a count
    key's value that is no count in range (k = 2.5, numbers.config_count_problem), left out
    (None), with a problem each."""
    for k, v in list(args.items()):
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and not -_I64 <= v < _I64:
            problems.append(f"bad value {str(v)[:30]!r} for {k}: beyond 64 bits")
            args[k] = None
        elif isinstance(v, float) and not math.isfinite(v):
            problems.append(f"bad value {str(v)!r} for {k}: not finite")
            args[k] = None
        elif config_count_problem(k, v) is not None:    # a count (k, tp_size …) in range
            problems.append(config_count_problem(k, v))
            args[k] = None
    return args


def parse_config_line(line: str) -> LineResult:
    """A start-up line: 'non-default args: {…}' (May 2025 →), 'args: Namespace(…)' (the API
    server before it) or 'Initializing an LLM engine (vX) with config: …' / 'Initializing a V1
    LLM engine (vX) with config: …' (the engine, every version).  The record's private _args
    are server_args keys (config_keys); _kind says which line it was."""
    m = _CONFIG_RX.search(line)
    if m is None:
        return LineResult(None)
    kind = m.lastgroup if m.lastgroup in ("nd", "ns", "eng") else \
        next(g for g in ("nd", "ns", "eng") if m.group(g))
    problems: list[str] = []
    rec = read_prefix(line[:m.start()], problems)
    try:
        raw, whole = _config_args(kind, line[m.end():].rstrip("\r\n"))
    except RecursionError:       # pragma: no cover - a pathological nesting
        raw, whole = {}, False
    if not raw:
        return LineResult(None, ["vLLM start-up line could not be read"])
    args = _checked(config_keys(raw), problems)
    if kind == "eng" and m.group("ver"):
        args["vllm_version"] = m.group("ver")
    if kind == "nd" and "speculative_algorithm" not in args:
        args["speculative_algorithm"] = None        # not among the non-default args: off
        rec["_spec_default"] = True
    rec["parse_ok"] = whole
    rec["_args"] = args
    rec["_kind"] = kind
    if not whole:
        problems.append(f"vLLM start-up line is not complete (cut short?); {len(raw)} keys "
                        "recovered one by one")
    return LineResult(rec, problems)


PARSERS = {"v1spec": parse_spec_line, "spec": parse_spec_line, "tput": parse_throughput_line,
           "cache": parse_cache_line, "stages": parse_stages_line, "iter": parse_iteration_line,
           "config": parse_config_line}


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
        self.startup = 0           # start-ups (groups of start-up lines) seen so far
        self.time_only = False
        self.overrun = False
        self.consumed_spans: list[tuple[int, int]] = []   # of the last chunk (MixedScanner)
        self._line = 0
        self._yoff = 0
        self._last_month: int | None = None
        # series -> [accepted, draft, emitted, segment, k, startup] of its last V0 line
        self._v0: dict[str, list] = {}
        self._k: dict[str, int] = {}         # process -> k of its latest V0 spec line
        self._pending: dict[str, dict] = {}  # process -> throughput record awaiting its spec
        self._cfg: dict | None = None        # the server_args row of the current start-up
        self._cfg_kinds: list[list] = []     # its lines so far: [kind, pid]
        self._metrics_since = True           # a metrics line since the last start-up line
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
        search = _Finder(chunk).search
        while pos < n:
            hit = marker_line(search, chunk, pos, counted_to, line_no)
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
        if kind == "config":
            self._startup_line(rec)
            return True
        self._metrics_since = True
        rec["startup"] = self.startup
        bad = rec.pop("_bad_window", None)
        if bad:
            self.diag(line_no, "bad_window", f"{table} line: impossible window ({bad}): no accept "
                      "length or rate is derived from it")
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
            for col in ("prefix_hit_gpu", "prefix_hit_cpu"):
                if col in rec:
                    pend[col] = rec[col]
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

    def _startup_line(self, rec: dict) -> None:
        """A start-up line: the first of a start-up (after metrics lines, or a second line of
        the same kind and process) opens a server_args row; the others add their keys to it
        (a later line's value wins, but a method said beats 'unknown' and a default inferred
        from the non-default args beats nothing)."""
        args, kind = rec.pop("_args"), rec.pop("_kind")
        inferred = rec.pop("_spec_default", False)
        key = [kind, rec.get("pid")]
        if self._cfg is None or self._metrics_since or key in self._cfg_kinds:
            for proc in list(self._pending):     # the previous run's last windows
                self._resolve(proc)
            self.startup += 1
            self._k = {}
            row = {k: rec[k] for k in ("line_no", "_md", "_hms", "_yoff", "_iso") if k in rec}
            row["startup"] = self.startup
            row["parse_ok"] = rec["parse_ok"]
            row["_args"] = dict(args)
            self.rows["server_args"].append(row)
            self._cfg, self._cfg_kinds, self._metrics_since = row, [key], False
            return
        cur = self._cfg["_args"]
        for k, v in args.items():
            if k in cur and ((v == UNKNOWN_METHOD and cur[k] not in (None, UNKNOWN_METHOD)) or
                             (inferred and k == "speculative_algorithm")):
                continue
            cur[k] = v
        self._cfg["parse_ok"] = bool(self._cfg["parse_ok"] and rec["parse_ok"])
        self._cfg_kinds.append(key)

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
        """Window counts of a V0 line from the previous line of its series (vllm.md §2.2): a
        new segment (the counters themselves are its first window) after a start-up line, at a
        change of k, or where a counter drops."""
        cur = [rec["accepted_tokens"], rec["draft_tokens"], rec["emitted_tokens"]]
        k = rec["k"]
        last = self._v0.get(series)
        if last is None:
            # the series' first line: its counters count from the start-up line before it
            seg, win = 0, (cur if self.startup > 0 else None)
        elif last[5] != self.startup:
            seg, win = last[3] + 1, cur
        elif last[4] != k:
            seg, win = last[3] + 1, cur
            self.diag(line_no, "restart", f"V0 spec line with {k} speculative tokens where the "
                      f"line before had {last[4]}: another engine run; a new segment ({seg}) "
                      "starts here", "note")
        elif any(c < p for c, p in zip(cur, last[:3])):
            seg, win = last[3] + 1, cur
            self.diag(line_no, "restart", "V0 spec counters dropped: the engine restarted; a new "
                      f"segment ({seg}) starts here", "note")
        else:
            seg, win = last[3], [c - p for c, p in zip(cur, last[:3])]
        self._v0[series] = cur + [seg, k, self.startup]
        rec["segment"] = seg
        if win is None:
            return
        acc, drafted, emitted = win
        bad = None
        if k > 0 and drafted > 0:
            drafts = drafted / k
            if acc > drafted:
                bad = f"{acc} accepted of {drafted} drafted tokens (acceptance rate above 1)"
            elif emitted < drafts:
                bad = (f"{emitted} emitted tokens in {drafts:g} drafts: accept length "
                       f"{emitted / drafts:.3f} < 1")
            elif emitted > drafts * (k + 1):
                bad = (f"{emitted} emitted tokens in {drafts:g} drafts: accept length "
                       f"{emitted / drafts:.3f} > k + 1 = {k + 1}")
        elif drafted == 0 and (acc or emitted):
            bad = f"{acc} accepted and {emitted} emitted tokens without a drafted token"
        if bad:
            self.diag(line_no, "bad_window", f"vllm_spec line: impossible window since the line "
                      f"before ({bad}): no accept length or rate is derived from it")
            return
        rec["window_accepted"], rec["window_draft_tokens"], rec["window_emitted"] = win
        if k > 0 and drafted > 0:
            rec["drafts"] = drafted / k
            rec["drafts_from"] = "draft_tokens/k"
            _derive(rec, acc, drafted / k, emitted=emitted)

    def _resolve(self, proc: str) -> None:
        """The pending throughput line of ``proc`` gets no spec line: a window without one."""
        pend = self._pending.pop(proc, None)
        if pend is not None:
            self._emit_window(pend, None)

    def _emit_window(self, tput: dict | None, spec: dict | None) -> None:
        """The vllm_stats row of a throughput line and the decode row of the window."""
        row: dict = {"engine": "vllm"}
        base = tput if tput is not None else spec
        for k in ("line_no", "startup", "_md", "_hms", "_yoff", "_iso", "dp"):
            if k in base:
                row[k] = base[k]
        if tput is not None:
            self.rows["vllm_stats"].append(tput)
            row["running_req"] = tput["running_req"]
            row["queue_req"] = tput.get("waiting_req")
            row["gen_throughput"] = tput["gen_throughput"]
            row["prompt_throughput"] = tput.get("prompt_throughput")
            # V0 counts one token per decoding sequence and step, V1 the tokens emitted
            row["gen_throughput_steps"] = tput["variant"] == "v0"
            if tput.get("gpu_kv_usage") is not None:
                row["token_usage"] = tput["gpu_kv_usage"] / 100
        if spec is not None:
            for k in ("accept_len", "accept_rate", "drafts"):
                row[k] = spec.get(k)
        self.rows["decode"].append(row)

    # ------------------------------------------------------------------ state
    _STATE = ("_line", "_yoff", "_last_month", "_v0", "_k", "startup", "_metrics_since")

    def _resumable(self) -> bool:
        # no throughput line awaits its spec line, and no start-up row is still being filled
        return not self._pending and self._metrics_since

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
            hint = "" if self.base_date is not None else \
                "; pass --date YYYY-MM-DD (the first line's date) to set it"
            self.diag(None, "date", f"vLLM prefixes carry no year; years {how}{hint}", "note")
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
                r.setdefault("startup", self.startup)
                out.append(r)
            out.sort(key=lambda r: r["line_no"])
            frames[name] = build_frame(TABLES[name], out, report=self._bad_value)
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
