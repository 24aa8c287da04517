"""`eaglelog latency`: what speculation costs in latency, per load point of a load test, against
its baseline (docs/latency.md has the model; this module implements it).

**One sample is a request.**  A run's requests are independent draws from the latency
distribution at its load point; the per-request lists of ``vllm bench serve --save-detailed``
hold them.  Percentiles are vLLM's own (``numpy.quantile``, linear interpolation): TTFT and
TPOT over completed requests, ITL over every inter-chunk gap of every completed request
pooled.  Their intervals:

* TTFT and TPOT (one value a request): the distribution-free **order-statistic interval**
  [X_(l), X_(u)], l and u the Binomial(n, q) quantiles at α/2 and 1 − α/2 — its coverage is
  at least the level whatever the distribution.  A side the sample cannot bound is said to
  have no bound (p99 needs ≥ 368 requests at 95 %).  (A percentile bootstrap covered the
  true p99 in only 86 % of simulated runs at 200 requests and 91 % at 1,000.)
* ITL (several gaps a request, correlated within it): a **percentile bootstrap over
  requests**: B resamples (default 2,000) of the completed requests with replacement, each
  request's gaps kept together, the pooled percentile recomputed on each; the interval the
  α/2 and 1 − α/2 quantiles of the B values.
* The per-stream tok/s ratio spec / baseline: the same bootstrap of p50 TPOT, the two runs
  resampled independently.  Differences of TTFT/TPOT percentiles: MOVER from the two
  order-statistic intervals; of ITL percentiles: the bootstrap.

**Per-stream tok/s** = 1000 / p50 TPOT (ms): what one user sees after the first token.
**Aggregate tok/s** is the file's own ``output_throughput``, without an interval (one run is
one number).

**Goodput** under an SLO (``ttft=2s,tpot=50ms``; keys ttft, tpot, e2el as vLLM's --goodput)
= requests that completed AND met every bound, per second of the run's duration.  A failed
request counts as sent and not good; a request of one output token has no TPOT and meets a
TPOT bound (vLLM: serve.py:659, 690).  Its interval: the share good / sent has a Wilson interval
(binomial over requests), multiplied by sent / duration (the offered rate the run measured).
A load point **meets** the SLO when the share's lower bound is ≥ the attainment target
(default 0.9), **fails** when its upper bound is below it, else it is unclear.

**Acceptance** (where the files carry it per request: aiperf's records, specdec_bench's
acceptance_rate.json): the accept length's **mean over requests** (one sample is a request — a
request-turn for specdec_bench's generic runs — each weighing the same) with a Student-t
interval, beside the run's **pooled** value (Σ tokens / Σ verify steps: every step weighs the
same, so long requests weigh more; the tool's own number, no interval).  Where a request carries
both its accept length and its TPOT (aiperf), their **Spearman correlation** with the Fisher-z
interval of Bonett & Wright (2000), se = √((1 + ρ²/2) / (n − 3)), and the p50 TPOT of the
requests below and above the median accept length (order-statistic intervals).  A description
of the run's requests, not a causal effect: output length, prompt and load move both.

**Crossover**: the first load point where speculation stops paying — its per-stream tok/s
ratio to the baseline has an interval wholly below 1, or its goodput is below the
baseline's (the difference's interval, by the MOVER method from the two Wilson intervals,
wholly below 0).  Each criterion's first load is reported too.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from ..errors import EaglelogError, UsageProblem
from ..parsers import loadtest
from ..parsers.loadtest import LoadRun
from ..stats import Estimate

QUANTILES = (0.5, 0.9, 0.99)
QNAMES = ("p50", "p90", "p99")
METRICS = ("ttft", "tpot", "itl")
MIN_REQUESTS = 20            # fewer completed requests: no interval ("insufficient data")
RESAMPLES = 2000
SLO_KEYS = ("ttft", "tpot", "e2el")
_CELLS = 2_000_000           # values per bootstrap chunk (memory: 16 MB of floats)


# ------------------------------------------------------------------ the SLO

def parse_slo(slo) -> dict[str, float]:
    """``"ttft=2s,tpot=50ms"`` (or vLLM's ``ttft:2000``; a bare number is ms) → {key: ms}.
    A dict is taken as {key: ms}."""
    if slo is None or slo == "":
        return {}
    if isinstance(slo, dict):
        items = list(slo.items())
    else:
        items = []
        for part in re.split(r"[,\s]+", str(slo).strip()):
            if not part:
                continue
            m = re.fullmatch(r"([A-Za-z0-9_]+)[=:]([0-9.eE+-]+)\s*(ms|s)?", part)
            if m is None:
                raise UsageProblem(f"--slo: cannot read {part!r}: write KEY=VALUE with KEY one "
                                   f"of {', '.join(SLO_KEYS)} and VALUE like 2s or 50ms")
            try:
                v = float(m[2])
            except ValueError:
                raise UsageProblem(f"--slo: {m[2]!r} is not a number") from None
            items.append((m[1], v * (1000.0 if m[3] == "s" else 1.0)))
    out = {}
    for k, v in items:
        k = str(k).lower()
        if k not in SLO_KEYS:
            raise UsageProblem(f"--slo: unknown key {k!r}; known: {', '.join(SLO_KEYS)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v <= 0:
            raise UsageProblem(f"--slo: {k} must be a positive finite time, got {v!r}")
        out[k] = float(v)
    return out


def slo_text(slo: dict[str, float]) -> str:
    return ",".join(f"{k}={v / 1000:g}s" if v >= 1000 else f"{k}={v:g}ms"
                    for k, v in slo.items())


# ------------------------------------------------------------------ results

@dataclass(frozen=True)
class Acceptance:
    """The accept length of one arm at one load point, from per-request values."""
    mean: Estimate                  # mean over requests (tokens/step), Student-t interval
    unit: str                       # what one sample of ``mean`` is ("request", …)
    pooled: float | None            # the run's pooled value (load_runs.accept_len)
    pooled_def: str | None          # how the tool pooled it
    rho: Estimate | None = None     # Spearman(accept length, TPOT) over requests with both
    tpot_low: Estimate | None = None    # p50 TPOT (ms) of requests below the median accept len
    tpot_high: Estimate | None = None   # … above it
    paired: int = 0                 # requests carrying both an accept length and a TPOT
    note: str | None = None         # why there is no relation to TPOT, when there is none

    def to_dict(self) -> dict:
        def e(x):
            return None if x is None else x.to_dict()
        return {"mean": e(self.mean), "unit": self.unit, "pooled": _clean(self.pooled),
                "pooled_def": self.pooled_def, "spearman_tpot": e(self.rho),
                "tpot_p50_low_half_ms": e(self.tpot_low),
                "tpot_p50_high_half_ms": e(self.tpot_high), "paired": self.paired,
                "note": self.note}


@dataclass(frozen=True)
class Arm:
    """One side (spec or baseline) at one load point: its runs' requests pooled."""
    arm: str
    load: float
    sources: tuple[str, ...]
    sent: int                       # requests in the lists (completed + failed)
    completed: int
    duration_s: float
    detailed: bool
    quantiles: dict                 # metric -> {"p50": Estimate (ms), ...}
    per_stream_tok_s: Estimate      # 1000 / p50 TPOT
    output_tok_s: float | None      # the files' own aggregate
    tokens_per_chunk: float | None
    accept_len: float | None
    goodput: Estimate | None = None     # req/s
    slo_share: Estimate | None = None   # share of sent requests meeting the SLO
    slo: str | None = None              # "meets", "fails", "unclear", None without an SLO
    acceptance: Acceptance | None = None    # from per-request accept lengths, when read

    def to_dict(self) -> dict:
        return {"arm": self.arm, "load": _clean(self.load), "sources": list(self.sources),
                "sent": self.sent, "completed": self.completed,
                "duration_s": _clean(self.duration_s), "detailed": self.detailed,
                "quantiles_ms": {m: {q: e.to_dict() for q, e in d.items()}
                                 for m, d in self.quantiles.items()},
                "per_stream_tok_s": self.per_stream_tok_s.to_dict(),
                "output_tok_s": _clean(self.output_tok_s),
                "tokens_per_chunk": _clean(self.tokens_per_chunk),
                "accept_len": _clean(self.accept_len),
                "goodput": None if self.goodput is None else self.goodput.to_dict(),
                "slo_share": None if self.slo_share is None else self.slo_share.to_dict(),
                "slo": self.slo,
                "acceptance": None if self.acceptance is None else self.acceptance.to_dict()}


@dataclass(frozen=True)
class Point:
    load: float
    spec: Arm | None
    baseline: Arm | None
    stream_ratio: Estimate | None       # spec / baseline per-stream tok/s
    diffs: dict                         # metric -> {"p50": Estimate (spec − baseline, ms), …}
    goodput_diff: Estimate | None       # spec − baseline, req/s
    pays: str                           # "yes", "no", "unclear", "n/a"
    verdict: str

    def to_dict(self) -> dict:
        return {"load": _clean(self.load),
                "spec": None if self.spec is None else self.spec.to_dict(),
                "baseline": None if self.baseline is None else self.baseline.to_dict(),
                "stream_ratio": None if self.stream_ratio is None else
                self.stream_ratio.to_dict(),
                "diffs_ms": {m: {q: e.to_dict() for q, e in d.items()}
                             for m, d in self.diffs.items()},
                "goodput_diff": None if self.goodput_diff is None else
                self.goodput_diff.to_dict(),
                "pays": self.pays, "verdict": self.verdict}


@dataclass(frozen=True)
class LatencyResult:
    load_kind: str                  # "rate" (req/s) or "concurrency"
    confidence: float
    resamples: int
    slo: dict
    attainment: float
    points: tuple[Point, ...]
    crossover: dict                 # "per_stream", "goodput", "overall" -> load or None
    meets_up_to: dict               # "spec", "baseline" -> load or None (SLO given)
    verdict: str
    notes: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    method: str = field(default="percentile bootstrap over requests")
    command: str = "latency"

    @property
    def load_unit(self) -> str:
        return "req/s" if self.load_kind == "rate" else "concurrent"

    def to_dict(self) -> dict:
        return {"command": self.command, "confidence": self.confidence,
                "method": self.method, "resamples": self.resamples,
                "load_kind": self.load_kind, "slo_ms": dict(self.slo),
                "attainment": self.attainment,
                "points": [p.to_dict() for p in self.points],
                "crossover": {k: _clean(v) for k, v in self.crossover.items()},
                "meets_up_to": {k: _clean(v) for k, v in self.meets_up_to.items()},
                "verdict": self.verdict, "notes": list(self.notes),
                "errors": list(self.errors)}

    def to_frame(self) -> pd.DataFrame:
        """One row per load point and arm: the percentiles with their intervals (ms),
        per-stream and aggregate tok/s, goodput; the comparison columns on the spec row."""
        rows = []
        accept = any(a is not None and a.acceptance is not None
                     for p in self.points for a in (p.spec, p.baseline))
        for p in self.points:
            for a in (p.spec, p.baseline):
                if a is None:
                    continue
                r = {"load": p.load, "load_kind": self.load_kind, "arm": a.arm,
                     "sent": a.sent, "completed": a.completed, "duration_s": a.duration_s}
                for m in METRICS:
                    for q in QNAMES:
                        e = a.quantiles.get(m, {}).get(q)
                        r[f"{q}_{m}_ms"] = np.nan if e is None else e.estimate
                        r[f"{q}_{m}_ms_low"] = _f(None if e is None else e.ci_low)
                        r[f"{q}_{m}_ms_high"] = _f(None if e is None else e.ci_high)
                r["per_stream_tok_s"] = a.per_stream_tok_s.estimate
                r["per_stream_tok_s_low"] = _f(a.per_stream_tok_s.ci_low)
                r["per_stream_tok_s_high"] = _f(a.per_stream_tok_s.ci_high)
                r["output_tok_s"] = _f(a.output_tok_s)
                r["goodput"] = np.nan if a.goodput is None else a.goodput.estimate
                r["goodput_low"] = _f(None if a.goodput is None else a.goodput.ci_low)
                r["goodput_high"] = _f(None if a.goodput is None else a.goodput.ci_high)
                r["slo"] = a.slo
                spec_row = a is p.spec
                r["stream_ratio"] = _f(p.stream_ratio.estimate) if spec_row and \
                    p.stream_ratio is not None else np.nan
                r["pays"] = p.pays if spec_row else None
                if accept:
                    c = a.acceptance
                    for k, e in (("accept_len_mean", None if c is None else c.mean),
                                 ("accept_tpot_rho", None if c is None else c.rho)):
                        r[k] = np.nan if e is None else e.estimate
                        r[f"{k}_low"] = _f(None if e is None else e.ci_low)
                        r[f"{k}_high"] = _f(None if e is None else e.ci_high)
                    r["accept_len_pooled"] = _f(a.accept_len)
                rows.append(r)
        df = pd.DataFrame(rows)
        df.attrs["confidence"] = self.confidence
        return df


def _clean(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _f(v) -> float:
    return np.nan if v is None else float(v)


# ------------------------------------------------------------------ bootstrap

@dataclass
class _Data:
    """A side's completed requests at one load point, as arrays (ms)."""
    ttft: np.ndarray
    tpot: np.ndarray                # NaN for output ≤ 1 token
    e2el: np.ndarray
    itl: np.ndarray                 # pooled gaps, sorted
    itl_owner: np.ndarray           # the request (0 … n−1) of each gap
    sent: int
    out_tokens: np.ndarray


def _data(runs: list[LoadRun]) -> _Data:
    parts, itl, owner, base, sent = [], [], [], 0, 0
    for r in runs:
        req = r.requests
        ok = req["ok"].to_numpy(dtype=bool, na_value=False)
        sent += len(req)
        idx = np.full(len(req), -1, dtype=np.int64)
        idx[ok] = base + np.arange(int(ok.sum()))
        parts.append(req[ok])
        if len(r.itl_ms):
            itl.append(r.itl_ms)
            owner.append(idx[r.itl_owner])
        base += int(ok.sum())
    req = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    v = np.concatenate(itl) if itl else np.zeros(0)
    o = np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64)
    order = np.argsort(v, kind="stable")
    return _Data(req["ttft_ms"].to_numpy(float), req["tpot_ms"].to_numpy(float),
                 req["e2el_ms"].to_numpy(float), v[order], o[order], sent,
                 req["output_tokens"].to_numpy(dtype=float, na_value=np.nan))


def _quantiles(x: np.ndarray, axis=-1) -> np.ndarray:
    """numpy.quantile (linear) of QUANTILES, NaN left out, along the last axis of a vector or
    the rows of a matrix: (len(QUANTILES),) or (len(QUANTILES), rows).  One sort a row."""
    xs = np.sort(np.atleast_2d(x), axis=1)              # NaN sorts last
    cnt = (~np.isnan(xs)).sum(axis=1)
    rows = np.arange(xs.shape[0])
    out = np.full((len(QUANTILES), xs.shape[0]), np.nan)
    ok = cnt > 0
    for qi, q in enumerate(QUANTILES):
        pos = q * np.maximum(cnt - 1, 0)
        k0 = np.floor(pos).astype(np.int64)
        k1 = np.minimum(k0 + 1, np.maximum(cnt - 1, 0))
        lo, hi = xs[rows, k0], xs[rows, k1]
        out[qi] = np.where(ok, lo + (pos - k0) * (hi - lo), np.nan)
    return out[:, 0] if np.ndim(x) == 1 else out


_BLOCK = 128


def _weighted_quantiles(v: np.ndarray, owner: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """numpy.quantile (linear) of the sample holding v[j] counts[b, owner[j]] times, for every
    row b: (len(QUANTILES), B).  v sorted.  The pooled gaps are cut into blocks of 128: a
    matrix product gives each row's count per block, and only the block holding the wanted
    rank is summed gap by gap."""
    B, n = counts.shape
    M = len(v)
    nb = -(-M // _BLOCK)
    blk = np.arange(M) // _BLOCK
    per_block = np.bincount(owner * nb + blk, minlength=n * nb).reshape(n, nb)
    bcum = np.cumsum(counts.astype(float) @ per_block, axis=1)      # (B, nb)
    total = bcum[:, -1]
    rows = np.arange(B)
    span = np.arange(_BLOCK)

    def at(rank):                                   # the index j of the rank-th value (0-based)
        bi = np.minimum((bcum <= rank[:, None]).sum(axis=1), nb - 1)
        before = np.where(bi > 0, bcum[rows, np.maximum(bi - 1, 0)], 0.0)
        cols = bi[:, None] * _BLOCK + span
        valid = cols < M
        cols = np.minimum(cols, M - 1)
        w = np.where(valid, counts[rows[:, None], owner[cols]], 0)
        c = before[:, None] + np.cumsum(w, axis=1)
        return np.minimum(bi * _BLOCK + (c <= rank[:, None]).sum(axis=1), M - 1)

    out = np.empty((len(QUANTILES), B))
    for qi, q in enumerate(QUANTILES):
        pos = q * (total - 1)
        k0 = np.floor(pos)
        j0, j1 = at(k0), at(k0 + 1)
        out[qi] = v[j0] + (pos - k0) * (v[j1] - v[j0])
    return out


def _boot(d: _Data, B: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Bootstrap replicates, (len(QUANTILES), B), of TPOT's quantiles (the per-stream ratio)
    and ITL's, from one set of resampled requests.  (TTFT's and TPOT's own intervals are
    order-statistic intervals, which need no resampling.)"""
    n = len(d.ttft)
    reps = {m: np.empty((len(QUANTILES), B)) for m in ("tpot", "itl")}
    step = max(1, _CELLS // max(n, 1))
    has_itl = len(d.itl) > 0
    for s in range(0, B, step):
        b = min(step, B - s)
        idx = rng.integers(0, n, size=(b, n))
        reps["tpot"][:, s:s + b] = _quantiles(d.tpot[idx])
        if has_itl:
            counts = np.bincount((idx + n * np.arange(b)[:, None]).ravel(),
                                 minlength=b * n).reshape(b, n)
            reps["itl"][:, s:s + b] = _weighted_quantiles(d.itl, d.itl_owner, counts)
        else:
            reps["itl"][:, s:s + b] = np.nan
    return reps


def _interval(point: float, reps: np.ndarray | None, n: int, conf: float,
              source: str = "bootstrap") -> Estimate:
    if reps is None or n < MIN_REQUESTS or not math.isfinite(point):
        return Estimate(point, None, None, n, conf, source=source)
    reps = reps[np.isfinite(reps)]
    if len(reps) < 10:
        return Estimate(point, None, None, n, conf, source=source)
    a = (1 - conf) / 2
    lo, hi = np.quantile(reps, [a, 1 - a])
    return Estimate(float(point), float(lo), float(hi), n, conf, source=source)


def order_interval(x: np.ndarray, q: float, conf: float) -> tuple[float | None, float | None]:
    """The distribution-free interval of the q-quantile from a sample of independent values
    (NaN left out): [X_(l), X_(u)] with l, u the Binomial(n, q) quantiles at α/2 and 1 − α/2
    (P(X_(l) ≤ ξ_q ≤ X_(u)) ≥ conf whatever the distribution).  A side the sample cannot bound
    is None: with n values no upper bound of the q-quantile exists while q^n > α/2 (p99: fewer
    than 368 requests at 95 %)."""
    xs = np.sort(x[np.isfinite(x)])
    n = len(xs)
    if n == 0:
        return None, None
    k, u = _ranks(n, q, conf)
    return (float(xs[k]) if k >= 0 else None), (float(xs[u]) if u < n else None)


@lru_cache(maxsize=4096)
def _ranks(n: int, q: float, conf: float) -> tuple[int, int]:
    """0-based ranks of the order-statistic interval's ends (−1 / n: no bound that side)."""
    from scipy.stats import binom
    a = (1 - conf) / 2
    k = int(binom.ppf(a, n, q))                    # smallest k with F(k) ≥ α/2
    if binom.cdf(k, n, q) > a:
        k -= 1                                     # largest k with F(k) ≤ α/2: X_(k+1)
    u = int(binom.ppf(1 - a, n, q))                # smallest u with F(u) ≥ 1 − α/2: X_(u+1)
    return k, u


def _exact(x: np.ndarray, point: float, q: float, conf: float) -> Estimate:
    n = int(np.isfinite(x).sum())
    if n < MIN_REQUESTS:
        return Estimate(point, None, None, n, conf, source="order statistics")
    lo, hi = order_interval(x, q, conf)
    return Estimate(point, lo, hi, n, conf, source="order statistics")


def _wilson(k: int, n: int, conf: float) -> tuple[float, float, float]:
    from scipy.stats import binomtest
    if n == 0:
        return math.nan, math.nan, math.nan
    ci = binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    return k / n, float(ci.low), float(ci.high)


# ------------------------------------------------------------------ one side at one load

def _arm(name: str, load: float, runs: list[LoadRun], slo: dict, attainment: float,
         conf: float, B: int, rng: np.random.Generator):
    """(Arm, bootstrap replicates or None)."""
    sources = tuple(dict.fromkeys(f"{r.source}:{r.line_no}" if r.line_no > 1 else r.source
                                  for r in runs))
    duration = math.fsum(r.run["duration_s"] for r in runs)
    completed = sum(int(r.run["completed"]) for r in runs)
    outs = [r.run.get("total_output_tokens") for r in runs]
    out_tok_s = math.fsum(outs) / duration if all(o is not None for o in outs) else (
        runs[0].run.get("output_tok_s") if len(runs) == 1 else None)
    acc = [r.run.get("accept_len") for r in runs if r.run.get("accept_len") is not None]
    accept_len = float(np.mean(acc)) if acc else None
    if not all(r.detailed for r in runs):
        # the files' own numbers only: no intervals, no goodput
        r0 = runs[0].run if len(runs) == 1 else {}
        qs = {m: {q: Estimate(_f(r0.get(f"{'median' if q == 'p50' else q}_{m}_ms")), None,
                              None, None, conf, source="file")
                  for q in QNAMES} for m in METRICS}
        med = qs["tpot"]["p50"].estimate
        pst = Estimate(1000.0 / med if med and math.isfinite(med) else math.nan, None, None,
                       None, conf, source="file")
        failed = sum(int(r.run["failed"] or 0) for r in runs)     # SGLang saves none
        return Arm(name, load, sources, completed + failed,
                   completed, duration, False, qs, pst, out_tok_s, None, accept_len,
                   acceptance=acceptance_of(runs, conf, accept_len)), None
    d = _data(runs)
    n = len(d.ttft)
    if n == 0:
        raise EaglelogError(f"{', '.join(sources)}: no completed request at load {load:g}")
    reps = _boot(d, B, rng) if n >= MIN_REQUESTS else None
    points = {"ttft": _quantiles(d.ttft), "tpot": _quantiles(d.tpot),
              "itl": np.quantile(d.itl, QUANTILES) if len(d.itl) else
              np.full(len(QUANTILES), np.nan)}
    qs = {m: {q: _exact(getattr(d, m), float(points[m][i]), QUANTILES[i], conf)
              for i, q in enumerate(QNAMES)} for m in ("ttft", "tpot")}
    qs["itl"] = {q: _interval(float(points["itl"][i]), None if reps is None else
                              reps["itl"][i], n, conf) for i, q in enumerate(QNAMES)}
    med = qs["tpot"]["p50"]
    pst = Estimate(1000.0 / med.estimate, None if med.ci_high is None else 1000.0 / med.ci_high,
                   None if med.ci_low is None else 1000.0 / med.ci_low, med.n, conf,
                   source=med.source)
    chunks = len(d.itl)
    tokens = np.nansum(np.maximum(d.out_tokens - 1, 0))
    tpc = float(tokens / chunks) if chunks else None
    goodput = share = None
    verdict = None
    if slo:
        good = np.ones(n, dtype=bool)
        if "ttft" in slo:
            good &= d.ttft <= slo["ttft"]
        if "tpot" in slo:
            good &= ~(d.tpot > slo["tpot"])          # NaN (one output token) meets it
        if "e2el" in slo:
            good &= d.e2el <= slo["e2el"]
        k = int(good.sum())
        p, lo, hi = _wilson(k, d.sent, conf)
        rate = d.sent / duration
        share = Estimate(p, lo, hi, d.sent, conf, source="wilson")
        goodput = Estimate(k / duration, lo * rate, hi * rate, d.sent, conf, source="wilson")
        verdict = "meets" if lo >= attainment else "fails" if hi < attainment else "unclear"
    arm = Arm(name, load, sources, d.sent, n, duration, True, qs, pst, out_tok_s, tpc,
              accept_len, goodput, share, verdict, acceptance_of(runs, conf, accept_len))
    return arm, reps


# ------------------------------------------------------------------ acceptance

POOLED = {"aiperf": "over verify steps: aiperf's token-weighted 1 + Σ accepted / Σ steps",
          "specdec_bench": "over streamed chunks: specdec_bench's histogram, Σ tokens / Σ "
                           "chunks",
          "vllm": "over verify steps: the server's counters, 1 + Δaccepted / Δdrafts",
          "sglang": "over verify steps: the server's avg_spec_accept_length"}


def mean_interval(x: np.ndarray, conf: float, source: str = "t") -> Estimate:
    """The mean of independent values with its Student-t interval (none below MIN_REQUESTS
    values or without spread)."""
    from scipy.stats import t as student
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return Estimate(math.nan, None, None, 0, conf, source=source)
    m = float(x.mean())
    if n < MIN_REQUESTS:
        return Estimate(m, None, None, n, conf, source=source)
    h = float(student.ppf(0.5 + conf / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return Estimate(m, m - h, m + h, n, conf, source=source)


def spearman(a: np.ndarray, b: np.ndarray, conf: float) -> Estimate | None:
    """Spearman's ρ of paired values with the Fisher-z interval of Bonett & Wright (2000):
    atanh(ρ) ± z·√((1 + ρ²/2) / (n − 3)).  None with fewer than MIN_REQUESTS pairs or
    without spread on a side."""
    from scipy.stats import norm, spearmanr
    n = len(a)
    if n < MIN_REQUESTS or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    rho = float(spearmanr(a, b).statistic)
    r = min(max(rho, -1 + 1e-12), 1 - 1e-12)
    h = float(norm.ppf(0.5 + conf / 2)) * math.sqrt((1 + r * r / 2) / (n - 3))
    z = math.atanh(r)
    return Estimate(rho, math.tanh(z - h), math.tanh(z + h), n, conf,
                    source="spearman (Bonett-Wright)")


def acceptance_of(runs: list[LoadRun], conf: float,
                  pooled: float | None = None) -> Acceptance | None:
    """The accept length of one arm's runs from their per-request values (aiperf's records,
    specdec_bench's Request_AL), None when no run has any."""
    vals, units, pa, pt, unpaired = [], [], [], [], []
    for r in runs:
        if r.accept is not None and len(r.accept):
            vals.append(np.asarray(r.accept, dtype=float))
            units.append(r.accept_unit or "request")
            unpaired.append(r.run.get("tool") or "?")
        elif r.detailed and "accept_len" in r.requests:
            req = r.requests
            ok = req["ok"].to_numpy(dtype=bool, na_value=False)
            a = req["accept_len"].to_numpy(dtype=float, na_value=np.nan)[ok]
            t = req["tpot_ms"].to_numpy(dtype=float, na_value=np.nan)[ok]
            fin = np.isfinite(a)
            if not fin.any():
                continue
            vals.append(a[fin])
            units.append("request")
            both = fin & np.isfinite(t)
            pa.append(a[both])
            pt.append(t[both])
    if not vals:
        return None
    x = np.concatenate(vals)
    tools = dict.fromkeys(r.run.get("tool") for r in runs if r.run.get("accept_len") is not None)
    pooled_def = "; ".join(POOLED.get(t, str(t)) for t in tools) or None
    a = np.concatenate(pa) if pa else np.zeros(0)
    t = np.concatenate(pt) if pt else np.zeros(0)
    rho = low = high = None
    note = None
    if unpaired:
        note = (f"{', '.join(dict.fromkeys(unpaired))}: the accept lengths cannot be paired "
                "with the requests' times (no per-request times in the file)")
    rho = spearman(a, t, conf)
    if len(a) >= MIN_REQUESTS:
        med = float(np.median(a))
        lo, hi = t[a < med], t[a > med]
        low = _exact(lo, float(_quantiles(lo)[0]), 0.5, conf) if len(lo) else None
        high = _exact(hi, float(_quantiles(hi)[0]), 0.5, conf) if len(hi) else None
    elif len(a) and note is None:
        note = f"{len(a)} requests carry both an accept length and a TPOT (fewer than " \
               f"{MIN_REQUESTS}): no relation to TPOT"
    return Acceptance(mean_interval(x, conf), " / ".join(dict.fromkeys(units)), pooled,
                      pooled_def, rho, low, high, len(a), note)


def _mover(a: Estimate, b: Estimate) -> Estimate:
    """a − b with the MOVER interval from the two (independent) intervals; a side is None
    when a bound it needs is missing."""
    d = a.estimate - b.estimate
    lo = d - math.hypot(a.estimate - a.ci_low, b.ci_high - b.estimate) \
        if a.ci_low is not None and b.ci_high is not None else None
    hi = d + math.hypot(a.ci_high - a.estimate, b.estimate - b.ci_low) \
        if a.ci_high is not None and b.ci_low is not None else None
    n = None if a.n is None or b.n is None else min(a.n, b.n)
    return Estimate(d, lo, hi, n, a.confidence, source="mover")


# ------------------------------------------------------------------ the analysis

def _group(runs: list[LoadRun], arm: str) -> dict[float, list[LoadRun]]:
    out: dict[float, list[LoadRun]] = {}
    for r in runs:
        out.setdefault(r.load, []).append(r)
    return dict(sorted(out.items()))


def _read(x, what: str) -> list[LoadRun]:
    if x is None:
        raise UsageProblem(f"no {what} given")
    if isinstance(x, LoadRun):
        return [x]
    items = [x] if not isinstance(x, (list, tuple)) else list(x)
    if not items:
        raise UsageProblem(f"no {what} given")
    out = []
    for it in items:
        out.extend([it] if isinstance(it, LoadRun) else loadtest.read(it))
    return out


def _load_word(load: float, kind: str) -> str:
    if kind == "rate":
        return "all at once" if load == math.inf else f"{load:g} req/s"
    return f"concurrency {load:g}"


def _ms(v: float) -> str:
    return f"{v:+.0f} ms" if abs(v) >= 10 else f"{v:+.1f} ms"


def span(e: Estimate, fmt) -> str:
    """'[lo, hi]', '[lo, no bound]' / '[no bound, hi]' for a one-sided interval, '' for none."""
    if e.ci_low is None and e.ci_high is None:
        return ""
    lo = "no bound" if e.ci_low is None else fmt(e.ci_low)
    hi = "no bound" if e.ci_high is None else fmt(e.ci_high)
    return f"[{lo}, {hi}]"


def _point_verdict(p_load, kind, spec: Arm | None, base: Arm | None, ratio, diffs, gdiff,
                   pays) -> str:
    where = _load_word(p_load, kind)
    if spec is None or base is None:
        return f"{where}: only {'speculation' if base is None else 'the baseline'} was run"
    parts = []
    if ratio is not None and math.isfinite(ratio.estimate):
        s = f"{ratio.estimate:.2f}× per-stream tok/s"
        if ratio.sufficient:
            s += f" [{ratio.ci_low:.2f}, {ratio.ci_high:.2f}]"
        parts.append(s)
    e = diffs.get("ttft", {}).get("p99")
    if e is not None and math.isfinite(e.estimate):
        parts.append(f"TTFT p99 {_ms(e.estimate)} {span(e, _ms)}".rstrip())
    if gdiff is not None:
        parts.append(f"goodput {spec.goodput.estimate:.2f} vs {base.goodput.estimate:.2f} req/s")
    tail = {"yes": "speculation pays", "no": "speculation does not pay",
            "unclear": "not significant",
            "n/a": "no intervals (needs the per-request data: vLLM's --save-detailed, SGLang's "
                   "--output-details, aiperf's profile_export.jsonl; specdec_bench saves none)"
            }[pays]
    return f"{where}: speculation: " + ", ".join(parts) + f" — {tail}"


def latency(spec, baseline, *, slo=None, attainment: float = 0.9, confidence: float = 0.95,
            resamples: int = RESAMPLES, seed: int = 0) -> LatencyResult:
    """Latency, per-stream and aggregate tok/s and goodput of a speculative load test against
    its baseline, per load point, with the crossover load (docs/latency.md).

    ``spec`` and ``baseline``: ``vllm bench serve --save-result`` files, SGLang
    ``bench_serving --output-file`` JSONL, aiperf ``profile_export_aiperf.json`` /
    ``profile_export.jsonl`` (a path or a list; one run per file or per line), or LoadRun objects
    (``eaglelog.parsers.loadtest.read``).  ``slo``: ``"ttft=2s,tpot=50ms"`` or {key: ms}.
    ``resamples``: bootstrap resamples B; ``seed`` makes them reproducible.

        >>> r = eaglelog.latency(["spec-2qps.json", "spec-4qps.json"],
        ...                      baseline=["base-2qps.json", "base-4qps.json"],
        ...                      slo="ttft=2s,tpot=50ms")
        >>> r.crossover["overall"], r.points[0].verdict
    """
    if not 0.5 <= confidence < 1:
        raise UsageProblem(f"confidence {confidence!r} is not in [0.5, 1)")
    if not 0 < attainment <= 1:
        raise UsageProblem(f"attainment {attainment!r} is not in (0, 1]")
    if int(resamples) < 100:
        raise UsageProblem(f"resamples {resamples!r}: use at least 100")
    slo_ms = parse_slo(slo)
    spec_runs = _read(spec, "speculative run")
    base_runs = _read(baseline, "baseline run (--baseline)")
    kinds = {r.run["load_kind"] for r in spec_runs + base_runs}
    if len(kinds) > 1:
        raise UsageProblem("the runs mix request-rate and concurrency load points: "
                           + "; ".join(f"{r.source}: {r.run['load_kind']} {r.load:g}"
                                       for r in (spec_runs + base_runs)[:4])
                           + " — compare one axis at a time")
    kind = kinds.pop()
    notes = [n for r in spec_runs + base_runs for n in r.notes]
    by_spec, by_base = _group(spec_runs, "spec"), _group(base_runs, "baseline")
    for name, g in (("speculative", by_spec), ("baseline", by_base)):
        for load, rs in g.items():
            if len(rs) > 1:
                notes.append(f"{len(rs)} {name} runs at {_load_word(load, kind)} "
                             f"({', '.join(r.source for r in rs)}): their requests pooled")
    rng = np.random.default_rng(seed)
    B = int(resamples)
    points, chunky = [], []
    for load in sorted(set(by_spec) | set(by_base)):
        s = b = rs = rb = None
        if load in by_spec:
            s, rs = _arm("spec", load, by_spec[load], slo_ms, attainment, confidence, B, rng)
        if load in by_base:
            b, rb = _arm("baseline", load, by_base[load], slo_ms, attainment, confidence, B,
                         rng)
        ratio, diffs, gdiff, pays = None, {}, None, "n/a"
        if s is not None and b is not None:
            ms, mb = s.quantiles["tpot"]["p50"].estimate, b.quantiles["tpot"]["p50"].estimate
            both = rs is not None and rb is not None
            ratio = _interval(mb / ms, rb["tpot"][0] / rs["tpot"][0] if both else None,
                              min(s.completed, b.completed), confidence)
            for m in METRICS:
                diffs[m] = {q: _mover(s.quantiles[m][q], b.quantiles[m][q]) if m != "itl"
                            else _interval(s.quantiles[m][q].estimate -
                                           b.quantiles[m][q].estimate,
                                           rs[m][i] - rb[m][i] if both else None,
                                           min(s.completed, b.completed), confidence)
                            for i, q in enumerate(QNAMES)}
            if s.goodput is not None and b.goodput is not None:
                gdiff = _mover(s.goodput, b.goodput)
            if ratio.sufficient:
                if ratio.ci_high < 1 or (gdiff is not None and gdiff.ci_high < 0):
                    pays = "no"
                elif ratio.ci_low > 1:
                    pays = "yes"
                else:
                    pays = "unclear"
            if s.tokens_per_chunk and b.tokens_per_chunk and \
                    s.tokens_per_chunk > 1.2 * b.tokens_per_chunk:
                chunky.append((s.tokens_per_chunk, b.tokens_per_chunk))
        points.append(Point(load, s, b, ratio, diffs, gdiff, pays,
                            _point_verdict(load, kind, s, b, ratio, diffs, gdiff, pays)))
    if not any(p.spec is not None and p.baseline is not None for p in points):
        raise UsageProblem("no load point has both a speculative and a baseline run: spec at "
                           f"{', '.join(_load_word(x, kind) for x in by_spec)}; baseline at "
                           f"{', '.join(_load_word(x, kind) for x in by_base)}")
    if chunky:
        notes.append(f"speculation streams {min(c[0] for c in chunky):.2f}–"
                     f"{max(c[0] for c in chunky):.2f} tokens per chunk (baseline "
                     f"{max(c[1] for c in chunky):.2f}) at {len(chunky)} load point(s): its ITL "
                     "is the gap between chunks, not between tokens; compare TPOT")
    both = [p for p in points if p.spec is not None and p.baseline is not None]
    cross = {
        "per_stream": next((p.load for p in both if p.stream_ratio is not None and
                            p.stream_ratio.sufficient and p.stream_ratio.ci_high < 1), None),
        "goodput": next((p.load for p in both if p.goodput_diff is not None and
                         p.goodput_diff.ci_high < 0), None)}
    found = [v for v in cross.values() if v is not None]
    cross["overall"] = min(found) if found else None
    meets = {}
    if slo_ms:
        for name in ("spec", "baseline"):
            up = None
            for p in points:
                a = p.spec if name == "spec" else p.baseline
                if a is None:
                    continue
                if a.slo != "meets":
                    break
                up = p.load
            meets[name] = up
    verdict = _verdict(kind, cross, meets, slo_ms, both)
    if any(p.spec is not None and p.spec.completed < 100 or
           p.baseline is not None and p.baseline.completed < 100 for p in points
           if (p.spec or p.baseline).detailed):
        notes.append("fewer than 100 completed requests at a load point: its p99 rests on the "
                     "top one or two requests, and its interval is wide")
    return LatencyResult(kind, confidence, B, slo_ms, attainment, tuple(points), cross, meets,
                         verdict, tuple(dict.fromkeys(notes)))


def _verdict(kind, cross, meets, slo, both) -> str:
    parts = []
    if slo:
        def upto(v):
            return f"up to {_load_word(v, kind)}" if v is not None else "at no measured load"
        parts.append(f"speculation meets the SLO ({slo_text(slo)}) {upto(meets['spec'])}, "
                     f"the baseline {upto(meets['baseline'])}")
    c = cross["overall"]
    if c is None and all(p.pays == "n/a" for p in both):
        parts.append("the crossover cannot be judged: no load point has both runs' "
                     "per-request data, so no interval says speculation loses")
    elif c is None:
        last = both[-1].load
        parts.append(f"no crossover up to {_load_word(last, kind)}: speculation does not "
                     "lose per-stream tok/s" + (" or goodput" if slo else "") +
                     " significantly at any measured load")
    else:
        why = [w for k, w in (("per_stream", "per-stream tok/s"), ("goodput", "goodput"))
               if cross[k] == c]
        parts.append(f"crossover at {_load_word(c, kind)}: speculation stops paying there "
                     f"({' and '.join(why)} below the baseline's)")
    return "; ".join(parts)
