"""Which requests benefit: acceptance per request and per workload, and the paired A/B
(docs/requests.md).

One row per finished request from every source that has one: SGLang ``Finish:`` lines (text and
JSON, every release's keys: the ``requests`` table) and the per-request rows of benchmark outputs
(Spec-Bench and EAGLE answer files, saved vLLM responses with per-request spec metrics: ``bench``
rows of scope 'request').  Each request's accept length is

    τ_r = step_tokens / steps       SGLang: (completion_tokens − 1) / spec_verify_ct

the tokens its verify steps committed (bonus included) per verify step.  The first output token
comes from the prefill and needs no verify step, so it is left out; SGLang's own
``spec_accept_length`` (completion_tokens / verify_ct) keeps it and is biased up by 1 / verify_ct.
The pooled value Σ step_tokens / Σ steps over the requests is the quantity SGLang's decode-line
``accept len`` estimates (tokens per request-verify, bonus included).

Statistical model (docs/requests.md §Statistics): a request is one independent sample.  The
pooled τ of a group is a ratio estimator R = Σy / Σx (y the step tokens, x the steps), its
standard error from the linearised residuals y − R·x over the requests (n/(n − 1) corrected),
with a Student t interval on n − 1 degrees of freedom; fewer than MIN_REQUESTS requests give no
interval.  A share of requests (below the break-even) has a Wilson interval.  The paired
comparison matches the same prompt in two runs and tests the mean of log(τ_new / τ_ref) over
the prompts with a one-sample t-test (n − 1 df); its ratio is the geometric mean of the
per-prompt ratios.  Groups are tested the same way, with Holm-adjusted p-values across groups.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from .. import distributions as dist
from ..errors import EaglelogError
from ..schema import REQUEST_COLUMNS
from .. import stats
from ..stats import Estimate, insufficient
from .estimators import (MIN_REQUESTS, _tq, mean_estimate, ratio_estimate,  # noqa: F401
                         wilson)

PEER_LEAST = 30         # requests a τ_r is judged against (robust_z) …
PEER_GROUPS = 20        # … in at most this many groups of lengths
FLAG_ALPHA = 0.05       # a run without loops or garbled output flags a request with at most
                        # this probability (per kind of flag)
TAIL_DF = 10            # degrees of freedom of the tail the flags' limits assume (z_limit)
MIN_PAIRS = 10          # fewer matched prompts give no paired test
TAU_WARN = 2.0          # a paired comparison warns from this autocorrelation time on
QUANTILES = (0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95)
HIST_WIDTH = 0.25       # τ_r histogram bins: [1.00, 1.25), [1.25, 1.50), …
HIST_MAX_BINS = 64      # … at most this many: a wider range takes wider bins (an absurd τ_r,
                        # completion_tokens 10⁹, had sized an array of 4 × 10⁸ bins: issue 36)
CHAIN_MAX_K = 64        # chain_logit's drafts: a k beyond any engine's is no chain to fit
LOOP_MIN_TOKENS = 512   # a repetition-loop suspect's output is this long (and 2 × the median)
LOOP_SHARE = 0.98       # … and it accepted this share of its drafts, or far more than its
                        # peers (robust_z): a chain's drafts each accepted with p ≈ 0.995, which
                        # no clean simulated request came near (at most 90 %, p ≈ 0.94)
GROUPINGS = ("category", "finish", "prompt-len", "output-len", "label")
MATCHES = ("auto", "question", "prompt", "rid")

REQUEST_COLUMN_NAMES = tuple(c.name for c in REQUEST_COLUMNS)
_ORIGIN = {"spec-bench": "spec-bench", "eagle": "eagle", "vllm.response": "vllm",
           "sglang.response": "sglang-response", "llama.cpp.response": "llamacpp-response"}
SERVER_ORIGINS = ("sglang", "vllm", "sglang-response", "llamacpp-response")   # ids a server gave (rid matching)


# ----------------------------------------------------------------------------- statistics


def paired_t(d: np.ndarray, confidence: float) -> dict:
    """One-sample t-test of the mean of d (log ratios, one per prompt) against 0 with n − 1
    degrees of freedom; the ratio exp(mean) with its interval.  Below MIN_PAIRS: no test."""
    n = len(d)
    out = {"n": n, "mean_log": float(np.mean(d)) if n else math.nan, "sd_log": None,
           "t": None, "df": None, "p_value": None,
           "ratio": Estimate(math.exp(float(np.mean(d))) if n else math.nan, None, None, n,
                             confidence, None, None, "geometric mean of per-prompt ratios")}
    if n < MIN_PAIRS:
        return out
    m = float(np.mean(d))
    sd = float(np.std(d, ddof=1))
    out.update(sd_log=sd, df=n - 1)
    if sd == 0:
        out.update(t=0.0 if m == 0 else math.copysign(math.inf, m), p_value=1.0 if m == 0 else 0.0)
        out["ratio"] = Estimate(math.exp(m), math.exp(m), math.exp(m), n, confidence, 0.0, n - 1,
                                out["ratio"].source)
        return out
    se = sd / math.sqrt(n)
    t = m / se
    tq = _tq(n - 1, confidence)
    out.update(t=t, p_value=float(2 * dist.stdtr(n - 1, -abs(t))))
    out["ratio"] = Estimate(math.exp(m), math.exp(m - tq * se), math.exp(m + tq * se), n,
                            confidence, se, n - 1, out["ratio"].source)
    return out


def welch_log(a: np.ndarray, b: np.ndarray, confidence: float) -> dict:
    """Unpaired contrast: Welch's t on log values of two samples (b / a), ratio of geometric
    means with its interval."""
    la, lb = np.log(a), np.log(b)
    na, nb = len(la), len(lb)
    diff = float(np.mean(lb) - np.mean(la)) if na and nb else math.nan
    src = "ratio of geometric means, unpaired (Welch)"
    if na < MIN_PAIRS or nb < MIN_PAIRS:
        return {"ratio": insufficient(math.exp(diff), min(na, nb), confidence, src),
                "p_value": None}
    va, vb = float(np.var(la, ddof=1)) / na, float(np.var(lb, ddof=1)) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return {"ratio": Estimate(math.exp(diff), math.exp(diff), math.exp(diff), na + nb,
                                  confidence, 0.0, None, src),
                "p_value": 1.0 if diff == 0 else 0.0}
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    t = diff / se
    tq = _tq(df, confidence)
    return {"ratio": Estimate(math.exp(diff), math.exp(diff - tq * se), math.exp(diff + tq * se),
                              na + nb, confidence, se, df, src),
            "p_value": float(2 * dist.stdtr(df, -abs(t)))}


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values that are not None."""
    idx = [i for i, v in enumerate(p) if v is not None]
    order = sorted(idx, key=lambda i: p[i])
    out: list[float | None] = [None] * len(p)
    m, run = len(order), 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (m - rank) * p[i]))
        out[i] = run
    return out


# ----------------------------------------------------------------------------- the table

def _load(logs, engine: str = "auto", keep_going: bool = False, base_date=None):
    from ..api import ParsedLog, parse

    if isinstance(logs, ParsedLog):
        return logs
    return parse(logs, engine=engine, keep_going=keep_going, base_date=base_date)


def _labels_text(s: pd.Series) -> tuple[list, list]:
    """custom_labels JSON -> ('k=v, …', the value of a 'category' label)."""
    text, cat = [], []
    for v in s.tolist():
        d = None
        if isinstance(v, str):
            try:
                d = json.loads(v)
            except ValueError:
                d = None
        if isinstance(d, dict) and d:
            text.append(", ".join(f"{k}={d[k]}" for k in sorted(d)))
            cat.append(d.get("category"))
        else:
            text.append(None)
            cat.append(None)
    return text, cat


def _col(df: pd.DataFrame, name: str, n: int):
    return df[name] if name in df.columns else pd.Series([pd.NA] * n, index=df.index,
                                                         dtype=object)


def request_table(log) -> pd.DataFrame:
    """One row per finished request of every input (REQUEST_COLUMNS), in input order."""
    log = _load(log)
    parts = []
    req = log.requests
    if len(req):
        n = len(req)
        comp = req["completion_tokens"].astype("Float64")
        ver = req["verify_ct"].astype("Float64")
        text, cat = _labels_text(_col(req, "custom_labels", n))
        parts.append(pd.DataFrame({
            "source": req["source"].astype(str), "line_no": req["line_no"],
            "startup": req["startup"], "origin": "sglang", "id": req["rid"],
            "category": cat, "label": text, "finish_reason": req["finish_reason"].astype(object),
            "prompt_tokens": req["prompt_tokens"], "output_tokens": req["completion_tokens"],
            "steps": req["verify_ct"],
            "step_tokens": (comp - 1).where(ver.notna() & comp.notna()).astype("Int64"),
            "tau_printed": req["spec_accept_length"],
            "e2e_latency": req["e2e_latency"],
            "prompt_hash": _col(req, "prompt_hash", n), "timestamp": req["timestamp"]}))
    b = log.bench
    if len(b):
        b = b[(b["scope"] == "request").to_numpy(dtype=bool, na_value=False)]
    if len(b):
        n = len(b)
        tool = b["tool"].astype(str)
        parts.append(pd.DataFrame({
            "source": b["source"].astype(str), "line_no": b["line_no"],
            "startup": b["startup"], "origin": tool.map(lambda t: _ORIGIN.get(t, t)),
            "id": _col(b, "label", n), "category": _col(b, "category", n), "label": None,
            "finish_reason": _col(b, "finish_reason", n).astype(object),
            "prompt_tokens": _col(b, "prompt_tokens", n),
            "output_tokens": _col(b, "output_tokens", n),
            "steps": _col(b, "steps", n), "step_tokens": _col(b, "step_tokens", n),
            # the bench table holds only the columns its rows fill: a file of saved vLLM
            # responses alone has no duration_s (no latency in a response)
            "tau_printed": _col(b, "accept_len", n), "e2e_latency": _col(b, "duration_s", n),
            "prompt_hash": None, "timestamp": pd.NaT}))
    if not parts:
        return _typed(pd.DataFrame(columns=list(REQUEST_COLUMN_NAMES)))
    df = pd.concat(parts, ignore_index=True)
    order = {s.name: i for i, s in enumerate(log.sources)}
    df["_o"] = df["source"].map(order).fillna(len(order))
    df = df.sort_values(["_o", "line_no"], kind="stable").drop(columns="_o")
    steps = pd.to_numeric(df["steps"], errors="coerce").astype("float64")
    tok = pd.to_numeric(df["step_tokens"], errors="coerce").astype("float64")
    df["tau"] = np.where(steps > 0, tok / steps.where(steps > 0), np.nan)
    df["run"] = _run_labels(df)
    return _typed(df[list(REQUEST_COLUMN_NAMES)].reset_index(drop=True))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    out = {}
    for c in REQUEST_COLUMNS:
        s = df[c.name] if c.name in df.columns else pd.Series([None] * len(df), dtype=object)
        if c.dtype == "string":
            s = s.astype(object).where(s.notna(), None).astype("string")
        elif c.dtype == "category":
            s = s.astype(object).where(s.notna(), None).astype("category")
        elif c.dtype in ("Int64", "Int32"):
            s = pd.to_numeric(s, errors="coerce").astype(c.dtype)
        elif c.dtype == "float64":
            s = pd.to_numeric(s, errors="coerce").astype("float64")
        elif c.dtype.startswith("datetime"):
            s = pd.to_datetime(s, errors="coerce").astype("datetime64[us]")
        out[c.name] = s.reset_index(drop=True)
    return pd.DataFrame(out)


def _run_labels(df: pd.DataFrame) -> list[str]:
    """'source', or 'source [start-up k]' for inputs with requests in several start-ups."""
    st = pd.to_numeric(df["startup"], errors="coerce").fillna(0).astype(int)
    several = st.groupby(df["source"]).nunique()
    return [f"{s} [start-up {k}]" if several.get(s, 1) > 1 else s
            for s, k in zip(df["source"], st)]


def _pow2_bucket(v) -> str:
    if v is None or v is pd.NA or not np.isfinite(v):
        return "unknown"
    v = int(v)
    if v < 64:
        return "<64"
    lo = 1 << (v.bit_length() - 1)
    return f"{lo}–{2 * lo - 1}"


def group_keys(df: pd.DataFrame, by: str | None) -> pd.Series:
    """The group of every request for ``--by`` (one group 'all' without it)."""
    if by is None:
        return pd.Series(["all"] * len(df), index=df.index, dtype=object)
    if by == "category":
        s = df["category"]
    elif by == "finish":
        s = df["finish_reason"].astype(object)
    elif by == "label":
        s = df["label"]
    elif by in ("prompt-len", "output-len"):
        col = "prompt_tokens" if by == "prompt-len" else "output_tokens"
        v = pd.to_numeric(df[col], errors="coerce").astype("float64")
        return pd.Series([_pow2_bucket(x) for x in v], index=df.index, dtype=object)
    else:
        raise EaglelogError(f"--by {by!r}: choose from {', '.join(GROUPINGS)}")
    return s.astype(object).where(s.notna(), "unknown")


def auto_by(log) -> str | None:
    """The grouping a picture uses unasked: category when a request has one, else the custom
    labels, else the finish reason when there are several, else none."""
    t = request_table(log)
    if t["category"].notna().any():
        return "category"
    if t["label"].notna().any():
        return "label"
    if t["finish_reason"].nunique(dropna=True) > 1:
        return "finish"
    return None


def _group_order(keys: pd.Series, by: str | None) -> list[str]:
    if by in ("prompt-len", "output-len"):
        def lo(k):
            if k == "unknown":
                return math.inf
            if k == "<64":
                return 0
            return int(k.split("–")[0])
        return sorted(keys.unique(), key=lo)
    uniq = list(dict.fromkeys(keys.tolist()))
    return sorted(uniq, key=lambda k: (k == "unknown", str(k)))


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class GroupStats:
    """The distribution of τ_r over the requests of one group."""

    group: str
    requests: int                    # requests with a verify step (τ defined)
    steps: int                       # Σ verify steps
    pooled: Estimate                 # Σ step_tokens / Σ steps: what SGLang's accept len pools
    mean: Estimate                   # unweighted mean of τ_r (each request equal)
    quantiles: dict                  # {'p5': …, …, 'p95': …}
    minimum: float
    maximum: float
    below: tuple | None              # (share, ci_low, ci_high) of requests with τ_r < break-even
    output_tokens_mean: float
    e2e_latency_median: float | None

    def to_dict(self) -> dict:
        d = {"group": self.group, "requests": self.requests, "steps": self.steps,
             "pooled_accept_len": self.pooled.to_dict(), "mean_accept_len": self.mean.to_dict(),
             "quantiles": {k: _f(v) for k, v in self.quantiles.items()},
             "min": _f(self.minimum), "max": _f(self.maximum),
             "output_tokens_mean": _f(self.output_tokens_mean),
             "e2e_latency_median_s": _f(self.e2e_latency_median)}
        if self.below is not None:
            d["share_below_breakeven"] = {"estimate": _f(self.below[0]),
                                          "ci_low": _f(self.below[1]),
                                          "ci_high": _f(self.below[2])}
        return d


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


@dataclass(frozen=True)
class RunRequests:
    """One run's requests: the distribution, its groups, the outliers."""

    run: str
    requests: int                    # finished requests read
    without_steps: int               # of them without a verify step (no τ): said, not dropped
    origins: dict                    # {'sglang': n, 'spec-bench': n, …}
    overall: GroupStats | None
    groups: tuple[GroupStats, ...]
    histogram: tuple[tuple[float, float, int], ...]   # (from, to, requests)
    outliers: tuple[Outlier, ...]
    breakeven: float | None
    breakeven_source: str | None
    max_accept: float | None         # the most a verify can commit (steps + 1), when known
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"run": self.run, "requests": self.requests,
                "without_verify_steps": self.without_steps, "origins": dict(self.origins),
                "overall": self.overall.to_dict() if self.overall else None,
                "groups": [g.to_dict() for g in self.groups],
                "histogram": [{"from": a, "to": b, "requests": c} for a, b, c in self.histogram],
                "outliers": [o.to_dict() for o in self.outliers],
                "breakeven_accept_len": _f(self.breakeven),
                "breakeven_source": self.breakeven_source,
                "max_accept_len": _f(self.max_accept), "notes": list(self.notes)}


@dataclass(frozen=True)
class RequestsResult:
    """``eaglelog.requests(...)``: per run, the τ_r distribution, groups and outliers; the
    per-workload results benchmark files report (SpecForge, Spec-Bench task blocks).

    >>> r = eaglelog.requests("server.log", by="finish", breakeven=2.4)
    >>> r.runs[0].overall.pooled.estimate, r.runs[0].overall.below
    >>> r.to_frame()            # one row per request
    """

    runs: tuple[RunRequests, ...]
    by: str | None
    confidence: float
    workloads: tuple[dict, ...]
    table: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"command": "requests", "runs": [r.to_dict() for r in self.runs], "by": self.by,
                "confidence": self.confidence, "workloads": [dict(w) for w in self.workloads],
                "definition": "accept length per request = (completion_tokens − 1) / verify "
                              "steps: the first token comes from the prefill and needs no "
                              "verify; pooled = Σ (completion − 1) / Σ verify steps"}

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _f(v):
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _int(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) \
        else int(v)


def _str(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) \
        else str(v)


def group_stats(df: pd.DataFrame, name: str, confidence: float,
                breakeven: float | None) -> GroupStats:
    """The statistics of one group's requests (rows with τ only)."""
    tau = df["tau"].to_numpy(dtype=float)
    y = df["step_tokens"].to_numpy(dtype=float, na_value=np.nan)
    x = df["steps"].to_numpy(dtype=float, na_value=np.nan)
    n = len(tau)
    q = {f"p{round(p * 100)}": float(np.quantile(tau, p)) if n else math.nan for p in QUANTILES}
    below = None
    if breakeven is not None:
        below = wilson(int(np.sum(tau < breakeven)), n, confidence)
    lat = df["e2e_latency"].to_numpy(dtype=float, na_value=np.nan)
    lat = lat[np.isfinite(lat)]
    out = df["output_tokens"].to_numpy(dtype=float, na_value=np.nan)
    return GroupStats(str(name), n, int(np.nansum(x)),
                      ratio_estimate(y, x, confidence, "pooled Σ(completion − 1) / Σ verify"),
                      mean_estimate(tau, confidence, "mean over requests"), q,
                      float(tau.min()) if n else math.nan, float(tau.max()) if n else math.nan,
                      below, float(np.nanmean(out)) if np.isfinite(out).any() else math.nan,
                      float(np.median(lat)) if len(lat) else None)


def _histogram(tau: np.ndarray) -> tuple:
    if not len(tau):
        return ()
    tau = tau[np.isfinite(tau)]
    if not len(tau):
        return ()
    width = HIST_WIDTH
    span = float(tau.max()) - float(tau.min())
    if span / width > HIST_MAX_BINS:
        # never sized from an input value: as many quarter-steps a bin as keep the bins few
        width = HIST_WIDTH * math.ceil(span / (HIST_WIDTH * HIST_MAX_BINS))
    lo = math.floor(float(tau.min()) / width) * width
    hi = math.floor(float(tau.max()) / width) * width + width
    edges = np.round(lo + width * np.arange(int(round((hi - lo) / width)) + 1), 6)
    counts, _ = np.histogram(tau, bins=edges)
    return tuple((float(a), float(b), int(c)) for a, b, c in zip(edges[:-1], edges[1:], counts))


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


def _breakeven_of(log, source: str, startup, baseline, confidence: float) -> float:
    """The break-even accept length of a run from ``eaglelog breakeven``, or a clear error."""
    try:
        from .breakeven import breakeven as _breakeven
        sub = log.subset(source, None if startup is None else int(startup))
        r = _breakeven(sub, baseline, confidence=confidence)
        v = float(r.breakeven_accept_len.estimate)
    except EaglelogError as e:
        raise EaglelogError(f"{source}: the break-even accept length could not be computed "
                            f"from the baseline ({e}); give it with --breakeven X") from None
    except Exception as e:          # noqa: BLE001 - the estimator is being rewritten: say so
        raise EaglelogError(f"{source}: the break-even accept length could not be computed "
                            f"from the baseline ({type(e).__name__}: {e}); give it with "
                            "--breakeven X") from None
    if not math.isfinite(v) or v <= 0:
        raise EaglelogError(f"{source}: no break-even accept length from the baseline (no "
                            "cycle time in this input?); give it with --breakeven X")
    return v


def _workloads(log) -> tuple[dict, ...]:
    b = log.bench
    if not len(b):
        return ()
    m = (b["scope"] == "task").to_numpy(dtype=bool, na_value=False)
    out = []
    for r in b[m].to_dict("records"):
        out.append({"source": str(r["source"]), "line_no": _int(r["line_no"]),
                    "tool": _str(r["tool"]), "workload": _str(r.get("category")) or
                    _str(r.get("label")), "label": _str(r.get("label")),
                    "accept_len": _f(r.get("accept_len")),
                    "accept_len_def": _str(r.get("accept_len_def")),
                    "requests": _int(r.get("requests")),
                    "spec_steps": _int(r.get("spec_steps")),
                    "spec_topk": _int(r.get("spec_topk")),
                    "spec_draft_tokens": _int(r.get("spec_draft_tokens")),
                    "batch_size": _int(r.get("batch_size")),
                    "output_tok_s": _f(r.get("output_tok_s")),
                    "speedup": _f(r.get("speedup"))})
    return tuple(out)


def _no_request(log) -> str:
    """Why an input gives no request row: what it does hold, and what would give rows."""
    names = ", ".join(s.name for s in log.sources)
    msg = (f"{names}: no finished request to analyse: SGLang logs need --log-requests (Finish: "
           "lines); benchmark outputs need per-question records (Spec-Bench / EAGLE answer "
           "files, saved vLLM responses with --per-request-spec-decode-metrics)")
    b = log.bench
    if len(b):
        runs = b[(b["scope"] == "run").to_numpy(dtype=bool, na_value=False)]
        if len(runs):
            r = runs.iloc[0]
            tools = ", ".join(dict.fromkeys(runs["tool"].astype(str)))
            al = _f(r.get("accept_len"))
            what = (f"accept length {al:.4g} ({_str(r.get('accept_len_def')) or 'pooled'})"
                    if al is not None else "no accept length")
            msg += (f"; it holds {len(runs)} whole-run result(s) of {tools} (line "
                    f"{_int(r['line_no'])}: {what}), which keep no per-request acceptance "
                    "(bench_serving --output-details saves lengths and latencies per request, "
                    "no verify counts): see `eaglelog parse`")
    return msg


def requests(logs, *, by: str | None = None, breakeven: float | None = None,
             baseline=None, baseline_toks: float | None = None, baseline_log=None,
             confidence: float = 0.95, outliers: int = 5,
             loop_min_tokens: int = LOOP_MIN_TOKENS, engine: str = "auto") -> RequestsResult:
    """Acceptance per request: τ_r = (completion − 1) / verify steps of every finished request,
    its distribution, groups (``by``: category, finish, prompt-len, output-len, label),
    outliers and, with a break-even accept length (``breakeven``, or computed from a baseline:
    ``baseline_toks`` / ``baseline_log`` / a ``Baseline``), the share of requests below it.

    >>> import eaglelog
    >>> r = eaglelog.requests("server.log", by="finish", breakeven=2.45)
    >>> r.runs[0].overall.pooled.estimate       # what SGLang's accept len pools
    >>> r.to_frame().sort_values("tau").head()  # the worst requests
    """
    if by is not None and by not in GROUPINGS:
        raise EaglelogError(f"by={by!r}: choose from {', '.join(GROUPINGS)}")
    if breakeven is not None and not (math.isfinite(breakeven) and breakeven > 0):
        raise EaglelogError(f"breakeven={breakeven!r}: an accept length > 0")
    log = _load(logs, engine)
    if baseline is None and (baseline_toks is not None or baseline_log is not None):
        from ..baseline import Baseline
        if baseline_toks is not None:
            try:
                baseline = Baseline.from_text(str(baseline_toks))
            except ValueError as e:
                raise EaglelogError(f"baseline_toks={baseline_toks!r}: {e}") from None
        else:
            baseline = Baseline(log=_load(baseline_log, engine))
    table = request_table(log)
    workloads = _workloads(log)
    if not len(table) and not workloads:
        raise EaglelogError(_no_request(log))
    keys = group_keys(table, by)
    runs = []
    for run in dict.fromkeys(table["run"].tolist()):
        m = (table["run"] == run).to_numpy(dtype=bool)
        sub, sub_keys = table[m], keys[m]
        source = str(sub["source"].iloc[0])
        st = sub["startup"].iloc[0]
        startup = None if st is pd.NA or pd.isna(st) else int(st)
        has_tau = sub["tau"].notna().to_numpy()
        ok, ok_keys = sub[has_tau], sub_keys[has_tau]
        notes = []
        be, be_src = breakeven, ("--breakeven" if breakeven is not None else None)
        if be is None and baseline is not None:
            be = _breakeven_of(log, source, startup if sub["origin"].eq("sglang").any()
                               else None, baseline, confidence)
            be_src = f"eaglelog breakeven against {baseline.label}"
        without = int((~has_tau).sum())
        if without:
            one_token = pd.to_numeric(sub["output_tokens"], errors="coerce").le(1).to_numpy(
                dtype=bool, na_value=False)
            no_counts = int((sub["steps"].isna().to_numpy() & ~one_token).sum())
            zero = without - no_counts
            parts = []
            if no_counts:
                parts.append(f"{no_counts} without verify counts (no speculation, or a release "
                             "that does not log them)")
            if zero:
                parts.append(f"{zero} with no verify step (one output token)")
            notes.append(f"{without} of {len(sub)} requests have no per-request accept length: "
                         + "; ".join(parts) + " — counted here, left out of the statistics")
        origin_counts = {str(k): int(v) for k, v in sub["origin"].value_counts(sort=False)
                         .items() if v}
        if len(origin_counts) > 1:
            notes.append("requests of different sources are pooled: " + ", ".join(
                f"{k} {v}" for k, v in origin_counts.items()))
        overall = group_stats(ok, "all", confidence, be) if len(ok) else None
        groups = ()
        if by is not None and len(ok):
            groups = tuple(group_stats(ok[(ok_keys == g).to_numpy()], g, confidence, be)
                           for g in _group_order(ok_keys, by))
        if len(ok) and len(ok) < MIN_REQUESTS:
            notes.append(f"{len(ok)} requests: fewer than {MIN_REQUESTS} give no interval")
        mx = _max_accept(log, source, startup) if sub["origin"].eq("sglang").any() else None
        runs.append(RunRequests(run, len(sub), without, origin_counts, overall, groups,
                                _histogram(ok["tau"].to_numpy(dtype=float)),
                                _outliers(ok.reset_index(drop=True),
                                          ok_keys.reset_index(drop=True), outliers, mx,
                                          loop_min_tokens),
                                be, be_src, mx, tuple(notes)))
    frame = table.copy()
    frame["group"] = keys.astype("string").to_numpy() if len(keys) else pd.Series(
        dtype="string")
    # each request's flag, as the outliers list gives it (-f csv / jsonl / parquet rows)
    flags = {(o.source, o.line_no): ("loop suspect" if o.kind == "loop suspect"
                                     else "garbled output?")
             for r in runs for o in r.outliers
             if o.kind == "loop suspect" or (o.kind == "lowest" and o.why)}
    frame["flag"] = pd.array([flags.get((s_, ln)) for s_, ln in zip(
        frame["source"].astype(str), frame["line_no"].astype("Int64").fillna(-1).astype(int))],
        dtype="string")
    return RequestsResult(tuple(runs), by, confidence, workloads, frame)


# ----------------------------------------------------------------------------- paired A/B

@dataclass(frozen=True)
class PairedGroup:
    group: str
    pairs: int
    wins: int
    losses: int
    ties: int
    ratio: Estimate
    p_value: float | None
    p_adjusted: float | None
    verdict: str

    def to_dict(self) -> dict:
        return {"group": self.group, "pairs": self.pairs, "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "ratio": self.ratio.to_dict(),
                "p_value": self.p_value, "p_holm": self.p_adjusted, "verdict": self.verdict}


@dataclass(frozen=True)
class PairedResult:
    """``eaglelog.compare_paired(ref, new)``: the same prompts in two runs.

    >>> r = eaglelog.compare_paired("before.jsonl", "after.jsonl")
    >>> r.ratio.estimate, r.p_value, r.verdict, r.counts["unmatched_ref"]
    >>> r.to_frame().sort_values("log_ratio").head()   # the prompts that got worse
    """

    reference: str
    changed: str
    match: str                       # question | prompt | rid | rid-map
    counts: dict
    ratio: Estimate                  # geometric mean of τ_new / τ_ref over the matched prompts
    t: float | None
    df: float | None
    p_value: float | None
    autocorr_time: float | None      # τ of the log ratios in execution order (server logs)
    wins: int
    losses: int
    ties: int
    verdict: str
    pooled_ratio: Estimate           # Σ-pooled accept length new / ref on the matched prompts
    unpaired: dict                   # the same prompts compared without the pairing
    by: str | None
    groups: tuple[PairedGroup, ...]
    worse: tuple[dict, ...]          # the prompts that got worse, worst first
    confidence: float
    notes: tuple[str, ...]
    pairs: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"command": "compare --paired", "reference": self.reference,
                "changed": self.changed, "match": self.match,
                "counts": dict(self.counts), "ratio": self.ratio.to_dict(), "t": _f(self.t),
                "df": _f(self.df), "p_value": self.p_value,
                "autocorr_time": _f(self.autocorr_time), "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "verdict": self.verdict,
                "pooled_ratio": self.pooled_ratio.to_dict(),
                "unpaired": {"ratio": self.unpaired["ratio"].to_dict(),
                             "p_value": self.unpaired["p_value"]},
                "by": self.by, "groups": [g.to_dict() for g in self.groups],
                "worse": [dict(w) for w in self.worse], "confidence": self.confidence,
                "test": "one-sample t-test of log(τ_new / τ_ref) over the matched prompts "
                        "(n − 1 df; prompts as independent units); group p-values "
                        "Holm-adjusted",
                "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        return self.pairs.copy()


def read_rid_map(path: str) -> dict[str, str]:
    """A rid mapping file: JSON {"ref_rid": "new_rid", …}, or two columns (ref, new) separated
    by a comma, tab or spaces, one pair a line ('#' comments and a 'ref,new' header allowed)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise EaglelogError(f"{path}: cannot read the rid map: {e.strerror or e}") from None
    if text.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise EaglelogError(f"{path}: the rid map is not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise EaglelogError(f"{path}: the rid map must be a JSON object ref rid -> new rid")
        return {str(k): str(v) for k, v in obj.items()}
    out: dict[str, str] = {}
    for i, line in enumerate(text.splitlines(), 1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        parts = [p.strip() for p in (t.split(",") if "," in t else t.split())]
        if len(parts) != 2 or not all(parts):
            raise EaglelogError(f"{path}:{i}: a rid map line holds two rids (ref, new): {t[:60]!r}")
        if i == 1 and parts[0].lower() in ("ref", "reference", "ref_rid") and \
                parts[1].lower() in ("new", "changed", "new_rid"):
            continue
        if parts[0] in out:
            raise EaglelogError(f"{path}:{i}: rid {parts[0]!r} is mapped twice")
        out[parts[0]] = parts[1]
    if not out:
        raise EaglelogError(f"{path}: the rid map holds no pair")
    return out


def _keys(t: pd.DataFrame, match: str, rid_map: dict | None, side: str) -> pd.Series:
    if match == "question":
        ok = t["origin"].isin(["spec-bench", "eagle"]).to_numpy()
        v = t["id"].astype(object)
        return v.where(ok & t["id"].notna().to_numpy(), None)
    if match == "prompt":
        return t["prompt_hash"].astype(object).where(t["prompt_hash"].notna(), None)
    v = t["id"].astype(object).where(t["id"].notna(), None)
    v = v.where(t["origin"].isin(SERVER_ORIGINS).to_numpy(), None)
    if rid_map is not None and side == "new":
        inverse = {n: r for r, n in rid_map.items()}
        return v.map(lambda x: inverse.get(x) if x is not None else None)
    return v


def _auto_match(ref: pd.DataFrame, new: pd.DataFrame, rid_map) -> str:
    if rid_map is not None:
        return "rid"
    for m in ("question", "prompt", "rid"):
        a = set(_keys(ref, m, None, "ref").dropna())
        b = set(_keys(new, m, None, "new").dropna())
        if a & b:
            return m
    raise EaglelogError("cannot match the requests of the two runs: no common benchmark "
                        "question id, no common prompt hash (SGLang logs the prompt at "
                        "--log-requests-level 2 or 3) and no common request id (give each "
                        "prompt the same rid in both runs, or a mapping with --rid-map FILE)")


def _per_key(t: pd.DataFrame, keys: pd.Series, groups: pd.Series) -> pd.DataFrame:
    """One row per key (prompt): its requests pooled (Σ steps, Σ step tokens), τ when every
    one of its requests has a verify step, and where its first request was."""
    k = keys.to_numpy(dtype=object)
    has = np.array([v is not None and v is not pd.NA and v == v for v in k], dtype=bool)
    steps = pd.to_numeric(t["steps"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    tok = pd.to_numeric(t["step_tokens"], errors="coerce").to_numpy(dtype=float,
                                                                     na_value=np.nan)
    outs = pd.to_numeric(t["output_tokens"], errors="coerce").to_numpy(dtype=float,
                                                                       na_value=np.nan)
    idx = np.flatnonzero(has)
    codes, uniq = pd.factorize(pd.Series(k[idx], dtype=object), sort=False)
    m = len(uniq)
    # a verify step yields at least one token: a request with steps but no positive step
    # tokens (completion_tokens 0 or 1 with a verify count) has no accept length, and its
    # log ratio would be -inf or nan (issue 36)
    ok = (steps[idx] > 0) & np.isfinite(tok[idx]) & (tok[idx] > 0)
    first = np.full(m, -1, dtype=np.int64)
    seen = np.zeros(m, dtype=bool)
    for j, c in enumerate(codes):           # the first request of each key, in input order
        if not seen[c]:
            seen[c] = True
            first[c] = idx[j]
    n_req = np.bincount(codes, minlength=m)
    all_ok = np.bincount(codes, weights=ok.astype(float), minlength=m) == n_req
    ssum = np.bincount(codes, weights=np.nan_to_num(steps[idx]), minlength=m)
    tsum = np.bincount(codes, weights=np.nan_to_num(tok[idx]), minlength=m)
    osum = np.bincount(codes, weights=np.nan_to_num(outs[idx]), minlength=m)
    tau = np.where(all_ok & (ssum > 0), tsum / np.where(ssum > 0, ssum, 1), np.nan)
    return pd.DataFrame({
        "requests": n_req, "steps": ssum, "step_tokens": tsum, "ok": all_ok,
        "output_tokens": osum, "source": t["source"].astype(str).to_numpy()[first],
        "line_no": t["line_no"].to_numpy(dtype=float, na_value=np.nan)[first],
        "id": t["id"].astype(object).to_numpy()[first],
        "group": groups.to_numpy(dtype=object)[first], "tau": tau},
        index=pd.Index(list(uniq), dtype=object, name="key"))


def _table_of(x, engine: str) -> tuple[pd.DataFrame, str]:
    """The request table of a path / ParsedLog, or a table itself (RequestsResult.to_frame(),
    request_table()), and a name for it."""
    if isinstance(x, pd.DataFrame):
        missing = [c for c in REQUEST_COLUMN_NAMES if c not in x.columns]
        if missing:
            raise EaglelogError("a request table needs the columns of "
                                f"eaglelog.schema.REQUEST_COLUMNS; missing: "
                                f"{', '.join(missing)}")
        return x.reset_index(drop=True), ", ".join(dict.fromkeys(x["source"].astype(str)))
    log = _load(x, engine)
    return request_table(log), ", ".join(s.name for s in log.sources)


def compare_paired(ref, new, *, match: str = "auto", rid_map=None, by: str | None = None,
                   confidence: float = 0.95, worst: int = 10,
                   engine: str = "auto") -> PairedResult:
    """Paired A/B on matched prompts: the per-prompt accept-length ratio τ_new / τ_ref, tested
    with a one-sample t-test on the log ratios; per-group wins and losses (Holm-adjusted); the
    prompts that got worse; the unmatched share of each run, never dropped silently.

    ``match``: 'question' (benchmark question id), 'prompt' (SGLang prompt hash), 'rid' (the
    same request id, or ``rid_map``: a dict ref rid -> new rid or a file of pairs), 'auto'
    (the first of these the two runs share).  A prompt sent several times in one run is pooled
    (Σ step tokens / Σ steps over its requests).

    >>> r = eaglelog.compare_paired("ref.jsonl", "new.jsonl", by="category")
    >>> print(r.verdict, r.ratio.estimate, r.p_value)
    """
    if match not in MATCHES:
        raise EaglelogError(f"match={match!r}: choose from {', '.join(MATCHES)}")
    if by is not None and by not in GROUPINGS:
        raise EaglelogError(f"by={by!r}: choose from {', '.join(GROUPINGS)}")
    if isinstance(rid_map, (str, os.PathLike)):
        rid_map = read_rid_map(os.fspath(rid_map))
    if rid_map is not None and match not in ("auto", "rid"):
        raise EaglelogError("a rid map matches by rid: use match='rid' (--match rid)")
    a, ra = _table_of(ref, engine)
    b, rb = _table_of(new, engine)
    for t, name in ((a, ra), (b, rb)):
        if not len(t):
            raise EaglelogError(f"{name}: no finished request to compare (SGLang logs need "
                                "--log-requests; benchmark outputs need per-question records)")
    how = _auto_match(a, b, rid_map) if match == "auto" else match
    ka, kb = _keys(a, how, rid_map, "ref"), _keys(b, how, rid_map, "new")
    if by is None and (a["category"].notna().any() or b["category"].notna().any()):
        by = "category"
    ga, gb = group_keys(a, by), group_keys(b, by)
    pa, pb = _per_key(a, ka, ga), _per_key(b, kb, gb)
    common = pa.index.intersection(pb.index, sort=False)
    both = pa.loc[common].add_suffix("_ref").join(pb.loc[common].add_suffix("_new"))
    usable = both["tau_ref"].notna() & both["tau_new"].notna()
    pairs = both[usable]
    # execution order: the sum of the prompt's positions in the two runs (each run's requests
    # in input order, which is finishing order for a server log)
    pos_a = pd.Series(np.arange(len(pa)), index=pa.index)
    pos_b = pd.Series(np.arange(len(pb)), index=pb.index)
    when = (pos_a.reindex(pairs.index).to_numpy() + pos_b.reindex(pairs.index).to_numpy())
    pairs = pairs.iloc[np.argsort(when, kind="stable")]
    n_ref_keys, n_new_keys = len(pa), len(pb)
    counts = {"ref_requests": len(a), "new_requests": len(b),
              "ref_without_key": int(ka.isna().sum()), "new_without_key": int(kb.isna().sum()),
              "ref_prompts": n_ref_keys, "new_prompts": n_new_keys, "matched": int(len(pairs)),
              "matched_without_accept_len": int((~usable).sum()),
              "ref_only": int(n_ref_keys - len(common)), "new_only": int(n_new_keys - len(common)),
              "ref_repeated": int((pa["requests"] > 1).sum()),
              "new_repeated": int((pb["requests"] > 1).sum())}
    counts["unmatched_ref"] = _f(1 - len(pairs) / n_ref_keys) if n_ref_keys else None
    counts["unmatched_new"] = _f(1 - len(pairs) / n_new_keys) if n_new_keys else None
    if how == "rid" and rid_map is not None:
        how = "rid-map"
    notes = []
    if counts["ref_only"] or counts["new_only"] or counts["ref_without_key"] or \
            counts["new_without_key"]:
        notes.append(f"unmatched: {counts['ref_only']} of {n_ref_keys} reference prompts and "
                     f"{counts['new_only']} of {n_new_keys} changed prompts have no partner"
                     + (f"; {counts['ref_without_key']} + {counts['new_without_key']} requests "
                        f"carry no {how} key" if counts["ref_without_key"] or
                        counts["new_without_key"] else "")
                     + ": they are counted here and left out of the paired test")
    if counts["matched_without_accept_len"]:
        notes.append(f"{counts['matched_without_accept_len']} matched prompts have no accept "
                     "length in one run (no verify step, or no tokens from its verify steps): "
                     "left out of the test")
    if counts["ref_repeated"] or counts["new_repeated"]:
        notes.append(f"prompts sent several times are pooled per run ({counts['ref_repeated']} "
                     f"in the reference, {counts['new_repeated']} in the changed run)")
    tr = pairs["tau_ref"].to_numpy(dtype=float)
    tn = pairs["tau_new"].to_numpy(dtype=float)
    d = np.log(tn / tr) if len(pairs) else np.empty(0)
    test = paired_t(d, confidence)
    alpha = 1 - confidence
    verdict = _verdict(test["p_value"], test["mean_log"], len(d), alpha)
    pooled = _pooled_ratio(pairs, confidence)
    unpaired = welch_log(tr, tn, confidence)
    groups = ()
    if by is not None and len(pairs):
        names = _group_order(pairs["group_ref"].astype(object), by)
        tests = []
        for g in names:
            m = (pairs["group_ref"] == g).to_numpy()
            dg = d[m]
            tests.append((g, dg, paired_t(dg, confidence)))
        adj = holm([t["p_value"] for _, _, t in tests])
        groups = tuple(PairedGroup(str(g), len(dg), int((dg > 0).sum()), int((dg < 0).sum()),
                                   int((dg == 0).sum()), t["ratio"], t["p_value"], pa_,
                                   _verdict(pa_, t["mean_log"], len(dg), alpha))
                       for (g, dg, t), pa_ in zip(tests, adj))
    frame = pd.DataFrame({
        "key": pairs.index.astype(str), "group": pairs["group_ref"].astype(str).to_numpy(),
        "ref_source": pairs["source_ref"].to_numpy(), "ref_line": pairs["line_no_ref"]
        .astype("Int64").to_numpy(), "ref_id": pairs["id_ref"].to_numpy(),
        "new_source": pairs["source_new"].to_numpy(), "new_line": pairs["line_no_new"]
        .astype("Int64").to_numpy(), "new_id": pairs["id_new"].to_numpy(),
        "tau_ref": tr, "tau_new": tn, "ratio": tn / tr if len(tr) else tr, "log_ratio": d,
        "steps_ref": pairs["steps_ref"].to_numpy(), "steps_new": pairs["steps_new"].to_numpy(),
        "output_tokens_ref": pairs["output_tokens_ref"].to_numpy(),
        "output_tokens_new": pairs["output_tokens_new"].to_numpy()})
    worse_rows = frame[frame["log_ratio"] < 0].sort_values(["log_ratio", "key"],
                                                          kind="stable").head(worst)
    worse = tuple({"key": r["key"], "group": r["group"], "ref": f"{r['ref_source']}:"
                   f"{_int(r['ref_line'])}", "new": f"{r['new_source']}:{_int(r['new_line'])}",
                   "accept_len_ref": _f(r["tau_ref"]), "accept_len_new": _f(r["tau_new"]),
                   "ratio": _f(r["ratio"]), "output_tokens_ref": _int(r["output_tokens_ref"]),
                   "output_tokens_new": _int(r["output_tokens_new"])}
                  for r in worse_rows.to_dict("records"))
    if len(d) < MIN_PAIRS:
        notes.append(f"{len(d)} matched prompts: the paired test needs at least {MIN_PAIRS}")
    # the test takes the prompts as independent; prompts that ran at the same time on a server
    # may share its state: their log ratios, in execution order and less their group's mean,
    # would then be autocorrelated (docs/requests.md)
    tau = None
    server = a["origin"].isin(SERVER_ORIGINS).any() or b["origin"].isin(SERVER_ORIGINS).any()
    if server and len(d) >= MIN_PAIRS:
        resid = d - pd.Series(d).groupby(pairs["group_ref"].astype(str).to_numpy()) \
            .transform("mean").to_numpy()
        tau = stats.autocorr_time(resid)
        if tau >= TAU_WARN:
            notes.append(f"the log ratios of prompts that ran close together look correlated "
                         f"(autocorrelation time {tau:.1f} prompts): the test assumes "
                         "independent prompts, so its p-value may be too small; compare at "
                         "batch size 1, or repeat the runs")
    return PairedResult(ra, rb, how, counts, test["ratio"], _f(test["t"]) if test["t"] is not None
                        and math.isfinite(test["t"]) else test["t"], test["df"],
                        test["p_value"], tau, int((d > 0).sum()), int((d < 0).sum()),
                        int((d == 0).sum()), verdict, pooled, unpaired, by, groups, worse,
                        confidence, tuple(notes), frame)


def _verdict(p: float | None, mean_log: float, n: int, alpha: float) -> str:
    if p is None:
        return "insufficient data"
    if p < alpha and mean_log != 0:
        return "better" if mean_log > 0 else "worse"
    return "no detectable difference"


def _pooled_ratio(pairs: pd.DataFrame, confidence: float) -> Estimate:
    """(Σy_new / Σx_new) / (Σy_ref / Σx_ref) over the matched prompts, prompts as units
    (linearised log ratio, t on n − 1 df)."""
    src = "pooled accept length new / ref on the matched prompts"
    n = len(pairs)
    if not n:
        return insufficient(math.nan, 0, confidence, src)
    yr, xr = pairs["step_tokens_ref"].to_numpy(float), pairs["steps_ref"].to_numpy(float)
    yn, xn = pairs["step_tokens_new"].to_numpy(float), pairs["steps_new"].to_numpy(float)
    Yr, Xr, Yn, Xn = yr.sum(), xr.sum(), yn.sum(), xn.sum()
    r = (Yn / Xn) / (Yr / Xr)
    if n < MIN_PAIRS:
        return insufficient(r, n, confidence, src)
    z = n * (yn / Yn - xn / Xn - yr / Yr + xr / Xr)
    se = math.sqrt(float(np.sum(z * z)) / (n - 1)) / math.sqrt(n)
    t = _tq(n - 1, confidence)
    return Estimate(r, r * math.exp(-t * se), r * math.exp(t * se), n, confidence, se, n - 1,
                    src)
