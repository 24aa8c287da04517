"""eaglelog/live/histograms.py: quantiles from Prometheus histogram buckets (values and bounds), the
+Inf bucket, increments across counter resets, the summary of a source's windows, and what a
latency alert concludes from a bucket (certain, possible, no)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from eaglelog.live.histograms import BucketQuantile, increments, quantile, summarize
from eaglelog.live.watch import Alert

INF = math.inf
# vLLM 0.34.0's inter-token-latency buckets (v1/metrics/buckets.py), the first few
B = [0.01, 0.025, 0.05, 0.075, INF]


def test_quantile_interpolates_inside_its_bucket_and_gives_the_bounds():
    # 100 observations: 40 ≤ 10 ms, 40 in (10, 25], 15 in (25, 50], 5 in (50, 75]
    c = [40, 80, 95, 100, 100]
    p50 = quantile(B, c, 0.5)           # rank 50: the 10th of 40 in (10, 25]
    assert (p50.lower, p50.upper, p50.n) == (0.01, 0.025, 100)
    assert p50.value == pytest.approx(0.01 + 0.015 * 10 / 40)
    p90 = quantile(B, c, 0.9)           # rank 90: the 10th of 15 in (25, 50]
    assert (p90.lower, p90.upper) == (0.025, 0.05)
    assert p90.value == pytest.approx(0.025 + 0.025 * 10 / 15)
    p99 = quantile(B, c, 0.99)          # rank 99: the 4th of 5 in (50, 75]
    assert (p99.lower, p99.upper) == (0.05, 0.075)
    assert p99.value == pytest.approx(0.05 + 0.025 * 4 / 5)
    assert not p99.open and p99.text() == "70 ms (50–75]"
    assert p99.bounds_text() == "in (50, 75] ms"
    low = quantile(B, c, 0.1)           # in the first bucket: its lower edge is 0
    assert (low.lower, low.upper) == (0.0, 0.01) and low.value == pytest.approx(0.01 * 10 / 40)


def test_the_bucket_is_that_of_the_nearest_rank_quantile():
    rng = np.random.default_rng(7)
    bounds = [0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.04, INF]
    for _ in range(200):
        n = int(rng.integers(1, 400))
        x = rng.lognormal(np.log(0.007), 0.5, n)
        cum = [int(np.sum(x <= b)) for b in bounds]
        for q in (0.5, 0.9, 0.99):
            truth = np.sort(x)[math.ceil(q * n) - 1]      # the ⌈q·n⌉-th smallest
            bq = quantile(bounds, cum, q)
            assert bq.lower < truth <= bq.upper and bq.lower <= bq.value <= bq.upper


def test_the_inf_bucket_gives_a_lower_bound_only():
    bq = quantile(B, [10, 20, 30, 40, 100], 0.99)   # 60 of 100 above 75 ms
    assert bq.open and bq.lower == 0.075 and bq.upper == INF and bq.value == 0.075
    assert bq.text() == "> 75 ms" and "lower bound only" in bq.bounds_text()
    assert bq.holds(">", 0.05) == "certain" and bq.holds(">", 0.1) == "possible"
    assert bq.holds("<", 0.1) == "possible" and bq.holds("<", 0.05) is None


def test_empty_odd_and_non_monotone_histograms():
    assert quantile(B, [0, 0, 0, 0, 0], 0.99) is None
    assert quantile([0.01, 0.025], [1, 2], 0.5) is None           # no +Inf bucket
    with pytest.raises(ValueError):
        quantile(B, [1, 2, 3, 4, 5], 0)
    # a scrape read the buckets while a request was being observed: made monotone
    bq = quantile(B, [40, 39, 95, 100, 100], 0.5)
    assert (bq.lower, bq.upper) == (0.025, 0.05)


def test_what_a_bucket_lets_an_alert_conclude():
    bq = BucketQuantile(0.99, 0.07, 0.05, 0.075, 100)              # p99 in (50, 75] ms
    assert bq.holds(">", 0.05) == "certain"      # the whole bucket is above 50 ms
    assert bq.holds(">", 0.04) == "certain"
    assert bq.holds(">", 0.06) == "possible"     # 60 ms lies inside the bucket
    assert bq.holds(">", 0.075) is None          # the quantile is ≤ 75 ms
    assert bq.holds(">=", 0.075) == "possible" and bq.holds(">=", 0.08) is None
    assert bq.holds("<", 0.08) == "certain" and bq.holds("<", 0.075) == "possible"
    assert bq.holds("<=", 0.075) == "certain" and bq.holds("<", 0.05) is None
    a = Alert.parse("tpot_p99>50ms")
    assert (a.metric, a.op, a.value, str(a)) == ("tpot_p99", ">", 50.0, "tpot_p99>50ms")
    assert Alert.parse("ttft_p90 >= 2s").value == 2000.0 and Alert.parse("tpot_p50<20").value == 20
    with pytest.raises(ValueError):
        Alert.parse("accept_len<1.5ms")          # a unit only for the latency metrics


def test_increments_across_a_reset():
    les = ["0.01", "0.025", "+Inf"]
    s = [(0.0, les, [1, 2, 3], 0.05), (5.0, les, [4, 6, 8], 0.15),
         (10.0, les, [1, 1, 2], 0.03),            # a restart: the counts fell
         (15.0, les, [2, 3, 5], 0.08)]
    b, c, total, resets = increments(s)
    # (4-1, 6-2, 8-3) + (1, 1, 2) after the restart + (1, 2, 3)
    assert b == les and c == [3 + 1 + 1, 4 + 1 + 2, 5 + 2 + 3] and resets == 1
    assert total == pytest.approx(0.10 + 0.03 + 0.05)
    b, c, _, resets = increments(s, since=10.0)   # the pairs ending after t = 10
    assert c == [1, 2, 3] and resets == 0
    assert increments(s[:1]) is None
    # the bucket layout changed (a restart with other buckets): from there on
    s2 = s[:2] + [(10.0, ["0.05", "+Inf"], [2, 3], 0.1), (15.0, ["0.05", "+Inf"], [4, 6], 0.2)]
    b, c, _, resets = increments(s2)
    assert b == ["0.05", "+Inf"] and c == [2 + 2, 3 + 3] and resets == 1


def _rows(windows):
    return pd.DataFrame([{"source": "x", "startup": 0, "metric": m, "series": ser,
                          "t_start": t - 5, "t_end": t, "bounds": json.dumps(b),
                          "counts": json.dumps(c), "requests": c[-1], "sum_s": s, "reset": False}
                         for m, ser, t, b, c, s in windows])


def test_summary_adds_series_and_keeps_the_span():
    les = ["0.01", "0.025", "0.05", "+Inf"]
    df = _rows([("tpot", "is_streaming=false", 5, les, [10, 10, 10, 10], 0.05),
                ("tpot", "is_streaming=true", 5, les, [0, 5, 10, 10], 0.3),
                ("tpot", "is_streaming=false", 10, les, [0, 0, 0, 10], 1.0),
                ("ttft", "is_streaming=false", 10, les, [1, 2, 3, 4], 0.1)])
    s = summarize(df)
    assert s.tpot_requests == 30 and s.ttft_requests == 4 and s.span_s == 10
    assert s.tpot_mean == pytest.approx(1.35 / 30)
    p50 = s.get("tpot", 0.5)                      # cumulative [10, 15, 20, 30]: rank 15
    assert (p50.lower, p50.upper) == (0.01, 0.025) and p50.value == pytest.approx(0.025)
    assert s.get("tpot", 0.99).open               # 10 of 30 above 50 ms
    only = summarize(df, since=6)                 # the window ending at 10 only
    assert only.tpot_requests == 10 and only.get("tpot", 0.5).open
    flat = s.flat()
    assert flat["tpot_p50_ms"] == pytest.approx(25) and flat["tpot_p50_low_ms"] == 10
    assert flat["tpot_p50_high_ms"] == 25 and flat["tpot_p99_high_ms"] is None
    assert flat["tpot_p99_low_ms"] == 50 and flat["ttft_requests"] == 4
    assert summarize(df.iloc[:0]) is None
