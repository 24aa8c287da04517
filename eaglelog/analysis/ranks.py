"""Rates across DP ranks and vLLM engines: the aggregate throughput of a run and, where its ranks
differ, one row per rank.

A DP rank (SGLang ``DP<n>``, vLLM ``Engine NNN:`` / ``EngineCore_DP<n>``) serves requests of
its own and prints windows of its own, at the same time as the others: the run's aggregate is
the **sum** over ranks of each rank's tokens over its decode windows' wall time, never a mean of
them (two engines at 100 tok/s each give 200).  The series of one DP rank (its PP stages,
ATTN_CP or MOE_DP ranks) see the same requests: they are pooled, tokens over wall time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..stats import Estimate
from . import rate

RATE_DIFFER = 0.05     # per-stream rates further apart than this (relative) differ when an
                       # interval is missing


def rank_of(win: "rate.Windows") -> tuple[np.ndarray, list[str]]:
    """Each window's rank (codes into the labels) and the labels: 'DP 0', 'engine 0' (vLLM), or
    'all' where the lines print no DP rank."""
    of_series, labels = _ranks_of_series(win)
    if len(labels) == 1:
        return np.zeros(win.n, dtype=np.int64), labels
    return of_series[np.asarray(win.series, dtype=np.int64)], labels


def _ranks_of_series(win: "rate.Windows") -> tuple[np.ndarray, list[str]]:
    """Each series code's rank (codes into the labels), and the labels (rank_of)."""
    labels: list[str] = []
    of_series = []
    for lab in win.labels or ("-|-|-|-",):
        vllm = lab.startswith("vllm ")
        dp = lab[5:].split("|")[0] if vllm else lab.split("|")[0]
        name = "all" if dp == "-" else f"{'engine' if vllm else 'DP'} {dp}"
        if name not in labels:
            labels.append(name)
        of_series.append(labels.index(name))
    return np.asarray(of_series, dtype=np.int64), labels


def _timed(win: "rate.Windows") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the windows counted, their tokens, their wall time in ms): those with a known start and
    no idle gap or stall; a window's tokens are accept × its request-steps (one token a step
    without speculation), its wall time request-steps / batch × the time per iteration."""
    iters = np.divide(win.w, win.b, out=np.zeros(win.n), where=win.b > 0)
    ok = ~np.isin(win.why, (rate.FIRST, rate.IDLE, rate.STALL)) & np.isfinite(win.y) & \
        (win.y > 0) & (iters > 0)
    # (vLLM V0 prints sequence-steps a second, but its windows' accept lengths count the
    # tokens: tokens are a × request-steps there too)
    tokens = np.where(np.isfinite(win.a), win.a, 1.0)
    tokens *= win.w
    iters *= win.y
    return ok, tokens, iters


def aggregate(win: "rate.Windows") -> float | None:
    """The run's aggregate tok/s: each rank's tokens over its windows' wall time, summed over
    the ranks (None: no window counted)."""
    if not win.n:
        return None
    of_series, labels = _ranks_of_series(win)
    series = np.asarray(win.series)
    if len(labels) == 1 and series.dtype.kind in "iu" and len(series) and \
            int(series.max()) >= len(of_series):
        # (windows whose series carry no labels: every series one rank, as rank_of says)
        of_series = np.zeros(int(series.max()) + 1, dtype=np.int64)
    if rate.fast_available() and series.dtype.kind in "iu" and len(of_series) < 128 and \
            (not len(series) or int(series.min()) >= 0):
        # (one pass in C: np.bincount's sums of _timed's arrays, to the bit, without them —
        # four arrays of every window at a large log's summary)
        tok, ms = np.empty(len(labels)), np.empty(len(labels))
        counted = rate._ratekern.rank_sums(
            np.ascontiguousarray(series, dtype=np.int8), of_series,
            np.ascontiguousarray(win.why, dtype=np.int8),
            bytes([rate.FIRST, rate.IDLE, rate.STALL]), *rate._floats(win.y, win.a, win.b),
            rate._floats(win.rs)[0], float(win.interval), tok, ms)
        if not counted:
            return None
    else:
        ok, tokens, wall = _timed(win)
        if not ok.any():
            return None
        code, labels = rank_of(win)
        tok = np.bincount(code[ok], weights=tokens[ok], minlength=len(labels))
        ms = np.bincount(code[ok], weights=wall[ok], minlength=len(labels))
    return float(1000.0 * np.sum(tok[ms > 0] / ms[ms > 0]))


@dataclass(frozen=True)
class RankRow:
    rank: str                      # 'DP 0', 'engine 1'
    windows: int
    sizes: tuple[int, int] | None  # the printed #running-req, lowest and highest
    accept_len: Estimate | None    # request-step weighted (speculative runs)
    eff_tok_s: Estimate | None     # per stream: 1000 × accept length / cycle (1000 / step)
    aggregate_tok_s: float | None  # the rank's tokens over its windows' wall time

    def to_dict(self) -> dict:
        def d(e):
            return e.to_dict() if e is not None else None
        return {"rank": self.rank, "windows": self.windows,
                "batch_sizes": list(self.sizes) if self.sizes else None,
                "accept_len": d(self.accept_len), "per_stream_tok_s": d(self.eff_tok_s),
                "aggregate_tok_s": self.aggregate_tok_s}


def by_rank(win: "rate.Windows", confidence: float,
            warmup: str | int = "auto") -> tuple[RankRow, ...]:
    """One row per rank where the run has several ranks whose batch sizes or per-stream rates
    differ; () otherwise (one rank, or ranks alike: the run's own figures say it all)."""
    code, labels = rank_of(win)
    if len(labels) < 2:
        return ()
    rows = []
    for k, label in enumerate(labels):
        sub = win.restrict(code == k)
        r = sub.r[np.isfinite(sub.r)]
        sizes = (int(r.min()), int(r.max())) if len(r) else None
        fit = rate.fit(sub, confidence, None, warmup=warmup)
        acc = fit["accept_len"] if sub.spec else None
        eff = None
        if sub.spec:
            e = fit["rate"]
            if math.isfinite(e.estimate):
                eff = _scaled(e, 1000.0, False)
        else:
            c = fit["cycle_ms"]
            if math.isfinite(c.estimate) and c.estimate > 0:
                eff = _scaled(c, 1000.0, True)
        rows.append(RankRow(label, sub.n, sizes, acc, eff, aggregate(sub)))
    return tuple(rows) if _differ(rows) else ()


def _scaled(e: Estimate, k: float, invert: bool) -> Estimate:
    """k × e, or k / e (the interval's ends swapped)."""
    def f(v):
        return None if v is None else (k / v if invert else k * v)
    lo, hi = (e.ci_high, e.ci_low) if invert else (e.ci_low, e.ci_high)
    return Estimate(f(e.estimate), f(lo), f(hi), e.n, e.confidence, e.se_log, e.df,
                    "1000 / step" if invert else "1000 × accept length / cycle")


def _differ(rows: list[RankRow]) -> bool:
    """Whether the ranks' printed batch sizes or per-stream rates differ (rates: intervals that
    do not overlap, or more than RATE_DIFFER apart where one has no interval)."""
    if len({r.sizes for r in rows}) > 1:
        return True
    effs = [r.eff_tok_s for r in rows if r.eff_tok_s is not None]
    for i, a in enumerate(effs):
        for b in effs[i + 1:]:
            if a.sufficient and b.sufficient:
                if a.ci_high < b.ci_low or b.ci_high < a.ci_low:
                    return True
            elif abs(a.estimate - b.estimate) > RATE_DIFFER * max(a.estimate, b.estimate):
                return True
    return False


def spans(rows: tuple[RankRow, ...]) -> list[str]:
    """'DP 0: 3–8' for each rank whose own batch size varies."""
    return [f"{r.rank}: {r.sizes[0]}–{r.sizes[1]}" for r in rows
            if r.sizes and r.sizes[0] != r.sizes[1]]
