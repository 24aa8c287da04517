"""Acceptance by position: P(accept ≥ i) and the conditional rates from every source that prints
them (docs/acceptance.md).

Sources (shared formats docs, which cite the engines' source):

* SGLang ``Finish:`` lines, ``spec_accept_histogram`` (v0.5.9 →, sglang.md §7.3): index j = drafts
  accepted in one verify, value = how many of the request's verifies accepted j.  The verifies
  that accepted at least i drafts are Σ_{j ≥ i} h[j].
* vLLM V1 ``SpecDecoding metrics: … Per-position acceptance rate: …`` (V1-c →, vllm.md §3.1,
  §3.4): element i − 1 = drafts whose position i was accepted ÷ drafts of the window, which is
  P(accept ≥ i) because a position counts only when every earlier one was accepted; and the
  ``vllm:spec_decode_num_accepted_tokens_per_pos`` counters (vllm.md §3.6), read as windows
  between scrapes (eaglelog.live.metrics).
* llama.cpp ``acceptance rate per position = (…)`` per request and ``#acc rate/pos`` per
  drafting implementation (others.md §1.1), ``vllm bench serve``'s ``Per-position acceptance
  (%)`` and the offline example's ``acceptance at token i`` (others.md §4): whole-run totals.

Statistical model, by what one sample is:

* **request** (SGLang histograms, llama.cpp per-request lines): a request is one independent
  unit; its verifies (drafts) are pooled inside it.  Every rate is a ratio estimator
  R = Σ_r y_r / Σ_r x_r over the requests (x = verifies of the request, y = those that reached
  position i; for the conditional rate x = those that reached i − 1), with the linearised standard
  error and a t interval on n − 1 df (analysis.requests.ratio_estimate; fewer than 10 requests:
  insufficient data).  A request weighs what it verified.
* **window** (vLLM log lines, counter windows): consecutive windows are autocorrelated, so the
  rates are ratios of sums over the windows (drafts, drafts reaching each position) with
  intervals from contiguous batches several integrated autocorrelation times long and a
  delete-one-batch jackknife (stats.jackknife_sums; fewer than 30 windows, or too few batches:
  insufficient data).  A window weighs its drafts.
* **run** (whole-run totals of benchmark tools and llama.cpp's statistics line): one sample,
  no spread to estimate an interval from: the printed values, insufficient data for intervals.

The identity τ = 1 + Σ_i P(accept ≥ i) (each verify commits its accepted drafts and one bonus
token) is checked against the accept length the same source logs; a difference larger than the
printed values' rounding and outside the interval of τ is reported in a note.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import stats
from ..errors import EaglelogError
from ..stats import Estimate, insufficient
from .estimators import MIN_REQUESTS, ratio_estimate
from .results import _scaled
from .requests_table import _f as _num       # a finite float, or None (NA, NaN, not a number)
from .engines import non_draft_tokens

ORIGINS = {
    "sglang-histogram": "SGLang Finish lines: spec_accept_histogram",
    "llamacpp-request": "llama.cpp per-request lines: acceptance rate per position",
    "vllm-response": "saved vLLM responses: metrics.speculative_decoding acceptance_histogram",
    "vllm-window": "vLLM SpecDecoding metrics lines: Per-position acceptance rate",
    "vllm-counters": "vLLM /metrics: spec_decode_num_accepted_tokens_per_pos counters",
    "llamacpp-statistics": "llama.cpp statistics line: #acc rate/pos",
    "vllm-bench-serve": "vllm bench serve: Per-position acceptance (%)",
    "vllm-offline": "vLLM offline example: acceptance at token i",
    "bench": "benchmark output: per-position acceptance",
}
UNITS = {"sglang-histogram": "request", "llamacpp-request": "request",
         "vllm-response": "request", "vllm-window": "window",
         "vllm-counters": "window"}
MODELS = {
    "request": "one sample is a request (its verifies pooled inside it; weight = its verifies); "
               "requests independent: ratio estimators Σy / Σx over the requests, linearised "
               "standard error, t interval on n − 1 df",
    "window": "one sample is a stats window (weight = its drafts); windows autocorrelated: "
              "ratios of sums over the windows, contiguous batches ≥ 3 integrated "
              "autocorrelation times long, delete-one-batch jackknife, t on B − 1 df",
    "run": "one sample: a whole-run total as the tool printed it; no spread to estimate an "
           "interval from",
}
# half a unit of the last printed digit of a per-position value, as a fraction (formats docs)
PP_HALF_ULP = {"llamacpp-request": 0.0005, "vllm-window": 0.0005, "vllm-counters": 5e-7,
               "llamacpp-statistics": 0.0005, "vllm-bench-serve": 0.00005,
               "vllm-offline": 0.005, "sglang-histogram": 0.0, "vllm-response": 0.0}
MAL_HALF_ULP = 0.005      # a mean acceptance length printed with two decimals
TOOL_ORIGIN = {"llama.cpp": "llamacpp-statistics", "vllm.bench_serve": "vllm-bench-serve",
               "vllm.spec_decode_example": "vllm-offline"}


@dataclass(frozen=True)
class Position:
    """Depth i (1-based: the i-th drafted token of a verify).  ``reach`` = P(accept ≥ i),
    ``conditional`` = P(accept ≥ i | accept ≥ i − 1) (= reach at i = 1); ``reached`` and
    ``base`` are the weighted numbers of verifies (drafts) that accepted ≥ i and ≥ i − 1."""

    position: int
    reach: Estimate
    conditional: Estimate
    reached: float
    base: float

    def to_dict(self) -> dict:
        return {"position": self.position, "reach": self.reach.to_dict(),
                "conditional": self.conditional.to_dict(), "reached": _f(self.reached),
                "base": _f(self.base)}


@dataclass(frozen=True)
class Identity:
    """τ = 1 + Σ P(accept ≥ i) against the accept length the source logs."""

    tau: Estimate                 # 1 + Σ P(accept ≥ i), with its interval
    logged: float | None          # the source's own accept length
    logged_as: str                # how ``logged`` was computed
    difference: float | None      # logged − tau
    tolerance: float              # what the printed values' rounding allows
    status: str                   # 'holds', 'within interval', 'mismatch', 'not checked'

    def to_dict(self) -> dict:
        return {"tau": self.tau.to_dict(), "logged": _f(self.logged),
                "logged_as": self.logged_as, "difference": _f(self.difference),
                "tolerance": self.tolerance, "status": self.status}


@dataclass(frozen=True)
class Curve:
    """The per-position acceptance of one source in one run."""

    run: str
    origin: str
    unit: str                     # 'request', 'window' or 'run'
    samples: int                  # requests, windows, or 1
    drafts: float                 # verifies (drafts) behind the curve; NaN when not printed
    k: int                        # deepest position
    positions: tuple[Position, ...]
    identity: Identity
    lines: tuple[int, ...]        # first and last line of the rows used
    autocorr_time: float | None = None   # windows: integrated autocorrelation time (windows)
    batches: int | None = None           # windows: batches of the interval
    notes: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        return ORIGINS.get(self.origin, self.origin)

    @property
    def model(self) -> str:
        return MODELS[self.unit]

    def to_dict(self) -> dict:
        return {"run": self.run, "origin": self.origin, "what": self.what, "unit": self.unit,
                "model": self.model, "samples": self.samples, "drafts": _f(self.drafts),
                "k": self.k, "lines": list(self.lines),
                "autocorr_time": _f(self.autocorr_time), "batches": self.batches,
                "positions": [p.to_dict() for p in self.positions],
                "identity": self.identity.to_dict(), "notes": list(self.notes)}


@dataclass(frozen=True)
class AcceptanceResult:
    curves: tuple[Curve, ...]
    confidence: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        """One object per run (``runs``: its name and its sources' curves), as every analysis
        command prints them."""
        runs: dict[str, list] = {}
        for c in self.curves:
            runs.setdefault(c.run, []).append(c.to_dict())
        return {"command": "acceptance", "confidence": self.confidence,
                "runs": [{"run": r, "curves": cs} for r, cs in runs.items()],
                "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        """One row per curve and position, raw numbers (csv/jsonl/parquet)."""
        rows = []
        for c in self.curves:
            for p in c.positions:
                rows.append({
                    "run": c.run, "origin": c.origin, "unit": c.unit, "samples": c.samples,
                    "drafts": c.drafts, "k": c.k, "position": p.position,
                    "reach": p.reach.estimate, "reach_ci_low": p.reach.ci_low,
                    "reach_ci_high": p.reach.ci_high, "conditional": p.conditional.estimate,
                    "conditional_ci_low": p.conditional.ci_low,
                    "conditional_ci_high": p.conditional.ci_high, "reached": p.reached,
                    "base": p.base, "tau": c.identity.tau.estimate,
                    "tau_logged": c.identity.logged, "identity": c.identity.status,
                    "confidence": self.confidence})
        return pd.DataFrame(rows)


def _f(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


# ----------------------------------------------------------------------------- estimators

def _identity(tau: Estimate, logged: float | None, logged_as: str, tol: float) -> Identity:
    if logged is None or not math.isfinite(logged) or not math.isfinite(tau.estimate):
        return Identity(tau, logged, logged_as, None, tol, "not checked")
    diff = logged - tau.estimate
    if abs(diff) <= tol + 1e-9:
        status = "holds"
    elif tau.sufficient and tau.ci_low - tol <= logged <= tau.ci_high + tol:
        status = "within interval"
    else:
        status = "mismatch"
    return Identity(tau, logged, logged_as, diff, tol, status)


def _identity_note(idt: Identity, confidence: float) -> str | None:
    if idt.status != "mismatch":
        return None
    where = (f"outside its {confidence:.0%} interval [{idt.tau.ci_low:.4f} … "
             f"{idt.tau.ci_high:.4f}]" if idt.tau.sufficient else "with no interval to absorb it")
    return (f"τ = 1 + Σ P(accept ≥ i) = {idt.tau.estimate:.4f} but the logged accept length is "
            f"{idt.logged:.4f} ({idt.logged_as}): a difference of {idt.difference:+.4f}, more "
            f"than the printed values' rounding allows (±{idt.tolerance:.4g}) and {where}; "
            "positions missing from the list, retracted requests, or a changing k break it")


def _by_requests(x: np.ndarray, y: np.ndarray, confidence: float, half_ulp: float = 0.0,
                 bases: np.ndarray | None = None):
    """x: verifies per request (n); y: n × k verifies per request reaching position i;
    ``half_ulp``: the rounding of printed per-position values (a floor of the error);
    ``bases``: n × k verifies that could reach position i — drafted it and accepted i − 1 —
    when a verify's k varies (vLLM per-step counts); else those that accepted i − 1."""
    n, k = y.shape
    positions = []
    prev = x
    for i in range(k):
        if bases is not None:
            prev = bases[:, i]
        reach = ratio_estimate(y[:, i], x, confidence)
        cond = reach if i == 0 else ratio_estimate(y[:, i], prev, confidence)
        if bases is not None and i == 0:
            cond = ratio_estimate(y[:, i], prev, confidence)
        reach, cond = _zero(reach, y[:, i], x), _zero(cond, y[:, i], prev)
        p_prev = positions[-1].reach.estimate if positions else 1.0
        positions.append(Position(i + 1, _floor(reach, half_ulp),
                                  _floor(cond, half_ulp, p_prev, reach.estimate),
                                  float(y[:, i].sum()), float(prev.sum())))
        prev = y[:, i]
    tau = ratio_estimate(x + y.sum(axis=1), x, confidence)
    return tuple(positions), _floor(tau, half_ulp * k)


def _zero(e: Estimate, y: np.ndarray, base: np.ndarray) -> Estimate:
    """A position nothing reached: the estimate 0 (NaN when nothing reached the one before),
    no interval (insufficient data)."""
    if float(np.sum(y)) > 0:
        return e
    return insufficient(0.0 if float(np.sum(base)) > 0 else math.nan, e.n or 0, e.confidence)


def _floor(e: Estimate, half_ulp: float, p_prev: float | None = None,
           p: float | None = None) -> Estimate:
    """An interval no narrower than the rounding of the printed values allows: a value printed
    to ±h carries a standard uncertainty h / √3 (uniform rounding error), as
    stats.weighted_mean's ``resolution``.  For a conditional rate P_i / P_{i−1} both terms'
    relative rounding adds."""
    if not half_ulp or not e.sufficient or not e.estimate > 0:
        return e
    if p_prev is not None and p is not None and p > 0 and p_prev < 1.0:
        floor = half_ulp / math.sqrt(3) * math.sqrt(1 / p ** 2 + 1 / p_prev ** 2)
    else:
        floor = half_ulp / math.sqrt(3) / e.estimate
    if e.se_log is not None and e.se_log >= floor:
        return e
    return stats.from_log_se(e.estimate, floor, e.df, e.n, e.confidence, e.source)


def _by_windows(d: np.ndarray, c: np.ndarray, acc: np.ndarray, confidence: float,
               half_ulp: float = 0.0):
    """d: drafts per window (n, time order); c: n × k drafts reaching position i; acc:
    accepted tokens per window.  Returns (positions, tau, tau_logged, facts)."""
    n, k = c.shape
    blocks = stats.Blocks.of([d] + [c[:, i] for i in range(k)] + [acc])

    def f(tot):
        with np.errstate(divide="ignore", invalid="ignore"):
            dd, cc = tot[0], tot[1:k + 1]
            reach = cc / dd
            prev = np.concatenate([[dd], cc[:-1]])
            cond = cc / prev
            tau = 1.0 + cc.sum() / dd
        return np.concatenate([reach, cond, [tau]])
    ests, facts = stats.jackknife_sums(blocks, f, confidence)
    tot = blocks.sums.sum(axis=0)
    positions = []
    prev = tot[0]
    for i in range(k):
        cnt = tot[1 + i]
        reach = ests[i] if cnt > 0 else insufficient(0.0, n, confidence)
        cond = ests[k + i] if cnt > 0 else insufficient(0.0 if prev > 0 else math.nan, n,
                                                         confidence)
        p_prev = positions[-1].reach.estimate if positions else 1.0
        reach = _floor(reach, half_ulp)
        cond = reach if i == 0 else _floor(cond, half_ulp, p_prev, reach.estimate)
        positions.append(Position(i + 1, reach, cond, float(cnt), float(prev)))
        prev = cnt
    logged = 1.0 + float(acc.sum()) / float(d.sum()) if d.sum() > 0 else None
    return tuple(positions), _floor(ests[2 * k], half_ulp * k), logged, facts


def _total(pp: list[float], drafts: float | None, confidence: float):
    """A whole-run total: the printed values, no interval."""
    positions = []
    prev = 1.0
    d = drafts if drafts is not None and math.isfinite(drafts) else math.nan
    for i, p in enumerate(pp):
        cond = p / prev if prev > 0 else math.nan
        positions.append(Position(i + 1, insufficient(p, 1, confidence),
                                  insufficient(cond, 1, confidence), p * d, prev * d))
        prev = p
    return tuple(positions), insufficient(1.0 + sum(pp), 1, confidence)


# ----------------------------------------------------------------------------- sources

def _pp(text) -> list[float] | None:
    if text is None or text is pd.NA or (isinstance(text, float) and math.isnan(text)):
        return None
    try:
        v = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(v, list) or not v:
        return None
    return [float(x) for x in v]


def _pad(rows: list[list[float]]) -> np.ndarray:
    k = max(len(r) for r in rows)
    return np.array([r + [0.0] * (k - len(r)) for r in rows], dtype=float)


def _k_note(lengths: set[int], unit: str) -> list[str]:
    if len(lengths) <= 1:
        return []
    return [f"the per-position lists have different lengths "
            f"({', '.join(map(str, sorted(lengths)))})"
            f": a {unit} with fewer positions counts as not reaching the deeper ones, so the deep "
            "positions mix configurations (a changing k)"]


def _sglang_curve(run: str, req: pd.DataFrame, confidence: float,
                  non_draft: int = 1) -> Curve | None:
    """``non_draft``: the tokens a verify commits besides its correct drafts (1, the bonus;
    SGLang's UNO 2: analysis/engines.non_draft_tokens) — the identity then compares
    τ = 1 + Σ P(accept ≥ i) with Σ (completion − 1) / Σ verify_ct − (non_draft − 1)."""
    if not len(req) or "accept_histogram" not in req.columns:
        return None
    hist, lines, comp, vct, accd, notes = [], [], [], [], [], []
    bad_sum = bad_acc = 0
    has = req["accept_histogram"].notna().to_numpy(dtype=bool)
    without = int((~has).sum())
    for row in req[has].itertuples(index=False):
        h = _pp(row.accept_histogram)
        if h is None or sum(h) <= 0 or min(h) < 0:
            without += 1          # unreadable, or no verify: counted in the note
            continue
        hist.append(h)
        lines.append(int(row.line_no))
        comp.append(_num(row.completion_tokens))
        vct.append(_num(row.verify_ct))
        accd.append(_num(getattr(row, "accepted_drafts", None)))
        if vct[-1] is not None and sum(h) != vct[-1]:
            bad_sum += 1
        if accd[-1] is not None and sum(j * v for j, v in enumerate(h)) != accd[-1]:
            bad_acc += 1
    if not hist:
        return None
    H = _pad(hist)
    x = H.sum(axis=1)
    # y[:, i - 1] = verifies that accepted at least i drafts
    y = np.cumsum(H[:, ::-1], axis=1)[:, ::-1][:, 1:]
    if y.shape[1] == 0:
        return None
    positions, tau = _by_requests(x, y, confidence)
    ok = [(c, v) for c, v in zip(comp, vct) if c is not None and v is not None and v > 0]
    logged = (sum(c - 1 for c, _ in ok) / sum(v for _, v in ok)) - (non_draft - 1) \
        if len(ok) == len(hist) else None
    idt = _identity(tau, logged, "Σ (completion − 1) / Σ verify_ct over the same requests"
                    + (f", less the {non_draft - 1} more non-draft token a UNO verify commits"
                       if non_draft > 1 else ""), 0.0)
    if without:
        notes.append(f"{without:,} request(s) without a usable spec_accept_histogram left out "
                     "(SGLang prints it from v0.5.9 on)")
    if bad_sum:
        notes.append(f"{bad_sum:,} request(s) whose histogram does not sum to spec_verify_ct "
                     "(sglang.md §7.3 identity)")
    if bad_acc:
        notes.append(f"{bad_acc:,} request(s) where Σ j·h[j] ≠ accepted drafts "
                     "(sglang.md §7.3 identity)")
    return _finish(Curve(run, "sglang-histogram", "request", len(hist), float(x.sum()),
                         y.shape[1], positions, idt, (min(lines), max(lines)),
                         notes=tuple(notes)), confidence)


def _llama_request_curve(run: str, b: pd.DataFrame, confidence: float) -> Curve | None:
    rows, d, acc, lines = [], [], [], []
    no_drafts = 0
    for r in b.itertuples(index=False):
        pp = _pp(r.per_position)
        if pp is None:
            continue
        drafts = _num(getattr(r, "drafts", None))
        a = _num(getattr(r, "accepted_tokens", None))
        mal = _num(getattr(r, "accept_len", None))
        if drafts is None and a is not None and mal is not None and mal > 1:
            drafts = float(round(a / (mal - 1)))     # others.md §1.1: MAL = 1 + acc / drafts
        if not drafts or a is None:
            no_drafts += 1
            continue
        rows.append(pp)
        d.append(drafts)
        acc.append(a)
        lines.append(int(r.line_no))
    if not rows:
        return None
    P = _pad(rows)
    x = np.asarray(d)
    y = P * x[:, None]
    positions, tau = _by_requests(x, y, confidence, PP_HALF_ULP["llamacpp-request"])
    logged = 1.0 + sum(acc) / float(x.sum())
    tol = P.shape[1] * PP_HALF_ULP["llamacpp-request"] + MAL_HALF_ULP
    idt = _identity(tau, logged, "1 + Σ accepted / Σ drafts (drafts = accepted / (MAL − 1))",
                    tol)
    notes = _k_note({len(r) for r in rows}, "request")
    if no_drafts:
        notes.append(f"{no_drafts:,} request line(s) left out: no draft count to weigh them "
                     "(mean acceptance length 1.00, nothing accepted)")
    return _finish(Curve(run, "llamacpp-request", "request", len(rows), float(x.sum()),
                         P.shape[1], positions, idt, (min(lines), max(lines)),
                         notes=tuple(notes)), confidence)


def _vllm_response_curve(run: str, b: pd.DataFrame, confidence: float,
                         cfg: dict | None) -> Curve | None:
    """Saved vLLM responses (``--per-request-spec-decode-metrics``, parsers/requests_bench.py):
    one request a sample, its ``acceptance_histogram`` (index j = steps that accepted j drafts)
    as SGLang's.  With the ``detailed`` per-step lists the conditional rate at i counts only the
    steps that drafted position i (dynamic speculative decoding: vllm 0.34.0
    v1/metrics/stats.py:389–395 records each step's proposed count); without them, a
    per-batch-size schedule or steps that drafted fewer than num_spec_tokens make the deep
    conditional rates lower bounds, and a note says so."""
    hist, x, bases, lines, mal = [], [], [], [], []
    short = sched = False
    with_steps = 0
    for r in b.itertuples(index=False):
        st = _stats(getattr(r, "stats", None))
        h = st.get("acceptance_histogram")
        if not (isinstance(h, list) and h and all(isinstance(v, (int, float)) and v >= 0
                                                    for v in h)) or sum(h) <= 0:
            continue
        hist.append([float(v) for v in h])
        x.append(float(sum(h)))
        lines.append(int(r.line_no))
        mal.append(_num(getattr(r, "accept_len", None)))
        ge, cb = st.get("drafted_ge"), st.get("cond_base")
        bases.append(cb if isinstance(cb, list) and isinstance(ge, list) else None)
        with_steps += bases[-1] is not None
        k = _num(getattr(r, "max_draft_len", None))
        dt = _num(getattr(r, "draft_tokens", None))
        if k and dt is not None and dt < k * x[-1] - 0.5:
            short = True
    if not hist:
        return None
    sched = bool((cfg or {}).get("speculative_num_speculative_tokens_per_batch_size"))
    H = _pad(hist)
    y = np.cumsum(H[:, ::-1], axis=1)[:, ::-1][:, 1:]
    if y.shape[1] == 0:
        return None
    xs = np.asarray(x)
    notes = []
    B = None
    if with_steps == len(hist):
        B = np.zeros_like(y)
        for i, cb in enumerate(bases):
            n = min(len(cb), B.shape[1])
            B[i, :n] = cb[:n]
        if short or sched:
            notes.append("per-step draft counts (per_step_drafted) read: the conditional rate "
                         "at i counts only the steps that drafted position i")
    elif short or sched:
        why = ("the config sets num_speculative_tokens_per_batch_size" if sched else
               "steps drafted fewer tokens than num_spec_tokens")
        notes.append(f"{why} (dynamic speculative decoding) and the responses carry no "
                     "per-step lists (--per-request-spec-decode-metrics detailed): a step that "
                     "never drafted position i counts as rejected there, so P(≥ i | ≥ i − 1) "
                     "at the deep positions is a lower bound")
    if 0 < with_steps < len(hist):
        notes.append(f"{with_steps:,} of {len(hist):,} responses carry per-step lists: the "
                     "conditional rates use none of them (mixed levels)")
    positions, tau = _by_requests(xs, y, confidence, bases=B)
    logged = [m for m in mal if m is not None]
    log_tau = (float(np.dot([m for m in mal], xs)) / float(xs.sum())
               if len(logged) == len(mal) else None)
    idt = _identity(tau, log_tau, "the responses' mean_acceptance_length, weighted by their "
                    "num_spec_steps", 1e-9)
    return _finish(Curve(run, "vllm-response", "request", len(hist), float(xs.sum()),
                         y.shape[1], positions, idt, (min(lines), max(lines)),
                         notes=tuple(notes)), confidence)


def _stats(text) -> dict:
    if not isinstance(text, str):
        return {}
    try:
        v = json.loads(text)
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def vllm_rows(s: pd.DataFrame):
    """The windows of vLLM SpecDecoding rows that carry a per-position list, in time order:
    (per-position lists, drafts, accepted, line numbers, lossy drafts, elided, without a list)."""
    s = s.sort_values("line_no", kind="stable")
    rows, d, acc, lines, lossy = [], [], [], [], False
    elided = no_pp = 0
    for r in s.itertuples(index=False):
        pp = _pp(r.per_position)
        if pp is None:
            no_pp += 1
            continue
        if getattr(r, "per_position_elided", False) is True:
            elided += 1
            continue
        drafts = _num(r.drafts)
        a = _num(getattr(r, "window_accepted", None))
        if not drafts or a is None:
            continue
        lossy = lossy or str(getattr(r, "drafts_from", "")) == "accepted/(mal-1)"
        rows.append(pp)
        d.append(drafts)
        acc.append(a)
        lines.append(int(r.line_no))
    return rows, d, acc, lines, lossy, elided, no_pp


def dynamic_k_note(s: pd.DataFrame, k: int, cfg: dict | None) -> str | None:
    """vLLM's per-position acceptance rate is accepted-at-i over **every** draft (vllm 0.34.0
    v1/spec_decode/metrics.py:114–117), so under dynamic speculative decoding
    (``num_speculative_tokens_per_batch_size``, 0.24 →) a draft of fewer tokens than the
    positions listed counts as rejected at the positions it never drafted.  Said when the
    config holds a per-batch-size schedule, or when the windows drafted fewer tokens a draft
    than there are positions (drafts recovered as accepted / (MAL − 1), the only count that
    does not assume k)."""
    sched = (cfg or {}).get("speculative_num_speculative_tokens_per_batch_size")
    mean_k = None
    if {"drafts", "window_draft_tokens", "drafts_from"} <= set(s.columns):
        m = (s["drafts_from"].astype(str) == "accepted/(mal-1)").to_numpy()
        d = s["drafts"].to_numpy(dtype=float, na_value=np.nan)[m]
        t = s["window_draft_tokens"].to_numpy(dtype=float, na_value=np.nan)[m]
        ok = np.isfinite(d) & np.isfinite(t) & (d > 0)
        if ok.sum() and d[ok].sum() > 0:
            mean_k = float(t[ok].sum() / d[ok].sum())
    short = mean_k is not None and mean_k < k - 0.05
    if not (sched or short):
        return None
    why = ("the config sets num_speculative_tokens_per_batch_size (dynamic speculative "
           "decoding)" if sched else
           f"the windows drafted {mean_k:.2f} tokens a draft, fewer than the {k} positions "
           "listed (dynamic or truncated drafts)")
    return (f"{why}: vLLM's per-position rate counts every draft in its denominator, so a "
            "position a draft never reached reads as rejected — P(accept ≥ i) here is per "
            "draft, and P(≥ i | ≥ i − 1) at the deep positions is a lower bound, not the draft "
            "model's conditional acceptance")


def drafted_shares(it: pd.DataFrame | None, k: int) -> np.ndarray | None:
    """S_i, i = 1 … k: the share of request-steps that drafted ≥ i tokens, from vLLM's
    ``Iteration(N)`` lines (``--enable-logging-iteration-details``).  A generation request is
    scheduled 1 + its drafts (vllm 0.34.0 v1/core/sched/scheduler.py:855–858
    ``num_tokens_with_spec − num_computed_tokens``; v1/utils.py:835–862 sums them per
    iteration), so an iteration's K is generation tokens / generation requests − 1 (one K an
    iteration: a per-batch-size schedule gives the batch one K).  None without such lines, or
    when every step drafted k (nothing to correct)."""
    if it is None or not len(it) or not {"gen_req", "gen_tokens"} <= set(it.columns):
        return None
    if "dummy" in it.columns:
        it = it[~it["dummy"].astype("boolean").fillna(False).to_numpy(dtype=bool)]
    r = it["gen_req"].to_numpy(dtype=float, na_value=np.nan)
    t = it["gen_tokens"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(r) & np.isfinite(t) & (r > 0)
    if not ok.any():
        return None
    kk = np.clip(np.rint(t[ok] / r[ok] - 1.0), 0, k)
    w = r[ok]
    shares = np.array([float(w[kk >= i].sum()) for i in range(1, k + 1)]) / float(w.sum())
    return shares if shares[-1] < 1.0 - 1e-9 else None


def _per_drafted(positions: tuple, shares: np.ndarray) -> tuple:
    """The conditional rates under a K per step, from the per-draft reaches P_i and the
    shares S_i that drafted ≥ i: a step that drafts d tokens accepts min(L, d), L the draft's
    own run of acceptances, independent of d (the schedule picks K by batch size, not by
    content), so P(L ≥ i) = P_i / S_i and the conditional is its ratio to P(L ≥ i − 1).  The
    shares are counts, not estimates: the intervals scale with the estimate."""
    out = []
    prev = 1.0
    for pos, s in zip(positions, shares):
        if s <= 0 or not math.isfinite(pos.reach.estimate):
            out.append(pos)
            prev = math.nan
            continue
        tail = pos.reach.estimate / s
        f = (tail / prev) / pos.conditional.estimate if (
            pos.conditional.estimate > 0 and prev > 0 and math.isfinite(prev)) else math.nan
        cond = _scaled(pos.conditional, f) if math.isfinite(f) else pos.conditional
        out.append(Position(pos.position, pos.reach, cond, pos.reached, pos.base))
        prev = tail
    return tuple(out)


def _vllm_curves(run: str, spec: pd.DataFrame, confidence: float,
                 cfg: dict | None = None, iterations: pd.DataFrame | None = None) -> list[Curve]:
    if not len(spec) or "per_position" not in spec.columns:
        return []
    out = []
    metrics = (spec["variant"].astype(str) == "metrics").to_numpy(dtype=bool)
    for origin, mask in (("vllm-window", ~metrics), ("vllm-counters", metrics)):
        s = spec[mask]
        if not len(s):
            continue
        rows, d, acc, lines, lossy, elided, no_pp = vllm_rows(s)
        if not rows:
            continue
        P = _pad(rows)
        dd = np.asarray(d)
        positions, tau, logged, facts = _by_windows(dd, P * dd[:, None], np.asarray(acc),
                                                    confidence, PP_HALF_ULP[origin])
        tol = P.shape[1] * PP_HALF_ULP[origin] + (MAL_HALF_ULP if lossy else 0.0)
        idt = _identity(tau, logged, "1 + Σ accepted / Σ drafts of the same windows", tol)
        notes = _k_note({len(r) for r in rows}, "window")
        dyn = dynamic_k_note(s, P.shape[1], cfg)
        shares = drafted_shares(iterations, P.shape[1]) if origin == "vllm-window" else None
        if shares is not None:
            positions = _per_drafted(positions, shares)
            notes.append("Iteration lines: " + ", ".join(
                f"{100 * x:.0f} %" for x in shares) + " of the request-steps drafted ≥ 1 … "
                f"{P.shape[1]} tokens; the conditional rates are the draft's own, "
                "P(L ≥ i) / P(L ≥ i − 1) with P(L ≥ i) = P(accept ≥ i) / share(≥ i) (K chosen "
                "per batch, independent of content); P(accept ≥ i) stays per draft")
        elif dyn:
            notes.append(dyn)
        if elided:
            notes.append(f"{elided:,} window(s) left out: their per-position list was shortened "
                         "with '...'")
        if no_pp and origin == "vllm-window":
            notes.append(f"{no_pp:,} window(s) without a per-position list (vLLM prints it from "
                         "V1-c on; V0 never) left out")
        if lossy:
            notes.append("drafts recovered as accepted / (MAL − 1) in some windows (k not fixed):"
                         " weights lossy at the printed two decimals")
        dps = s["dp"].dropna().nunique() if "dp" in s.columns else 0
        if dps > 1:
            notes.append(f"windows of {dps} engines (DP ranks) pooled in time order")
        out.append(_finish(Curve(run, origin, "window", len(rows), float(dd.sum()), P.shape[1],
                                 positions, idt, (min(lines), max(lines)),
                                 autocorr_time=_f(facts.get("tau")),
                                 batches=facts.get("batches") or None, notes=tuple(notes)),
                           confidence))
    return out


def _bench_curves(run: str, b: pd.DataFrame, confidence: float) -> list[Curve]:
    out = []
    for r in b.itertuples(index=False):
        pp = _pp(r.per_position)
        if pp is None:
            continue
        origin = TOOL_ORIGIN.get(str(r.tool), "bench")
        drafts = _num(getattr(r, "drafts", None))
        positions, tau = _total(pp, drafts, confidence)
        derived = _num(getattr(r, "accept_len_derived", None))
        printed = _num(getattr(r, "accept_len", None))
        half = PP_HALF_ULP.get(origin, _half_ulp(pp))
        if derived is not None:
            logged, how, tol = derived, "1 + accepted / drafts as printed", len(pp) * half
        else:
            logged, how, tol = printed, "the accept length as printed", \
                len(pp) * half + MAL_HALF_ULP
        idt = _identity(tau, logged, how, tol)
        label = getattr(r, "label", None)
        notes = [f"{r.tool}" + (f" {label}" if isinstance(label, str) else "")
                 + f", line {int(r.line_no)}"]
        out.append(_finish(Curve(run, origin, "run", 1,
                                 drafts if drafts is not None else math.nan, len(pp), positions,
                                 idt, (int(r.line_no), int(r.line_no)), notes=tuple(notes)),
                           confidence))
    return out


def _half_ulp(pp: list[float]) -> float:
    dec = max((len(repr(v).split(".")[1]) if "." in repr(v) else 0) for v in pp)
    return 0.5 * 10.0 ** -max(dec, 2)


def _finish(c: Curve, confidence: float) -> Curve:
    notes = list(c.notes)
    n = _identity_note(c.identity, confidence)
    if n:
        notes.append(n)
    if c.unit == "request" and c.samples < MIN_REQUESTS:
        notes.append(f"{c.samples} request(s): intervals need ≥ {MIN_REQUESTS} (insufficient data)")
    elif c.unit == "window" and not c.identity.tau.sufficient:
        notes.append(f"{c.samples} window(s): intervals need ≥ {stats.MIN_UNITS} "
                     "(insufficient data)")
    return Curve(c.run, c.origin, c.unit, c.samples, c.drafts, c.k, c.positions, c.identity,
                 c.lines, c.autocorr_time, c.batches, tuple(notes))


NO_DATA = ("no per-position acceptance in the input(s): looked for SGLang Finish lines with "
           "spec_accept_histogram (v0.5.9+, --log-requests), vLLM 'Per-position acceptance "
           "rate' (V1-c+) or /metrics per-position counters, llama.cpp 'acceptance rate per "
           "position' / '#acc rate/pos', vllm bench serve 'Per-position acceptance (%)', the "
           "vLLM offline example's 'acceptance at token i'")


def acceptance(logs, *, confidence: float = 0.95, engine: str = "auto",
               by: str | None = None) -> AcceptanceResult:
    """The per-position acceptance curve of every source in every run of ``logs`` (a ParsedLog
    or paths).  Raises EaglelogError when no input prints per-position acceptance.

    ``by='context'``: a ``context.ContextResult`` instead — the curve per prompt-length bucket
    of the requests, and the accept length per bucket of the decode windows' mean context per
    running request with its trend (analysis/context.py, docs/acceptance.md 'By context')."""
    from .requests import _load

    if by is not None and by != "context":
        raise EaglelogError(f"--by {by!r}: acceptance groups by 'context' only")
    log = _load(logs, engine=engine)
    if by == "context":
        return by_context(log, confidence)
    curves: list[Curve] = []
    for run, sub in log.units():
        t = sub.tables
        req = t.get("requests")
        if req is not None and len(req):
            c = _sglang_curve(run, req, confidence,
                              non_draft_tokens(sub.config(sub.sources[0].name)))
            if c is not None:
                curves.append(c)
        spec = t.get("vllm_spec")
        if spec is not None and len(spec):
            curves.extend(_vllm_curves(run, spec, confidence,
                                       sub.config(sub.sources[0].name),
                                       t.get("vllm_iterations")))
        b = t.get("bench")
        if b is not None and len(b):
            resp = b[((b["scope"].astype(str) == "request") &
                      (b["tool"].astype(str) == "vllm.response")).to_numpy()]
            if len(resp):
                c = _vllm_response_curve(run, resp, confidence,
                                         sub.config(sub.sources[0].name))
                if c is not None:
                    curves.append(c)
        if b is not None and len(b) and "per_position" in b.columns:
            scope = b["scope"].astype(str)
            per_req = b[(scope == "request").to_numpy() &
                        (b["tool"].astype(str) == "llama.cpp").to_numpy()]
            if len(per_req):
                c = _llama_request_curve(run, per_req, confidence)
                if c is not None:
                    curves.append(c)
            rest = b[~b.index.isin(per_req.index)]
            rest = rest[~rest["scope"].astype(str).isin(("request", "depth")).to_numpy()]
            # llama.cpp's statistics lines are cumulative: differenced, one total per drafter
            from .llamacpp import fold_statistics
            rest, folded = fold_statistics(rest)
            for c in _bench_curves(run, rest, confidence):
                if folded and c.origin == "llamacpp-statistics":
                    c = Curve(**{**c.__dict__, "notes": c.notes + tuple(folded)})
                curves.append(c)
        depth = depth_path_note(b)
        if depth:
            curves = [Curve(**{**c.__dict__, "notes": c.notes + (depth,)})
                      if c.run == run and c.origin.startswith("llamacpp") else c for c in curves]
    if not curves:
        raise EaglelogError(NO_DATA)
    return AcceptanceResult(tuple(curves), confidence)


def depth_path_note(b: pd.DataFrame | None) -> str | None:
    """llama.cpp's adaptive MTP drafter (--spec-type draft-mtp-adaptive) changes each
    sequence's draft depth as it runs ('depth' rows of the bench table, parsers/llamacpp.py
    ``parse_depth``); its per-position rates divide by every verification step, so a position
    beyond the depth in force reads as rejected.  The note gives the path and says so."""
    if b is None or not len(b) or "scope" not in b.columns:
        return None
    d = b[(b["scope"].astype(str) == "depth").to_numpy()]
    if not len(d):
        return None
    to = d["max_draft_len"].to_numpy(dtype=float, na_value=np.nan)
    frm = np.array([_stats(x).get("depth_from", np.nan) for x in d["stats"]], dtype=float) \
        if "stats" in d.columns else np.full(len(d), np.nan)
    seqs = d["label"].astype(str).nunique() if "label" in d.columns else 1
    depths = np.concatenate([to[np.isfinite(to)], frm[np.isfinite(frm)]])
    ups = int(np.sum(to > frm))
    span = (f"depth {int(depths.min())}–{int(depths.max())}" if len(depths) else "depth unknown")
    return (f"adaptive draft depth (llama.cpp draft-mtp-adaptive): {len(d):,} change(s) on "
            f"{seqs} sequence(s), {ups} up and {len(d) - ups} down, {span}; the per-position "
            "rates divide by every verification step, so a position beyond the depth then in "
            "force reads as rejected: at the deep positions P(accept ≥ i) and the conditional "
            "rates are lower bounds (common/speculative.cpp, ggml-org/llama.cpp 001d906a)")


# ----------------------------------------------------------------------------- by context

NO_CONTEXT = ("no acceptance with a context length in the input(s): looked for requests with "
              "prompt_tokens and a per-request acceptance (SGLang Finish lines with "
              "spec_accept_histogram, saved vLLM responses with an acceptance_histogram, "
              "llama.cpp per-request lines) and SGLang decode lines with '#token' and accept len")


def _request_series(run: str, origin: str, frame: pd.DataFrame, prompt: np.ndarray,
                    total: np.ndarray, weight: np.ndarray, build, confidence: float):
    """The context buckets (by prompt length) of one request source; ``build(rows)`` makes the
    acceptance curve of a subset of ``frame``."""
    from . import context as cx

    codes, edges = cx.context_buckets(prompt, cx.MIN_REQUESTS)
    out = []
    for g, (lo, hi) in enumerate(edges):
        idx = np.flatnonzero(codes == g)
        if not len(idx):
            continue
        c = build(frame.iloc[idx])
        if c is None:
            continue
        w = weight[idx]
        if not (np.isfinite(w).all() and w.sum() > 0):
            w = np.ones(len(idx))
        mean = float(np.dot(w, prompt[idx]) / w.sum())
        tot = total[idx]
        mean_t = float(np.dot(w, tot) / w.sum()) if np.isfinite(tot).all() else None
        out.append(cx.ContextBucket(cx.bucket_label(lo, hi), lo, hi, "request", c.samples,
                                    c.drafts, mean, c.identity.tau, mean_t, c))
    if not out:
        return None
    missing = int((~np.isfinite(prompt)).sum())
    notes = [f"{missing:,} request(s) without a prompt length left out"] if missing else []
    if len(out) == 1 and len(edges) == 1:
        notes.append(f"one bucket: buckets of context need ≥ {cx.MIN_REQUESTS} requests each")
    notes.append("per bucket, requests are the units (their verifies pooled inside them): "
                 "the curve and τ of acceptance's request model; the context is the "
                 "verify-weighted mean prompt length, prompt + output beside it")
    return cx.ContextSeries(run, origin, "request", "prompt tokens of the request",
                            MODELS["request"], tuple(out), None, tuple(notes))


def _num_col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def by_context(log, confidence: float = 0.95):
    """acceptance(…, by='context') of a ParsedLog: a context.ContextResult."""
    from . import context as cx
    from .windows import decode_interval, rows_where, windows

    series = []
    for run, sub in log.units():
        t = sub.tables
        cfg = sub.config(sub.sources[0].name)
        req = t.get("requests")
        if req is not None and len(req) and "accept_histogram" in req.columns and \
                "prompt_tokens" in req.columns:
            r = req[req["accept_histogram"].notna().to_numpy(dtype=bool)]
            if len(r):
                p = _num_col(r, "prompt_tokens")
                nd = non_draft_tokens(cfg)
                s = _request_series(run, "sglang-histogram", r, p,
                                    p + _num_col(r, "completion_tokens"),
                                    _num_col(r, "verify_ct"),
                                    lambda rows: _sglang_curve(run, rows, confidence, nd),
                                    confidence)
                if s is not None:
                    series.append(s)
        b = t.get("bench")
        if b is not None and len(b) and "prompt_tokens" in b.columns:
            scope = (b["scope"].astype(str) == "request").to_numpy()
            tool = b["tool"].astype(str)
            for origin, which, build in (
                    ("vllm-response", "vllm.response",
                     lambda rows: _vllm_response_curve(run, rows, confidence, cfg)),
                    ("llamacpp-request", "llama.cpp",
                     lambda rows: _llama_request_curve(run, rows, confidence))):
                rows = b[scope & (tool == which).to_numpy()]
                if not len(rows):
                    continue
                p = _num_col(rows, "prompt_tokens")
                if not np.isfinite(p).any():
                    continue
                w = _num_col(rows, "steps") if origin == "vllm-response" else \
                    _num_col(rows, "drafts")
                s = _request_series(run, origin, rows, p, p + _num_col(rows, "output_tokens"),
                                    w, build, confidence)
                if s is not None:
                    series.append(s)
        dec = t.get("decode")
        if dec is not None and len(dec) and cx.token_column(dec) is not None:
            src = sub.sources[0].name
            d = rows_where(dec, dec["source"] == src)
            pre = t.get("prefill")
            pre = rows_where(pre, pre["source"] == src) if pre is not None and len(pre) \
                else dec.iloc[:0]
            s = cx.window_series(run, windows(d, pre, decode_interval(cfg)), d, confidence)
            if s is not None:
                series.append(s)
    if not series:
        raise EaglelogError(NO_CONTEXT)
    return cx.ContextResult(tuple(series), confidence)
