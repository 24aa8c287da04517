"""What if the server ran another number of draft steps?  Predictions from measured runs
(docs/whatif.md).

The model, stated (every part is a choice the docs justify and the output names):

* **Accept length τ(S)** of a chain draft (topk 1) with S steps, from the per-request
  ``spec_accept_histogram`` of SGLang ``Finish:`` lines.  A verify that accepted a drafts
  under S steps commits min(a, S') + 1 tokens under S' ≤ S steps: the first S' draft tokens of a
  chain do not depend on how many follow, so τ(S') for S' ≤ S is *measured*, not modelled:
  τ_h(S') = Σ_r Σ_a h_r[a] (min(a, S') + 1) / Σ_r verifies_r.  Beyond the measured depth the
  tail is between geometric with the last conditional rate q_S = P(≥S) / P(≥S−1),
  τ_h(S') = τ_h(S) + P(≥S) Σ_{j=1}^{S'−S} q^j, and a conditional rate that keeps falling by
  its last factor q_S / q_{S−1}: the midpoint, half the difference as a standard error — an
  **extrapolation**, marked as such.  The
  prediction is the run's own decode-line accept length (what break-even uses) times
  τ_h(S') / τ_h(S).
* **Trees (topk > 1): an approximation, said so.**  SGLang drafts a beam of topk per step and
  verifies the N − 1 highest-scoring of its topk + (S − 1)·topk² candidates
  (``eagle_utils.py``, ``organize_draft_results``: ``torch.topk(score_list, num_draft_token −
  1)``; a child's score, the product along its path, is at most its parent's, so the selection
  is a tree).  The accepted path is a chain whose depths the histogram measures, and τ(S', N')
  is taken as the chain truncation above.  Which way that errs is known: fewer draft tokens
  (N' < N) verify a subset of the same candidates — τ at most this; fewer steps with the same
  N keep every selected node at depth ≤ S' (their competitors below are gone) and may add
  others — τ at least this.  The verify checks K = N tokens a request (not S + 1).
* **Cycle c(S)** from the EAGLE3_PROF phases of the runs: draft time proportional to the steps
  (d·S), verify linear in the K = S + 1 tokens verified (v0 + v1·K; + v2·K² when four or more
  K show a significant curvature), re-extend and other overhead constant.  With two or more
  distinct K the verify is fitted (residuals printed); with one K its slope is a prior: a
  verify of B·K tokens grows by VERIFY_SLOPE of its time per extra token (B the run's mean
  batch) ± VERIFY_SLOPE_SD, or by what ``verify_slope`` says.
* **Rate and speedup**: rate = 1000 τ / c, speedup = τ · b̄ / c with the run's baseline step.

Intervals are prediction intervals at the stated confidence on the log scale, for what a run
like the source run would measure: the sampling error of τ (requests as independent units,
linearised), of the measured phases, the model's own error (the verify line's residual
variance, or the prior's), and the measurement error of such a run (the source run's own
per-stream rate's).  With several runs every run
is also predicted from the others (leave-one-run-out), printed against what it measured.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import stats
from ..errors import EaglelogError, UsageProblem
from ..stats import Estimate
from .estimators import _tq
# the shared model, re-exported here (its home: whatif_model.py)
from .whatif_model import (CostModel, Evidence, _d, _lin_se, anchor_of,  # noqa: F401
                           tau_hist, tau_ratio)

VERIFY_SLOPE = 0.008     # prior: an extra verified token of the batch adds 0.8 % to the verify
VERIFY_SLOPE_SD = 0.008  # … ± 0.8 % (σ).  A memory-bound forward of n tokens costs about
#                          T(1)·(1 + n / n½): n½ of 50–500 tokens spans 0.2–2 % a token (the
#                          bundled sweep: 0.84 %, the simulator's hardware: 1.3 %); measured
#                          verify times at two K replace the prior (docs/whatif.md)
STEP_SLOPE_SD = 1.0      # a verified token costs what the baseline's decode token costs, ± 100 %
MAX_STEPS = 16
PHASES = ("Draft steps", "Target verify", "Draft re-extend", "Other overhead")


# ----------------------------------------------------------------------------- evidence

def tree_limit(topk: int, steps: int) -> int:
    """The most draft tokens SGLang can verify for a tree of ``steps`` and ``topk``: 1 + the
    candidates organize_draft_results picks from, topk + (steps − 1)·topk²."""
    return 1 + topk + (steps - 1) * topk * topk


def _histograms(req: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    from .acceptance import _pad, _pp
    if not len(req) or "accept_histogram" not in req.columns:
        return None
    rows = []
    for h in req["accept_histogram"].dropna():
        v = _pp(h)
        if v is not None and sum(v) > 0 and min(v) >= 0:
            rows.append(v)
    if not rows:
        return None
    H = _pad(rows)
    x = H.sum(axis=1)
    y = np.cumsum(H[:, ::-1], axis=1)[:, ::-1][:, 1:]     # y[:, i−1]: accepted ≥ i drafts
    return x, y


def _vllm_positions(sub, src: str) -> tuple[np.ndarray, np.ndarray, int] | None:
    """vLLM SpecDecoding windows' per-position acceptance as independent units: the windows
    in time order, summed into contiguous batches several integrated autocorrelation times
    long (stats.plan_batches, on the windows' accept lengths): (drafts per batch, batch ×
    k drafts reaching each position, k); None when the windows print no per-position list or
    are too few for 5 batches."""
    from .acceptance import _pad, vllm_rows
    spec = sub.tables.get("vllm_spec")
    if spec is None or not len(spec) or "per_position" not in spec.columns:
        return None
    keep = (spec["source"] == src).to_numpy(dtype=bool) & \
        (spec["variant"].astype(str) != "metrics").to_numpy(dtype=bool)
    rows, d, _, lines, *_ = vllm_rows(spec[keep])
    if len(rows) < stats.MIN_SERIES:
        return None
    tol = 0.0011                            # two printed units (three decimals)
    for pp, line in zip(rows, lines):
        if min(pp) < 0 or max(pp) > 1 + tol or any(b > a + tol for a, b in zip(pp, pp[1:])):
            raise EaglelogError(f"{src}:{line}: Per-position acceptance rate "
                                f"{', '.join(f'{v:g}' for v in pp)} is not a falling sequence "
                                "of shares (element i is P(accept ≥ i + 1)): whatif cannot "
                                "take positions from it")
    P = _pad(rows)
    dd = np.asarray(d, dtype=float)
    b = stats.plan_batches(len(dd), stats.autocorr_time(1.0 + P.sum(axis=1)))
    if b is None:
        return None
    lab = (np.arange(len(dd)) * b) // len(dd)
    y = P * dd[:, None]
    Y = np.column_stack([np.bincount(lab, weights=y[:, i], minlength=b)
                         for i in range(P.shape[1])])
    return np.bincount(lab, weights=dd, minlength=b), Y, P.shape[1]


def evidence(log, baseline=None, confidence: float = 0.95, warmup="auto") -> list[Evidence]:
    """The evidence of every run of ``log`` (a ParsedLog): SGLang runs (positions from the
    Finish lines' histograms) and vLLM runs (from the SpecDecoding windows' per-position
    acceptance); the cycle from the EAGLE3_PROF blocks when they exist, else the rate model's
    derived cycle (then the cost model is fitted on the runs' derived cycles)."""
    from .summary import summarize
    out = []
    for label, sub in log.units():
        src = sub.sources[0].name
        cfg = sub.config(src)
        steps, topk = cfg.get("speculative_num_steps"), cfg.get("speculative_eagle_topk") or 1
        engine = sub.sources[0].engine or ""
        vllm = "vllm" in engine
        if engine and "sglang" not in engine and not vllm:
            raise EaglelogError(f"{label}: a {engine} log: whatif reads SGLang and vLLM runs; "
                                "other engines are not a source of it yet (docs/whatif.md)")
        vpos = _vllm_positions(sub, src) if vllm else None
        if vllm and not steps and vpos is not None:
            steps = vpos[2]                  # k, from the per-position lists
        if not steps:
            raise EaglelogError(f"{label}: no speculative_num_steps in its server_args: whatif "
                                "needs the draft steps of each run" if not vllm else
                                f"{label}: no num_speculative_tokens (start-up speculative "
                                "config) and no per-position acceptance to read k from")
        ntok = int(steps) + 1
        if int(topk) != 1:
            nd = cfg.get("speculative_num_draft_tokens")
            if not nd or int(nd) < 2:
                raise EaglelogError(f"{label}: speculative_eagle_topk {topk} (a tree) without "
                                    "speculative_num_draft_tokens in its server_args: whatif "
                                    "needs the tokens each verify checks")
            ntok = int(nd)
        # the rates without the baseline (a baseline covering some batch sizes would restrict
        # them to those); the baseline gives only the step and the measured speedup
        s = summarize(sub, baseline=None, confidence=confidence, warmup=warmup)
        be = None
        if baseline is not None:
            from .breakeven import breakeven
            be = breakeven(sub, baseline, source=src, confidence=confidence, warmup=warmup)
        profiled = s.cycle_ms is not None and bool(s.phases) and not vllm and \
            s.phases_from == "no-sync blocks"
        cycle = s.cycle_ms if profiled else s.cycle_derived
        if cycle is None or not math.isfinite(cycle.estimate):
            n_dec = int((sub.decode["source"] == src).sum()) if len(sub.decode) else 0
            raise EaglelogError(f"{label}: neither EAGLE3_PROF blocks nor a cycle derived from "
                                f"its decode lines ({n_dec} decode window(s)): whatif needs a "
                                "cycle time to model" + (
                                    "; a configuration segment this short is often one "
                                    "malformed line (a per-position list of another length "
                                    "reads as another k)" if 0 < n_dec < stats.MIN_SERIES
                                    else ""))
        if s.accept_sglang is None:
            raise EaglelogError(f"{label}: no accept length in its decode lines")
        if vllm:
            if vpos is None:
                raise EaglelogError(f"{label}: no vLLM per-position acceptance in 30 windows "
                                    "or more ('Per-position acceptance rate', V1-c →): whatif "
                                    "needs the acceptance of each position")
            hist = vpos[:2]
        else:
            hist = _histograms(sub.requests)
        if hist is None:
            raise EaglelogError(f"{label}: no Finish lines with spec_accept_histogram "
                                "(SGLang --log-requests, v0.5.9 →): whatif needs the acceptance "
                                "of each position")
        if hist[1].shape[1] > int(steps):
            raise EaglelogError(f"{label}: its histograms hold {hist[1].shape[1]} positions "
                                f"but the run drafts {steps} steps")
        y = np.zeros((len(hist[0]), int(steps)))
        y[:, :hist[1].shape[1]] = hist[1]
        r = sub.decode["running_req"].to_numpy(dtype=float, na_value=np.nan)
        r = r[np.isfinite(r) & (r > 0)]
        batch = float((r * r).sum() / r.sum()) if len(r) else 1.0
        moments = (float(r.mean()), float((r * r).mean())) if len(r) else (1.0, 1.0)
        from .whatif_batch import buckets
        bks = tuple(buckets(sub, src, baseline, confidence, warmup))
        out.append(Evidence(label, int(steps), batch, s.accept_sglang, cycle,
                            {p.phase: p.ms_per_cycle for p in s.phases} if profiled else {},
                            s.eff_tok_s,
                            be.speedup if be is not None else None,
                            be.baseline_step_ms.estimate if be is not None else None,
                            hist[0].astype(float), y, int(topk), ntok, moments, bks,
                            be.coverage if be is not None else 1.0,
                            "vllm" if vllm else "sglang",
                            str(cfg.get("speculative_algorithm") or "").lower()))
    if not out:
        raise EaglelogError("no run to predict from")
    return out


# ----------------------------------------------------------------------------- cycle
# (Evidence, τ(S) and the CostModel itself: whatif_model.py)

def _verify_fit(K: np.ndarray, v: np.ndarray, se: np.ndarray, degree: int,
                mix: np.ndarray | None = None):
    """Least squares of the verify times on 1, K (, K²): (coefficients, their covariance,
    residual variance, its df, fitted values).  The residual variance is at least the phases'
    own measurement variance.  ``mix``: per run, (E[B], E[B²]) over its cycles relative to
    the pooled ones — a verify is a forward over B·K tokens, so a run whose cycles sit at
    larger batches has its K terms scaled by them (the coefficients hold at the pooled mix)."""
    f = np.ones((len(K), 2)) if mix is None else mix
    A = np.column_stack([np.ones(len(K)), K * f[:, 0], K * K * f[:, 1]][:degree + 1])
    coef, *_ = np.linalg.lstsq(A, v, rcond=None)
    fitted = A @ coef
    dof = len(K) - (degree + 1)
    res = v - fitted
    s2 = max(float(res @ res) / dof if dof > 0 else 0.0, float(np.mean(se ** 2)))
    return coef, s2 * np.linalg.inv(A.T @ A), s2, dof, fitted


def _token_slope(step_of, batch: float, k0: float) -> float | None:
    """ms per extra token of a forward, from the baseline's step per batch size: its secant
    from B to B·K0 tokens (a verify of K tokens for B requests is a forward of B·K tokens);
    None where the baseline does not cover both."""
    if step_of is None or k0 <= 1:
        return None
    lo, hi = np.asarray(step_of(np.array([batch, batch * k0])), dtype=float)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return None
    return float((hi - lo) / (batch * (k0 - 1)))


def fit_costs(evs: list[Evidence], verify_slope: float | None = None,
              step_of=None) -> CostModel:
    """The cost model of ``evs``; ``verify_slope``: the relative verify growth per extra
    verified token of the batch (0.01: 1 %), taken as known, instead of the prior;
    ``step_of``: the baseline's step (ms) per batch size — with one K measured, its growth per
    token gives the verify's (± STEP_SLOPE_SD) where it covers B … B·K.

    The verify: with 2–3 distinct K a line; with 4 or more a quadratic when its K² term is
    significant at 5 % (the simplest model the runs support; its residuals are printed); with
    one K the prior slope."""
    def ph(ev, name):
        e = ev.phases.get(name)
        if e is None:
            return 0.0, 0.0
        if e.basis == "short" and (e.n or 0) >= stats.LONG_SERIES_MIN:
            # a long block series too autocorrelated for batch means: its blocks move with the
            # run's batch levels, and their spread is not the error of the phase at the run's
            # own batch moments, which is what the model takes (taken as exact, as before)
            return e.estimate, 0.0
        return e.estimate, (e.se_log or 0.0) * e.estimate
    S = np.array([e.steps for e in evs], dtype=float)
    K = np.array([e.k for e in evs], dtype=float)
    dr = np.array([ph(e, PHASES[0]) for e in evs])
    vf = np.array([ph(e, PHASES[1]) for e in evs])
    rest = np.array([ph(e, PHASES[2])[0] + ph(e, PHASES[3])[0] for e in evs])
    rest_se = np.array([math.hypot(ph(e, PHASES[2])[1], ph(e, PHASES[3])[1]) for e in evs])
    # draft time per step: Σ draft / Σ steps (proportional to the steps)
    d = float(dr[:, 0].sum() / S.sum())
    d_var = float((dr[:, 1] ** 2).sum()) / S.sum() ** 2
    if len(evs) > 1:
        d_var += float(np.var(dr[:, 0] / S, ddof=1)) / len(evs)
    r_mean = float(rest.mean())
    r_var = float((rest_se ** 2).sum()) / len(evs) ** 2 + \
        (float(np.var(rest, ddof=1)) if len(evs) > 1 else 0.0)
    cov = np.zeros((4, 4))
    cov[0, 0] = d_var
    ks = np.unique(K)
    mom = np.array([e.cycle_b for e in evs], dtype=float)
    pooled = mom.mean(axis=0)
    mix = mom / pooled
    if len(ks) >= 2:
        fit = _verify_fit(K, vf[:, 0], vf[:, 1], 1, mix)
        degree = 1
        if len(ks) >= 4:
            q = _verify_fit(K, vf[:, 0], vf[:, 1], 2, mix)
            t = abs(q[0][2]) / math.sqrt(q[1][2, 2]) if q[1][2, 2] > 0 else math.inf
            if q[3] > 0 and t > _tq(q[3], 0.95):
                fit, degree = q, 2
        coef, c_cov, s2, dof, fitted = fit
        v = list(coef) + [0.0] * (3 - len(coef))
        cov[1:2 + degree, 1:2 + degree] = c_cov
        resid_var = s2 if dof > 0 else 0.0
        how = (f"fit ({len(evs)} runs, K {int(ks.min())}–{int(ks.max())}, "
               f"{'quadratic' if degree == 2 else 'linear'} in K)")
        residuals = [(e.run, int(k), float(m), float(f))
                     for e, k, m, f in zip(evs, K, vf[:, 0], fitted)]
        df = float(dof) if dof > 0 and resid_var > 0 else math.inf
    else:
        # one K: the prior (or the stated slope) — each extra verified token of the batch
        # costs VERIFY_SLOPE of the verify, ± VERIFY_SLOPE_SD
        vv = float(vf[:, 0].mean())
        batch = float(np.mean([e.batch for e in evs]))
        rel = VERIFY_SLOPE if verify_slope is None else verify_slope
        k0 = float(ks[0])
        tok = _token_slope(step_of, batch, k0) if verify_slope is None else None
        v1 = vv * batch * rel if tok is None else batch * tok
        v = [vv - v1 * k0, v1, 0.0]
        se_v = float(np.sqrt(np.mean(vf[:, 1] ** 2)))
        # var(v0 + v1 K) = se_v² + (K − k0)² σ1²: v0 = v − v1 k0 carries the slope's error
        s1 = 0.0 if verify_slope is not None else (STEP_SLOPE_SD * v1) ** 2 if tok is not None \
            else (vv * batch * VERIFY_SLOPE_SD) ** 2
        cov[1, 1] = se_v ** 2 + k0 * k0 * s1
        cov[2, 2] = s1
        cov[1, 2] = cov[2, 1] = -k0 * s1
        resid_var, df = 0.0, math.inf
        how = (f"one K ({int(k0)}) measured; verify +{v1:.3g} ms per extra K: the baseline's "
               f"step grows {tok:.3g} ms a token from batch {batch:.3g} to {batch * k0:.3g} "
               f"(± {100 * STEP_SLOPE_SD:.0f} %)" if tok is not None else
               f"one K ({int(k0)}) measured; verify +{100 * rel:.2g} % per extra token of the "
               f"batch (mean batch {batch:.3g}) " +
               (f"± {100 * VERIFY_SLOPE_SD:.2g} %: the prior" if verify_slope is None
                else "(--verify-slope)"))
        residuals = [(e.run, int(k), float(m), float(m)) for e, k, m in zip(evs, K, vf[:, 0])]
    return CostModel(d, float(v[0]), float(v[1]), float(v[2]), r_mean, cov, r_var, resid_var,
                     how, (int(K.min()), int(K.max())), tuple(residuals), df,
                     float(pooled[0]), float(pooled[1]))


def cost_model(evs: list[Evidence], verify_slope: float | None = None, step_of=None):
    """The cost model of ``evs``: from the EAGLE3_PROF phases when every run has them
    (fit_costs), else fitted on the runs' derived cycles (whatif_derived) — which needs runs
    at two or more num_steps."""
    if all(e.profiled for e in evs):
        return fit_costs(evs, verify_slope, step_of)
    from .whatif_derived import fit_derived
    trees = [e.run for e in evs if e.topk > 1 and not e.profiled]
    if trees:
        raise EaglelogError(f"{', '.join(trees)}: a tree draft (topk > 1) without EAGLE3_PROF "
                            "phases: whatif models a tree's verify from the profiler's phases "
                            "only (docs/whatif.md)")
    m = fit_derived(evs)
    if m is None:
        bare = [e.run for e in evs if not e.profiled]
        raise EaglelogError(f"{', '.join(bare)}: no EAGLE3_PROF phases, and the runs hold one "
                            "num_steps (or too few batch-size buckets with a cycle): how the "
                            "cycle grows with the steps is not measured — give runs at two or "
                            "more num_steps, or EAGLE3_PROF blocks (docs/whatif.md)")
    return m


# ----------------------------------------------------------------------------- predictions

@dataclass(frozen=True)
class Prediction:
    steps: int
    accept_len: Estimate
    cycle_ms: Estimate
    eff_tok_s: Estimate
    speedup: Estimate | None
    basis: str                       # 'measured positions', 'extrapolated …'
    measured_eff_tok_s: Estimate | None = None   # a run that ran this S
    draft_tokens: int | None = None  # a tree's num_draft_tokens (None: a chain, S + 1)
    topk: int = 1
    other_mix: bool = False          # the measuring run's batch mix is not the anchor's

    def to_dict(self) -> dict:
        d = _d
        return {"steps": self.steps, "accept_len": d(self.accept_len), "measured_other_mix":
                self.other_mix,
                "cycle_ms": d(self.cycle_ms), "eff_tok_s": d(self.eff_tok_s),
                "speedup": d(self.speedup), "basis": self.basis,
                "measured_eff_tok_s": d(self.measured_eff_tok_s), "topk": self.topk,
                "draft_tokens": self.draft_tokens if self.draft_tokens else self.steps + 1}


def loo_miss_note(checks, evs, confidence: float, by_batch: bool = False) -> str | None:
    """A note when more held-out runs fall outside their prediction intervals than the
    intervals' level explains: k of n outside, where P(≥ k outside | n, 1 − confidence) < 5 %
    (binomial, each check independent).  Then the runs differ in something the model does not
    hold, and its intervals are too narrow for them."""
    used = [c for c in checks if c.comparable]
    n, k = len(used), sum(not c.inside for c in used)
    if not k or stats.binom_tail(k, n, 1 - confidence) >= 0.05:
        return None
    errs = sorted(c.error for c in used)
    batches = sorted({round(e.batch, 1) for e in evs if e.run in {c.run for c in used}})
    mix = f"; their mean batch sizes: {', '.join(f'{b:g}' for b in batches)}" \
        if len(batches) > 1 and batches[-1] > 1.25 * batches[0] else ""
    if not by_batch:
        mix += " (--by batch predicts and checks each batch size on its own)"
    return (f"leave-one-run-out: {k} of {n} runs outside their {confidence:.0%} prediction "
            f"intervals (errors {errs[0]:+.1%} … {errs[-1]:+.1%}), more than the level "
            f"explains: the runs differ in more than the model holds, and the intervals above "
            f"are too narrow for runs like these{mix}")


def batch_miss_note(checks, confidence: float) -> str | None:
    """loo_miss_note's test on the by-batch checks (whatif_batch.BatchCheck): k of n buckets
    outside their prediction intervals, where P(≥ k | n, 1 − confidence) < 5 %."""
    n, k = len(checks), sum(not c.inside for c in checks)
    if not k or stats.binom_tail(k, n, 1 - confidence) >= 0.05:
        return None
    out = sorted((c for c in checks if not c.inside), key=lambda c: c.error)
    where = ", ".join(f"{c.run.split('/')[-1]} at running_req {c.batch} {c.error:+.1%}"
                      for c in out[:4]) + (", …" if len(out) > 4 else "")
    return (f"leave-one-run-out by batch size: {k} of {n} buckets outside their "
            f"{confidence:.0%} prediction intervals ({where}), more than the level explains: "
            "the cost changes with the batch in a way the model does not hold (a step, a "
            "kernel switch), and the by-batch intervals above are too narrow for such buckets")


def predict(evs: list[Evidence], s_new: int, confidence: float,
            model: CostModel | None = None, verify_slope: float | None = None,
            step_of=None, draft_tokens: int | None = None) -> Prediction:
    """The prediction for S' draft steps from ``evs``, anchored on the deepest run: its
    measured per-stream rate × τ_h(S') / τ_h(S) × c(S) / c(S') — the positions and the cost
    model give ratios, the anchor the level (its rate as break-even measures it).  A tree
    anchor (topk > 1) predicts trees of its topk with ``draft_tokens`` (default: its own)
    verified tokens, as the approximation the module docstring states."""
    src = anchor_of(evs)
    model = model or cost_model(evs, verify_slope, step_of)
    tree = src.topk > 1
    if not tree and draft_tokens is not None and draft_tokens != s_new + 1:
        raise UsageProblem(f"--draft-tokens {draft_tokens}: {src.run} drafts a chain (topk 1), "
                           "which verifies num_steps + 1 tokens; --draft-tokens sets a tree's")
    k_new = (draft_tokens or src.k) if tree else s_new + 1
    if tree and k_new > tree_limit(src.topk, s_new):
        raise UsageProblem(f"--draft-tokens {k_new}: a tree of {s_new} steps and topk "
                           f"{src.topk} has at most {tree_limit(src.topk, s_new)} (SGLang picks "
                           "num_draft_tokens − 1 of topk + (steps − 1)·topk² candidates)")
    if src.eff_tok_s is None or not math.isfinite(src.eff_tok_s.estimate):
        raise EaglelogError(f"{src.run}: no per-stream rate measured to anchor the predictions")
    ratio_t, se_t = tau_ratio(src, s_new)
    if isinstance(model, CostModel):
        ratio_c, se_c = model.ratio(s_new, src.steps, k_new, src.k, src.cycle_b)
    else:                                    # the derived-cycle model, at the anchor's mix
        ratio_c, se_c = model.mix_ratio(src.buckets, s_new, src.steps, k_new, src.k)
    if not math.isfinite(ratio_c):
        raise UsageProblem(f"{s_new} steps: the cost model gives no positive cycle there "
                           f"({model.slope_from})")
    eff_a = src.eff_tok_s
    se_a = eff_a.se_log or 0.0
    se_tau_a = src.tau.se_log or 0.0
    tau = src.tau.estimate * ratio_t
    se_tau = math.hypot(se_tau_a, se_t)
    c_a = 1000.0 * src.tau.estimate / eff_a.estimate      # the cycle the anchor's rate uses
    se_ca = math.sqrt(max(se_a ** 2 - se_tau_a ** 2, 0.0))
    basis = "measured positions" if s_new <= src.steps else \
        f"extrapolated: positions {src.steps + 1}–{s_new} from the last conditional rates"
    if tree and not (s_new == src.steps and k_new == src.k):
        n0 = src.k
        how = ("τ at least this" if s_new <= src.steps and k_new >= n0 else
               "τ at most this" if s_new == src.steps and k_new < n0 else
               "the direction of its error unknown")
        basis += (f"; tree approximation (topk {src.topk}, draft tokens {n0} → {k_new}: the "
                  f"accepted path truncated as a chain, {how})")
    k = k_new
    if k < model.k_range[0] or k > model.k_range[1]:
        basis += f"; verify beyond the measured K {model.k_range[0]}–{model.k_range[1]}"
    df = max(len(src.hist_x) - 1, 1)
    acc = stats.from_log_se(tau, se_tau, df, 0, confidence,
                            f"{src.run}: accept length × τ_h({s_new}) / τ_h({src.steps})")
    cyc = stats.from_log_se(c_a * ratio_c, math.hypot(se_ca, se_c), model.df, 0, confidence,
                            f"{src.run}: cycle × c({s_new}) / c({src.steps}), cost model: "
                            + model.slope_from)
    # a prediction interval for what a run would measure: the anchor's own error, the ratios',
    # and the measurement error of a new run like the anchor (its rate's)
    se_rate = math.sqrt(2 * se_a ** 2 + se_t ** 2 + se_c ** 2)
    # Welch–Satterthwaite: the cost model's few residual df against the requests' many
    parts = [(math.sqrt(2) * se_a, eff_a.df or df), (se_t, df), (se_c, model.df)]
    den = sum(p ** 4 / f for p, f in parts if p > 0 and math.isfinite(f))
    df_rate = se_rate ** 4 / den if den > 0 else math.inf
    rate_v = eff_a.estimate * ratio_t / ratio_c
    rate = stats.from_log_se(rate_v, se_rate, df_rate, 0, confidence,
                             f"{src.run}: per-stream rate × accept-length ratio / cycle ratio")
    sp = None
    if src.step_ms:
        sp = stats.from_log_se(rate_v * src.step_ms / 1000.0, se_rate, df_rate, 0, confidence,
                               "per-stream rate × baseline step")
    run = next((e for e in evs if e.steps == s_new and e.k == k_new), None)
    meas = run.eff_tok_s if run is not None else None
    from .whatif_batch import same_mix
    return Prediction(s_new, acc, cyc, rate, sp, basis, meas, k_new if tree else None,
                      src.topk, run is not None and not same_mix(run, src))


@dataclass(frozen=True)
class Check:
    """One run predicted from the others (leave-one-run-out)."""

    run: str
    steps: int
    predicted: Estimate
    measured: Estimate
    error: float                     # predicted / measured − 1
    inside: bool                     # the measured value inside the prediction interval
    comparable: bool = True          # at the checked run's batch mix (or the same mix)

    def to_dict(self) -> dict:
        return {"run": self.run, "steps": self.steps, "predicted": _d(self.predicted),
                "measured": _d(self.measured), "error": self.error, "inside": self.inside,
                "comparable": self.comparable}


@dataclass(frozen=True)
class WhatifResult:
    confidence: float
    runs: tuple[str, ...]
    model: CostModel
    predictions: tuple[Prediction, ...]
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = ()
    by_batch: tuple = ()             # whatif_batch.BatchRow per bucket of the anchor (--by batch)
    batch_checks: tuple = ()         # whatif_batch.BatchCheck: leave-one-run-out per bucket
    batch_model: str | None = None   # the per-batch cost model, stated
    batch_residuals: tuple = ()      # its cells: (run, batch, K, measured verify, fitted)

    def to_dict(self) -> dict:
        m = self.model
        if isinstance(m, CostModel):
            model = {"draft_ms_per_step": m.d, "verify_ms_at_0": m.v0,
                     "verify_ms_per_token": m.v1, "verify_ms_per_token2": m.v2,
                     "other_ms": m.rest,
                     "verify_slope_from": m.slope_from, "measured_k": list(m.k_range),
                     "residuals": [{"run": r, "k": k, "verify_ms": v, "fitted_ms": f}
                                   for r, k, v, f in m.residuals]}
        else:
            from .whatif_derived import COLUMNS
            model = {"kind": "derived cycles", "cycle_ms_coefficients":
                     dict(zip(COLUMNS, (float(c) for c in m.coef))),
                     "model": m.slope_from, "measured_k": list(m.k_range),
                     "residuals": [{"run": r, "batch": b, "steps": st, "cycle_ms": v,
                                    "fitted_ms": f} for r, b, st, v, f in m.residuals]}
        return {"command": "whatif", "confidence": self.confidence, "runs": list(self.runs),
                "model": model,
                "predictions": [p.to_dict() for p in self.predictions],
                "leave_one_out": [c.to_dict() for c in self.checks], "notes": list(self.notes),
                **({"by_batch_model": self.batch_model,
                    "by_batch_residuals": [{"run": r, "batch": b, "k": k, "verify_ms": v,
                                            "fitted_ms": f}
                                           for r, b, k, v, f in self.batch_residuals],
                    "by_batch": [r.to_dict() for r in self.by_batch],
                    "by_batch_leave_one_out": [c.to_dict() for c in self.batch_checks]}
                   if self.by_batch else {})}

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for p in self.predictions:
            row = {"steps": p.steps, "topk": p.topk,
                   "draft_tokens": p.draft_tokens or p.steps + 1, "basis": p.basis}
            for k in ("accept_len", "cycle_ms", "eff_tok_s", "speedup"):
                e = getattr(p, k)
                row.update({k: e.estimate if e else None, f"{k}_pi_low": e.ci_low if e else None,
                            f"{k}_pi_high": e.ci_high if e else None})
            row["measured_eff_tok_s"] = p.measured_eff_tok_s.estimate \
                if p.measured_eff_tok_s else None
            rows.append(row)
        if self.by_batch:
            # (a numeric running_req: <NA> on the whole run's rows, scope says which; a bucket
            # of several sizes, '4–7', gives its lowest and running_req_max its highest)
            from .rate import bucket_range
            ranges = any(not r.batch.isdigit() for r in self.by_batch)
            rows = [{"scope": "all", "running_req": None,
                     **({"running_req_max": None} if ranges else {}), **row} for row in rows]
        for r in self.by_batch:         # --by batch: one row per bucket and candidate
            lo, hi = bucket_range(r.batch)
            for p in r.predictions:
                row = {"scope": "bucket", "running_req": lo,
                       **({"running_req_max": hi} if ranges else {}),
                       "share": r.share, "mean_batch": r.mean_batch,
                       "steps": p.steps, "draft_tokens": p.draft_tokens, "basis": "by batch"}
                for k in ("cycle_ms", "eff_tok_s", "speedup"):
                    e = getattr(p, k)
                    row.update({k: e.estimate if e else None,
                                f"{k}_pi_low": e.ci_low if e else None,
                                f"{k}_pi_high": e.ci_high if e else None})
                row["measured_eff_tok_s"] = p.measured_eff_tok_s.estimate \
                    if p.measured_eff_tok_s else None
                rows.append(row)
        frame = pd.DataFrame(rows)
        for col in ("running_req", "running_req_max"):
            if col in frame.columns:
                frame[col] = frame[col].astype("Int64")
        return frame


def parse_steps(text: str, what: str = "--steps", lo_ok: int = 1,
                hi_ok: int = MAX_STEPS) -> list[int]:
    """'1..8', '1,2,3,7' or '3' → sorted distinct draft-step counts."""
    out: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        try:
            if ".." in part:
                a, b = part.split("..", 1)
                lo, hi = int(a), int(b)
                if lo > hi:
                    raise ValueError
                out.update(range(lo, hi + 1))
            else:
                out.add(int(part))
        except ValueError:
            raise UsageProblem(f"{what} {text!r}: give counts like 1..8 or 1,2,3,7") from None
    if not out or min(out) < lo_ok or max(out) > hi_ok:
        raise UsageProblem(f"{what} {text!r}: from {lo_ok} to {hi_ok}" if what != "--steps"
                           else f"--steps {text!r}: draft steps from 1 to {MAX_STEPS}")
    return sorted(out)


def parse_tokens(text) -> list[int] | None:
    """'8,16,32' or '8..12' → sorted distinct num_draft_tokens (None: none given)."""
    if text is None or text == "" or text == []:
        return None
    if not isinstance(text, str):
        vals = sorted({int(v) for v in text})
    else:
        try:
            vals = parse_steps(text, "--draft-tokens", 2, 1024)
        except UsageProblem:
            raise UsageProblem(f"--draft-tokens {text!r}: give counts like 8,16,32 or 8..12 "
                               "(2 to 1024)") from None
    if min(vals) < 2:
        raise UsageProblem(f"--draft-tokens {text!r}: at least 2 (the bonus and one draft)")
    return vals


def whatif(logs, *, steps="1..8", baseline=None, baseline_toks=None, baseline_log=None,
           confidence: float = 0.95, verify_slope: float | None = None, skip_warmup="auto",
           engine: str = "auto", draft_tokens=None, by_batch: bool = False) -> WhatifResult:
    """Predicted accept length, cycle, per-stream rate and speedup for other numbers of draft
    steps, from measured runs (each with EAGLE3_PROF blocks and Finish lines); with several
    runs, each is also predicted from the others.  ``by_batch``: also per #running-req
    bucket of the anchor run (analysis/whatif_batch.py).

        >>> w = eaglelog.whatif("sample_logs/sweep/steps5.log", steps="1..7", baseline_toks=90)
        >>> [(p.steps, round(p.eff_tok_s.estimate, 1)) for p in w.predictions][:2]
    """
    from ..baseline import Baseline
    from ..api import load
    from ..baseline import make_baseline
    if not 0 < confidence < 1:
        raise UsageProblem(f"confidence {confidence!r}: give a level between 0 and 1, e.g. 0.95")
    if baseline is not None and not isinstance(baseline, Baseline):
        raise UsageProblem("baseline= takes an eaglelog Baseline; give a log as baseline_log= "
                           "or a rate as baseline_toks=")
    base = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                     required=False)
    log = load(logs, engine=engine)
    for si in log.sources:                  # the loader labels a repeated input 'NAME (2)'
        m = re.fullmatch(r"(.*) \((\d+)\)", si.name)
        if m and any(o.name == m.group(1) for o in log.sources):
            raise UsageProblem(f"{m.group(1)}: given twice: a run predicted from its own copy "
                               "checks nothing")
    evs = evidence(log, base, confidence, skip_warmup)
    engines_ = sorted({e.engine for e in evs})
    if len(engines_) > 1:
        raise EaglelogError("the runs come from different engines (" + ", ".join(engines_) +
                            "): one cost model cannot hold both servers; predict each engine's "
                            "runs on their own")
    methods = sorted({e.method for e in evs if e.method})
    if len(methods) > 1:
        raise EaglelogError("the runs draft with different methods (" + ", ".join(methods) +
                            "): their acceptance by position and their cycles are not one "
                            "model's; predict each method's runs on their own")
    if isinstance(steps, int):
        steps = [steps]
    wanted = parse_steps(steps) if isinstance(steps, str) else sorted(set(int(s) for s in steps))
    if not wanted or min(wanted) < 1 or max(wanted) > MAX_STEPS:
        raise UsageProblem(f"steps {steps!r}: draft steps from 1 to {MAX_STEPS}")
    if isinstance(draft_tokens, int):
        draft_tokens = [draft_tokens]
    notes = []
    bs = [e.batch for e in evs]
    if max(bs) > 1.25 * min(bs):
        notes.append(f"the runs' mean batch sizes differ ({min(bs):.3g}–{max(bs):.3g}): the "
                     "whole-run predictions are for the anchor's batch mix, and a run with "
                     "another mix measures another rate" + ("" if by_batch else
                                                            " (--by batch predicts per batch "
                                                            "size)"))
    low = [e for e in evs if e.coverage < 0.8]
    if base is not None and low:
        notes.append("the baseline covers " + ", ".join(
            f"{100 * e.coverage:.0f} % of {e.run}'s request-steps" for e in low) +
            ": the speedups hold for the batch sizes it covers only (the rates for all)")
    step_of = None
    if base is not None and (base.log is not None or base.per_batch):
        from .breakeven import baseline_side
        step_of = baseline_side(base, confidence, []).step_of
    model = cost_model(evs, verify_slope, step_of)
    tokens = parse_tokens(draft_tokens)
    anchor = anchor_of(evs)
    preds_l, over = [], []
    for s_ in wanted:
        for n_ in (tokens or [None]):
            if anchor.topk > 1 and (n_ or anchor.k) > tree_limit(anchor.topk, s_):
                over.append((s_, n_ or anchor.k))
                continue
            preds_l.append(predict(evs, s_, confidence, model, draft_tokens=n_))
    if not preds_l:
        raise UsageProblem(f"no candidate is a tree SGLang can build: with topk {anchor.topk}, "
                           f"{over[0][0]} steps verify at most "
                           f"{tree_limit(anchor.topk, over[0][0])} draft tokens")
    preds = tuple(preds_l)
    if over:
        notes.append("left out, more draft tokens than the tree has candidates (SGLang "
                     "organize_draft_results picks num_draft_tokens − 1 of topk + (steps − 1)"
                     "·topk²): " + ", ".join(f"{a} steps × {b}" for a, b in over))
    if anchor.topk > 1:
        notes.append(f"{anchor.run} drafts a tree (topk {anchor.topk}, {anchor.k} draft "
                     "tokens): its predictions are an approximation — each verify's accepted "
                     "path is taken as a chain and truncated; fewer draft tokens accept at most, "
                     "fewer steps with as many draft tokens at least, what it predicts "
                     "(docs/whatif.md)")
    if len({e.topk for e in evs}) > 1:
        notes.append("the runs draft with different topk (" + ", ".join(
            sorted({str(e.topk) for e in evs})) + "): the cost model pools them by the tokens "
            f"each verify checks; the predictions are for topk {anchor.topk}")
    from . import whatif_batch as wb
    cells = {}
    for label, sub in log.units():
        e = next(x for x in evs if x.run == label)
        cells[label] = wb.cells_of(sub, sub.sources[0].name, label, e.steps, e.k) \
            if e.profiled else []
    checks, unchecked = [], []
    if len(evs) >= 2:
        for i, e in enumerate(evs):
            rest = evs[:i] + evs[i + 1:]
            if e.eff_tok_s is None:
                continue
            if anchor_of(rest).topk != e.topk:
                continue                  # a chain does not predict a tree, nor the reverse
            try:
                p = predict(rest, e.steps, confidence, verify_slope=verify_slope,
                            step_of=step_of, draft_tokens=e.k if e.topk > 1 else None)
                # at the checked run's own batch mix: another mix measures another rate
                bc = wb.fit_batch_cost([c for r in rest for c in cells[r.run]])
                pred, same = wb.at_mix(p.eff_tok_s, rest, e,
                                       cost_model(rest, verify_slope, step_of), bc, confidence)
            except UsageProblem:
                continue                  # its config is not one the others' anchor can build
            except EaglelogError:
                unchecked.append(e.run)   # the others alone do not carry the cost model
                continue
            m = e.eff_tok_s
            inside = pred.ci_low is not None and pred.ci_low <= m.estimate <= pred.ci_high
            checks.append(Check(e.run, e.steps, pred, m, pred.estimate / m.estimate - 1,
                                inside, same))
        if unchecked:
            notes.append("leave-one-run-out: " + ", ".join(unchecked) + " not predicted from the "
                         "others: without it they hold one num_steps, which does not measure "
                         "how the cycle grows with the steps")
        miss = loo_miss_note(checks, evs, confidence, by_batch)
        if miss:
            notes.append(miss)
        if any(not c.comparable for c in checks):
            notes.append("leave-one-run-out: a run whose batch mix differs from its predictor's, "
                         "where the predictor's buckets do not cover it, is a different "
                         "quantity (marked 'other mix', not counted); --by batch compares "
                         "them bucket by bucket")
    if model.slope_from.startswith("one K") and "the prior" in model.slope_from and \
            max(e.batch for e in evs) > 2:
        notes.append(f"one num_steps measured at a mean batch of {max(bs):.3g}: how the verify "
                     "grows with K is the prior here, and at batch sizes above 1 the prior is "
                     "weak (docs/whatif.md); a second run at another num_steps measures it, "
                     "or a baseline per batch size gives its growth per token")
    if any(p.basis.startswith("extrapolated") for p in preds):
        notes.append("positions beyond the deepest run are extrapolated: between a constant "
                     "last conditional acceptance rate and one that keeps falling as it last "
                     "fell (the midpoint; half the difference is in the interval) — an "
                     "assumption")
    rows, bchecks, batch_model, batch_res = (), (), None, ()
    if by_batch:
        per_run = {e.run: list(e.buckets) for e in evs}
        bc = wb.fit_batch_cost([c for cs in cells.values() for c in cs])
        configs = [(p.steps, p.draft_tokens or p.steps + 1) for p in preds]
        rows = wb.by_batch(evs, per_run, model, configs, confidence, bc)
        skipped: list[str] = []
        bchecks = wb.checks(evs, per_run, lambda rest: cost_model(rest, verify_slope, step_of),
                            confidence, cells, skipped)
        if skipped and not unchecked:
            notes.append("leave-one-run-out by batch size: " + ", ".join(skipped) + " not "
                         "predicted from the others: without it they do not carry a cost model "
                         "(one num_steps, or too few buckets with a cycle)")
        miss = batch_miss_note(bchecks, confidence)
        if miss:
            notes.append(miss)
        batch_res = bc.residuals if bc is not None else ()
        batch_model = bc.text if bc is not None else model.slope_from \
            if not isinstance(model, CostModel) else (
            "the whole-run cost model, its growth per verified token scaled by batch / E[B] "
            "(the profiler blocks do not span enough batch sizes to fit one per batch size)")
        if not rows:
            notes.append(f"{anchor.run}: no batch-size bucket with a per-stream rate: no "
                         "predictions by batch size")
    return WhatifResult(confidence, tuple(e.run for e in evs), model, preds, tuple(checks),
                        tuple(notes), rows, bchecks, batch_model, batch_res)
