"""Statistics for window means: numpy and eaglelog.distributions, no pandas, no printing.

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
* Long series (LONG_SERIES_MIN windows or more, enough for MIN_BATCHES batches of C_TAU
  autocorrelation times) take batch means sized from the data.  Shorter ones — the profiler
  readout of 8 blocks, a few minutes of decode lines — and long ones too autocorrelated for
  that take each unit (a window, a block, a request; at most MAX_UNITS contiguous groups) as a
  sample of an AR(1) series whose lag-1 autocorrelation is at least SHORT_PHI (a stated
  allowance, docs/statistics.md) or what the data show when they show more; the variance is
  corrected for it exactly and the degrees of freedom follow it (``short_interval``).
* Fewer than 2 units give no interval: the answer is "insufficient data".
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

# the t and normal quantiles in pure Python (eaglelog/distributions.py): importing
# scipy.special took 0.35 s of a 10 MB summary
from . import distributions as dist

MIN_WINDOWS = 10
MIN_BATCHES = 5
MAX_BATCHES = 20
MIN_UNITS = 2        # fewer independent units than this: insufficient data

# --- batches sized from the data (the estimators of analysis/rate.py; docs/statistics.md)
MIN_SERIES = 30      # fewer windows than this give no interval
MAX_PLANNED = 30     # batches at most
C_TAU = 3.0          # a batch spans at least this many integrated autocorrelation times
FINE = 4096          # the sums are kept over at most this many blocks of consecutive windows
# --- short series (stats.short_interval; docs/statistics.md, "Short runs")
LONG_SERIES_MIN = 100   # batch means from this many windows up (when they make MIN_BATCHES)
SHORT_PHI = 0.3         # the allowance: lag-1 autocorrelation of consecutive windows assumed
BLOCK_PHI = 0.15        # … of consecutive EAGLE3_PROF blocks (docs/statistics.md, "Short runs")
MAX_UNITS = 100         # a short-series interval groups the windows into at most this many
ESTIMATE_PHI_FROM = 10  # units from which the data's own autocorrelation can raise the allowance
MAX_PHI = 0.98
STEEP_PHI = 0.5         # from this φ up, κ is averaged over φ's own sampling error
ARMA_FROM = 30          # units from which short_phi's ARMA(1,1) view is taken (r₂ / r₁)


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
    # "short": the short-series rule gave the interval (fewer than LONG_SERIES_MIN units, or
    # too autocorrelated for MIN_BATCHES batches); None: batch means, or a derived estimate
    basis: str | None = None

    @property
    def sufficient(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    def to_dict(self) -> dict:
        d = {"estimate": _clean(self.estimate), "ci_low": _clean(self.ci_low),
             "ci_high": _clean(self.ci_high), "n": self.n}
        if self.source is not None:
            d["source"] = self.source
        return d

    # --- as a number: the point estimate, where that is unambiguous (docs/api.md, "An
    # Estimate as a number").  ``==`` keeps the dataclass's meaning (every field equal, so
    # hashing is unchanged) and an Estimate never equals a number: ``float(e) == x`` says
    # that.  Ordering is against real numbers only: two Estimates are compared by their
    # intervals (eaglelog.compare), not by their points, so ``e1 < e2`` is a TypeError.

    def __float__(self) -> float:
        """The point estimate (nan when there is none)."""
        return math.nan if self.estimate is None else float(self.estimate)

    def __format__(self, spec: str) -> str:
        """``f"{e:.3f}"`` formats the point estimate; an empty spec is ``str(e)``."""
        if not spec:
            return str(self)
        return format(float(self), spec)

    def _point(self, other, op: str) -> float:
        if isinstance(other, Estimate):
            raise TypeError(f"'{op}' between two Estimates is ambiguous (their intervals may "
                            "overlap): compare their .estimate, or use eaglelog.compare")
        if isinstance(other, bool) or not isinstance(other, numbers.Real):
            raise _NotReal
        return float(self)

    def __lt__(self, other):
        try:
            return self._point(other, "<") < other
        except _NotReal:
            return NotImplemented

    def __le__(self, other):
        try:
            return self._point(other, "<=") <= other
        except _NotReal:
            return NotImplemented

    def __gt__(self, other):
        try:
            return self._point(other, ">") > other
        except _NotReal:
            return NotImplemented

    def __ge__(self, other):
        try:
            return self._point(other, ">=") >= other
        except _NotReal:
            return NotImplemented


class _NotReal(Exception):
    """(an ordering of an Estimate with something that is not a real number: NotImplemented)"""



def _clean(v):
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


def binom_tail(k: int, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p), exactly."""
    return float(sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j)
                     for j in range(max(k, 0), n + 1)))


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

    ``fn`` takes a boolean mask over n independent units (requests, in time order) and returns
    a positive statistic.  Up to MAX_UNITS units, each deleted in turn (the delete-one
    jackknife: whatever order the units come in, the same interval); beyond, B = n_batches(n)
    contiguous batches.  The interval is exp(log θ ± t_{B-1} · se_log).  Fewer than MIN_UNITS
    units: no interval."""
    theta = float(fn(np.ones(n, dtype=bool)))
    if n < MIN_UNITS or not np.isfinite(theta) or theta <= 0:
        return insufficient(theta, n, confidence, source)
    labels = batch_labels(n, n if n <= MAX_UNITS else n_batches(n))
    b = int(labels.max()) + 1
    logs = np.empty(b)
    for k in range(b):
        v = float(fn(labels != k))
        if not np.isfinite(v) or v <= 0:
            return insufficient(theta, n, confidence, source)
        logs[k] = math.log(v)
    se_log = math.sqrt((b - 1) / b * float(np.sum((logs - logs.mean()) ** 2)))
    return from_log_se(theta, se_log, b - 1, n, confidence, source)


# ----------------------------------------------------------------------------- short series

def ar1_kappa(k: int, phi: float) -> float:
    """The factor that makes k × (sample variance) unbiased for Var(Σ x) when x_1 … x_k is a
    stationary AR(1) series with lag-1 autocorrelation φ: V / (k/(k−1) (k − V/k)), V = k +
    2 Σ_j (k − j) φ^j the variance of the sum in units of var(x).  (1 + φ)/(1 − φ) at k = 2,
    tending to the same as k grows."""
    if k < 2 or phi <= 0:
        return 1.0
    j = np.arange(1, k, dtype=float)
    v = k + 2.0 * float(np.sum((k - j) * phi ** j))
    return v / (k / (k - 1) * (k - v / k))


def short_df(k: int, phi: float) -> float:
    """Degrees of freedom of a variance from k units of an AR(1) series: (k − 1) / τ₂, τ₂ =
    (1 + φ²)/(1 − φ²) the autocorrelation time of the squares (at least 1)."""
    if phi <= 0:
        return float(max(k - 1, 1))
    return max(1.0, (k - 1) * (1 - phi * phi) / (1 + phi * phi))


def short_phi(dev: np.ndarray, floor: float = SHORT_PHI,
              lifetime: float | None = None) -> float:
    """The lag-1 autocorrelation a short-series interval assumes for units whose deviations
    from their mean are ``dev`` (in time order): the stated allowance ``floor`` (SHORT_PHI for
    decode and metrics windows, BLOCK_PHI for EAGLE3_PROF blocks), or more where
    ESTIMATE_PHI_FROM units or more show more — their lag-1 autocorrelation, corrected for its
    bias of about −(1 + 3φ)/k (Kendall), or what their integrated autocorrelation time τ says,
    (τ − 1)/(τ + 1), whichever is larger.  ``lifetime``: requests live that many units (a
    window's accept length averages the requests in it, and a request's acceptance is its own
    for its life): a lag-1 autocorrelation ρ₁ from requests that live L units decays over L
    units (the shared part of two windows L − k of L), τ ≈ 1 + ρ₁ L, which the lag-1 view of
    an AR(1) series misses; the τ it gives bounds τ below (capped at the units there are)."""
    k = len(dev)
    phi = floor
    if k >= ESTIMATE_PHI_FROM:
        ss = float(np.dot(dev, dev))
        if ss > 0:
            r1 = float(np.dot(dev[1:], dev[:-1])) / ss
            tau = autocorr_time(dev)
            r1c = r1 + (1 + 3 * r1) / k
            phi = max(phi, r1c, (tau - 1) / (tau + 1))
            if k >= ARMA_FROM and r1c >= STEEP_PHI:
                # a slow latent level under fast noise (an AR(1) signal plus white noise: an
                # ARMA(1,1) series, r_h = r₁ ψ^(h−1)): the lag-1 is the signal's ψ attenuated
                # by the noise, and an AR(1) at φ = r₁ halves τ = 1 + 2 r₁ / (1 − ψ) when the
                # signal is 90 % of the variance (simulated, ar09_100: ψ 0.9, r₁ 0.81)
                r2 = float(np.dot(dev[2:], dev[:-2])) / ss
                psi = min((r2 + (1 + 3 * r2) / k) / r1c, MAX_PHI)
                if psi > r1c:
                    tau_arma = 1 + 2 * r1c / (1 - psi)
                    phi = max(phi, (tau_arma - 1) / (tau_arma + 1))
            if lifetime is not None and lifetime > 1 and r1c > 0:
                tau_life = 1 + r1c * min(lifetime, k)
                phi = max(phi, (tau_life - 1) / (tau_life + 1))
    return float(min(phi, MAX_PHI))


def short_se(dev: np.ndarray, floor: float = SHORT_PHI,
             lifetime: float | None = None) -> tuple[float, float, float]:
    """(se of the sum, df, φ) of units whose sums deviate by ``dev`` from their mean, under
    the short-series model: k/(k−1) Σ dev² × ar1_kappa(k, φ), φ = short_phi(dev)."""
    k = len(dev)
    phi = short_phi(dev, floor, lifetime)
    var = k / (k - 1) * float(np.dot(dev, dev)) * short_kappa(k, phi, floor)
    return math.sqrt(max(var, 0.0)), short_df(k, phi), phi


def short_kappa(k: int, phi: float, floor: float) -> float:
    """ar1_kappa at φ, or, where φ came from the data (above the allowance), its mean over φ's
    own sampling error (σ ≈ √((1 − φ²)/k)): three-point Gauss–Hermite, φ ± √3 σ weighted 1/6
    and 2/3, clipped to [floor, MAX_PHI], from STEEP_PHI up.  κ is convex in φ and steep near
    1, so a φ estimated from 100 strongly autocorrelated windows (0.87 ± 0.05) understates it;
    the mean over φ's uncertainty does not (simulated, 200 runs: latent ρ 0.9 over 100
    windows, coverage 90 → 92 %; 19 windows of 8 clients, 90 → 94 %).  Below STEEP_PHI κ is
    nearly linear and the mean changes little but what it costs: at a true lag-1 of 0.3 over
    30 windows 4.5 points of power."""
    kap = ar1_kappa(k, phi)
    if phi < STEEP_PHI or phi <= floor + 1e-12 or k < ESTIMATE_PHI_FROM:
        return kap
    s = math.sqrt(3 * max(1 - phi * phi, 0.0) / k)
    lo = ar1_kappa(k, min(max(phi - s, floor), MAX_PHI))
    hi = ar1_kappa(k, min(phi + s, MAX_PHI))
    return (lo + 4 * kap + hi) / 6


def unit_labels(k: int) -> tuple[np.ndarray, int]:
    """Labels grouping k blocks (in time order) into at most MAX_UNITS contiguous units."""
    m = min(k, MAX_UNITS)
    return (np.arange(k, dtype=np.int64) * m) // max(k, 1), m


MAX_LOG_HALF_WIDTH = 700.0   # e^700 ≈ 1e304: an interval's half width on the log scale
                             # beyond which its upper end is no float


def from_log_se(theta: float, se_log: float, df: float, n: int, confidence: float,
                source: str | None = None) -> Estimate:
    t = float(dist.stdtrit(df, 0.5 + confidence / 2)) if math.isfinite(df) else \
        float(dist.ndtri(0.5 + confidence / 2))
    if t * se_log > MAX_LOG_HALF_WIDTH:
        # an interval past any number (a damaged value among the units: a negative TOTAL in
        # one EAGLE3_PROF block, fuzz seed 54): no interval, not an overflow
        return insufficient(theta, n, confidence, source)
    return Estimate(theta, theta * math.exp(-t * se_log), theta * math.exp(t * se_log), n,
                    confidence, se_log, df, source)


def weighted_mean(values: np.ndarray, weights: np.ndarray, confidence: float,
                  source: str | None = None, resolution: float = 0.0,
                  floor: float = SHORT_PHI) -> Estimate:
    """Weighted mean of window means (windows in time order), with an interval from batch
    means sized from the data (influence_estimates: batches several autocorrelation times
    long; fewer than MIN_SERIES windows or MIN_BATCHES batches: insufficient data).
    ``resolution``: half a unit of the values' last printed digit; a series constant at that
    precision gets the rounding error (resolution / √3) as its standard error, not zero."""
    return weighted_mean_batches(values, weights, confidence, source, resolution, floor)[0]


def weighted_mean_batches(values: np.ndarray, weights: np.ndarray, confidence: float,
                          source: str | None = None, resolution: float = 0.0,
                          floor: float = SHORT_PHI) -> tuple[Estimate, tuple[float, ...]]:
    """weighted_mean, and each batch's own estimate on the log scale (for a rank test)."""
    v = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    ok = np.isfinite(v) & np.isfinite(w) & (w > 0)
    if not ok.all():
        v, w = v[ok], w[ok]
    n = len(v)
    W = float(w.sum()) if n else 0.0
    theta = float(np.dot(w, v) / W) if W > 0 else math.nan
    if n >= MIN_UNITS and theta == 0 and not np.any(v):
        return Estimate(0.0, 0.0, 0.0, n, confidence, 0.0, math.inf, source), ()
    if not (math.isfinite(theta) and theta > 0):
        return insufficient(theta, n, confidence, source), ()
    terms = w * (v - theta) / W / theta
    (est,), facts = influence_estimates([theta], [block_sums(terms)], n, confidence, [source],
                                        floor=floor, tau_fact=False)
    if resolution and est.sufficient:
        floor = resolution / math.sqrt(3) / theta
        if est.se_log < floor:
            est = from_log_se(theta, floor, est.df, n, confidence, source)
    logs = facts.get("batch_logs") or [()]
    return est, logs[0]


def half_unit(values: np.ndarray) -> float:
    """Half a unit of the last digit the values were printed with (0 when they need more than
    6 decimals: not a printed quantity)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return 0.0
    for d in range(7):
        if np.all(np.abs(v * 10 ** d - np.round(v * 10 ** d)) < 1e-6):
            return 0.5 * 10.0 ** -d
    return 0.0


def constant(value: float, sd: float | None, confidence: float, source: str) -> Estimate:
    """A stated value, optionally with a standard uncertainty σ (normal, known σ)."""
    if not sd:
        return Estimate(value, value, value, None, confidence, 0.0, math.inf, source)
    return from_log_se(value, sd / value, math.inf, None, confidence, source)


def welch_df(parts: Sequence[tuple[float, float | None]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of independent variances (se, df)."""
    var = sum(se * se for se, _ in parts)
    den = sum(se ** 4 / df for se, df in parts if df is not None and math.isfinite(df) and df > 0)
    return var * var / den if den > 0 else math.inf


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


# ----------------------------------------------------------------------------- data-sized batches

LONG_SERIES = 1 << 16     # autocorr_time: longer series reach for their lags in steps


def _fast_len(n: int) -> int:
    """The least 2^a 3^b 5^c ≥ n: a length the FFT takes in few radix passes."""
    best = 1 << int(n - 1).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            p = p35
            while p < n:
                p *= 2
            best = min(best, p)
            p35 *= 3
        p5 *= 5
    return best


def autocorr_time(u: np.ndarray, where: np.ndarray | None = None) -> float:
    """Integrated autocorrelation time τ = 1 + 2 Σ_k ρ_k of a series (in units of its samples),
    by Geyer's initial monotone sequence estimator: the sums of adjacent autocorrelation
    pairs Γ_m = ρ_2m + ρ_2m+1 are added while positive, made non-increasing.  At least 1 (a
    negatively correlated series is treated as independent: the conservative side).
    ``where``: of the series u[where] (read into the FFT's own buffer: no copy of it)."""
    u = np.asarray(u, dtype=float)
    n = len(u) if where is None else int(np.count_nonzero(where))
    if n < 4:
        return 1.0
    m = (n - 1) // 2
    # the autocovariances up to lag `lags` need an FFT of n + lags points, not 2n: on a long
    # series the pairs turn negative within a few hundred lags, so a short reach is tried
    # first and doubled until the sequence stops inside it (a series of millions of windows:
    # half the FFT's length, half its time)
    lags = n if n <= LONG_SERIES else 4096
    # the deviations d = u − ū are made in a zero-padded buffer of the first FFT's length (the
    # padded copy rfft would make, and d, are one array; what is read of d after the FFTs, its
    # batch means, is read before them: a series of millions of windows was a summary's peak)
    def deviations(size: int) -> np.ndarray:
        buf = np.zeros(size)
        d = buf[:n]
        if where is None:
            d[:] = u
        else:
            np.compress(where, u, out=d)
        np.subtract(d, d.mean(), out=d)
        return buf

    buf = deviations(_size(n, lags))
    d = buf[:n]
    var = float(np.dot(d, d)) / n
    if not var > 0:
        return 1.0
    bm = None
    if n >= 40:
        b = 10
        length = n // b
        bm = d[:b * length].reshape(b, length).mean(axis=1)
    del d
    while True:
        size = _size(n, lags)
        if buf is None:        # (a longer reach, rare: the same deviations made again)
            buf = deviations(size)
        f = np.fft.rfft(buf)
        buf = None             # (let go before the inverse: not kept for a reach it seldom needs)
        np.multiply(f, np.conj(f), out=f)       # (|f|², in f's own array)
        acov = np.fft.irfft(f, size)[:min(n, lags)] / n
        del f
        rho = acov / acov[0]
        mm = min(m, len(rho) // 2)
        pairs = rho[0:2 * mm:2] + rho[1:2 * mm:2]
        stop = np.flatnonzero(pairs <= 0)
        if len(stop) or lags >= n:
            break
        lags *= 4
    pairs = pairs[:stop[0]] if len(stop) else pairs
    if not len(pairs):
        return 1.0
    pairs = np.minimum.accumulate(pairs)
    tau = float(-1.0 + 2.0 * pairs.sum())
    if bm is not None:
        # the initial sequence is short-sighted on a series only some τ long: the batch-means
        # view at 10 batches (τ ≈ L · var(batch means) / var) is taken when it says more
        tau = max(tau, length * float(np.dot(bm, bm)) / (b - 1) / var)
    return max(1.0, tau)


def _size(n: int, lags: int) -> int:
    """The FFT length autocorr_time takes for lags ``lags`` of n points."""
    return _fast_len(n + lags - 1) if n > LONG_SERIES else 1 << int(2 * n - 1).bit_length()


def _tau_windows(u: np.ndarray, per_block: float) -> float:
    """τ of a series kept as block sums, in windows (a block holds ``per_block`` of them)."""
    return autocorr_time(u) * (per_block if per_block > 1 else 1.0)


def batch_means_inflation(tau: float, length: float) -> float:
    """The factor on a batch-means standard error for batches ``length`` samples long of a
    series with integrated autocorrelation time τ: 1/√(1 − τ/L).  Batch means underestimate the
    variance of the mean by about τ/(2L) to first order (exact for AR(1) as ρ → 1); twice that
    is used because τ itself is estimated low on series only some 30 τ long, which the
    simulator measured (docs/statistics.md: accept-length coverage 90 % → 92.5 % on the long
    stationary runs, 97 % on the strongly autocorrelated ones)."""
    return 1.0 / math.sqrt(max(1.0 - tau / length, 0.5))


def plan_batches(n: int, tau: float) -> int | None:
    """How many contiguous batches n samples of autocorrelation time τ make: each at least
    C_TAU × τ samples long, at most MAX_PLANNED; None when that leaves fewer than MIN_BATCHES
    (too little data for an interval)."""
    length = max(1, math.ceil(C_TAU * tau))
    b = min(MAX_PLANNED, n // length)
    return b if b >= MIN_BATCHES else None


@dataclass
class Blocks:
    """Per-window contributions to some sums, summed over at most FINE blocks of consecutive
    windows (in time order): all a statistic of these sums needs for its jackknife and for the
    autocorrelation of its terms, in O(FINE) memory whatever the number of windows."""

    sums: np.ndarray     # blocks × columns
    counts: np.ndarray   # windows per block
    n: int               # windows

    @classmethod
    def of(cls, columns: Sequence, n: int | None = None) -> "Blocks":
        """``columns``: arrays, or callables making them (each made, summed and dropped in
        turn: on millions of windows, five products at once were the peak of a summary)."""
        if n is None:
            first = columns[0]
            n = len(first() if callable(first) else first)
        k = min(n, FINE)
        ids = _block_ids(n, k) if n else np.zeros(0, dtype=np.int64)
        sums = np.empty((k, len(columns)))
        for j, col in enumerate(columns):
            v = col() if callable(col) else col
            sums[:, j] = np.bincount(ids, weights=np.asarray(v, dtype=float), minlength=k)
            del v
        return cls(sums, np.bincount(ids, minlength=k).astype(float), n)


def _gradient(f: Callable[[np.ndarray], np.ndarray], total: np.ndarray, out: np.ndarray,
              which: Sequence[int]) -> np.ndarray:
    """∂ log f_i / ∂ total_j for the outputs ``which`` (central differences)."""
    g = np.zeros((len(which), len(total)))
    w = np.asarray(which, dtype=np.int64)
    for j in range(len(total)):
        h = 1e-6 * max(abs(total[j]), 1e-12)
        up, dn = total.copy(), total.copy()
        up[j] += h
        dn[j] -= h
        fu = np.asarray(f(up), dtype=float)[w]
        fd = np.asarray(f(dn), dtype=float)[w]
        ok = (fu > 0) & (fd > 0)     # (one vector op an input: a per-position list of
        if ok.any():                 # thousands has thousands of outputs; issue 36 item 10)
            g[ok, j] = (np.log(fu[ok]) - np.log(fd[ok])) / (2 * h)
    return g


def _terms(dev: np.ndarray, g: np.ndarray) -> np.ndarray:
    """dev @ g.T (blocks × outputs): each output's linearised terms.  A ratio of sums depends on
    two or three of them, so g is sparse: summed over its nonzeros only, the work grows with
    blocks × outputs, not blocks × outputs × columns (a per-position list of 3,000 positions
    has 6,001 outputs over 3,002 sums)."""
    r, c = np.nonzero(g)
    if len(r) > 0.25 * g.size:
        return dev @ g.T
    out = np.zeros((dev.shape[0], g.shape[0]))
    if len(r):
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        out[:, r[starts]] = np.add.reduceat(dev[:, c] * g[r, c], starts, axis=1)
    return out


def jackknife_sums(blocks: Blocks, f: Callable[[np.ndarray], np.ndarray], confidence: float,
                   sources: Sequence[str | None] | None = None,
                   tau_of: Sequence[int] | None = None) -> tuple[list[Estimate], dict]:
    """Estimates of the outputs of ``f`` (a vector function of the column sums), jointly: one
    set of contiguous batches, each output's delete-one-batch jackknife on the log scale,
    Student t with B − 1 degrees of freedom.  The number of batches comes from the data: the
    integrated autocorrelation time of each output's linearised terms (outputs ``tau_of``, by
    default all) — batches at least C_TAU times longer than the largest; fewer than MIN_SERIES
    windows or MIN_BATCHES batches: insufficient data.  Returns (estimates, facts) where facts
    holds tau (in windows), batches and the block size."""
    total = blocks.sums.sum(axis=0)
    theta = np.asarray(f(total), dtype=float)
    k = len(blocks.counts)
    srcs = list(sources) if sources is not None else [None] * len(theta)
    facts = {"tau": math.nan, "batches": 0, "windows": blocks.n}

    def none():
        return [insufficient(t, blocks.n, confidence, s) for t, s in zip(theta, srcs)], facts
    ok = np.isfinite(theta) & (theta > 0)
    if blocks.n < MIN_UNITS or k < MIN_UNITS or not ok.any():
        return none()
    which = [i for i in (tau_of if tau_of is not None else range(len(theta))) if ok[i]]
    per_block = blocks.n / k                      # windows a block holds
    every = [i for i in range(len(theta)) if ok[i]]
    taus = np.ones(len(theta))
    if every:
        g = _gradient(f, total, theta, every)
        dev = blocks.sums - np.outer(blocks.counts / blocks.n, total)
        for i, terms in zip(every, _terms(dev, g).T):
            taus[i] = _tau_windows(terms, per_block)
    tau = max([1.0] + [float(taus[i]) for i in which])
    facts["tau"] = tau
    b = plan_batches(blocks.n, tau) if blocks.n >= LONG_SERIES_MIN else None
    if b is None or b > k:
        return _short_sums(blocks, f, theta, ok, confidence, srcs, facts)
    facts["batches"] = b
    labels = (np.arange(k) * b) // k
    bsums = np.zeros((b, blocks.sums.shape[1]))
    np.add.at(bsums, labels, blocks.sums)
    loo = np.array([np.asarray(f(total - bsums[i]), dtype=float) for i in range(b)])
    length = blocks.n / b
    out = []
    t = float(dist.stdtrit(b - 1, 0.5 + confidence / 2))
    for i, th in enumerate(theta):
        col = loo[:, i]
        if not ok[i] or not (np.isfinite(col).all() and (col > 0).all()):
            out.append(insufficient(th, blocks.n, confidence, srcs[i]))
            continue
        logs = np.log(col)
        # each output's own batch-means bias (influence_estimates)
        se = batch_means_inflation(float(taus[i]), length) * \
            math.sqrt((b - 1) / b * float(np.sum((logs - logs.mean()) ** 2)))
        out.append(Estimate(float(th), float(th) * math.exp(-t * se), float(th) * math.exp(t * se),
                            blocks.n, confidence, se, b - 1, srcs[i]))
    return out, facts


def _short_sums(blocks: Blocks, f, theta: np.ndarray, ok: np.ndarray, confidence: float,
                srcs: list, facts: dict) -> tuple[list[Estimate], dict]:
    """jackknife_sums on a short series: each unit (at most MAX_UNITS contiguous groups of the
    blocks) deleted in turn, the jackknife variance × ar1_kappa for the lag-1 autocorrelation
    short_phi finds in the deleted estimates, Student t with short_df degrees of freedom."""
    labels, m = unit_labels(len(blocks.counts))
    usums = np.zeros((m, blocks.sums.shape[1]))
    np.add.at(usums, labels, blocks.sums)
    total = usums.sum(axis=0)
    loo = np.array([np.asarray(f(total - usums[i]), dtype=float) for i in range(m)])
    facts.update(batches=m, short=True, phi={})
    out = []
    for i, th in enumerate(theta):
        col = loo[:, i]
        if not ok[i] or not (np.isfinite(col).all() and (col > 0).all()):
            out.append(insufficient(th, blocks.n, confidence, srcs[i]))
            continue
        dev = np.log(col) - float(np.mean(np.log(col)))
        phi = short_phi(dev)
        se = math.sqrt((m - 1) / m * float(np.dot(dev, dev)) * short_kappa(m, phi, SHORT_PHI))
        facts["phi"][i] = phi
        out.append(dataclasses.replace(
            from_log_se(float(th), se, short_df(m, phi), blocks.n, confidence, srcs[i]),
            basis="short"))
    return out, facts


def block_sums(values: np.ndarray, n: int | None = None) -> np.ndarray:
    """A per-window series summed over at most FINE blocks of consecutive windows."""
    v = np.asarray(values, dtype=float)
    n = len(v) if n is None else n
    k = min(n, FINE)
    if k == n:
        return v.copy()
    return np.bincount(_block_ids(n, k), weights=v, minlength=k)


_IDS: list = [None]


def _block_ids(n: int, k: int) -> np.ndarray:
    """Each of n windows' block among k: made once for the last n (a fit sums a dozen series
    of the same windows into blocks, and this was a third of each sum's time)."""
    got = _IDS[0]
    if got is None or got[0] != (n, k):
        ids = (np.arange(n, dtype=np.int64) * k) // n
        ids.setflags(write=False)
        got = _IDS[0] = ((n, k), ids)
    return got[1]


def influence_estimates(thetas: Sequence[float], influences: Sequence[np.ndarray | None], n: int,
                        confidence: float, sources: Sequence[str | None] | None = None,
                        tau_of: Sequence[int] | None = None,
                        floor: float = SHORT_PHI,
                        lifetime: float | None = None,
                        tau_fact: bool = True) -> tuple[list[Estimate], dict]:
    """Estimates θ_i with intervals from their linearised terms: ``influences[i]`` holds, per
    block of consecutive windows (stats.block_sums of the per-window terms), the term of
    log θ_i (Σ over all windows = 0 up to rounding), so that log θ̂_i − log θ_i ≈ Σ terms.
    One set of contiguous batches for all (sized from the largest integrated autocorrelation
    time of the terms of ``tau_of``, in windows; each at least C_TAU times longer), the
    variance of each sum from its batch sums, Student t with B − 1 degrees of freedom; fewer
    than MIN_SERIES windows or MIN_BATCHES batches: insufficient data.  An influence of None
    is an exact value.  Returns (estimates, facts: tau, batches, batch_logs); ``tau_fact``
    False: a caller that reads no tau, whose short series (the short-series rule, which needs
    none) leave it NaN."""
    srcs = list(sources) if sources is not None else [None] * len(thetas)
    facts = {"tau": math.nan, "batches": 0, "windows": n}
    ok = [u is not None and math.isfinite(t) and t > 0 for t, u in zip(thetas, influences)]

    def none():
        return [Estimate(float(t), float(t), float(t), n, confidence, 0.0, math.inf, s)
                if u is None and math.isfinite(t) else insufficient(t, n, confidence, s)
                for t, u, s in zip(thetas, influences, srcs)], facts
    if n < MIN_UNITS or not any(ok):
        return none()
    k = len(next(u for u in influences if u is not None))
    if k < MIN_UNITS:
        return none()
    per_block = n / k
    if not tau_fact and n < LONG_SERIES_MIN:
        return _short_influence(thetas, influences, srcs, ok, n, confidence, facts, floor,
                                per_block_life(lifetime, n, k))
    taus: list[float | None] = [None] * len(thetas)

    def tau_of_output(i: int) -> float:
        # (each output's τ when it is asked for: the short-series rule reads only those of
        # tau_of, and a small log's fit has seven outputs)
        if taus[i] is None:
            u = influences[i]
            taus[i] = max(_tau_windows(u, per_block), life_tau(u, lifetime, per_block)) \
                if ok[i] else 1.0
        return taus[i]
    tau = max([1.0] + [tau_of_output(i) for i in
                       (tau_of if tau_of is not None else range(len(thetas))) if ok[i]])
    facts["tau"] = tau
    b = plan_batches(n, tau) if n >= LONG_SERIES_MIN else None
    if b is None or b > k:
        return _short_influence(thetas, influences, srcs, ok, n, confidence, facts, floor,
                                per_block_life(lifetime, n, k))
    facts["batches"] = b
    length = n / b
    # the batches are one set, sized from the longest τ; the batch-means bias each output's
    # standard error is corrected for is its own series' (a cycle whose terms are nearly
    # independent is not widened by the accept length's τ: simulated, that took the cycle's
    # coverage to 99 % with width/spread 1.25, docs/statistics.md)
    inflates = [batch_means_inflation(tau_of_output(i), length) for i in range(len(thetas))]
    labels = (np.arange(k) * b) // k

    def batch_means(sums, i):
        return inflates[i] * math.sqrt(b * float(np.var(sums, ddof=1))), b - 1, None
    return _per_output(thetas, influences, srcs, ok, n, confidence, facts, labels, b,
                       batch_means)


def _per_output(thetas, influences, srcs, ok, n: int, confidence: float, facts: dict,
                labels: np.ndarray, b: int, rule) -> tuple[list[Estimate], dict]:
    """Each output's estimate from its terms summed over the ``b`` batches of ``labels``:
    ``rule(sums, i)`` gives (se of log θ_i, df, basis); an influence of None is an exact
    value.  facts gains batch_logs (each batch's own log estimate: what a rank test
    compares)."""
    out = []
    facts["batch_logs"] = []
    for i, (th, u, s, good) in enumerate(zip(thetas, influences, srcs, ok)):
        if u is None:
            out.append(Estimate(float(th), float(th), float(th), n, confidence, 0.0, math.inf, s)
                       if math.isfinite(th) else insufficient(th, n, confidence, s))
            facts["batch_logs"].append(())
            continue
        if not good:
            out.append(insufficient(th, n, confidence, s))
            facts["batch_logs"].append(())
            continue
        sums = np.bincount(labels, weights=u, minlength=b)
        facts["batch_logs"].append(tuple((math.log(th) + b * sums).tolist()))
        se, df, basis = rule(sums, i)
        est = from_log_se(float(th), se, df, n, confidence, s)
        out.append(est if est.basis == basis else dataclasses.replace(est, basis=basis))
    return out, facts


def life_tau(u: np.ndarray, lifetime: float | None, per_block: float = 1.0) -> float:
    """The integrated autocorrelation time (in windows) that requests living ``lifetime``
    windows give a series of terms ``u`` (kept as blocks of ``per_block`` windows): 1 + ρ₁ L,
    ρ₁ its lag-1 autocorrelation (bias-corrected, at least 0) — a correlation the requests
    carry for their life, where the initial sequence of a short series stops early.  1 without
    a lifetime."""
    if lifetime is None or lifetime <= 1 or len(u) < ESTIMATE_PHI_FROM:
        return 1.0
    d = u - u.mean()
    ss = float(np.dot(d, d))
    if not ss > 0:
        return 1.0
    k = len(d)
    r1 = float(np.dot(d[1:], d[:-1])) / ss
    r1c = max(r1 + (1 + 3 * r1) / k, 0.0)
    life = min(lifetime / max(per_block, 1.0), k)
    return (1 + r1c * life) * max(per_block, 1.0)


def per_block_life(lifetime: float | None, n: int, k: int) -> float | None:
    """A lifetime in windows as one in the units of a short-series interval (k blocks of n
    windows, at most MAX_UNITS of them)."""
    if lifetime is None:
        return None
    return lifetime / (n / min(k, MAX_UNITS))


def _short_influence(thetas, influences, srcs, ok, n: int, confidence: float,
                     facts: dict, floor: float = SHORT_PHI,
                     lifetime: float | None = None) -> tuple[list[Estimate], dict]:
    """influence_estimates on a short series (or one too autocorrelated for MIN_BATCHES batches
    of C_TAU τ): the terms summed over at most MAX_UNITS contiguous units, each output's
    variance from its units under the short-series model (short_se), Student t with its
    short_df degrees of freedom.  facts: batches (the units), short, phi (per output)."""
    k = len(next(u for u in influences if u is not None))
    labels, m = unit_labels(k)
    facts.update(batches=m, short=True, phi={})

    def short(sums, i):
        se, df, phi = short_se(sums - sums.mean(), floor, lifetime)
        facts["phi"][i] = phi
        return se, df, "short"
    return _per_output(thetas, influences, srcs, ok, n, confidence, facts, labels, m, short)
