"""How long the requests that fill a run's windows live, from the KV usage its decode lines
print — for logs without Finish lines (SGLang's default: ``log_requests`` off).

A window's accept length holds each running request for the request's whole life, so the
correlation between windows reaches as far as the requests whose steps fill them.  With
heavy-tailed outputs a few long requests fill most of the run, and their reach is the
request-step-weighted life Σ v² / Σ v (v: a request's verify steps), far longer than the mean
life Σ B̃ / admissions (docs/statistics.md, 'Requests that outlive the autocorrelation').

SGLang's ``#token`` is the KV slots in use: ``max_total_num_tokens − (available +
evictable)`` (sglang 0.5.23: srt/managers/scheduler_components/pool_stats_observer.py:235–239).
A finished request's slots go to the radix tree unlocked (evictable), so between two decode
lines of one scheduler

    Δ#token = tokens committed in the window + the prefills' tokens (#new-token + #cached-token,
              each admitted request's prompt and its first token) − the finished requests' lengths

and the finished requests are r_before + admitted − r_after.  Each finished request's length
less the mean prompt, over the run's accept length, is its verify steps; a window where several
finish shares its total among them equally (which can only shorten the weighted life: a lower
bound, as the Finish lines' figure is for requests still running at the end).  Each estimate
carries its prompts' deviation from the mean prompt, whose variance (from the prefill lines) is
taken out of Σ v².
"""
from __future__ import annotations

import numpy as np
from .._lazy import pd
from ..frame import is_value

from . import rate

MIN_FINISHED = 2          # finished requests needed for a life


def _num(col: pd.Series) -> tuple[np.ndarray, int, np.ndarray]:
    """(values, kind, mask) of a column as _ratekern.kv_life_sums reads it: a nullable integer
    column's own data and mask (kind 1: int64, 2: int32), a float column's own array (kind 0,
    no mask), anything else as floats (a copy)."""
    arr = col.array
    data, mask = getattr(arr, "_data", None), getattr(arr, "_mask", None)
    if isinstance(data, np.ndarray) and isinstance(mask, np.ndarray) and \
            data.dtype in (np.int64, np.int32) and mask.dtype == bool and \
            data.shape == mask.shape == (len(col),):
        return (np.ascontiguousarray(data), 1 if data.dtype == np.int64 else 2,
                np.ascontiguousarray(mask))
    return (np.ascontiguousarray(col.to_numpy(dtype=float, na_value=np.nan)), 0,
            np.zeros(0, dtype=bool))


def _floats(col: pd.Series) -> np.ndarray:
    return col.to_numpy(dtype=float, na_value=np.nan)


def _lowest_tp(d: pd.DataFrame) -> np.ndarray | None:
    """The rows of the lowest TP rank printing (a row printing none is not one of them), or
    None when that is every row: one rank printing, the usual log (no float copy of the
    column, no copy of the frame)."""
    if "tp" not in d.columns:
        return None
    v, kind, miss = _num(d["tp"])
    if kind:
        if len(miss) and miss.all():
            return None
        lo = v.min(initial=np.iinfo(v.dtype).max, where=~miss) if miss.any() else v.min()
        if not miss.any() and v.max() == lo:
            return None
        low = v == lo
        low &= ~miss
    else:
        if np.isnan(v).all():
            return None
        low = v == np.nanmin(v)
    return None if low.all() else low


def _joins(prefill: pd.DataFrame, line: np.ndarray):
    """The prefill lines' contributions by the decode line each precedes, sparse: (the decode
    rows that prefill lines precede, ascending, each once; the requests they admitted there;
    those requests' prompt and first tokens), and the mean prompt and one prompt's variance
    (NaN: no prefill line with both); the sums are np.bincount's over the dense rows, the
    same additions in the same order."""
    prompt = prompt_var = np.nan
    none = np.empty(0, dtype=np.int64), np.empty(0), np.empty(0)
    if not len(prefill) or "line_no" not in prefill.columns:
        return none, prompt, prompt_var
    pl = prefill["line_no"].to_numpy(dtype=np.int64)
    seq = _floats(prefill["new_seq"]) if "new_seq" in prefill.columns \
        else np.ones(len(prefill))
    tok = _floats(prefill["new_token"]) if "new_token" in prefill.columns \
        else np.full(len(prefill), np.nan)
    if "cached_token" in prefill.columns:
        tok = tok + np.nan_to_num(_floats(prefill["cached_token"]))
    ok = np.isfinite(seq) & np.isfinite(tok) & (seq > 0)
    at = np.searchsorted(line, pl[ok])        # the decode line each prefill line precedes
    inside = at < len(line)
    at = at[inside]
    u, inv = np.unique(at, return_inverse=True)
    joins = np.bincount(inv, weights=seq[ok][inside], minlength=len(u)).astype(float)
    # each admitted request holds its prompt and the first token the prefill made
    jtok = np.bincount(inv, weights=(tok + seq)[ok][inside], minlength=len(u)).astype(float)
    if seq[ok].sum() > 0:
        prompt = float(tok[ok].sum() / seq[ok].sum())
        # one prompt's variance: a line's mean over its m prompts varies as σ²/m
        m, x = seq[ok], tok[ok] / seq[ok]
        prompt_var = float((m * (x - prompt) ** 2).sum() / max(len(m) - 1, 1))
    return (u.astype(np.int64), joins, jtok), prompt, prompt_var


def kv_lifetime(decode: pd.DataFrame, prefill: pd.DataFrame, interval: int) -> float | None:
    """The request-step-weighted life in windows (Σ v² / Σ v / interval) of the requests the
    KV usage shows finishing, or None: no ``#token`` column, several series (DP, TP ranks
    printing apart: the pool is per scheduler), no accept length, fewer than MIN_FINISHED."""
    need = ("num_tokens", "running_req", "accept_len", "line_no")
    if not interval or len(decode) < 3 or any(c not in decode.columns for c in need):
        return None
    for tag in ("dp", "pp", "attn_cp", "moe_dp", "part"):
        if tag in decode.columns and decode[tag].nunique(dropna=True) > 1:
            return None
    if "engine" in decode.columns and is_value(decode["engine"], "vllm").any():
        return None
    d = decode
    low = _lowest_tp(d)
    if low is not None:
        d = d[low]
    del low
    d = d.sort_values("line_no") if not d["line_no"].is_monotonic_increasing else d
    line = d["line_no"].to_numpy(dtype=np.int64)
    (at, joins, jtok), prompt, prompt_var = _joins(prefill, line)
    if not np.isfinite(prompt):
        return None
    a = np.ascontiguousarray(_floats(d["accept_len"]))    # (a float column: its own array)
    if rate.fast_available():
        # (the accept length's mean and the sums below in one pass each, in C: _ratekern; the
        # #token and #running-req columns read where the table keeps them, no float copies,
        # and the prefill lines' contributions at the lines they precede only)
        a_run, n_sum, nv, s2 = rate._ratekern.kv_life_sums(
            *_num(d["num_tokens"]), *_num(d["running_req"]), a, at, joins, jtok,
            float(interval), prompt, prompt_var)
        if not np.isfinite(a_run) or n_sum < MIN_FINISHED:
            return None
        return max(s2 / nv, nv / n_sum) / interval
    kv, r = _floats(d["num_tokens"]), _floats(d["running_req"])
    dense = np.zeros(len(d)), np.zeros(len(d))
    dense[0][at], dense[1][at] = joins, jtok
    joins, jtok = dense
    a_run = np.nanmean(np.where(a >= 1, a, np.nan)) if (a >= 1).any() else np.nan
    if not np.isfinite(a_run):
        return None
    bt = (r[1:] + r[:-1]) / 2                     # the window's mean batch (trapezoid)
    committed = np.where(a[1:] >= 1, a[1:], a_run) * bt * interval
    fin = r[:-1] + joins[1:] - r[1:]
    length = committed + jtok[1:] - (kv[1:] - kv[:-1])
    ok = np.isfinite(fin) & np.isfinite(length) & (fin >= 1) & (length > 0)
    n = np.rint(fin[ok])
    if n.sum() < MIN_FINISHED:
        return None
    out = np.maximum(length[ok] / n - prompt, 1.0)       # each one's output tokens
    v = out / a_run                                       # its verify steps
    # each estimate carries its prompts' deviation from the mean (variance σ²/n for a window
    # where n finished): Σ n v² holds Σ σ² / a² of it, taken out (a single stream with
    # 400-token prompts and 120-token outputs had come out 3–4× its Finish lines' life);
    # never below the mean life of the same requests
    s2 = n * v * v - (prompt_var / (a_run * a_run) if np.isfinite(prompt_var) else 0.0)
    life = float(s2.sum() / (n * v).sum())
    return max(life, float((n * v).sum() / n.sum())) / interval
