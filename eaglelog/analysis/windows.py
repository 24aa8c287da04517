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

vLLM rows (``engine == 'vllm'``, vllm.md) are windows of *seconds*, not of iterations.  The
formula above holds for them unchanged (gen_throughput counts emitted tokens, accept_len
includes the bonus), and two things are exact instead of approximated: request-steps are the
window's number of drafts (the ``drafts`` column) where the log gives it, and a window with
prefill work is the one whose ``prompt_throughput`` is above 0.  Rows without drafts (no spec
line) fall back to running_req × interval.  vLLM rows form series of their own (by engine
index, in ``dp``), never shared with SGLang rows of the same input.
"""
from __future__ import annotations

import numpy as np
from .._lazy import pd
from ..frame import is_light, is_value

DEFAULT_INTERVAL = 40
IDLE_FACTOR = 3          # a window whose wall time is over this × the series' median is idle
SERIES_TAGS = ("dp", "pp", "attn_cp", "moe_dp")


def decode_interval(config: dict) -> int:
    v = config.get("decode_log_interval")
    return int(v) if isinstance(v, int) and v > 0 else DEFAULT_INTERVAL


REASONS = ["", "first", "prefill", "idle", "no throughput"]   # codes of the 'reason' column


def rows_where(df: pd.DataFrame, mask) -> pd.DataFrame:
    """df[mask], but df itself (not a copy of millions of rows) when the mask keeps every row."""
    m = np.asarray(mask, dtype=bool)
    return df if m.all() else df[m]


def _series_codes(frames: list[pd.DataFrame]) -> tuple[list[np.ndarray], list[str]]:
    """Series of every row of each frame, as codes into one list of labels 'dp|pp|attn_cp|moe_dp'
    ('-' for a tag the line lacks), shared by the frames (decode and prefill lines)."""
    if not any(t in df.columns and df[t].notna().any() for df in frames for t in SERIES_TAGS) \
            and not any("part" in df.columns for df in frames):
        # one series (no DP/PP tags: the usual single-scheduler log)
        return [np.zeros(len(df), dtype=np.int8) for df in frames], ["-|-|-|-"]
    keys = []
    for df in frames:
        key = np.zeros(len(df), dtype=np.int64)
        for t in SERIES_TAGS:
            key <<= 15
            if t in df.columns:
                key += df[t].to_numpy(dtype=np.int64, na_value=-1) + 1
        if "engine" in df.columns:     # vLLM rows: series of their own (bit 62)
            key += is_value(df["engine"], "vllm").astype(np.int64) << 62
        keys.append(key)
    light = any(is_light(df) for df in frames)
    codes, uniques = _factorize(np.concatenate(keys), light) if keys else ([], [])
    labels = []
    for k in uniques:
        parts = []
        for i in range(len(SERIES_TAGS)):
            v = (int(k) >> (15 * (len(SERIES_TAGS) - 1 - i))) & 0x7FFF
            parts.append("-" if v == 0 else str(v - 1))
        labels.append(("vllm " if int(k) >> 62 else "") + "|".join(parts))
    if any("part" in df.columns for df in frames):
        # a configuration's segments pooled (api.ConfigSegment.parts): each part a series
        part = np.concatenate([df["part"].to_numpy(dtype=np.int64) if "part" in df.columns
                               else np.zeros(len(df), dtype=np.int64) for df in frames])
        n = int(part.max()) + 1
        codes, firsts = _factorize(np.asarray(codes, dtype=np.int64) * n + part, light)
        labels = [f"{labels[int(f) // n]} part {int(f) % n + 1}" for f in firsts]
    out, at = [], 0
    for key in keys:
        out.append(np.asarray(codes[at:at + len(key)]))
        at += len(key)
    return out, labels


def _factorize(keys: np.ndarray, light: bool) -> tuple[np.ndarray, np.ndarray]:
    """pd.factorize of integer keys: each key's code in the order the keys first occur, and
    the distinct keys in that order.  pandas' hash table for DataFrames; for light frames
    (frame.py) numpy's sort, the same codes, and no pandas."""
    if not light:
        return pd.factorize(keys)
    uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return rank[inv.reshape(-1)], uniq[order]


def _reasons(reason: np.ndarray, lines: np.ndarray, ts: np.ndarray | None,
             plines: np.ndarray, prompt: np.ndarray | None = None) -> None:
    """Mark, in place, why windows of ONE series (in line order) are not clean: 1 first,
    2 a prefill line since the previous decode line, 3 an idle gap."""
    if reason[0] == 0:
        reason[0] = 1
    rest = reason[1:]                                    # a view: written through
    if len(plines):
        # a window with a prefill line printed after the previous decode line and before its
        # own: the decode line each prefill line comes before (prefill lines are the fewer)
        after = np.searchsorted(lines, plines)
        hit = np.zeros(len(lines), dtype=bool)
        hit[after[(after > 0) & (after < len(lines))]] = True
        rest[hit[1:] & (rest == 0)] = 2
        del after, hit
    if prompt is not None:
        rest[(prompt[1:] > 0) & (rest == 0)] = 2
    if ts is not None and len(ts) > 2 and not (ts == np.iinfo(np.int64).min).any():
        gap = np.subtract(ts[1:], ts[:-1], dtype=np.float64)   # exact: µs stamps are < 2**53
        gap /= 1e6
        med = np.median(gap)
        if med > 0:
            rest[(gap > IDLE_FACTOR * med) & (rest == 0)] = 3


def _running(w: pd.DataFrame) -> np.ndarray:
    """running_req as floats (NaN where not printed), an array of its own."""
    r = w["running_req"].to_numpy(dtype=float, na_value=np.nan)
    return r if w["running_req"].dtype == "Int64" else r.copy()   # Int64 converts to a new one


def tokens_per_iter(w: pd.DataFrame) -> np.ndarray:
    """Tokens one decode iteration of each window produced: accept_len × running_req on
    speculative lines, running_req (a token a request) on the others.  Computed when asked
    (8 bytes a window kept for nothing otherwise)."""
    r = _running(w)
    a = w["accept_len"].to_numpy(dtype=float)
    out = a * r
    np.copyto(out, r, where=~np.isfinite(a))
    return out


def derived_ms(w: pd.DataFrame) -> np.ndarray:
    """Each window's derived cycle (step) time, 1000 × tokens_per_iter / gen_throughput; NaN
    where the line has no positive throughput or batch size."""
    out = tokens_per_iter(w)
    g = w["gen_throughput"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out *= 1000.0
        out /= g
    out[~((g > 0) & _positive(w["running_req"]))] = np.nan
    return out


def _positive(col: pd.Series) -> np.ndarray:
    """col > 0 as booleans, False where the value is missing"""
    return (col > 0).to_numpy(dtype=bool, na_value=False)


def windows(decode: pd.DataFrame, prefill: pd.DataFrame, interval: int) -> pd.DataFrame:
    """Decode lines of ONE source as windows, in line order, with columns
    series, running_req, accept_len, gen_throughput, req_steps, clean, reason (why not clean:
    'first', 'prefill', 'idle', 'no throughput'); tokens_per_iter(w) and derived_ms(w) give
    the per-window token counts and derived cycle times."""
    cols = [c for c in ("source", "line_no", "startup", "timestamp", "running_req", "accept_len",
                        "accept_rate", "gen_throughput", "header", "tp", "engine", "drafts",
                        "prompt_throughput") + SERIES_TAGS
            if c in decode.columns]
    d = decode[cols]
    if "accept_len" in d.columns:
        a = d["accept_len"].to_numpy(dtype=float)
        if (a < 1).any():
            # below 1 is no accept length (the bonus token makes every window's value ≥ 1): a
            # window without a verify prints 0.00; it is a window without a spec sample
            d = d.assign(accept_len=np.where(a < 1, np.nan, a))
    if not d["line_no"].is_monotonic_increasing:
        d = d.sort_values("line_no")
    d = d.reset_index(drop=True)
    if d.empty:
        return d.assign(series=[], req_steps=[], derived_ms=[], clean=[], reason=[])
    (key, pkey), labels = _series_codes([d, prefill])
    if "tp" in d.columns and d["tp"].notna().any():
        # several TP ranks printing one series: keep the lowest
        tp = d["tp"].to_numpy(dtype=np.int64, na_value=-1)
        low = tp.min() if len(labels) == 1 else \
            pd.Series(tp).groupby(key).transform("min").to_numpy()
        keep = tp == low
        if not keep.all():
            d, key = d[keep].reset_index(drop=True), key[keep]
    new = {"series": pd.Categorical.from_codes(key, labels)}   # the columns added, set at once
    # each array below is a column of the result or freed at once: a gigabyte log has millions
    # of windows, and every fresh array of them is page faults before it is arithmetic
    # 'no throughput': no derived time, i.e. no positive throughput or batch size (the values
    # a log prints, at most 40 digits, keep 1000 × accept × running / throughput finite)
    reason = np.full(len(d), 4, dtype=np.int8)
    reason[(d["gen_throughput"].to_numpy(dtype=float) > 0) & _positive(d["running_req"])] = 0
    r = _running(d)
    r *= interval                                      # request-steps
    if "drafts" in d.columns:          # vLLM: the exact number of (request, verify) steps
        dr = d["drafts"].to_numpy(dtype=float, na_value=np.nan)
        np.copyto(r, dr, where=np.isfinite(dr))
    new["req_steps"] = r
    lines = d["line_no"].to_numpy(dtype=np.int64)
    plines = prefill["line_no"].to_numpy(dtype=np.int64) if len(prefill) else np.empty(0, np.int64)
    ts = d["timestamp"].to_numpy(dtype="datetime64[us]").view(np.int64) \
        if "timestamp" in d.columns else None
    # vLLM: a window with prefill work is one whose prompt throughput is above 0
    pt = d["prompt_throughput"].to_numpy(dtype=float, na_value=np.nan) \
        if "prompt_throughput" in d.columns else None
    if len(labels) == 1:                       # one series: views, no index arrays
        _reasons(reason, lines, ts, plines, pt)
    else:
        order = np.argsort(key, kind="stable")    # rows of each series, in line order
        for idx in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
            sub = reason[idx]
            _reasons(sub, lines[idx], ts[idx] if ts is not None else None,
                     plines[pkey == key[idx[0]]], pt[idx] if pt is not None else None)
            reason[idx] = sub
    new["reason"] = pd.Categorical.from_codes(reason, REASONS)
    new["clean"] = reason == 0
    # one frame sharing the decode columns' arrays (setting columns one by one copies each)
    return pd.DataFrame({**{c: d[c].array for c in d.columns}, **new}, copy=False)
