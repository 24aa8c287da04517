"""Estimators over independent units (requests, runs): a ratio of sums with its linearised
standard error, a mean, a share with its Wilson interval, and the t quantile they use.  The
bottom of the analysis layer: requests.py, acceptance.py, breakeven.py and whatif's modules take
them from here (requests.py re-exports them)."""
from __future__ import annotations

import math

import numpy as np

from .. import distributions as dist
from ..stats import Estimate, insufficient


MIN_REQUESTS = 2        # fewer requests in a group give no interval (stats.MIN_UNITS)


def _tq(df: float, confidence: float) -> float:
    return float(dist.stdtrit(df, 0.5 + confidence / 2))


def ratio_estimate(y: np.ndarray, x: np.ndarray, confidence: float,
                   source: str | None = None) -> Estimate:
    """Σy / Σx over independent units, with the linearised (ratio-estimator) standard error and
    a t interval on n − 1 df; insufficient below MIN_REQUESTS units."""
    n = len(x)
    sx = float(np.sum(x))
    r = float(np.sum(y)) / sx if sx > 0 else math.nan
    if n < MIN_REQUESTS or not math.isfinite(r) or r <= 0:
        return insufficient(r, n, confidence, source)
    e = y - r * x
    se = math.sqrt(n / (n - 1) * float(np.sum(e * e))) / sx
    t = _tq(n - 1, confidence)
    return Estimate(r, r - t * se, r + t * se, n, confidence, se / r, n - 1, source)


def mean_estimate(v: np.ndarray, confidence: float, source: str | None = None) -> Estimate:
    """The unweighted mean over independent units with a t interval."""
    n = len(v)
    m = float(np.mean(v)) if n else math.nan
    if n < MIN_REQUESTS or not math.isfinite(m):
        return insufficient(m, n, confidence, source)
    se = float(np.std(v, ddof=1)) / math.sqrt(n)
    t = _tq(n - 1, confidence)
    return Estimate(m, m - t * se, m + t * se, n, confidence, se / m if m > 0 else None,
                    n - 1, source)


def wilson(k: int, n: int, confidence: float) -> tuple[float, float | None, float | None]:
    """A share k / n with its Wilson score interval (None below MIN_REQUESTS)."""
    if n == 0:
        return math.nan, None, None
    p = k / n
    if n < MIN_REQUESTS:
        return p, None, None
    z = float(dist.ndtri(0.5 + confidence / 2))
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return p, max(0.0, c - h), min(1.0, c + h)
