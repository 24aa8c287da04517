"""Statistics for window means: pure numpy/scipy, no pandas display, no printing.

The model (docs/statistics.md explains it at length):

* One sample is a **window**: a profile block (a mean over ``cycles`` cycles) or a decode line
  (a mean over ``decode_log_interval`` decode iterations).  A window is weighted by what it
  averages: cycles for a block, request-steps (running_req × interval) for an accept length.
* Consecutive windows are autocorrelated (load, batch composition and request mix drift), so
  windows are grouped into B contiguous **batches** in time order and the uncertainty comes
  from the spread between batches (batch means).  Any estimator — a weighted mean, a ratio of
  weighted means — is evaluated with the **delete-one-batch jackknife**, which handles ratios and
  correlated numerators/denominators without a separate formula; the interval is Student t with
  B − 1 degrees of freedom.
* Independent estimates (a cycle time from one log, a baseline step from another log or a stated
  ``±σ``) are combined on the log scale (delta method: relative variances add) with
  Welch–Satterthwaite degrees of freedom.
* Fewer than MIN_WINDOWS windows give no interval: the answer is "insufficient data".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
# scipy.special, not scipy.stats: the same quantile functions (t.ppf is stdtrit), without the
# half second scipy.stats takes to import
from scipy import special as _sp

MIN_WINDOWS = 10
MIN_BATCHES = 5
MAX_BATCHES = 20


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a two-sided interval at ``confidence``.

    ``se_log`` is the standard error of log(estimate) and ``df`` its degrees of freedom
    (inf for a known σ); both are None when there is no interval (insufficient data).
    """

    estimate: float
    ci_low: float | None
    ci_high: float | None
    n: int | None            # windows behind the estimate; None for a stated constant
    confidence: float
    se_log: float | None = None
    df: float | None = None
    source: str | None = None

    @property
    def sufficient(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    def to_dict(self) -> dict:
        d = {"estimate": _clean(self.estimate), "ci_low": _clean(self.ci_low),
             "ci_high": _clean(self.ci_high), "n": self.n}
        if self.source is not None:
            d["source"] = self.source
        return d



def _clean(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def n_batches(n: int) -> int:
    """B = ⌊√n⌋ clipped to [MIN_BATCHES, MAX_BATCHES]: batches grow with n, so that they
    outgrow the correlation length, while B − 1 degrees of freedom stay useful."""
    return int(min(MAX_BATCHES, max(MIN_BATCHES, math.isqrt(max(n, 1)))))


def batch_labels(n: int, b: int | None = None) -> np.ndarray:
    """Contiguous batch index (0..B-1) for n windows in time order, sizes differing by ≤ 1."""
    b = b or n_batches(n)
    return (np.arange(n) * b) // max(n, 1)


def batch_starts(n: int, b: int | None = None) -> np.ndarray:
    """Index of the first window of each batch of ``batch_labels(n, b)``: ⌈k·n/B⌉ for batch k
    (B values, not n)."""
    b = b or n_batches(n)
    return -(-np.arange(b, dtype=np.int64) * n // b)


def insufficient(value: float, n: int, confidence: float, source: str | None = None) -> Estimate:
    return Estimate(float(value) if value is not None else math.nan, None, None, n, confidence,
                    None, None, source)


def jackknife(fn: Callable[[np.ndarray], float], n: int, confidence: float,
              source: str | None = None) -> Estimate:
    """Estimate fn(mask_of_all) with a delete-one-batch jackknife interval on the log scale.

    ``fn`` takes a boolean mask over the n windows (in time order) and returns a positive
    statistic.  The interval is exp(log θ ± t_{B-1} · se_log)."""
    theta = float(fn(np.ones(n, dtype=bool)))
    if n < MIN_WINDOWS or not np.isfinite(theta) or theta <= 0:
        return insufficient(theta, n, confidence, source)
    labels = batch_labels(n)
    b = int(labels.max()) + 1
    logs = np.empty(b)
    for k in range(b):
        v = float(fn(labels != k))
        if not np.isfinite(v) or v <= 0:
            return insufficient(theta, n, confidence, source)
        logs[k] = math.log(v)
    se_log = math.sqrt((b - 1) / b * float(np.sum((logs - logs.mean()) ** 2)))
    return from_log_se(theta, se_log, b - 1, n, confidence, source)


def from_log_se(theta: float, se_log: float, df: float, n: int, confidence: float,
                source: str | None = None) -> Estimate:
    t = float(_sp.stdtrit(df, 0.5 + confidence / 2)) if math.isfinite(df) else \
        float(_sp.ndtri(0.5 + confidence / 2))
    return Estimate(theta, theta * math.exp(-t * se_log), theta * math.exp(t * se_log), n,
                    confidence, se_log, df, source)


def weighted_mean(values: np.ndarray, weights: np.ndarray, confidence: float,
                  source: str | None = None) -> Estimate:
    """Weighted mean of window means (windows in time order), batch-means jackknife interval."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    ok = np.isfinite(v) & np.isfinite(w) & (w > 0)
    if not ok.all():
        v, w = v[ok], w[ok]
    if len(v) >= MIN_WINDOWS and not np.any(v):
        return Estimate(0.0, 0.0, 0.0, len(v), confidence, 0.0, math.inf, source)

    # the jackknife's delete-one-batch means from per-batch sums (one pass, not B masks)
    n = len(v)
    wv = w * v
    theta = float(np.sum(wv) / np.sum(w)) if n and w.sum() > 0 else math.nan
    if n < MIN_WINDOWS or not np.isfinite(theta) or theta <= 0:
        return insufficient(theta, n, confidence, source)
    starts = batch_starts(n)
    s_wv, s_w = np.add.reduceat(wv, starts), np.add.reduceat(w, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        loo = (s_wv.sum() - s_wv) / (s_w.sum() - s_w)
    if not (np.isfinite(loo).all() and (loo > 0).all()):
        return insufficient(theta, n, confidence, source)
    logs = np.log(loo)
    b = len(logs)
    se_log = math.sqrt((b - 1) / b * float(np.sum((logs - logs.mean()) ** 2)))
    return from_log_se(theta, se_log, b - 1, n, confidence, source)


def constant(value: float, sd: float | None, confidence: float, source: str) -> Estimate:
    """A stated value, optionally with a standard uncertainty σ (normal, known σ)."""
    if not sd:
        return Estimate(value, value, value, None, confidence, 0.0, math.inf, source)
    return from_log_se(value, sd / value, math.inf, None, confidence, source)


def combine(estimate: float, parts: Sequence[tuple[Estimate, int]], confidence: float,
            source: str | None = None) -> Estimate:
    """Propagate independent estimates into a product of powers Π θ_i^{p_i} (p = ±1).

    Relative variances add (delta method on the log scale); degrees of freedom by
    Welch–Satterthwaite.  Insufficient if any part is."""
    n = min((e.n for e, _ in parts if e.n), default=0)
    if any(not e.sufficient for e, _ in parts):
        return insufficient(estimate, n, confidence, source)
    var = sum((p * e.se_log) ** 2 for e, p in parts)
    if var == 0:
        return Estimate(estimate, estimate, estimate, n, confidence, 0.0, math.inf, source)
    denom = sum((p * e.se_log) ** 4 / e.df for e, p in parts if math.isfinite(e.df) and e.df > 0)
    df = var ** 2 / denom if denom > 0 else math.inf
    return from_log_se(estimate, math.sqrt(var), df, n, confidence, source)
