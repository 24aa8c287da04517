"""The model whatif's predictions share (analysis/whatif.py and whatif_batch.py import it; it
imports neither): a measured run's Evidence, the accept length at another depth from its
requests' histograms (τ_h(S') and its ratio's standard error), and the cycle's cost model
c(S) = d·S + v0 + v1·K + v2·K² + rest.  docs/whatif.md."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..stats import Estimate


# ----------------------------------------------------------------------------- evidence

@dataclass(frozen=True)
class Evidence:
    """What one measured run says (one input and start-up)."""

    run: str
    steps: int
    batch: float                     # mean #running-req, request-step weighted
    tau: Estimate                    # decode-line accept length (break-even's)
    cycle: Estimate                  # EAGLE3_PROF cycle
    phases: dict                     # phase -> Estimate (ms per cycle)
    eff_tok_s: Estimate | None       # measured per-stream rate
    speedup: Estimate | None         # measured, with the baseline
    step_ms: float | None            # the baseline step at the run's batch mix
    hist_x: np.ndarray = field(repr=False, default=None)   # verifies per request
    hist_y: np.ndarray = field(repr=False, default=None)   # n × S: verifies reaching ≥ i
    topk: int = 1                    # speculative_eagle_topk (> 1: a tree)
    draft_tokens: int = 0            # tokens verified a request (N; a chain: steps + 1)
    cycle_b: tuple = (1.0, 1.0)      # mean batch and mean batch² over cycles (decode lines)
    buckets: tuple = ()              # whatif_batch.Bucket per #running-req (derived cycles)
    coverage: float = 1.0            # share of the request-steps the baseline covers
    engine: str = ""                 # sglang | vllm (the runs of one prediction are one engine)
    method: str = ""                 # speculative_algorithm, lower case ('' when not logged)

    @property
    def profiled(self) -> bool:
        return bool(self.phases)

    @property
    def k(self) -> int:
        return self.draft_tokens or self.steps + 1


def anchor_of(evs: list[Evidence]) -> Evidence:
    """The run predictions are anchored on: the deepest, then the one with most requests."""
    return max(evs, key=lambda e: (e.steps, len(e.hist_x)))


# ----------------------------------------------------------------------------- τ(S)

def _lin_se(f, U: np.ndarray) -> tuple[float, float]:
    """f(column means of U) and its linearised standard error, the rows of U independent
    units (requests): se² = Σ_r (∇f · (u_r − ū))² / (n (n − 1))."""
    n = len(U)
    m = U.mean(axis=0)
    v = f(m)
    g = np.zeros(len(m))
    for j in range(len(m)):
        h = 1e-6 * max(abs(m[j]), 1e-9)
        mp, mm = m.copy(), m.copy()
        mp[j] += h
        mm[j] -= h
        g[j] = (f(mp) - f(mm)) / (2 * h)
    z = (U - m) @ g
    return v, math.sqrt(float(z @ z) / (n * (n - 1))) if n > 1 else math.inf


def tau_hist(m: np.ndarray, s_new: int, declining: bool = False) -> float:
    """τ_h(S') from the means (verifies, verifies reaching ≥ 1 … ≥ S) of a run with S steps.
    Beyond S the conditional rate is the last one, q = P(≥S) / P(≥S−1), held constant; with
    ``declining`` it keeps falling by the last measured factor ρ = q_S / q_{S−1} (< 1) a
    position."""
    x, y = m[0], m[1:]
    S = len(y)
    if s_new <= S:
        return float((x + y[:s_new].sum()) / x)
    p_s = y[S - 1] / x
    prev = y[S - 2] if S >= 2 else x
    if not (p_s > 0 and prev > 0):           # nothing reached the last position: no tail
        return float((x + y.sum()) / x)
    q = min(max(y[S - 1] / prev, 0.0), 1.0)
    rho = 1.0
    if declining and S >= 2:
        before = y[S - 3] if S >= 3 else x
        q0 = y[S - 2] / before if before > 0 else 0.0
        rho = min(q / q0, 1.0) if q0 > 0 else 1.0
    tail, reach, qj = 0.0, p_s, q
    for _ in range(s_new - S):
        reach *= qj
        tail += reach
        qj *= rho
    return float((x + y.sum()) / x + tail)


def tau_ratio(ev: Evidence, s_new: int) -> tuple[float, float]:
    """τ_h(S') / τ_h(S) of the run and the standard error of its log (requests independent).
    Beyond the measured depth the tail lies between a constant last conditional rate and one
    that keeps falling as it last fell: the midpoint (on the log scale), with half the
    difference as a further standard error (an assumption, not a measurement)."""
    U = np.column_stack([ev.hist_x, ev.hist_y])
    S = ev.steps
    v, se = _lin_se(lambda m: math.log(tau_hist(m, s_new) / tau_hist(m, S)), U)
    if s_new > S:
        v2, se2 = _lin_se(lambda m: math.log(tau_hist(m, s_new, True) / tau_hist(m, S)), U)
        half = abs(v - v2) / 2
        v, se = (v + v2) / 2, math.sqrt(max(se, se2) ** 2 + half ** 2)
    return math.exp(v), se


# ----------------------------------------------------------------------------- cycle

@dataclass(frozen=True)
class CostModel:
    """c(S) = d·S + v0 + v1·K + v2·K² + rest (K the tokens verified a request: S + 1 for a
    chain, num_draft_tokens for a tree; v2 = 0 unless the runs show a curvature), with the
    covariance of (d, v0, v1, v2) and the verify fit's residual variance (ms²) as the model
    error of a new point."""

    d: float
    v0: float
    v1: float
    v2: float
    rest: float
    cov: np.ndarray                 # 4 × 4 of (d, v0, v1, v2)
    rest_var: float
    resid_var: float                # verify residual variance (ms²), 0 when not estimable
    slope_from: str                 # how the verify's growth with K is known
    k_range: tuple[int, int]        # verified tokens measured
    residuals: tuple                # (run, K, measured verify, fitted) per run
    df: float = math.inf            # degrees of freedom of the verify fit's error
    batch: float = 1.0              # the runs' mean batch over cycles, where v1 holds …
    batch2: float = 1.0             # … and their mean batch², where v2 does (a verify is a
    #                                 forward over B·K tokens: whatif_batch scales by them)

    def _at(self, s: int, k: float | None = None,
            mix: tuple[float, float] = (1.0, 1.0)) -> tuple[float, np.ndarray]:
        k = s + 1.0 if k is None else float(k)
        g = np.array([s, 1.0, k * mix[0], k * k * mix[1]])
        return float(g @ np.array([self.d, self.v0, self.v1, self.v2])) + self.rest, g

    def ratio(self, s: int, s0: int, k: float | None = None,
              k0: float | None = None, mix: tuple[float, float] | None = None
              ) -> tuple[float, float]:
        """c(s, k) / c(s0, k0) and the standard error of its log: the parameters' error through
        the difference of the two gradients, the model error of the new point (none at s0).
        k, k0: tokens verified (default: steps + 1, a chain); ``mix``: the run's mean batch
        and batch² over its cycles (Evidence.cycle_b; default: the pooled ones)."""
        k = s + 1 if k is None else k
        k0 = s0 + 1 if k0 is None else k0
        if s == s0 and k == k0:
            return 1.0, 0.0
        f = (1.0, 1.0) if mix is None else (mix[0] / self.batch, mix[1] / self.batch2)
        (c, g), (c0, g0) = self._at(s, k, f), self._at(s0, k0, f)
        grad = g / c - g0 / c0
        var = float(grad @ self.cov @ grad) + self.rest_var * (1 / c - 1 / c0) ** 2 + \
            self.resid_var / c ** 2
        return c / c0, math.sqrt(max(var, 0.0))


def _d(e):
    return e.to_dict() if e is not None else None
