"""llama.cpp outputs (others.md §1, docs/formats-others.md §1): llama-server's per-request
draft-acceptance line in every form, the per-position line printed after it, the per-drafter
``statistics`` line of common/speculative.cpp, and the llama-speculative-simple summary.

Per-request line, by build (tools/server/server-context.cpp, ``server_slot::print_timings``):

* ``draft acceptance rate = %0.5f (%5d accepted / %5d generated)`` (before the server split;
  printed with SLT_CNT or after an SLT_INF "\\n", so on a line of its own);
* ``draft acceptance = %0.5f (%5d accepted / %5d generated)`` (SLT_INF: behind
  ``slot print_timing: id %2d | task %d | ``);
* PR #24536 (2026-06): ``…, mean acceptance length = %5.2f, acceptance rate per position =
  (…)``;
* later: ``…, mean len = %5.2f`` and, at trace level, a separate ``     acc per pos = (…)``
  line.

Before the draft-acceptance line the same function prints the request's timings (commit
0c1e5709, tools/server/server-context.cpp lines 612-626, each behind the slot prefix; older builds
print the first three with one SLT_INF, so only a bare prefix line precedes them):

    prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)
           eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)
          total time = %10.2f ms / %5d tokens
       graphs reused = %10d

A ``TimingBlock`` reads them with the draft-acceptance (and ``acc per pos``) lines that follow for
the same slot and task as ONE request row: its tokens ÷ eval time is the per-stream rate
(analysis/llamacpp.py).  The 'processing task' / 'stop processing' lines of the slots (lines 1810
and 518) are followed to say how many requests ran when each finished (``concurrency``).

"generated" counts draft tokens proposed (``n_draft_total``); "mean len" is
1 + accepted / verification steps (``n_draft_verif_steps``, one per draft), bonus included; the
per-position values are accepted-at-position-i / verification steps.  A router
(``llama-server --models-dir``) forwards its children's lines behind ``[%5d] `` (the child's
port): every pattern here is unanchored.
"""
from __future__ import annotations

import math
import re

from ._common import (Block, Parsed, base, close, derive, dump_json, not_a_record, positions,
                      ratio)
from .numbers import Reader, to_float, to_floats, to_int, to_int32

KINDS = ("llama_timing", "llama_slot", "llama_cfg", "llama_req", "llama_pos", "llama_stats",
         "llama_simple", "llama_depth")
_LOG_PREFIX = rb"(?:\d+\.\d{2}\.\d{3}\.\d{3} [IWEDT] )?"      # common/log.cpp's --log-prefix
MARKER_TEXT = {
    "llama_timing": rb"prompt eval time\s*=\s*[^\n/]*/\s*\S+\s+tokens",
    "llama_slot": rb"\|\s*(?:processing task|stop processing)",
    "llama_cfg": rb"load_model: (?:loading model '|initializing, n_slots\s*=)|"
                 rb"loading draft model '|adding speculative implementation '|"
                 rb"- n_max=\d+, n_min=",
    "llama_req": rb"draft acceptance(?: rate)?\s*=",
    "llama_pos": rb"acc per pos\s*=\s*\(",
    "llama_stats": rb"#gen drafts\s*=",
    "llama_depth": rb"adaptive draft depth seq ",
    "llama_simple": rb"^[ \t]*" + _LOG_PREFIX + rb"(?:n_draft|n_predict|n_drafted|n_accept|accept)"
                    rb"[ \t]*=[ \t]*[^\s=]+[ \t]*\r?$",
}
SNIFF_LITERALS = {
    "llama_timing": (b"prompt eval time",),
    "llama_slot": (b"processing task", b"stop processing"),
    "llama_cfg": (b"load_model: ", b"loading draft model '", b"adding speculative implementation '",
                  b"- n_max="),
    "llama_req": (b"draft acceptance",),
    "llama_pos": (b"acc per pos",),
    "llama_depth": (b"adaptive draft depth seq ",),
    # ('accept' only as its marker has it, before blanks and '=': every SGLang decode line
    # prints 'accept len:', and the regex then ran over every sniffed head)
    "llama_simple": (b"n_draft", b"n_predict", b"accept=", b"accept =", b"accept\t",
                     b"accept  ", b"accept \t"),
}
TOOL, ENGINE = "llama.cpp", "llama.cpp"

# ------------------------------------------------------------------ per-request line
# each field counts only when the text that follows it was printed too (a line cut inside a
# number does not give a wrong number)
LLAMA_REQ = re.compile(
    r"draft acceptance(?P<old> rate)?\s*=\s*"
    r"(?:(?P<rate>[^\s(]+)\s*\("
    r"(?:\s*(?P<acc>[^\s/()]+)\s+accepted\s*/"
    r"(?:\s*(?P<gen>[^\s/()]+)\s+generated\s*\)(?P<tail>.*))?)?)?", re.ASCII)
_MEAN = re.compile(r"\s*,\s*mean (?:acceptance length|len)\s*=\s*(?P<mal>[^\s,]*)(?P<rest>.*)",
                   re.ASCII)
_PER_POS = re.compile(r"\s*,\s*acceptance rate per position\s*=\s*\((?P<pos>[^)]*)(?P<shut>\))?",
                      re.ASCII)
_PORT = re.compile(r"^\s*\[\s*(\d+)\]", re.ASCII)
_SLOT = re.compile(r"\bid\s+(\d+)\s*\|\s*task\s+(-?\d+)\s*\|", re.ASCII)


def _who(line: str, at: int) -> tuple:
    """(router port, slot id, task id) of the prefix before ``at`` (None where not printed)."""
    head = line[:at]
    p, s = _PORT.search(head), _SLOT.search(head)
    return (p.group(1) if p else None,) + (s.groups() if s else (None, None))


def parse_request(line: str) -> Parsed:
    m = LLAMA_REQ.search(line)
    if m is None:
        return not_a_record()
    r = Reader()
    rate = r(m["rate"], to_float, "draft acceptance")
    acc = r(m["acc"], to_int, "accepted")
    gen = r(m["gen"], to_int, "generated")
    mal = pos = None
    cut = None
    if m["rate"] is None:
        cut = "no value after 'draft acceptance ='"
    elif m["acc"] is None:
        cut = "no 'N accepted /'"
    elif m["gen"] is None:
        cut = "no 'N generated)'"
    else:
        mm = _MEAN.match(m["tail"])
        if mm is not None:
            if not mm["mal"]:
                cut = "no value after 'mean len ='"
            else:
                mal = r(mm["mal"], to_float, "mean acceptance length")
                pm = _PER_POS.match(mm["rest"])
                if pm is not None:
                    if pm["shut"] is None:
                        cut = "per-position list not closed"
                    else:
                        pos = r.floats(pm["pos"], "acceptance rate per position")
    if rate is None and acc is None and gen is None:
        if cut and not r.bad:
            return Parsed(None, [f"cut short before its first value ({cut})"])
        return Parsed(None, [f"no value could be read ({'; '.join(r.bad)})"])
    rec = base(TOOL, ENGINE, "request", "line", accept_len=mal,
               accept_len_def="per-draft" if mal is not None else None,
               acceptance_rate=rate, accepted_tokens=acc, draft_tokens=gen,
               per_position=positions(pos) if pos else None)
    derive(rec)
    if mal is not None:
        rec["_mal_text"] = mm["mal"]
        set_steps(rec, pos)
    problems = []
    if not close(rate, ratio(acc, gen), 6e-6):
        problems.append(f"draft acceptance {m['rate']} ≠ {acc}/{gen}")
    if pos and mal is not None and not close(sum(pos), mal - 1, 0.0005 * len(pos) + 0.005):
        problems.append(f"Σ per-position rates {sum(pos):.3f} ≠ mean acceptance length − 1")
    who = _who(line, m.start())
    if any(who):
        rec["_who"] = who
    return Parsed(rec, problems, r.bad, cut)


ACC_PER_POS = re.compile(r"acc per pos\s*=\s*\((?P<pos>[^)]*)(?P<shut>\))?", re.ASCII)


def verify_steps(acc: int | None, mal_text: str | None, drafted: int | None = None,
                 pos: list[float] | None = None) -> int | None:
    """A request's verification steps s, read back from its printed mean len = 1 + acc / s
    (``server_slot::print_timings``, ``%5.2f``): the integer s that prints as ``mal_text`` and,
    where printed, whose per-position counts n_i (n_i / s with three decimals, Σ n_i = acc) print
    as ``pos``; of several, the one nearest acc / (mean len − 1).  s ≤ drafted (a step verifies
    at least one draft token).  None when nothing was accepted (mean len 1.00 fits every s) or no
    integer fits (the line is not what the server printed)."""
    if not acc or acc <= 0 or not mal_text:
        return None
    if pos and not all(0.0 <= p <= 1.0 for p in pos):
        pos = None                   # not fractions: no constraint from them
    try:
        mal = float(mal_text)
    except ValueError:
        return None
    dec = len(mal_text.strip().split(".")[1]) if "." in mal_text else 0
    half = 0.5 * 10.0 ** -dec
    if not math.isfinite(mal) or mal - 1 + half <= 0:
        return None
    lo = max(1, math.ceil(acc / (mal - 1 + half) - 1e-9))
    hi = math.floor(acc / (mal - 1 - half) + 1e-9) if mal - 1 - half > 0 else lo + 100_000
    if drafted:
        hi = min(hi, drafted)
    want = mal_text.strip()

    def fits(s: int) -> bool:
        if f"{1 + acc / s:.{dec}f}" != want:
            return False
        if pos:
            n = [round(p * s) for p in pos]
            if sum(n) != acc or any(f"{k / s:.3f}" != f"{p:.3f}" for k, p in zip(n, pos)):
                return False
        return True
    if hi < lo or hi - lo > 100_000:
        return None
    fit = [s for s in range(lo, hi + 1) if fits(s)]
    if not fit:
        return None
    guess = acc / (mal - 1) if mal > 1 else float(hi)
    return min(fit, key=lambda s: (abs(s - guess), s))


def set_steps(rec: dict, pos: list[float] | None = None) -> None:
    """``steps`` and ``step_tokens`` (= steps + accepted: τ_r = 1 + accepted / steps, the mean
    len) of a per-request row, from its printed mean len (verify_steps)."""
    args = (rec.get("accepted_tokens"), rec.get("_mal_text"), rec.get("draft_tokens"))
    s = verify_steps(*args, pos) if pos else None
    s = s if s is not None else verify_steps(*args)
    if s is not None:
        rec["steps"] = s
        rec["step_tokens"] = s + rec["accepted_tokens"]
    else:
        rec.pop("steps", None)
        rec.pop("step_tokens", None)


def parse_positions(line: str) -> Parsed:
    """The trace line ``acc per pos = (…)`` printed after a 'mean len' request line.  Alone it
    is no record: the scanner attaches it to the request line before it."""
    m = ACC_PER_POS.search(line)
    if m is None:
        return not_a_record()
    return Parsed(None, ["'acc per pos' line without the 'draft acceptance … mean len' line "
                         "of its request before it"])


class RequestBlock(Block):
    """A per-request line of the 'mean len' form and the ``acc per pos`` line that may follow
    it (same router port, slot and task)."""

    kind = "llama_req"
    name = "llama.cpp request line"

    def __init__(self, line_no: int, parsed: Parsed) -> None:
        super().__init__(line_no)
        self.parsed = parsed

    def take(self, line: str) -> str:
        m = ACC_PER_POS.search(line) if "acc per pos" in line else None
        rec = self.parsed.record
        if m is None or _who(line, m.start()) != rec.get("_who", (None, None, None)):
            return "reject"
        if m["shut"] is None:
            self.bad.append((self.end_line, "'acc per pos' list not closed (cut short?)"))
            return "end"
        try:
            pos = to_floats(m["pos"])
        except ValueError:
            self.bad.append((self.end_line,
                             f"bad value {m['pos'].strip()[:30]!r} for acc per pos"))
            return "end"
        rec["per_position"] = positions(pos)
        set_steps(rec, pos)
        mal = rec.get("accept_len")
        if pos and mal is not None and not close(sum(pos), mal - 1, 0.0005 * len(pos) + 0.005):
            self.parsed.problems.append(f"Σ acc per pos {sum(pos):.3f} ≠ mean len − 1")
        return "end"

    def records(self):
        return [(self.line_no, self.end_line, self.parsed.record)]


# ------------------------------------------------------------------ per-request timings
# tools/server/server-context.cpp (commit 0c1e5709) server_slot::print_timings, lines 612-626:
#   SLT_INF("prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per
#            second)")
#   SLT_INF("       eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per
#            second)")
#   SLT_INF("      total time = %10.2f ms / %5d tokens")
#   SLT_INF("   graphs reused = %10d")
# eval time = t_gen_last − t_prompt_last (first output token to last); its tokens per second =
# (n_gen − 1) / eval time there (server-common.h n_gen_tps: the first token comes from the prompt
# pass), n_gen / eval time in older builds.
_TIME = re.compile(r"(?P<what>prompt eval|eval|total) time\s*=\s*(?P<ms>[^\s/]+)\s*ms\s*/"
                   r"\s*(?P<n>[^\s(]+)\s+tokens(?P<tail>\s*\(\s*(?P<per>\S+)\s*ms per token,"
                   r"\s*(?P<tps>[^\s)]+)\s*tokens per second\s*\))?", re.ASCII)
_GRAPHS = re.compile(r"graphs reused\s*=\s*(?P<n>\S+)", re.ASCII)


def is_timing_line(line: str) -> bool:
    """Whether a line the ``llama_timing`` marker matched holds the times TimingBlock reads."""
    return _TIME.search(line) is not None
SLOT_EVENT = re.compile(r"\|\s*(?P<what>processing task|stop processing)", re.ASCII)
_BARE = re.compile(r"\bid\s+\d+\s*\|\s*task\s+-?\d+\s*\|\s*$", re.ASCII)


def decode_tokens(n_gen: int | None, eval_ms: float | None, tps: float | None) -> int | None:
    """The tokens the printed rate divides by the eval time: n_gen − 1 (this build) or n_gen
    (older builds), whichever tps × eval_ms / 1000 gives within the printed precision (two
    decimals of each); None when neither does."""
    if n_gen is None or eval_ms is None or tps is None:
        return None
    if tps == 0:
        return max(n_gen - 1, 0) if n_gen <= 1 else None
    x = tps * eval_ms / 1000.0
    tol = 0.005 * eval_ms / 1000.0 + 0.005 * tps / 1000.0 + 1e-6
    for c in (n_gen - 1, n_gen):
        if c >= 0 and abs(x - c) <= tol:
            return c
    return None


class TimingBlock(Block):
    """One finished request of llama-server: its ``prompt eval time`` / ``eval time`` / ``total
    time`` / ``graphs reused`` lines and the ``draft acceptance`` (and ``acc per pos``) lines
    printed after them for the same slot and task, as one row (scope 'request', format
    'block').  Lines without a slot prefix are taken too: older builds print the three time
    lines with one SLT_INF, behind a bare prefix line."""

    kind = "llama_timing"
    name = "llama-server request timings"

    def __init__(self, line_no: int, line: str, concurrency: int | None = None) -> None:
        super().__init__(line_no)
        m = _TIME.search(line)
        self.who = _who(line, m.start())
        self.times: dict[str, dict] = {}
        self.lines: dict[str, int] = {}
        self.graphs: int | None = None
        self.req: Parsed | None = None
        self.req_line: int | None = None
        self.pos_seen = False
        self.identity: list[str] = []
        self.cut: str | None = None
        self.concurrency = concurrency
        self._time(m, line_no)

    def _time(self, m: re.Match, line_no: int) -> None:
        what = m["what"]
        t = {"ms": self.read(m["ms"], to_float, f"{what} time ms"),
             "n": self.read(m["n"], to_int, f"{what} time tokens")}
        if what != "total":
            if m["tail"] is None:
                self.cut = self.cut or f"'{what} time' line without its rates"
            else:
                t["tps"] = self.read(m["tps"], to_float, f"{what} time tokens per second")
        self.times[what] = t
        self.lines[what] = line_no

    def _same(self, line: str, at: int) -> bool:
        """The line is this request's: the same router port, and the same slot and task, or
        no slot prefix on it, or none known yet (older builds: then it is taken from the line)."""
        w = _who(line, at)
        if w == self.who or (w[1] is None and w[0] == self.who[0]):
            return True
        if self.who[1] is None and w[0] == self.who[0]:
            self.who = w
            return True
        return False

    def take(self, line: str) -> str:
        m = _TIME.search(line)
        if m is not None:
            if m["what"] == "prompt eval" or m["what"] in self.times or \
                    not self._same(line, m.start()) or self.req is not None:
                return "reject"
            self._time(m, self.end_line)
            return "take"
        g = _GRAPHS.search(line)
        if g is not None and self.graphs is None and self.req is None and \
                self._same(line, g.start()):
            self.graphs = self.read(g["n"], to_int, "graphs reused")
            return "take"
        if _BARE.search(line) and self._same(line, len(line)):
            return "take"                 # older builds: the prefix before a continuation line
        d = LLAMA_REQ.search(line)
        if d is not None and self.req is None and self._same(line, d.start()):
            res = parse_request(line)
            if res.record is None:
                self.identity.extend(res.problems)
                return "take"
            self.req, self.req_line = res, self.end_line
            for b in res.bad:
                self.bad.append((self.end_line, b))
            self.identity.extend(res.problems)
            if res.cut:
                self.cut = self.cut or res.cut
            return "take"
        a = ACC_PER_POS.search(line) if "acc per pos" in line else None
        if a is not None and self.req is not None and not self.pos_seen and \
                self._same(line, a.start()):
            self.pos_seen = True
            rec = self.req.record
            if a["shut"] is None:
                self.bad.append((self.end_line, "'acc per pos' list not closed (cut short?)"))
                return "end"
            try:
                pos = to_floats(a["pos"])
            except ValueError:
                self.bad.append((self.end_line,
                                 f"bad value {a['pos'].strip()[:30]!r} for acc per pos"))
                return "end"
            if pos and "per_position" not in rec:
                rec["per_position"] = positions(pos)
                set_steps(rec, pos)
                mal = rec.get("accept_len")
                if mal is not None and not close(sum(pos), mal - 1, 0.0005 * len(pos) + 0.005):
                    self.identity.append(f"Σ acc per pos {sum(pos):.3f} ≠ mean len − 1")
            return "end"
        return "reject"

    def incomplete(self) -> str | None:
        missing = [w for w in ("eval", "total") if w not in self.times]
        if missing:
            return f"no '{' and '.join(m + ' time' for m in missing)}' line"
        if self.cut:
            return self.cut
        return "last line has no newline" if self.unterminated else None

    def identity_problems(self) -> list[str]:
        return self.identity

    def records(self):
        p, e, t = (self.times.get(w, {}) for w in ("prompt eval", "eval", "total"))
        rec = base(TOOL, ENGINE, "request", "block", prompt_ms=p.get("ms"),
                   prompt_tokens=p.get("n"), eval_ms=e.get("ms"), output_tokens=e.get("n"),
                   per_request_tok_s=e.get("tps"), concurrency=self.concurrency)
        if self.who[1] is not None:
            rec["slot_id"], rec["task_id"] = int(self.who[1]), int(self.who[2])
            rec["label"] = f"task {self.who[2]}"        # the server's id of the request
        dec = decode_tokens(e.get("n"), e.get("ms"), e.get("tps"))
        if dec is not None:
            rec["decode_tokens"] = dec
        elif e.get("n") is not None and e.get("tps") is not None and e.get("ms") is not None:
            self.identity.append(f"eval time: {e['tps']} tokens per second is neither "
                                 f"{e['n']} nor {e['n'] - 1} tokens in {e['ms']} ms")
        if t.get("ms") is not None and p.get("ms") is not None and e.get("ms") is not None \
                and not close(t["ms"], p["ms"] + e["ms"], 0.0151):
            self.identity.append(f"total time {t['ms']} ms ≠ prompt eval + eval time")
        if None not in (t.get("n"), p.get("n"), e.get("n")) and t["n"] != p["n"] + e["n"]:
            self.identity.append(f"total time's {t['n']} tokens ≠ prompt + eval tokens")
        if self.graphs is not None:
            rec["extra"] = dump_json({"graphs_reused": self.graphs})
        if self.req is not None:
            r = self.req.record
            for k in ("accept_len", "accept_len_def", "acceptance_rate", "accepted_tokens",
                      "draft_tokens", "per_position", "accept_rate_derived", "steps",
                      "step_tokens"):
                if r.get(k) is not None:
                    rec[k] = r[k]
        if not any(v is not None for v in (p.get("ms"), e.get("ms"), e.get("n"))):
            return []
        return [(self.line_no, self.end_line, rec)]

    def unread(self) -> str | None:
        return "no value could be read (" + "; ".join(m for _, m in self.bad[:3]) + ")"


# ------------------------------------------------------------------ start-up lines
# what the run was: tools/server/server-context.cpp (0c1e5709) SRV_INF("loading model '%s'")
# (line 1023) and SRV_INF("initializing, n_slots = %d, n_ctx_slot = %d, …") (line 1231);
# common/speculative.cpp LOG_INF("%s: loading draft model '%s'") (line 2540) and, at trace level,
# SPC_TRC("adding speculative implementation '%s'") with SPC_TRC("- n_max=%d, n_min=%d,
# p_min=%f") (lines 203-204).  Each is a row of scope 'config' (analysis/llamacpp.py merges them).
_CFG = re.compile(r"load_model: loading model '(?P<model>[^']*)'|"
                  r"loading draft model '(?P<draft>[^']*)'|"
                  r"initializing, n_slots\s*=\s*(?P<slots>\S+?),?\s*"
                  r"(?:n_ctx_slot\s*=\s*(?P<ctx>\S+?),)?|"
                  r"adding speculative implementation '(?P<impl>[^']*)'|"
                  r"- n_max=(?P<nmax>\d+), n_min=(?P<nmin>-?\d+)(?:, p_min=(?P<pmin>[^\s,]+))?",
                  re.ASCII)


def parse_config(line: str) -> Parsed:
    m = _CFG.search(line)
    if m is None:
        return not_a_record()
    r = Reader()
    extra = {}
    kw: dict = {}
    if m["model"] is not None:
        extra["model"] = m["model"]
    elif m["draft"] is not None:
        extra["draft_model"] = m["draft"]
    elif m["slots"] is not None:
        kw["batch_size"] = r(m["slots"], to_int32, "n_slots")
        if m["ctx"] is not None:
            extra["n_ctx_slot"] = r(m["ctx"], to_int, "n_ctx_slot")
    elif m["impl"] is not None:
        kw["label"] = m["impl"]
    else:
        kw["max_draft_len"] = r(m["nmax"], to_int32, "n_max")
        extra["n_min"] = r(m["nmin"], to_int32, "n_min")
        if m["pmin"] is not None:
            extra["p_min"] = r(m["pmin"], to_float, "p_min")
    extra = {k: v for k, v in extra.items() if v is not None}
    if not extra and all(v is None for v in kw.values()):
        return Parsed(None, ["llama-server start-up line: no value could be read (" +
                             "; ".join(r.bad) + ")"])
    rec = base(TOOL, ENGINE, "config", "line", extra=dump_json(extra), **kw)
    return Parsed(rec, [], r.bad)


# ------------------------------------------------------------------ statistics line
# common/speculative.cpp common_speculative_print_stats: "statistics %16s: #calls(b,g,a) =
# %4zu %6zu %6zu, #gen drafts = %6zu, #acc drafts = %5zu, #gen tokens = %6zu, #acc tokens =
# %5zu" + (n_call_accept > 0: ", #mean acc len = %.2f, #acc rate/pos = (%.3f, …)") +
# ", dur(b,g,a) = %.3f, %.3f, %.3f ms"; older builds print the counts only (no mean / rate/pos)
_VAL = r"(?P<v>[^\s,]*)(?P<end>\s*(?:,|$))"
_STATS_KEYS = {k: re.compile(p, re.ASCII) for k, p in (
    ("drafts", r"#gen drafts\s*=\s*" + _VAL),
    ("accepted_drafts", r"#acc drafts\s*=\s*" + _VAL),
    ("draft_tokens", r"#gen tokens\s*=\s*" + _VAL),
    ("accepted_tokens", r"#acc tokens\s*=\s*" + _VAL),
    ("mal", r"#mean acc len\s*=\s*" + _VAL))}
_IMPL = re.compile(r"statistics\s+(\S+?):\s*#", re.ASCII)
_CALLS = re.compile(r"#calls\(b,g,a\)\s*=\s*(?P<v>[^#]*?)\s*(?P<end>,\s*#|,\s*dur\(|$)", re.ASCII)
_RATE_POS = re.compile(r"#acc rate/pos\s*=\s*\((?P<v>[^)]*)(?P<end>\))?", re.ASCII)
_DUR = re.compile(r"dur\((?P<names>[a-z,]+)\)\s*=\s*(?P<v>[^m]*?)\s*(?:(?P<end>ms)|$)", re.ASCII)


# the renderings printed by the builds above, in one pass (the per-key search below reads any
# other order, spacing or cut)
_N = r"([0-9]+)"
_F = r"([0-9]+\.[0-9]+)"
_STATS_FULL = re.compile(
    r"statistics\s+(\S+?):\s*#calls\(b,g,a\)\s*=\s*" + _N + r",?\s+" + _N + r",?\s+" + _N +
    r",\s*#gen drafts\s*=\s*" + _N + r",\s*#acc drafts\s*=\s*" + _N + r",\s*#gen tokens\s*=\s*" +
    _N + r",\s*#acc tokens\s*=\s*" + _N +
    r"(?:,\s*#mean acc len\s*=\s*" + _F + r",\s*#acc rate/pos\s*=\s*\(([0-9., ]*)\))?"
    r"(?:,\s*dur\(b,g,a\)\s*=\s*(" + _F[1:-1] + r",\s*" + _F[1:-1] + r",\s*" + _F[1:-1] +
    r")\s*ms)?\s*$", re.ASCII)


def _stats_texts(line: str) -> dict | None:
    """The printed text of every field of a statistics line (None: not one), with 'cut'."""
    m = _STATS_FULL.search(line)
    if m is not None:
        g = m.groups()
        return {"impl": g[0], "calls": list(g[1:4]), "drafts": g[4], "accepted_drafts": g[5],
                "draft_tokens": g[6], "accepted_tokens": g[7], "mal": g[8], "pos": g[9],
                "dur": ("b,g,a", g[10]) if g[10] else None, "cut": None}
    got = {k: p.search(line) for k, p in _STATS_KEYS.items()}
    if got["drafts"] is None:
        return None
    stripped = line.rstrip()
    whole = got["accepted_tokens"] is not None and bool(got["accepted_tokens"]["v"])
    out: dict = {"cut": None if whole else "no '#acc tokens' field"}
    for k, m in got.items():
        # a value at the very end of a cut line may have been shortened by the cut
        ok = m is not None and m["v"] and not (out["cut"] and m.end("v") >= len(stripped))
        out[k] = m["v"] if ok else None
    impl = _IMPL.search(line)
    out["impl"] = impl.group(1) if impl else None
    m = _CALLS.search(line)
    out["calls"] = [p for p in re.split(r"[,\s]+", m["v"]) if p] \
        if m is not None and m["v"] and (m["end"] or not out["cut"]) else []
    out["pos"] = None
    m = _RATE_POS.search(line)
    if m is not None:
        if m["end"] is None:
            out["cut"] = out["cut"] or "#acc rate/pos list not closed"
        else:
            out["pos"] = m["v"]
    out["dur"] = None
    m = _DUR.search(line)
    if m is not None:
        if m["end"] is None:
            out["cut"] = out["cut"] or "no 'ms' after dur(…)"
        else:
            out["dur"] = (m["names"], m["v"])
    return out


def parse_stats(line: str) -> Parsed:
    t = _stats_texts(line)
    if t is None:
        return not_a_record()
    r = Reader()
    cut = t["cut"]
    drafts = r(t["drafts"], to_int, "#gen drafts")
    acc_drafts = r(t["accepted_drafts"], to_int, "#acc drafts")
    gen_tokens = r(t["draft_tokens"], to_int, "#gen tokens")
    acc_tokens = r(t["accepted_tokens"], to_int, "#acc tokens")
    mal = r(t["mal"], to_float, "#mean acc len")
    calls = [r(p, to_int, "#calls(b,g,a)") for p in t["calls"]]
    if calls and len(calls) != 3:
        r.bad.append(f"#calls(b,g,a) = {' '.join(t['calls'])[:30]!r} is not three counts")
        calls = []
    pos = r.floats(t["pos"], "#acc rate/pos")
    dur, dur_extra = {}, {}
    if t["dur"] is not None:
        names_text, vals_text = t["dur"]
        vals = r.floats(vals_text, "dur(" + names_text + ")") or []
        names = names_text.split(",")
        if vals and len(vals) != len(names):
            r.bad.append(f"dur({names_text}) does not hold {len(names)} values")
        elif vals:
            for n, v in zip(names, vals):
                (dur if n in ("b", "g", "a") else dur_extra)[n] = v
    if all(v is None for v in (drafts, acc_drafts, gen_tokens, acc_tokens, mal, *calls)):
        why = "; ".join(r.bad) or cut or "no value"
        return Parsed(None, [f"llama.cpp statistics line: no count could be read ({why})"])
    rec = base(TOOL, ENGINE, "aggregate", "line", label=t["impl"],
               accept_len=mal, accept_len_def="per-draft" if mal is not None else None,
               drafts=drafts, accepted_drafts=acc_drafts, draft_tokens=gen_tokens,
               accepted_tokens=acc_tokens, per_position=positions(pos) if pos else None)
    for suffix, v in zip("bga", calls):
        if v is not None:
            rec[f"calls_{suffix}"] = v
    for n, v in dur.items():
        rec[f"dur_{n}_ms"] = v
    if dur_extra:
        rec["extra"] = dump_json({f"dur_{n}_ms": v for n, v in dur_extra.items()})
    derive(rec)
    # the source divides by n_call_accept (#calls a); drafts where that is not printed
    steps = rec.get("calls_a") or drafts
    problems = []
    if mal is not None and steps and acc_tokens is not None and \
            not close(mal, 1 + acc_tokens / steps, 0.005 + 1e-9):
        problems.append(f"#mean acc len {t['mal']} ≠ 1 + #acc tokens / #calls a "
                        f"({1 + acc_tokens / steps:.4f})")
    if pos and acc_drafts is not None and steps and \
            not close(pos[0], acc_drafts / steps, 0.0005 + 1e-9):
        problems.append(f"#acc rate/pos[0] {pos[0]} ≠ #acc drafts / #calls a")
    if pos and mal is not None and not close(sum(pos), mal - 1, 0.0005 * len(pos) + 0.005):
        problems.append(f"Σ #acc rate/pos {sum(pos):.3f} ≠ #mean acc len − 1")
    return Parsed(rec, problems, r.bad, cut)


# ------------------------------------------------------------------ llama-speculative-simple
LLAMA_SIMPLE = re.compile(r"^\s*(?:\d+\.\d{2}\.\d{3}\.\d{3} [IWEDT] )?(?P<key>n_\w+|accept)\s*=\s*"
                          r"(?P<val>[^\s=]+?)(?P<pct>%?)\s*$", re.ASCII)
SIMPLE_KEYS = ("n_draft", "n_predict", "n_drafted", "n_accept", "accept")
_SIMPLE_COLS = {"n_draft": ("max_draft_len", to_int32), "n_predict": ("output_tokens", to_int),
                "n_drafted": ("draft_tokens", to_int), "n_accept": ("accepted_tokens", to_int),
                "accept": ("acceptance_rate", to_float)}


class SimpleBlock(Block):
    """llama-speculative-simple's 'key = value' summary lines (examples/speculative-simple:
    ``n_draft   = %d`` … ``accept    = %.3f%%``, where accept = 100 × n_accept / n_drafted)."""

    kind = "llama_simple"
    name = "llama-speculative-simple summary"

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.values: dict[str, float | int | None] = {}
        self.texts: dict[str, str] = {}
        self.identity: list[str] = []

    def take(self, line: str) -> str:
        m = LLAMA_SIMPLE.match(line)
        if m is None or m.group("key") not in SIMPLE_KEYS or m.group("key") in self.values:
            return "reject"
        key = m.group("key")
        col, conv = _SIMPLE_COLS[key]
        self.texts[key] = m.group("val")
        self.values[key] = self.read(m.group("val"), conv, key)
        return "end" if key == "accept" else "take"

    def has_record(self) -> bool:
        """A summary is the lines n_drafted / n_accept / accept (n_draft and n_predict alone
        are printed by other programs too), with a value that could be read."""
        return any(k in self.values for k in SIMPLE_KEYS[2:]) and \
            any(v is not None for v in self.values.values())

    def unread(self) -> str | None:
        if any(k in self.values for k in SIMPLE_KEYS[2:]) and not self.has_record():
            return "no value could be read (" + "; ".join(m for _, m in self.bad[:3]) + ")"
        return None

    def incomplete(self) -> str | None:
        missing = [k for k in SIMPLE_KEYS if k not in self.values]
        if missing:
            return f"no {', '.join(missing)} line"
        return "last line has no newline" if self.unterminated else None

    def identity_problems(self) -> list[str]:
        return self.identity

    def records(self):
        if not self.has_record():
            return []
        v = self.values
        rec = base("llama-speculative-simple", ENGINE, "run", "block",
                   **{_SIMPLE_COLS[k][0]: v.get(k) for k in SIMPLE_KEYS if k != "accept"})
        if v.get("accept") is not None:
            rec["acceptance_rate"] = v["accept"] / 100
        derive(rec)
        if not close(rec.get("acceptance_rate"), rec.get("accept_rate_derived"), 5e-6 + 1e-12):
            self.identity = [f"accept {self.texts['accept']}% ≠ n_accept / n_drafted × 100"]
        rec["complete"] = self.incomplete() is None
        return [(self.line_no, self.end_line, rec)]


# ------------------------------------------------------------------ adaptive draft depth
# --spec-type draft-mtp-adaptive: common/speculative.cpp (ggml-org/llama.cpp 001d906a),
# common_speculative_impl_draft_mtp::accept, at debug level (-lv 4): SPC_DBG("adaptive draft
# depth seq %d: %d -> %d (n_draft=%d, n_accepted=%d)\n", …) behind "spec %12.*s: " (the
# function's name, 'accept'), printed only when the depth changes; the controller is
# common/speculative-adaptive.h (a staircase: full accepts climb, a partial one steps back)
LLAMA_DEPTH = re.compile(r"adaptive draft depth seq (?P<seq>\S+): (?P<a>\S+) -> (?P<b>[^\s(]+)"
                         r"(?: \((?P<kv>[^)]*)\))?")
_DEPTH_KEYS = {"n_draft": "draft_tokens", "n_accepted": "accepted_tokens"}


def parse_depth(line: str) -> Parsed:
    """A depth transition of the adaptive MTP drafter: a 'depth' row (label 'seq N',
    max_draft_len = the depth from here on, stats = the depth before; the round that caused
    it: its drafted and accepted tokens)."""
    m = LLAMA_DEPTH.search(line)
    if m is None:
        return Parsed(None, ["adaptive draft depth line not understood"])
    r = Reader()
    seq = r(m["seq"], to_int32, "seq")
    a, b = r(m["a"], to_int32, "depth before"), r(m["b"], to_int32, "depth after")
    kv = dict(p.split("=", 1) for p in (m["kv"] or "").split(", ") if "=" in p)
    extra = {col: r(kv.get(k), to_int, k) for k, col in _DEPTH_KEYS.items() if k in kv}
    if a is None or b is None:
        return Parsed(None, ["adaptive draft depth line without a readable depth: "
                             + "; ".join(r.bad)])
    problems = []
    nd, na = extra.get("draft_tokens"), extra.get("accepted_tokens")
    if nd is not None and na is not None and na > nd:
        problems.append(f"n_accepted {na} > n_draft {nd}")
    if not (0 <= a <= 1024 and 0 <= b <= 1024):
        problems.append(f"a draft depth of {max(a, b)} is beyond any drafter's")
    rec = base(TOOL, ENGINE, "depth", "line", label=f"seq {seq}" if seq is not None else None,
               max_draft_len=b, stats=dump_json({"depth_from": a, "depth_to": b}), **extra)
    return Parsed(rec, problems, r.bad, None if m["kv"] is not None else "no (n_draft=…) part")


LINE_PARSERS = {"llama_req": parse_request, "llama_pos": parse_positions,
                "llama_depth": parse_depth,
                "llama_stats": parse_stats, "llama_cfg": parse_config}
