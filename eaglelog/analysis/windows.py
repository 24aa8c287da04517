"""Decode lines as windows: one series per scheduler, clean windows, derived cycle time.

A 'Decode batch' line closes a window of ``decode_log_interval`` decode iterations of one
scheduler (sglang.md §3).  For the analyses:

* **series**: lines are grouped by (source, DP, PP, ATTN_CP, MOE_DP); when several TP ranks print
  the same series (--enable-metrics-for-all-schedulers), only the lowest TP is kept.
* **request-steps** of a window ≈ running_req × decode_log_interval (running_req is the batch size
  at the logging instant only: an approximation).
* **derived cycle time** of a window: one decode iteration (one draft+verify cycle) produces
  accept_len tokens for each of the running_req requests, and gen_throughput is the window's
  tokens over its wall time, so

      cycle_ms = 1000 × accept_len × running_req / gen_throughput     (spec lines)
      step_ms  = 1000 × running_req / gen_throughput                  (non-spec lines)

  The wall time includes prefill batches, scheduling gaps and idle time.  A window is **clean**
  when none of that can be inside it: it is not the first line of its series (its window start is
  unknown), no 'Prefill batch' line of the same series was printed since the previous decode line,
  and its wall time (from the timestamps, when they have them) is not more than 3× the series'
  median (an idle gap).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

DEFAULT_INTERVAL = 40
IDLE_FACTOR = 3          # a window whose wall time is over this × the series' median is idle
SERIES_TAGS = ("dp", "pp", "attn_cp", "moe_dp")


def decode_interval(config: dict) -> int:
    v = config.get("decode_log_interval")
    return int(v) if isinstance(v, int) and v > 0 else DEFAULT_INTERVAL


def _series_key(df: pd.DataFrame) -> pd.Series:
    parts = [df[t].astype("string").fillna("-") if t in df.columns
             else pd.Series("-", index=df.index) for t in SERIES_TAGS]
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key


def _lowest_tp(df: pd.DataFrame, key: pd.Series) -> pd.Series:
    if "tp" not in df.columns or df["tp"].isna().all():
        return pd.Series(True, index=df.index)
    tp = df["tp"].astype("Float64").fillna(-1)
    return tp == tp.groupby(key).transform("min")


def windows(decode: pd.DataFrame, prefill: pd.DataFrame, interval: int) -> pd.DataFrame:
    """Decode lines of ONE source as windows, in line order, with columns
    series, running_req, accept_len, gen_throughput, req_steps, tokens_per_iter, derived_ms,
    clean, reason (why not clean: 'first', 'prefill', 'idle', 'no throughput')."""
    cols = [c for c in ("source", "line_no", "startup", "timestamp", "running_req", "accept_len",
                        "accept_rate", "gen_throughput", "header", "tp") + SERIES_TAGS
            if c in decode.columns]
    d = decode[cols]
    if not d["line_no"].is_monotonic_increasing:
        d = d.sort_values("line_no")
    d = d.reset_index(drop=True)
    if d.empty:
        return d.assign(series=[], req_steps=[], derived_ms=[], clean=[], reason=[])
    key = _series_key(d)
    keep = _lowest_tp(d, key)
    d, key = d[keep].reset_index(drop=True), key[keep].reset_index(drop=True)
    d["series"] = key
    r = d["running_req"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    g = d["gen_throughput"].to_numpy(dtype=float)
    a = d["accept_len"].to_numpy(dtype=float)
    per_iter = np.where(np.isfinite(a), a * r, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        derived = np.where((g > 0) & (r > 0), 1000.0 * per_iter / g, np.nan)
    d["req_steps"] = r * interval
    d["tokens_per_iter"] = per_iter
    d["derived_ms"] = derived
    reason = np.array([""] * len(d), dtype=object)
    reason[~np.isfinite(derived)] = "no throughput"
    pre = prefill
    pkey = _series_key(pre) if len(pre) else pd.Series([], dtype="string")
    for s, idx in d.groupby("series", sort=False).groups.items():
        idx = np.asarray(idx)
        lines = d.loc[idx, "line_no"].to_numpy(dtype=np.int64)
        first = idx[0]
        if reason[first] == "":
            reason[first] = "first"
        if len(pre):
            pl = np.sort(pre.loc[pkey == s, "line_no"].to_numpy(dtype=np.int64))
            # prefill lines printed after the previous decode line and before this one
            count = np.searchsorted(pl, lines) - np.searchsorted(pl, np.r_[0, lines[:-1]])
            for i, c in zip(idx[1:], count[1:]):
                if c > 0 and reason[i] == "":
                    reason[i] = "prefill"
        ts = d.loc[idx, "timestamp"]
        if ts.notna().all() and len(idx) > 2:
            gap = ts.diff().dt.total_seconds().to_numpy()[1:]
            med = np.median(gap)
            if med > 0:
                for i, gp in zip(idx[1:], gap):
                    if gp > IDLE_FACTOR * med and reason[i] == "":
                        reason[i] = "idle"
    d["reason"] = reason
    d["clean"] = reason == ""
    return d


def bucket_labels(running_req: pd.Series) -> pd.Series:
    """Batch-size buckets: each value when there are at most 16 distinct, else powers of two
    ('4–7')."""
    r = running_req.astype("Int64")
    if r.dropna().nunique() <= 16:
        return r.astype("string")
    lo = (2 ** np.floor(np.log2(r.astype(float).clip(lower=1)))).astype(int)
    hi = lo * 2 - 1
    return pd.Series([f"{a}" if a == b else f"{a}–{b}" for a, b in zip(lo, hi)],
                     index=r.index, dtype="string")
