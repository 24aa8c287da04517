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

"generated" counts draft tokens proposed (``n_draft_total``); "mean len" is
1 + accepted / verification steps (``n_draft_verif_steps``, one per draft), bonus included; the
per-position values are accepted-at-position-i / verification steps.  A router
(``llama-server --models-dir``) forwards its children's lines behind ``[%5d] `` (the child's
port): every pattern here is unanchored.
"""
from __future__ import annotations

import re

from ._common import (Block, Parsed, base, close, derive, dump_json, not_a_record, positions,
                      ratio)
from .numbers import Reader, to_float, to_floats, to_int, to_int32

KINDS = ("llama_req", "llama_pos", "llama_stats", "llama_simple")
_LOG_PREFIX = rb"(?:\d+\.\d{2}\.\d{3}\.\d{3} [IWEDT] )?"      # common/log.cpp's --log-prefix
MARKER_TEXT = {
    "llama_req": rb"draft acceptance(?: rate)?\s*=",
    "llama_pos": rb"acc per pos\s*=\s*\(",
    "llama_stats": rb"#gen drafts\s*=",
    "llama_simple": rb"^[ \t]*" + _LOG_PREFIX + rb"(?:n_draft|n_predict|n_drafted|n_accept|accept)"
                    rb"[ \t]*=[ \t]*[^\s=]+[ \t]*\r?$",
}
SNIFF_LITERALS = {
    "llama_req": (b"draft acceptance",),
    "llama_pos": (b"acc per pos",),
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
        mal = rec.get("accept_len")
        if pos and mal is not None and not close(sum(pos), mal - 1, 0.0005 * len(pos) + 0.005):
            self.parsed.problems.append(f"Σ acc per pos {sum(pos):.3f} ≠ mean len − 1")
        return "end"

    def records(self):
        return [(self.line_no, self.end_line, self.parsed.record)]


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


LINE_PARSERS = {"llama_req": parse_request, "llama_pos": parse_positions,
                "llama_stats": parse_stats}
