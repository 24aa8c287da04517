"""The flags of ``eaglelog requests`` (docs/requests.md §3 Outliers): each run's lowest and
highest accept lengths, the repetition-loop suspects and the possibly garbled outputs.  A
request's acceptance is a robust z-score against the run's requests of a similar length
(``robust_z``, on the logit scale of a chain's per-position acceptance: ``chain_logit``), judged
against limits that keep a flag on a run without the fault to FLAG_ALPHA (``z_limit``).
requests.py calls ``_outliers`` for every run and re-exports these names."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .requests_table import _f, _int, _str

PEER_LEAST = 30         # requests a τ_r is judged against (robust_z) …
PEER_GROUPS = 20        # … in at most this many groups of lengths
FLAG_ALPHA = 0.05       # a run without loops or garbled output flags a request with at most
                        # this probability (per kind of flag)
TAIL_DF = 10            # degrees of freedom of the tail the flags' limits assume (z_limit)
CHAIN_MAX_K = 64        # chain_logit's drafts: a k beyond any engine's is no chain to fit
LOOP_MIN_TOKENS = 512   # a repetition-loop suspect's output is this long (and 2 × the median)
LOOP_SHARE = 0.98       # … and it accepted this share of its drafts, or far more than its
                        # peers (robust_z): a chain's drafts each accepted with p ≈ 0.995, which
                        # no clean simulated request came near (at most 90 %, p ≈ 0.94)


@dataclass(frozen=True)
class Outlier:
    kind: str              # 'lowest', 'highest', 'loop suspect'
    source: str
    line_no: int
    id: str | None
    tau: float
    output_tokens: int | None
    steps: int | None
    finish_reason: str | None
    group: str
    why: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "source": self.source, "line_no": self.line_no,
                "id": self.id, "accept_len": _f(self.tau), "output_tokens": self.output_tokens,
                "steps": self.steps, "finish_reason": self.finish_reason, "group": self.group,
                "why": self.why}



def robust_z(tau: np.ndarray, steps: np.ndarray, drafts: float | None = None) -> np.ndarray:
    """Each request's acceptance as a robust z-score against the run's requests of a similar
    number of verify steps: x_r's distance from the median of its peers (the run's requests in
    order of verify steps, cut into groups of at least PEER_LEAST), over the spread a request of
    its own length has, σ²(V) = a + c / V — a between requests, c / V the noise of a mean over
    V verifies — fitted (non-negative least squares) to the groups' robust variances (1.4826 ×
    MAD)².  A short request's acceptance is a mean over few verifies (one that accepted nothing
    in 3 verifies happens to 2 % of them); within a group of lengths, one at the group's short
    end is noisier than the group's spread says (on clean simulated runs such requests reached
    z 4.5–5 against their group's MAD).  With ``drafts`` (k, the most drafts a verify can
    accept: speculative_num_steps), x_r = logit p_r, the per-position acceptance of a chain that
    commits τ_r tokens a verify: 1 + p + … + p^k = τ_r (``chain_logit``) — the scale on which a
    request's acceptance varies (the simulator draws it there; τ is bounded by 1 and k + 1 and
    crowds its ends); without k, x_r = τ_r.  NaN where no spread is fitted or fewer than
    PEER_LEAST requests have a τ_r."""
    z = np.full(len(tau), np.nan)
    ok = np.flatnonzero(np.isfinite(tau) & np.isfinite(steps) & (steps > 0))
    if len(ok) < PEER_LEAST:
        return z
    v = steps[ok]
    x = chain_logit(tau[ok], v, int(drafts)) \
        if drafts is not None and 0 < drafts <= CHAIN_MAX_K else tau[ok]
    order = np.argsort(v, kind="stable")
    chunks = np.array_split(order, max(1, min(PEER_GROUPS, len(ok) // PEER_LEAST)))
    centre = np.empty(len(ok))
    rows = []
    for c in chunks:
        med = float(np.median(x[c]))
        centre[c] = med
        rows.append((len(c), float(np.mean(1 / v[c])),
                     (1.4826 * float(np.median(np.abs(x[c] - med)))) ** 2))
    n_c, inv, var = (np.array(col) for col in zip(*rows))
    w = np.sqrt(n_c)
    from scipy.optimize import nnls
    (a, c), _ = nnls(np.column_stack([np.ones(len(inv)), inv]) * w[:, None], var * w)
    scale2 = a + c / v
    good = scale2 > 0
    z[ok[good]] = (x[good] - centre[good]) / np.sqrt(scale2[good])
    return z


def chain_logit(tau: np.ndarray, steps: np.ndarray, k: int) -> np.ndarray:
    """logit p where 1 + p + … + p^k = τ̃, the τ of a chain of k drafts each accepted with
    probability p given the ones before; τ̃ keeps half a draft off each bound (τ̃ = 1 + k ×
    (A + ½) / (D + 1), A = (τ − 1) × steps drafts accepted of D = k × steps), so that a request
    of few verifies that accepted none (or all) is not infinitely far out.  Bisection on p."""
    with np.errstate(invalid="ignore", divide="ignore"):
        d = k * steps
        acc = np.clip((tau - 1) * steps, 0, d)
        target = 1 + k * (acc + 0.5) / (d + 1)
    lo, hi = np.zeros(len(tau)), np.ones(len(tau))
    powers = np.arange(k + 1)
    for _ in range(48):                         # 2⁻⁴⁸: far below any printed precision
        mid = (lo + hi) / 2
        up = (mid[:, None] ** powers).sum(axis=1) < target
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    p = (lo + hi) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(p / (1 - p))


def z_limit(tests: int, alpha: float = FLAG_ALPHA) -> float:
    """The one-sided robust-z threshold that keeps a flag on a run without the fault to
    ``alpha``: Bonferroni over ``tests`` requests, with the tail of a Student t on TAIL_DF
    degrees of freedom rather than a normal one (a run's acceptance is a mixture — of request
    lengths, of drift over time — and its z-scores' far tail is heavier than a normal's: on
    clean simulated runs long outputs reached z 3.9–4.9 among 200, where a normal's maximum is
    about 3, and a normal limit flagged a request in 12–15 % of the runs)."""
    from scipy.stats import t
    return float(t(TAIL_DF).isf(alpha / max(tests, 1)))


def _outliers(df: pd.DataFrame, groups: pd.Series, k: int, max_accept: float | None,
              loop_min_tokens: int) -> tuple[Outlier, ...]:
    """The k lowest and k highest τ_r, and the repetition-loop suspects (docs/requests.md): a
    long output (≥ loop_min_tokens and ≥ twice the run's median output) with a high τ_r (at
    least LOOP_SHARE of its drafts accepted, or far above its peers': robust z over the
    Bonferroni limit for the long outputs tested).  A lowest τ_r far below its peers' (the
    limit for every request of the run) is marked as possibly garbled output.  Both limits
    keep a flag on a run without the fault to FLAG_ALPHA (a quantile or a Tukey fence flags
    some request of every large run: 3–25 loop suspects and up to 5 'garbled' requests on
    clean simulated runs)."""
    if not len(df):
        return ()
    tau = df["tau"].to_numpy(dtype=float)
    order = np.lexsort((df["line_no"].to_numpy(dtype=float, na_value=0), tau))
    z = robust_z(tau, df["steps"].to_numpy(dtype=float, na_value=np.nan),
                 None if max_accept is None else max_accept - 1)

    def make(i, kind, why):
        r = df.iloc[i]
        return Outlier(kind, str(r["source"]), int(r["line_no"]), _str(r["id"]),
                       float(r["tau"]), _int(r["output_tokens"]), _int(r["steps"]),
                       _str(r["finish_reason"]), str(groups.iloc[i]), why)
    out = []
    # k lowest and k highest; a run of at most 2k requests lists each request once
    n_lo = min(k, len(order) // 2) if len(order) <= 2 * k else k
    highest = order[::-1][:k] if len(order) > 2 * k else order[n_lo:][::-1]
    lo_at = -z_limit(int(np.isfinite(z).sum()))
    for i in order[:n_lo]:
        below = np.isfinite(z[i]) and z[i] < lo_at
        out.append(make(i, "lowest", f"far below requests of its length (robust z {z[i]:.1f}; "
                                     f"limit {lo_at:.2f} over {int(np.isfinite(z).sum()):,} "
                                     "requests): garbled output?" if below else ""))
    for i in highest:
        out.append(make(i, "highest", ""))
    outs = df["output_tokens"].to_numpy(dtype=float, na_value=np.nan)
    fin = df["finish_reason"].astype(object).tolist()
    med = float(np.nanmedian(outs)) if np.isfinite(outs).any() else math.nan
    long_at = max(loop_min_tokens, 2 * med) if math.isfinite(med) else loop_min_tokens
    is_long = np.isfinite(outs) & (outs >= long_at)
    hi_at = z_limit(int((is_long & np.isfinite(z)).sum()))
    for i in np.argsort(-tau, kind="stable"):
        if not is_long[i]:
            continue
        why = []
        if np.isfinite(z[i]) and z[i] > hi_at:
            m = int((is_long & np.isfinite(z)).sum())
            why.append(f"far above requests of its length (robust z {z[i]:.1f}; limit "
                       f"{hi_at:.2f} over {m:,} long output{'s' * (m != 1)})")
        if max_accept is not None and max_accept > 1 and \
                tau[i] - 1 >= LOOP_SHARE * (max_accept - 1):
            why.append(f"{100 * (tau[i] - 1) / (max_accept - 1):.1f}% of its drafts accepted "
                       f"(τ_r of at most {max_accept:g})")
        if why:
            what = (f"a long output: {int(outs[i]):,} tokens (long here: ≥ {long_at:,.0f}"
                    + (", twice the run's median" if long_at > loop_min_tokens else "") + ")")
            if fin[i] == "length":
                what += ", finished by length"
            out.append(make(i, "loop suspect", "; ".join(why + [what])))
    return tuple(out)

def _max_accept(log, source: str, startup) -> float | None:
    """speculative_num_steps + 1 of the run's server_args (chain or tree depth + bonus)."""
    try:
        cfg = log.config(source, None if startup is None else int(startup))
    except Exception:       # noqa: BLE001 - no config is no maximum
        return None
    v = cfg.get("speculative_num_steps")
    try:
        v = int(v)
    except (TypeError, ValueError):
        return None
    return float(v + 1) if v > 0 else None

