"""Benchmark-script outputs (others.md §3–§5): SGLang's bench_serving, bench_one_batch_server,
bench_speculative, mtbench, send_one, adaptive bench and run_eval; ``vllm bench serve``'s
speculative section and vLLM's offline spec_decode example; Spec-Bench and EAGLE answer files.
Every row goes to the ``bench`` table.

Numbers are read with numbers.py (ASCII digits, finite, in range).  A record line becomes a row
when at least one of its values can be read; an unreadable value is NA and reported (bad value),
a line none of whose values can be read is reported (malformed).  A single line cut short keeps
the fields before the cut (each field counts only when the text printed after it is there too)
with complete=False, and the cut is reported.
"""
from __future__ import annotations

import math
import re

from ._common import (Block, Parsed, base, cell_value, close, derive, dump_json, flat, json_obj,
                      not_a_record, positions)
from .numbers import Reader, is_number_text, to_float, to_int, to_int32
from . import requests_bench

KINDS = ("serving", "vllm_section", "obbs_table", "obbs_line", "bspec", "bspec_json", "mtbench",
         "mtbench_json", "send_one", "send_one_table", "adaptive", "adaptive_table", "run_eval",
         "vllm_offline", "specbench", "sb_answer", "eagle_answer", "vllm_response", "specforge",
         "sglang_response", "llama_response")
OFFLINE_KEYS = ("total_num_output_tokens", "num_drafts", "num_draft_tokens",
                "num_accepted_tokens", "mean acceptance length")
MARKER_TEXT = {
    "serving": rb"Serving Benchmark Result",
    "vllm_section": rb"-Speculative Decoding-",
    "obbs_table": rb"^[ \t]*\|[^\n]*\bacc length\b",
    "obbs_line": rb"^[ \t]*acc_length:[ \t]*[^\s=]",
    "bspec": rb"(?:Start|Finish) i=[^:\s]{1,40}: batch_size=",
    "bspec_json": rb"\"acc_length\":",
    "mtbench": rb"#questions:[ \t]*[^\s,]",
    "mtbench_json": rb"\"accept_length\":",
    "send_one": rb"^[ \t]*acc_length=",
    "send_one_table": rb"^[ \t]*\|[^\n]*\bAcc Length\b",
    "adaptive": rb"Avg accept_len:",
    "adaptive_table": rb"^[ \t]*Phase[ \t]+Throughput[ \t]+Avg Latency[ \t]+Accept Len",
    "run_eval": rb"Speculative accept length \(per-request",
    "vllm_offline": rb"^[ \t]*(?:total_num_output_tokens|num_drafts|num_draft_tokens|"
                    rb"num_accepted_tokens|mean acceptance length|"
                    rb"acceptance at token [^:\s]{1,12}):",
    "specbench": rb"^=+ Task:",
    "sb_answer": rb"\"accept_lengths\":",
    "eagle_answer": rb"\"idxs\":",
    "vllm_response": requests_bench.VLLM_RESPONSE_MARKER,
    "specforge": requests_bench.SPECFORGE_MARKER,
    "sglang_response": requests_bench.SGLANG_RESPONSE_MARKER,
    "llama_response": requests_bench.LLAMA_RESPONSE_MARKER,
}
# Literals one of which every match of a kind's marker contains (sniffing skips the regex of a
# kind whose literals are all absent from the head)
SNIFF_LITERALS = {
    "obbs_table": (b"acc length",),
    "obbs_line": (b"acc_length:",),
    "bspec": (b"batch_size=",),
    "send_one": (b"acc_length=",),
    "send_one_table": (b"Acc Length",),
    "adaptive_table": (b"Accept Len",),
    # (each keyword with the ':' its marker puts right after it: a SGLang server_args line
    # holds 'speculative_num_draft_tokens=', and the regex then ran over every sniffed head)
    "vllm_offline": (b"num_drafts:", b"num_draft_tokens:", b"num_accepted_tokens:",
                     b"mean acceptance length:", b"acceptance at token ",
                     b"total_num_output_tokens:"),
    "specbench": (b"= Task:",),
    "vllm_response": (b'"num_spec_steps"',),
    "specforge": (b'    "model": ',),
    "sglang_response": (b'"spec_tokens_details"',),
    "llama_response": (b'"draft_n_accepted"',),
}


def _product(r: Reader, v, factor, name: str):
    """v × factor, None (reported) when that overflows the floats."""
    if v is None:
        return None
    x = v * factor
    if not math.isfinite(x):
        r.bad.append(f"{name} {v!r} × {factor} overflows")
        return None
    return round(x, 9)


def _fsum(r: Reader, vals, name: str):
    """The sum of read numbers, None (reported) when it overflows the floats."""
    if not vals:
        return None
    x = math.fsum(vals)
    if not math.isfinite(x):
        r.bad.append(f"the sum of {name} overflows")
        return None
    return x


def _whole(rec: dict, r: Reader, what: str) -> Parsed | None:
    """None when the record has a value; else the malformed report."""
    if any(k not in ("tool", "engine", "scope", "format", "accept_len_def", "label", "extra")
           for k in rec):
        return None
    return Parsed(None, [f"{what}: no value could be read ({'; '.join(r.bad) or 'none printed'})"])


# ------------------------------------------------------------------ SGLang bench_speculative
BSPEC = re.compile(
    r"(?P<what>Start|Finish) i=(?P<i>[^:\s]+):"
    r"(?: batch_size=(?P<bs>[^\s,]+),(?: steps=(?P<steps>[^\s,]+),(?: topk=(?P<topk>[^\s,]+),"
    r"(?: num_draft_tokens=(?P<ndt>[^\s,]+)(?=,|\s*$)"
    r"(?:, speed=(?P<speed>\S+?) token/s,(?: step_time=(?P<st>\S+?) ms)?)?)?)?)?)?", re.ASCII)


def parse_bspec(line: str) -> Parsed:
    m = BSPEC.search(line)
    if m is None:
        return not_a_record()
    try:
        i = to_int(m["i"])
    except ValueError:
        return Parsed(None, [f"bench_speculative '{m['what']}' line: bad value {m['i'][:30]!r} "
                             "for i"])
    if m["what"] == "Start":
        return Parsed({"_start": i})
    r = Reader()
    rec = base("sglang.bench_speculative", "sglang", "config", "line", label=f"i={i}",
               batch_size=r(m["bs"], to_int32, "batch_size"),
               spec_steps=r(m["steps"], to_int32, "steps"),
               spec_topk=r(m["topk"], to_int32, "topk"),
               spec_draft_tokens=r(m["ndt"], to_int32, "num_draft_tokens"),
               per_request_tok_s=r(m["speed"], to_float, "speed"),
               step_time_ms=r(m["st"], to_float, "step_time"))
    rec["_i"] = i
    cut = None
    if m["st"] is None:
        missing = next(n for g, n in (("bs", "batch_size"), ("steps", "steps"), ("topk", "topk"),
                                      ("ndt", "num_draft_tokens"), ("speed", "speed"),
                                      ("st", "step_time")) if m[g] is None)
        cut = f"no '{missing}=' field"
    return Parsed(rec, [], r.bad, cut)


def parse_bspec_json(line: str) -> Parsed:
    obj = json_obj(line)
    if obj is None or "acc_length" not in obj:
        return Parsed(None, ["bench_speculative JSONL record is not a JSON object with "
                             "'acc_length' (cut short?)"])
    r = Reader()
    st = r(obj.get("step_time"), to_float, "step_time")
    rec = base("sglang.bench_speculative", "sglang", "config", "jsonl",
               accept_len=r(obj.get("acc_length"), to_float, "acc_length"),
               batch_size=r(obj.get("batch_size"), to_int32, "batch_size"),
               spec_steps=r(obj.get("steps"), to_int32, "steps"),
               spec_topk=r(obj.get("topk"), to_int32, "topk"),
               spec_draft_tokens=r(obj.get("num_draft_tokens"), to_int32, "num_draft_tokens"),
               step_time_ms=_product(r, st, 1000, "step_time"),
               per_request_tok_s=r(obj.get("speed"), to_float, "speed"),
               output_tokens=r(obj.get("completion_tokens"), to_int, "completion_tokens"))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "server-lifetime"
    known = {"batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time",
             "speed", "completion_tokens"}
    rest = {k: v for k, v in obj.items() if k not in known}
    if rest:
        rec["extra"] = dump_json(rest)
    bad = _whole(rec, r, "bench_speculative JSONL record")
    if bad:
        return bad
    problems = []
    al, sp = rec.get("accept_len"), rec.get("per_request_tok_s")
    if st and al and not close(sp, al / st, 1e-6 * (1 + al / st)):
        problems.append("speed ≠ acc_length / step_time")
    return Parsed(rec, problems, r.bad)


# ------------------------------------------------------------------ SGLang mtbench
MTBENCH = re.compile(r"#questions:\s*(?P<n>[^\s,]+)(?=,|\s*$)"
                     r"(?:,\s*Throughput:\s*(?P<tp>\S+?)\s*token/s"
                     r"(?:,\s*Acceptance length:\s*(?P<al>\S+))?)?", re.ASCII)


def parse_mtbench(line: str) -> Parsed:
    m = MTBENCH.search(line)
    if m is None:
        return Parsed(None, ["mtbench '#questions:' line not understood"])
    r = Reader()
    rec = base("sglang.mtbench", "sglang", "run", "line", requests=r(m["n"], to_int, "#questions"),
               output_tok_s=r(m["tp"], to_float, "Throughput"),
               accept_len=r(m["al"], to_float, "Acceptance length"))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "pooled-with-first-token"
    bad = _whole(rec, r, "mtbench line")
    if bad:
        return bad
    cut = None
    if m["al"] is None:
        cut = "no 'Throughput:' field" if m["tp"] is None else "no 'Acceptance length:' field"
    return Parsed(rec, [], r.bad, cut)


def parse_mtbench_json(line: str) -> Parsed:
    obj = json_obj(line)
    if obj is None or "accept_length" not in obj:
        return Parsed(None, ["mtbench JSONL record is not a JSON object with 'accept_length' "
                             "(cut short?)"])
    if "completed" in obj and ("backend" in obj or "output_throughput" in obj):
        return parse_serving_json(obj)
    r = Reader()
    task = obj.get("task")
    rec = base("sglang.mtbench", "sglang", "run", "jsonl",
               label=task if isinstance(task, str) else None,
               accept_len=r(obj.get("accept_length"), to_float, "accept_length"),
               output_tok_s=r(obj.get("throughput"), to_float, "throughput"),
               duration_s=r(obj.get("latency"), to_float, "latency"),
               requests=r(obj.get("num_requests", obj.get("num_questions")), to_int,
                          "num_requests"))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "pooled-with-first-token"
    rest = {k: v for k, v in obj.items() if k not in {"task", "accept_length", "throughput",
                                                       "latency", "num_requests",
                                                       "num_questions"}}
    if rest:
        rec["extra"] = dump_json(rest)
    bad = _whole(rec, r, "mtbench JSONL record")
    return bad or Parsed(rec, [], r.bad)


def parse_serving_json(obj: dict) -> Parsed:
    """bench_serving's --output-file record (one JSON line per run; python/sglang/benchmark/
    serving.py, v0.5.18 / main): its 'accept_length' is the server's lifetime value of DP rank
    0 (internal_states[0].avg_spec_accept_length), as in the printed block.  With
    --output-details the line also holds per-request lists (input_lens, output_lens, ttfts,
    itls, generated_texts, errors) with no acceptance count: they make no rows (their number is
    kept in 'extra')."""
    r = Reader()
    backend = obj.get("backend")
    engine = None
    if isinstance(backend, str):
        engine = "sglang" if backend.startswith("sglang") else \
            "vllm" if backend.startswith("vllm") else None
    details = obj.get("output_lens")
    extra = {k: obj[k] for k in ("backend", "dataset_name", "request_rate", "max_concurrency")
             if k in obj}
    if isinstance(details, list):
        extra["per_request_records"] = len(details)
    rec = base("sglang.bench_serving", engine, "run", "jsonl",
               accept_len=r(obj.get("accept_length"), to_float, "accept_length"),
               requests=r(obj.get("completed"), to_int, "completed"),
               duration_s=r(obj.get("duration"), to_float, "duration"),
               output_tokens=r(obj.get("total_output_tokens"), to_int, "total_output_tokens"),
               output_tok_s=r(obj.get("output_throughput"), to_float, "output_throughput"),
               concurrency=r(obj.get("concurrency"), to_float, "concurrency"),
               extra=dump_json(extra))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "server-lifetime"
    bad = _whole(rec, r, "bench_serving JSONL record")
    return bad or Parsed(rec, [], r.bad)


# ------------------------------------------------------------------ SGLang one-liners
OBBS_LINE = re.compile(r"acc_length:\s*(?P<v>\S*)", re.ASCII)


def parse_obbs_line(line: str) -> Parsed:
    m = OBBS_LINE.search(line)
    if m is None:
        return Parsed(None, ["bench_one_batch_server 'acc_length:' line not understood"])
    r = Reader()
    v = None if m["v"] == "n/a" else r(m["v"], to_float, "acc_length")
    if v is None and r.bad:
        return Parsed(None, [f"bench_one_batch_server line: {r.bad[0]}"])
    return Parsed(base("sglang.bench_one_batch_server", "sglang", "run", "line", accept_len=v,
                       accept_len_def="server-lifetime" if v is not None else None))


SEND_ONE = re.compile(r"acc_length=(?P<v>\S*)", re.ASCII)
SEND_ONE_SPEED = re.compile(r"^\s*speed=(?P<v>\S*?)\s*token/s", re.ASCII)


def parse_send_one(line: str) -> Parsed:
    m = SEND_ONE.search(line)
    if m is None:
        return Parsed(None, ["send_one 'acc_length=' line not understood"])
    r = Reader()
    v = r(m["v"], to_float, "acc_length")
    if v is None:
        return Parsed(None, [f"send_one line: {r.bad[0] if r.bad else 'no value'}"])
    return Parsed(base("sglang.send_one", "sglang", "request", "line", accept_len=v,
                       accept_len_def="request"))


ADAPTIVE = re.compile(r"Throughput:\s*(?P<tp>\S+?)\s*tok/s"
                      r"(?:\s*\|\s*Avg latency:\s*(?P<lat>\S+?)s(?=\s*\||\s*$)"
                      r"(?:\s*\|\s*Avg accept_len:\s*(?P<al>[^\s|]+)"
                      r"(?:\s*\|\s*Errors:\s*(?P<err>\S+))?)?)?", re.ASCII)


def parse_adaptive(line: str) -> Parsed:
    m = ADAPTIVE.search(line)
    if m is None:
        return Parsed(None, ["adaptive bench phase line not understood"])
    r = Reader()
    rec = base("sglang.bench_adaptive_speculative", "sglang", "phase", "line",
               output_tok_s=r(m["tp"], to_float, "Throughput"),
               avg_latency_s=r(m["lat"], to_float, "Avg latency"),
               accept_len=r(m["al"], to_float, "Avg accept_len"),
               errors=r(m["err"], to_int, "Errors"))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "request-mean"
    bad = _whole(rec, r, "adaptive bench phase line")
    if bad:
        return bad
    cut = None if m["al"] is not None else "no 'Avg accept_len:' value"
    return Parsed(rec, [], r.bad, cut)


RUN_EVAL = re.compile(r"Speculative accept length \(per-request[^)]*\):"
                      r"(?:\s*n=(?P<n>\S+)(?:\s+mean=(?P<mean>\S+)(?:\s+min=(?P<min>\S+)"
                      r"(?:\s+max=(?P<max>\S+))?)?)?)?", re.ASCII)


def parse_run_eval(line: str) -> Parsed:
    m = RUN_EVAL.search(line)
    if m is None:
        return Parsed(None, ["run_eval accept-length line not understood"])
    r = Reader()
    rec = base("sglang.run_eval", "sglang", "run", "line", requests=r(m["n"], to_int, "n"),
               accept_len=r(m["mean"], to_float, "mean"),
               accept_len_min=r(m["min"], to_float, "min"),
               accept_len_max=r(m["max"], to_float, "max"))
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "request-mean"
    bad = _whole(rec, r, "run_eval line")
    if bad:
        return bad
    cut = None if m["max"] is not None else "no 'max=' field"
    return Parsed(rec, [], r.bad, cut)


# ------------------------------------------------------------------ research harnesses
def _numbers(r: Reader, v, conv, name: str) -> list | None:
    """The numbers of a (nested) JSON list, each read with conv; None when one cannot be."""
    vals = flat(v)
    out = []
    for x in vals:
        y = r(x, conv, name)
        if y is None:
            return None
        out.append(y)
    return out


def _category(obj: dict) -> str | None:
    c = obj.get("category")
    return str(c)[:200] if isinstance(c, (str, int)) and not isinstance(c, bool) else None


def _whole_sum(total: float | None) -> int | None:
    """Σ accept_lengths as a token count (it is one when every step's length is whole)."""
    if total is None or not math.isfinite(total) or total != int(total) or abs(total) >= 2**62:
        return None
    return int(total)


def parse_sb_answer(line: str) -> Parsed:
    obj = json_obj(line)
    if obj is None or not isinstance(obj.get("choices"), list) or not obj["choices"]:
        return Parsed(None, ["Spec-Bench answer line is not a JSON object with 'choices' "
                             "(cut short?)"])
    ch = obj["choices"][0] if isinstance(obj["choices"][0], dict) else {}
    r = Reader()
    lens = _numbers(r, ch.get("accept_lengths"), to_float, "accept_lengths")
    steps = _numbers(r, ch.get("decoding_steps"), to_int, "decoding_steps")
    new = _numbers(r, ch.get("new_tokens"), to_int, "new_tokens")
    wall = _numbers(r, ch.get("wall_time"), to_float, "wall_time")
    out = r(sum(new), to_int, "new_tokens") if new else None
    total = _fsum(r, lens, "accept_lengths")
    rec = base("spec-bench", None, "request", "jsonl",
               label=str(obj["question_id"])[:200] if "question_id" in obj else None,
               accept_len=total / len(lens) if total is not None else None,
               output_tokens=out, duration_s=_fsum(r, wall, "wall_time"),
               category=_category(obj), steps=len(lens) if lens else None,
               step_tokens=_whole_sum(total))
    if lens:
        rec["accept_len_def"] = "per-step"
    problems = []
    if steps and lens and sum(steps) != len(lens):
        problems.append(f"decoding_steps {sum(steps)} ≠ number of accept_lengths {len(lens)}")
    return Parsed(rec, problems, r.bad)


def parse_eagle_answer(line: str) -> Parsed:
    obj = json_obj(line)
    if obj is None or not isinstance(obj.get("choices"), list) or not obj["choices"]:
        return Parsed(None, ["EAGLE answer line is not a JSON object with 'choices' "
                             "(cut short?)"])
    ch = obj["choices"][0] if isinstance(obj["choices"][0], dict) else {}
    r = Reader()
    idxs = _numbers(r, ch.get("idxs"), to_int, "idxs")
    new = _numbers(r, ch.get("new_tokens"), to_int, "new_tokens")
    wall = _numbers(r, ch.get("wall_time"), to_float, "wall_time")
    cycles = sum(i + 1 for i in idxs) if idxs else 0
    out = r(sum(new), to_int, "new_tokens") if new else None
    rec = base("eagle", None, "request", "jsonl",
               label=str(obj["question_id"])[:200] if "question_id" in obj else None,
               accept_len=sum(new) / cycles if cycles and new else None,
               output_tokens=out, duration_s=_fsum(r, wall, "wall_time"),
               category=_category(obj), steps=cycles if cycles and new else None,
               step_tokens=out if cycles and new else None)
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "per-step"
    return Parsed(rec, [], r.bad)


LINE_PARSERS = {
    "obbs_line": parse_obbs_line, "bspec": parse_bspec, "bspec_json": parse_bspec_json,
    "mtbench": parse_mtbench, "mtbench_json": parse_mtbench_json, "adaptive": parse_adaptive,
    "run_eval": parse_run_eval, "sb_answer": parse_sb_answer, "eagle_answer": parse_eagle_answer,
    "vllm_response": requests_bench.parse_vllm_response,
    "sglang_response": requests_bench.parse_sglang_response,
    "llama_response": requests_bench.parse_llama_response,
}
SpecForgeBlock = requests_bench.SpecForgeBlock


# ------------------------------------------------------------------ result blocks
_ROW = re.compile(r"^\s*(?P<label>[^:\[\]{}=,]+?)\s*:\s*(?P<value>[^:,{}\[\]]*?)\s*$")
_NOT_LABEL = frozenset("[]{}=,")
_NOT_VALUE = frozenset(":,{}[]")


def row_parts(line: str) -> tuple[str, str] | None:
    """(label, value) of a 'label: value' row, stripped — what _ROW matches, in one pass: the
    pattern's lazy label and value backtrack over every run of spaces, and a hostile line of
    300,000 spaces took minutes (fuzz case 98:655).  The label is what precedes the first
    colon, with none of []{}=, in it; the value what follows it, with none of :,{}[]."""
    head, sep, rest = line.partition(":")
    if not sep or not head or not _NOT_LABEL.isdisjoint(head):
        return None
    value = rest.strip()
    if not _NOT_VALUE.isdisjoint(value):
        return None
    return head.strip(), value
_RULE = re.compile(r"^\s*[=\-]{3,}.*[=\-]{3,}\s*$|^\s*[=\-]{3,}\s*$")
_TITLED = re.compile(r"^\s*-{3,}\s*(?P<title>[^-].*?)\s*-{3,}\s*$")
_POS = re.compile(r"^\s*Position\s+(\d{1,6})\s*$", re.ASCII)

_SERVING_MAP = {"successful requests": ("requests", to_int),
                "benchmark duration (s)": ("duration_s", to_float),
                "total generated tokens": ("output_tokens", to_int),
                "output token throughput (tok/s)": ("output_tok_s", to_float),
                "concurrency": ("concurrency", to_float),
                "failed requests": ("errors", to_int)}
_SPEC_MAP = {"acceptance rate (%)": ("acceptance_rate", to_float),
             "acceptance length": ("accept_len", to_float),
             "drafts": ("drafts", to_int), "draft tokens": ("draft_tokens", to_int),
             "accepted tokens": ("accepted_tokens", to_int)}


class ServingBlock(Block):
    """bench_serving's / vllm bench serve's result block (with or without its speculative
    section), or a standalone `Speculative Decoding` section."""

    kind = "serving"

    def __init__(self, line_no: int, standalone_section: bool = False) -> None:
        super().__init__(line_no)
        self.rows: dict[str, object] = {}
        self.spec: dict[str, float | int] = {}
        self.seen_spec: set[str] = set()
        self.pos: dict[int, float] = {}
        self.extra: dict[str, object] = {}
        self.section: str | None = "speculative decoding" if standalone_section else None
        self.standalone = standalone_section
        self.closed_by_rule = False
        self.pos_bad = False          # a per-position row could not be read: no list

    @property
    def name(self) -> str:
        return "speculative decoding section" if self.standalone else "result block"

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
        got = row_parts(line)
        if got is None:
            return "reject"
        label, value = got
        low = label.lower()
        if self.section == "speculative decoding":
            p = _POS.match(label)
            if p:
                v = self.read(value, to_float, label)
                if v is None:
                    self.pos_bad = True
                else:
                    self.pos[int(p.group(1))] = v
                return "take"
            if low == "per-position acceptance (%)":
                return "take"
            if low.startswith("position"):
                self.bad.append((self.end_line, f"bad position index in {label[:30]!r}"))
                self.pos_bad = True
                return "take"
            if low in _SPEC_MAP:
                col, conv = _SPEC_MAP[low]
                self.seen_spec.add(col)
                v = self.read(value, conv, label)
                if v is not None:
                    self.spec[col] = v
                return "take"
        if low == "accept length":
            v = self.read(value, to_float, label)
            if v is not None:
                self.rows["accept_len"] = v
            return "take"
        if low in _SERVING_MAP:
            col, conv = _SERVING_MAP[low]
            v = self.read(value, conv, label)
            if v is not None:
                self.rows[col] = v
            return "take"
        key = label if self.section in (None, "speculative decoding") else \
            f"{self.section}: {label}"
        self.extra[key] = cell_value(value)
        return "take"

    def engine_tool(self) -> tuple[str, str | None]:
        backend = str(self.extra.get("Backend") or "").lower()
        engine = next((e for p, e in (("sglang", "sglang"), ("vllm", "vllm"),
                                      ("trt", "tensorrt-llm"), ("llama", "llama.cpp"))
                       if backend.startswith(p)), None)
        if self.spec or self.pos or self.seen_spec or self.section == "speculative decoding":
            return "vllm.bench_serve", engine or "vllm"
        if "Backend" in self.extra or "accept_len" in self.rows:
            return "sglang.bench_serving", engine or "sglang"
        return "serving-benchmark", engine

    def record(self) -> dict:
        tool, engine = self.engine_tool()
        rec = base(tool, engine, "run", "block", **self.rows)
        if tool == "vllm.bench_serve":
            s = self.spec
            for k in ("accept_len", "drafts", "draft_tokens", "accepted_tokens"):
                if k in s:
                    rec[k] = s[k]
            if "acceptance_rate" in s:
                rec["acceptance_rate"] = s["acceptance_rate"] / 100
            if self.pos and not self.pos_bad:
                rec["per_position"] = positions([self.pos[i] / 100 for i in sorted(self.pos)])
            if "accept_len" in rec:
                rec["accept_len_def"] = "per-draft"
        elif "accept_len" in rec:
            rec["accept_len_def"] = "server-lifetime"
        if self.extra:
            rec["extra"] = dump_json(self.extra)
        rec["complete"] = self.incomplete() is None
        return derive(rec)

    def incomplete(self) -> str | None:
        if self.standalone:
            missing = [k for k in ("Acceptance rate (%)", "Acceptance length", "Drafts",
                                   "Draft tokens", "Accepted tokens")
                       if _SPEC_MAP[k.lower()][0] not in self.seen_spec]
            if missing:
                return f"no {', '.join(missing)} row"
        elif not self.closed_by_rule:
            return "no closing '=====' rule"
        return "last line has no newline" if self.unterminated else None

    def identity_problems(self) -> list[str]:
        s, out = self.spec, []
        acc, dt, dr = s.get("accepted_tokens"), s.get("draft_tokens"), s.get("drafts")
        if dt and acc is not None and not close(s.get("acceptance_rate"), 100 * acc / dt,
                                                0.005 + 1e-9):
            out.append(f"Acceptance rate {s['acceptance_rate']} % ≠ 100 × accepted / draft "
                       "tokens")
        if dr and acc is not None and not close(s.get("accept_len"), 1 + acc / dr, 0.005 + 1e-9):
            out.append(f"Acceptance length {s['accept_len']} ≠ 1 + accepted / drafts")
        if self.pos and not self.pos_bad and "accept_len" in s and not close(
                sum(self.pos.values()), 100 * (s["accept_len"] - 1), 0.5 + 0.005 * len(self.pos)):
            out.append("Σ per-position acceptance ≠ 100 × (acceptance length − 1)")
        return out

    def records(self):
        return [(self.line_no, self.end_line, self.record())]


class PipeTable(Block):
    """A printed table whose rows are split on '|' (tabulate github / pretty): one record per
    data row, mapped by the header cells."""

    def __init__(self, line_no: int, header: str, kind: str) -> None:
        super().__init__(line_no)
        self.kind = kind
        self.name = "bench_one_batch_server table" if kind == "obbs_table" else "send_one table"
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
        if self.unterminated:
            self.cut_at = self.end_line
        return "take"

    cut_at: int | None = None     # a data row on a last line without newline

    def incomplete(self) -> str | None:
        return "last line has no newline" if self.cut_at else None

    def _cell(self, ln: int, cells: dict, low: dict, name: str, conv):
        if name not in low:
            return None
        text = cells[low[name]]
        if text.strip().lower() in ("n/a", "na", "none", "-", ""):
            return None
        try:
            return conv(text.strip())
        except ValueError:
            self.bad.append((ln, f"bad value {text.strip()[:30]!r} for {low[name]}"))
            return None

    def records(self):
        out = [(ln, ln, self.kind_record(ln, cells)) for ln, cells in self.rows]
        for ln, _, rec in out:
            if ln == self.cut_at:
                rec["complete"] = False
        return out

    def kind_record(self, ln: int, cells: dict) -> dict:
        low = {k.lower(): k for k in cells}
        if self.kind == "obbs_table":
            al = self._cell(ln, cells, low, "acc length", to_float)
            rec = base("sglang.bench_one_batch_server", "sglang", "run", "table", accept_len=al,
                       accept_len_def="server-lifetime" if al is not None else None,
                       batch_size=self._cell(ln, cells, low, "batch size", to_int32))
            mapped = ("acc length", "batch size")
        else:
            rec = base("sglang.send_one", "sglang", "request", "table",
                       accept_len=self._cell(ln, cells, low, "acc length", to_float),
                       avg_latency_s=self._cell(ln, cells, low, "latency (s)", to_float),
                       output_tokens=self._cell(ln, cells, low, "tokens", to_int),
                       per_request_tok_s=self._cell(ln, cells, low, "speed (token/s)", to_float))
            if rec.get("accept_len") is not None:
                rec["accept_len_def"] = "request"
            mapped = ("acc length", "latency (s)", "tokens", "speed (token/s)")
        rest = {k: cell_value(v) for k, v in cells.items() if k.lower() not in mapped}
        if rest:
            rec["extra"] = dump_json(rest)
        return rec


_NUMISH = re.compile(r"^[-+]?[\w.]+$", re.ASCII)


class AdaptiveTable(Block):
    kind = "adaptive_table"
    name = "adaptive bench summary table"

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.rows: list[tuple[int, dict]] = []

    def take(self, line: str) -> str:
        if re.fullmatch(r"\s*[-=]{3,}[-= ]*", line):
            return "take"
        parts = line.split()
        if len(parts) < 4:
            return "reject"
        last = [re.sub(r"(tok/s|s)$", "", p) for p in parts[-3:]]
        # a row: three number-like cells, at least one of them a number (a damaged cell is a
        # bad value of the row, not the end of the table)
        if not all(_NUMISH.match(p) for p in last) or not any(is_number_text(p) for p in last):
            return "reject"
        tp, lat, al = (self.read(p, to_float, n)
                       for p, n in zip(last, ("Throughput", "Avg Latency", "Accept Len")))
        self.rows.append((self.end_line, {"label": " ".join(parts[:-3]), "tp": tp, "lat": lat,
                                          "al": al}))
        if self.unterminated:
            self.cut_at = self.end_line
        return "take"

    cut_at: int | None = None

    def incomplete(self) -> str | None:
        return "last line has no newline" if self.cut_at else None

    def records(self):
        out = []
        for ln, r in self.rows:
            rec = base("sglang.bench_adaptive_speculative", "sglang", "phase", "table",
                       label=r["label"], output_tok_s=r["tp"], avg_latency_s=r["lat"],
                       accept_len=r["al"])
            if r["al"] is not None:
                rec["accept_len_def"] = "request-mean"
            if ln == self.cut_at:
                rec["complete"] = False
            out.append((ln, ln, rec))
        return out


class SendOneBlock(Block):
    """`acc_length=X` and the `speed=X token/s` line after it."""

    kind = "send_one"
    name = "send_one lines"

    def __init__(self, line_no: int, parsed: Parsed) -> None:
        super().__init__(line_no)
        self.parsed = parsed

    def take(self, line: str) -> str:
        m = SEND_ONE_SPEED.match(line)
        if m is None:
            return "reject"
        v = self.read(m["v"], to_float, "speed")
        if v is not None:
            self.parsed.record["per_request_tok_s"] = v
        return "end"

    def records(self):
        return [(self.line_no, self.end_line, self.parsed.record)]


_SB_KEYS = (("accept_len", re.compile(r"^\s*#Mean accepted tokens:\s*(.*)$")),
            ("baseline_tok_s", re.compile(r"^\s*Tokens per second for the baseline:\s*(.*)$")),
            ("per_request_tok_s", re.compile(r"^\s*Tokens per second:\s*(.*)$")),
            ("speedup", re.compile(r"^\s*Speedup ratio:\s*(.*)$")))
_MEAN_RESULT = re.compile(r"Mean result:\s*([^\s,]+)", re.ASCII)
_STD_RESULT = re.compile(r"Std result:\s*([^\s,]+)", re.ASCII)


class SpecBenchBlock(Block):
    kind = "specbench"
    name = "Spec-Bench task block"

    def __init__(self, line_no: int, header: str) -> None:
        super().__init__(line_no)
        m = re.search(r"Task:\s*(\S+)", header)
        self.task = m.group(1) if m else None
        self.values: dict[str, float] = {}
        self.seen: set[str] = set()
        self.extra: dict[str, float | None] = {}

    def take(self, line: str) -> str:
        for col, p in _SB_KEYS:
            m = p.match(line)
            if m:
                self.seen.add(col)
                text = m.group(1)
                mm, sd = _MEAN_RESULT.search(text), _STD_RESULT.search(text)
                v = self.read(mm.group(1) if mm else text.strip(), to_float, col)
                if v is not None:
                    self.values[col] = v
                if sd:
                    self.extra[f"{col}_std"] = self.read(sd.group(1), to_float, f"{col} std")
                return "take"
        return "reject"

    def incomplete(self) -> str | None:
        missing = [lbl for col, lbl in (("accept_len", "#Mean accepted tokens"),
                                        ("speedup", "Speedup ratio")) if col not in self.seen]
        if missing:
            return f"no {', '.join(missing)} line"
        return "last line has no newline" if self.unterminated else None

    def records(self):
        rec = base("spec-bench", None, "task", "block", label=self.task, **self.values)
        if "accept_len" in rec:
            rec["accept_len_def"] = "per-step"
        if self.extra:
            rec["extra"] = dump_json(self.extra)
        rec["complete"] = self.incomplete() is None
        return [(self.line_no, self.end_line, rec)]


# ------------------------------------------------------------------ vLLM offline example
# examples/offline_inference/spec_decode.py prints, by version: (v0.8/0.9) 'mean acceptance
# length: X.XX' then 'acceptance at token i:X.XX'; (later) 'total_num_output_tokens: N' (newest
# only), 'num_drafts: N', 'num_draft_tokens: N', 'num_accepted_tokens: N', 'mean acceptance
# length: X.XX' and 'acceptance at token i: X.XX'.  Keys are matched by name in any order; a
# key seen again, or a summary key after the per-position lines, starts the next run's record.
OFFLINE = re.compile(r"^\s*(?P<key>total_num_output_tokens|num_drafts|num_draft_tokens|"
                     r"num_accepted_tokens|mean acceptance length|acceptance at token "
                     r"(?P<pos>\d{1,6})):\s*(?P<val>\S*)\s*$", re.ASCII)
_OFFLINE_COLS = {"total_num_output_tokens": ("output_tokens", to_int),
                 "num_drafts": ("drafts", to_int), "num_draft_tokens": ("draft_tokens", to_int),
                 "num_accepted_tokens": ("accepted_tokens", to_int),
                 "mean acceptance length": ("accept_len", to_float)}
_COUNTS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


class OfflineCollector:
    """vLLM's offline example summary: its keys, matched by name (other output may be
    interleaved); a key seen twice starts the next run's record."""

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.end_line = line_no
        self.values: dict[str, float | int | None] = {}
        self.texts: dict[str, str] = {}
        self.pos: dict[int, float | None] = {}
        self.bad: list[tuple[int, str]] = []
        self.unterminated = False

    def add(self, m: re.Match, line_no: int) -> bool:
        """False when the line starts the next record (the caller closes this one): its key is
        already set, or it is a summary key after the per-position lines (they come last in
        every version)."""
        pos = m.group("pos")
        key = m.group("key")
        if (pos is not None and int(pos) in self.pos) or (pos is None and key in self.values) \
                or (pos is None and self.pos):
            return False
        conv = to_float if pos is not None else _OFFLINE_COLS[key][1]
        try:
            v = conv(m.group("val"))
        except ValueError:
            v = None
            self.bad.append((line_no, f"bad value {m.group('val')[:30]!r} for {key}"))
        if pos is not None:
            self.pos[int(pos)] = v
        else:
            self.values[key] = v
            self.texts[key] = m.group("val")
        self.end_line = line_no
        return True

    def incomplete(self) -> str | None:
        if "mean acceptance length" not in self.values:
            return "no mean acceptance length line"
        printed = [k for k in _COUNTS if k in self.values]
        if printed and len(printed) < len(_COUNTS):     # the early script prints no count
            return f"no {', '.join(k for k in _COUNTS if k not in printed)} line"
        return "last line has no newline" if self.unterminated else None

    def readable(self) -> bool:
        return any(v is not None for v in self.values.values()) or \
            any(v is not None for v in self.pos.values())

    def record(self) -> tuple[dict, list[str]]:
        v = self.values
        rec = base("vllm.spec_decode_example", "vllm", "run", "block",
                   **{_OFFLINE_COLS[k][0]: v.get(k) for k in OFFLINE_KEYS})
        if None not in self.pos.values():
            rec["per_position"] = positions([self.pos[i] for i in sorted(self.pos)])
        if rec.get("accept_len") is not None:
            rec["accept_len_def"] = "per-draft"
        rec["complete"] = self.incomplete() is None
        derive(rec)
        problems = []
        if not close(rec.get("accept_len"), rec.get("accept_len_derived"), 0.005 + 1e-9):
            problems.append(f"mean acceptance length {self.texts['mean acceptance length']} ≠ "
                            "1 + num_accepted_tokens / num_drafts")
        pos = [x for x in self.pos.values() if x is not None]
        if pos and len(pos) == len(self.pos) and rec.get("accept_len") is not None and not close(
                sum(pos), rec["accept_len"] - 1, 0.005 * len(pos) + 0.005):
            problems.append("Σ acceptance at token i ≠ mean acceptance length − 1")
        return rec, problems
