"""Latency quantiles per instance from the engines' Prometheus histograms: time to first token
(TTFT) and time per output token (TPOT), over a span of a /metrics or Prometheus source.

**What a histogram tells.**  Each bucket counts the observations ≤ its upper bound ``le``
(cumulative; the last bucket is ``+Inf``).  Over a span, the increments of the buckets count the
requests observed in it (a TTFT when a request's first token comes, a TPOT when it finishes).
The q-quantile of those n requests — the ⌈q·n⌉-th smallest, the nearest-rank quantile — lies in
the first bucket whose cumulative increment reaches q·n, and that is **all** the counts say:
``lower < quantile ≤ upper``.  The value reported is Prometheus' own ``histogram_quantile``
estimate, the linear interpolation inside that bucket (as if its observations were spread
evenly), always with the bucket's bounds beside it.  In the ``+Inf`` bucket only the lower bound
is known (the value reported is that bound, as ``histogram_quantile`` does): "> 80 ms".

**Increments and resets.**  Per series, consecutive samples (a, b) add b − a; when any count of
b is below a's (or the bucket layout changed) the server restarted, and b's counts are the
increment (its counters started again from 0: Prometheus' ``increase()`` does the same).  The
observations between a's scrape and the restart are lost either way.  Cumulative counts that
are not monotone in ``le`` (a scrape that read the buckets while a request was being observed)
are made monotone, as ``histogram_quantile`` does.

    >>> from eaglelog.live.histograms import quantile
    >>> quantile([0.01, 0.025, 0.05, float("inf")], [90, 97, 100, 100], 0.99)
    BucketQuantile(q=0.99, value=0.04166666666666667, lower=0.025, upper=0.05, n=100)
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

__all__ = ["BucketQuantile", "quantile", "increments", "LatencySummary", "summarize",
           "QUANTILES", "METRICS", "NOTE"]

QUANTILES = (0.5, 0.9, 0.99)
METRICS = ("ttft", "tpot")
NOTE = ("TTFT/TPOT p99 from the engines' histograms: the interpolated value and (lower–upper], "
        "the bucket it lies in (the counts say no more); '> X': the +Inf bucket, a lower bound")


@dataclass(frozen=True)
class BucketQuantile:
    """The q-quantile of n observations: in (lower, upper]; ``value`` interpolated inside
    (upper = inf: the +Inf bucket, a lower bound only, and value = lower).  Seconds."""

    q: float
    value: float
    lower: float
    upper: float
    n: int

    @property
    def open(self) -> bool:
        """In the +Inf bucket: only ``> lower`` is known."""
        return math.isinf(self.upper)

    def holds(self, op: str, x: float) -> str | None:
        """Whether ``quantile OP x`` holds given only that the quantile lies in (lower,
        upper]: 'certain', 'possible' (x inside the bucket) or None (it cannot)."""
        lo, hi = self.lower, self.upper
        if op in (">", ">="):
            if lo >= x:
                return "certain"                 # quantile > lower ≥ x
            return None if (hi <= x if op == ">" else hi < x) else "possible"
        if op in ("<", "<="):
            if hi < x or (op == "<=" and hi <= x):
                return "certain"                 # quantile ≤ upper < x
            return None if lo >= x else "possible"   # quantile > lower ≥ x
        raise ValueError(f"not an operator: {op!r}")

    def text(self, scale: float = 1000.0, unit: str = "ms") -> str:
        """'71.2 ms (60–80]' or '> 80 ms' (the +Inf bucket)."""
        if self.open:
            return f"> {_g(self.lower * scale)} {unit}"
        return (f"{self.value * scale:.3g} {unit} ({_g(self.lower * scale)}–"
                f"{_g(self.upper * scale)}]")

    def bounds_text(self, scale: float = 1000.0, unit: str = "ms") -> str:
        if self.open:
            return f"> {_g(self.lower * scale)} {unit} (the +Inf bucket: a lower bound only)"
        return f"in ({_g(self.lower * scale)}, {_g(self.upper * scale)}] {unit}"


def _g(v: float) -> str:
    return f"{v:.4g}"


def quantile(bounds, cumulative, q: float) -> BucketQuantile | None:
    """The q-quantile (0 < q ≤ 1) of a histogram: ``bounds`` the buckets' upper bounds in
    ascending order, the last +Inf; ``cumulative`` the count of each (observations ≤ bound).
    None when it holds no observation or has no +Inf bucket."""
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q!r} outside (0, 1]")
    b = [float(x) for x in bounds]
    if not b or not math.isinf(b[-1]) or len(b) != len(cumulative):
        return None
    c, top = [], 0.0
    for v in cumulative:                       # monotone in le (histogram_quantile's fix)
        top = max(top, float(v))
        c.append(top)
    n = c[-1]
    if n <= 0:
        return None
    rank = q * n
    i = next(j for j, v in enumerate(c) if v >= rank)
    lower = b[i - 1] if i else min(0.0, b[0])
    prev = c[i - 1] if i else 0.0
    if math.isinf(b[i]):
        # (a layout of only +Inf: nothing is known but ≥ 0)
        return BucketQuantile(q, lower, lower, math.inf, int(round(n)))
    upper = b[i]
    value = lower + (upper - lower) * (rank - prev) / (c[i] - prev) if c[i] > prev else upper
    return BucketQuantile(q, value, lower, upper, int(round(n)))


def increments(samples, since: float | None = None):
    """The increments of one series' histogram over the pairs of consecutive samples whose
    later sample is after ``since``: ``samples`` [(t, bounds, cumulative, sum)] in time order
    → (bounds, counts, sum, resets) of the latest layout, or None with fewer than two samples.
    A pair where any count fell (or the layout changed) is a restart: the later counts are its
    increment."""
    out_b, out_c, out_s, resets = None, None, 0.0, 0
    for (ta, ba, ca, sa), (tb, bb, cb, sb) in zip(samples, samples[1:]):
        if since is not None and tb <= since:
            continue
        if list(ba) != list(bb) or any(y < x for x, y in zip(ca, cb)):
            inc, dsum = list(cb), sb
            resets += 1
        else:
            inc, dsum = [y - x for x, y in zip(ca, cb)], sb - sa
        if out_b is None or list(out_b) != list(bb):
            out_b, out_c, out_s = list(bb), [0.0] * len(bb), 0.0    # (a new layout: from here)
        out_c = [x + y for x, y in zip(out_c, inc)]
        out_s += dsum if math.isfinite(dsum) else 0.0
    return None if out_b is None else (out_b, out_c, out_s, resets)


@dataclass(frozen=True)
class LatencySummary:
    """TTFT and TPOT quantiles of one instance over a span (seconds; None: no histogram or no
    request in the span), the requests counted, and the mean (``_sum`` / count)."""

    span_s: float | None
    ttft: tuple[BucketQuantile | None, ...]
    tpot: tuple[BucketQuantile | None, ...]
    ttft_requests: int | None
    tpot_requests: int | None
    ttft_mean: float | None = None
    tpot_mean: float | None = None

    def get(self, metric: str, q: float) -> BucketQuantile | None:
        return dict(zip(QUANTILES, getattr(self, metric))).get(q)

    def flat(self) -> dict:
        """Machine columns in ms: ``tpot_p99_ms`` (interpolated), ``tpot_p99_low_ms`` and
        ``tpot_p99_high_ms`` (the bucket's bounds; high None: the +Inf bucket), and the
        requests counted (``tpot_requests``)."""
        d: dict = {}
        for m in METRICS:
            for q, bq in zip(QUANTILES, getattr(self, m)):
                p = f"{m}_p{int(round(q * 100))}"
                d[f"{p}_ms"] = None if bq is None else bq.value * 1000
                d[f"{p}_low_ms"] = None if bq is None else bq.lower * 1000
                d[f"{p}_high_ms"] = None if bq is None or bq.open else bq.upper * 1000
            d[f"{m}_requests"] = getattr(self, f"{m}_requests")
            mean = getattr(self, f"{m}_mean")
            d[f"{m}_mean_ms"] = None if mean is None else mean * 1000
        return d

    def cell(self, metric: str, q: float = 0.99) -> str:
        bq = self.get(metric, q)
        return "" if bq is None else bq.text()


EMPTY = {f"{m}_{s}": None for m in METRICS
         for s in [f"p{int(q * 100)}_{x}ms" for q in QUANTILES for x in ("", "low_", "high_")]
         + ["requests", "mean_ms"]}


def summarize(rows, since: float | None = None) -> LatencySummary | None:
    """The summary of one instance's ``latency_hist`` rows (a DataFrame of the schema's
    LATENCY_HIST table, or None) over the windows that ended after ``since`` (epoch seconds;
    None: all).  Series of one metric (SGLang's is_streaming, vLLM's engine) are added when
    their layouts agree; a series of another layout is left out (the latest window's wins)."""
    if rows is None or not len(rows):
        return None
    t_end = rows["t_end"].to_numpy(dtype=float)
    keep = t_end > since if since is not None else t_end == t_end
    span = float(t_end.max() - rows["t_start"].to_numpy(dtype=float)[keep].min()) \
        if keep.any() else None
    out: dict = {}
    for m in METRICS:
        sel = keep & (rows["metric"].astype(str).to_numpy() == m)
        if not sel.any():
            out[m] = ((None,) * len(QUANTILES), None, None)
            continue
        sub = rows[sel]
        order = sub["t_end"].to_numpy(dtype=float).argsort(kind="stable")
        layouts = [json.loads(x) for x in sub["bounds"].astype(str).to_numpy()[order]]
        counts = [json.loads(x) for x in sub["counts"].astype(str).to_numpy()[order]]
        sums = sub["sum_s"].to_numpy(dtype=float)[order]
        last = layouts[-1]
        tot, s = [0.0] * len(last), 0.0
        for b, c, x in zip(layouts, counts, sums):
            if b == last:
                tot = [u + v for u, v in zip(tot, c)]
                s += x if math.isfinite(x) else 0.0
        bounds = [float(v) for v in last]
        qs = tuple(quantile(bounds, tot, q) for q in QUANTILES)
        n = int(round(tot[-1])) if tot else 0
        out[m] = (qs, n, s / n if n else None)
    return LatencySummary(span, out["ttft"][0], out["tpot"][0], out["ttft"][1], out["tpot"][1],
                          out["ttft"][2], out["tpot"][2])
