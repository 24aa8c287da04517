"""Acceptance against the context length (docs/acceptance.md, 'By context').

Acceptance decays with the context a request has reached (vllm#47602), so a speculation
schedule chosen at short contexts may not hold at long ones.  Two readings of the context:

* **per request** — its prompt length (``prompt_tokens`` of SGLang's Finish lines, of saved
  vLLM responses, of llama-server's timings), with prompt + output beside it.
* **per decode window** (SGLang) — the mean context per running request,
  ``#token / #running-req``.  ``#token`` is the KV slots in use, ``max_total_num_tokens −
  (available + evictable)`` (sglang 0.5.23 srt/managers/scheduler_components/
  pool_stats_observer.py:235–239): every slot that is neither free nor an unlocked (evictable)
  radix-tree node.  That is the prompt and generated tokens of the running requests, a prefix
  shared by several of them counted **once** (a locked tree node), the slots reserved ahead
  for the speculative steps (srt/mem_cache/allocation_sizing.py, get_alloc_len_per_decode:
  max(topk × num_steps, draft tokens) a request a step, page-aligned), and the slots of a
  request being prefilled (in chunks) that is not yet in the decode batch; ``#running-req`` is
  len(batch.reqs) (metrics_reporter.py:947).  It is not a per-request length: with shared
  prefixes the ratio is below the requests' own context, and cached prefixes no running
  request holds (evictable) are not in it.  Hybrid models print ``#full token`` (the
  full-attention pool, which holds every token) instead; it is read the same way.

  A window's context is (T_prev + T) / (R_prev + R), the line before and its own (the
  request-step weighted mean over the window's iterations, as the window's mean batch B̃ is
  the trapezoid of the two printed batch sizes); T / R on a series' first line.

Statistics — nothing new, the estimators the other analyses use:

* buckets of context, powers of two of tokens (0–1k, 1k–2k, 2k–4k, …), a bucket with fewer
  than MIN_REQUESTS (10) requests (MIN_WINDOWS, 30, windows) merged into the next longer one;
* requests as independent units: the per-position curve of each bucket's requests
  (analysis/acceptance.py, ratio estimators over requests);
* windows as units: the request-step weighted accept length of each bucket's windows, in
  time order (stats.weighted_mean: batches sized from the autocorrelation);
* the trend: the weighted least-squares slope of the windows' accept length on log2(context)
  (tokens of accept length per doubling of the context; weight = request-steps), a function of
  five sums over the windows, with its interval from contiguous batches at least three
  integrated autocorrelation times long and a delete-one-batch jackknife, Student t on B − 1
  df (stats.jackknife_sums, the model of every window ratio; the short-series rule below 100
  windows).  The slope is the association across the run's windows, not a controlled effect:
  whatever else moves with the context (the workload mix, the batch size) moves with it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from .._lazy import pd
from ..frame import is_numpy_backed

from .. import stats
from ..stats import Estimate
from . import rate

KI = 1024                       # the first bucket is 0 – 1k tokens, then powers of two
MIN_REQUESTS = 10               # requests a request bucket needs (else merged)
MIN_WINDOWS = stats.MIN_SERIES  # windows a window bucket needs (else merged)
MIN_TREND = stats.LONG_SERIES_MIN   # windows the trend needs (60 windows covered 90–93 %)
TOKEN_COLUMNS = ("num_tokens", "full_token")   # '#token' (plain pool), '#full token' (hybrid)
WINDOW_MODEL = ("one sample is a decode window (weight = its request-steps); windows "
                "autocorrelated: request-step weighted mean of each bucket's windows in time "
                "order, contiguous batches ≥ 3 integrated autocorrelation times long "
                "(stats.weighted_mean)")
TREND_MODEL = ("weighted least squares of the windows' accept length on log2(context), weight "
               "= request-steps; slope per doubling of the context; its interval from "
               "contiguous batches ≥ 3 autocorrelation times long, delete-one-batch jackknife, "
               "t on B − 1 df (stats.jackknife_sums)")


# ----------------------------------------------------------------------------- buckets

def _k(v: int) -> str:
    return "0" if v == 0 else f"{v // KI}k" if v % KI == 0 else str(v)


def bucket_label(lo: int, hi: int | None) -> str:
    return f"≥ {_k(lo)}" if hi is None else f"{_k(lo)}–{_k(hi)}"


def context_buckets(values: np.ndarray, least: int) -> tuple[np.ndarray, list[tuple]]:
    """Buckets of context (tokens): [0, 1k), [1k, 2k), [2k, 4k), …; walking up from the
    shortest, a bucket with fewer than ``least`` values is merged into the next longer one, and
    a short last one into the one before.  Returns (codes, −1 where the value is missing or
    negative; [(lo, hi)] per code, tokens, hi exclusive, None for the open last bucket)."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v) & (v >= 0)
    base = np.full(len(v), -1, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        base[ok] = np.where(v[ok] < KI, 0,
                            np.floor(np.log2(np.maximum(v[ok], KI) / KI)).astype(np.int64) + 1)
    if not ok.any():
        return base, []
    counts = np.bincount(base[ok], minlength=int(base[ok].max()) + 1)
    groups: list[list[int]] = []
    cur: list[int] = []
    have = 0
    for i, c in enumerate(counts):
        cur.append(i)
        have += int(c)
        if have >= least:
            groups.append(cur)
            cur, have = [], 0
    if cur:
        if groups and have < least:
            groups[-1].extend(cur)
        elif have:
            groups.append(cur)
    while groups and counts[groups[-1]].sum() == 0:
        groups.pop()
    code_of = np.full(len(counts), -1, dtype=np.int64)
    edges = []
    for g, members in enumerate(groups):
        code_of[members] = g
        lo = 0 if members[0] == 0 else KI << (members[0] - 1)
        edges.append((lo, KI << members[-1]))
    if edges:
        edges[-1] = (edges[-1][0], None)
    codes = np.where(ok, code_of[np.clip(base, 0, None)], -1)
    return codes, edges


# ----------------------------------------------------------------------------- windows

def token_column(dec: pd.DataFrame) -> str | None:
    """The decode table's KV-slots column ('#token', else '#full token'), None when no line
    prints one."""
    for c in TOKEN_COLUMNS:
        if c in dec.columns and dec[c].notna().any():
            return c
    return None


def tokens_at(dec: pd.DataFrame, lines: np.ndarray) -> np.ndarray | None:
    """The KV slots in use each decode line of ``dec`` (one source) printed, at the line
    numbers ``lines``; NaN where a line printed none; None when none does."""
    t = token_lines(dec)
    return None if t is None else tokens_at_lines(*t, lines)


def token_lines(dec: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """tokens_at's first half, the table's part: (the lines' numbers, ascending; the KV slots
    each printed, as floats, NaN where none; whether that array is one of its own, not the
    table's), None when no line prints any.  A single-use log reads it before its windows are
    made, and lets the column go (breakeven.run_windows)."""
    col = token_column(dec)
    if col is None:
        return None
    d = dec
    if not d["line_no"].is_monotonic_increasing:
        d = dec[["line_no", col]].sort_values("line_no", kind="stable")
    ln = d["line_no"].to_numpy(dtype=np.int64)
    tok = d[col].to_numpy(dtype=float, na_value=np.nan)
    # (a nullable column's floats are an array of their own already)
    own = not is_numpy_backed(d[col]) and tok.flags.writeable and tok.base is None
    return ln, tok, own


def tokens_at_lines(ln: np.ndarray, tok: np.ndarray, own: bool,
                    lines: np.ndarray) -> np.ndarray:
    """tokens_at's second half: ``token_lines``' slots at the line numbers ``lines``, an array
    of its own.  ``tok`` may be int32 counts, −1 where none (breakeven._packed): the answer is
    too."""
    lines = np.asarray(lines)
    if len(ln) == len(lines) and np.array_equal(ln, lines):
        # (every line asked for, in order: one scheduler's windows, as a long log's are; the
        # windows' int32 line numbers compared as they are)
        return tok if own else tok.copy()
    lines = lines.astype(np.int64, copy=False)
    at = np.clip(np.searchsorted(ln, lines), 0, max(len(ln) - 1, 0))
    counts = tok.dtype == np.int32
    out = np.full(len(lines), -1 if counts else np.nan, dtype=np.int32 if counts else float)
    if len(ln):
        hit = ln[at] == lines
        out[hit] = tok[at[hit]]
    return out


def window_context(tokens: np.ndarray, running: np.ndarray, series: np.ndarray) -> np.ndarray:
    """Mean context per running request of each window (in line order): (T_prev + T) /
    (R_prev + R) over the line before in its series and its own, T / R on a series' first
    line; NaN where either is missing or no request ran."""
    t = np.asarray(tokens, dtype=float)
    r = np.asarray(running, dtype=float)
    s = np.asarray(series)
    out = np.full(len(t), np.nan)
    # (each series' windows a block at a time, each window's number the same elementwise
    # operations: no arrays of every window but the output — six of them and their
    # temporaries were a large log's summary's peak)
    one = bool(len(s)) and s.min() == s.max()      # (one series: every window, no search)
    for code in (s[:1] if one else np.unique(s)):
        idx = None if one else np.flatnonzero(s == code)
        if one or len(idx) and idx[-1] - idx[0] + 1 == len(idx):
            # (a series whose windows are contiguous, as one scheduler's are: slices)
            lo0, hi0 = (0, len(s)) if one else (int(idx[0]), int(idx[-1]) + 1)
            idx = None
            for lo in range(lo0, hi0, _BLOCK):
                hi = min(lo + _BLOCK, hi0)
                tp, rp = np.full(hi - lo, np.nan), np.full(hi - lo, np.nan)
                a = max(lo - 1, lo0)
                tp[a - lo + 1:], rp[a - lo + 1:] = t[a:hi - 1], r[a:hi - 1]
                out[lo:hi] = _context_of(t[lo:hi], tp, r[lo:hi], rp)
            continue
        for j in range(0, len(idx), _BLOCK):
            pos = idx[j:j + _BLOCK]
            tp, rp = np.full(len(pos), np.nan), np.full(len(pos), np.nan)
            prv = idx[max(j - 1, 0):j + len(pos) - 1]
            k = len(pos) - len(prv)
            tp[k:], rp[k:] = t[prv], r[prv]
            out[pos] = _context_of(t[pos], tp, r[pos], rp)
    return out


_BLOCK = 1 << 16        # windows window_context takes at a time


def _context_of(t, tp, r, rp) -> np.ndarray:
    """(T_prev + T) / (R_prev + R), T / R where the line before has none (window_context)."""
    first = ~(np.isfinite(tp) & np.isfinite(rp) & (rp > 0))
    num = np.where(first, t, t + tp)
    den = np.where(first, r, r + rp)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    out[~(np.isfinite(out) & (den > 0) & (num >= 0))] = np.nan
    return out


# ----------------------------------------------------------------------------- the trend

@dataclass(frozen=True)
class ContextTrend:
    """Slope of the windows' accept length on log2(context): tokens of accept length per
    doubling of the context, with its interval (None: insufficient data)."""

    slope: float
    ci_low: float | None
    ci_high: float | None
    windows: int
    confidence: float
    se: float | None = None
    df: float | None = None
    autocorr_time: float | None = None     # windows
    batches: int | None = None
    basis: str | None = None               # 'short': the short-series rule gave the interval
    context_range: tuple[float, float] | None = None   # 5th and 95th weighted percentiles
    accept_len: float | None = None        # the windows' weighted mean accept length

    @property
    def sufficient(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    @property
    def verdict(self) -> str:
        if not self.sufficient:
            return "insufficient data"
        if self.ci_high < 0:
            return "falls"
        if self.ci_low > 0:
            return "rises"
        return "no trend detected"

    @property
    def model(self) -> str:
        return TREND_MODEL

    def to_dict(self) -> dict:
        return {"slope_per_doubling": _f(self.slope), "ci_low": _f(self.ci_low),
                "ci_high": _f(self.ci_high), "windows": self.windows,
                "confidence": self.confidence, "verdict": self.verdict,
                "autocorr_time": _f(self.autocorr_time), "batches": self.batches,
                "short": self.basis == "short",
                "context_range": None if self.context_range is None
                else [_f(v) for v in self.context_range],
                "accept_len": _f(self.accept_len), "model": self.model}


def _f(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _wquantiles(v: np.ndarray, w: np.ndarray, qs, lv: np.ndarray | None = None) -> tuple:
    """Weighted quantiles of positive ``v``, to 1/64 of an octave (a descriptive range: a
    histogram on log2(v), O(n), not a sort of millions of windows — issue 37's budget);
    ``lv``: log2(v) when the caller has it."""
    lv = np.log2(v) if lv is None else lv
    lo, hi = float(lv.min()), float(lv.max())
    if hi - lo < 1e-9:
        return tuple(float(v[0]) for _ in qs)
    nb = max(1, int(math.ceil((hi - lo) * 64)))
    h, edges = np.histogram(lv, bins=nb, range=(lo, hi), weights=w)
    cw = np.cumsum(h)
    return tuple(float(2.0 ** edges[min(int(np.searchsorted(cw, q * cw[-1])) + 1, nb)])
                 for q in qs)


def _product_blocks(products, n: int) -> stats.Blocks:
    """stats.Blocks.of the columns Π ``products[j]`` (each a tuple of arrays of the n windows,
    multiplied left to right), the same sums: each block's sum is np.bincount's, in window
    order, over a stretch of whole blocks at a time — no product of every window (millions
    each: five of them, and the arrays they are made of, were a summary's peak)."""
    k = min(n, stats.FINE)
    if rate.fast_available() and n:
        # (every product and block in one pass, in C: the same sums, in the same order; each
        # block's count from its ends, window i in block ⌊i k / n⌋: no ids of every window)
        sums = np.empty((k, len(products)))
        rate._ratekern.product_sums(tuple(np.ascontiguousarray(u, dtype=float)
                                          for vs in products for u in vs),
                                    bytes(len(vs) for vs in products), sums)
        ends = (np.arange(k + 1, dtype=np.int64) * n + k - 1) // k
        return stats.Blocks(sums, np.diff(ends).astype(float), n)
    ids = stats._block_ids(n, k) if n else np.zeros(0, dtype=np.int64)
    sums = np.zeros((k, len(products)))
    lo = 0
    while lo < n:
        # to the start of the block holding window lo + 2¹⁶ (past lo: at least one block)
        hi = n if lo + (1 << 16) >= n else int(np.searchsorted(ids, ids[lo + (1 << 16)]))
        if hi <= lo:
            hi = int(np.searchsorted(ids, ids[lo], side="right"))
        b0, b1 = int(ids[lo]), int(ids[hi - 1]) + 1
        at = ids[lo:hi] - b0
        for j, vs in enumerate(products):
            v = vs[0][lo:hi].copy() if len(vs) == 1 else vs[0][lo:hi] * vs[1][lo:hi]
            for u in vs[2:]:
                v *= u[lo:hi]
            sums[b0:b1, j] = np.bincount(at, weights=v, minlength=b1 - b0)
        lo = hi
    return stats.Blocks(sums, np.bincount(ids, minlength=k).astype(float), n)


def trend(a: np.ndarray, w: np.ndarray, c: np.ndarray, confidence: float,
          mask: np.ndarray | None = None) -> ContextTrend:
    """The slope of accept length ``a`` on log2(context ``c``) over the windows (in time
    order) with weight ``w`` (request-steps); ``mask``: the windows that count.  ``w`` and
    ``c`` may each come handed over in a one-element list, which this empties: an argument
    stays alive while the call runs, and a handed one goes as soon as the counted part of it
    is made (every window's: two arrays of millions less at the trend's peak)."""
    w, c = (x.pop() if isinstance(x, list) else x for x in (w, c))
    a, w, c = np.asarray(a, dtype=float), np.asarray(w, dtype=float), np.asarray(c, dtype=float)
    ok = np.isfinite(a) & np.isfinite(w) & (w > 0) & np.isfinite(c) & (c > 0)
    if mask is not None:
        ok &= np.asarray(mask, dtype=bool)
    n = int(ok.sum())
    if n < MIN_TREND:
        return ContextTrend(math.nan, None, None, n, confidence)
    first = int(np.argmax(ok))
    c0 = c[first:first + 1].copy()      # (_wquantiles reads the first one alone; log2 of
    # them all is x, made in place: one array, not two; each of every window's let go as soon
    # as its counted part is made, where the caller let go of it too: one more array at a
    # time, not three)
    x = c[ok]
    c = None
    w = w[ok]
    a = a[ok]
    del ok
    np.log2(x, out=x)
    span = _wquantiles(c0, w, (0.05, 0.95), x)
    # (an offset changes no slope; one below every x keeps the sums of x away from 0, where
    # stats._gradient's relative step would vanish, and their cancellation small)
    x -= math.floor(float(x.min())) - 1.0
    mean_a = float(np.dot(w, a) / w.sum())

    blocks = _product_blocks(((w,), (w, x), (w, a), (w, x, x), (w, x, a)), n)

    def f(t):
        s, sx, sa, sxx, sxa = t
        den = s * sxx - sx * sx
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            beta = (s * sxa - sx * sa) / den if den > 0 else math.nan
            return np.array([math.exp(beta) if math.isfinite(beta) and abs(beta) < 700
                             else math.nan])
    (e,), facts = stats.jackknife_sums(blocks, f, confidence)
    slope = math.log(e.estimate) if math.isfinite(e.estimate) and e.estimate > 0 else math.nan
    if not e.sufficient or not math.isfinite(slope):
        return ContextTrend(slope, None, None, n, confidence, context_range=span,
                            accept_len=mean_a, autocorr_time=_f(facts.get("tau")))
    return ContextTrend(slope, math.log(e.ci_low), math.log(e.ci_high), n, confidence,
                        e.se_log, e.df, _f(facts.get("tau")), facts.get("batches") or None,
                        e.basis, span, mean_a)


def trend_note(t: ContextTrend) -> str | None:
    """A note for a verdict when the slope's interval excludes 0."""
    if t.verdict not in ("falls", "rises"):
        return None
    lo, hi = t.context_range or (math.nan, math.nan)
    drop = t.slope * math.log2(hi / lo) if lo > 0 and hi > lo else math.nan
    return (f"accept length {t.verdict} with the context: {t.slope:+.3f} tokens per doubling "
            f"of the mean context per running request ({t.confidence:.0%} interval "
            f"[{t.ci_low:+.3f}, {t.ci_high:+.3f}], {t.windows:,} windows; #token / "
            f"#running-req from {lo:,.0f} to {hi:,.0f} tokens"
            + (f", {drop:+.2f} over that range" if math.isfinite(drop) else "")
            + "): a schedule chosen at one context may not hold at another "
            "(`eaglelog acceptance --by context`)")


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class ContextBucket:
    """One context bucket of one source: its units, their mean context and accept length
    (requests: τ = 1 + Σ P(accept ≥ i) of the bucket's curve; windows: the request-step
    weighted mean), and for requests the per-position curve."""

    label: str
    lo: int
    hi: int | None                 # tokens, exclusive; None: open
    unit: str                      # 'request' | 'window'
    samples: int                   # requests or windows
    weight: float                  # verifies (requests) or request-steps (windows)
    context: float                 # mean prompt tokens (requests), mean #token/#running-req
    accept_len: Estimate
    context_total: float | None = None   # requests: mean prompt + output tokens
    curve: object | None = None          # requests: the bucket's acceptance.Curve

    def to_dict(self) -> dict:
        d = {"bucket": self.label, "context_lo": self.lo, "context_hi": self.hi,
             "unit": self.unit, "samples": self.samples, "weight": _f(self.weight),
             "context": _f(self.context), "context_total": _f(self.context_total),
             "accept_len": self.accept_len.to_dict()}
        if self.curve is not None:
            d["positions"] = [p.to_dict() for p in self.curve.positions]
            d["identity"] = self.curve.identity.status
        return d


@dataclass(frozen=True)
class ContextSeries:
    """The buckets of one source of one run (requests of one origin, or decode windows)."""

    run: str
    origin: str                    # acceptance's origin, or 'sglang-windows'
    unit: str
    context_from: str              # what the context is
    model: str
    buckets: tuple[ContextBucket, ...]
    trend: ContextTrend | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"run": self.run, "origin": self.origin, "unit": self.unit,
                "context_from": self.context_from, "model": self.model,
                "buckets": [b.to_dict() for b in self.buckets],
                "trend": None if self.trend is None else self.trend.to_dict(),
                "notes": list(self.notes)}


@dataclass(frozen=True)
class ContextResult:
    """``acceptance(…, by='context')``: every source's buckets, run by run."""

    series: tuple[ContextSeries, ...]
    confidence: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        runs: dict[str, list] = {}
        for s in self.series:
            runs.setdefault(s.run, []).append(s.to_dict())
        return {"command": "acceptance", "by": "context", "confidence": self.confidence,
                "runs": [{"run": r, "series": ss} for r, ss in runs.items()],
                "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        """One row per bucket and position (requests) or per bucket (windows, position
        empty), raw numbers; the window series' trend on each of its rows."""
        rows = []
        for s in self.series:
            t = s.trend
            for b in s.buckets:
                base = {"run": s.run, "origin": s.origin, "unit": s.unit, "bucket": b.label,
                        "context_lo": b.lo, "context_hi": b.hi, "samples": b.samples,
                        "weight": b.weight, "context": b.context,
                        "context_total": b.context_total,
                        "accept_len": b.accept_len.estimate,
                        "accept_len_ci_low": b.accept_len.ci_low,
                        "accept_len_ci_high": b.accept_len.ci_high,
                        "trend_slope": None if t is None else t.slope,
                        "trend_ci_low": None if t is None else t.ci_low,
                        "trend_ci_high": None if t is None else t.ci_high,
                        "confidence": self.confidence}
                ps = b.curve.positions if b.curve is not None else (None,)
                for p in ps:
                    rows.append({**base, "position": None if p is None else p.position,
                                 "reach": None if p is None else p.reach.estimate,
                                 "reach_ci_low": None if p is None else p.reach.ci_low,
                                 "reach_ci_high": None if p is None else p.reach.ci_high})
        return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- builders

def window_buckets(a: np.ndarray, w: np.ndarray, c: np.ndarray, confidence: float,
                   least: int = MIN_WINDOWS) -> tuple[ContextBucket, ...]:
    """The windows (in time order) bucketed by context ``c``: each bucket's request-step
    weighted accept length (stats.weighted_mean over its own windows in time order) and mean
    context."""
    a, w, c = (np.asarray(x, dtype=float) for x in (a, w, c))
    ok = np.isfinite(a) & np.isfinite(w) & (w > 0)
    codes, edges = context_buckets(np.where(ok, c, np.nan), least)
    out = []
    for g, (lo, hi) in enumerate(edges):
        idx = np.flatnonzero(codes == g)
        if not len(idx):
            continue
        ww = w[idx]
        label = bucket_label(lo, hi)
        acc = stats.weighted_mean(a[idx], ww, confidence,
                                  f"decode windows at context {label} tokens ({len(idx)} "
                                  "windows, request-step weighted)")
        out.append(ContextBucket(label, lo, hi, "window", len(idx), float(ww.sum()),
                                 float(np.dot(ww, c[idx]) / ww.sum()), acc))
    return tuple(out)


def window_series(run: str, frame: pd.DataFrame, dec: pd.DataFrame,
                  confidence: float) -> ContextSeries | None:
    """The context buckets and trend of one source's decode windows (``frame``:
    analysis.windows.windows of ``dec``); None when the lines print no KV slots or no accept
    length."""
    if not len(frame) or "accept_len" not in frame.columns:
        return None
    tok = tokens_at(dec, frame["line_no"].to_numpy(dtype=np.int64))
    if tok is None:
        return None
    a = frame["accept_len"].to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(a).any():
        return None
    w = frame["req_steps"].to_numpy(dtype=float, na_value=np.nan)
    r = frame["running_req"].to_numpy(dtype=float, na_value=np.nan)
    c = window_context(tok, r, frame["series"].cat.codes.to_numpy())
    notes = []
    miss = int((np.isfinite(a) & ~np.isfinite(c)).sum())
    if miss:
        notes.append(f"{miss:,} window(s) with an accept length but no #token or #running-req "
                     "left out")
    col = token_column(dec)
    if col == "full_token":
        notes.append("a hybrid model: the context is '#full token' (the full-attention pool, "
                     "which holds every token) / #running-req")
    if frame["series"].cat.categories.size > 1:
        notes.append(f"windows of {frame['series'].cat.categories.size} schedulers (DP ranks) "
                     "pooled in line order; each window's context from its own scheduler's "
                     "#token and #running-req")
    buckets = window_buckets(a, w, c, confidence)
    if not buckets:
        return None
    notes.append("#token counts KV slots in use: a prefix shared by running requests once, "
                 "plus the slots reserved for the speculative steps and those of a request "
                 "being prefilled — with shared prefixes the ratio is below each request's own "
                 "context")
    tr = trend(a, w, c, confidence)
    if tr.verdict == "insufficient data":
        notes.append(f"{tr.windows} window(s) with a context: the trend needs ≥ {MIN_TREND}"
                     if tr.windows < MIN_TREND else "one context: no trend to fit")
    return ContextSeries(run, "sglang-windows", "window",
                         "mean context per running request, "
                         f"{'#full token' if col == 'full_token' else '#token'}"
                         " / #running-req (KV slots in use)", WINDOW_MODEL, buckets, tr,
                         tuple(notes))


def bucket_context(ctx: np.ndarray, w: np.ndarray, codes: np.ndarray, labels: list[str],
                   mask: np.ndarray) -> dict[str, float]:
    """The mean context per running request of each batch-size bucket's windows (``codes``
    into ``labels``, rate.bucket_of; ``mask``: the windows that count), weighted by their
    request-steps."""
    den, num = np.zeros(len(labels)), np.zeros(len(labels))
    seen = False
    # (a block of windows at a time, each bucket's sums in window order as np.bincount makes
    # them — np.add.at adds in order too: the same sums, without the counted windows' arrays
    # and their codes as integers, four of every window's)
    for lo in range(0, len(ctx), _BLOCK):
        hi = min(lo + _BLOCK, len(ctx))
        cb, wb = ctx[lo:hi], w[lo:hi]
        ok = mask[lo:hi] & np.isfinite(cb) & np.isfinite(wb) & (wb > 0) & (codes[lo:hi] >= 0)
        if not ok.any():
            continue
        seen = True
        cw, wk = codes[lo:hi][ok], wb[ok]
        np.add.at(den, cw, wk)
        wk *= cb[ok]
        np.add.at(num, cw, wk)
    out = {}
    if not seen:
        return out
    for i, label in enumerate(labels):
        if den[i] > 0:
            out[label] = float(num[i] / den[i])
    return out


def request_context(prompt, output) -> tuple[np.ndarray, np.ndarray]:
    """(prompt tokens, prompt + output tokens) as floats, NaN where not printed."""
    p = pd.to_numeric(pd.Series(prompt), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    o = pd.to_numeric(pd.Series(output), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return p, p + o


__all__ = ["ContextBucket", "ContextResult", "ContextSeries", "ContextTrend", "MIN_REQUESTS",
           "MIN_WINDOWS", "bucket_context", "context_buckets", "request_context", "tokens_at",
           "token_lines", "tokens_at_lines",
           "trend", "trend_note", "window_buckets", "window_context", "window_series"]
