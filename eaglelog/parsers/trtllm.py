"""TensorRT-LLM outputs (others.md §2): trtllm-bench's ``DECODING STATISTICS`` block (a ``bench``
row), the PyTorch executor's per-iteration log line and iteration-stats records carrying
``specDecodingStats`` (``bench_iters`` rows).

Every number is read with numbers.py (ASCII digits, finite, in range): an unreadable value is
NA and reported, never raised.  A timestamp is kept only when it is a real, naive date and time
(``YYYY-MM-DD[ T]HH:MM:SS[.f]``); any other rendering goes to ``extra`` and is reported.
"""
from __future__ import annotations

import datetime as _dt
import re

from .._lazy import pd
from ..schema import TABLES
from ._common import Block, Parsed, base, close, dump_json, json_obj, not_a_record
from .numbers import Reader, to_float, to_int, to_int32

KINDS = ("trt_block", "trt_iter", "trt_stats")
MARKER_TEXT = {
    "trt_block": rb"DECODING STATISTICS",
    "trt_iter": rb"host_step_time\s*[=:]",
    "trt_stats": rb"\"specDecodingStats\"",
}
SNIFF_LITERALS: dict[str, tuple[bytes, ...]] = {}
ITER_KINDS = {"trt_iter", "trt_stats"}

# ------------------------------------------------------------------ timestamps
_TS = re.compile(r"(?P<d>[0-9]{4})[-/](?P<mo>[0-9]{2})[-/](?P<dd>[0-9]{2})[ T](?P<h>[0-9]{2}):"
                 r"(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:[.,](?P<f>[0-9]{1,9}))?", re.ASCII)


def to_timestamp(text: str) -> str:
    """A naive ISO timestamp text the datetime column can hold, or ValueError (time zones,
    impossible dates such as 02-30, years outside 1678–2261, other digits)."""
    m = _TS.fullmatch(text.strip())
    if m is None:
        raise ValueError(text)
    y = int(m["d"])
    if not 1678 <= y <= 2261:
        raise ValueError(text)
    frac = (m["f"] or "")[:6]
    ts = _dt.datetime(y, int(m["mo"]), int(m["dd"]), int(m["h"]), int(m["mi"]), int(m["s"]),
                      int(frac.ljust(6, "0")) if frac else 0)    # raises ValueError itself
    return ts.isoformat()


# ------------------------------------------------------------------ DECODING STATISTICS
TRT_ROW = re.compile(r"^\s*\[(?P<tag>DT|ADT|DAR|AL)\]\s+(?P<key>\w+)\s*:\s*(?P<val>\S*)\s*$",
                     re.ASCII)
TRT_MODE = re.compile(r"DECODING STATISTICS\s*(?:\((?P<mode>[^)]*)\))?")
TRT_STAT_KEYS = ("MINIMUM", "MAXIMUM", "AVERAGE", "P50", "P90", "P95", "P99")
_TRT_RULE = re.compile(r"^\s*(?:={3,}|-{2,}\s.*Details\b.*|-{3,})\s*$")


def block_record(mode: str | None, stats: dict, complete: bool) -> dict:
    al, dar = stats.get("AL", {}), stats.get("DAR", {})
    return base("trtllm-bench", "tensorrt-llm", "run", "block", label=mode,
                accept_len=al.get("AVERAGE"),
                accept_len_def="request-mean" if al.get("AVERAGE") is not None else None,
                accept_len_min=al.get("MINIMUM"), accept_len_max=al.get("MAXIMUM"),
                acceptance_rate=dar.get("AVERAGE"),
                stats=dump_json(stats), complete=complete)


class TrtBlock(Block):
    kind = "trt_block"
    name = "DECODING STATISTICS block"

    def __init__(self, line_no: int, header: str) -> None:
        super().__init__(line_no)
        m = TRT_MODE.search(header)
        self.mode = ((m.group("mode") or "").strip() or None) if m else None
        self.stats: dict[str, dict[str, float]] = {}
        self.seen: set[tuple[str, str]] = set()     # rows printed (readable or not)

    def take(self, line: str) -> str:
        m = TRT_ROW.match(line)
        if m:
            self.seen.add((m.group("tag"), m.group("key")))
            v = self.read(m.group("val"), to_float, f"[{m.group('tag')}] {m.group('key')}")
            if v is not None:
                self.stats.setdefault(m.group("tag"), {})[m.group("key")] = v
            return "take"
        if _TRT_RULE.match(line):
            return "take"
        return "reject"

    def blank(self) -> bool:
        return True

    def incomplete(self) -> str | None:
        # a row printed with a bad value is there (reported as a bad value), not missing
        missing = [f"[{t}] {k}" for t in ("DT", "ADT", "DAR", "AL") for k in TRT_STAT_KEYS
                   if (t, k) not in self.seen]
        if missing:
            return f"no {missing[0]} row" + (f" (and {len(missing) - 1} more)"
                                             if len(missing) > 1 else "")
        return "last line has no newline" if self.unterminated else None

    def records(self):
        return [(self.line_no, self.end_line,
                 block_record(self.mode, self.stats, self.incomplete() is None))]


# ------------------------------------------------------------------ per-iteration log line
_V = r"'?\s*[=:]\s*(?P<v>[^\s,{}']*)"
_ITER_KEYS = (   # column, pattern, converter
    ("iter", r"(?<![\w'])iter" + _V, to_int),
    ("global_rank", r"global_rank" + _V, to_int32),
    ("rank", r"(?<![\w'])rank" + _V, to_int32),
    ("host_step_time_ms", r"host_step_time\s*[=:]\s*(?P<v>[^\s,]*?)\s*ms", to_float),
    ("prev_device_step_time_ms", r"prev_device_step_time\s*[=:]\s*(?P<v>[^\s,]*?)\s*ms", to_float),
    ("num_scheduled_requests", r"num_scheduled_requests" + _V, to_int32),
    ("num_ctx_requests", r"num_ctx_requests" + _V, to_int32),
    ("num_ctx_tokens", r"num_ctx_tokens" + _V, to_int),
    ("num_generation_tokens", r"num_generation_tokens" + _V, to_int),
    ("kv_cache_util", r"kv_cache_util\w*" + _V, to_float))
_ITER_RX = [(c, re.compile(p, re.ASCII), conv) for c, p, conv in _ITER_KEYS]
_TRT_REQS = re.compile(r"currank_total_requests\s*[=:]\s*(?P<a>[^\s,/]*)\s*/\s*(?P<b>[^\s,]*)",
                       re.ASCII)
_TRT_TIME = re.compile(r"timestamp\s*[=:]\s*(.*?)\s*(?:,\s*[\w']+\s*[=:]|$)", re.ASCII)
_HOST = re.compile(r"host_step_time\s*[=:]", re.ASCII)


def parse_iter(line: str) -> Parsed:
    if _HOST.search(line) is None:
        return not_a_record()
    r = Reader()
    rec = {"tool": "trtllm", "engine": "tensorrt-llm", "format": "iter_log"}
    for col, rx, conv in _ITER_RX:
        m = rx.search(line)
        if m is not None and m.group("v"):
            v = r(m.group("v"), conv, col)
            if v is not None:
                rec[col] = v
    m = _TRT_REQS.search(line)
    if m:
        for col, g in (("currank_requests", "a"), ("total_requests", "b")):
            v = r(m.group(g), to_int32, col) if m.group(g) else None
            if v is not None:
                rec[col] = v
    extra = {}
    m = _TRT_TIME.search(line)
    if m:
        text = m.group(1).strip().strip("'\"")
        try:
            rec["timestamp"] = to_timestamp(text)
        except ValueError:
            extra["timestamp"] = text
            r.bad.append(f"timestamp {text[:40]!r} is not a date and time")
    if extra:
        rec["extra"] = dump_json(extra)
    if not set(rec) - {"tool", "engine", "format", "extra"}:
        why = "; ".join(r.bad) or "no 'host_step_time = X ms'"
        return Parsed(None, [f"TensorRT-LLM iteration line: no value could be read ({why})"])
    cut = None
    i = line.find("states")
    if i >= 0 and "{" in line[i:] and "}" not in line[i:]:
        cut = "'states = {…}' not closed"
    problems = []
    if "host_step_time_ms" not in rec and not any("host_step_time" in b for b in r.bad):
        cut = cut or "no 'host_step_time = X ms' value"
    if "iter" not in rec and not any(b.endswith(" iter") for b in r.bad):
        problems.append("no 'iter =' field")
    return Parsed(rec, problems, r.bad, cut)


# ------------------------------------------------------------------ iteration stats
_SPEC_KEYS = (("numDraftTokens", "num_draft_tokens", to_int),
              ("numAcceptedTokens", "num_accepted_tokens", to_int),
              ("numRequestsWithDraftTokens", "num_requests_with_drafts", to_int32),
              ("acceptanceLength", "accept_len", to_float),
              ("iterLatencyMS", "iter_latency_ms", to_float),
              ("draftOverhead", "draft_overhead", to_float))
_ITER_JSON = re.compile(r'"iter"\s*:\s*(?P<v>[^\s,}]+)', re.ASCII)
_TS_JSON = re.compile(r'"timestamp"\s*:\s*"(?P<v>[^"]*)"', re.ASCII)


def parse_stats(line: str) -> Parsed:
    i = line.find('"specDecodingStats"')
    if i < 0:
        return not_a_record()
    obj = json_obj(line, i)
    if obj is None:
        return Parsed(None, ["specDecodingStats is not a JSON object (cut short?)"])
    r = Reader()
    rec = {"tool": "trtllm", "engine": "tensorrt-llm", "format": "iter_stats"}
    for key, col, conv in _SPEC_KEYS:
        if key in obj and obj[key] is not None:
            v = r(obj[key], conv, key)
            if v is not None:
                rec[col] = v
    known = {k for k, _, _ in _SPEC_KEYS}
    rest = {k: v for k, v in obj.items() if k not in known}
    if rest:
        rec["extra"] = dump_json(rest)
    m = _ITER_JSON.search(line)
    if m:
        v = r(m.group("v"), to_int, "iter")
        if v is not None:
            rec["iter"] = v
    m = _TS_JSON.search(line)
    if m:
        try:
            rec["timestamp"] = to_timestamp(m.group("v"))
        except ValueError:
            r.bad.append(f"timestamp {m.group('v')[:40]!r} is not a date and time")
    req, acc = rec.get("num_requests_with_drafts"), rec.get("num_accepted_tokens")
    if req and acc is not None:
        rec["accept_len_derived"] = (acc + req) / req
    problems = []
    if not close(rec.get("accept_len"), rec.get("accept_len_derived"), 0.005):
        problems.append(f"acceptanceLength {rec['accept_len']} ≠ (numAcceptedTokens + "
                        f"numRequestsWithDraftTokens) / numRequestsWithDraftTokens")
    return Parsed(rec, problems, r.bad)


LINE_PARSERS = {"trt_iter": parse_iter, "trt_stats": parse_stats}


def align_device_time(it: pd.DataFrame) -> pd.DataFrame:
    """device_step_time_ms of iteration k = prev_device_step_time_ms printed on iteration k+1
    (same source and rank)."""
    it = it.copy()
    logs = it[it["format"] == "iter_log"]
    key = {}
    ranks = logs["rank"] if "rank" in logs else [None] * len(logs)
    for src, rank, itr, prev in zip(logs["source"], ranks, logs["iter"],
                                    logs["prev_device_step_time_ms"]):
        if pd.notna(itr):
            key[(src, None if rank is None or pd.isna(rank) else int(rank), int(itr))] = prev
    vals = []
    for _, row in it.iterrows():
        if row["format"] != "iter_log" or pd.isna(row["iter"]):
            vals.append(float("nan"))
            continue
        rank = row["rank"] if "rank" in it else None
        v = key.get((row["source"], None if rank is None or pd.isna(rank) else int(rank),
                     int(row["iter"]) + 1))
        vals.append(float("nan") if v is None or pd.isna(v) else float(v))
    it["device_step_time_ms"] = vals
    cols = [c for c in TABLES["bench_iters"].names if c in it.columns]
    return it[cols]

