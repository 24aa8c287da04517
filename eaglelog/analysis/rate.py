"""The per-stream rate of a run, from its decode windows (docs/statistics.md, "The rate model").

A ``Decode batch`` line closes a window of I = decode_log_interval decode iterations of one
scheduler.  For window j of a series (lines in time order):

* B̃_j, the mean batch size over the window: (r_{j−1} + r_j) / 2 of the printed #running-req
  (r_j alone for the first window of a series); r_j is the batch of the last iteration only;
* y_j, the wall time per iteration, 1000 × a_j × B̃_j / g_j (a_j the accept length: tokens per
  request-step, g_j the gen throughput: tokens over the window's wall time); 1000 × B̃_j / g_j
  without speculation and for vLLM V0, whose throughput counts sequence-steps;
* x_j, the prefill work inside the window: the prompt tokens and the batches of the ``Prefill
  batch`` lines printed in it, and in the window before (a scheduler that runs a prefill's
  forward after the next decode line puts its time there), per iteration; with DP attention the
  prefills of every rank (a prefill on one rank stalls them all);
* w_j = B̃_j × I, the window's request-steps.

The model is y_j = c(B̃_j) + β·x_j + ε_j, with c smooth in B (a quadratic, a control only),
fitted by weighted least squares over the usable windows: not the first of its series, no idle
gap (its timestamps) and no stall (a residual far above the fit: an idle pause the timestamps
cannot show).  The pure-decode cycle weighted by request-steps, the accept length, the rate one
request stream gets and, against a baseline step b(B), the speedup are then

    ĉ = Σ w_j (y_j − β̂·x_j) / Σ w_j          τ̂ = Σ w_j a_j / Σ w_j          rate = τ̂ / ĉ
    b̄ = Σ w_j b(B̃_j) / Σ w_j                 speedup = τ̂ · b̄ / ĉ           break-even = ĉ / b̄

Each window carries its own batch size, so the mix is the run's own (post-stratification by
#running-req, to the window).  All are functions of sums over windows: one jackknife over
contiguous batches of windows, sized from the autocorrelation of the terms
(stats.jackknife_sums), gives their joint intervals.  When no usable window holds prefill work,
β is not needed (the clean-window estimate); when prefill work cannot be told apart from the
cycle (every usable window holds the same prefill), the cycle is an upper bound.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .. import stats
from ..stats import Estimate
# the windows (their home: rate_windows.py), re-exported: rate.Windows, rate.decode_windows, …
from .rate_windows import (  # noqa: F401
    IDLE_FACTOR, IDLE_EXTRA_S, IDLE_PEERS, IDLE_PEER_FACTOR, N_X, USED, FIRST, IDLE, STALL,
    NO_THROUGHPUT, SKIPPED, JUMP, NO_ACCEPT, WHY, PRINTED_STEP, STAMP_VAR, FIELD_VAR,
    PINNED_LEAST, JITTER_LIMIT, NAT, JUMP_SHARE, Windows, _col, decode_windows, SUPPRESSED,
    _timed_steps, _present, _series_rows, _ends, _gap_medians, _by_value, _clocks, _said, _spread,
    _wrapper_jitter, _prefill_jitter, _measured_batch, MIN_VACANCY_PAIRS, MEASURED_TOL,
    MEASURED_TOL_ALL, median, distinct, small_ints, whole_seconds, _blocks, picked_sum)

try:   # the passes over every window in C (setup.py); without it numpy makes them
    from . import _ratekern
except ImportError:  # pragma: no cover - a build without a C compiler
    _ratekern = None
# (EAGLELOG_PURE_PYTHON=1 turns the C passes off, as it does the scanner's)
_PURE = os.environ.get("EAGLELOG_PURE_PYTHON", "") not in ("", "0")


def set_threads(n: int | None = None) -> int:
    """Threads for the C passes over a long run's windows (None: ``_cores.workers()``, the
    scan's rule; at most 8); the count set (1 without them).  A pass over fewer than 2^18
    windows runs on one.  Every number is the same for every count: a pass is split where its
    sums allow (_ratekern.c, "threads")."""
    if _ratekern is None:
        return 1
    if n is None:
        from .._cores import workers
        n = workers()
    return _ratekern.set_threads(n)


set_threads()


def fast_available() -> bool:
    """Whether the fit's passes over every window run in C (_ratekern.c)."""
    return _ratekern is not None and not _PURE


STALL_SIGMAS = 8       # a residual over this many robust σ …
STALL_SHARE = 0.25     # … and over this share of the fitted cycle is a stall
WARMUP_SIGMAS = 3      # a warm-up is left out when its mean is this many SE above the rest
                       # and the batches that found the decode batch drained (idle before them)
CHUNK = 1 << 16         # windows per block of the design's moments (_gram)
NOISE_LIMIT = 0.95     # a direction of the design at most this share rounding error (identified)
SYS_FLOOR = 0.0035     # relative standard uncertainty of a derived cycle from the batch size
                       # inside a window, which no line prints: requests admitted and finishing
                       # inside every window moved the simulated cycle by 0.4 % (docs/statistics.md)

COV_REL = 0.25         # relative uncertainty of the within-window covariance term (within_cov):
                       # its one-step model missed 8–20 % of the simulated term (docs/statistics.md)
EDGE_TOL = 0.02        # a measured mean batch this close outside a baseline's sizes is at its edge
                       # the mean batch of the window between them is not known


                       # demoted to DEBUG: its own length is the median


# ----------------------------------------------------------------------------- warm-up

def _within_clipped(win: Windows, res: np.ndarray, fitted: np.ndarray, mad: float,
                    use: np.ndarray, strata: np.ndarray, *, into_res: bool = False) -> np.ndarray:
    """within_strata of the residuals clipped to ±max(STALL_SIGMAS · mad, STALL_SHARE ·
    |fitted|): in C in two passes (_ratekern.within_clipped), the same numbers.  ``into_res``:
    made in res's own array (each element is read before it is written), which the caller lets
    go of: one array of every window's fewer at the warm-up's peak."""
    if fast_available():
        out = res if into_res and res.dtype == float and res.flags.c_contiguous \
            and res.flags.writeable else np.empty(win.n)
        st = np.ascontiguousarray(strata, dtype=np.int32)
        _ratekern.within_clipped(*_floats(res, fitted), float(STALL_SIGMAS * mad),
                                 float(STALL_SHARE), *_floats(win.w), _mask(use), st,
                                 int(st.max()) + 1 if len(st) else 0, out)
        return out
    limit = np.maximum(STALL_SIGMAS * mad, STALL_SHARE * np.abs(fitted))
    return within_strata(np.clip(res, -limit, limit), win.w, use, strata)


def within_strata(res: np.ndarray, w: np.ndarray, use: np.ndarray,
                  strata: np.ndarray) -> np.ndarray:
    """The residuals of ``use`` less their stratum's weighted mean (NaN elsewhere)."""
    out = np.full(len(res), np.nan)
    idx = np.flatnonzero(use & (strata >= 0))
    if not len(idx):
        return out
    g = strata[idx]
    ww = w[idx]
    m = np.bincount(g, weights=ww * res[idx]) / np.maximum(np.bincount(g, weights=ww), 1e-300)
    out[idx] = res[idx] - m[g]
    return out


def _stalls(use: np.ndarray, res: np.ndarray, fitted: np.ndarray, mad: float) -> np.ndarray:
    """The windows far above the fit: used, and their residual above STALL_SIGMAS · mad and
    above STALL_SHARE × the fitted cycle; a block at a time (no product of every window's)."""
    out = np.empty(len(use), dtype=bool)
    lim = STALL_SIGMAS * mad
    for lo, hi in _blocks(len(use)):
        r = res[lo:hi]
        np.logical_and(use[lo:hi], r > lim, out=out[lo:hi])
        out[lo:hi] &= r > STALL_SHARE * fitted[lo:hi]
    return out


WARMUP_MIN_REL = 0.02   # a warm-up is at least this much slower than the rest (of the cycle)


def warmup_windows(z: np.ndarray, w: np.ndarray, scale: float = 0.0) -> int:
    """How many leading windows a warm-up holds: MSER-5 (the truncation point d that minimises
    Σ_{i>d} (m_i − m̄_d)² / (k − d)² over the means m of 5 windows), kept only when the
    truncated windows' mean is WARMUP_SIGMAS standard errors above the rest's (their SE with the
    autocorrelation time of the rest's means: a batch-size level lasts many windows).  One-sided:
    a warm-up is slower than what follows; a start that is faster is the traffic (in the
    simulator's random batch levels the two-sided test with independent means cut the start
    of 5 of 40 runs, moving the cycle by −1.1 to +1.7 %; this test, none).  0 when the start
    looks like the rest."""
    ok = None
    if fast_available():
        # (the means of 5 in one pass, in C: the same sums)
        m = np.empty(len(z) // 5)
        n = _ratekern.five_means(*_floats(z, w), m)
        m = m[:n // 5]
    else:
        ok = np.flatnonzero(np.isfinite(z) & (w > 0))
        n = len(ok)
    if n < 40:
        return 0
    k = n // 5
    if ok is not None:
        zz, ww = z[ok[:5 * k]], w[ok[:5 * k]]
        starts = np.arange(0, 5 * k, 5)
        m = np.add.reduceat(zz * ww, starts) / np.add.reduceat(ww, starts)
    # Σ_{i≥d} (m_i − m̄_d)² / (k − d)² for every d < k/2, from suffix sums: O(k)
    s1 = np.cumsum(m[::-1])[::-1]
    s2 = np.cumsum((m * m)[::-1])[::-1]
    d = np.arange(k // 2)
    cnt = (k - d).astype(float)
    v = np.maximum(s2[d] - s1[d] ** 2 / cnt, 0.0) / cnt ** 2
    cut = int(np.argmin(v)) if len(v) else 0
    if cut == 0:
        return 0
    head, tail = m[:cut], m[cut:]
    # the means are not independent (a batch-size level, a drifting acceptance lasts many
    # windows): their variance is τ × the naive one, τ the autocorrelation time of the rest
    var = float(np.var(tail, ddof=1)) * stats.autocorr_time(tail)
    se = math.sqrt(var / cut + var / len(tail))
    # a warm-up is slower than what follows (compilation, graph capture, cold caches): a start
    # that is faster is the batch mix or the traffic, not a warm-up
    # … and slower by something that matters: WARMUP_MIN_REL of the cycle (``scale``).  A
    # first level of a sweep that is noisier than the rest (a request's prefill and idle time
    # in every window at batch 1) stood 0.5 % above it at 3 standard errors of the rest's
    if se == 0 or head.mean() - tail.mean() < max(WARMUP_SIGMAS * se, WARMUP_MIN_REL * scale):
        return 0
    if ok is not None:
        return int(ok[5 * cut])
    # (the (5 cut)-th window that counts, found a block at a time: no positions of every one)
    left = 5 * cut
    for lo, hi in _blocks(len(z)):
        at = np.flatnonzero(np.isfinite(z[lo:hi]) & (w[lo:hi] > 0))
        if left < len(at):
            return lo + int(at[left])
        left -= len(at)
    raise AssertionError("warmup_windows: fewer counted windows than the means of 5 hold")


# ----------------------------------------------------------------------------- the model

OUTPUTS = ("accept_len", "cycle_ms", "rate", "step_ms", "speedup", "breakeven_accept_len",
           "cycle_ms_iter")


def _design(win: Windows, scale: tuple[float, float], keep=None,
            rows: np.ndarray | None = None) -> np.ndarray:
    """Regressors per window: 1, u, u² of the batch size centred and scaled to [−1, 1] (so
    that they stay apart from the intercept whatever the range), then the prefill work;
    the columns ``keep`` (default all) of the windows ``rows`` (a mask or positions; default
    all), in Fortran order (the columns are filled one at a time)."""
    cols = list(range(3 + N_X)) if keep is None else list(keep)
    b = win.b if rows is None else win.b[rows]
    x = None
    out = np.empty((len(b), len(cols)), order="F")     # (columns filled contiguously)
    u = None
    if 1 in cols or 2 in cols:
        u = (b - scale[0]) / scale[1]
    for i, c in enumerate(cols):
        if c == 0:
            out[:, i] = 1.0
        elif c == 1:
            out[:, i] = u
        elif c == 2:
            np.multiply(u, u, out=out[:, i])
        else:
            if x is None:           # (the prefill rows, once: stored by the windows holding any)
                x = win.x.dense() if rows is None else win.x.take(rows)
            out[:, i] = x[:, c - 3]
    return out


def _gram(win: Windows, scale: tuple[float, float], keep, omega: np.ndarray, rows: np.ndarray,
          y: np.ndarray | None = None,
          beta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The weighted moments of the design over ``rows`` (a mask): Σ ω z zᵀ and Σ ω z y (with
    ``beta``: of y − x·β), a block of windows at a time (no n × p matrix: a large log has
    millions of windows)."""
    p = len(keep)
    A, r = np.zeros((p, p)), np.zeros(p)
    if fast_available():
        _ratekern.moments(*_floats(win.b, omega), _mask(rows), _floats(y)[0], *_sparse(win.x),
                          float(scale[0]), float(scale[1]), bytes(keep), A, r,
                          *(() if beta is None else _beta(beta)))
        return A, r
    if beta is not None:
        y = y - win.x.dot(beta)
    idx = np.flatnonzero(rows)
    for s in range(0, len(idx), CHUNK):
        i = idx[s:s + CHUNK]
        Z = _design(win, scale, keep, i)
        wz = Z * omega[i][:, None]
        A += wz.T @ Z
        if y is not None:
            r += wz.T @ y[i]
    return A, r


def _floats(*arrays) -> list:
    """Each array as contiguous float64 (None stays None), for the C passes."""
    return [None if a is None else np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


def _beta(beta) -> tuple[np.ndarray, float]:
    """β as contiguous float64, and x·β of a window without prefill work (PrefillWork.dot's:
    0, or NaN where β is not finite), for the C passes."""
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    return beta, float(np.zeros(N_X) @ beta)


def _mask(rows: np.ndarray) -> np.ndarray:
    """A mask of windows as contiguous bools, for the C passes."""
    return np.ascontiguousarray(rows, dtype=bool)


def _sparse(x) -> tuple[np.ndarray, np.ndarray]:
    """The prefill work's stored rows (int64, ascending) and their values (C order)."""
    return (np.ascontiguousarray(x.rows, dtype=np.int64),
            np.ascontiguousarray(x.vals, dtype=np.float64))


def _median(v: np.ndarray, sel: np.ndarray | None = None) -> float:
    """np.median(v[sel]) (``sel`` a mask or positions; None: all), the same number; in C by
    selection where it can (_ratekern.median: no copy of the picked values)."""
    if fast_available():
        return _ratekern.median(_floats(v)[0], None if sel is None else _picks(sel), math.nan)
    return float(np.median(v if sel is None else v[sel]))


def _mad(v: np.ndarray, sel: np.ndarray) -> float:
    """The median absolute deviation of v[sel], scaled to a normal σ (× 1.4826)."""
    if fast_available():
        v, sel = _floats(v)[0], _picks(sel)
        return _ratekern.median(v, sel, _ratekern.median(v, sel, math.nan)) * 1.4826
    r = v[sel]
    return float(np.median(np.abs(r - np.median(r)))) * 1.4826


def _picks(sel: np.ndarray) -> np.ndarray:
    """A mask as contiguous bools, positions as contiguous int64 (for _ratekern.median)."""
    sel = np.asarray(sel)
    return _mask(sel) if sel.dtype == bool else np.ascontiguousarray(sel, dtype=np.int64)


def _column(win: Windows, scale: tuple[float, float], c: int) -> np.ndarray:
    """Column c of the design for every window."""
    if c == 0:
        return np.ones(win.n)
    if c in (1, 2):
        u = (win.b - scale[0]) / scale[1]
        return u if c == 1 else u * u
    return win.x.col(c - 3)


def _times(win: Windows, scale: tuple[float, float], keep, coef: np.ndarray) -> np.ndarray:
    """The design's columns ``keep`` times ``coef`` for every window (Z @ coef, without Z; a
    block of windows at a time, so that its temporaries stay small)."""
    out = np.zeros(win.n)
    if fast_available():
        _ratekern.times(_floats(win.b)[0], *_sparse(win.x), float(scale[0]), float(scale[1]),
                        bytes(keep), np.asarray(coef, dtype=float).ravel(), out)
        return out
    smooth = 1 in keep or 2 in keep
    coef = [float(v) for v in coef]
    for s_ in range(0, win.n, CHUNK):
        sl = slice(s_, s_ + CHUNK)
        o = out[sl]
        u = (win.b[sl] - scale[0]) / scale[1] if smooth else None
        xs = None
        for c, v in zip(keep, coef):
            if c == 0:
                o += v
            elif c == 1:
                o += v * u
            elif c == 2:
                o += v * (u * u)
            elif v:
                if xs is None:
                    xs = win.x.take(sl)
                o += v * xs[:, c - 3]
    return out


def _eiv(win: Windows, use: np.ndarray, spec: ModelSpec, keep: list[int],
         omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the rounding error of a measured batch size adds to the weighted normal equations
    of y on (1, u, u², x): the corrected-least-squares terms to subtract (errors-in-variables
    for a quadratic: the error of u has variance s² = bvar / scale² and covariance bycov /
    scale with the error of y, and is independent of everything else).
    Without it the control in u is attenuated where the batch barely moves between windows
    (continuous traffic: the spread of the batch is a few times its rounding error) and the
    prefill coefficients take up what it misses."""
    p = len(keep)
    dA, drhs = np.zeros((p, p)), np.zeros(p)
    if win.bvar is None or not (win.bvar[use] > 0).any():
        return dA, drhs
    om = omega[use]
    s2 = win.bvar[use] / spec.scale[1] ** 2
    u = (win.b[use] - spec.scale[0]) / spec.scale[1]
    pos = {c: i for i, c in enumerate(keep)}
    i0, i1, i2 = pos.get(0), pos.get(1), pos.get(2)

    def sub(i, j, v):
        dA[i, j] += v
        if i != j:
            dA[j, i] += v
    cy = win.bycov[use] / spec.scale[1]
    if i1 is not None:
        sub(i1, i1, float(np.sum(om * s2)))
        drhs[i1] = float(np.sum(om * cy))
    if i2 is not None:
        if i0 is not None:
            sub(i0, i2, float(np.sum(om * s2)))
        if i1 is not None:
            sub(i1, i2, float(np.sum(om * 3 * u * s2)))
        sub(i2, i2, float(np.sum(om * (6 * u * u * s2 - 3 * s2 * s2))))
        for c, i in pos.items():
            if c >= 3:
                sub(i, i2, float(np.sum(om * win.x.col(c - 3, use) * s2)))
        drhs[i2] = float(np.sum(om * (s2 * win.y[use] + 2 * u * cy)))
    return dA, drhs


def _noise_share(win: Windows, use: np.ndarray, spec: ModelSpec, omega: np.ndarray,
                 A: np.ndarray | None = None) -> float:
    """The largest share of the weighted sum of squares of the design, in any direction, that
    the rounding error of the measured batch size makes up: the top generalised eigenvalue λ of
    (dA, A).  The corrected matrix A − dA keeps 1 − λ of it; at λ near 1 the correction leaves
    nothing (a batch that barely moves in the windows that carry the weight) and the corrected
    fit is undetermined there."""
    keep = list(spec.smooth) + [3 + k for k in spec.xs]
    if len(spec.smooth) < 2 or win.bvar is None:
        return 0.0
    dA, _ = _eiv(win, use, spec, keep, omega)
    if not dA.any():
        return 0.0
    if A is None:             # the weighted moments of the design (given when known)
        A, _ = _gram(win, spec.scale, keep, omega, use)
    if not (np.isfinite(A).all() and np.isfinite(dA).all()):
        return 1.0                          # nothing to divide by that can be trusted
    try:
        L = np.linalg.cholesky(A)
        Li = np.linalg.inv(L)
        return float(np.linalg.eigvalsh(Li @ dA @ Li.T).max())
    except np.linalg.LinAlgError:
        return 1.0


def identified(win: Windows, use: np.ndarray, spec: ModelSpec, omega: np.ndarray,
               A: np.ndarray | None = None) -> ModelSpec:
    """``spec`` with the top terms of the smooth control in B dropped while the rounding error
    of the batch size makes up over NOISE_LIMIT of some direction of the design (_noise_share):
    there the errors-in-variables correction divides by almost nothing, and the corrected fit
    swings without bound.  A batch whose spread is as small as its rounding error carries no
    curvature (u² goes first) and, below that, no slope."""
    while len(spec.smooth) > 1 and _noise_share(win, use, spec, omega, A) > NOISE_LIMIT:
        spec = ModelSpec(spec.xs, spec.smooth[:-1], spec.scale)
        A = None
    return spec


@dataclass(frozen=True)
class ModelSpec:
    """Which regressors the fit carries (decided once, from all the windows)."""

    xs: tuple[int, ...]          # prefill regressors kept (indices into x)
    smooth: tuple[int, ...]      # 1, u, u² kept
    scale: tuple[float, float]   # centre and half range of the batch sizes


def _beta_of(win: Windows, use: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """β of the prefill regressors (zeros for those left out): request-step weighted least
    squares of y on the smooth control in B and the kept prefill regressors, over ``use``."""
    beta = np.zeros(N_X)
    if not spec.xs:
        return beta
    keep = list(spec.smooth) + [3 + k for k in spec.xs]
    A, rhs = _gram(win, spec.scale, keep, win.w, use, win.y)
    dA, drhs = _eiv(win, use, spec, keep, win.w)
    try:
        coef = np.linalg.solve(A - dA, rhs - drhs)
    except np.linalg.LinAlgError:
        return np.full(N_X, np.nan)
    beta[list(spec.xs)] = coef[len(spec.smooth):]
    return beta


def _choose(win: Windows, use: np.ndarray) -> tuple[ModelSpec, str]:
    """The regressors the data can carry, and what the cycle then is: 'clean' (no prefill work
    in the usable windows), 'corrected' (prefill time estimated and removed) or 'upper bound'
    (prefill work that cannot be told apart from the cycle: it stays in)."""
    lo_x, hi_x = np.full(N_X, np.inf), np.full(N_X, -np.inf)
    if fast_available():
        # (every range below in one pass, in C)
        xlo, xhi = np.empty(N_X), np.empty(N_X)
        r_lo, r_hi, distinct, lo, hi, n_held, n_used = _ratekern.ranges(
            _mask(use), *_floats(win.r, win.b), *_sparse(win.x), xlo, xhi)
    else:
        bs = win.b[use]
        n_used = len(bs)
        lo, hi = (float(bs.min()), float(bs.max())) if n_used else (0.0, 0.0)
        r_lo = float(np.min(win.r, where=use & np.isfinite(win.r), initial=np.inf))
        r_hi = float(np.max(win.r, where=use & np.isfinite(win.r), initial=-np.inf))
        distinct = 1 if not r_hi > r_lo else \
            3 if bool(np.any((win.r > r_lo) & (win.r < r_hi) & use)) else 2
        held = use[win.x.rows]
        n_held = int(held.sum())
        if n_held:
            xi = win.x.vals[held]
            xlo, xhi = xi.min(axis=0), xi.max(axis=0)
            del xi
    if not n_used:
        return ModelSpec((), (0,), (1.0, 1.0)), "clean"
    scale = ((lo + hi) / 2, max((hi - lo) / 2, 1e-9))
    # three batch sizes carry a quadratic exactly: a line through three levels of a convex
    # cycle leaves the ends above it, and a run that starts at the smallest was then taken for
    # a warm-up (a vLLM sweep at 2 → 8 → 24 requests lost its whole first level)
    # (the printed sizes: a measured mean batch is continuous, and one that only its rounding
    # moves — every line printing one size — carries no curve; ar09 seed 5021 at 7–8
    # requests fitted a quadratic to mean batches 7.89–8.03 and its cycle came out +5 %)
    levels = 1 if not r_hi > r_lo else min(distinct, 3)     # (3: three or more)
    smooth = (0,) if hi - lo == 0 or levels < 2 else (0, 1) if levels < 3 else (0, 1, 2)
    # (the prefill work's range over the used windows: over those holding any, and a zero
    # where a used window holds none)
    if n_held < n_used:
        lo_x[:], hi_x[:] = 0.0, 0.0
    if n_held:
        np.minimum(lo_x, xlo, out=lo_x)
        np.maximum(hi_x, xhi, out=hi_x)
    xs = tuple(k for k in range(N_X) if hi_x[k] - lo_x[k] > 0)
    wu = np.where(use, win.w, 0.0)
    if not max(hi_x) > 0:
        return identified(win, use, ModelSpec((), smooth, scale), wu), "clean"
    every = list(smooth) + [3 + k for k in range(N_X)]
    G, _ = _gram(win, scale, every, wu, use)
    keep = list(smooth) + [3 + k for k in xs]
    M = None
    while xs:
        ix = [every.index(c) for c in keep]
        M = G[np.ix_(ix, ix)]
        d = np.sqrt(np.diag(M))
        if (d > 0).all() and np.linalg.cond(M / np.outer(d, d)) < 1e8:
            break
        xs = xs[:-1]
        keep = list(smooth) + [3 + k for k in xs]
        M = None
    spec = identified(win, use, ModelSpec(xs, smooth, scale), wu, M)
    if not xs or 1 not in xs and 0 not in xs:
        return spec, "upper bound"
    return spec, "corrected"


@dataclass(frozen=True)
class RateFit:
    """What a run's decode windows say: each OUTPUTS name as an Estimate (joint jackknife), the
    cycle's kind ('clean', 'corrected', 'upper bound'), the prefill cost per token and batch,
    the windows used and left out (by reason), the autocorrelation time and the batches."""

    estimates: dict[str, Estimate]
    kind: str
    beta: tuple[float, ...]
    used: int
    windows: int
    left_out: dict[str, int]
    tau: float
    batches: int
    coverage: float = 1.0        # share of the request-steps a baseline covers
    warmup: int = 0              # leading windows left out as a warm-up
    notes: tuple[str, ...] = ()
    use: np.ndarray | None = field(default=None, repr=False)    # windows of the cycle
    acc: np.ndarray | None = field(default=None, repr=False)    # windows of the accept length
    sys_rel: float = 0.0         # systematic relative uncertainty of the cycle (in the CIs)
    batch_logs: dict = field(default_factory=dict, repr=False)  # output -> per-batch log est.
    cov: np.ndarray | None = field(default=None, repr=False)    # within_cov per window
    short_phi: float | None = None   # the short-series rule's lag-1 allowance (None: batch means)
    why: np.ndarray | None = field(default=None, repr=False)    # int8 per window: USED or why
                                     # not (a warm-up SKIPPED, a STALL found by the fit)

    def __getitem__(self, name: str) -> Estimate:
        return self.estimates[name]


@contextlib.contextmanager
def _keeping_w(win: Windows):
    """Windows.w made once and kept while the block runs (the fit reads it dozens of times),
    and let go after it: every window's (29 MB a GB of log) is not kept for the rest of a
    summary, whose later passes make it where they read it."""
    if win.rs is not None or win._w is not None and win._w[0] is win.b:
        yield
        return
    win._w = (win.b, win.b * win.interval)
    try:
        yield
    finally:
        win._w = None


def fit(win: Windows, confidence: float, step_of=None, *, what: str = "decode lines",
        warmup: str | int = "auto") -> RateFit:
    """Fit the rate model to ``win``; ``step_of(B)`` gives the baseline step (ms) at mean batch
    size B (NaN where the baseline does not cover B), or None.  ``warmup``: 'auto' (MSER-5,
    kept only when significant), a number of leading windows, or 0."""
    with _keeping_w(win):
        return _fit(win, confidence, step_of, what, warmup)


def _fit(win: Windows, confidence: float, step_of, what: str, warmup) -> RateFit:
    notes: list[str] = []
    base_use = win.why == USED
    # a window counts for the accept length when it prints one and its request-steps are known
    # (a bad #running-req makes this window's and the next one's mean batch unknown)
    acc = (np.isfinite(win.a) & (win.w > 0)) if win.spec else np.zeros(win.n, dtype=bool)
    why = win.why.copy()
    use = base_use.copy()
    spec, kind = _choose(win, use)

    def residuals(use, spec):
        """β, the fitted pure-decode cycle of each window (its batch size) and the residual"""
        beta = _beta_of(win, use, spec)
        if fast_available():
            # (y − x·β made per window inside the passes, not as an array: _ratekern)
            A, rhs = _gram(win, spec.scale, spec.smooth, win.w, use, win.y, beta)
            coef, *_ = np.linalg.lstsq(A, rhs, rcond=None)
            fitted, res = np.empty(win.n), np.empty(win.n)
            _ratekern.resid(*_floats(win.b, win.y), *_sparse(win.x), *_beta(beta),
                            *map(float, spec.scale), bytes(spec.smooth),
                            np.ascontiguousarray(coef, dtype=float), fitted, res)
            return beta, fitted, res, _mad(res, use)
        z = win.y - win.x.dot(beta)
        A, rhs = _gram(win, spec.scale, spec.smooth, win.w, use, z)
        coef, *_ = np.linalg.lstsq(A, rhs, rcond=None)
        fitted = _times(win, spec.scale, spec.smooth, coef)
        res = z - fitted
        return beta, fitted, res, _mad(res, use)

    cut = 0
    stall0 = None
    if np.count_nonzero(use) >= 3:
        beta, fitted, res, mad = residuals(use, spec)
        # warm-up: leading windows whose cycle (at their batch size) differs from the rest's
        if warmup == "auto":
            # each window against the windows of its own printed batch size, never against a
            # curve fitted across sizes: a first level the curve cannot follow (a sweep up from
            # batch 1 on a cost with steps) is not a warm-up
            # (each residual clipped to ±max(STALL_SIGMAS · MAD, STALL_SHARE · fitted))
            # (the scale first, then the two arrays MSER reads: fewer of millions alive at once)
            # (np.average(fitted[use], weights=w[use]) to the bit, without the copies of
            # every used window's: picked_sum)
            wsum = picked_sum(win.w, use)
            scale = picked_sum(fitted, use, win.w) / wsum if wsum > 0 else 0.0
            # (the stall test's first round, which reads these residuals, made now: then z is
            # made in res's array and neither it nor fitted is kept through the warm-up)
            stall0 = _stalls(use, res, fitted, mad)
            z = _within_clipped(win, res, fitted, mad, use, strata_of(win.r, use),
                                into_res=True)
            fitted = res = None
            # (w itself, not w where used: z is NaN on every window not used, and a window
            # counts where z is finite and w > 0 — the same windows, the same weights)
            cut = warmup_windows(z, win.w, scale)
            z = None
        elif warmup:
            cut = min(int(warmup), win.n)
        if cut:
            why[:cut][why[:cut] == USED] = SKIPPED
            use[:cut] = False
            acc[:cut] = False
        # stalls: windows far above the fit (idle time the timestamps do not show); refit
        # (the choice and the fit are redone only when the windows used changed: each is a few
        # passes over every window of a large log)
        stale = bool(cut)
        for _ in range(3):
            if np.count_nonzero(use) < 3:
                break
            if stale:
                # (the old residuals go before the new are made: two pairs of millions)
                fitted = res = stall0 = None
                spec, kind = _choose(win, use)
                beta, fitted, res, mad = residuals(use, spec)
                stale = False
            # (the residuals of these same windows let go in the warm-up: their test made
            # there, stall0)
            stall = _stalls(use, res, fitted, mad) if res is not None else stall0
            stall0 = None
            if not stall.any():
                break
            use &= ~stall
            why[stall] = STALL
            stale = True
        if stale:
            spec, kind = _choose(win, use)
    trend = 0.0
    if cut and np.count_nonzero(use) >= 20:
        # what a warm-up left behind: the residuals' mean in the first half of the windows
        # kept against the second's (residuals from the fitted curve: the batch mix moves
        # nothing here); a decaying tail the cut missed shows as that difference
        fitted = res = stall = None
        _, fitted, res, _ = residuals(use, spec)
        idx = np.flatnonzero(use)
        h = len(idx) // 2
        ww = win.w[idx]
        trend = float(np.average(res[idx[:h]], weights=ww[:h])
                      - np.average(res[idx[h:]], weights=ww[h:]))
        trend /= float(np.average(fitted[idx], weights=ww)) or 1.0
    fitted = res = stall = idx = ww = None   # (millions of windows each: the room)
    step = None
    coverage = 1.0
    if step_of is not None:
        one = _one_step(win, step_of)
        step = np.asarray(step_of(win.b), dtype=float) if one is None else None
        # (the step, like the cycle, of a window whose batch moved inside it: each iteration
        # weighs by its batch; nothing where step_within adds zeros, and no array of them)
        flat = _flat_step(win, step_of)
        if not flat:
            step = step + step_within(win, step_of)
        covered = np.isfinite(step) if one is None else \
            np.isfinite(win.b) & math.isfinite(one)
        tot = picked_sum(win.w, use | acc)
        coverage = picked_sum(win.w, (use | acc) & covered) / tot if tot > 0 else 0.0
        use &= covered
        acc &= covered
        if one is not None:
            # (every covered window's step: one number, which the C passes take as it is)
            step = one + 0.0
        else:
            step = np.where(covered, step, 0.0)
            if flat:
                step += 0.0       # (what adding step_within's zeros does: −0.0 to 0.0)
        covered = None
    strata = strata_of(win.r, use | acc)
    prec = None
    beta0 = _beta_of(win, use, spec) if np.count_nonzero(use) > 10 else None
    if beta0 is not None and np.isfinite(beta0).all():
        # the equal-precision fit's residuals, centred in their strata, give the precisions
        # (y − x·β made in x·β's array, NaN where not used: the same numbers as z0 where used,
        # which is all the medians read)
        res0 = win.x.dot(beta0)
        np.subtract(win.y, res0, out=res0)
        res0[~use] = np.nan
        ng = int(strata.max()) + 2 if len(strata) else 0
        if fast_available() and ng <= 16:
            # (every stratum's median in two passes, in C; −1, windows of no stratum, is one)
            codes = np.where(use, strata + 1, -1).astype(np.int32)
            med = np.empty(ng)
            _ratekern.medians(res0, codes, None, med)
            for lo, hi in _blocks(win.n):      # (no positions of every used window)
                u = use[lo:hi]
                res0[lo:hi][u] -= med[codes[lo:hi][u]]
            codes = med = u = None
        else:
            iu = np.flatnonzero(use)
            meds = [(iu[at], _median(res0, iu[at])) for _, at in _by_value(strata[iu])]
            for m, v in meds:
                res0[m] -= v
            meds = iu = None
        prec = _precision(win, use, res0)
        res0 = None
        if prec is not None and _noise_share(win, use, spec,
                                             prec.scale(np.where(use, win.w, 0.0))) > NOISE_LIMIT:
            # the precision weights put the fit on windows whose batch barely moves, where the
            # corrected matrix is singular: the equal-precision fit (which _choose checked)
            # keeps the curve identified.  Simulated (ar09, seed 5021): 67 clean windows held
            # 98 % of the weight at a batch of 7.95 ± 0.03 (λ = 1.0005), and the cycle came out
            # +5.3 % in [0 … 10¹⁶]; with equal precisions −0.05 %, se 0.09 %
            prec = None
    # the batches run over the windows that count (a warm-up left out, stalls, the first
    # window: none of them in a batch), so their length in windows is what the data hold
    counted = use | acc
    n = int(np.count_nonzero(counted))
    if fast_available():
        # (the terms summed into batches as they are made, in C: no array of them)
        thetas, sums = _point_and_sums(win, use, acc, step, spec, prec, strata, n=n)
    else:
        thetas, terms = _point_and_terms(win, use, acc, step, spec,
                                         None if prec is None else np.asarray(prec), strata)
        # (each output's terms go as soon as they are summed into batches: millions of
        # windows each, and the passes below need the room; the rate's, the accept length's
        # less the cycle's, made here from the two, a block at a time: _point_and_terms)
        sums = _term_sums(terms, counted, n)
        del terms
    step = None
    beta = thetas.pop("_beta")
    cor = thetas.pop("_cor", None)
    # (RateFit.cov: within_cov made again where by_bucket reads it, not kept)
    cov_kept = thetas.pop("_cor_again", None)
    cov_kept = cor if cov_kept is None else cov_kept
    # the within-window covariance's share of the cycle, while its array is here (the pass
    # below needs the room): Σ w × cor over the used windows, the same products and sums as
    # of the used windows' arrays, without them (picked_sum)
    cor_term = None
    if cor is not None and use.any() and math.isfinite(thetas["cycle_ms"]) and \
            thetas["cycle_ms"] > 0:
        cor_term = float(np.divide(picked_sum(win.w, use, cor), picked_sum(win.w, use))) \
            / thetas["cycle_ms"]
    cor = None
    ests, facts = stats.influence_estimates([thetas[k] for k in OUTPUTS], sums, n, confidence,
                                            tau_of=(0, 1, 2) if win.spec else (1,),
                                            lifetime=win.lifetime)
    na, nu = int(np.count_nonzero(acc)), int(np.count_nonzero(use))
    ests = own_units(ests, na, nu, confidence)
    src = {"accept_len": f"{what} ({na} window{'s' * (na != 1)}, request-step weighted)",
           "cycle_ms": f"{what} ({nu} window{'s' * (nu != 1)} of {win.n}, "
                       + {"clean": "none with prefill work", "corrected": "prefill time removed",
                          "upper bound": "prefill time included: an upper bound"}[kind] + ")"}
    # the batch size inside a window is not printed: B̃ is the mean of the two lines'.  The same
    # fit with the printed (last-iteration) batch instead moves the cycle by some amount; half
    # of it is a systematic uncertainty of every figure that holds the cycle
    # (where the timestamps measure each window's mean batch, ``win.measured``, there is
    # nothing to approximate: those windows carry no systematic term)
    sys_rel = 0.0
    approx = use if win.measured is None else use & ~win.measured
    approx_share = float(np.divide(picked_sum(win.w, approx), picked_sum(win.w, use))) \
        if use.any() else 0.0
    if math.isfinite(thetas["cycle_ms"]) and thetas["cycle_ms"] > 0 and approx_share > 0:
        win._w = None         # (the pass reads alt's w, not this: _keeping_w lets it go)
        alt = dataclasses.replace(win)        # (shares every array but the two replaced)
        # (y × r / b where approximated, else y; then r there, else b: each made in one array,
        # the peak of a large log's fit is this pass)
        alt.y = win.y * win.r
        for lo, hi in _blocks(win.n):          # (no array of the denominators)
            bb = win.b[lo:hi]
            alt.y[lo:hi] /= np.where(bb > 0, bb, 1.0)
        bb = None
        np.copyto(alt.y, win.y, where=~(approx & (win.b > 0)))
        alt.b = win.r.astype(float)
        np.copyto(alt.b, win.b, where=~approx)
        alt._w = None          # (its w is made once in the pass, not kept: _masked_w)
        th_alt, _ = _point_and_sums(
            alt, use & np.isfinite(alt.y), acc, None, spec, prec, strata, point_only=True) \
            if fast_available() else _point_and_terms(
            alt, use & np.isfinite(alt.y), acc, None, spec,
            None if prec is None else np.asarray(prec), strata, point_only=True)
        alt = None
        if math.isfinite(th_alt["cycle_ms"]) and th_alt["cycle_ms"] > 0:
            sys_rel = abs(math.log(th_alt["cycle_ms"] / thetas["cycle_ms"])) / 2
        # requests finishing and admitted inside a window move its mean batch in ways neither
        # line shows (simulated: 0.4 % on continuous traffic): a floor, in quadrature, on the
        # share of the request-steps whose windows approximate it
        sys_rel = math.hypot(sys_rel, SYS_FLOOR * approx_share)
    strata = prec = None
    sys_trap = sys_rel
    if cor_term is not None:
        # the within-window covariance term is a model (one step between two lines)
        sys_rel = math.hypot(sys_rel, COV_REL * cor_term)
    se_c = ests[OUTPUTS.index("cycle_ms")].se_log
    if trend and se_c is not None and math.isfinite(se_c):
        # after a warm-up cut: a leftover tail puts the cycle's bias between 0 and half the
        # halves' difference d (all of the tail in the first half); d/2, less what the noise
        # gives it (var(d/2) = the cycle's se²), bounds it, and a bias known only to lie
        # within ±a has the standard uncertainty a/√3 (GUM 4.3.7, rectangular).  Simulated
        # (warmup, 150 runs): without it the cycle covered 79 %, with a as a standard
        # uncertainty 100 %, with a/√3 97 %
        sys_rel = math.hypot(sys_rel, math.sqrt(max((trend / 2) ** 2 - se_c ** 2, 0.0) / 3))
    floor = request_floor(win, ests[OUTPUTS.index("accept_len")])
    if floor is not None:
        extra, df_r = floor
        for i, nm in enumerate(OUTPUTS):
            e = ests[i]
            if nm in ("accept_len", "rate", "speedup") and e.sufficient:
                se = math.hypot(e.se_log, extra)
                df = stats.welch_df([(e.se_log, e.df), (extra, df_r)])
                ests[i] = dataclasses.replace(
                    stats.from_log_se(e.estimate, se, df, e.n, confidence), basis=e.basis)
        notes.append("the accept length varies more between requests than between windows "
                     "shows (a few long requests fill many windows): its interval is at least "
                     "the Finish lines' requests', taken as independent units")
    out = {}
    for nm, e in zip(OUTPUTS, ests):
        if sys_rel and e.sufficient and nm != "accept_len" and nm != "step_ms":
            se = math.sqrt(e.se_log ** 2 + sys_rel ** 2)
            df = e.df * (se ** 4) / e.se_log ** 4 if e.se_log > 0 else math.inf
            e = dataclasses.replace(stats.from_log_se(e.estimate, se, df, e.n, confidence),
                                    basis=e.basis)
        out[nm] = dataclasses.replace(e, source=src.get(nm, what))
    c = out["cycle_ms"]
    notes.extend(win.clock_notes)
    if c.sufficient and se_c is not None and sys_trap > se_c and whole_seconds(win, approx):
        half = math.sqrt(c.ci_high / c.ci_low) - 1
        notes.append(f"whole-second timestamps: most of the cycle's ±{half:.2%} is an allowance "
                     "for each window's mean batch, which they cannot measure (statistical part "
                     f"±{half * se_c / math.hypot(se_c, sys_rel):.2%}); SGLANG_LOG_MS=1 stamps "
                     "(SGLang v0.5.6 →)"
                     + ("" if win.clock_notes else
                        ", or a wrapper's (docker or kubectl logs --timestamps),")
                     + " measure it")
    left = {}
    for code in (FIRST, IDLE, STALL, NO_THROUGHPUT, SKIPPED, JUMP, NO_ACCEPT):
        k = int(np.count_nonzero(why == code))
        if k:
            left[WHY[code]] = k
    if left.get(WHY[JUMP]):
        k = left[WHY[JUMP]]
        notes.append(f"{k} of {win.n} decode windows left out of the cycle: the batch size moved "
                     "by more than half between their two lines, so their mean batch is not "
                     "known" + (" (SGLANG_LOG_MS=1 stamps measure it)"
                                if whole_seconds(win, why == JUMP) else ""))
    return RateFit(out, kind, tuple(float(v) for v in beta), int(np.count_nonzero(use)), win.n,
                   left, float(facts.get("tau", math.nan)), int(facts.get("batches", 0)),
                   coverage, cut, tuple(notes), use, acc, sys_rel,
                   dict(zip(OUTPUTS, facts.get("batch_logs") or [()] * len(OUTPUTS))), cov_kept,
                   max(facts["phi"].values()) if facts.get("short") and facts.get("phi")
                   else None, why)


def own_units(ests: list[Estimate], n_acc: int, n_use: int,
              confidence: float) -> list[Estimate]:
    """No interval for an output that fewer than stats.MIN_UNITS of its own windows carry: the
    accept length its accept-length windows, every other output (the cycle's) the cycle's
    windows.  (The units of one interval are every window that counts for any output; an
    output's terms are zero on the others, and one cycle window among many gave a cycle
    'interval' of zero width.)"""
    out = []
    for k, e in zip(OUTPUTS, ests):
        own = n_acc if k == "accept_len" else n_use
        out.append(stats.insufficient(e.estimate, e.n, confidence, e.source)
                   if e.sufficient and own < stats.MIN_UNITS else e)
    return out


def request_floor(win: Windows, acc: Estimate) -> tuple[float, float] | None:
    """(the se to add in quadrature, its df) where the accept length's requests, taken as
    independent units (``Windows.req_accept``), say it is less certain than its windows do —
    requests whose acceptance is their own fill many windows, and when a few long ones fill
    most of the run (heavy-tailed outputs), the windows' autocorrelation time is estimated
    short of it.  None where the windows already say as much."""
    if win.req_accept is None or not acc.sufficient or acc.se_log is None:
        return None
    se_r, df_r = win.req_accept
    if not (se_r > acc.se_log):
        return None
    return math.sqrt(se_r * se_r - acc.se_log * acc.se_log), df_r


def bucket_of(r: np.ndarray, exact: bool = False,
              small: bool = False) -> tuple[np.ndarray, list[str]]:
    """Batch-size buckets of the printed #running-req: each value when there are at most 16
    distinct (or ``exact``: always), else powers of two ('4–7'); codes (−1: none) and
    labels.  The codes are int64 (``small``: int8 where the labels are fewer than 127).

    A block of windows at a time (a large log's millions: a float copy, its finite part and
    the codes' int64 made whole were 140 MB of a gigabyte log's peak): the distinct sizes
    first, then each bucket's code from its size; a size's bucket is a function of the size
    alone, so the labels and codes are those of the whole array at once."""
    r = np.asarray(r)
    n = len(r)
    # (the dtype np.where(ok, r, nan) gives the sizes: float64, or r's own floats)
    vdt = np.where(np.ones(1, dtype=bool), np.zeros(1, dtype=r.dtype), np.nan).dtype
    parts = []
    for lo, hi in _blocks(n):
        x = r[lo:hi]
        x = x[np.isfinite(x) & (x > 0)].astype(vdt, copy=False)
        if len(x):
            parts.append(distinct(x))
    uniq = distinct(np.concatenate(parts)) if parts else np.empty(0, dtype=vdt)
    del parts
    code_of = np.arange(len(uniq), dtype=np.int64)
    if len(uniq) > 16 and not exact:
        mapped = 2.0 ** np.floor(np.log2(np.clip(uniq, 1, None)))
        top = distinct(mapped)
        labels = [f"{int(a)}" if a == 2 * a - 1 else f"{int(a)}–{int(2 * a - 1)}" for a in top]
        code_of = np.searchsorted(top, mapped).astype(np.int64)
    else:
        labels = [str(int(a)) for a in uniq]
    codes = np.full(n, -1, dtype=np.int8 if small and len(labels) < 127 else np.int64)
    if not len(uniq):
        return codes, labels
    lut = None
    if small_ints(uniq) and float(uniq[-1]) < 1 << 20:
        # (printed sizes: a table lookup, not a search per window)
        lut = np.full(int(uniq[-1]) + 1, -1, dtype=np.int64)
        lut[uniq.astype(np.int64)] = code_of
    for lo, hi in _blocks(n):
        x = r[lo:hi]
        ok = np.isfinite(x) & (x > 0)
        vv = x[ok].astype(vdt, copy=False)
        codes[lo:hi][ok] = lut[vv.astype(np.int64)] if lut is not None else \
            code_of[np.searchsorted(uniq, vv)]
    return codes, labels


def window_buckets(win: Windows) -> tuple[np.ndarray, list[str]]:
    """bucket_of(win.r), made once per Windows (a break-even asks for it three times, each a
    few passes over every window of a large log); the codes are read-only (and int8 where the
    labels are few)."""
    got = win.__dict__.get("_buckets")
    if got is None or got[0] is not win.r:
        # (kept with the windows: a byte a window, not eight, where the labels are few)
        codes, labels = bucket_of(win.r, small=True)
        codes.setflags(write=False)
        got = win.__dict__["_buckets"] = (win.r, (codes, labels))
    return got[1]


def bucket_range(label: str | None) -> tuple[int | None, int | None]:
    """(lowest, highest) #running-req of a bucket label ('8', '4–7'); (None, None) for the
    whole run."""
    if label is None:
        return None, None
    parts = label.replace("-", "–").split("–")
    try:
        lo, hi = int(parts[0]), int(parts[-1])
    except ValueError:
        return None, None
    return lo, hi


@dataclass(frozen=True)
class BucketFit:
    """One batch-size bucket of a run: its cycle and accept length (the run's β), the share of
    the run's request-steps, and against a baseline its step and speedup."""

    label: str
    windows: int
    share: float
    estimates: dict[str, Estimate]

    def __getitem__(self, name: str) -> Estimate:
        return self.estimates[name]


def by_bucket(win: Windows, fit_: RateFit, confidence: float, step_of=None,
              what: str = "decode lines", buckets=None) -> list[BucketFit]:
    """The fit's figures per #running-req bucket (each from its own windows, in time order);
    ``buckets``: bucket_of(win.r) when the caller has it."""
    codes, labels = buckets if buckets is not None else bucket_of(win.r)
    use, acc = fit_.use, fit_.acc
    w = win.w           # (made on each read: once here, for the total and the passes)
    total = float(w[use | acc].sum())
    one = _one_step(win, step_of)
    if one is not None and not np.all(np.isfinite(win.b), where=use):
        one = None          # (a counted window of unknown batch: its step is NaN, not one's)
    step_all = one if one is not None else \
        np.asarray(step_of(win.b), dtype=float) if step_of is not None else None
    parts = (_bucket_parts if fast_available() else _bucket_parts_numpy)(
        win, fit_, codes, len(labels), step_all, w)
    del w
    out = []
    for g, (n, th, sums, n_use, n_acc, wsum) in parts:
        ests, _ = stats.influence_estimates([th[k] for k in OUTPUTS], sums, n, confidence,
                                            tau_of=(0, 1))
        ests = own_units(ests, n_acc, n_use, confidence)
        est = {}
        for k, e in zip(OUTPUTS, ests):
            if fit_.sys_rel and e.sufficient and k not in ("accept_len", "step_ms"):
                se = math.hypot(e.se_log, fit_.sys_rel)
                e = stats.from_log_se(e.estimate, se, e.df, e.n, confidence)
            est[k] = Estimate(e.estimate, e.ci_low, e.ci_high, e.n, e.confidence, e.se_log,
                              e.df, f"{what} at running_req {labels[g]}")
        share = wsum / total if total > 0 else 0.0
        out.append(BucketFit(labels[g], n, share, est))
    return out


def _bucket_outputs(th: dict, sums: dict) -> list:
    """The rate, speedup and break-even of one bucket from its cycle, accept length and step
    (in ``th``, NaN where it has none), and every output's terms' sums (None: none)."""
    if sums["cycle_ms"] is not None and sums["accept_len"] is not None:
        th["rate"] = th["accept_len"] / th["cycle_ms"]
        if math.isfinite(th["step_ms"]):
            th["speedup"] = th["rate"] * th["step_ms"]
            sums["speedup"] = sums["rate"].copy()
            th["breakeven_accept_len"] = th["cycle_ms"] / th["step_ms"]
            sums["breakeven_accept_len"] = sums["cycle_ms"].copy()
    else:
        sums["rate"] = None
    return [sums[k] for k in OUTPUTS]


def _bucket_parts(win: Windows, fit_: RateFit, codes: np.ndarray, nb: int,
                  step_all: np.ndarray | None, w: np.ndarray | None = None) -> list:
    """(bucket, (its windows that count, point estimates, their terms' sums over blocks, its
    cycle's windows, its accept length's, Σ w)) of each bucket that has any: two passes in C
    (_ratekern: bucket_totals, bucket_terms) over the windows in time order."""
    beta = np.ascontiguousarray(fit_.beta, dtype=float)
    # (int8 codes, as window_buckets keeps them, are read as they are: no int64 copy)
    codes = np.ascontiguousarray(codes, dtype=np.int8 if codes.dtype == np.int8 else np.int64)
    args = (codes, _mask(fit_.use), _mask(fit_.acc),
            *_floats(win.w if w is None else w, win.y), *_sparse(win.x), beta,
            float(np.zeros(N_X) @ beta),
            _floats(fit_.cov)[0], _floats(win.a)[0])
    tot = np.empty((nb, 12))
    _ratekern.bucket_totals(*args, step_all if isinstance(step_all, float) else
                            _floats(step_all)[0], tot)
    par = np.zeros((nb, 7))
    row = 0
    ths = {}
    for g in range(nb):
        n = int(tot[g, 0])
        if not n:
            continue
        th = {k: math.nan for k in OUTPUTS}
        c = t = math.nan
        if tot[g, 3] > 0:
            c = th["cycle_ms"] = tot[g, 4] / tot[g, 3]
            th["cycle_ms_iter"] = tot[g, 5] / tot[g, 2]
            if tot[g, 9] > 0:
                # (the windows the baseline covers: a bucket at the edge of its sizes holds
                # some whose mean batch lies just beyond it)
                th["step_ms"] = tot[g, 11] / tot[g, 10]
        if tot[g, 7] > 0:
            t = th["accept_len"] = tot[g, 8] / tot[g, 7]
        k = min(n, stats.FINE)
        par[g] = (n, k, row, c, tot[g, 3], t, tot[g, 7])
        row += k
        ths[g] = th
    sums_all = np.empty((row, 3))
    _ratekern.bucket_terms(*args, par, sums_all)
    out = []
    for g, th in ths.items():
        at, k = int(par[g, 2]), int(par[g, 1])
        sl = sums_all[at:at + k]
        sums = {k_: None for k_ in OUTPUTS}
        if math.isfinite(par[g, 3]):
            sums["cycle_ms"] = sl[:, 0].copy()
        if math.isfinite(par[g, 5]):
            sums["accept_len"] = sl[:, 1].copy()
        sums["rate"] = sl[:, 2].copy()
        out.append((g, (int(par[g, 0]), th, _bucket_outputs(th, sums), int(tot[g, 2]),
                        int(tot[g, 6]), float(tot[g, 1]))))
    return out


def _bucket_parts_numpy(win: Windows, fit_: RateFit, codes: np.ndarray, nb: int,
                        step_all: np.ndarray | None, w: np.ndarray | None = None) -> list:
    """_bucket_parts in numpy (without the C passes; and their oracle in the tests)."""
    beta = np.asarray(fit_.beta)
    zi = win.x.dot(beta)
    np.subtract(win.y, zi, out=zi)          # y − β·x (the cycle's adds the fit's cov: zc)
    cov = fit_.cov
    use, acc = fit_.use, fit_.acc
    w = win.w if w is None else w
    # each bucket's windows that count, in time order, from one sort (not a pass over every
    # window per bucket: a large log has millions)
    counted = np.flatnonzero((use | acc) & (codes >= 0))
    # (as int16 the stable sort is a radix sort: the buckets are a few dozen at most)
    order = counted[np.argsort(codes[counted].astype(np.int16), kind="stable")]
    del counted
    cuts = np.searchsorted(codes[order], np.arange(nb + 1))
    out = []
    for g in range(nb):
        idx = order[cuts[g]:cuts[g + 1]]
        if not len(idx):
            continue
        mu, ma, wi = use[idx], acc[idx], w[idx]
        th = {k: math.nan for k in OUTPUTS}
        terms = {k: None for k in OUTPUTS}
        Wu = float(wi[mu].sum())
        if Wu > 0:
            zg = zi[idx] if cov is None else zi[idx] + cov[idx]
            c = float((wi[mu] * zg[mu]).sum() / Wu)
            th["cycle_ms"] = c
            terms["cycle_ms"] = np.where(mu, wi * (zg - c) / Wu / c, 0.0)
            th["cycle_ms_iter"] = float(zi[idx][mu].mean())
            if step_all is not None:
                st = step_all[idx][mu]
                ok = np.isfinite(st)
                if ok.any():
                    th["step_ms"] = float((wi[mu][ok] * st[ok]).sum() / wi[mu][ok].sum())
        Wa = float(wi[ma].sum())
        if Wa > 0:
            ag = win.a[idx]
            t = float((wi[ma] * ag[ma]).sum() / Wa)
            th["accept_len"] = t
            terms["accept_len"] = np.where(ma, wi * (ag - t) / Wa / t, 0.0)
        n = len(idx)
        sums = {k: None if terms[k] is None else stats.block_sums(terms[k], n)
                for k in OUTPUTS}
        if terms["cycle_ms"] is not None and terms["accept_len"] is not None:
            sums["rate"] = stats.block_sums(terms["accept_len"] - terms["cycle_ms"], n)
        out.append((g, (n, th, _bucket_outputs(th, sums), int(mu.sum()), int(ma.sum()),
                        float(wi.sum()))))
    return out


def strata_of(r: np.ndarray, use: np.ndarray, least: int = 5) -> np.ndarray:
    """Strata of the printed batch size for post-stratification: each #running-req value, a
    value with fewer than ``least`` usable windows merged with its neighbours (by size)."""
    out = np.full(len(r), -1, dtype=np.int32)      # (a code per window: int32 is room enough)
    fast = False
    if fast_available():
        # printed sizes (every finite value a small integer): counted and looked up in C
        # (_ratekern.int_table)
        r = _floats(r)[0]
        fast, top = _ratekern.int_range(r)
    if fast:
        n_of = np.empty(top + 1, dtype=np.int64)
        _ratekern.int_table(r, _mask(use), n_of, None)
        at = np.flatnonzero(n_of)
        vals, counts = at.astype(r.dtype), n_of[at]
    else:
        vals, counts = distinct(r[use & np.isfinite(r)], counts=True)
    if not len(vals):
        return out
    group, acc, code = {}, 0, 0
    for v, c in zip(vals, counts):
        group[v] = code
        acc += c
        if acc >= least:
            code, acc = code + 1, 0
    if acc and code > 0:             # a short last group joins the one before
        for v in vals:
            if group[v] == code:
                group[v] = code - 1
    codes = np.array([group[v] for v in vals], dtype=np.int64)
    if fast:
        lut = np.full(top + 2, -1, dtype=np.int64)
        lut[vals.astype(np.int64)] = codes
        _ratekern.int_table(r, None, lut, out)
        return out
    fin = np.isfinite(r)
    ri = np.where(fin, r, -1.0)
    if small_ints(ri, signed=True):
        # printed sizes: a table lookup (−1, no size, indexes the last slot, which no value
        # takes)
        lut = np.full(int(ri.max()) + 2, -1, dtype=np.int32)
        lut[vals.astype(np.int64)] = codes
        return lut[ri.astype(np.int64)]
    at = np.searchsorted(vals, np.where(fin, r, vals[0]))
    hit = fin & (at < len(vals)) & (vals[np.minimum(at, len(vals) - 1)] == np.where(fin, r, np.nan))
    out[hit] = codes[at[hit]]
    return out


PREC_LEAST = 30         # a precision group needs this many windows …
PREC_SHARE = 0.05      # … and this share of the used ones, else it joins the prefill group


class _Prec:
    """precision()'s weights kept as each window's group (int8, −1: none, weight 1) and the
    groups' weights: what fit() holds while it runs, not an array of every window's float
    (29 MB a GB of log).  ``np.asarray`` gives precision()'s array; ``scale(v)`` multiplies
    v by it in place, a block at a time — the same products."""

    __slots__ = ("codes", "lut")

    def __init__(self, codes: np.ndarray, weights: list):
        self.codes = codes
        self.lut = np.array(list(weights) + [1.0])      # (code −1: the last, 1)

    def __array__(self, dtype=None, copy=None):
        out = self.lut[self.codes]
        return out if dtype is None else out.astype(dtype, copy=False)

    def scale(self, v: np.ndarray) -> np.ndarray:
        for lo, hi in _blocks(len(v)):
            v[lo:hi] *= self.lut[self.codes[lo:hi]]
        return v


def precision(win: Windows, use: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Weights for a heteroskedastic fit: windows without prefill work (here and in the window
    before), windows with it, and windows with a prefill that found the batch drained scatter
    differently (a prefill brings its own spread; a drained batch sat idle for as long as the
    next request took to come, which no line prints); each group's inverse robust variance.

    A group of fewer than PREC_LEAST windows or PREC_SHARE of the used ones joins the prefill
    group: a few similar windows give a variance near zero and weights that pin the fit to
    them (simulated, a batch growing from 1: 34 clean windows at batch 1–2 took weights 10⁴
    times the others', and the prefill cost came out 6.4 ms a batch instead of 6.0, the cycle
    −0.7 %)."""
    out = np.ones(win.n)
    got = _precision_groups(win, use, res)
    if got is not None:
        for g, v in zip(*got):
            out[g] = v
    return out


def _precision_groups(win: Windows, use: np.ndarray, res: np.ndarray) -> tuple | None:
    """(the groups, masks of every window, and their weights) precision() gives, or None
    where every weight is 1."""
    least = max(PREC_LEAST, PREC_SHARE * float(np.count_nonzero(use)))
    clean = ~win.x.held()
    drained = win.x.positive(4)
    if np.count_nonzero(use & clean) < least:
        clean = np.zeros(win.n, dtype=bool)
    if np.count_nonzero(use & drained) < least:
        drained = np.zeros(win.n, dtype=bool)
    groups = [g for g in (clean, ~clean & ~drained, drained)
              if np.count_nonzero(use & g) >= least]
    if len(groups) < 2:
        return None
    if fast_available():
        # (the groups' medians, then their deviations' medians, two passes each: C)
        codes = np.full(win.n, -1, dtype=np.int32)
        for j, g in enumerate(groups):
            codes[use & g] = j
        res = _floats(res)[0]
        med, mad = np.empty(len(groups)), np.empty(len(groups))
        _ratekern.medians(res, codes, None, med)
        _ratekern.medians(res, codes, med, mad)
        var = [float(m) * 1.4826 * (float(m) * 1.4826) for m in mad]
    else:
        var = []
        for g in groups:
            mad = _mad(res, use & g)
            var.append(mad * mad)
    if min(var) <= 0:
        return None
    ref = min(var)
    return groups, [ref / v for v in var]


def _precision(win: Windows, use: np.ndarray, res: np.ndarray) -> "_Prec | None":
    """precision()'s weights as a _Prec (None: every weight 1), the same numbers: the groups
    are apart (clean windows hold no prefill work, drained ones do)."""
    got = _precision_groups(win, use, res)
    if got is None:
        return None
    groups, weights = got
    codes = np.full(win.n, -1, dtype=np.int8)
    for j, g in enumerate(groups):
        codes[g] = j
    return _Prec(codes, weights)


def vacancy(win: Windows) -> float:
    """How many iterations a finished request's slot stays empty before a join refills it, as
    the stamps measure it: in windows whose mean batch is measured (SGLANG_LOG_MS=1 and the
    other sub-second clocks), that print the same #running-req at both ends and whose own
    prefill lines admitted requests (each refilled a slot a request vacated inside the
    window), the batch falls short of the printed size by v / I per such pair:
    v = I × Σ (r − B̄) / Σ pairs.  At least 1 (SGLang replies after the forward and admits at
    the top of a later pass: within_cov), at most I / 2; 1 where fewer than
    MIN_VACANCY_PAIRS pairs, or no window, measure it (whole-second stamps: the trapezoid
    says nothing of it).  A client's think time or latency keeps a slot empty for several
    iterations: simulated (4 clients, 30 ms think time, 12 ms cycles) v ≈ 3.5, and with v = 1
    the cycle was 0.7 % low."""
    if win.vac is not None:
        return win.vac
    v = 1.0
    m = win.measured
    if m is not None and win.nin is not None and win.rp is not None:
        with np.errstate(invalid="ignore"):
            ok = m & (win.r == win.rp) & (win.nin > 0) & np.isfinite(win.b) & (win.b > 0)
        pairs = float(win.nin[ok].sum()) if ok.any() else 0.0
        if pairs >= MIN_VACANCY_PAIRS:
            short = float((win.r[ok] - win.b[ok]).sum())
            v = float(np.clip(win.interval * short / pairs, 1.0, win.interval / 2))
    win.vac = v
    return v


def within_cov(win: Windows, gamma: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """What each window adds to the request-step weighted cycle through the covariance of the
    batch size and the cycle across its own iterations, per request-step: cov(B, c(B)) / b.

    The truth weights each iteration's cycle by its own batch, Σ_i B_i c_i; a window gives
    (Σ_i B_i) × its mean c̄, short by I × cov_i(B_i, c_i) = I × var_i(B) × the slope of c.

    * Where the batch moved between the line before (r′) and this one (r), it is taken as one
      step from r′ to r (exact for one request finishing or joining): the share p of
      iterations at r solves the window's mean batch, b = r′ + p (r − r′), and
      var = p (1 − p) (r − r′)²; a window whose mean batch is the trapezoid (r′ + r)/2 takes
      the mean of p (1 − p) over a step at a uniform time, 1/6.  The slope is the secant of
      the fitted c(B) from r′ to r.
    * Requests that joined (the #new-seq of the window's own prefill lines) beyond the rise
      the two lines show took the slots of requests that finished inside the window.  A slot
      stays empty for at least one iteration: SGLang sends a finished request's reply in
      ``process_batch_result``, after the forward, and takes new requests in only at the top
      of a later pass of its loop (``python/sglang/srt/managers/scheduler.py``,
      ``event_loop_normal``: ``recv_requests`` → ``process_input_requests`` →
      ``get_next_batch_to_run`` → ``run_batch`` → ``process_batch_result``; v0.5.21 receives
      with ``ingest_requests``).  Each such pair adds the share of the window its slot stood
      empty, (v/I)(1 − v/I), to the variance, at the slope of c at b, v the vacancy the
      stamps measure (``vacancy``: at least one iteration, the least it can be; a closed loop
      refills within about one, a client's think time keeps it longer; a pair at independent
      uniform times, 1/6, overshot the simulated term fivefold).

    Slopes are clipped to [0, c/B] (a cycle grows with the batch, and not faster than in
    proportion).  SGLang windows only (vLLM's windows of seconds hold many moves that no
    endpoint shows): 0 elsewhere."""
    g = _quad_curve(win, gamma, spec)
    if g is None:
        return np.zeros(win.n)
    c0, c1 = spec.scale

    def c(B):
        u = (B - c0) / c1
        return g[0] + g[1] * u + g[2] * u * u

    def dc(B):
        return (g[1] + 2 * g[2] * (B - c0) / c1) / c1
    if fast_available():
        out = np.empty(win.n)
        _ratekern.within_quad(*_quad_args(win, g, spec), out)
        return out
    return _within(win, c, dc)


def _quad_args(win: Windows, g: np.ndarray, spec: ModelSpec) -> tuple:
    """within_quad's arguments but its output: what _ratekern.point_sums also takes in place
    of the array of every window's term, to make each where it reads it."""
    r, b = _floats(win.r, win.b)
    return (r, np.ascontiguousarray(win.rp, np.float32), b,
            None if win.nin is None else np.ascontiguousarray(win.nin, np.float32),
            None if win.measured is None else _mask(win.measured),
            *(float(v) for v in g), *(float(v) for v in spec.scale),
            vacancy(win) / win.interval)


def _quad_curve(win: Windows, gamma: np.ndarray, spec: ModelSpec) -> np.ndarray | None:
    """within_cov's curve: the smooth control's coefficients as (g0, g1, g2) of c(B), or None
    where it has no term (no printed batch before each window, vLLM windows, a flat curve)."""
    if win.rp is None or win.rs is not None or len(spec.smooth) < 2:
        return None
    g = np.zeros(3)
    g[list(spec.smooth)] = gamma[:len(spec.smooth)]
    return g


def _within_terms(win: Windows, gamma: np.ndarray, spec: ModelSpec):
    """within_cov's terms for _ratekern.point_sums, where no one else reads them: the quadratic
    curve's arguments (each window's term made in the pass: an array of every window's fewer at
    the peak of a large log's fit, in its second pass), else the array."""
    g = _quad_curve(win, gamma, spec)
    return within_cov(win, gamma, spec) if g is None or not fast_available() else \
        _quad_args(win, g, spec)


def _one_step(win: Windows, step_of) -> float | None:
    """A stated rate's one step (ms), which the C passes take as a number where they would
    read an array of every window's (29 MB a GB of log; the same sums: each window that
    counts has a known batch, and so that step); None: an array it is (a baseline curve, or
    no C passes)."""
    if isinstance(step_of, StatedStep) and fast_available():
        return float(step_of.ms)
    return None


def _flat_step(win: Windows, step_of) -> bool:
    """Whether step_within adds nothing anywhere (its zeros): no printed batch before each
    window, vLLM windows, or a step that does not grow with the batch."""
    return win.rp is None or win.rs is not None or bool(getattr(step_of, "flat", False))


class WithinCov:
    """within_cov's term of every window (RateFit.cov), made again where it is read (by_bucket)
    instead of kept with the fit: an array of every window (29 MB a GB of log) alive for the
    rest of a summary.  The same numbers: the same pass over the same windows, with the fit's
    γ and the vacancy the windows keep."""

    __slots__ = ("win", "gamma", "spec")

    def __init__(self, win: Windows, gamma: np.ndarray, spec: "ModelSpec"):
        self.win, self.gamma, self.spec = win, np.array(gamma, dtype=float), spec

    def __len__(self) -> int:
        return self.win.n

    def __array__(self, dtype=None, copy=None):
        out = within_cov(self.win, self.gamma, self.spec)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, rows) -> np.ndarray:
        return np.asarray(self)[rows]


def step_within(win: Windows, step_of) -> np.ndarray:
    """The same for a baseline's step (ms) per batch size: what a window's request-step weighted
    step, Σ_i B_i s(B_i) / Σ_i B_i, holds beyond s(B̄) where the batch moved inside it (the
    truth's step, like its cycle, weighs each iteration by its batch).  0 where the step does
    not grow with the batch (one stated rate) or the baseline does not cover the window."""
    if _flat_step(win, step_of):
        return np.zeros(win.n)

    def c(B):
        return np.asarray(step_of(np.asarray(B, dtype=float)), dtype=float)

    def dc(B):
        B = np.asarray(B, dtype=float)
        return (c(B + 0.5) - c(np.maximum(B - 0.5, 0.0))) / np.where(B >= 0.5, 1.0, B + 0.5)
    out = _within(win, c, dc)
    out[~np.isfinite(out)] = 0.0
    return out


def _within(win: Windows, c, dc) -> np.ndarray:
    """within_cov's model for a curve ``c`` of the batch size (and its slope ``dc``)."""
    out = np.zeros(win.n)
    gap = vacancy(win) / win.interval
    measured = win.measured
    # a block of windows at a time: this runs inside the fit, on every window of a large log,
    # and a dozen temporaries of millions of windows each were a third of its peak memory
    for s_ in range(0, win.n, CHUNK):
        sl = slice(s_, min(s_ + CHUNK, win.n))
        r, rp, b = win.r[sl], win.rp[sl].astype(float), win.b[sl]
        nin = np.zeros(len(r)) if win.nin is None else win.nin[sl].astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = r - rp
            live = np.isfinite(d) & (b > 0) & ((d != 0) | (nin > 0))
            if not live.any():
                continue
            # the step: p (1 − p) (r − r′)² at the secant slope of c from r′ to r
            moved = d != 0
            lo, hi = np.minimum(rp, r), np.maximum(rp, r)
            span = np.where(moved, hi - lo, 1.0)
            chi = c(hi)
            sec = (chi - c(lo)) / span
            np.clip(sec, 0.0, np.maximum(chi, 0.0) / np.where(hi > 0, hi, 1.0), out=sec)
            p = np.clip((b - rp) / np.where(moved, d, 1.0), 0.0, 1.0)
            if measured is not None:
                p *= 1 - p
                p[~measured[sl]] = 1 / 6
            else:
                p[:] = 1 / 6
            cov = sec * p * d * d * moved
            # the joins beyond the rise: one iteration's share each, at the slope of c at b
            pairs = np.maximum(np.minimum(nin, nin - d), 0.0)
            slope = np.clip(dc(b), 0.0, np.maximum(c(b), 0.0) / np.where(b > 0, b, 1.0))
            cov += slope * pairs * (gap * (1 - gap))
            cov /= b
        out[sl] = np.where(live & np.isfinite(cov), cov, 0.0)
    return out


class _Difference:
    """The terms a − b, not made for every window (_term_sums takes the rows it needs)."""

    __slots__ = ("a", "b")

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b

    def __array__(self, dtype=None, copy=None):
        out = self.a - self.b
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, rows) -> np.ndarray:
        out = self.a[rows]
        out -= self.b[rows]         # ((a − b)[rows], element by element the same)
        return out


def _term_sums(terms: dict, rows: np.ndarray, n: int) -> list:
    """stats.block_sums of each OUTPUTS' terms at ``rows`` (None stays None; outputs that
    share their terms get the same sums), the terms dropped from ``terms`` as they are
    summed: the per-iteration cycle's first, each difference after the arrays it is taken
    from, so that few arrays of millions of windows are alive at once."""
    groups: dict[str, list[str]] = {}        # the first output of each terms object: all
    for k in OUTPUTS:
        first = next((g for g in groups if terms[g] is terms[k]), k)
        groups.setdefault(first, []).append(k)
    order = sorted(groups, key=lambda g: (g != "cycle_ms_iter",
                                          isinstance(terms[g], _Difference)))
    out: dict[str, np.ndarray | None] = {}
    for g in order:
        t = terms.pop(g)
        for k in groups[g][1:]:
            terms.pop(k)
        s = None if t is None else stats.block_sums(t[rows], n)
        del t
        for i, k in enumerate(groups[g]):
            out[k] = s if i == 0 or s is None else s.copy()
    return [out[k] for k in OUTPUTS]


def _masked_w(win: Windows, mask: np.ndarray) -> np.ndarray:
    """np.where(mask, win.w, 0.0), made in one array; w is not computed and kept on a
    Windows made for one pass (fit's ``alt``, whose ``_w`` is None)."""
    if win.rs is None and (win._w is None or win._w[0] is not win.b):
        out = win.b * win.interval          # (Windows.w's own product)
    else:
        out = win.w.copy()
    out[~mask] = 0.0
    return out


def _point_and_terms(win: Windows, use: np.ndarray, acc: np.ndarray, step: np.ndarray | None,
                     spec: ModelSpec, prec: np.ndarray | None = None,
                     strata: np.ndarray | None = None, *,
                     point_only: bool = False) -> tuple[dict, dict]:
    """The OUTPUTS' point estimates and, per window, the terms of their logarithms (zero for
    a window that does not count), conditional on the run's batch mix (``point_only``: the
    cycle's point estimate and β alone, no terms).

    β comes from the weighted fit (request-steps × ``prec``, the precision of the window's
    group); the cycle is post-stratified by the printed batch size (``strata``): within each
    stratum the precision-weighted mean of y − β·x, the strata combined with the run's own
    request-step shares (with unequal precisions, the fitted curve at each window's own batch
    carries the mix and the strata's precision-weighted residuals the error).  Its terms are
    each window's residual from the fitted curve, centred in its stratum, and its share of
    the fit's error (the regression's score through the sensitivity of the cycle to it) —
    not the spread of the batch sizes, so a run whose batch grows over time or jumps inside a
    window is not taken for a noisy one.  The accept length's terms are deviations from the
    run's mean.  A stated baseline is exact given the mix (its terms: None)."""
    keep = list(spec.smooth) + [3 + k for k in spec.xs]
    ns = len(spec.smooth)
    wu = _masked_w(win, use)
    om = wu if prec is None else wu * prec
    W = float(wu.sum())
    st = strata if strata is not None else np.where(use | acc, 0, -1)
    nan = math.nan
    th = {k: nan for k in OUTPUTS}
    terms: dict[str, np.ndarray | None] = {k: None for k in OUTPUTS}
    beta = np.zeros(N_X)
    # (the windows' own y, not a copy zeroed outside ``use``: every use below takes the rows of
    # ``use`` (the moments) or masks the others out (e, zi))
    y = win.y
    if W > 0 and np.count_nonzero(use) > len(keep):
        # few large temporaries, no n × p matrix: fresh pages are what large arrays cost most
        A, rhs = _gram(win, spec.scale, keep, om, use, y)
        dA, drhs = _eiv(win, use, spec, keep, om)
        Ainv = np.linalg.pinv(A - dA)
        gamma = Ainv @ (rhs - drhs)
        beta[list(spec.xs)] = gamma[ns:]
        # (y − Zγ where used, else 0: made in one array)
        e = _times(win, spec.scale, keep, gamma)
        with np.errstate(invalid="ignore"):     # (NaN, never read, outside ``use``)
            np.subtract(y, e, out=e)
        e[~use] = 0.0
        g = st[use]
        if len(g) and g.min() < 0:           # windows of no stratum: one of their own
            g = np.where(g < 0, g.max() + 1, g)
        ng = int(g.max()) + 1 if len(g) else 0
        Og = np.bincount(g, weights=om[use], minlength=ng)
        share = np.bincount(g, weights=wu[use], minlength=ng) / W
        live = Og > 0
        inv = np.divide(1.0, Og, out=np.zeros(ng), where=live)
        # within a stratum the precision weights set how each window's error counts, not the
        # mix: the cycle is the request-step weighted mean of the fitted curve at each
        # window's own batch (plus its within-window term) and the precision-weighted mean
        # residual of each stratum, combined with the strata's request-step shares.  With
        # equal precisions this is the stratum means of y − β·x.
        # (a large log's fit peaks here in its point-only pass, which needs e no more)
        oe = np.multiply(om, e, out=e) if point_only else om * e
        eg = np.bincount(g, weights=oe[use], minlength=ng) * inv
        del oe
        if point_only:
            del e, y, om
        cor = within_cov(win, gamma, spec)
        if not point_only:
            th["_cor"] = cor
            th["_cor_again"] = WithinCov(win, gamma, spec)
        fitted = _times(win, spec.scale, spec.smooth, gamma[:ns])
        fitted += cor
        if point_only:
            del cor
        fitted = fitted[use]
        mix = float(wu[use] @ fitted) / W
        del fitted
        cyc = float(np.sum(share[live] * eg[live])) + mix
        if point_only:
            th["cycle_ms"], th["_beta"] = cyc, beta
            return th, terms
        # a window's own error is its residual, not its deviation from its stratum's mean:
        # the mean batch moves inside a stratum (a window the batch jumped in sits far from
        # its printed size), and that is the run's mix, which the cycle is conditional on
        # (share[g] × ω × (e − eg[g]) × inv[g], left to right, a product at a time)
        direct, xbar = np.zeros(win.n), np.zeros(len(keep))
        dj = share[g]
        dj *= om[use]
        ej = e[use]
        ej -= eg[g]
        dj *= ej
        del ej
        dj *= inv[g]
        direct[use] = dj
        del dj
        omu = om[use]
        x1 = np.zeros(len(keep))
        for i, c in enumerate(keep):
            col = _column(win, spec.scale, c)[use]
            xbar[i] = float(np.sum(share * np.bincount(g, weights=col * omu,
                                                       minlength=ng) * inv))
            if i < ns:
                xbar[i] -= float(wu[use] @ col) / W
            else:
                x1[i] = float(col.mean())
            del col
        del omu
        if step is not None:
            th["step_ms"] = float((wu * step).sum() / W)
        # each window's share of γ's error, (Z_j · ω_j e_j) Ainv, taken through the
        # sensitivity of the output to γ (xbar): a vector, not an n × p matrix
        ve = np.multiply(om, e, out=e)
        wu = om = None          # (millions of windows each: the terms below need the room)

        def through(sens):
            out = _times(win, spec.scale, keep, Ainv.T @ sens)
            out *= ve
            return out
        th["cycle_ms"] = cyc
        del e, cor
        t = through(xbar)
        np.subtract(direct, t, out=t)           # (direct − through(xbar)) / cyc
        del direct
        t /= cyc
        terms["cycle_ms"] = t
        del t
        n1 = float(np.count_nonzero(use))
        zi = win.x.dot(beta)                    # y − β·x where used, else 0: per iteration
        with np.errstate(invalid="ignore"):
            np.subtract(y, zi, out=zi)
        zi[~use] = 0.0
        del y
        cyc_it = float(zi.sum() / n1)
        th["cycle_ms_iter"] = cyc_it
        zi -= cyc_it
        zi /= n1
        zi[~use] = 0.0
        zi -= through(x1)
        zi /= cyc_it
        terms["cycle_ms_iter"] = zi
        del zi, ve
    wu = om = None
    wa = _masked_w(win, acc)
    Wa = float(wa.sum())
    if Wa > 0:
        a = np.where(acc, win.a, 0.0)
        tau = float((wa * a).sum() / Wa)
        # deviations from the run's own mean, not from each batch-size stratum's: the accept
        # length is not a function of the batch size, and strata that are contiguous in time
        # (a batch that grows) would cancel inside the batches of the jackknife
        # (wa × (a − τ) where counted, else 0: in a's array)
        dev = a
        dev -= tau
        np.multiply(wa, dev, out=dev)
        dev[~acc] = 0.0
        del a, wa
        th["accept_len"] = tau
        dev /= Wa
        dev /= tau
        terms["accept_len"] = dev
    if terms["cycle_ms"] is not None and terms["accept_len"] is not None:
        th["rate"] = th["accept_len"] / th["cycle_ms"]
        terms["rate"] = _Difference(terms["accept_len"], terms["cycle_ms"])
        if step is not None and th["step_ms"] > 0:
            th["speedup"] = th["rate"] * th["step_ms"]
            terms["speedup"] = terms["rate"]
    if terms["cycle_ms"] is not None and step is not None and th["step_ms"] > 0:
        th["breakeven_accept_len"] = th["cycle_ms"] / th["step_ms"]
        terms["breakeven_accept_len"] = terms["cycle_ms"]
    th["_beta"] = beta
    return th, terms


def _point_and_sums(win: Windows, use: np.ndarray, acc: np.ndarray, step: np.ndarray | None,
                    spec: ModelSpec, prec: np.ndarray | None = None,
                    strata: np.ndarray | None = None, *, point_only: bool = False,
                    n: int = 0) -> tuple[dict, list]:
    """_point_and_terms in two passes in C (_ratekern: point_sums, term_sums): the same
    point estimates, and instead of each output's terms per window their sums over blocks of
    the ``n`` windows that count (use or acc), as _term_sums gives them.  No array of the
    windows' length is made but the within-window term's (``_cor``, which the fit keeps)."""
    keep = list(spec.smooth) + [3 + k for k in spec.xs]
    ns = len(spec.smooth)
    cols = bytes(keep)
    nan = math.nan
    th = {k: nan for k in OUTPUTS}
    Wa, tau = 0.0, nan
    if not point_only:
        # (the accept length first, before the cycle's arrays are made: fewer of millions of
        # windows alive at once)
        wa = _masked_w(win, acc)
        Wa = float(wa.sum())
        if Wa > 0:
            # (wa × np.where(acc, a, 0) in wa's own array: 0 × 0 where not acc, the same
            # elements, the same sum)
            np.multiply(wa, win.a, out=wa, where=acc)
            tau = float(wa.sum() / Wa)
        del wa
    om = _masked_w(win, use)
    W = float(om.sum())
    if isinstance(prec, _Prec):
        prec.scale(om)          # (wu × prec in wu's own array, a block at a time)
    elif prec is not None:
        om *= prec              # (wu × prec in wu's own array)
    beta = np.zeros(N_X)
    b, y, a = _floats(win.b, win.y, win.a)
    om = _floats(om)[0]
    rs = _floats(win.rs)[0]
    use_m, acc_m = _mask(use), _mask(acc)
    st = np.where(use | acc, 0, -1).astype(np.int32) if strata is None else \
        np.ascontiguousarray(strata, dtype=np.int32)
    xr, xv = _sparse(win.x)
    do_cycle = False
    gamma = Ainv = None
    share = eg = inv = np.zeros(0)
    gneg, cyc, cyc_it, n1 = 0, nan, nan, nan
    if W > 0 and np.count_nonzero(use) > len(keep):
        A, rhs = _gram(win, spec.scale, keep, om, use, win.y)
        dA, drhs = _eiv(win, use, spec, keep, om)
        Ainv = np.linalg.pinv(A - dA)
        gamma = Ainv @ (rhs - drhs)
        beta[list(spec.xs)] = gamma[ns:]
        cor = within_cov(win, gamma, spec) if not point_only else \
            _within_terms(win, gamma, spec)
        if not point_only:
            th["_cor"] = cor
            th["_cor_again"] = WithinCov(win, gamma, spec)
        nb = int(st.max()) + 1 if len(st) else 0
        p = len(keep)
        Og, Wg, OEg = np.empty(nb + 1), np.empty(nb + 1), np.empty(nb + 1)
        SX, WX, X1 = np.empty((p, nb + 1)), np.empty(p), np.empty(p)
        xb0 = float(np.zeros(N_X) @ beta)
        mixsum, n1, zisum, stepsum, gmax, negs = _ratekern.point_sums(
            b, y, om, rs, float(win.interval), use_m, st, nb, xr, xv, cols,
            np.ascontiguousarray(gamma, dtype=float), ns, *map(float, spec.scale),
            cor if isinstance(cor, tuple) else _floats(cor)[0],
            beta, xb0, step if isinstance(step, float) else _floats(step)[0], Og, Wg, OEg, SX,
            WX, X1)
        del cor
        # (the used strata's bins, and the bin of used windows of no stratum after them: the
        # code numpy's path gives them)
        bins = list(range(gmax + 1)) + ([nb] if negs else [])
        gneg = gmax + 1 if negs else 0
        Og, share = Og[bins], Wg[bins] / W
        live = Og > 0
        inv = np.divide(1.0, Og, out=np.zeros(len(bins)), where=live)
        eg = OEg[bins] * inv
        cyc = float(np.sum(share[live] * eg[live])) + mixsum / W
        th["cycle_ms"] = cyc
        if point_only:
            th["_beta"] = beta
            return th, []
        xbar, x1 = np.zeros(p), np.zeros(p)
        for i in range(p):
            xbar[i] = float(np.sum(share * SX[i, bins] * inv))
            if i < ns:
                xbar[i] -= WX[i] / W
            else:
                x1[i] = X1[i] / n1
        if step is not None:
            th["step_ms"] = stepsum / W
        cyc_it = zisum / n1
        th["cycle_ms_iter"] = cyc_it
        do_cycle = True
    elif point_only:
        th["_beta"] = beta
        return th, []
    if Wa > 0:
        th["accept_len"] = tau
    do_acc = Wa > 0
    k = min(n, stats.FINE)
    out = np.zeros((k, 4))
    if do_cycle or do_acc:
        z = np.zeros(len(keep))
        _ratekern.term_sums(
            b, y, a, om, rs, float(win.interval), use_m, acc_m, st, gneg, xr, xv, cols,
            *(np.ascontiguousarray(v, dtype=float) for v in
              ((gamma, Ainv.T @ xbar, Ainv.T @ x1) if do_cycle else (z, z, z))),
            share, eg, inv, beta, float(np.zeros(N_X) @ beta), *map(float, spec.scale),
            float(cyc), float(cyc_it), float(n1), float(tau), Wa, int(do_cycle), int(do_acc), n,
            out)
    sums: dict[str, np.ndarray | None] = {k_: None for k_ in OUTPUTS}
    if do_acc:
        sums["accept_len"] = out[:, 0].copy()
    if do_cycle:
        sums["cycle_ms"] = out[:, 1].copy()
        sums["cycle_ms_iter"] = out[:, 3].copy()
    if do_cycle and do_acc:
        th["rate"] = th["accept_len"] / th["cycle_ms"]
        sums["rate"] = out[:, 2].copy()
        if step is not None and th["step_ms"] > 0:
            th["speedup"] = th["rate"] * th["step_ms"]
            sums["speedup"] = out[:, 2].copy()
    if do_cycle and step is not None and th["step_ms"] > 0:
        th["breakeven_accept_len"] = th["cycle_ms"] / th["step_ms"]
        sums["breakeven_accept_len"] = out[:, 1].copy()
    th["_beta"] = beta
    return th, [sums[k_] for k_ in OUTPUTS]


class StatedStep:
    """A stated baseline rate's step time (ms) at any known mean batch size: one number (NaN
    for an unknown size).  ``flat``: it does not grow with the batch, so a window whose batch
    moved inside it adds nothing to it (step_within: zeros, not a pass over every window)."""

    flat = True
    __slots__ = ("ms",)

    def __init__(self, ms: float):
        self.ms = ms

    def __call__(self, b) -> np.ndarray:
        return np.where(np.isfinite(np.asarray(b, float)), self.ms, np.nan)


def step_curve(sizes: np.ndarray, steps: np.ndarray):
    """A baseline step time for any mean batch size: linear between the given batch sizes
    (ms per step), NaN outside them (no extrapolation; a mean batch within EDGE_TOL of the end
    sizes, the rounding of a measured batch, takes the end's step)."""
    order = np.argsort(sizes)
    xs, ys = np.asarray(sizes, float)[order], np.asarray(steps, float)[order]

    def of(b):
        b = np.asarray(b, dtype=float)
        out = np.interp(b, xs, ys)
        out[~within(b, xs[0], xs[-1])] = np.nan
        return out
    return of


def within(b: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Mean batch sizes a baseline measured from lo to hi covers: inside, or within EDGE_TOL
    of an end (the rounding of a measured batch); NaN is not covered."""
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        return (b >= lo * (1 - EDGE_TOL)) & (b <= hi * (1 + EDGE_TOL))
