"""Outputs of other engines and of benchmark scripts (others.md): llama.cpp statistics lines and
the llama-speculative-simple summary, TensorRT-LLM (trtllm-bench DECODING STATISTICS, the
per-iteration log, specDecodingStats records), SGLang's benchmark/test scripts, `vllm bench
serve`'s speculative section, vLLM's offline example and the Spec-Bench / EAGLE harnesses.

Rows go to two tables of schema.py: ``bench`` (one row per reported result) and ``bench_iters``
(one row per TensorRT-LLM iteration).  Parsers are pure functions of one line (or one block's
lines) that never raise: they return (record or None, problems).  ``OthersScanner`` has the
interface of ``parsers.scan.Scanner``; these outputs are small, so it is pure Python: a compiled
alternation finds marker lines, and while a multi-line block is open the lines after it are
walked one by one.  A block cut short is kept (complete=False) and reported.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re


from .._lazy import pd
from ..schema import TABLES
from ..tables import build_frame, concat_frames
from .prefix import strip_ansi
from .scan import MARKERS, ScannerBase, ScanStats, count_blank, marker_line

# ---------------------------------------------------------------------------------- markers
# group name -> family; a marker finds the (first) line of a record
KIND_FAMILY = {
    "llama_req": "llamacpp", "llama_stats": "llamacpp", "llama_simple": "llamacpp",
    "trt_block": "trtllm", "trt_iter": "trtllm", "trt_stats": "trtllm",
}
_MARKER_TEXT = {
    "llama_req": rb"draft acceptance\s*=\s*[\d.]+\s*\(",
    "llama_stats": rb"#gen drafts\s*=",
    "llama_simple": rb"^[ \t]*(?:n_draft|n_predict|n_drafted|n_accept|accept)[ \t]*=[ \t]*[\d.]+%?"
                    rb"[ \t]*\r?$",
    "trt_block": rb"DECODING STATISTICS",
    "trt_iter": rb"host_step_time\s*[=:]",
    "trt_stats": rb"\"specDecodingStats\"",
    "serving": rb"Serving Benchmark Result",
    "vllm_section": rb"-Speculative Decoding-",
    "obbs_table": rb"^[ \t]*\|[^\n]*\bacc length\b",
    "obbs_line": rb"^[ \t]*acc_length: [\d.]+|^[ \t]*acc_length: n/a",
    "bspec": rb"(?:Start|Finish) i=\d+: batch_size=",
    "bspec_json": rb"\"acc_length\":",
    "mtbench": rb"#questions: \d+",
    "mtbench_json": rb"\"accept_length\":",
    "send_one": rb"^[ \t]*acc_length=",
    "send_one_table": rb"^[ \t]*\|[^\n]*\bAcc Length\b",
    "adaptive": rb"Avg accept_len:",
    "adaptive_table": rb"^[ \t]*Phase[ \t]+Throughput[ \t]+Avg Latency[ \t]+Accept Len",
    "run_eval": rb"Speculative accept length \(per-request",
    "vllm_offline": rb"^[ \t]*(?:num_drafts|num_draft_tokens|num_accepted_tokens|"
                    rb"mean acceptance length|acceptance at token \d+):",
    "specbench": rb"^=+ Task:",
    "sb_answer": rb"\"accept_lengths\":",
    "eagle_answer": rb"\"idxs\":",
}
# Literals one of which every match of a kind's marker contains: a head holding none of them
# has no such marker, found with bytes.find (a regex beginning with ^ or an alternation tries
# every position of a 1 MiB head: ~5 ms each, and --engine auto asks about every kind)
SNIFF_LITERALS = {
    "llama_simple": (b"n_draft", b"n_predict", b"accept"),
    "obbs_table": (b"acc length",),
    "obbs_line": (b"acc_length: ",),
    "bspec": (b"batch_size=",),
    "send_one": (b"acc_length=",),
    "send_one_table": (b"Acc Length",),
    "adaptive_table": (b"Accept Len",),
    "vllm_offline": (b"num_draft", b"num_accepted_tokens", b"mean acceptance length",
                     b"acceptance at token"),
    "specbench": (b"= Task:",),
}
for _k in _MARKER_TEXT:
    KIND_FAMILY.setdefault(_k, "bench")
FAMILY_KINDS = {f: tuple(k for k, v in KIND_FAMILY.items() if v == f)
                for f in ("llamacpp", "trtllm", "bench")}


def markers(kinds) -> re.Pattern:
    return re.compile(b"(?m)" + b"|".join(b"(?P<%s>%s)" % (k.encode(), _MARKER_TEXT[k])
                                          for k in kinds))


# ---------------------------------------------------------------------------------- helpers
_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _nums(text: str) -> list[float]:
    return [float(x) for x in _NUM.findall(text or "")]


def _int(x):
    """An integer as printed (or a float that is one); None when it is none, or does not fit
    the 64-bit integer columns."""
    try:
        v = int(x)
    except (TypeError, ValueError):
        try:
            f = float(x)
            v = int(f) if f == int(f) else None
        except (TypeError, ValueError, OverflowError):
            return None
    return v if v is None or -(1 << 63) <= v < (1 << 63) else None


def _float(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _value(text: str):
    """A printed cell: a number when it reads as one, else the text (n/a -> None)."""
    t = text.strip()
    if t.lower() in ("n/a", "na", "nan", "none", "-", ""):
        return None
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?:%|s|ms|tok/s|token/s)?", t)
    if m:
        v = float(m.group(1))
        return int(v) if re.fullmatch(r"-?\d+", m.group(1)) else v
    return t


def _ratio(a, b):
    return a / b if a is not None and b else None


def _derive(rec: dict) -> dict:
    """The comparable columns every tool gets from its counts (one definition each)."""
    drafts, acc, dt = rec.get("drafts"), rec.get("accepted_tokens"), rec.get("draft_tokens")
    if drafts and acc is not None:
        rec["accept_len_derived"] = 1 + acc / drafts
    if dt and acc is not None:
        rec["accept_rate_derived"] = acc / dt
    if drafts and dt is not None:
        rec["mean_draft_len"] = dt / drafts
    return rec


def _base(tool, engine, scope, fmt, **kw) -> dict:
    rec = {"tool": tool, "engine": engine, "scope": scope, "format": fmt}
    rec.update({k: v for k, v in kw.items() if v is not None})
    return rec


def _positions(values) -> str | None:
    return json.dumps([round(v, 6) for v in values]) if values else None


def _close(a, b, tol) -> bool:
    return a is None or b is None or abs(a - b) <= tol


# ------------------------------------------------------------------------------- llama.cpp
LLAMA_REQ = re.compile(
    r"draft acceptance\s*=\s*(?P<rate>[\d.]+)\s*\(\s*(?P<acc>\d+)\s+accepted\s*/\s*(?P<gen>\d+)\s+"
    r"generated\s*\)\s*,\s*mean acceptance length\s*=\s*(?P<mal>[\d.]+)"
    r"(?:\s*,\s*acceptance rate per position\s*=\s*\((?P<pos>[^)]*)\))?")
_LLAMA_KEYS = {k: re.compile(p) for k, p in (
    ("impl", r"statistics\s+(\S+?):\s*#"),
    ("calls", r"#calls\(b,g,a\)\s*=\s*(.*?)(?=,\s*#|,\s*dur\(|$)"),
    ("drafts", r"#gen drafts\s*=\s*(\d+)"),
    ("accepted_drafts", r"#acc drafts\s*=\s*(\d+)"),
    ("draft_tokens", r"#gen tokens\s*=\s*(\d+)"),
    ("accepted_tokens", r"#acc tokens\s*=\s*(\d+)"),
    ("mal", r"#mean acc len\s*=\s*([\d.]+)"),
    ("pos", r"#acc rate/pos\s*=\s*\(([^)]*)\)"),
    ("dur", r"dur\(b,g,a\)\s*=\s*(.*?)\s*ms"))}


def parse_llama_request(line: str):
    m = LLAMA_REQ.search(line)
    if m is None:
        return None, ["not a 'draft acceptance = X (N accepted / N generated), mean acceptance "
                      "length = X' line"]
    acc, gen = int(m["acc"]), int(m["gen"])
    pos = _nums(m["pos"]) if m["pos"] is not None else []
    rec = _base("llama.cpp", "llama.cpp", "request", "line", accept_len=float(m["mal"]),
                accept_len_def="per-draft", acceptance_rate=float(m["rate"]),
                accepted_tokens=acc, draft_tokens=gen, per_position=_positions(pos))
    _derive(rec)
    problems = []
    if not _close(rec["acceptance_rate"], _ratio(acc, gen), 6e-6):
        problems.append(f"draft acceptance {m['rate']} ≠ {acc}/{gen}")
    if pos and not _close(sum(pos), rec["accept_len"] - 1, 0.0005 * len(pos) + 0.005):
        problems.append(f"Σ per-position rates {sum(pos):.3f} ≠ mean acceptance length − 1")
    return rec, problems


def parse_llama_stats(line: str):
    got = {k: p.search(line) for k, p in _LLAMA_KEYS.items()}
    if got["drafts"] is None or got["accepted_tokens"] is None:
        return None, ["llama.cpp statistics line without '#gen drafts' or '#acc tokens'"]
    val = {k: (m.group(1) if m else None) for k, m in got.items()}
    calls = [_int(x) for x in _nums(val["calls"])] if val["calls"] else []
    dur = _nums(val["dur"]) if val["dur"] else []
    pos = _nums(val["pos"]) if val["pos"] else []
    rec = _base("llama.cpp", "llama.cpp", "aggregate", "line", label=val["impl"],
                accept_len=_float(val["mal"]), drafts=_int(val["drafts"]),
                accepted_drafts=_int(val["accepted_drafts"]),
                draft_tokens=_int(val["draft_tokens"]),
                accepted_tokens=_int(val["accepted_tokens"]), per_position=_positions(pos))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "per-draft"
    for name, values in (("calls", calls), ("dur", dur)):
        for suffix, v in zip("bga", values):
            rec[f"{name}_{suffix}" + ("_ms" if name == "dur" else "")] = v
    _derive(rec)
    problems = []
    if (val["calls"] and len(calls) != 3) or (val["dur"] and len(dur) != 3):
        problems.append("#calls(b,g,a) or dur(b,g,a) does not hold three values")
    if not _close(rec.get("accept_len"), rec.get("accept_len_derived"), 0.005 + 1e-9):
        problems.append(f"#mean acc len {val['mal']} ≠ 1 + #acc tokens / #gen drafts "
                        f"({rec['accept_len_derived']:.4f})")
    if pos and rec.get("accepted_drafts") is not None and rec["drafts"] and \
            not _close(pos[0], rec["accepted_drafts"] / rec["drafts"], 0.0005 + 1e-9):
        problems.append(f"#acc rate/pos[0] {pos[0]} ≠ #acc drafts / #gen drafts")
    if pos and rec.get("accept_len") is not None and \
            not _close(sum(pos), rec["accept_len"] - 1, 0.0005 * len(pos) + 0.005):
        problems.append(f"Σ #acc rate/pos {sum(pos):.3f} ≠ #mean acc len − 1")
    return rec, problems


LLAMA_SIMPLE = re.compile(r"^\s*(?P<key>n_\w+|accept)\s*=\s*(?P<val>[\d.]+)(?P<pct>%?)\s*$")
_SIMPLE_KEYS = ("n_draft", "n_predict", "n_drafted", "n_accept", "accept")


def simple_record(values: dict):
    rec = _base("llama-speculative-simple", "llama.cpp", "run", "block",
                max_draft_len=_int(values.get("n_draft")),
                output_tokens=_int(values.get("n_predict")),
                draft_tokens=_int(values.get("n_drafted")),
                accepted_tokens=_int(values.get("n_accept")))
    if values.get("accept") is not None:
        rec["acceptance_rate"] = values["accept"] / 100
    _derive(rec)
    problems = []
    if not _close(rec.get("acceptance_rate"), rec.get("accept_rate_derived"), 5e-6 + 1e-12):
        problems.append(f"accept {values['accept']}% ≠ n_accept / n_drafted × 100")
    return rec, problems


# ------------------------------------------------------------------------------- TensorRT-LLM
TRT_ROW = re.compile(r"^\s*\[(?P<tag>DT|ADT|DAR|AL)\]\s+(?P<key>\w+)\s*:\s*(?P<val>-?[\d.]+)")
TRT_MODE = re.compile(r"DECODING STATISTICS\s*(?:\((?P<mode>[^)]*)\))?")
TRT_STAT_KEYS = ("MINIMUM", "MAXIMUM", "AVERAGE", "P50", "P90", "P95", "P99")


def trt_block_record(mode: str | None, stats: dict, complete: bool):
    al, dar = stats.get("AL", {}), stats.get("DAR", {})
    return _base("trtllm-bench", "tensorrt-llm", "run", "block", label=mode,
                 accept_len=al.get("AVERAGE"),
                 accept_len_def="request-mean" if "AVERAGE" in al else None,
                 accept_len_min=al.get("MINIMUM"), accept_len_max=al.get("MAXIMUM"),
                 acceptance_rate=dar.get("AVERAGE"),
                 stats=json.dumps(stats) if stats else None, complete=complete)


_TRT_ITER_KEYS = {k: re.compile(p) for k, p in (
    ("iter", r"(?<![\w'])iter\s*[=:]\s*(\d+)"),
    ("global_rank", r"global_rank\s*[=:]\s*(\d+)"),
    ("rank", r"(?<![\w'])rank\s*[=:]\s*(\d+)"),
    ("host_step_time_ms", r"host_step_time\s*[=:]\s*([\d.]+)\s*ms"),
    ("prev_device_step_time_ms", r"prev_device_step_time\s*[=:]\s*([\d.]+)\s*ms"),
    ("num_scheduled_requests", r"num_scheduled_requests'?\s*[=:]\s*(\d+)"),
    ("num_ctx_requests", r"num_ctx_requests'?\s*[=:]\s*(\d+)"),
    ("num_ctx_tokens", r"num_ctx_tokens'?\s*[=:]\s*(\d+)"),
    ("num_generation_tokens", r"num_generation_tokens'?\s*[=:]\s*(\d+)"),
    ("kv_cache_util", r"kv_cache_util\w*'?\s*[=:]\s*([\d.]+)"))}
_TRT_REQS = re.compile(r"currank_total_requests\s*[=:]\s*(\d+)\s*/\s*(\d+)")
_TRT_TIME = re.compile(r"timestamp\s*[=:]\s*(.*?)\s*(?:,\s*[\w']+\s*[=:]|$)")


def parse_trt_iter(line: str):
    rec = {"tool": "trtllm", "engine": "tensorrt-llm", "format": "iter_log"}
    for k, p in _TRT_ITER_KEYS.items():
        m = p.search(line)
        if m:
            rec[k] = _float(m.group(1)) if k.endswith(("_ms", "util")) else int(m.group(1))
    m = _TRT_REQS.search(line)
    if m:
        rec["currank_requests"], rec["total_requests"] = int(m.group(1)), int(m.group(2))
    if "host_step_time_ms" not in rec:
        return None, ["TensorRT-LLM iteration line without 'host_step_time = X ms'"]
    problems = []
    m = _TRT_TIME.search(line)
    if m:
        text = m.group(1).strip().strip("'\"")
        try:
            rec["timestamp"] = _dt.datetime.fromisoformat(text.replace("/", "-")).isoformat()
        except ValueError:
            rec["extra"] = json.dumps({"timestamp": text})
    if "iter" not in rec:
        problems.append("no 'iter =' field")
    return rec, problems


_SPEC_KEYS = (("numDraftTokens", "num_draft_tokens", int),
              ("numAcceptedTokens", "num_accepted_tokens", int),
              ("numRequestsWithDraftTokens", "num_requests_with_drafts", int),
              ("acceptanceLength", "accept_len", float), ("iterLatencyMS", "iter_latency_ms", float),
              ("draftOverhead", "draft_overhead", float))


def parse_trt_stats(line: str):
    i = line.find('"specDecodingStats"')
    j = line.find("{", i)
    try:
        obj, _ = json.JSONDecoder().raw_decode(line[j:]) if j >= 0 else (None, 0)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return None, ["specDecodingStats is not a JSON object"]
    rec = {"tool": "trtllm", "engine": "tensorrt-llm", "format": "iter_stats"}
    for key, col, conv in _SPEC_KEYS:
        if isinstance(obj.get(key), (int, float)) and not isinstance(obj.get(key), bool):
            rec[col] = conv(obj[key])
    rest = {k: v for k, v in obj.items() if k not in {k for k, _, _ in _SPEC_KEYS}}
    if rest:
        rec["extra"] = json.dumps(rest)
    m = re.search(r'"iter"\s*:\s*(\d+)', line)
    if m:
        rec["iter"] = int(m.group(1))
    for k, col in (("timestamp", "timestamp"),):
        m = re.search(r'"%s"\s*:\s*"([^"]+)"' % k, line)
        if m:
            try:
                rec[col] = _dt.datetime.fromisoformat(m.group(1)).isoformat()
            except ValueError:
                pass
    req, acc = rec.get("num_requests_with_drafts"), rec.get("num_accepted_tokens")
    if req and acc is not None:
        rec["accept_len_derived"] = (acc + req) / req
    problems = []
    if not _close(rec.get("accept_len"), rec.get("accept_len_derived"), 0.005):
        problems.append(f"acceptanceLength {rec['accept_len']} ≠ (numAcceptedTokens + "
                        f"numRequestsWithDraftTokens) / numRequestsWithDraftTokens")
    return rec, problems


# ------------------------------------------------------------------------- SGLang scripts
BSPEC = re.compile(r"(?P<what>Start|Finish) i=(?P<i>\d+): batch_size=(?P<bs>\d+), steps=(?P<steps>\d+), "
                   r"topk=(?P<topk>\d+), num_draft_tokens=(?P<ndt>\d+)"
                   r"(?:, speed=(?P<speed>[\d.]+) token/s, step_time=(?P<st>[\d.]+) ms)?")


def parse_bspec(line: str):
    m = BSPEC.search(line)
    if m is None:
        return None, ["bench_speculative line not understood"]
    if m["what"] == "Start":
        return {"_start": int(m["i"])}, []
    if m["speed"] is None:
        return None, ["bench_speculative 'Finish' line without speed and step_time"]
    return _base("sglang.bench_speculative", "sglang", "config", "line", label=f"i={m['i']}",
                 batch_size=int(m["bs"]), spec_steps=int(m["steps"]), spec_topk=int(m["topk"]),
                 spec_draft_tokens=int(m["ndt"]), per_request_tok_s=float(m["speed"]),
                 step_time_ms=float(m["st"])), []


def _json_obj(line: str):
    i = line.find("{")
    if i < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(line[i:])
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _num(obj, key):
    v = obj.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def parse_bspec_json(line: str):
    obj = _json_obj(line)
    if obj is None or "acc_length" not in obj:
        return None, ["bench_speculative JSONL record is not a JSON object with 'acc_length'"]
    st = _num(obj, "step_time")
    rec = _base("sglang.bench_speculative", "sglang", "config", "jsonl",
                accept_len=_num(obj, "acc_length"),
                batch_size=_int(obj.get("batch_size")), spec_steps=_int(obj.get("steps")),
                spec_topk=_int(obj.get("topk")), spec_draft_tokens=_int(obj.get("num_draft_tokens")),
                step_time_ms=round(st * 1000, 9) if st is not None else None,
                per_request_tok_s=_num(obj, "speed"),
                output_tokens=_int(obj.get("completion_tokens")))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "server-lifetime"
    known = {"batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time",
             "speed", "completion_tokens"}
    rest = {k: v for k, v in obj.items() if k not in known}
    if rest:
        rec["extra"] = json.dumps(rest)
    problems = []
    if st and rec.get("accept_len") and not _close(rec.get("per_request_tok_s"),
                                                   rec["accept_len"] / st, 1e-6 * (1 + rec["accept_len"] / st)):
        problems.append("speed ≠ acc_length / step_time")
    return rec, problems


_MT_KEYS = (("requests", re.compile(r"#questions:\s*(\d+)"), int),
            ("output_tok_s", re.compile(r"Throughput:\s*([\d.]+)\s*token/s"), float),
            ("accept_len", re.compile(r"Acceptance length:\s*([\d.]+)"), float))


def parse_mtbench(line: str):
    rec = _base("sglang.mtbench", "sglang", "run", "line")
    for col, p, conv in _MT_KEYS:
        m = p.search(line)
        if m:
            rec[col] = conv(m.group(1))
    if "accept_len" not in rec:
        return None, ["mtbench line without 'Acceptance length:'"]
    rec["accept_len_def"] = "pooled-with-first-token"
    return rec, []


def parse_mtbench_json(line: str):
    obj = _json_obj(line)
    if obj is None or "accept_length" not in obj:
        return None, ["mtbench JSONL record is not a JSON object with 'accept_length'"]
    rec = _base("sglang.mtbench", "sglang", "run", "jsonl", label=obj.get("task"),
                accept_len=_num(obj, "accept_length"), output_tok_s=_num(obj, "throughput"),
                duration_s=_num(obj, "latency"),
                requests=_int(obj.get("num_requests", obj.get("num_questions"))))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "pooled-with-first-token"
    rest = {k: v for k, v in obj.items() if k not in {"task", "accept_length", "throughput",
                                                       "latency", "num_requests",
                                                       "num_questions"}}
    if rest:
        rec["extra"] = json.dumps(rest)
    return rec, []


OBBS_LINE = re.compile(r"acc_length:\s*(?P<v>[\d.]+|n/a)")


def parse_obbs_line(line: str):
    m = OBBS_LINE.search(line)
    if m is None:
        return None, ["bench_one_batch_server 'acc_length:' line not understood"]
    v = _float(m["v"])
    return _base("sglang.bench_one_batch_server", "sglang", "run", "line", accept_len=v,
                 accept_len_def="server-lifetime" if v is not None else None), []


SEND_ONE = re.compile(r"acc_length=(?P<v>[\d.]+)")
SEND_ONE_SPEED = re.compile(r"^\s*speed=(?P<v>[\d.]+)\s*token/s")


def parse_send_one(line: str):
    m = SEND_ONE.search(line)
    if m is None:
        return None, ["send_one 'acc_length=' line not understood"]
    return _base("sglang.send_one", "sglang", "request", "line", accept_len=float(m["v"]),
                 accept_len_def="request"), []


ADAPTIVE = re.compile(r"Throughput:\s*(?P<tp>[\d.]+)\s*tok/s\s*\|\s*Avg latency:\s*(?P<lat>[\d.]+)s"
                      r"\s*\|\s*Avg accept_len:\s*(?P<al>[\d.]+)(?:\s*\|\s*Errors:\s*(?P<err>\d+))?")


def parse_adaptive(line: str):
    m = ADAPTIVE.search(line)
    if m is None:
        return None, ["adaptive bench phase line not understood"]
    return _base("sglang.bench_adaptive_speculative", "sglang", "phase", "line",
                 output_tok_s=float(m["tp"]), avg_latency_s=float(m["lat"]),
                 accept_len=float(m["al"]), accept_len_def="request-mean",
                 errors=_int(m["err"])), []


RUN_EVAL = re.compile(r"Speculative accept length \(per-request[^)]*\):\s*n=(?P<n>\d+)\s+"
                      r"mean=(?P<mean>[\d.]+)\s+min=(?P<min>[\d.]+)\s+max=(?P<max>[\d.]+)")


def parse_run_eval(line: str):
    m = RUN_EVAL.search(line)
    if m is None:
        return None, ["run_eval accept-length line not understood"]
    return _base("sglang.run_eval", "sglang", "run", "line", requests=int(m["n"]),
                 accept_len=float(m["mean"]), accept_len_def="request-mean",
                 accept_len_min=float(m["min"]), accept_len_max=float(m["max"])), []


# --------------------------------------------------------------------- research harnesses
def _flat(v) -> list:
    if isinstance(v, list):
        return [x for item in v for x in _flat(item)]
    return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


def parse_sb_answer(line: str):
    obj = _json_obj(line)
    if obj is None or not isinstance(obj.get("choices"), list) or not obj["choices"]:
        return None, ["Spec-Bench answer line is not a JSON object with 'choices'"]
    ch = obj["choices"][0] if isinstance(obj["choices"][0], dict) else {}
    lens = _flat(ch.get("accept_lengths"))
    steps, new = _flat(ch.get("decoding_steps")), _flat(ch.get("new_tokens"))
    wall = _flat(ch.get("wall_time"))
    rec = _base("spec-bench", None, "request", "jsonl",
                label=str(obj["question_id"]) if "question_id" in obj else None,
                accept_len=sum(lens) / len(lens) if lens else None,
                output_tokens=int(sum(new)) if new else None,
                duration_s=sum(wall) if wall else None)
    if lens:
        rec["accept_len_def"] = "per-step"
    problems = []
    if steps and len(lens) and int(sum(steps)) != len(lens):
        problems.append(f"decoding_steps {int(sum(steps))} ≠ number of accept_lengths {len(lens)}")
    return rec, problems


def parse_eagle_answer(line: str):
    obj = _json_obj(line)
    if obj is None or not isinstance(obj.get("choices"), list) or not obj["choices"]:
        return None, ["EAGLE answer line is not a JSON object with 'choices'"]
    ch = obj["choices"][0] if isinstance(obj["choices"][0], dict) else {}
    idxs, new, wall = _flat(ch.get("idxs")), _flat(ch.get("new_tokens")), _flat(ch.get("wall_time"))
    cycles = sum(i + 1 for i in idxs)
    rec = _base("eagle", None, "request", "jsonl",
                label=str(obj["question_id"]) if "question_id" in obj else None,
                accept_len=sum(new) / cycles if cycles and new else None,
                output_tokens=int(sum(new)) if new else None,
                duration_s=sum(wall) if wall else None)
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "per-step"
    return rec, []


# ------------------------------------------------------------------------------- blocks
_ROW = re.compile(r"^\s*(?P<label>[^:\[\]{}=,]+?)\s*:\s*(?P<value>[^:,{}\[\]]*?)\s*$")
# lines of a logger (SGLang/vLLM/TRT-LLM prefixes) interleaved with a printed block: never a row
# of the block, and they do not end it either (the server-log scanner may read them)
INTERLEAVED = re.compile(
    rb"^\s*\[\d{4}-\d{2}-\d{2}[ T]\d|^\s*\[\d\d:\d\d:\d\d|^\s*\[\d\d/\d\d/\d{4}-|"
    rb"^(?:INFO|WARNING|DEBUG|ERROR|CRITICAL) \d\d-\d\d \d|" + MARKERS.pattern)
_RULE = re.compile(r"^\s*[=\-]{3,}.*[=\-]{3,}\s*$|^\s*[=\-]{3,}\s*$")
_TITLED = re.compile(r"^\s*-{3,}\s*(?P<title>[^-].*?)\s*-{3,}\s*$")
_POS = re.compile(r"^\s*Position\s+(\d+)\s*$")

_SERVING_MAP = {"successful requests": ("requests", _int),
                "benchmark duration (s)": ("duration_s", _float),
                "total generated tokens": ("output_tokens", _int),
                "output token throughput (tok/s)": ("output_tok_s", _float),
                "concurrency": ("concurrency", _float),
                "failed requests": ("errors", _int)}
_SPEC_MAP = {"acceptance rate (%)": "acceptance_rate", "acceptance length": "accept_len",
             "drafts": "drafts", "draft tokens": "draft_tokens",
             "accepted tokens": "accepted_tokens"}


class Block:
    """An open multi-line record.  ``take(line)`` answers 'take' (the line belongs; go on),
    'end' (it belongs and closes the block) or 'reject' (the block ended before it)."""

    kind = ""

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.end_line = line_no
        self.problems: list[str] = []

    def blank(self) -> bool:
        """A blank line: True keeps the block open."""
        return False

    def records(self) -> list[tuple[int, int, dict]]:
        return []

    def incomplete(self) -> str | None:
        return None


class ServingBlock(Block):
    """bench_serving's / vllm bench serve's result block (with or without its speculative
    section), or a standalone `Speculative Decoding` section."""

    kind = "serving"

    def __init__(self, line_no: int, standalone_section: bool = False) -> None:
        super().__init__(line_no)
        self.rows: dict[str, object] = {}
        self.spec: dict[str, float] = {}
        self.pos: dict[int, float] = {}
        self.extra: dict[str, object] = {}
        self.section: str | None = "speculative decoding" if standalone_section else None
        self.standalone = standalone_section
        self.closed_by_rule = False

    def take(self, line: str) -> str:
        if self.standalone and _RULE.match(line):
            return "reject"
        if re.fullmatch(r"\s*={3,}\s*", line):
            self.closed_by_rule = True
            return "end"
        t = _TITLED.match(line)
        if t:
            self.section = t.group("title").strip().lower()
            return "take"
        if _RULE.match(line):
            return "take"
        m = _ROW.match(line)
        if m is None:
            return "reject"
        label, value = m.group("label").strip(), m.group("value")
        low = label.lower()
        if self.section == "speculative decoding":
            p = _POS.match(label)
            if p:
                v = _float(value)
                if v is None:
                    self.problems.append(f"'{label}' has no number")
                else:
                    self.pos[int(p.group(1))] = v
                return "take"
            if low == "per-position acceptance (%)":
                return "take"
            if low in _SPEC_MAP:
                v = _float(value)
                if v is None:
                    self.problems.append(f"'{label}' has no number")
                else:
                    self.spec[_SPEC_MAP[low]] = v
                return "take"
        if low == "accept length":
            v = _float(value)
            if v is not None:
                self.rows["accept_len"] = v
            return "take"
        if low in _SERVING_MAP:
            col, conv = _SERVING_MAP[low]
            v = conv(value)
            if v is not None:
                self.rows[col] = v
            return "take"
        key = label if self.section in (None, "speculative decoding") else \
            f"{self.section}: {label}"
        self.extra[key] = _value(value)
        return "take"

    def blank(self) -> bool:
        return False

    def engine_tool(self) -> tuple[str, str | None]:
        backend = str(self.extra.get("Backend") or "").lower()
        engine = ("sglang" if backend.startswith("sglang") else "vllm" if backend.startswith("vllm")
                  else "tensorrt-llm" if backend.startswith("trt") else
                  "llama.cpp" if backend.startswith("llama") else None)
        if self.spec or self.pos or self.section == "speculative decoding":
            return "vllm.bench_serve", engine or "vllm"
        if "Backend" in self.extra or "accept_len" in self.rows:
            return "sglang.bench_serving", engine or "sglang"
        return "serving-benchmark", engine

    def record(self) -> dict:
        tool, engine = self.engine_tool()
        rec = _base(tool, engine, "run", "block", **self.rows)
        if tool == "vllm.bench_serve":
            s = self.spec
            rec.update({k: v for k, v in s.items() if k in ("accept_len",)})
            for k in ("drafts", "draft_tokens", "accepted_tokens"):
                if k in s:
                    rec[k] = int(s[k])
            if "acceptance_rate" in s:
                rec["acceptance_rate"] = s["acceptance_rate"] / 100
            if self.pos:
                rec["per_position"] = _positions([self.pos[i] / 100 for i in sorted(self.pos)])
            if "accept_len" in rec:
                rec["accept_len_def"] = "per-draft"
        elif "accept_len" in rec:
            rec["accept_len_def"] = "server-lifetime"
        if self.extra:
            rec["extra"] = json.dumps(self.extra)
        rec["complete"] = self.incomplete() is None
        return _derive(rec)

    def incomplete(self) -> str | None:
        if self.standalone:
            missing = [k for k in ("Acceptance rate (%)", "Acceptance length", "Drafts",
                                   "Draft tokens", "Accepted tokens")
                       if _SPEC_MAP[k.lower()] not in self.spec]
            return f"no {', '.join(missing)} row" if missing else None
        if not self.closed_by_rule:
            return "no closing '=====' rule"
        return None

    def identity_problems(self) -> list[str]:
        s, out = self.spec, []
        acc, dt, dr = s.get("accepted_tokens"), s.get("draft_tokens"), s.get("drafts")
        if dt and acc is not None and not _close(s.get("acceptance_rate"), 100 * acc / dt, 0.005 + 1e-9):
            out.append(f"Acceptance rate {s['acceptance_rate']} % ≠ 100 × accepted / draft tokens")
        if dr and acc is not None and not _close(s.get("accept_len"), 1 + acc / dr, 0.005 + 1e-9):
            out.append(f"Acceptance length {s['accept_len']} ≠ 1 + accepted / drafts")
        if self.pos and "accept_len" in s and not _close(
                sum(self.pos.values()), 100 * (s["accept_len"] - 1), 0.5 + 0.005 * len(self.pos)):
            out.append("Σ per-position acceptance ≠ 100 × (acceptance length − 1)")
        return out

    def records(self):
        rec = self.record()
        return [(self.line_no, self.end_line, rec)]


class TrtBlock(Block):
    kind = "trt_block"

    def __init__(self, line_no: int, header: str) -> None:
        super().__init__(line_no)
        m = TRT_MODE.search(header)
        self.mode = (m.group("mode") or "").strip() or None if m else None
        self.stats: dict[str, dict[str, float]] = {}

    def take(self, line: str) -> str:
        m = TRT_ROW.match(line)
        if m:
            v = _float(m.group("val"))
            if v is None:
                self.problems.append(f"[{m.group('tag')}] {m.group('key')} has no number")
            else:
                self.stats.setdefault(m.group("tag"), {})[m.group("key")] = v
            return "take"
        if re.match(r"^\s*(?:={3,}|-{2,}\s.*Details\b.*|-{3,})\s*$", line):
            return "take"
        return "reject"

    def blank(self) -> bool:
        return True

    def incomplete(self) -> str | None:
        missing = [f"[{t}] {k}" for t in ("DT", "ADT", "DAR", "AL") for k in TRT_STAT_KEYS
                   if k not in self.stats.get(t, {})]
        if not missing:
            return None
        return f"no {missing[0]} row" + (f" (and {len(missing) - 1} more)" if len(missing) > 1
                                         else "")

    def records(self):
        return [(self.line_no, self.end_line,
                 trt_block_record(self.mode, self.stats, self.incomplete() is None))]


class SimpleBlock(Block):
    """llama-speculative-simple's 'key = value' summary lines."""

    kind = "llama_simple"

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.values: dict[str, float] = {}
        self.lines: list[int] = []

    def take(self, line: str) -> str:
        m = LLAMA_SIMPLE.match(line)
        if m is None or m.group("key") in self.values:
            return "reject"
        self.values[m.group("key")] = float(m.group("val"))
        self.lines.append(self.end_line)
        return "end" if m.group("key") == "accept" else "take"

    def has_record(self) -> bool:
        return any(k in self.values for k in ("n_drafted", "n_accept", "accept"))

    def incomplete(self) -> str | None:
        missing = [k for k in _SIMPLE_KEYS if k not in self.values]
        return f"no {', '.join(missing)} line" if missing else None

    def records(self):
        if not self.has_record():
            return []
        rec, self.identity = simple_record(self.values)
        rec["complete"] = self.incomplete() is None
        return [(self.line_no, self.end_line, rec)]


class PipeTable(Block):
    """A printed table whose rows are split on '|' (tabulate github / pretty): one record per
    data row, mapped by the header cells."""

    def __init__(self, line_no: int, header: str, kind: str) -> None:
        super().__init__(line_no)
        self.kind = kind
        self.headers = [c.strip() for c in header.strip().strip("|").split("|")]
        self.rows: list[tuple[int, dict]] = []

    def take(self, line: str) -> str:
        s = line.strip()
        if re.fullmatch(r"[|+][-:=|+ ]*[|+]", s):
            return "take"
        if not (s.startswith("|") and s.endswith("|")):
            return "reject"
        cells = [c.strip() for c in s.strip("|").split("|")]
        if len(cells) != len(self.headers):
            self.problems.append(f"table row with {len(cells)} cells under {len(self.headers)} "
                                 "headers")
            return "take"
        self.rows.append((self.end_line, dict(zip(self.headers, cells))))
        return "take"

    def records(self):
        out = []
        for ln, cells in self.rows:
            out.append((ln, ln, self.kind_record(cells)))
        return out

    def kind_record(self, cells: dict) -> dict:
        low = {k.lower(): k for k in cells}
        if self.kind == "obbs_table":
            al = _float(cells[low["acc length"]]) if "acc length" in low else None
            rec = _base("sglang.bench_one_batch_server", "sglang", "run", "table", accept_len=al,
                        accept_len_def="server-lifetime" if al is not None else None,
                        batch_size=_int(cells[low["batch size"]]) if "batch size" in low else None)
            rest = {k: _value(v) for k, v in cells.items() if k.lower() not in ("acc length",
                                                                                 "batch size")}
        else:
            def get(name):
                return _value(cells[low[name]]) if name in low else None
            rec = _base("sglang.send_one", "sglang", "request", "table",
                        accept_len=_float(get("acc length")), avg_latency_s=_float(get("latency (s)")),
                        output_tokens=_int(get("tokens")),
                        per_request_tok_s=_float(get("speed (token/s)")))
            if rec.get("accept_len") is not None:
                rec["accept_len_def"] = "request"
            rest = {k: _value(v) for k, v in cells.items()
                    if k.lower() not in ("acc length", "latency (s)", "tokens", "speed (token/s)")}
        if rest:
            rec["extra"] = json.dumps(rest)
        return rec


class AdaptiveTable(Block):
    kind = "adaptive_table"

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.rows: list[tuple[int, dict]] = []

    def take(self, line: str) -> str:
        if re.fullmatch(r"\s*[-=]{3,}[-= ]*", line):
            return "take"
        parts = line.split()
        if len(parts) < 4:
            return "reject"
        nums = [_float(re.sub(r"(tok/s|s)$", "", p)) for p in parts[-3:]]
        if any(v is None for v in nums):
            return "reject"
        self.rows.append((self.end_line, {"label": " ".join(parts[:-3]), "tp": nums[0],
                                          "lat": nums[1], "al": nums[2]}))
        return "take"

    def records(self):
        return [(ln, ln, _base("sglang.bench_adaptive_speculative", "sglang", "phase", "table",
                               label=r["label"], output_tok_s=r["tp"], avg_latency_s=r["lat"],
                               accept_len=r["al"], accept_len_def="request-mean"))
                for ln, r in self.rows]


class SendOneBlock(Block):
    """`acc_length=X` and the `speed=X token/s` line after it."""

    kind = "send_one"

    def __init__(self, line_no: int, rec: dict) -> None:
        super().__init__(line_no)
        self.rec = rec

    def take(self, line: str) -> str:
        m = SEND_ONE_SPEED.match(line)
        if m is None:
            return "reject"
        self.rec["per_request_tok_s"] = float(m["v"])
        return "end"

    def records(self):
        return [(self.line_no, self.end_line, self.rec)]


_SB_KEYS = (("accept_len", re.compile(r"^\s*#Mean accepted tokens:\s*(.*)$")),
            ("baseline_tok_s", re.compile(r"^\s*Tokens per second for the baseline:\s*(.*)$")),
            ("per_request_tok_s", re.compile(r"^\s*Tokens per second:\s*(.*)$")),
            ("speedup", re.compile(r"^\s*Speedup ratio:\s*(.*)$")))


class SpecBenchBlock(Block):
    kind = "specbench"

    def __init__(self, line_no: int, header: str) -> None:
        super().__init__(line_no)
        m = re.search(r"Task:\s*(\S+)", header)
        self.task = m.group(1) if m else None
        self.values: dict[str, float] = {}
        self.extra: dict[str, float] = {}

    def take(self, line: str) -> str:
        for col, p in _SB_KEYS:
            m = p.match(line)
            if m:
                text = m.group(1)
                mm = re.search(r"Mean result:\s*([-\d.eE+]+)", text)
                sd = re.search(r"Std result:\s*([-\d.eE+]+)", text)
                v = _float(mm.group(1)) if mm else _float(text.strip())
                if v is None:
                    self.problems.append(f"'{line.strip()[:60]}' has no number")
                else:
                    self.values[col] = v
                if sd:
                    self.extra[f"{col}_std"] = _float(sd.group(1))
                return "take"
        return "reject"

    def incomplete(self) -> str | None:
        missing = [lbl for col, lbl in (("accept_len", "#Mean accepted tokens"),
                                        ("speedup", "Speedup ratio")) if col not in self.values]
        return f"no {', '.join(missing)} line" if missing else None

    def records(self):
        rec = _base("spec-bench", None, "task", "block", label=self.task, **self.values)
        if "accept_len" in rec:
            rec["accept_len_def"] = "per-step"
        if self.extra:
            rec["extra"] = json.dumps(self.extra)
        rec["complete"] = self.incomplete() is None
        return [(self.line_no, self.end_line, rec)]


_OFFLINE = re.compile(r"^\s*(?P<key>num_drafts|num_draft_tokens|num_accepted_tokens|"
                      r"mean acceptance length|acceptance at token (?P<pos>\d+)):\s*(?P<val>\S+)\s*$")


class OfflineCollector:
    """vLLM's offline example: the summary keys, matched by name (other output may be
    interleaved); a key seen twice starts the next run's record."""

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.end_line = line_no
        self.values: dict[str, float] = {}
        self.pos: dict[int, float] = {}

    def add(self, key: str, pos, val: float, line_no: int) -> bool:
        """False when the key is already set (the caller closes this record)."""
        if (pos is not None and int(pos) in self.pos) or (pos is None and key in self.values):
            return False
        if pos is not None:
            self.pos[int(pos)] = val
        else:
            self.values[key] = val
        self.end_line = line_no
        return True

    def incomplete(self) -> str | None:
        missing = [k for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens",
                               "mean acceptance length") if k not in self.values]
        return f"no {', '.join(missing)} line" if missing else None

    def record(self) -> tuple[dict, list[str]]:
        v = self.values
        rec = _base("vllm.spec_decode_example", "vllm", "run", "block",
                    drafts=_int(v.get("num_drafts")), draft_tokens=_int(v.get("num_draft_tokens")),
                    accepted_tokens=_int(v.get("num_accepted_tokens")),
                    accept_len=v.get("mean acceptance length"),
                    per_position=_positions([self.pos[i] for i in sorted(self.pos)]))
        if "accept_len" in rec:
            rec["accept_len_def"] = "per-draft"
        rec["complete"] = self.incomplete() is None
        _derive(rec)
        problems = []
        if not _close(rec.get("accept_len"), rec.get("accept_len_derived"), 0.005 + 1e-9):
            problems.append(f"mean acceptance length {rec['accept_len']} ≠ 1 + "
                            "num_accepted_tokens / num_drafts")
        if self.pos and rec.get("accept_len") is not None and not _close(
                sum(self.pos.values()), rec["accept_len"] - 1, 0.005 * len(self.pos) + 0.005):
            problems.append("Σ acceptance at token i ≠ mean acceptance length − 1")
        return rec, problems


LINE_PARSERS = {
    "llama_req": parse_llama_request, "llama_stats": parse_llama_stats,
    "trt_iter": parse_trt_iter, "trt_stats": parse_trt_stats,
    "obbs_line": parse_obbs_line, "bspec": parse_bspec, "bspec_json": parse_bspec_json,
    "mtbench": parse_mtbench, "mtbench_json": parse_mtbench_json, "adaptive": parse_adaptive,
    "run_eval": parse_run_eval, "sb_answer": parse_sb_answer, "eagle_answer": parse_eagle_answer,
}
ITER_KINDS = {"trt_iter", "trt_stats"}
TABLES_HERE = ("bench", "bench_iters")


# ------------------------------------------------------------------------------- scanner
class _Blocks:
    """What the callers of a scanner look at: ``open`` is truthy while a block is open."""

    def __init__(self) -> None:
        self.open: dict = {}


class OthersScanner(ScannerBase):
    """The ``parsers.scan.Scanner`` interface for the formats of others.md (``kinds``: the
    marker groups this engine reads)."""

    _STATE = ("_line",)

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
        self.offline: OfflineCollector | None = None
        self.started: dict[int, int] = {}   # bench_speculative 'Start i=N' -> its line
        self._line = 0
        self.startup = 0
        self.time_only = False
        self.overrun = False
        self.claimed: list[tuple[int, int]] = []   # byte spans of the lines consumed in the
        # last chunk fed (a mixed-family scan hands the other lines to the server-log scanner)

    # ------------------------------------------------------------------ helpers
    def _emit(self, line_no: int, end_line: int, rec: dict) -> None:
        table = "bench_iters" if rec.get("format", "").startswith("iter_") else "bench"
        rec["source"] = self.source
        rec["line_no"] = line_no
        rec["startup"] = 0
        if table == "bench":
            rec["end_line"] = end_line
            rec.setdefault("complete", True)
        self.rows[table].append(rec)

    def _close_block(self) -> None:
        b, self.block = self.block, None
        self.blocks.open = {}
        if b is None:
            return
        recs = b.records()
        for p in b.problems:
            self.diag(b.line_no, "block_line", f"{b.kind} block: {p}")
        if isinstance(b, SimpleBlock) and recs:
            for p in getattr(b, "identity", []):
                self.diag(b.line_no, "identity", f"llama-speculative-simple summary breaks an "
                          f"identity: {p}")
        if isinstance(b, ServingBlock):
            for p in b.identity_problems():
                self.diag(b.line_no, "identity", f"speculative decoding section breaks an "
                          f"identity: {p}")
        why = b.incomplete()
        if why and recs and isinstance(b, (ServingBlock, TrtBlock, SimpleBlock, SpecBenchBlock)):
            name = {"serving": "speculative decoding section" if getattr(b, "standalone", False)
                    else "result block", "trt_block": "DECODING STATISTICS block",
                    "llama_simple": "llama-speculative-simple summary",
                    "specbench": "Spec-Bench task block"}[b.kind]
            self.diag(b.line_no, "incomplete_block", f"{name} cut short after "
                      f"{b.end_line - b.line_no + 1} line{'s' if b.end_line > b.line_no else ''} "
                      f"({why}); kept with complete=False")
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
        rec, problems = c.record()
        if c.incomplete():
            self.diag(c.line_no, "incomplete_block", f"vLLM offline example summary cut short "
                      f"({c.incomplete()}); kept with complete=False")
        for p in problems:
            self.diag(c.line_no, "identity", f"vLLM offline example summary breaks an identity: {p}")
        self._emit(c.line_no, c.end_line, rec)

    # ------------------------------------------------------------------ one line
    def _line_kind(self, raw: bytes) -> str | None:
        m = self.markers.search(raw)
        return m.lastgroup if m else None

    def _dispatch(self, kind: str, line: str, line_no: int, unterminated: bool) -> bool:
        """A marker line outside any block; True when it was consumed."""
        line = strip_ansi(line).rstrip("\r\n")
        if "\r" in line:     # progress-bar fragments before the text
            line = line.rsplit("\r", 1)[-1] if line.rsplit("\r", 1)[-1].strip() else line
        if unterminated:
            self.diag(line_no, "truncated", "last line has no newline (cut short?); not parsed")
            return True
        if kind == "trt_block":
            self.block = TrtBlock(line_no, line)
        elif kind in ("serving", "vllm_section"):
            self.block = ServingBlock(line_no, standalone_section=kind == "vllm_section")
            if kind == "vllm_section":
                self.block.section = "speculative decoding"
        elif kind == "llama_simple":
            self.block = SimpleBlock(line_no)
            self.block.take(line)
            if self.block.values.get("accept") is not None and len(self.block.values) == 1:
                self._close_block()
                return True
        elif kind in ("obbs_table", "send_one_table"):
            self.block = PipeTable(line_no, line, kind)
        elif kind == "adaptive_table":
            self.block = AdaptiveTable(line_no)
        elif kind == "specbench":
            self.block = SpecBenchBlock(line_no, line)
        elif kind == "send_one":
            rec, problems = parse_send_one(line)
            if rec is None:
                self.diag(line_no, "malformed", f"line not parsed: {problems[0]}")
                return True
            self.block = SendOneBlock(line_no, rec)
        elif kind == "vllm_offline":
            m = _OFFLINE.match(line)
            v = _float(m.group("val")) if m else None
            if v is None:
                self.diag(line_no, "malformed", "vLLM offline example line has no number: "
                          + line.strip()[:80])
                return True
            key = m.group("key") if m.group("pos") is None else "pos"
            if self.offline is None:
                self.offline = OfflineCollector(line_no)
            if key == "num_drafts" and self.offline.values or \
                    not self.offline.add(key, m.group("pos"), v, line_no):
                self._close_offline()
                self.offline = OfflineCollector(line_no)
                self.offline.add(key, m.group("pos"), v, line_no)
            return True
        else:
            rec, problems = LINE_PARSERS[kind](line)
            if rec is None:
                if problems:
                    self.diag(line_no, "malformed", f"line not parsed: {problems[0]}")
                    return True
                return False
            if "_start" in rec:
                # the script runs one configuration at a time: one started before this one
                # and not finished failed
                self._report_unfinished()
                self.started[rec["_start"]] = line_no
                return True
            for p in problems:
                self.diag(line_no, "identity", f"{rec['tool']} line breaks an identity: {p}")
            if kind == "bspec":
                self.started.pop(int(rec["label"][2:]), None)
            self._emit(line_no, line_no, rec)
            return True
        self.blocks.open = {None: self.block}
        return True

    def _block_line(self, line: str, line_no: int) -> str:
        """Feed a line to the open block: 'took' or 'rejected' (the block is closed then)."""
        b = self.block
        text = strip_ansi(line).rstrip("\r\n")
        if not text.strip():
            if not b.blank():
                self._close_block()
            return "blank"
        prev_end = b.end_line
        b.end_line = line_no
        verdict = b.take(text)
        if verdict == "reject":
            b.end_line = prev_end
            self._close_block()
            return "rejected"
        if verdict == "end":
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
                if le < 0 and line.strip():
                    self._close_block()
                    self.diag(line_no, "truncated", "last line has no newline (cut short?); "
                              "not parsed")
                    self.claimed.append((pos, end))
                    consumed_here.append(line_no)
                    pos = end + 1
                    continue
                got = self._block_line(line, line_no)
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
                self.parts[name].append(build_frame(TABLES[name], rows))
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


def align_device_time(it: pd.DataFrame) -> pd.DataFrame:
    """device_step_time_ms of iteration k = prev_device_step_time_ms printed on iteration k+1
    (same source and rank)."""
    it = it.copy()
    logs = it[it["format"] == "iter_log"]
    key = {}
    for idx, src, rank, itr, prev in zip(logs.index, logs["source"],
                                         logs["rank"] if "rank" in logs else [None] * len(logs),
                                         logs["iter"], logs["prev_device_step_time_ms"]):
        if pd.notna(itr):
            key[(src, None if pd.isna(rank) else int(rank), int(itr))] = prev
    vals = []
    for idx, row in it.iterrows():
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
