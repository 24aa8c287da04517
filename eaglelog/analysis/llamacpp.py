"""llama-server logs answered like SGLang and vLLM logs: per-stream rate, acceptance, break-even,
sweep and compare (issue 33 item 9; docs/formats-others.md §1.4).

llama-server prints, for every finished request, its timings and its draft acceptance
(``server_slot::print_timings``); parsers/llamacpp.py makes each of them ONE ``bench`` row of
scope 'request' (format 'block').  A request is the independent unit here:

* **per-stream rate** = Σ decode_tokens / Σ eval_ms over the requests — each request's own rate
  is the 'tokens per second' its eval-time line printed (decode_tokens / eval_ms, the tokens
  produced between its first and its last output token); pooled as a ratio of sums, so a request
  counts by its length.  The interval is stats.jackknife over the requests in finish order;
* **accept length** = 1 + Σ accepted / Σ verify steps: the server's 'mean len', pooled per
  verify step (each request's steps read back from its printed mean len, parsers/llamacpp.py
  ``verify_steps``; a request that accepted nothing counts its decode tokens as steps, an upper
  bound said in a note);
* **cycle** = accept length / per-stream rate: the time of one draft-and-verify step the two
  imply (Σ eval time / Σ verify steps when every decode step verifies a draft);
* **break-even** against ``--baseline-toks`` (a per-stream rate) or a baseline llama-server log
  run without a draft (its own per-stream rate, pooled the same way): speedup = rate / baseline
  rate = accept length × baseline step / cycle, break-even accept length = cycle / baseline
  step.  The run and the baseline are independent: their relative variances add
  (stats.combine).  The concurrency is matched: a baseline log that ran at another concurrency
  (the slots busy when each request finished, its median) is an invalid baseline.

The cumulative ``statistics`` lines (one per drafter after every request, counting since the
server started, across all slots) are differenced per drafter (``statistics_deltas``): a
line's increment over the previous line of the same drafter; a line whose counts fall (a
restarted server) starts over.  Their sum per drafter is the run's total (``statistics_totals``),
which the requests' own counters must add up to.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
from .._lazy import pd
from ..frame import empty_like
from ..model import ReleasedTable

from .. import stats
from ..errors import EaglelogError
from ..stats import Estimate
from .results import BreakevenResult, Metric, Run, SummaryResult, _scaled, verdict_of

TOOL = "llama.cpp"
COUNTS = ("calls_b", "calls_g", "calls_a", "drafts", "accepted_drafts", "draft_tokens",
          "accepted_tokens")


# ----------------------------------------------------------------------------- the rows

def _bench_of(log, source: str | None = None) -> pd.DataFrame:
    b = log.tables.get("bench")
    if b is None or not len(b):
        return pd.DataFrame() if b is None else empty_like(b)
    m = (b["tool"].astype(str) == TOOL).to_numpy()
    if source is not None:
        m = m & (b["source"].astype(str) == source).to_numpy()
    return b[m]


def request_rows(log, source: str | None = None) -> pd.DataFrame:
    """The requests llama-server printed timings for (scope 'request' with an eval time), of
    ``source`` (every input when None), in line order."""
    b = _bench_of(log, source)
    if not len(b) or "eval_ms" not in b.columns:
        return empty_like(b)
    m = (b["scope"].astype(str) == "request").to_numpy() & b["eval_ms"].notna().to_numpy()
    return b[m].sort_values("line_no", kind="stable")


def handles(log, source: str | None = None) -> bool:
    """Whether ``source`` (default: the first input) is a llama-server log this module answers:
    request timings and neither decode lines nor EAGLE3_PROF blocks."""
    source = source or log.sources[0].name
    if not len(request_rows(log, source)):
        return False
    for name in ("decode", "prof"):
        df = log.tables.get(name)
        if isinstance(df, ReleasedTable):
            # a single-use run let its decode lines go once its windows were made from them:
            # asked again (breakeven inside a summary), the answer is the one given before
            # the windows were made, when the lines were there
            return False
        if df is not None and len(df) and (df["source"].astype(str) == source).any():
            return False
    return True


def served(log) -> bool:
    """Whether every input of ``log`` that holds rows is a llama-server log with timings."""
    names = [i.name for i in log.sources if any(i.counts.values())]
    return bool(names) and all(handles(log, n) for n in names)


def config_of(log, source: str) -> dict:
    """The run's configuration from its start-up lines (scope 'config' rows), with the keys
    other engines use where they mean the same: model_path, speculative_draft_model_path,
    speculative_algorithm (the drafter, e.g. 'draft-simple'), then llama-server's own
    spec_draft_n_max / n_min / p_min (trace level only) and n_slots."""
    b = _bench_of(log, source)
    if not len(b):
        return {}
    c = b[(b["scope"].astype(str) == "config").to_numpy()].sort_values("line_no")
    cfg: dict = {}
    for r in c.to_dict("records"):
        ex = json.loads(r["extra"]) if isinstance(r.get("extra"), str) else {}
        if "model" in ex:
            cfg["model_path"] = ex["model"]
        if "draft_model" in ex:
            cfg["speculative_draft_model_path"] = ex["draft_model"]
        if isinstance(r.get("label"), str):
            cfg["speculative_algorithm"] = r["label"]
        if _ok(r.get("max_draft_len")):
            cfg["spec_draft_n_max"] = int(r["max_draft_len"])
            for k in ("n_min", "p_min"):
                if k in ex:
                    cfg[f"spec_draft_{k}"] = ex[k]
        if _ok(r.get("batch_size")):
            cfg["n_slots"] = int(r["batch_size"])
    return cfg


def _ok(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA


def _arr(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return df[col].to_numpy(dtype=float, na_value=np.nan)


# ----------------------------------------------------------------------------- statistics lines

def statistics_deltas(b: pd.DataFrame) -> pd.DataFrame:
    """The cumulative llama.cpp ``statistics`` rows of ``b`` (scope 'aggregate') as increments:
    per input and drafter (label), each line minus the line before it; the first line, and a
    line any of whose counts fell below the previous one, or with another number of
    per-position rates (a restarted server), counts whole (``restart`` True; ``segment``
    numbers the server lives).  Per-position rates become counts (rate × accept calls, the
    rates' denominator) before they are differenced.  Columns: source, line_no, label,
    restart, segment, the COUNTS, pos_counts (a list), and accept_len = 1 + Δ accepted /
    Δ accept calls."""
    cols = ["source", "line_no", "label", "restart", "segment", *COUNTS, "pos_counts",
            "accept_len"]
    if not len(b):
        return pd.DataFrame(columns=cols)
    a = b[(b["tool"].astype(str) == TOOL).to_numpy() &
          (b["scope"].astype(str) == "aggregate").to_numpy()].sort_values("line_no")
    out = []
    prev: dict = {}
    segs: dict = {}
    for r in a.to_dict("records"):
        key = (str(r["source"]), r.get("label") if isinstance(r.get("label"), str) else "")
        cur = {k: (int(r[k]) if _ok(r.get(k)) else None) for k in COUNTS}
        den = cur["calls_a"] if cur["calls_a"] is not None else cur["drafts"]
        pp = json.loads(r["per_position"]) if isinstance(r.get("per_position"), str) else []
        cur["pos_counts"] = [p * den for p in pp] if den else []
        last = prev.get(key)
        # a count that fell, or another number of positions (the drafter's n_max, fixed for a
        # server's life): a new server
        restart = last is None or any(
            cur[k] is not None and last[k] is not None and cur[k] < last[k] for k in COUNTS) \
            or (bool(pp) and last["n_pos"] not in (0, len(pp)))
        cur["n_pos"] = len(pp)
        seg = segs[key] = segs.get(key, -1) + (1 if restart else 0)
        d = {"source": key[0], "line_no": int(r["line_no"]), "label": key[1] or None,
             "restart": restart, "segment": seg}
        for k in COUNTS:
            v, w = cur[k], (None if restart or last is None else last[k])
            d[k] = v if restart else (v - w if v is not None and w is not None else None)
        lp = [] if restart or last is None else last["pos_counts"]
        n = max(len(cur["pos_counts"]), len(lp))
        d["pos_counts"] = [(cur["pos_counts"][i] if i < len(cur["pos_counts"]) else 0.0) -
                           (lp[i] if i < len(lp) else 0.0) for i in range(n)] \
            if cur["pos_counts"] else []
        steps = d["calls_a"] if d["calls_a"] is not None else d["drafts"]
        d["accept_len"] = 1 + d["accepted_tokens"] / steps \
            if steps and d["accepted_tokens"] is not None else math.nan
        out.append(d)
        prev[key] = cur
    return pd.DataFrame(out, columns=cols)


def statistics_totals(b: pd.DataFrame) -> list[dict]:
    """One dict per input, drafter and server life (``segment``: a restart starts the next;
    two servers, two configurations perhaps, are never pooled): the totals, Σ of the increments
    (= its last line), with lines (how many were differenced), first_line, last_line,
    accept_len = 1 + accepted / accept calls, acceptance_rate = accepted / drafted and
    per_position (pooled over the accept calls)."""
    d = statistics_deltas(b)
    out = []
    for (src, label, seg), g in d.groupby(["source", d["label"].fillna(""), "segment"],
                                          sort=False):
        t = {"source": src, "label": label or None, "segment": int(seg), "lines": len(g),
             "first_line": int(g["line_no"].min()), "last_line": int(g["line_no"].max())}
        for k in COUNTS:
            v = g[k]
            t[k] = int(v.sum()) if v.notna().all() else None
        steps = t["calls_a"] if t["calls_a"] is not None else t["drafts"]
        t["accept_len"] = 1 + t["accepted_tokens"] / steps if steps and \
            t["accepted_tokens"] is not None else None
        t["acceptance_rate"] = t["accepted_tokens"] / t["draft_tokens"] \
            if t["draft_tokens"] and t["accepted_tokens"] is not None else None
        n = max((len(p) for p in g["pos_counts"]), default=0)
        pos = [sum(p[i] for p in g["pos_counts"] if i < len(p)) for i in range(n)]
        t["per_position"] = [x / steps for x in pos] if steps and pos else None
        out.append(t)
    return out


def fold_statistics(b: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``b`` with its llama.cpp statistics rows folded: the cumulative line after every request
    is a running total, not a run of its own, so each input, drafter and server life keeps only
    its last line — the sum of the increments, as printed; and a note per folded drafter."""
    if not len(b) or "scope" not in b.columns:
        return b, []
    m = (b["tool"].astype(str) == TOOL).to_numpy() & \
        (b["scope"].astype(str) == "aggregate").to_numpy()
    if m.sum() < 2:
        return b, []
    notes, drop = [], set()
    d = statistics_deltas(b[m])
    for t in statistics_totals(b[m]):
        if t["lines"] < 2:
            continue
        g = d[(d["source"] == t["source"]).to_numpy() & (d["segment"] == t["segment"]).to_numpy()
              & (d["label"].fillna("") == (t["label"] or "")).to_numpy()]
        drop.update((t["source"], ln) for ln in g["line_no"] if ln != t["last_line"])
        notes.append(f"{t['source']}: {t['lines']} llama.cpp statistics lines of "
                     f"{t['label'] or 'the drafter'} (lines {t['first_line']}–{t['last_line']}) "
                     "count since the server started: differenced, their total (the last "
                     "line) is one whole-run row")
    if not drop:
        return b, notes
    keep = ~np.array([(str(s_), int(ln)) in drop for s_, ln in zip(b["source"], b["line_no"])],
                     dtype=bool)
    return b[keep], notes


# ----------------------------------------------------------------------------- one run

@dataclass(frozen=True)
class LlamaRun:
    """What the requests of one llama-server run say (the estimates every command shows)."""

    source: str
    confidence: float
    requests: int
    tokens: int                       # Σ decode tokens
    eval_s: float                     # Σ eval time
    rate: Estimate                    # per-stream rate, tokens/s
    accept_len: Estimate | None       # pooled per verify step (None: no draft)
    cycle_ms: Estimate | None         # accept length / rate
    acceptance_rate: float | None     # Σ accepted / Σ drafted
    accepted: int
    drafted: int
    concurrency: float | None         # median of the slots busy when each request finished
    config: dict
    per_request_rate: tuple[float, float, float] | None   # min, median, max tok/s
    statistics: tuple[dict, ...] = ()
    notes: tuple[str, ...] = ()
    rate_ms: Estimate | None = field(default=None, repr=False)   # tokens/ms

    @property
    def speculative(self) -> bool:
        return self.accept_len is not None

    def to_dict(self) -> dict:
        def d(e):
            return e.to_dict() if e is not None else None
        return {"source": self.source, "requests": self.requests, "tokens": self.tokens,
                "eval_s": self.eval_s, "per_stream_tok_s": d(self.rate),
                "accept_len": d(self.accept_len), "cycle_ms": d(self.cycle_ms),
                "acceptance_rate": self.acceptance_rate, "accepted_tokens": self.accepted,
                "draft_tokens": self.drafted, "concurrency": self.concurrency,
                "per_request_tok_s": dict(zip(("min", "median", "max"),
                                              self.per_request_rate or ())),
                "statistics": list(self.statistics), "notes": list(self.notes)}


def analyse(log, source: str | None = None, confidence: float = 0.95) -> LlamaRun:
    """The requests of ``source`` (default: the first input) as one run."""
    if not 0 < confidence < 1:
        raise EaglelogError("--confidence must be between 0 and 1, e.g. 0.95")
    source = source or log.sources[0].name
    memo = log.__dict__.setdefault("_llama_runs", {})
    if (source, confidence) in memo:
        return memo[(source, confidence)]
    r = request_rows(log, source)
    if not len(r):
        raise EaglelogError(f"{source}: no llama-server request timings ('prompt eval time' / "
                            "'eval time' lines of print_timing) to analyse")
    notes: list[str] = []
    tok = _arr(r, "decode_tokens")
    ev = _arr(r, "eval_ms")
    ok = np.isfinite(tok) & np.isfinite(ev) & (ev > 0)
    if (~ok).any():
        notes.append(f"{int((~ok).sum())} request(s) without a readable eval time or token "
                     "count left out")
    tok, ev = tok[ok], ev[ok]
    rr = r[ok]
    n = len(rr)
    if not n or tok.sum() <= 0:
        raise EaglelogError(f"{source}: no request with decode tokens and an eval time")
    what = f"{n} requests: Σ tokens / Σ eval time"
    rate_ms = stats.jackknife(lambda m: tok[m].sum() / ev[m].sum(), n, confidence, what)
    rate = _scaled(rate_ms, 1000.0, what)
    acc = _arr(rr, "accepted_tokens")
    dr = _arr(rr, "draft_tokens")
    steps = _arr(rr, "steps")
    spec = np.isfinite(acc) & np.isfinite(dr)
    accept = cycle = None
    acc_rate = None
    if spec.any():
        # a request that accepted nothing: its steps cannot be read back (mean len 1.00 fits
        # any number); each of its decode steps made one token, so its decode tokens bound them
        none = spec & ~np.isfinite(steps) & (acc == 0)
        s = np.where(none, tok, steps)
        usable = spec & np.isfinite(s) & (s > 0)
        if none.any():
            notes.append(f"{int(none.sum())} request(s) accepted no draft token: their verify "
                         "steps taken as their decode tokens (an upper bound)")
        lost = spec & ~usable
        if lost.any():
            notes.append(f"{int(lost.sum())} request(s) whose verify steps cannot be read back "
                         "from the printed mean len left out of the accept length")
        a_u, s_u = np.where(usable, acc, 0.0), np.where(usable, s, 0.0)
        if usable.any():
            how = f"{int(usable.sum())} requests: 1 + Σ accepted / Σ verify steps"
            accept = stats.jackknife(lambda m: 1 + a_u[m].sum() / s_u[m].sum()
                                     if s_u[m].sum() > 0 else math.nan, n, confidence, how)
            cycle = stats.jackknife(
                lambda m: (1 + a_u[m].sum() / s_u[m].sum()) * ev[m].sum() / tok[m].sum()
                if s_u[m].sum() > 0 else math.nan, n, confidence,
                f"{n} requests: accept length / per-stream rate")
        if (~spec).any():
            notes.append(f"{int((~spec).sum())} of {n} requests printed no draft acceptance "
                         "(nothing drafted): in the rate, out of the accept length")
        acc_rate = float(acc[spec].sum() / dr[spec].sum()) if dr[spec].sum() > 0 else None
    conc = _arr(rr, "concurrency")
    conc = float(np.median(conc[np.isfinite(conc)])) if np.isfinite(conc).any() else None
    per = tok / ev * 1000.0
    tot = [t for t in statistics_totals(_bench_of(log, source))]
    for t in tot:
        a_req, d_req = int(np.nansum(acc)), int(np.nansum(dr))
        if t["accepted_tokens"] is not None and t["draft_tokens"] is not None and \
                (t["accepted_tokens"], t["draft_tokens"]) != (a_req, d_req) and \
                len(tot) == 1:
            notes.append(f"the statistics lines of {t['label']} count {t['accepted_tokens']} "
                         f"accepted / {t['draft_tokens']} drafted tokens, the requests "
                         f"{a_req} / {d_req}: requests before the log began, or lines lost")
    res = LlamaRun(source, confidence, n, int(tok.sum()), float(ev.sum() / 1000.0), rate,
                   accept, cycle, acc_rate, int(np.nansum(acc)), int(np.nansum(dr)), conc,
                   config_of(log, source),
                   (float(per.min()), float(np.median(per)), float(per.max())),
                   tuple(tot), tuple(notes), rate_ms)
    memo[(source, confidence)] = res
    return res


# ----------------------------------------------------------------------------- break-even

def _baseline_step(baseline, confidence: float, run: LlamaRun, notes: list[str]):
    """(baseline step in ms per token as an Estimate, verdict reason or None)."""
    if baseline.log is not None:
        blog = baseline.log
        src = blog.sources[0].name
        if not handles(blog, src):
            raise EaglelogError(f"{src}: not a llama-server log with request timings ('prompt "
                                "eval time' / 'eval time' lines): the baseline of a llama.cpp "
                                "run is a llama-server run without a draft")
        base = analyse(blog, src, confidence)
        if base.speculative:
            raise EaglelogError(f"{src}: not a baseline: its requests print draft acceptance "
                                "(a speculative run); give a llama-server log without a draft")
        step = _step_of(blog, src, base.requests, confidence, "baseline log: ")
        reason = None
        if run.concurrency is not None and base.concurrency is not None:
            if run.concurrency != base.concurrency:
                reason = (f"the baseline log ran at concurrency {base.concurrency:g}, the run "
                          f"at {run.concurrency:g}: per-stream rates at different "
                          "concurrency do not compare")
            else:
                notes.append(f"baseline and run both at concurrency {run.concurrency:g} "
                             "(median slots busy when a request finished)")
        else:
            notes.append("the logs do not show how many requests ran at once (no 'processing "
                         "task' lines): the baseline is taken as at the run's concurrency")
        return step, reason
    if baseline.per_batch:
        sizes = dict(baseline.per_batch)
        c = run.concurrency
        if c is None or int(c) != c or int(c) not in sizes:
            have = ", ".join(str(k) for k in sizes)
            return (stats.insufficient(math.nan, 0, confidence),
                    f"--baseline-toks gives rates at {have}; the run's concurrency is "
                    + (f"{c:g}" if c is not None else "not in the log"))
        v = sizes[int(c)]
        return stats.constant(1000.0 / v, None, confidence,
                              f"--baseline-toks {v:g} tok/s at concurrency {int(c)} (taken "
                              "as exact)"), None
    step = 1000.0 / baseline.tok_s
    src = f"--baseline-toks {baseline.label}" + (" (σ of the rate)" if baseline.sd else
                                                  " (taken as exact)")
    if run.concurrency is not None and run.concurrency != 1:
        notes.append(f"--baseline-toks is a per-stream rate at one concurrency; the run is at "
                     f"concurrency {run.concurrency:g} (median slots busy): it must be the "
                     "baseline's per-stream rate with as many requests at once (or give "
                     "--baseline-log)")
    return stats.constant(step, (baseline.sd / baseline.tok_s * step) if baseline.sd else None,
                          confidence, src), None


def breakeven(log, baseline, *, source: str | None = None, confidence: float = 0.95,
              by_batch: bool = False):
    """analysis.breakeven.BreakevenResult of a llama-server run against ``baseline``."""
    source = source or log.sources[0].name
    run = analyse(log, source, confidence)
    notes = list(run.notes)
    if not run.speculative:
        raise EaglelogError(f"{source}: no request printed draft acceptance: not a speculative "
                            "run (this log is a baseline: `eaglelog breakeven --baseline-log "
                            f"{source} SPEC.log`)")
    step, reason = _baseline_step(baseline, confidence, run, notes)
    r, acc, cyc = run.rate_ms, run.accept_len, run.cycle_ms
    ins = stats.insufficient(math.nan, 0, confidence)
    ok = math.isfinite(step.estimate)
    be = stats.combine(cyc.estimate / step.estimate, [(cyc, 1), (step, -1)], confidence,
                       "cycle_ms / baseline_step_ms") if ok else ins
    sp = stats.combine(r.estimate * step.estimate, [(r, 1), (step, 1)], confidence,
                       "per-stream rate / baseline rate") if ok else ins
    verdict = verdict_of(sp)
    if reason is not None:
        verdict = "invalid baseline"
    if by_batch:
        notes.append("--by batch: a llama-server run is one concurrency; there is no per-batch "
                     "table")
    k = run.config.get("spec_draft_n_max")
    if k and ok and be.estimate > k + 1:
        notes.append(f"break-even accept length {be.estimate:.3g} is more than one step can "
                     f"commit ({k + 1} tokens: --spec-draft-n-max + 1): this config cannot beat "
                     "the baseline at any acceptance")
    facts = {"requests": run.requests, "tokens": run.tokens, "eval_s": run.eval_s,
             "accepted_tokens": run.accepted, "draft_tokens": run.drafted,
             "acceptance_rate": run.acceptance_rate, "concurrency": run.concurrency,
             "per_request_tok_s": dict(zip(("min", "median", "max"),
                                           run.per_request_rate or ()))}
    return BreakevenResult(source, baseline.label, confidence, cyc, step, be, acc, sp, verdict,
                           tuple(dict.fromkeys(notes)), None, r, "llama.cpp requests", 1.0,
                           reason, facts, None)


# ----------------------------------------------------------------------------- summary

def _step_of(log, source: str, n: int, confidence: float, what: str = "") -> Estimate:
    """The step one request stream takes per token without speculation: Σ eval time / Σ
    tokens over the requests (ms), with its jackknife interval."""
    r = request_rows(log, source)
    t, e = _arr(r, "decode_tokens"), _arr(r, "eval_ms")
    ok = np.isfinite(t) & np.isfinite(e) & (e > 0)
    t, e = t[ok], e[ok]
    return stats.jackknife(lambda m: e[m].sum() / t[m].sum(), len(t), confidence,
                           f"{what}{len(t)} requests: Σ eval time / Σ tokens")


@dataclass(frozen=True)
class LlamaSummary(SummaryResult):
    """A SummaryResult whose numbers come from llama-server's per-request lines: the accept
    length is the server's mean len pooled per verify step, the per-stream rate Σ tokens / Σ
    eval time, the cycle accept length / rate (a run without a draft: its step, ms per token);
    ``run`` holds the requests' own figures (JSON: "llamacpp")."""

    run: LlamaRun | None = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["llamacpp"] = self.run.to_dict() if self.run is not None else None
        return d


def summarize(log, *, source: str | None = None, baseline=None,
              confidence: float = 0.95) -> LlamaSummary:
    """The summary of a llama-server run (report.llamacpp renders it)."""
    source = source or log.sources[0].name
    info = next(i for i in log.sources if i.name == source)
    run = analyse(log, source, confidence)
    be = breakeven(log, baseline, source=source, confidence=confidence) \
        if baseline is not None and run.speculative else None
    notes = list(run.notes) if be is None else []
    if baseline is not None and not run.speculative:
        notes.append("no request printed draft acceptance (a run without a draft): there is no "
                     "break-even to compute; its per-stream rate is a baseline (--baseline-toks) "
                     "or give this log as --baseline-log")
    cfg = run.config
    config = {"algorithm": cfg.get("speculative_algorithm"),
              "draft": cfg.get("speculative_draft_model_path"),
              "draft_max": cfg.get("spec_draft_n_max"), "slots": cfg.get("n_slots"),
              "model": cfg.get("model_path")}
    config = {k: v for k, v in config.items() if v is not None}
    cycle = run.cycle_ms if run.speculative else \
        _step_of(log, source, run.requests, confidence)
    return LlamaSummary(source=source, confidence=confidence, config=config, lines=info.lines,
                        span_s=None, cycle_ms=None, blocks=0, cycles=0, phases=(),
                        bottleneck=None, accept_sglang=run.accept_len, accept_profiler=None,
                        throughput_all=None, eff_tok_s=run.rate, n_windows=run.requests,
                        windows_used=run.requests, breakeven=be,
                        notes=tuple(dict.fromkeys(notes)), engine="llamacpp",
                        cycle_derived=cycle, cycle_kind="llama.cpp requests",
                        speculative=run.speculative, counted="lines", run=run)


# ----------------------------------------------------------------------------- compare, sweep

def run_of(sub, label: str, engine: str, baseline, confidence: float):
    """analysis.compare.Run of a llama-server run: per-stream rate (the primary metric without a
    baseline), accept length, cycle, and the speedup with a baseline."""
    src = sub.sources[0].name
    run = analyse(sub, src, confidence)
    m: dict = {}
    kind = "llama.cpp requests"
    if baseline is not None and run.speculative:
        be = breakeven(sub, baseline, source=src, confidence=confidence)
        sp = be.speedup
        r = run.rate_ms
        if r.sufficient and sp.sufficient:    # the baseline is common to the compared runs
            sp = stats.from_log_se(sp.estimate, r.se_log, r.df, r.n, confidence, sp.source)
        m["speedup"] = Metric("speedup", "speedup", "×", "higher", sp, kind)
    m["eff_tok_s"] = Metric("eff_tok_s", "per-stream rate", "tok/s", "higher", run.rate, kind)
    if run.accept_len is not None:
        m["accept_len"] = Metric("accept_len", "accept length", "tokens/verify", "higher",
                                 run.accept_len, kind)
        m["cycle_ms"] = Metric("cycle_ms", "cycle time", "ms", "lower", run.cycle_ms, kind)
    sizes = [run.concurrency] if run.concurrency is not None else []
    return Run(label, sub.sources[0].engine or "llamacpp", run.config, m, sizes, [],
               [(run.concurrency, 1.0)] if run.concurrency is not None else [], kind)
