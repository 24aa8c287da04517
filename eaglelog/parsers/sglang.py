"""SGLang scheduler and request lines (sglang.md §2, §4, §6, §7), every release.

Each ``parse_*`` function takes one line (ANSI codes already stripped) and returns a
``LineResult``: ``record`` is a dict of schema columns (without source/line_no) or None;
``problems`` lists what is wrong with a line that carries a record.  ``record is None`` and no
problems means the line only looked like a record (a message mentioning 'Decode batch', say).
The functions are pure: no state, no I/O.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from keyword import iskeyword
from operator import mul

from .numbers import (I64, MAX_MEASURE, config_count_problem, literal_eval, literal_eval_fast,
                      parse_expr, to_int, to_int32, to_measure)
from .prefix import read_prefix, split_tags, valid_datetime
from .request_identity import identity_from_json, identity_from_text

GRAPH_LABELS = ("cuda graph", "cpu graph", "npu graph", "musa graph")


@dataclass
class LineResult:
    record: dict | None
    problems: list[str] = field(default_factory=list)


_I64 = I64
# what a number printed by a logger looks like: ASCII digits only (int() and float() also take
# Arabic-Indic or full-width digits, '1_000', 'inf', 'nan' and 1e400, which no engine prints):
# the shared converters of numbers.py, under the names scan._key_spec knows them by
# (the line fields are measures: not negative, not beyond 10^12; counts of requests 0 … 10^6)
_int, _int32, _float = to_int, to_int32, to_measure


def _pct(v: str) -> float:
    return _float(v[:-1] if v.endswith("%") else v)


def _bool(v: str) -> bool:
    if v == "True":
        return True
    if v == "False":
        return False
    raise ValueError(v)


def _iso(v: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?", v, re.ASCII) or \
            not valid_datetime(v[:10], v[11:]):
        raise ValueError(v)
    return v


# literal key -> (column, converter); the same key means the same column in both tables
_COMMON_KEYS = {
    "#running-req": ("running_req", _int32),
    "#cached-token": ("cached_token", _int),
    "#token": ("num_tokens", _int),
    "token usage": ("token_usage", _float),
    "#full token": ("full_token", _int),
    "full token usage": ("full_token_usage", _float),
    "#swa token": ("swa_token", _int),
    "swa token usage": ("swa_token_usage", _float),
    "mamba usage": ("mamba_usage", _float),
    "#queue-req": ("queue_req", _int),
    "waiting-image-req": ("waiting_image_req", _int),
    "timestamp": ("line_timestamp", _iso),
    "fwd occupancy": ("fwd_occupancy", _pct),
    "fwd+idle occupancy": ("fwd_idle_occupancy", _pct),
}
DECODE_KEYS = dict(_COMMON_KEYS, **{
    "mamba num": ("mamba_num", _int),
    "#gpu token": ("gpu_token", _int),
    "gpu token usage": ("gpu_token_usage", _float),
    "#cpu token": ("cpu_token", _int),
    "cpu token usage": ("cpu_token_usage", _float),
    "accept len": ("accept_len", _float),
    "accept rate": ("accept_rate", _float),
    "cap len": ("cap_len", _float),
    "block accept len": ("block_accept_len", _float),
    "pre-allocated usage": ("pre_allocated_usage", _float),
    "#prealloc-req": ("prealloc_req", _int),
    "#transfer-req": ("transfer_req", _int),
    "#retracted-req": ("retracted_req", _int),
    "#host-receive-req": ("host_receive_req", _int),
    "gen throughput (token/s)": ("gen_throughput", _float),
    "largest-len": ("largest_len", _int),
    "est. decode TFLOPS/s (per GPU)": ("est_decode_tflops", _float),
    "est. read BW (GB/s per GPU)": ("est_read_bw", _float),
    "est. write BW (GB/s per GPU)": ("est_write_bw", _float),
})
PREFILL_KEYS = dict(_COMMON_KEYS, **{
    "#new-seq": ("new_seq", _int),
    "#new-token": ("new_token", _int),
    "cache hit rate": ("cache_hit_rate", _pct),
    "#pending-token": ("pending_token", _int),
    "#replay-token": ("replay_token", _int),
    "#unbootstrapped-req": ("unbootstrapped_req", _int),
    "#transferring-req": ("transferring_req", _int),
    "time": ("pd_time", _float),
    "#prealloc-req": ("bootstrap_req", _int),
    "#bootstrap-req": ("bootstrap_req", _int),
    "#inflight-req": ("inflight_req", _int),
    "#optimistic-req": ("optimistic_req", _int),
    "input throughput (token/s)": ("input_throughput", _float),
    "est. prefill TFLOPS/s (per GPU)": ("est_prefill_tflops", _float),
})
# v0.4.9 hybrid spelling '#token: full=N, swa=N, token usage: full=X, swa=X'
_HYBRID = {"#token": ("full_token", "swa_token", _int),
           "token usage": ("full_token_usage", "swa_token_usage", _float)}
LEGACY_PREFILL_KEYS = {
    "#seq": ("new_seq", _int), "#new_token": ("new_token", _int),
    "#cached_token": ("cached_token", _int), "#remaining_req": ("queue_req", _int),
    "#running_req": ("running_req", _int32), "tree_cache_hit_rate": ("cache_hit_rate", _pct),
}

DECODE_SHAPES = ("'Decode batch. …', 'Decode batch, …' and 'Decode batch [N]. …', SGLang "
                 "v0.1.17 – v0.5.23")
_OTHER_TEXT_RX = re.compile(r"(?: [a-z]|es\b|$)")      # 'Decode batch size …', '… batches'
DECODE_HEAD_RX = re.compile(r"Decode batch(?: \[(?P<iter>\d{1,18})\])?(?P<punct>[.,]) ", re.ASCII)
PREFILL_HEAD_RX = re.compile(r"Prefil{1,2} batch(?:\(mixed #running-req: (?P<mixed>\d{1,18})\))?"
                             r"(?: \[(?P<iter>\d{1,18})\])?(?P<punct>[.,]) ", re.ASCII)
GPU_TAG_RX = re.compile(r"\[gpu(?:_id)?=(?P<gpu>\d{1,18})\] $", re.ASCII)
LEGACY_FILL_RX = re.compile(r"(#?[A-Za-z_]+): (-?[\d.]+%?)", re.ASCII)


_PREFIX_COLS: dict[str, dict] = {}


def prefix_columns(prefix_text: str) -> dict:
    """Timestamp parts and rank columns of the text before a body (memoised: consecutive lines
    share their second and tags; callers copy the dict with rec.update)."""
    out = _PREFIX_COLS.get(prefix_text)
    if out is None:
        p = read_prefix(prefix_text)
        out = {"_date": p.date, "_time": p.time, "ranks": p.tags}
        if p.wrapper is not None:
            out["_wtime"] = p.wrapper
        out.update(split_tags(p.tags))
        if len(_PREFIX_COLS) > 4096:
            _PREFIX_COLS.clear()
        _PREFIX_COLS[prefix_text] = out
    return out


def _segments(rest: str, keys: dict, rec: dict, problems: list[str]) -> None:
    """Key/value segmentation of a decode or prefill line after its header (sglang.md §2.6)."""
    rest = rest.rstrip()
    trailing = rest.endswith(",")
    if trailing:
        rest = rest[:-1]
    rec["trailing_comma"] = trailing
    extra: list[str] = []
    hybrid_next: tuple[str, object] | None = None
    for seg in rest.split(", "):
        seg = seg.strip()
        if not seg:
            continue
        key, sep, val = seg.partition(": ")
        if not sep:
            if hybrid_next and seg.startswith("swa="):
                col, conv = hybrid_next
                try:
                    rec[col] = conv(seg[4:])
                except ValueError:
                    problems.append(f"bad value in {seg!r}")
            else:
                extra.append(seg)
            hybrid_next = None
            continue
        hybrid_next = None
        val = val.strip()
        if key in _HYBRID and val.startswith("full="):
            full_col, swa_col, conv = _HYBRID[key]
            try:
                rec[full_col] = conv(val[5:])
            except ValueError:
                problems.append(f"bad value in {seg!r}")
            hybrid_next = (swa_col, conv)
            continue
        if key in GRAPH_LABELS:
            rec["graph_backend"] = key
            try:
                rec["graph"] = _bool(val)
            except ValueError:
                problems.append(f"bad value in {seg!r}")
            continue
        spec = keys.get(key)
        if spec is None:
            extra.append(seg)
            continue
        col, conv = spec
        try:
            rec[col] = conv(val)
        except ValueError:
            problems.append(f"bad value in {seg!r}")
            extra.append(seg)
    rec["extra"] = ", ".join(extra) if extra else None


def _batch_header(line: str, idx: int, m: re.Match, rec: dict) -> str:
    """Fill gpu/iter/header of a 'Decode batch' / 'Prefill batch' header matched at ``idx``;
    return the text before it (the prefix)."""
    before = line[:idx]
    g = GPU_TAG_RX.search(before)
    if g:
        rec["gpu"] = int(g.group("gpu"))
        before = before[:g.start()]
    if m.group("iter") is not None:
        rec["iter"] = int(m.group("iter"))
        rec["header"] = "[N],"
    else:
        rec["header"] = m.group("punct")
    return before


# The layouts most logs print (v0.4.1.post7 → main, plain KV pool): one anchored match instead
# of key/value segmentation.  Anything else (extra fields, other pools, odd values) falls back to
# _segments, which gives the same record for these lines (tests/test_properties.py).
# (numbers within numbers.MAX_COUNT and MAX_MEASURE only: a larger one goes to _segments,
# whose converters report it)
_FAST_DECODE = re.compile(
    r"#running-req: (\d{1,6}), #token: (\d{1,18}), token usage: (\d{1,12}\.\d{1,20}), "
    r"(?:accept len: (\d{1,12}\.\d{1,20}), (?:accept rate: (\d{1,12}\.\d{1,20}), )?)?"
    r"(?:(cuda|cpu|npu|musa) graph: (True|False), )?"
    r"gen throughput \(token/s\): (\d{1,12}\.\d{1,20}), #queue-req: (\d{1,18})(,)?", re.ASCII)


_SOURCE_LOCATION = re.compile(r"\([\w./-]+\.py:[0-9]+\)", re.ASCII)


def _call_site(rest: str) -> int | None:
    """Where a trailing call site '(scheduler.py:123)' (and the ', ' or spaces before it)
    starts in ``rest``, or None (a find from the end: no regex scan over long runs of text)."""
    body = rest.rstrip()
    if not body.endswith(")"):
        return None
    at = body.rfind("(")
    if at < 0 or not _SOURCE_LOCATION.fullmatch(body, at):
        return None
    cut = len(body[:at].rstrip())
    return cut - 1 if body[:cut].endswith(",") else cut
# the columns a decode line's fields fill (the header and prefix columns are not among them)
_DECODE_COLUMNS = {col for col, _ in DECODE_KEYS.values()} | {
    "graph", "graph_backend", "full_token", "swa_token", "full_token_usage", "swa_token_usage",
    "extra", "trailing_comma"}
_PREFILL_COLUMNS = {col for col, _ in PREFILL_KEYS.values()} | {
    "full_token", "swa_token", "full_token_usage", "swa_token_usage", "extra", "trailing_comma"}


def _fast_decode(rest: str, rec: dict) -> bool:
    m = _FAST_DECODE.fullmatch(rest.rstrip())
    if m is None:
        return False
    rr, tok, usage, al, ar, gb, g, tput, q, trail = m.groups()
    rec["running_req"] = int(rr)
    rec["num_tokens"] = int(tok)
    rec["token_usage"] = float(usage)
    if al is not None:
        rec["accept_len"] = float(al)
        if ar is not None:
            rec["accept_rate"] = float(ar)
    if gb is not None:
        rec["graph_backend"] = gb + " graph"
        rec["graph"] = g == "True"
    rec["gen_throughput"] = float(tput)
    rec["queue_req"] = int(q)
    rec["trailing_comma"] = trail is not None
    rec["extra"] = None
    return True


def parse_decode_line(line: str) -> LineResult:
    """A 'Decode batch' line of any release, or a legacy header-less '#running-req:' line."""
    idx = line.find("Decode batch")
    rec: dict = {}
    problems: list[str] = []
    if idx >= 0:
        m = DECODE_HEAD_RX.match(line, idx)
        if not m:
            if line.startswith("Decode batch [", idx):     # '[-0]', '[1e3]': a damaged header
                return LineResult(None, ["header 'Decode batch [N]' with N not a number"])
            if _OTHER_TEXT_RX.match(line, idx + len("Decode batch")):
                return LineResult(None)        # prose that names decode batches
            # the marker in a shape no release printed: said, not skipped (issue 35)
            return LineResult(None, [f"a 'Decode batch' line in a shape eaglelog does not know "
                                     f"(it reads {DECODE_SHAPES}): no window taken from it"])
        before = _batch_header(line, idx, m, rec)
        rest = line[m.end():]
    else:
        idx = line.find("#running-req: ")
        if idx < 0:
            return LineResult(None)
        before = line[:idx]
        # legacy (v0.1.3 – v0.1.16): the body starts with '#running-req:' and has '#queue-req'
        if before.strip() and not before.rstrip().endswith("]"):
            return LineResult(None)
        rec["header"] = "none"
        rest = line[idx:]
    rec.update(prefix_columns(before))
    if _fast_decode(rest, rec):
        return LineResult(rec, problems)
    return _body(rest, DECODE_KEYS, _DECODE_COLUMNS, rec, problems)


def _body(rest: str, keys: dict, columns: set, rec: dict, problems: list[str]) -> LineResult:
    """The key/value body of a decode or prefill line.  '#queue-req' ends every release's
    body: without it the line was cut short, and the fields before the last separator are kept
    (the last one may be cut inside its value) and the cut is reported.  A logger format that
    appends the call site ('… (scheduler.py:123)') ends the line whole."""
    loc = _call_site(rest)
    if loc is not None:
        rest = rest[:loc]
    _segments(rest, keys, rec, problems)
    if "queue_req" not in rec and loc is None and "#queue-req: " not in rest:
        kept, _, last = rest.rstrip().rpartition(", ")
        for k in columns:
            rec.pop(k, None)
        del problems[:]
        if kept:
            _segments(kept, keys, rec, problems)
        if not any(k in rec for k in columns if k not in ("extra", "trailing_comma")):
            return LineResult(None, ["cut short before its first field"])
        problems.append(f"cut short (no '#queue-req' field): the fields before "
                        f"{' '.join(last.split())[:40]!r} are kept")
    return LineResult(rec, problems)


def parse_prefill_line(line: str) -> LineResult:
    """A 'Prefill batch' / 'Prefil batch' line of any release, or legacy 'new fill batch.'."""
    rec: dict = {}
    problems: list[str] = []
    idx = line.find("Prefil")
    if idx >= 0:
        m = PREFILL_HEAD_RX.match(line, idx)
        if not m:
            return LineResult(None)
        before = _batch_header(line, idx, m, rec)
        if m.group("mixed") is not None:
            rec["mixed_running_req"] = int(m.group("mixed"))
        rec.update(prefix_columns(before))
        return _body(line[m.end():], PREFILL_KEYS, _PREFILL_COLUMNS, rec, problems)
    idx = line.find("new fill batch. ")
    if idx < 0:
        return LineResult(None)
    rec["header"] = "none"
    rec.update(prefix_columns(line[:idx]))
    rest = line[idx + len("new fill batch. "):].rstrip()
    rec["trailing_comma"] = False
    for key, val in LEGACY_FILL_RX.findall(rest):
        spec = LEGACY_PREFILL_KEYS.get(key)
        if spec:
            col, conv = spec
            try:
                rec[col] = conv(val.rstrip("."))
            except ValueError:
                problems.append(f"bad value for {key!r}: {val!r}")
    rec["extra"] = None
    if "cache_hit_rate" not in rec:
        return LineResult(None, ["legacy prefill line has no 'tree_cache_hit_rate': cut short?"])
    return LineResult(rec, problems)


# --------------------------------------------------------------------------- server_args=

def _top_level_split(text: str) -> list[str]:
    """Split 'a=1, b=[1, 2], c='x, y'' on top-level commas (quotes and brackets respected)."""
    parts, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _literal(node_or_text):
    try:
        return literal_eval(node_or_text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None if not isinstance(node_or_text, str) else _Unreadable(node_or_text)


class _Unreadable(str):
    """Marks source text kept because it is not a Python literal."""


def parse_server_args(text: str) -> tuple[dict, bool]:
    """'…server_args=ServerArgs(k=v, …)' -> ({k: v}, parsed_whole); or, SGLang 0.5.19 →,
    '…server_args={'k': v, …}' (the launcher logs ``ServerArgs.resolved_dict()``: sglang
    0.5.19 srt/entrypoints/engine.py:265, where 0.5.18 logged ``{server_args=}`` at :253;
    0.5.23 engine.py:173–174 and 311).

    Values are read with ast.literal_eval only (nothing is executed); a value that is not a literal
    (LoRARef(...), bare inf/nan) is kept as its source text.  When the repr cannot be parsed as a
    whole (cut short, docker-split), keys are recovered one by one and parsed_whole is False.
    """
    i = text.find("server_args=")
    expr = text[i + len("server_args="):].strip() if i >= 0 else text.strip()
    if expr.startswith("{"):
        if expr.endswith("}"):
            fast = _plain_args(expr[1:-1], _DICT_PAIR)
            if fast is not None:
                return fast, True
        return _read_args(expr, _dict_pairs, "{", "}", _dict_key)
    if expr.startswith("ServerArgs(") and expr.endswith(")"):
        fast = _plain_args(expr[len("ServerArgs("):-1], _CALL_PAIR)
        if fast is not None:
            return fast, True
    return _read_args(expr, _call_pairs, "(", ")", _call_key)


# The shapes SGLang prints, read without compiling the repr (ast.parse of a 3 KB repr cost
# 0.2 ms a log): 'key=value, …' (or "'key': value, …") where every value is a plain literal
# — a str without a backslash, a control character or a surrogate, a decimal int, a float
# with a '.' or an exponent, None/True/False, or a flat list of those.  Such a text is a
# valid call (dict display) whose values literal_eval reads as these do; anything else (a
# nested dict, a tuple, LoRARef(...), inf, a cut-short repr) goes to _read_args.
_PLAIN_STR = r"'[^'\\\x00-\x1f\x7f\ud800-\udfff]*'|\"[^\"\\\x00-\x1f\x7f\ud800-\udfff]*\""
_PLAIN_NUM = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_PLAIN_SCALAR = rf"(?:{_PLAIN_STR}|{_PLAIN_NUM}|None|True|False)"
_PLAIN_VALUE = (rf"({_PLAIN_STR})"
                r"|(-?(?:0|[1-9][0-9]{0,99}))(?=, |\Z)"
                r"|(-?[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+))"
                r"|(None|True|False)"
                rf"|(\[(?:{_PLAIN_SCALAR}(?:, {_PLAIN_SCALAR})*)?\])")
# (the whole pair, key, quoted key, value: str, int, float, word, list)
_CALL_PAIR = re.compile(rf"(([A-Za-z_][A-Za-z0-9_]*)()=(?:{_PLAIN_VALUE})(?:, |\Z))")
_DICT_PAIR = re.compile(rf"(()({_PLAIN_STR}): (?:{_PLAIN_VALUE})(?:, |\Z))")
_WORDS = {"None": None, "True": True, "False": False}


def _plain_args(inner: str, pair_rx: re.Pattern) -> dict | None:
    """The pairs of ``inner`` (a call's arguments or a dict display's items) when every one is
    plain (above) and together they are the whole text, else None."""
    pairs = pair_rx.findall(inner)
    if not pairs or "".join([p[0] for p in pairs]) != inner:
        return None          # (the matches tile the text only if nothing was skipped)
    out: dict = {}
    for _, key, qkey, sv, iv, fv, word, lst in pairs:
        if qkey:
            key = qkey[1:-1]
        elif iskeyword(key):
            return None          # 'class=1' is no keyword argument: not a valid call
        if sv:
            out[key] = sv[1:-1]
        elif iv:
            out[key] = int(iv)
        elif fv:
            out[key] = float(fv)
        elif word:
            out[key] = _WORDS[word]
        else:
            try:
                out[key] = literal_eval(lst)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None      # ('[015]': no literal; the whole repr is read by ast)
    return out


def _call_pairs(node):
    """ServerArgs(k=v, …): (key, value node) pairs."""
    if not isinstance(node, ast.Call):
        raise SyntaxError("not a call")
    return [(kw.arg, kw.value) for kw in node.keywords if kw.arg is not None]


def _dict_pairs(node):
    """{'k': v, …} (0.5.19 →): (key, value node) pairs."""
    if not isinstance(node, ast.Dict):
        raise SyntaxError("not a dict")
    return [(k.value, v) for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def _call_key(part: str):
    key, eq, val = part.partition("=")
    key = key.strip()
    return (key, val) if eq and key.isidentifier() else None


def _dict_key(part: str):
    key, colon, val = part.partition(":")
    key = _literal(key.strip())
    ok = colon and isinstance(key, str) and not isinstance(key, _Unreadable) and \
        key.isidentifier()
    return (key, val) if ok else None


def _read_args(expr: str, pairs_of, open_: str, close: str, key_of) -> tuple[dict, bool]:
    """(args, parsed_whole) of one shape: the whole expression with ast (values by
    literal_eval, else their source text), or, cut short, key by key on top-level commas."""
    try:
        out = {}
        for key, node in pairs_of(parse_expr(expr).body):
            try:
                out[key] = literal_eval(node)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                out[key] = ast.get_source_segment(expr, node) or ast.unparse(node)
        return out, True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    inner = expr
    p = inner.find(open_)
    if p >= 0:
        inner = inner[p + 1:]
    if inner.endswith(close):
        inner = inner[:-1]
    out = {}
    for part in _top_level_split(inner):
        kv = key_of(part)
        if kv is None:
            continue
        v = _literal(kv[1].strip())
        out[kv[0]] = str(v) if isinstance(v, _Unreadable) else v
    return out, False


_REPR_RX = re.compile(r"[A-Za-z_][\w.]*\(|[<\[(]")   # what a logged object looks like
SERVER_ARGS_SHAPES = ("server_args=ServerArgs(…) (SGLang ≤ 0.5.18)",
                      "server_args={…} (0.5.19 →)")


def parse_server_args_line(line: str) -> LineResult:
    idx = line.find("server_args=")
    if idx < 0:
        return LineResult(None)
    head = line[idx + len("server_args="):idx + 60].lstrip()
    dict_form = head.startswith("{")
    if not dict_form and "ServerArgs(" not in line[idx:idx + 40]:
        if not _REPR_RX.match(head):
            return LineResult(None)       # code that names the argument (a traceback line)
        # a repr after the marker in neither known shape: said, not skipped
        return LineResult(None, ["a server_args= line in a shape eaglelog does not know "
                                 f"(it reads {' and '.join(SERVER_ARGS_SHAPES)}): the run's "
                                 "configuration is not read from it"])
    args, whole = parse_server_args(line[idx:])
    if not args:
        return LineResult(None, ["server_args line could not be read"])
    rec = dict(prefix_columns(line[:idx]))
    rec["parse_ok"] = whole
    what = "{…} dict" if dict_form else "ServerArgs(...) repr"
    problems = [] if whole else [f"server_args line is not a complete {what} "
                                 f"(cut short?); {len(args)} keys recovered one by one"]
    args = _dp_attention(args)
    rec["_args"] = _checked_args(args, problems)
    return LineResult(rec, problems)


def _dp_attention(args: dict) -> dict:
    """``enable_dp_attention`` from ``attn_dp_size`` where a release has the width (0.5.23:
    the flag survives in the dict only as a deprecated alias, ``attn_dp_size > 1``,
    srt/server_args.py:331–332; a dict of a release that dropped it still says it)."""
    w = args.get("attn_dp_size")
    if isinstance(w, int) and not isinstance(w, bool) and "enable_dp_attention" not in args:
        args = {**args, "enable_dp_attention": w > 1}
    return args


def _checked_args(args: dict, problems: list[str]) -> dict:
    """Config values a typed column can hold: an integer beyond 64 bits or a non-finite float
    (tp_size=10**20, a bare 1e400) is a bad value, reported and left out (NA); so is a count
    key's value that is no count in range (numbers.config_count_problem: num_steps 2.5)."""
    out = {}
    for k, v in args.items():
        bad = config_count_problem(k, v)      # a count (steps, topk, tp_size …) in range
        if bad is not None:
            problems.append(bad)
        elif isinstance(v, bool) or v is None or isinstance(v, str):
            out[k] = v
        elif isinstance(v, int) and not -_I64 <= v < _I64 or \
                isinstance(v, float) and not math.isfinite(v):
            problems.append(f"bad value for {k}: {str(v)[:40]}")
        else:
            out[k] = v
    return out


# --------------------------------------------------------------------------- requests

# normalised column <- meta_info keys of every release (first present wins)
_REQ_KEYS = {
    "rid": ("id", "rid"),
    "prompt_tokens": ("prompt_tokens",),
    "completion_tokens": ("completion_tokens",),
    "cached_tokens": ("cached_tokens",),
    "e2e_latency": ("e2e_latency",),
    "verify_ct": ("spec_verify_ct",),
    "accepted_drafts": ("spec_num_correct_drafts", "spec_accepted_drafts",
                        "spec_accept_token_num"),
    "proposed_drafts": ("spec_num_proposed_drafts", "spec_proposed_drafts",
                        "spec_draft_token_num"),
    "accept_histogram": ("spec_correct_drafts_histogram", "spec_accept_histogram"),
    "spec_accept_length": ("spec_accept_length",),
    "spec_accept_rate": ("spec_accept_rate",),
    "cap_length": ("spec_cap_length",),
    "block_accept_length": ("spec_block_accept_length",),
    "total_retractions": ("total_retractions",),
}
_INT_COLS = {"prompt_tokens", "completion_tokens", "cached_tokens", "verify_ct",
             "accepted_drafts", "proposed_drafts", "total_retractions"}
_FLOAT_COLS = {"e2e_latency", "spec_accept_length", "spec_accept_rate", "cap_length",
               "block_accept_length"}
_KEY_RX = {k: re.compile(r"['\"]" + re.escape(k) + r"['\"]: (\[[^\]]*\]|'[^']*'|\"[^\"]*\"|"
                         r"[^,{}\]]+)")
           for keys in _REQ_KEYS.values() for k in keys}
_FINISH_RX = re.compile(r"['\"]finish_reason['\"]: \{['\"]type['\"]: ['\"](\w+)['\"]")


# how _request_record converts each column: (column, its keys, kind), in _REQ_KEYS order
_INT_KIND, _FLOAT_KIND, _HIST_KIND, _STR_KIND = range(4)
_REQ_SPEC = tuple((col, keys, _INT_KIND if col in _INT_COLS else _FLOAT_KIND if col in _FLOAT_COLS
                   else _HIST_KIND if col == "accept_histogram" else _STR_KIND)
                  for col, keys in _REQ_KEYS.items())
_INT_ONLY = frozenset((int,))


def _request_record(meta: dict) -> tuple[dict, list[str]]:
    """The request columns of a Finish line's meta_info (or a JSON record's): the first key of
    each column that is present and not None, converted.  The values json or literal_eval make
    of what SGLang prints (an int, a float in range, a str, a list of ints) are taken as they
    are, with the checks of numbers.to_int / to_measure written inline; anything else goes
    through those converters (and _convert_request_value), which report it."""
    rec: dict = {}
    problems: list[str] = []
    get = meta.get
    for col, keys, kind in _REQ_SPEC:
        for k in keys:
            v = get(k)
            if v is None:
                continue
            t = type(v)
            if kind == _INT_KIND:
                if t is int and -_I64 <= v < _I64:
                    rec[col] = v
                    break
            elif kind == _FLOAT_KIND:
                if t is float and 0.0 <= v <= MAX_MEASURE:      # (NaN fails: the converter)
                    rec[col] = v
                    break
            elif kind == _STR_KIND:
                if t is str:
                    rec[col] = v
                    break
            elif t is list and (not v or set(map(type, v)) <= _INT_ONLY and
                                -_I64 <= min(v) and max(v) < _I64):
                # json.dumps of a list of ints: its ints' reprs joined by ', '
                rec[col] = "[" + ", ".join(map(str, v)) + "]"
                break
            rec[col] = _convert_request_value(col, k, v, problems)
            break
    fr = get("finish_reason")
    if isinstance(fr, dict) and fr.get("type") is not None:
        rec["finish_reason"] = str(fr["type"])
    elif isinstance(fr, str):
        rec["finish_reason"] = fr
    return rec, problems


def _convert_request_value(col: str, k: str, v, problems: list[str]):
    """One meta_info value as its column holds it, or None with the problem said."""
    try:
        if col in _INT_COLS:
            return _int(v)
        if col in _FLOAT_COLS:
            return _float(v)
        if col == "accept_histogram":
            if not isinstance(v, (list, tuple)):
                raise ValueError(v)
            return json.dumps([_int(x) for x in v])
        return str(v)
    except (TypeError, ValueError):
        problems.append(f"bad value for {k!r}: {v!r}")
        return None


def _meta_by_regex(text: str) -> dict:
    meta: dict = {}
    for keys in _REQ_KEYS.values():
        for k in keys:
            m = _KEY_RX[k].search(text)
            if m:
                v = _literal(m.group(1).strip())
                meta[k] = None if isinstance(v, _Unreadable) else v
    f = _FINISH_RX.search(text)
    if f:
        meta["finish_reason"] = {"type": f.group(1)}
    return meta


_RID_RX = re.compile(r"rid=['\"]([^'\"]+)['\"]")
# the prefix columns a request keeps (no rank tags: a request is the whole server's)
_RANK_KEYS = frozenset(("ranks", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep"))
_REQ_PREFIX: dict[str, dict] = {}


def _request_prefix(prefix_text: str) -> dict:
    """prefix_columns without the rank columns (memoised as prefix_columns is)."""
    out = _REQ_PREFIX.get(prefix_text)
    if out is None:
        out = {k: v for k, v in prefix_columns(prefix_text).items() if k not in _RANK_KEYS}
        if len(_REQ_PREFIX) > 4096:
            _REQ_PREFIX.clear()
        _REQ_PREFIX[prefix_text] = out
    return out


def parse_finish_line(line: str) -> LineResult:
    """'Finish: obj=…, out={…}' (text format, §7.2)."""
    idx = line.find("Finish: obj=")
    if idx < 0:
        return LineResult(None)
    o = line.rfind(", out={")
    if o < idx:
        return LineResult(None, ["Finish line has no 'out={' part: cut short?"])
    out_text = line[o + len(", out="):].rstrip()
    try:
        out = literal_eval_fast(out_text)
        meta = out.get("meta_info", out) if isinstance(out, dict) else {}
        if not isinstance(meta, dict):
            meta = {}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        meta = _meta_by_regex(out_text)
        if not meta:
            return LineResult(None, ["Finish line's out={…} could not be read"])
    rec, problems = _request_record(meta)
    obj = line[idx + len("Finish: obj="):o]
    if "rid" not in rec:
        m = _RID_RX.search(obj)
        if m:
            rec["rid"] = m.group(1)
    rec.update(_request_prefix(line[:idx]))
    rec.update(identity_from_text(obj))     # the prompt hash and labels
    rec["format"] = "text"
    return LineResult(rec, problems)


def parse_request_json_line(line: str) -> LineResult:
    """'{"event": "request.finished", …}' (JSON format, v0.5.7 →), optionally prefixed."""
    j = line.find("{")
    if j < 0:
        return LineResult(None)
    try:
        obj = json.loads(line[j:])
    except ValueError:
        return LineResult(None, ["request.finished JSON line could not be read (cut short?)"])
    if not isinstance(obj, dict) or obj.get("event") != "request.finished":
        return LineResult(None)
    out = obj.get("out") or {}
    meta = out.get("meta_info", {}) if isinstance(out, dict) else {}
    rec, problems = _request_record(meta if isinstance(meta, dict) else {})
    if "rid" not in rec and obj.get("rid") is not None:
        rec["rid"] = str(obj["rid"])
    rec.update(identity_from_json(obj.get("obj")))     # prompt hash, custom labels
    ts = obj.get("timestamp")
    if isinstance(ts, str) and re.match(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}", ts):
        rec["_date"], rec["_time"] = ts[:10], ts[11:26]
    else:
        rec.update({k: v for k, v in prefix_columns(line[:j]).items()
                    if k in ("_date", "_time")})
    rec["format"] = "json"
    return LineResult(rec, problems)


# the accept histogram as _request_record writes it (json.dumps of ints): '[1, 2, 3]'
_HIST_TEXT = re.compile(r"\[(?:-?(?:0|[1-9][0-9]*)(?:, -?(?:0|[1-9][0-9]*))*)?\]", re.ASCII)


def _histogram(h: str) -> list:
    """json.loads(h), without the decoder for the text _request_record writes."""
    if _HIST_TEXT.fullmatch(h):
        return [int(x) for x in h[1:-1].split(", ")] if len(h) > 2 else []
    return json.loads(h)


def check_request_identities(rec: dict) -> list[str]:
    """sglang.md §7.3 identities (EAGLE, no retraction); violations are reported, not fatal."""
    out = []
    v, a, c = rec.get("verify_ct"), rec.get("accepted_drafts"), rec.get("completion_tokens")
    if rec.get("total_retractions"):
        return out
    if v and a is not None and c is not None and c != 1 + a + v:
        out.append(f"completion_tokens {c} != 1 + accepted_drafts {a} + verify_ct {v}")
    h = rec.get("accept_histogram")
    if h and v:
        hist = _histogram(h)
        if sum(hist) != v:
            out.append(f"accept histogram sums to {sum(hist)}, not verify_ct {v}")
        if a is not None:
            implied = sum(map(mul, range(len(hist)), hist))     # Σ i·hist[i]
            if implied != a:
                out.append(f"accept histogram implies {implied} accepted drafts, not {a}")
    return out


# --------------------------------------------------------------------------- adaptive speculation

# 'Adaptive spec params updated: steps 3 -> 5 (ema_accept_len=2.61)' (v0.5.11 →,
# speculative/adaptive_spec_params.py _recompute_params; sglang.md §3.7b)
SPEC_PARAMS_MARKER = "Adaptive spec params updated: "
_SPEC_PARAMS_RX = re.compile(r"Adaptive spec params updated: steps (\d{1,9}) -> (\d{1,9})"
                             r"(?: \(ema_accept_len=(\d{1,9}(?:\.\d{1,20})?)\))?", re.ASCII)


def parse_spec_params_line(line: str) -> LineResult:
    """An adaptive-speculation update line -> a 'spec_params' record (steps_from, steps_to,
    ema_accept_len and the prefix columns)."""
    idx = line.find(SPEC_PARAMS_MARKER)
    if idx < 0:
        return LineResult(None)
    m = _SPEC_PARAMS_RX.match(line, idx)
    if m is None:
        return LineResult(None, ["'Adaptive spec params updated' line without 'steps A -> B'"])
    rec: dict = dict(prefix_columns(line[:idx]))
    problems: list[str] = []
    rec["steps_from"], rec["steps_to"] = _int32(m.group(1)), _int32(m.group(2))
    if m.group(3) is not None:
        rec["ema_accept_len"] = _float(m.group(3))
    elif "ema_accept_len=" in line[m.end():]:
        problems.append("unreadable ema_accept_len")
    return LineResult(rec, problems)
