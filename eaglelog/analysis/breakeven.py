"""Break-even accept length and projected speedup, with intervals (docs/statistics.md).

    breakeven_accept_len = cycle_ms / baseline_step_ms
    speedup              = accept_len × baseline_step_ms / cycle_ms

Both are per request stream: the cycle is weighted by request-steps and the baseline step is taken
at the run's own batch-size mix (the rate model, analysis/rate.py).  Speculation pays when
speedup > 1.  The verdict reads the speedup interval: ``above`` / ``below`` when it lies entirely
above / below 1, ``inconclusive`` when it straddles 1 (or when the cycle is only an upper bound and
the bound does not settle it), ``insufficient data`` when there is no interval, ``partial`` when
the baseline covers too little of the run's batch sizes for a whole-run verdict, ``mixed`` when a
single stated rate is compared with a run spanning a wide range of batch sizes and the batch sizes
disagree, ``invalid baseline`` when the break-even is more than a cycle can commit (a baseline
that is not a per-stream rate) or the baseline covers none of the run's batch sizes, ``needs
accept length`` when the log holds EAGLE3_PROF blocks and no per-batch accept length (the
break-even accept length has its interval; the speedup needs the accept length).
"""
from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass

import numpy as np
from .._lazy import pd

from .. import stats
from ..api import ParsedLog
from ..baseline import Baseline  # noqa: F401 - re-exported: analysis.breakeven.Baseline
from ..errors import EaglelogError
from ..stats import Estimate
from . import adaptive_slots, context, draft_len, engines, rate
from .windows import decode_interval, rows_where, windows
from .configs import within_configs
from .evidence import Evidence
from .kv_life import kv_lifetime
from .prof_blocks import ProfBlocks
# the result types and the verdict's words (their home: results.py)
from .results import (BreakevenResult, BucketResult, ESTIMATES, GATE_FAILS,  # noqa: F401
                      NEEDS_ACCEPT, NO_VERDICT, VERDICTS, _estimates, _num, _scaled,
                      gate_fails, gate_message, verdict_of)

NO_ACCEPT_SOURCE = "not in the log: no decode line prints accept len, no Finish line a verify count"
MIN_COVERAGE = 0.8     # a baseline covering less of the run's request-steps: no whole-run verdict
WIDE_SPAN = 4          # a stated rate against batch sizes spanning more than this factor
DISAGREE = 0.03        # profiler and derived cycle: a difference worth a warning (and beyond CIs)
PROF_PRECISION = 3     # agreeing blocks this many times more precise than the derived cycle
                       # carry it
FEW_FOR_PREFILL = 30   # a corrected (prefill-fitted) cycle from fewer windows yields to the blocks


# ----------------------------------------------------------------------------- pieces

def one_source(log: ParsedLog, source: str) -> tuple[dict, pd.DataFrame]:
    """(config, windows of the source's decode lines), computed once per ParsedLog."""
    memo = log.__dict__.setdefault("_windows", {})
    if source not in memo:
        cfg = log.config(source)
        dec, pre = log.rows_of(source, "decode"), log.rows_of(source, "prefill")
        memo[source] = (cfg, windows(dec, pre, decode_interval(cfg)))
    return memo[source]


_ACCEPT_MEMO: dict[int, tuple[weakref.ref, dict]] = {}   # id(frame) -> (its ref, estimates)


def accept_from_windows(w: pd.DataFrame, confidence: float) -> Estimate:
    """Request-step weighted accept length of the windows; remembered for as long as the frame
    object lives (summary and its break-even ask about the same windows)."""
    hit = _ACCEPT_MEMO.get(id(w))
    if hit is None or hit[0]() is not w:
        hit = (weakref.ref(w, lambda _, k=id(w): _ACCEPT_MEMO.pop(k, None)), {})
        _ACCEPT_MEMO[id(w)] = hit
    memo = hit[1]
    if confidence not in memo:
        a = rows_where(w, np.isfinite(w["accept_len"].to_numpy(dtype=float)))
        memo[confidence] = stats.weighted_mean(
            a["accept_len"].to_numpy(dtype=float), a["req_steps"].to_numpy(dtype=float),
            confidence, f"decode lines ({len(a)} windows, request-step weighted)")
    return memo[confidence]


def diluted(dec: pd.DataFrame) -> bool:
    """Lines of releases ≤ v0.5.3.post1 ('Decode batch.' with accept len, no accept rate) mix
    prefill samples of 1.0 into accept len (sglang.md §3.6)."""
    if dec.empty or "accept_rate" not in dec.columns:
        return bool(len(dec)) and dec["accept_len"].notna().any()
    if "header" not in dec.columns:      # vLLM rows only: no SGLang release to dilute
        return False
    spec = dec["accept_len"].notna()
    old = spec & dec["accept_rate"].isna() & (dec["header"] == ".").fillna(False)
    return bool(old.any())


# ----------------------------------------------------------------------------- the run

def run_windows(log: ParsedLog, source: str) -> tuple[dict, "rate.Windows"]:
    """(config, the rate model's windows of the source's decode lines), computed once."""
    memo = log.__dict__.setdefault("_rate_windows", {})
    if source not in memo:
        cfg = log.config(source)
        # (the source's rows: a slice of the tables, every row of a one-input log's, found
        # once per table — not a pass over the source column of millions of rows per call)
        dec, pre = log.rows_of(source, "decode"), log.rows_of(source, "prefill")
        let_go = log.single_use and len(log.sources) == 1
        if let_go:
            # a single-use log: what is read of the decode lines besides the windows' and the
            # KV life's columns is read now (K without a config line: its transients before
            # the windows exist, not on top of them), and the table goes; the windows are made
            # from the columns they read (a third of a gigabyte log's peak: issue 37)
            draft = UNREAD if _max_tokens(cfg) else draft_len.max_tokens_of_rows(log, source)
            dil = diluted(dec)
            # (the KV life and the #token column read now, before the windows exist: the
            # column goes, and the tokens are kept as int32 counts, at the lines the windows
            # turn out to have after they are made)
            kv_early = kv_lifetime(dec, pre, decode_interval(cfg)) \
                if _may_speculate(dec) else None
            toks = context.token_lines(dec)
            if toks is not None:
                packed = _packed(toks[1])
                toks = (toks[0], packed, True) if packed is not toks[1] else toks
                packed = None
            dec = dec.drop(columns=[c for c in NOT_WINDOWED + context.TOKEN_COLUMNS
                                    if c in dec.columns])
            log.release("decode")
        win = rate.decode_windows(dec, pre, decode_interval(cfg),
                                  bool(cfg.get("enable_dp_attention")), consume=let_go)
        path = log.__dict__.get("_config_path")
        if path is not None and len(path.mixed) > 1:
            within_configs(win, path.steps_at(win.line))
        kv = None if not win.spec else kv_early if let_go else \
            kv_lifetime(dec, pre, win.interval)
        for life in (request_lifetime(log, source, win.interval), kv):
            if life is not None and (win.lifetime is None or life > win.lifetime):
                win.lifetime = life
        if win.spec:
            win.req_accept = request_accept_se(log, source)
        memo[source] = (cfg, win)
        if let_go:
            log.__dict__.setdefault("_decode_facts", {})[source] = DecodeFacts(
                dil, win.line, None if toks is None else
                _packed(context.tokens_at_lines(*toks, win.line)), draft)
            dec = pre = toks = None
            log.release("prefill")     # (read by the windows alone)
            log.settle(win.n)          # (the decode table's memory: back to the system)
    return memo[source]


# the decode columns a single-use log's run reads before its windows are made and never after
# (beta_spec, diluted, draft_len: run_windows)
NOT_WINDOWED = ("accept_rate", "header", "startup", "ranks")
UNREAD = object()        # a DecodeFacts field not read (draft: the config line gives K)


@dataclass
class DecodeFacts:
    """What the analyses read of a single-use log's decode lines after the windows are made
    (run_windows), kept when its table is let go."""

    diluted: bool                   # diluted(): lines of releases ≤ v0.5.3.post1
    line: np.ndarray                # the windows' lines, which ``tokens`` is of
    tokens: object                  # context.tokens_at at those lines (None: no #token;
    #                                 int32 where _packed), with_context takes it once,
    #                                 leaving UNREAD
    draft: object                   # draft_len.max_tokens_of_rows, UNREAD where the config
    #                                 line gives K (breakeven reads it only when it does not)


def _may_speculate(dec: pd.DataFrame) -> bool:
    """Whether a decode line prints an accept length (≥ 1): the windows' ``spec`` can hold only
    then (the KV life is read before they exist, and only where it may be asked for)."""
    if "accept_len" not in dec.columns:
        return False
    with np.errstate(invalid="ignore"):
        return bool((dec["accept_len"].to_numpy(dtype=float, na_value=np.nan) >= 1).any())


def _packed(tok: np.ndarray | None) -> np.ndarray | None:
    """#token at the windows' lines as int32 (−1: none printed) where each is a whole number
    of slots below 2³¹, as counts are: 4 bytes a window, not 8, kept from the windows' making
    to the context's (``_unpacked`` gives back the same floats); else as it is."""
    if tok is None or tok.dtype == np.int32:
        return tok
    out = np.empty(len(tok), dtype=np.int32)
    for lo, hi in rate._blocks(len(tok)):
        t = tok[lo:hi]
        none = np.isnan(t)
        with np.errstate(invalid="ignore"):
            whole = (t >= 0) & (t < 2**31 - 1) & (t == np.trunc(t)) & ~np.signbit(t)
        if not (none | whole).all():
            return tok
        out[lo:hi] = np.where(none, -1.0, t).astype(np.int32)
    return out


def _unpacked(tok: np.ndarray | None) -> np.ndarray | None:
    if tok is None or tok.dtype != np.int32:
        return tok
    out = tok.astype(float)
    out[tok < 0] = np.nan
    return out


def _decode_facts(log: ParsedLog, source: str) -> DecodeFacts | None:
    return log.__dict__.get("_decode_facts", {}).get(source)


def decode_diluted(log: ParsedLog, source: str) -> bool:
    facts = _decode_facts(log, source)
    if facts is not None:
        return facts.diluted
    return diluted(rows_where(log.decode, log.decode["source"] == source))


def draft_tokens(log: ParsedLog, source: str) -> tuple[int, str] | None:
    """draft_len.max_tokens_of_rows, read before a single-use log let its decode lines go."""
    facts = _decode_facts(log, source)
    if facts is not None and facts.draft is not UNREAD:
        return facts.draft
    return draft_len.max_tokens_of_rows(log, source)


def window_tokens(log: ParsedLog, source: str, win: "rate.Windows") -> np.ndarray | None:
    """context.tokens_at the windows' lines (taken once from a single-use log's facts)."""
    facts = _decode_facts(log, source)
    if facts is not None and facts.line is win.line and facts.tokens is not UNREAD:
        tok, facts.tokens = facts.tokens, UNREAD     # (None: no line prints #token)
        return _unpacked(tok)
    dec = rows_where(log.decode, log.decode["source"] == source)
    return context.tokens_at(dec, win.line)


def request_accept_se(log: ParsedLog, source: str) -> tuple[float, float] | None:
    """(se of log τ, df) of the accept length pooled over the Finish lines' requests, each an
    independent unit: Σ (completion − 1) / Σ verify steps, its linearised (ratio-estimator)
    standard error on n − 1 df (requests.ratio_estimate).  None with fewer than 2 requests."""
    r = log.requests
    if not len(r) or "verify_ct" not in r.columns:
        return None
    if len(log.sources) > 1:
        r = r[(r["source"] == source).to_numpy(dtype=bool)]
    v = r["verify_ct"].to_numpy(dtype=float, na_value=np.nan)
    c = r["completion_tokens"].to_numpy(dtype=float, na_value=np.nan) - 1
    ok = np.isfinite(v) & np.isfinite(c) & (v > 0) & (c >= 0)
    if ok.sum() < 2:
        return None
    from .estimators import ratio_estimate
    e = ratio_estimate(c[ok], v[ok], 0.95)
    return (e.se_log, e.df) if e.sufficient and e.se_log else None


def request_lifetime(log: ParsedLog, source: str, interval: int) -> float | None:
    """How many windows a request step lives in, request-step weighted (Σ v² / Σ v / I over
    the Finish lines' verify counts v): a window's accept length holds each request for its
    whole life, so the correlation between windows reaches as far as the requests whose steps
    fill them — a few long requests among many short ones (heavy-tailed outputs) reach much
    further than the mean life (Σ B̃ / admissions) says.  None without Finish lines."""
    r = log.requests
    if not len(r) or "verify_ct" not in r.columns:
        return None
    v = r["verify_ct"].to_numpy(dtype=float, na_value=np.nan)
    if len(log.sources) > 1:
        v = v[(r["source"] == source).to_numpy(dtype=bool)]
    v = v[np.isfinite(v) & (v > 0)]
    if len(v) < 2 or not interval:
        return None
    return float((v * v).sum() / v.sum()) / interval


def free_fit(log: ParsedLog, source: str, confidence: float,
             warmup: str | int = "auto") -> "rate.RateFit":
    """The rate model over the source's windows without a baseline (the numbers summary,
    compare, reconcile and whatif report), fitted once per log, source, level and warm-up."""
    memo = log.__dict__.setdefault("_free_fits", {})
    key = (source, confidence, warmup)
    if key not in memo:
        _, win = run_windows(log, source)
        memo[key] = rate.fit(win, confidence, None, warmup=warmup)
    return memo[key]


@dataclass
class BaseSide:
    """The baseline as the rate model takes it: the step time at a mean batch size (NaN where
    the baseline says nothing), and the uncertainty of the run's matched step."""

    label: str
    kind: str                      # rate | per batch | log
    step_of: object                # callable: mean batch sizes -> step ms
    source: str
    sizes: tuple[float, float] | None = None          # the batch sizes it covers
    buckets: list | None = None    # (size, step Estimate) of a baseline log
    sd_rel: float = 0.0            # a stated rate's relative σ

    @property
    def by_windows(self) -> bool:
        """Whether the matched step's uncertainty depends on the windows (a baseline log's
        buckets); stated rates have the same σ whatever windows are matched."""
        return self.kind == "log" and bool(self.buckets)

    def uncertainty(self, b: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        """(se of log(matched step), its df) for windows of mean batch b and weight w."""
        if self.kind == "rate":
            return self.sd_rel, math.inf
        if self.kind == "per batch" or not self.buckets:
            return 0.0, math.inf
        sizes = np.array([s for s, _ in self.buckets], dtype=float)
        steps = np.array([e.estimate for _, e in self.buckets])
        ok = (w > 0) & rate.within(b, sizes[0], sizes[-1])
        if not ok.any():
            return 0.0, math.inf
        b, w = np.clip(b[ok], sizes[0], sizes[-1]), w[ok]
        hi = np.clip(np.searchsorted(sizes, b), 0, len(sizes) - 1)
        lo = np.clip(hi - 1, 0, len(sizes) - 1)
        span = np.where(sizes[hi] > sizes[lo], sizes[hi] - sizes[lo], 1.0)
        f = np.where(sizes[hi] > sizes[lo], (b - sizes[lo]) / span, 1.0)
        lam = np.bincount(hi, weights=w * f, minlength=len(sizes)) + \
            np.bincount(lo, weights=w * (1 - f), minlength=len(sizes))
        lam /= w.sum()
        step = float(lam @ steps)
        parts = [(lam[i] * steps[i] * e.se_log, e.df) for i, (_, e) in enumerate(self.buckets)
                 if lam[i] > 0 and e.se_log is not None]
        var = sum(p * p for p, _ in parts) / step ** 2
        if var == 0:
            return 0.0, math.inf
        den = sum((p / step) ** 4 / d for p, d in parts if math.isfinite(d) and d > 0)
        return math.sqrt(var), (var ** 2 / den if den > 0 else math.inf)


def baseline_side(baseline: Baseline, confidence: float, notes: list[str]) -> BaseSide:
    if baseline.per_batch:
        sizes = np.array([b for b, _ in baseline.per_batch], dtype=float)
        steps = 1000.0 / np.array([v for _, v in baseline.per_batch])
        return BaseSide(baseline.label, "per batch", rate.step_curve(sizes, steps),
                        f"--baseline-toks per batch size ({baseline.label}; taken as exact)",
                        (float(sizes[0]), float(sizes[-1])))
    if baseline.log is None:
        step = 1000.0 / baseline.tok_s
        src = f"--baseline-toks {baseline.label}" + (" (σ of the rate)" if baseline.sd else
                                                      " (taken as exact)")
        return BaseSide(baseline.label, "rate", rate.StatedStep(step), src, None, None,
                        (baseline.sd / baseline.tok_s) if baseline.sd else 0.0)
    log = baseline.log
    src = log.sources[0].name
    ups = log.startups(src)
    if len(ups) > 1:
        raise EaglelogError(f"{src}: the baseline log holds {len(ups)} server start-ups: give a "
                            "log of one run")
    cfg, win = run_windows(log, src)
    if cfg.get("speculative_algorithm") or win.spec:
        why = (f"speculative_algorithm={cfg['speculative_algorithm']!r}"
               if cfg.get("speculative_algorithm") else "its decode lines print accept len")
        raise EaglelogError(f"{src}: not a baseline: it is a speculative run ({why}); give a "
                            "log of the same model without speculation")
    if not win.n:
        raise EaglelogError(f"{src}: the baseline log has no 'Decode batch' lines to derive a "
                            "step time from")
    bfit = rate.fit(win, confidence, None, what="baseline log")
    buckets = []
    # a step per printed batch size, every size on its own (not the power-of-two groups the
    # per-batch tables use beyond 16 sizes: a group's step is not the step at any one size)
    for bk in rate.by_bucket(win, bfit, confidence, what="baseline log",
                             buckets=rate.bucket_of(win.r, exact=True)):
        e = bk["cycle_ms"]
        if e.sufficient:
            buckets.append((float(bk.label), e))
    if not buckets:
        raise EaglelogError(f"{src}: the baseline log has too few windows at any batch size for "
                            f"a step time (need ≥ {stats.MIN_UNITS + 1} decode lines at one "
                            "#running-req)")
    if bfit.kind == "upper bound":
        notes.append("the baseline log's step time includes prefill time that cannot be told "
                     "apart (an upper bound): the speedup is overstated by as much")
    sizes = np.array([s for s, _ in buckets])
    steps = np.array([e.estimate for _, e in buckets])
    label = "baseline log, step per running_req " + size_ranges(sizes)
    return BaseSide(src, "log", rate.step_curve(sizes, steps), label,
                    (float(sizes[0]), float(sizes[-1])), buckets)


def size_ranges(sizes) -> str:
    """Batch sizes as runs of consecutive ones: [1, 2, 3, 4, 6, 8, 9] → '1–4, 6, 8–9'."""
    runs: list[list[int]] = []
    for v in (int(x) for x in sizes):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def run_span(win: "rate.Windows") -> tuple[float, float] | None:
    """The smallest and largest #running-req the run's decode lines print (None: none)."""
    r = win.r[np.isfinite(win.r) & (win.r > 0)]
    return (float(r.min()), float(r.max())) if len(r) else None


def prof_cycle(log: ParsedLog, source: str, confidence: float, notes: list[str],
               since_line: int | None = None) -> Estimate | None:
    """The cycle-weighted mean TOTAL of the complete no-sync EAGLE3_PROF blocks (a point
    estimate even when they are too few for an interval), or None."""
    p = ProfBlocks.of(log, source)
    if not len(p):
        return None
    if p.sync.any():
        notes.append(f"{int(p.sync.sum())} EAGLE3_PROF block(s) in sync mode left out: a device "
                     "synchronize after each phase distorts the cycle time")
    if (~p.complete).any():
        notes.append(f"{int((~p.complete).sum())} incomplete EAGLE3_PROF block(s) left out")
    if p.no_mode.any():
        notes.append(f"{int(p.no_mode.sum())} EAGLE3_PROF block(s) without a mode are taken as "
                     "'no sync'")
    bad_total = p.bad_total_note()
    if bad_total:
        notes.append(bad_total)
    keep = p.usable()
    if since_line is not None:
        keep &= p.line >= since_line
    use = p.take(keep)
    if not len(use):
        return None
    tot = use.total_ms
    # (TOTAL printed the same in every block: the rounding to its last digit is its error)
    const = len(tot) > 1 and float(np.nanmax(tot)) == float(np.nanmin(tot))
    return stats.weighted_mean(tot, use.cycles,
                               confidence, f"EAGLE3_PROF blocks ({len(use)} no-sync blocks, "
                               "cycle-weighted)",
                               resolution=stats.half_unit(tot) if const else 0.0,
                               floor=stats.BLOCK_PHI)


def _span_note(win: "rate.Windows", base: BaseSide) -> tuple[str | None, bool]:
    """A note when a stated single rate meets a run that is not at one batch size; and
    whether the span is wide (the per-batch table is then the answer)."""
    span = run_span(win) if base.kind == "rate" else None
    if span is None:
        return None, False
    lo, hi = span
    if hi <= 1 and lo >= 1:
        return None, False
    wide = hi / lo > WIDE_SPAN
    if hi / lo <= 2 and hi > 1:
        at = f"{int(lo)}" if lo == hi else f"{int(lo)}–{int(hi)}"
        return (f"--baseline-toks is a per-stream rate at one batch size; the run is at "
                f"running_req {at}: it must be the baseline at that batch size "
                "(a rate per batch size, --baseline-toks 1:90,8:70,…, or --baseline-log matches "
                "each)", False)
    return (f"--baseline-toks is a per-stream rate at one batch size, but the run spans "
            f"running_req {int(lo)}–{int(hi)}: the step time grows with the batch, so one rate "
            "fits one of them at most; give one per batch size (--baseline-toks 1:90,8:70,…) or "
            "--baseline-log" + ("; the per-batch table below is the answer" if wide else ""),
            wide)


def _max_tokens(cfg: dict) -> int | None:
    """The most tokens one cycle can commit per request: num_steps + 1 (a chain or a tree)."""
    k = cfg.get("speculative_num_steps")
    if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0:
        return int(k) + 1
    return None


# ----------------------------------------------------------------------------- main

def breakeven(log: ParsedLog, baseline: Baseline, *, source: str | None = None,
              confidence: float = 0.95, by_batch: bool = False, cycle_from: str = "auto",
              warmup: str | int = "auto", adaptive_config: str | None = None) -> BreakevenResult:
    """Break-even analysis of one input of ``log`` (default: the first) against ``baseline``.

    ``cycle_from``: 'auto' (the cycle derived from the decode lines when the log carries it
    without bias, else the EAGLE3_PROF blocks, else the derived upper bound), 'decode' or
    'prof'.  ``warmup``: 'auto' (leading windows unlike the rest are left out, said in a note),
    a number of leading decode windows to leave out, or 0.  ``adaptive_config``: the
    --speculative-adaptive-config file an SGLang adaptive run loaded: each bucket of
    ``by_batch`` (then on) says the K it ran (analysis/adaptive_slots.py)."""
    if not 0 < confidence < 1:
        raise EaglelogError("--confidence must be between 0 and 1, e.g. 0.95")
    source = source or log.sources[0].name
    from . import llamacpp         # a llama-server log: its requests (analysis/llamacpp.py)
    if llamacpp.handles(log, source):
        return llamacpp.breakeven(log, baseline, source=source, confidence=confidence,
                                  by_batch=by_batch)
    log, notes = engines.apply(log, source)    # engine/version corrections (docs/engines.md)
    base = baseline_side(baseline, confidence, notes)
    cfg, win = run_windows(log, source)
    slot_plan = adaptive_slots.plan(cfg, adaptive_config)
    by_batch = by_batch or slot_plan is not None and adaptive_config is not None
    unread = adaptive_slots.unread(cfg, adaptive_config)
    if unread:
        notes.append(unread)
    fit = rate.fit(win, confidence, base.step_of, warmup=warmup)
    # (the fit's freed memory back to the system first, then the accept lengths'
    # autocorrelation, a fact below: taken here, while the fewest arrays of the windows are
    # alive — its FFT was the peak of a large log's summary, made on the heap the fit left)
    log.settle(win.n)
    rho = stats.autocorr_time(win.a, where=fit.acc) if np.count_nonzero(fit.acc) > 3 else 1.0
    facts = {"windows": fit.windows, "windows_used": fit.used, "left_out": fit.left_out,
             "tau_windows": _num(fit.tau), "batches": fit.batches, "warmup_windows": fit.warmup,
             "prefill_ms_per_token": _num(fit.beta[0]), "prefill_ms_per_batch": _num(fit.beta[1]),
             "cycle_systematic_rel": _num(fit.sys_rel)}
    if fit.warmup:
        notes.append(f"the first {fit.warmup} decode windows differ from the rest (a warm-up): "
                     "left out (--skip-warmup 0 keeps them)")
    stalls = fit.left_out.get(rate.WHY[rate.STALL], 0) + fit.left_out.get(rate.WHY[rate.IDLE], 0)
    if stalls:
        notes.append(f"{stalls} decode window(s) held idle time or a stall (far above the fitted "
                     "cycle): left out of the cycle time")
    since_line = int(win.line[fit.warmup]) if fit.warmup and fit.warmup < win.n else None
    prof = prof_cycle(log, source, confidence, notes, since_line) if cycle_from != "decode" \
        else None
    if cycle_from == "prof" and prof is None:
        raise EaglelogError(f"{source}: no usable EAGLE3_PROF blocks for --cycle-from prof")
    acc = fit["accept_len"]
    no_accept = False
    if not win.spec:
        acc = requests_accept(log, source, confidence)
        if prof is None:
            if cycle_from == "decode" and not log.prof[(log.prof["source"] == source)
                                                       .to_numpy(dtype=bool)].empty:
                raise EaglelogError(f"{source}: --cycle-from decode, but no 'Decode batch' line "
                                    "prints an accept len: the cycle can only come from its "
                                    "EAGLE3_PROF blocks (--cycle-from auto or prof)")
            raise EaglelogError(f"{source}: no EAGLE3_PROF blocks and no 'Decode batch' lines "
                                "with accept len: nothing to take a cycle time from (is this a "
                                "speculative run?)")
        if acc is None:
            # the profiler readout alone: the break-even accept length needs no accept length
            no_accept = True
            acc = stats.insufficient(math.nan, 0, confidence, NO_ACCEPT_SOURCE)
        else:
            notes.append("the decode lines print no accept len: accept length from the Finish "
                         "lines, (completion_tokens − 1) / spec_verify_ct pooled over requests")
    elif decode_diluted(log, source):
        notes.append("accept len comes from SGLang ≤ v0.5.3.post1 lines, which mix a 1.0 "
                     "sample per prefilled request into it (sglang.md §3.6): a lower bound")
    cyc, kind, r = choose_cycle(prof, fit, win, acc, cycle_from, confidence, notes,
                                no_accept)
    use_prof = kind == "profiler"
    if use_prof:
        st = np.asarray(base.step_of(win.b), dtype=float)
        ok = fit.acc & np.isfinite(st)
        step_bar = float((win.w[ok] * st[ok]).sum() / win.w[ok].sum()) if ok.any() else math.nan
        if not ok.any() and base.kind == "rate":
            # (no decode window to match: a stated single rate is the step whatever the batch)
            step_bar = float(base.step_of(np.array([1.0]))[0])
        elif not ok.any():
            notes.append("the EAGLE3_PROF blocks print no batch size and no decode line does: "
                         "a baseline per batch size has nothing to be matched at (give "
                         "--baseline-toks at the profiled batch size)")
        wts = np.where(ok, win.w, 0.0)
    else:
        step_bar = fit["step_ms"].estimate
        wts = np.where(fit.use, win.w, 0.0)
    note = short_note(fit, cyc if use_prof else None, acc)
    if note:
        notes.append(note)
    se_b, df_b = base.uncertainty(win.b, wts)
    if not math.isfinite(step_bar):
        step = stats.insufficient(math.nan, 0, confidence, base.source)
    elif se_b > 0:
        step = stats.from_log_se(step_bar, se_b, df_b, None, confidence, base.source)
    else:
        step = stats.constant(step_bar, None, confidence, base.source)
    be = stats.combine(cyc.estimate / step.estimate, [(cyc, 1), (step, -1)], confidence,
                       "cycle_ms / baseline_step_ms") if math.isfinite(step.estimate) else \
        stats.insufficient(math.nan, 0, confidence)
    sp = stats.combine(r.estimate * step.estimate, [(r, 1), (step, 1)], confidence,
                       "accept_len × baseline_step_ms / cycle_ms") \
        if math.isfinite(step.estimate) and math.isfinite(r.estimate) else \
        stats.insufficient(math.nan, 0, confidence)
    verdict, reason = verdict_of(sp), None
    if no_accept:
        verdict, reason = NEEDS_ACCEPT, needs_accept_reason(log, source)
    if kind == "upper bound":
        notes.append("every usable decode window holds prefill work that cannot be told apart "
                     "from the cycle: the cycle is an upper bound, the speedup a lower bound")
        if verdict in ("below", "inconclusive"):
            verdict, reason = "inconclusive", "the cycle is an upper bound"
    coverage = fit.coverage if not use_prof else _coverage(win, fit.acc, base)
    facts["coverage"] = _num(coverage)
    # --- the baseline and the run's batch sizes
    span_note, wide = _span_note(win, base)
    if span_note:
        notes.append(span_note)
    if base.kind != "rate" and coverage < 1 - 1e-9:
        lo, hi = base.sizes
        pct = f"{coverage:.0%}"
        notes.append(f"the baseline covers running_req {int(lo)}–{int(hi)}: {pct} of the run's "
                     "request-steps; the rest is left out of the match")
        if coverage <= 0:
            span = run_span(win)
            ran = f" (the run: {int(span[0])}–{int(span[1])})" if span else ""
            verdict, reason = "invalid baseline", (
                f"the baseline covers running_req {int(lo)}–{int(hi)}, none of the run's batch "
                f"sizes{ran}")
        elif coverage < MIN_COVERAGE and verdict != "insufficient data":
            reason = (f"{verdict} at running_req {int(lo)}–{int(hi)} ({pct} of the run's "
                      "request-steps); the baseline does not cover the rest")
            verdict = "partial"
    k1, k_from = _max_tokens(cfg), "num_steps + 1"
    if not k1:              # no config line: k from the metric lines (analysis/draft_len.py)
        k1, k_from = draft_tokens(log, source) or (None, "")
        if k1:
            k_from += "; the log has no config line"
    if k1 and be.estimate > 2 * k1:
        mean_b = float(np.sum(wts * win.b) / np.sum(wts)) if np.sum(wts) > 0 else math.nan
        per = f"{baseline.tok_s / mean_b:.4g} tok/s" if baseline.tok_s and mean_b >= 1.5 \
            else None
        notes.append(f"break-even accept length {be.estimate:.3g} is far more than one cycle can "
                     f"commit ({k1} tokens: {k_from}): the baseline is not a per-stream "
                     "rate — probably an aggregate rate (all streams together)" +
                     (f"; per stream at this run's mean batch size ({mean_b:.3g}) it would be "
                      f"{per}" if per else ""))
        verdict, reason = "invalid baseline", "the break-even exceeds what a cycle can commit"
    elif k1 and be.estimate > k1:
        notes.append(f"break-even accept length {be.estimate:.3g} is more than one cycle can "
                     f"commit ({k1} tokens: {k_from}): this config cannot beat the baseline "
                     "at any acceptance (unless the baseline is not a per-stream rate)")
    if cfg.get("speculative_algorithm") and str(cfg["speculative_algorithm"]).lower() in (
            "ngram", "suffix", "[ngram]") and win.spec and any(
            log.sources[i].engine and "vllm" in log.sources[i].engine
            for i in range(len(log.sources))):
        notes.append("n-gram drafting on vLLM: its mean acceptance length counts only the "
                     "requests that drafted, so the derived cycle and the break-even are "
                     "overstated by the same factor; the speedup is unaffected "
                     "(docs/formats-vllm.md)")
    buckets = None
    whole = fit if fit.coverage >= 1 else None
    several = base.kind != "rate" and len(rate.window_buckets(win)[1]) > 1
    if (by_batch or wide or several) and win.n:
        # every batch size of the run, those the baseline does not cover included
        whole = whole or rate.fit(win, confidence, None, warmup=fit.warmup)
        buckets = tuple(_buckets(win, whole, base, confidence))
        # one rule (the verdict is the same whether the table is asked for or not: a gate
        # must not depend on what is printed): batch sizes on both sides of break-even make
        # the run 'mixed', whatever its pooled speedup says
        if verdict not in ("insufficient data", "invalid baseline", NEEDS_ACCEPT):
            where = mixed_reason(buckets)
            if where:
                verdict, reason = "mixed", where
        if not (by_batch or wide or verdict == "mixed"):
            buckets = None
    if buckets:
        buckets = with_context(log, source, win, whole, buckets, confidence, facts, notes)
        log.settle(win.n)
    if buckets and slot_plan is not None:
        buckets, more = adaptive_slots.label_buckets(buckets, win.r, slot_plan)
        notes.extend(more)
    facts["tau_accept_windows"] = _num(rho)
    return BreakevenResult(source, baseline.label, confidence, cyc, step, be, acc, sp, verdict,
                           tuple(dict.fromkeys(notes)), buckets, r, kind, coverage, reason,
                           facts, whole, Evidence(win, fit, use_prof))


def mixed_reason(buckets) -> str | None:
    """'pays at running_req 1–8; not at 32 (undecided at 16)' when some batch sizes are above
    break-even and others below it, else None."""
    by = {}
    for b in buckets:
        by.setdefault(b.verdict, []).append(b.batch)
    if not (by.get("above") and by.get("below")):
        return None
    undecided = by.get("inconclusive", []) + by.get("insufficient data", [])
    return (f"pays at running_req {', '.join(by['above'])}; not at {', '.join(by['below'])}"
            + (f" (undecided at {', '.join(undecided)})" if undecided else "")
            + (f"; no baseline at {', '.join(by['no baseline'])}" if by.get("no baseline")
               else ""))


def short_note(fit: "rate.RateFit | None", prof: Estimate | None,
               acc: Estimate | None) -> str | None:
    """Where the short-series rule gave an interval (stats.short_se): how many units, and how
    alike neighbouring ones are taken to be (the stated allowance, or what they show)."""
    parts = []
    if fit is not None and fit.short_phi is not None and acc is not None and \
            acc.sufficient and acc.basis == "short":
        phi = fit.short_phi
        parts.append(f"{acc.n} decode windows, neighbours taken as alike as a lag-1 "
                     f"autocorrelation of {phi:.2f} ("
                     + ("the allowance assumed" if phi == stats.SHORT_PHI else
                        f"what they show; at least {stats.SHORT_PHI:g} is assumed") + ")")
    if prof is not None and prof.sufficient and prof.basis == "short":
        parts.append(f"{prof.n} EAGLE3_PROF blocks, neighbours taken as alike as a lag-1 "
                     f"autocorrelation of at least {stats.BLOCK_PHI:g}")
    if not parts:
        return None
    return (f"a short run ({'; '.join(parts)}): its intervals are widened for that, each "
            "unit a sample of its own (too few for batches of them; docs/statistics.md, "
            "'Short runs')")


def choose_cycle(prof: Estimate | None, fit: "rate.RateFit", win: "rate.Windows",
                 acc: Estimate, cycle_from: str, confidence: float, notes: list[str],
                 no_accept: bool = False) -> tuple[Estimate, str, Estimate]:
    """(the cycle, its kind, accept length / cycle) as breakeven and summary use them: the
    cycle derived from the decode lines when it is unbiased and has an interval (``auto``),
    else the EAGLE3_PROF blocks' (``prof``: always, ``decode``: never); notes say where
    the two disagree or why the profiler's is used."""
    derived = fit["cycle_ms"]
    derived_ok = win.spec and fit.kind != "upper bound" and derived.sufficient
    use_prof = prof is not None and (cycle_from == "prof" or (cycle_from == "auto" and
                                                              not derived_ok))
    sizes = win.r[fit.acc & np.isfinite(win.r)]
    one_size = not len(sizes) or sizes.max() <= 1.5 * max(sizes.min(), 1)
    precise = False
    per_iter = fit["cycle_ms_iter"]
    if not use_prof and cycle_from == "auto" and prof is not None and prof.sufficient and \
            derived_ok and one_size and math.isfinite(per_iter.estimate) and \
            per_iter.estimate > 0 and prof.estimate > 0 and \
            PROF_PRECISION * prof.se_log < derived.se_log:
        # at one batch size the blocks' mean over cycles is the decode lines' mean over
        # request-steps (no-sync TOTAL is the cycle: eagle3_prof.md); where the two agree and
        # the blocks are the far more precise (a short run: its windows hold prefill and idle
        # time the fit must take out), the blocks carry the cycle
        d = math.log(prof.estimate / per_iter.estimate)
        if abs(d) <= max(DISAGREE, 2 * math.hypot(prof.se_log, per_iter.se_log or 0.0)):
            notes.append(f"cycle from the EAGLE3_PROF blocks ({prof.estimate:.2f} ms, se "
                         f"{math.expm1(prof.se_log):.2%}): they agree with the decode lines' "
                         f"({derived.estimate:.2f} ms, se {math.expm1(derived.se_log):.2%}) and "
                         f"are over {PROF_PRECISION:g}× as precise (--cycle-from decode takes "
                         "the other)")
            use_prof = precise = True
    if not use_prof and cycle_from == "auto" and prof is not None and prof.sufficient and \
            fit.kind == "corrected" and fit.used < FEW_FOR_PREFILL and one_size:
        # a prefill cost fitted on a handful of windows (each with a prefill, most with an
        # idle gap) is the weaker source of the cycle: simulated (prof5, 13 windows), the
        # decode lines' cycle was taken in 10 % of runs, its coverage 88 %
        notes.append(f"cycle from the EAGLE3_PROF blocks ({prof.estimate:.2f} ms): the decode "
                     f"lines' ({derived.estimate:.2f} ms) rests on a prefill cost fitted on "
                     f"{fit.used} windows (--cycle-from decode takes it)")
        use_prof = precise = True
    if use_prof:
        r = stats.combine(acc.estimate / prof.estimate, [(acc, 1), (prof, -1)], confidence) \
            if not no_accept else stats.insufficient(math.nan, 0, confidence)
        if not one_size:
            notes.append("the EAGLE3_PROF cycle is a mean over cycles, not over request-steps: "
                         "with batch sizes that vary, the per-stream rate is approximate")
        if derived.sufficient and win.spec and not precise:
            notes.append(f"cycle from the EAGLE3_PROF blocks ({prof.estimate:.2f} ms): the "
                         f"decode lines give {derived.estimate:.2f} ms only as an upper bound "
                         "(prefill time cannot be told apart)" if fit.kind == "upper bound" else
                         f"cycle from the EAGLE3_PROF blocks ({prof.estimate:.2f} ms), as asked")
        return prof, "profiler", r
    notes.extend(fit.notes)
    if prof is not None and derived.sufficient and math.isfinite(prof.estimate) and \
            prof.estimate > 0 and math.isfinite(per_iter.estimate) and per_iter.estimate > 0:
        d = math.log(prof.estimate / per_iter.estimate)
        se = math.hypot(prof.se_log or 0.0, per_iter.se_log or 0.0) if prof.sufficient \
            else 0.0
        if abs(d) > max(DISAGREE, 2 * se):
            notes.append(f"the EAGLE3_PROF cycle ({prof.estimate:.2f} ms) and the cycle "
                         f"derived from the decode lines ({per_iter.estimate:.2f} ms per "
                         f"iteration) differ by {abs(math.expm1(d)):.0%}: the verdict uses "
                         "the derived cycle, which holds all the wall time between cycles "
                         "(the profiler sees only what it brackets)")
        elif abs(math.log(derived.estimate / per_iter.estimate)) > DISAGREE:
            # they agree per cycle; the batch size varies, and a mean over cycles is not
            # the mean over request-steps that break-even compares
            notes.append(f"the EAGLE3_PROF cycle ({prof.estimate:.2f} ms) is a mean over "
                         "cycles, as is the decode lines' per iteration "
                         f"({per_iter.estimate:.2f} ms); break-even uses their mean over "
                         f"request-steps ({derived.estimate:.2f} ms), which weighs each cycle "
                         "by its batch size")
    return derived, fit.kind, fit["rate"]


def _coverage(win, mask, base: BaseSide) -> float:
    st = np.asarray(base.step_of(win.b), dtype=float)
    tot = float(win.w[mask].sum())
    return float(win.w[mask & np.isfinite(st)].sum()) / tot if tot > 0 else 0.0


def _buckets(win, fit, base: BaseSide, confidence: float):
    codes, labels = rate.window_buckets(win)
    buckets = rate.by_bucket(win, fit, confidence, base.step_of, buckets=(codes, labels))
    # (the windows' weights are made per read: once, after the per-bucket passes, which make
    # their own, and only where a bucket's windows matter to its step's σ)
    w = win.w if base.by_windows else None
    for bk in buckets:
        st = bk["step_ms"]
        if w is not None:     # (the bucket's windows, a pass over every window each)
            mask = (codes == labels.index(bk.label)) & fit.use
            se_b, df_b = base.uncertainty(win.b[mask], w[mask])
        else:
            se_b, df_b = base.uncertainty(np.empty(0), np.empty(0))
        if not math.isfinite(st.estimate):
            step = stats.insufficient(math.nan, 0, confidence, "no baseline at this batch size")
        elif se_b > 0:
            step = stats.from_log_se(st.estimate, se_b, df_b, None, confidence, base.source)
        else:
            step = stats.constant(st.estimate, None, confidence, base.source)
        cyc, acc, r = bk["cycle_ms"], bk["accept_len"], bk["rate"]
        ok = math.isfinite(step.estimate) and math.isfinite(cyc.estimate)
        be = stats.combine(cyc.estimate / step.estimate, [(cyc, 1), (step, -1)], confidence) \
            if ok else stats.insufficient(math.nan, 0, confidence)
        sp = stats.combine(r.estimate * step.estimate, [(r, 1), (step, 1)], confidence) \
            if ok and math.isfinite(r.estimate) else stats.insufficient(math.nan, 0, confidence)
        yield BucketResult(bk.label, bk.windows, cyc, step, be, acc, sp,
                           verdict_of(sp) if math.isfinite(step.estimate) else "no baseline",
                           bk.share, _scaled(r, 1000.0, "1000 × accept length / cycle"))


def with_context(log: ParsedLog, source: str, win: "rate.Windows", fit: "rate.RateFit",
                 buckets: tuple, confidence: float, facts: dict, notes: list[str]) -> tuple:
    """Where the decode lines print #token: each batch-size bucket's mean context per running
    request (#token / #running-req, request-step weighted), and the accept length's trend with
    the context over the windows (facts['context_trend']; a note when its interval excludes
    0).  analysis/context.py, docs/acceptance.md 'By context'."""
    tok = window_tokens(log, source, win)
    if tok is None or not np.isfinite(tok).any():
        return buckets
    ctx = context.window_context(tok, win.r, win.series)
    tok = None          # (every window's: the trend below needs the room)
    codes, labels = rate.window_buckets(win)
    per = context.bucket_context(ctx, win.w, codes, labels, fit.use | fit.acc)
    buckets = tuple(dataclasses.replace(b, context=per.get(b.batch)) for b in buckets)
    if win.spec:
        # (w and ctx handed over, not kept here: the trend lets every window's go once it has
        # the ones it reads)
        hand = [ctx]
        ctx = None
        tr = context.trend(win.a, [win.w], hand, confidence, mask=fit.acc)
        facts["context_trend"] = tr.to_dict()
        note = context.trend_note(tr)
        if note:
            notes.append(note)
    return buckets


def needs_accept_reason(log: ParsedLog, source: str) -> str:
    """What a profiler-only run needs for a verdict, and why the profiler's own accept length
    is not it."""
    p = log.prof[(log.prof["source"] == source).to_numpy(dtype=bool)]
    acc = p["accept_len"].to_numpy(dtype=float) if "accept_len" in p else np.empty(0)
    cyc = p["cycles"].to_numpy(dtype=float) if "cycles" in p else np.empty(0)
    ok = np.isfinite(acc) & np.isfinite(cyc) & (cyc > 0)
    prof = (f"; the profiler's {float(np.dot(acc[ok], cyc[ok]) / cyc[ok].sum()):.3g} is per "
            "request, not per batch (docs/statistics.md, 'Which accept length'; `eaglelog "
            "reconcile` puts the two side by side on a log that has both)") if ok.any() else ""
    return ("needs the per-batch accept length: SGLang's decode lines (accept len) or Finish "
            "lines (spec_verify_ct)" + prof)


def requests_accept(log: ParsedLog, source: str, confidence: float) -> Estimate | None:
    if not len(log.requests):
        return None
    r = log.requests[(log.requests["source"] == source)].sort_values("line_no")
    r = r[r["verify_ct"].fillna(0) > 0]
    if r.empty:
        return None
    c = r["completion_tokens"].to_numpy(dtype=float) - 1
    v = r["verify_ct"].to_numpy(dtype=float)
    return stats.jackknife(lambda m: float(c[m].sum() / v[m].sum()), len(r), confidence,
                           f"Finish lines ({len(r)} requests, pooled per verify step)")
