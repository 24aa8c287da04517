"""What if, per batch size: whatif's predictions for each #running-req bucket of the anchor run
(``eaglelog whatif --by batch``; docs/whatif.md, "Per batch size").

The model, stated:

* **The level** of each bucket is the anchor run's own per-stream rate at that batch size, as
  ``breakeven --by batch`` measures it (the rate model's per-bucket cycle and accept length,
  docs/statistics.md).  The positions give τ(S') / τ(S) as for the whole run: a draft is per
  request, so its acceptance by position is taken not to depend on the batch size.
* **The cycle's change** c_b(S', K') − c_b(S, K) at the bucket's mean batch b comes from the
  first of these the runs support:

  1. the **per-batch cost model** (BatchCost) fitted on cells (runs × buckets) of EAGLE3_PROF
     blocks, each block placed at the batch of the decode lines printed since the block
     before it: verify = v0 + u1·n (+ u2·n²), n = B·K the tokens one verify forward checks,
     and a draft step d0 + d1·B;
  2. the **derived-cycle model** of runs without phases (whatif_derived);
  3. the whole-run CostModel **scaled**: its growth per verified token by b / E[B], its K²
     term by b² / E[B²] (E over the runs' cycles: a quadratic in B·K averaged over a mix holds
     E[B²], not E[B]²), and a draft step between flat and growing as the bucket's cycle does
     (c_b / c̄): the midpoint, half the difference as its σ.
* Re-extend and other overhead do not change with S: the bucket's measured cycle carries them.

The prediction is the bucket's rate × τ ratio × c_b / c_b(S', K'), with a prediction interval
built as whatif's: twice the bucket rate's own variance (the anchor's error and a new run's),
the τ ratio's, and the cost ratio's (parameters, model error, the bucket cycle's own error).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import stats
from ..errors import EaglelogError
from ..stats import Estimate
from . import engines, rate
from .cost_step import MIN_SIDE, Step, find_step
from .estimators import _tq
from .whatif_model import CostModel, Evidence, _d, anchor_of, tau_ratio


EDGE = 1.05      # batch × K within 5 % of the measured range is inside it


@dataclass(frozen=True)
class Bucket:
    """One #running-req bucket of a measured run."""

    label: str
    share: float                 # of the run's request-steps
    batch: float                 # request-step weighted mean printed #running-req in it
    eff_tok_s: Estimate          # per-stream rate measured there
    cycle_ms: Estimate
    step_ms: float | None        # the baseline step at its mix


@dataclass(frozen=True)
class Cell:
    """The EAGLE3_PROF blocks of one run in one #running-req bucket: each block placed at the
    batch of the decode lines printed since the block before it."""

    run: str
    steps: int
    k: int
    blocks: int
    m1: float                    # mean batch over the blocks' cycles
    m2: float                    # mean batch²
    draft: float                 # ms per cycle (cycle-weighted mean over its blocks)
    verify: float


@dataclass(frozen=True)
class BatchCost:
    """Fitted on cells (runs × buckets) of profiler blocks: verify = v0 + u1·n (+ u2·n²) with
    n = B·K the tokens one verify forward checks (E[n²] = K²·E[B²] within a cell), and a draft
    step = d0 + d1·B; weighted least squares with relative errors (each cell weighted by its
    blocks over its value²), the residual variance from the cells (a new cell's model error:
    that relative variance at the mean weight)."""

    verify: np.ndarray           # (v0, u1, u2, step)
    verify_cov: np.ndarray
    verify_var: float            # a new cell's relative model variance (× verify²)
    draft: np.ndarray            # (d0, d1)
    draft_cov: np.ndarray
    draft_var: float             # … and a draft step's (× step²)
    cells: int
    n_range: tuple[float, float]  # tokens a verify checked, measured
    df: float
    text: str
    residuals: tuple = ()        # (run, bucket mean batch, K, measured verify, fitted) per cell
    step: Step | None = None     # a step in n (cost_step): its column is verify[3]

    def verify_at(self, b: float, k: float) -> tuple[float, np.ndarray]:
        ind = self.step.at(b * k)[0] if self.step is not None else 0.0
        g = np.array([1.0, b * k, (b * k) ** 2, ind])
        return float(g @ self.verify), g

    def step_unc(self, b: float, k: float) -> float:
        """The standard uncertainty (ms) of the verify at n = b·k from where the step lies."""
        if self.step is None:
            return 0.0
        return abs(float(self.verify[3])) * self.step.at(b * k)[1]

    def draft_at(self, b: float) -> tuple[float, np.ndarray]:
        g = np.array([1.0, b])
        return float(g @ self.draft), g


def _rss(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """_wls's weighted residual sum of squares."""
    wr = w / np.maximum(y * y, 1e-12)
    sw = np.sqrt(wr)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    res = y - X @ coef
    return float(wr @ (res * res))


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray):
    """Weighted least squares with a **relative** error model (a cell of w blocks has
    variance σ² y² / w: times scale with the work): (coefficients, covariance, σ² / w̄ — a new
    cell's relative model variance at the mean weight — and the df)."""
    wr = w / np.maximum(y * y, 1e-12)
    sw = np.sqrt(wr)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    res = y - X @ coef
    dof = len(y) - X.shape[1]
    s2 = float(wr @ (res * res)) / dof if dof > 0 else 0.0
    cov = s2 * np.linalg.pinv((X * wr[:, None]).T @ X)
    return coef, cov, s2 / float(w.mean()), dof


def fit_batch_cost(cells: list[Cell]) -> BatchCost | None:
    """The per-batch cost model of the cells, or None when they do not identify it (fewer
    than 4 cells, or the tokens a verify checks spanning less than ×1.5)."""
    if len(cells) < 4:
        return None
    w = np.array([c.blocks for c in cells], dtype=float)
    k = np.array([c.k for c in cells], dtype=float)
    m1 = np.array([c.m1 for c in cells])
    m2 = np.array([c.m2 for c in cells])
    n1, n2 = k * m1, k * k * m2
    if n1.max() < 1.5 * n1.min():
        return None
    v = np.array([c.verify for c in cells])
    X = np.column_stack([np.ones(len(cells)), n1])
    coef, cov, var, dof = _wls(X, v, w)
    quad = False
    if len(cells) >= 5:
        q = _wls(np.column_stack([X, n2]), v, w)
        se2 = math.sqrt(q[1][2, 2]) if q[1][2, 2] > 0 else math.inf
        if q[3] > 0 and abs(q[0][2]) / se2 > _tq(q[3], 0.95):
            coef, cov, var, dof, quad = q[0], q[1], q[2], q[3], True
    # a step in n against the straight line (cost_step): kept when significant and better
    # than the quadratic
    step = None
    if len(cells) >= 2 * MIN_SIDE + 2:
        step = find_step(n1, X, lambda Xs: _rss(Xs, v, w), n2, [c.run for c in cells])
        if step is not None:
            coef, cov, var, dof = _wls(np.column_stack([X, step.column(n1)]), v, w)
            coef = np.array([coef[0], coef[1], 0.0, coef[2]])
            c4 = np.zeros((4, 4))
            c4[np.ix_([0, 1, 3], [0, 1, 3])] = cov
            cov, quad = c4, False
    vc = np.zeros(4)
    vc[:len(coef)] = coef
    vcov = np.zeros((4, 4))
    vcov[:len(coef), :len(coef)] = cov
    steps = np.array([c.steps for c in cells], dtype=float)
    dr = np.array([c.draft for c in cells]) / steps
    dX = np.column_stack([np.ones(len(cells)), m1])
    if m1.max() > 1.2 * m1.min() and len(cells) >= 3:
        dco, dcov, dvar, _ = _wls(dX, dr, w * steps)
    else:                                   # one batch size: the draft step is flat in it
        dco, dcov, dvar, _ = _wls(dX[:, :1], dr, w * steps)
        dco = np.array([dco[0], 0.0])
        dcov = np.diag([dcov[0, 0], 0.0])
    text = (f"per batch size from {len(cells)} cells of EAGLE3_PROF blocks (runs × "
            f"#running-req): verify = {vc[0]:.4g} + {vc[1]:.4g}·n"
            + (f" + {vc[2]:.3g}·n²" if quad else "")
            + (f" + {vc[3]:.4g}·1[n > {step.lo:g}] ({step.text}, where the straight line "
               "misses the cells)" if step is not None else "")
            + " ms, n = batch × K; draft step = " + (
                f"{dco[0]:.3g} + {dco[1]:.3g}·batch ms" if dco[1] else
                f"{dco[0]:.3g} ms (one batch size: flat)"))
    fitted = vc[0] + vc[1] * n1 + vc[2] * n2 + (vc[3] * step.column(n1) if step else 0.0)
    res = tuple((c.run, c.m1, c.k, c.verify, float(f)) for c, f in zip(cells, fitted))
    return BatchCost(vc, vcov, var, dco, dcov, dvar, len(cells),
                     (float(n1.min()), float(n1.max())), float(dof) if dof > 0 else math.inf,
                     text, res, step)


def cells_of(sub, source: str, run: str, steps: int, k: int) -> list[Cell]:
    """The complete no-sync EAGLE3_PROF blocks of one run, each placed at the batch of the
    decode lines printed between the block before it and itself (or the next decode line),
    grouped by #running-req bucket."""
    p = sub.prof[sub.prof["source"] == source]
    if p.empty:
        return []
    keep = p["complete"].fillna(False).astype(bool).to_numpy() & \
        ~(p["mode"] == "sync").fillna(False).to_numpy(dtype=bool)
    p = p[keep].sort_values("line_no")
    if p.empty:
        return []
    lines = p["line_no"].to_numpy(dtype=np.int64)
    cyc = p["cycles"].to_numpy(dtype=float)
    ph = sub.rows_of(source, "prof_phases", ["block", "phase", "ms_per_cycle"])
    blk = ph["block"].to_numpy(dtype=np.int64)
    name = ph["phase"].astype(str).to_numpy()
    ms = ph["ms_per_cycle"].to_numpy(dtype=float, na_value=np.nan)
    pos = np.searchsorted(lines, blk)
    ok = (pos < len(lines)) & (lines[np.minimum(pos, len(lines) - 1)] == blk)
    draft = np.zeros(len(lines))
    verify = np.full(len(lines), np.nan)
    np.add.at(draft, pos[ok & (name == "Draft steps")], ms[ok & (name == "Draft steps")])
    vm = ok & (name == "Target verify")
    verify[pos[vm]] = ms[vm]
    dec = sub.rows_of(source, "decode", ["line_no", "running_req"])
    dl = dec["line_no"].to_numpy(dtype=np.int64)
    r = dec["running_req"].to_numpy(dtype=float, na_value=np.nan)
    good = np.isfinite(r) & (r > 0)
    dl, r = dl[good], r[good]
    order = np.argsort(dl, kind="stable")
    dl, r = dl[order], r[order]
    if not len(dl):
        return []
    c1 = np.concatenate([[0.0], np.cumsum(r)])
    c2 = np.concatenate([[0.0], np.cumsum(r * r)])
    hi = np.searchsorted(dl, lines)                     # decode lines before each block …
    lo = np.concatenate([[0], hi[:-1]])                 # … and after the one before it
    empty = hi <= lo
    lo = np.where(empty, np.minimum(hi, len(dl) - 1), lo)
    hi = np.where(empty, lo + 1, hi)
    cnt = hi - lo
    b1 = (c1[hi] - c1[lo]) / cnt
    b2 = (c2[hi] - c2[lo]) / cnt
    # a block whose decode lines fall in two buckets spans a change of load: its batch is
    # not known well enough to place it (left out)
    codes_r, labels = rate.bucket_of(r)
    first = codes_r[lo]
    one = np.minimum.reduceat(codes_r, lo) == np.maximum.reduceat(codes_r, lo)
    one &= (np.maximum.reduceat(codes_r, lo) == first)
    # reduceat runs to the next start, not to hi: recheck the spans that end before it
    ends = np.concatenate([lo[1:], [len(dl)]])
    short = hi < ends
    for i in np.flatnonzero(short & one):
        one[i] = (codes_r[lo[i]:hi[i]] == first[i]).all()
    codes = np.where(one, first, -1)
    out = []
    for g, label in enumerate(labels):
        m = (codes == g) & np.isfinite(verify)
        if not m.any():
            continue
        w = cyc[m]
        out.append(Cell(run, steps, k, int(m.sum()), float((w * b1[m]).sum() / w.sum()),
                        float((w * b2[m]).sum() / w.sum()),
                        float((w * draft[m]).sum() / w.sum()),
                        float((w * verify[m]).sum() / w.sum())))
    return out


@dataclass(frozen=True)
class BatchPrediction:
    steps: int
    draft_tokens: int            # tokens a verify checks (a chain: steps + 1)
    cycle_ms: Estimate
    eff_tok_s: Estimate
    speedup: Estimate | None
    measured_eff_tok_s: Estimate | None = None   # a run with this config, in this bucket
    beyond: bool = False         # batch × K beyond the measured range: an extrapolation

    def to_dict(self) -> dict:
        return {"steps": self.steps, "draft_tokens": self.draft_tokens,
                "cycle_ms": _d(self.cycle_ms), "eff_tok_s": _d(self.eff_tok_s),
                "speedup": _d(self.speedup), "measured_eff_tok_s": _d(self.measured_eff_tok_s),
                "extrapolated": self.beyond}


@dataclass(frozen=True)
class BatchRow:
    """The predictions of one bucket of the anchor run."""

    batch: str
    share: float
    mean_batch: float
    measured: Estimate           # the anchor's own rate there
    predictions: tuple[BatchPrediction, ...]

    @property
    def best(self) -> BatchPrediction | None:
        ok = [p for p in self.predictions if math.isfinite(p.eff_tok_s.estimate)]
        return max(ok, key=lambda p: p.eff_tok_s.estimate) if ok else None

    def to_dict(self) -> dict:
        b = self.best
        return {"running_req": int(self.batch) if self.batch.isdigit() else self.batch,
                "share": self.share, "mean_batch": self.mean_batch,
                "measured_eff_tok_s": _d(self.measured),
                "best_steps": b.steps if b else None,
                "predictions": [p.to_dict() for p in self.predictions]}


@dataclass(frozen=True)
class BatchCheck:
    """One bucket of one run predicted from the others (leave-one-run-out)."""

    run: str
    steps: int
    batch: str
    predicted: Estimate
    measured: Estimate
    error: float
    inside: bool

    def to_dict(self) -> dict:
        return {"run": self.run, "steps": self.steps,
                "running_req": int(self.batch) if self.batch.isdigit() else self.batch,
                "predicted": _d(self.predicted), "measured": _d(self.measured),
                "error": self.error, "inside": self.inside}


MIN_BUCKET_WINDOWS = 30   # a bucket's cells are predicted and checked from this many windows


def buckets(sub, source: str, base, confidence: float, warmup) -> list[Bucket]:
    """The #running-req buckets of one run: the rate model's per-bucket rate and cycle — fitted
    without the baseline, so that a baseline covering only some batch sizes changes no rate —
    and, where the baseline covers a bucket, its step there."""
    from .breakeven import baseline_side, free_fit, run_windows
    applied, _ = engines.apply(sub, source)
    _, win = run_windows(applied, source)
    codes, labels = rate.bucket_of(win.r)
    mean = {}                  # the printed #running-req, as the cost model's cells hold it
    for g, label in enumerate(labels):
        m = (codes == g) & (win.w > 0)
        if m.any():
            mean[label] = float((win.w[m] * win.r[m]).sum() / win.w[m].sum())
    step_of = baseline_side(base, confidence, []).step_of if base is not None else None
    fit = free_fit(applied, source, confidence, warmup)
    out = []
    for bk in rate.by_bucket(win, fit, confidence, step_of, buckets=(codes, labels)):
        if bk.label not in mean:
            continue
        r = bk["rate"]
        if bk.windows < MIN_BUCKET_WINDOWS:
            # (a bucket of a few windows is mostly a batch in transit between two levels: the
            # bucket cost model does not describe it, and a prediction for it or from it is
            # not made; its rate keeps its point estimate)
            r = stats.insufficient(r.estimate, r.n, r.confidence)
        eff = Estimate(1000 * r.estimate, 1000 * r.ci_low if r.ci_low is not None else None,
                       1000 * r.ci_high if r.ci_high is not None else None, r.n, r.confidence,
                       r.se_log, r.df, "1000 × accept length / cycle")
        st = bk["step_ms"].estimate
        out.append(Bucket(bk.label, bk.share, mean[bk.label], eff, bk["cycle_ms"],
                          st if math.isfinite(st) else None))
    return out


def cost_ratio(model: CostModel, bk: Bucket, run_cycle: float, s_new: int, s0: int, k_new: int,
               k0: int) -> tuple[float, float]:
    """c_b(S', K') / c_b(S, K) in bucket ``bk`` and the standard error of its log (the module
    docstring's model)."""
    c_b = bk.cycle_ms.estimate
    if s_new == s0 and k_new == k0:
        return 1.0, 0.0
    scale = bk.batch / model.batch if model.batch > 0 else 1.0
    scale2 = bk.batch ** 2 / model.batch2 if model.batch2 > 0 else scale * scale
    grow = c_b / run_cycle - 1.0 if run_cycle > 0 else 0.0
    f_d, sd_f = 1.0 + grow / 2, abs(grow) / 2
    ds, dk, dk2 = s_new - s0, k_new - k0, k_new * k_new - k0 * k0
    delta = model.d * f_d * ds + model.v1 * scale * dk + model.v2 * scale2 * dk2
    c_new = c_b + delta
    if not c_new > 0:
        return math.nan, math.nan
    g = np.array([f_d * ds, 0.0, scale * dk, scale2 * dk2]) / c_new
    var = float(g @ model.cov @ g)
    var += (model.d * ds * sd_f / c_new) ** 2
    var += model.resid_var * max(scale, 1.0) ** 2 / c_new ** 2
    var += (delta / c_new * (bk.cycle_ms.se_log or 0.0)) ** 2
    return c_new / c_b, math.sqrt(max(var, 0.0))


def batch_cost_ratio(bc: BatchCost, bk: Bucket, s_new: int, s0: int, k_new: int, k0: int
                     ) -> tuple[float, float]:
    """c_b(S', K') / c_b(S, K) from the per-batch cost model: the bucket's measured cycle plus
    the draft steps' and the verify's change at its mean batch b, and the standard error of
    its log (the parameters' covariance, a new cell's model error for the verify and for each
    changed draft step, the bucket cycle's own error)."""
    c_b = bk.cycle_ms.estimate
    if s_new == s0 and k_new == k0:
        return 1.0, 0.0
    b = bk.batch
    dr, gd = bc.draft_at(b)
    v1, g1 = bc.verify_at(b, k_new)
    v0, g0 = bc.verify_at(b, k0)
    ds = s_new - s0
    delta = dr * ds + v1 - v0
    c_new = c_b + delta
    if not c_new > 0:
        return math.nan, math.nan
    gv = (g1 - g0) / c_new
    gdr = gd * ds / c_new
    var = float(gv @ bc.verify_cov @ gv) + float(gdr @ bc.draft_cov @ gdr)
    var += (bc.verify_var * v1 * v1 + bc.draft_var * (dr * ds) ** 2) / c_new ** 2
    var += (bc.step_unc(b, k_new) ** 2 + bc.step_unc(b, k0) ** 2) / c_new ** 2
    var += (delta / c_new * (bk.cycle_ms.se_log or 0.0)) ** 2
    return c_new / c_b, math.sqrt(max(var, 0.0))


def predict_bucket(src: Evidence, bk: Bucket, model: CostModel, s_new: int, k_new: int,
                   confidence: float, bc: BatchCost | None = None) -> BatchPrediction:
    ratio_t, se_t = tau_ratio(src, s_new)
    if bc is not None:
        ratio_c, se_c = batch_cost_ratio(bc, bk, s_new, src.steps, k_new, src.k)
        df_c = bc.df
    elif not isinstance(model, CostModel):     # the derived-cycle model (whatif_derived)
        ratio_c, se_c = model.bucket_ratio(bk.cycle_ms.estimate, bk.cycle_ms.se_log or 0.0,
                                           bk.batch, s_new, src.steps, k_new, src.k)
        df_c = model.df
    else:
        # the draft's d is a mean over cycles, as the profiler's cycle is: the reference of c_b
        ratio_c, se_c = cost_ratio(model, bk, src.cycle.estimate, s_new, src.steps, k_new,
                                   src.k)
        df_c = model.df
    eff = bk.eff_tok_s
    se_a = eff.se_log
    where = f"{src.run} at running_req {bk.label}"
    if se_a is None or not math.isfinite(ratio_c):
        nan = stats.insufficient(math.nan, 0, confidence, where)
        return BatchPrediction(s_new, k_new, nan, nan, None)
    se = math.sqrt(2 * se_a ** 2 + se_t ** 2 + se_c ** 2)
    df_req = max(len(src.hist_x) - 1, 1)
    parts = [(math.sqrt(2) * se_a, eff.df or df_req), (se_t, df_req), (se_c, df_c)]
    den = sum(p ** 4 / f for p, f in parts if p > 0 and math.isfinite(f))
    df = se ** 4 / den if den > 0 else math.inf
    v = eff.estimate * ratio_t / ratio_c
    rate_e = stats.from_log_se(v, se, df, 0, confidence,
                               f"{where}: per-stream rate × accept-length ratio / cycle ratio")
    cyc = stats.from_log_se(bk.cycle_ms.estimate * ratio_c,
                            math.hypot(bk.cycle_ms.se_log or 0.0, se_c), df_c, 0,
                            confidence, f"{where}: cycle × c_b({s_new}) / c_b({src.steps})")
    sp = None
    if bk.step_ms:
        sp = stats.from_log_se(v * bk.step_ms / 1000.0, se, df, 0, confidence,
                               "per-stream rate × baseline step at this batch size")
    return BatchPrediction(s_new, k_new, cyc, rate_e, sp)


def by_batch(evs: list[Evidence], per_run: dict[str, list[Bucket]], model: CostModel,
             configs: list[tuple[int, int]], confidence: float,
             bc: BatchCost | None = None) -> tuple[BatchRow, ...]:
    """The anchor's buckets, each with a prediction for every (steps, draft tokens) in
    ``configs``; a measured run of that config gives its own rate in the same bucket."""
    src = anchor_of(evs)
    rows = []
    mine = per_run.get(src.run, [])
    for bk in mine:
        preds = []
        for s_new, k_new in configs:
            p = predict_bucket(src, bk, model, s_new, k_new, confidence, bc)
            meas = next((b.eff_tok_s for e in evs if e.steps == s_new and e.k == k_new
                         for b in per_run.get(e.run, []) if b.label == bk.label), None)
            lo, hi = bc.n_range if bc is not None else model.n_range \
                if not isinstance(model, CostModel) else (model.k_range[0] * model.batch,
                                                          model.k_range[1] * model.batch)
            n = bk.batch * k_new
            preds.append(BatchPrediction(p.steps, p.draft_tokens, p.cycle_ms, p.eff_tok_s,
                                         p.speedup, meas,
                                         not (lo / EDGE <= n <= hi * EDGE)))
        rows.append(BatchRow(bk.label, bk.share, bk.batch, bk.eff_tok_s, tuple(preds)))
    return tuple(rows)


def checks(evs: list[Evidence], per_run: dict[str, list[Bucket]], fit, confidence: float,
           cells: dict[str, list[Cell]] | None = None,
           unchecked: list | None = None) -> tuple[BatchCheck, ...]:
    """Every bucket of every run predicted from the other runs (their anchor's same bucket,
    their cost model ``fit(rest)`` and, with ``cells``, the per-batch one of their cells),
    where both runs measured it.  A run the others cannot carry a cost model for (without
    EAGLE3_PROF, the others hold one num_steps) is left unchecked (its label appended to
    ``unchecked``), not an error: the predictions stand without it."""
    out = []
    if len(evs) < 2:
        return ()
    for i, e in enumerate(evs):
        rest = evs[:i] + evs[i + 1:]
        src = anchor_of(rest)
        if src.topk != e.topk:
            continue
        try:
            model = fit(rest)
        except EaglelogError:
            if unchecked is not None:
                unchecked.append(e.run)
            continue
        bc = fit_batch_cost([c for r in rest for c in cells.get(r.run, [])]) if cells else None
        mine = {b.label: b for b in per_run.get(e.run, [])}
        for bk in per_run.get(src.run, []):
            m = mine.get(bk.label)
            if m is None or not m.eff_tok_s.sufficient:
                continue
            p = predict_bucket(src, bk, model, e.steps, e.k, confidence, bc)
            if not p.eff_tok_s.sufficient:
                continue
            inside = p.eff_tok_s.ci_low <= m.eff_tok_s.estimate <= p.eff_tok_s.ci_high
            out.append(BatchCheck(e.run, e.steps, bk.label, p.eff_tok_s, m.eff_tok_s,
                                  p.eff_tok_s.estimate / m.eff_tok_s.estimate - 1, inside))
    return tuple(out)


MIX_COVER = 0.95      # the anchor's buckets must hold this share of the checked run's
SAME_MIX_COVER = 0.7  # … of a run of the same mix (re-mixed only across a step in the cost)
SAME_MIX = 0.05      # mean batch sizes (request-step weighted) within 5 %: the same mix
#                       (at 1 %, re-mixing small buckets cost the batch-4 check 96 → 85 %)


def _mean_batch(bks) -> float:
    tot = sum(b.share for b in bks)
    return sum(b.share * b.batch for b in bks) / tot if tot > 0 else math.nan


def same_mix(a: Evidence, b: Evidence) -> bool:
    """Two runs' batch mixes are the same: request-step weighted mean batch sizes within
    SAME_MIX (or either without buckets)."""
    ma, mb = _mean_batch(a.buckets), _mean_batch(b.buckets)
    return not (math.isfinite(ma) and math.isfinite(mb) and ma > 0 and mb > 0) or \
        abs(math.log(ma / mb)) <= SAME_MIX


def at_mix(whole: Estimate, evs: list[Evidence], target: Evidence, model, bc: BatchCost | None,
           confidence: float) -> tuple[Estimate, bool]:
    """The whole-run prediction of ``target``'s config at **its own** batch mix, and whether
    it is comparable with what the target measured: the anchor's per-bucket predictions
    (tokens and cycle per request-step) combined with the target's request-step shares,
    R = 1000 Σ s_b τ_b / Σ s_b c_b, its standard error the time-weighted mean of the buckets'
    (at least the whole-run prediction's) — where the anchor's buckets with an interval hold
    MIX_COVER of the target's request-steps.  (``whole``, True) when the two mixes are the
    same (mean batch sizes within SAME_MIX: re-mixing bucket by bucket then adds the small
    buckets' noise and nothing else); (``whole``, False) when they differ and cannot be
    re-mixed."""
    src = anchor_of(evs)
    mine = {b.label: b for b in src.buckets}
    theirs = {b.label: b.share for b in target.buckets}
    if not whole.sufficient or not theirs:
        return whole, True
    same = same_mix(target, src)
    if same and (bc is None or bc.step is None):
        # the same mix: the whole-run prediction is its own (but where the cells show a step
        # in the verify's cost, the whole-run model's smooth growth does not follow it: the
        # buckets' predictions do, over the buckets that have them — the same mix's small
        # buckets of a batch in transit are the same small share of either run)
        return whole, True
    shares = [(b.share, mine[b.label]) for b in target.buckets
              if b.label in mine and mine[b.label].eff_tok_s.sufficient]
    if sum(s for s, _ in shares) < (SAME_MIX_COVER if same else MIX_COVER) * \
            sum(theirs.values()):
        return whole, same
    tok = cyc = se = 0.0
    for share, bk in shares:
        p = predict_bucket(src, bk, model, target.steps, target.k, confidence, bc)
        if not (p.eff_tok_s.sufficient and math.isfinite(p.cycle_ms.estimate)):
            return whole, False
        tok += share * p.eff_tok_s.estimate * p.cycle_ms.estimate / 1000.0
        cyc += share * p.cycle_ms.estimate
        se += share * p.cycle_ms.estimate * p.eff_tok_s.se_log
    v = 1000.0 * tok / cyc
    # the buckets' errors taken as fully correlated (one cost model): their time-weighted mean,
    # and never less than the whole-run prediction's
    return stats.from_log_se(v, max(whole.se_log, se / cyc), whole.df, 0, confidence,
                             f"{whole.source}, at {target.run}'s batch mix"), True
