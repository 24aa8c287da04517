"""Which requests benefit: acceptance per request and per workload (docs/requests.md), and the
home of every per-request name.

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
interval.  A share of requests (below the break-even) has a Wilson interval.

The per-request analyses, a module each (every name is re-exported here, so
``eaglelog.analysis.requests.X`` reaches all of them):

  requests_table.py   the request table: one row per request (request_table), the groups of
                      ``--by`` (group_keys, auto_by), the per-workload rows of benchmark files
  requests_flags.py   the flags: lowest/highest τ_r, loop suspects, garbled outputs
                      (robust_z, chain_logit, z_limit, _outliers)
  requests_paired.py  the paired A/B on matched prompts (compare_paired, read_rid_map,
                      PairedResult; paired_t, welch_log, holm)
  requests.py         this module: ``requests()``, the distribution per run and group
                      (GroupStats, RunRequests, RequestsResult)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import EaglelogError
from ..schema import REQUEST_COLUMNS  # noqa: F401
from ..stats import Estimate, insufficient  # noqa: F401
from .estimators import (MIN_REQUESTS, _tq, mean_estimate, ratio_estimate,  # noqa: F401
                         wilson)
from .requests_flags import (CHAIN_MAX_K, FLAG_ALPHA, LOOP_MIN_TOKENS,  # noqa: F401
                             LOOP_SHARE, PEER_GROUPS, PEER_LEAST, TAIL_DF, Outlier,
                             _max_accept, _outliers, chain_logit, robust_z, z_limit)
from .requests_paired import (MATCHES, MIN_PAIRS, TAU_WARN, PairedGroup,  # noqa: F401
                              PairedResult, _auto_match, _keys, _per_key, _pooled_ratio,
                              _table_of, _verdict, compare_paired, holm, paired_t,
                              read_rid_map, welch_log)
from .requests_table import (GROUPINGS, REQUEST_COLUMN_NAMES, SERVER_ORIGINS,  # noqa: F401
                             _ORIGIN, _col, _f, _group_order, _int, _labels_text, _load,
                             _no_request, _pow2_bucket, _run_labels, _str, _typed, _workloads,
                             auto_by, group_keys, request_table)

QUANTILES = (0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95)
HIST_WIDTH = 0.25       # τ_r histogram bins: [1.00, 1.25), [1.25, 1.50), …
HIST_MAX_BINS = 64      # … at most this many: a wider range takes wider bins (an absurd τ_r,
                        # completion_tokens 10⁹, had sized an array of 4 × 10⁸ bins: issue 36)


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

