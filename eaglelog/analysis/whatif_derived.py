"""What if, without a profiler: the cost model of the cycle fitted on the runs' derived cycles
(docs/whatif.md, "Without EAGLE3_PROF blocks").

Most servers run without the EAGLE3_PROF patch, and vLLM prints no split of the cycle. What
every SGLang and vLLM log does give is the cycle the rate model derives from the decode
windows, per #running-req bucket (docs/statistics.md). With runs at two or more num_steps
those cycles are evidence of how the cycle grows with the steps and with the batch:

* **The model**: c(B, S) = a0 + a1·B + a2·S + a3·B·S (+ a4·n², n = B·K the tokens a verify
  forward checks), fitted on cells (runs × buckets) by weighted least squares, each cell
  weighted by the inverse of its own relative variance (its cycle's se_log²).  A draft step is
  a forward of B tokens of the draft model and a verify one of B·K tokens of the target, so
  the draft, verify and overhead lines all fold into these columns.  The B columns are left
  out when the cells' batch sizes span less than ×1.5, the n² column unless its t is
  significant at 5 % with at least two cells to spare.
* **Model error**: the cells' χ² per degree of freedom above 1 (what their own errors do not
  explain), as a relative variance of a new cell; the parameters' covariance is scaled by
  the χ² when it is above 1.
* **A prediction** keeps the anchor's measured cycle and adds the model's change:
  c_b(S′) = c_b + ĉ(b, S′) − ĉ(b, S) in a bucket, and for the whole run the same summed with
  the buckets' request-step shares (the per-stream rate is Σ tokens / Σ request-steps × time).

One run (one num_steps) measures no growth with the steps: whatif then needs EAGLE3_PROF
blocks, and says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .cost_step import MIN_SIDE, Step, find_step
from .estimators import _tq

COLUMNS = ("1", "B", "S", "B·S", "n²", "step")
B_SPAN = 1.5          # batch sizes spanning less than this: no batch columns


@dataclass(frozen=True)
class DerivedCost:
    coef: np.ndarray             # over COLUMNS (0 where a column is left out)
    cov: np.ndarray              # 5 × 5
    model_var: float             # a new cell's relative model variance (× its cycle²)
    cells: int
    k_range: tuple[int, int]     # tokens a verify checked, measured
    n_range: tuple[float, float]  # batch × K, measured
    df: float
    slope_from: str              # the model, stated (as CostModel.slope_from)
    residuals: tuple = ()        # (run, batch, steps, measured cycle, fitted)
    step: Step | None = None     # a step in n = B·K (cost_step): the "step" column

    def at(self, b: float, s: int, k: int) -> tuple[float, np.ndarray]:
        ind = self.step.at(b * k)[0] if self.step is not None else 0.0
        g = np.array([1.0, b, s, b * s, (b * k) ** 2, ind])
        return float(g @ self.coef), g

    def _unc2(self, b: float, k_new: int, k0: int) -> float:
        """The variance (ms²) of the change from where the step lies between two cells."""
        if self.step is None:
            return 0.0
        s = float(self.coef[5])
        return (s * self.step.at(b * k_new)[1]) ** 2 + (s * self.step.at(b * k0)[1]) ** 2

    def _change(self, b: float, s_new: int, s0: int, k_new: int, k0: int):
        v1, g1 = self.at(b, s_new, k_new)
        v0, g0 = self.at(b, s0, k0)
        return v1 - v0, g1 - g0, v1

    def bucket_ratio(self, c_b: float, se_cb: float, b: float, s_new: int, s0: int,
                     k_new: int, k0: int) -> tuple[float, float]:
        """c_b(S′) / c_b(S) for a bucket of mean batch b and measured cycle c_b, and the
        standard error of its log."""
        if s_new == s0 and k_new == k0:
            return 1.0, 0.0
        delta, g, v1 = self._change(b, s_new, s0, k_new, k0)
        c_new = c_b + delta
        if not c_new > 0:
            return math.nan, math.nan
        g = g / c_new
        var = float(g @ self.cov @ g) + self.model_var * (v1 / c_new) ** 2 + \
            (delta / c_new * se_cb) ** 2 + self._unc2(b, k_new, k0) / c_new ** 2
        return c_new / c_b, math.sqrt(max(var, 0.0))

    def mix_ratio(self, buckets, s_new: int, s0: int, k_new: int,
                  k0: int) -> tuple[float, float]:
        """The same over a run's buckets, combined with their request-step shares."""
        if s_new == s0 and k_new == k0:
            return 1.0, 0.0
        # the buckets whose cycle has an interval, their shares renormalised (a bucket of a
        # few windows is too noisy to carry the mix)
        ok = [b for b in buckets if b.cycle_ms.sufficient and b.share > 0]
        tot = sum(b.share for b in ok)
        if not ok or tot <= 0:
            return math.nan, math.nan
        c_mix = sum(b.share * b.cycle_ms.estimate for b in ok) / tot
        delta, grad, v1 = 0.0, np.zeros(len(COLUMNS)), 0.0
        se_mix = unc = 0.0
        for b in ok:
            d, g, v = self._change(b.batch, s_new, s0, k_new, k0)
            w = b.share / tot
            delta += w * d
            grad += w * g
            v1 += w * v
            unc += w * math.sqrt(self._unc2(b.batch, k_new, k0))
            se_mix += (w * b.cycle_ms.estimate * (b.cycle_ms.se_log or 0.0)) ** 2
        c_new = c_mix + delta
        if not c_new > 0:
            return math.nan, math.nan
        grad = grad / c_new
        var = float(grad @ self.cov @ grad) + self.model_var * (v1 / c_new) ** 2 + \
            (delta / c_new) ** 2 * se_mix / c_mix ** 2 + (unc / c_new) ** 2
        return c_new / c_mix, math.sqrt(max(var, 0.0))


def _chi2(X: np.ndarray, y: np.ndarray, rel_var: np.ndarray) -> float:
    """_fit's weighted residual sum of squares."""
    w = 1.0 / (rel_var * y * y)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    res = y - X @ coef
    return float(w @ (res * res))


def _fit(X: np.ndarray, y: np.ndarray, rel_var: np.ndarray):
    w = 1.0 / (rel_var * y * y)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    res = y - X @ coef
    dof = len(y) - X.shape[1]
    chi2 = float(w @ (res * res)) / dof if dof > 0 else 1.0
    cov = max(chi2, 1.0) * np.linalg.pinv((X * w[:, None]).T @ X)
    return coef, cov, chi2, dof


def fit_derived(evs) -> DerivedCost | None:
    """The derived-cycle cost model of the runs ``evs`` (whatif.Evidence, with their buckets),
    or None when their cells hold fewer than two num_steps or too few cells for the model."""
    cells = [(e.run, e.steps, e.k, b.batch, b.cycle_ms) for e in evs for b in e.buckets
             if b.cycle_ms.sufficient and b.cycle_ms.se_log and b.cycle_ms.se_log > 0]
    steps = {c[1] for c in cells}
    if len(steps) < 2:
        return None
    S = np.array([c[1] for c in cells], dtype=float)
    K = np.array([c[2] for c in cells], dtype=float)
    B = np.array([c[3] for c in cells], dtype=float)
    y = np.array([c[4].estimate for c in cells])
    rv = np.array([c[4].se_log for c in cells]) ** 2
    n = B * K
    full = np.column_stack([np.ones(len(y)), B, S, B * S, n ** 2, np.zeros(len(y))])
    cols = [0, 2] + ([1, 3] if B.max() >= B_SPAN * B.min() else [])
    if len(y) < len(cols) + 1:
        return None
    coef, cov, chi2, dof = _fit(full[:, cols], y, rv)
    if len(y) >= len(cols) + 3:
        q = _fit(full[:, cols + [4]], y, rv)
        se = math.sqrt(q[1][-1, -1]) if q[1][-1, -1] > 0 else math.inf
        if q[3] > 0 and abs(q[0][-1]) / se > _tq(q[3], 0.95):
            cols = cols + [4]
            coef, cov, chi2, dof = q
    # a step in n against the polynomial (cost_step), kept when significant and when it fits
    # better than the n² term (a convex cost passes the F test against the straight line
    # with a step in a gap of the measured n)
    step = None
    base = [c_ for c_ in cols if c_ != 4]
    if len(y) >= len(base) + 2 * MIN_SIDE:
        X = full[:, base]
        step = find_step(n, X, lambda Xs: _chi2(Xs, y, rv), full[:, 4],
                         [c_[0] for c_ in cells])
        if step is not None:
            full[:, 5] = step.column(n)
            cols = base + [5]
            coef, cov, chi2, dof = _fit(full[:, cols], y, rv)
    c = np.zeros(len(COLUMNS))
    c[cols] = coef
    C = np.zeros((len(COLUMNS), len(COLUMNS)))
    C[np.ix_(cols, cols)] = cov
    fitted = full @ c
    terms = " + ".join(f"{c[j]:.4g}" + ("" if j == 0 else f"·1[n > {step.lo:g}]" if j == 5
                                        else f"·{COLUMNS[j]}") for j in sorted(cols))
    text = (f"derived cycles of {len(y)} cells (runs × #running-req, {len(steps)} num_steps; "
            f"no EAGLE3_PROF phases): cycle = {terms} ms"
            + (", n = batch × K" if 4 in cols or 5 in cols else "")
            + (f" ({step.text}: where the polynomial misses the cells)" if step else "")
            + f"; χ²/df {chi2:.2g}" + (
                f" (the cells scatter {math.sqrt(chi2):.2g}× beyond their own errors: the "
                "intervals carry it as model error)" if chi2 > 2 else ""))
    res = tuple((c_[0], c_[3], c_[1], float(v), float(f)) for c_, v, f in zip(cells, y, fitted))
    return DerivedCost(c, C, max(chi2 - 1.0, 0.0) * float(rv.mean()), len(y),
                       (int(K.min()), int(K.max())),
                       (float((B * K).min()), float((B * K).max())),
                       float(dof) if dof > 0 else math.inf, text, res, step)
