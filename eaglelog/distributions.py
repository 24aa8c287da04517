"""The normal and Student t distribution functions the intervals and tests use, in pure Python.

scipy.special has them (``ndtr``, ``ndtri``, ``stdtr``, ``stdtrit``), but importing it takes
about 0.35 s on the 2-core machine the benchmarks run on, as long as the whole 10 MB summary
target (issue 20).  These are scalar functions; against scipy (tests/test_distributions.py) they
agree to 10⁻¹² (relative: of the quantile, of the smaller tail) for df 0.5–1000 and p 10⁻⁸ …
1 − 10⁻⁸, to 10⁻¹⁰ up to df 10⁶ (the continued fraction's rounding over its ~√ν terms) and
to 10⁻⁹ beyond (the expansions).  Intervals print four significant digits.

* ``ndtr(x)``: Φ(x) = erfc(−x/√2)/2 (math.erfc).
* ``ndtri(p)``: Φ⁻¹(p), Acklam's rational approximation refined by two Halley steps on ndtr.
* ``stdtr(df, t)``: the t CDF, ½ I_{ν/(ν+t²)}(ν/2, ½) in the tail, the regularised incomplete
  beta by its continued fraction (modified Lentz); ndtr for ν = ∞.
* ``stdtrit(df, p)``: its inverse, Newton on stdtr inside a bracket from the Cornish–Fisher
  expansion (Abramowitz & Stegun 26.7.5); exact forms for ν = 1 and 2.
"""
from __future__ import annotations

import functools
import math

__all__ = ["ndtr", "ndtri", "stdtr", "stdtrit"]

_SQRT2 = math.sqrt(2.0)
_EPS = 1e-16

# Acklam's coefficients for the inverse normal CDF (relative error < 1.2e-9 before refinement)
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)


def ndtr(x: float) -> float:
    """The standard normal CDF."""
    return 0.5 * math.erfc(-x / _SQRT2)


def ndtri(p: float) -> float:
    """The standard normal quantile (−inf at 0, inf at 1, NaN outside [0, 1])."""
    p = float(p)
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    lo = 0.02425
    if p < lo:
        q = math.sqrt(-2 * math.log(p))
        x = (((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / \
            ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1)
    elif p > 1 - lo:
        q = math.sqrt(-2 * math.log1p(-p))
        x = -(((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / \
            ((((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1)
    else:
        q = p - 0.5
        r = q * q
        x = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q / \
            (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1)
    for _ in range(2):
        # Halley on Φ(x) − p, the error taken on the smaller tail (no cancellation near 1)
        # (Φ(x) − p = (1 − p) − Q(x) for x > 0: 1 − p is exact for p ≥ ½)
        e = ((1 - p) - 0.5 * math.erfc(x / _SQRT2)) if x > 0 else ndtr(x) - p
        u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
        x = x - u / (1 + x * u / 2)
    return x


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < _EPS:
            break
    return h


def _lbeta_inv(a: float, b: float) -> float:
    """−ln B(a, b) = ln Γ(a + b) − ln Γ(a) − ln Γ(b).  With b = ½ and a large, the difference of
    the two large ln Γ loses ~log10(a ln a) digits: the asymptotic series of
    ln Γ(a + ½) − ln Γ(a) = ½ ln a − 1/(8a) + 1/(192a³) + 1/(640a⁵) − 17/(14336a⁷) instead."""
    big = max(a, b)
    if min(a, b) == 0.5 and big > 1e3:
        return (0.5 * math.log(big) - 1 / (8 * big) + 1 / (192 * big ** 3)
                + 1 / (640 * big ** 5) - 17 / (14336 * big ** 7)) - math.lgamma(0.5)
    return math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 ≤ x ≤ 1, given y = 1 − x as well
    (computed by the caller without cancellation)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    # (the logarithm of whichever of x, y is near 1 from the other: a × ln x with a ~ 10⁶ turns
    # the rounding of x into an error of 10⁻¹⁰)
    lx = math.log1p(-y) if x > 0.5 else math.log(x)
    ly = math.log1p(-x) if y > 0.5 else math.log(y)
    ln = _lbeta_inv(a, b) + a * lx + b * ly
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, y) / b


def _tail(df: float, t: float) -> float:
    """P(T > |t|) for T ~ t(df): ½ I_x(ν/2, ½) at x = ν/(ν + t²)."""
    t2 = t * t
    if df > 1e7:
        # the continued fraction needs ~√ν terms; two Edgeworth terms are exact to O(ν⁻³)
        # there:
        #   F(−|t|) = Φ(−|t|) + φ(t) [(|t|³ + |t|)/(4ν) + (3|t|⁷ − 7|t|⁵ − 5|t|³ − 3|t|)/(96ν²)]
        at = abs(t)
        a1 = (at ** 3 + at) / 4
        a2 = (((3 * at * at - 7) * at * at - 5) * at * at - 3) * at / 96
        return ndtr(-at) + math.exp(-t2 / 2) / math.sqrt(2 * math.pi) * (a1 / df + a2 / df ** 2)
    return 0.5 * _betainc(df / 2, 0.5, df / (df + t2), t2 / (df + t2))


def stdtr(df: float, t: float) -> float:
    """The Student t CDF with ``df`` degrees of freedom (inf: the normal) at ``t``."""
    df, t = float(df), float(t)
    if math.isnan(df) or math.isnan(t) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    if math.isinf(df):
        return ndtr(t)
    tail = _tail(df, t)
    return tail if t < 0 else 1.0 - tail


def _pdf(df: float, t: float) -> float:
    ln = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
          - (df + 1) / 2 * math.log1p(t * t / df))
    return math.exp(ln)


def _cornish_fisher(df: float, z: float) -> float:
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    u = 1.0 / df      # in powers of 1/ν (Horner): a huge ν (a degenerate, near-zero
    return z + u * (g1 + u * (g2 + u * (g3 + u * g4)))    # variance) cannot overflow ν⁴


def stdtrit(df: float, p: float) -> float:
    """The Student t quantile: t with stdtr(df, t) = p."""
    return _stdtrit(float(df), float(p))


@functools.lru_cache(maxsize=4096)
def _stdtrit(df: float, p: float) -> float:
    # (memoised: intervals ask for the same few (B − 1, level) pairs again and again — six a
    # run, 0.3 ms each, were a tenth of a summary of many small logs)
    if math.isnan(df) or math.isnan(p) or df <= 0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if math.isinf(df):
        return ndtri(p)
    if p == 0.5:
        return 0.0
    sign = 1.0 if p > 0.5 else -1.0
    q = 1.0 - p if p > 0.5 else p            # the tail probability, P(T > t) for t > 0
    if df == 1.0:
        return sign / math.tan(math.pi * q)          # cot(πq): no pole to sit near
    if df == 2.0:
        a = 4 * q * (1 - q)
        return sign * (1 - 2 * q) * math.sqrt(2 / a)
    z = -ndtri(q)
    t = _cornish_fisher(df, z) if df >= 3 else z
    if df > 1e7:
        return sign * t                      # the expansion's error is O(ν⁻⁵)
    # a bracket [lo, hi] of the root of tail(t) = q, then Newton kept inside it
    lo, hi = 0.0, max(t, 1e-8)
    while _tail(df, hi) > q:
        lo, hi = hi, hi * 2
        if hi > 1e300:
            return sign * math.inf
    t = min(max(t, lo), hi)
    for _ in range(100):
        f = _tail(df, t) - q                 # decreasing in t
        if f > 0:
            lo = t
        else:
            hi = t
        step = f / _pdf(df, t)
        nt = t + step
        if not lo < nt < hi:
            nt = (lo + hi) / 2
        if abs(nt - t) <= 1e-15 * max(1.0, abs(nt)):
            t = nt
            break
        t = nt
    return sign * t
