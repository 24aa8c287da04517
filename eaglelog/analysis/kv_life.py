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
import pandas as pd

from . import rate

MIN_FINISHED = 2          # finished requests needed for a life


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
    if "engine" in decode.columns and (decode["engine"].astype("string") == "vllm").any():
        return None
    d = decode
    if "tp" in d.columns and d["tp"].notna().any():
        tp = d["tp"].to_numpy(dtype=float, na_value=np.nan)
        low = tp == np.nanmin(tp)
        if not low.all():          # (one rank printing: every row; no copy of the frame)
            d = d[low]
    d = d.sort_values("line_no") if not d["line_no"].is_monotonic_increasing else d
    kv = d["num_tokens"].to_numpy(dtype=float, na_value=np.nan)
    r = d["running_req"].to_numpy(dtype=float, na_value=np.nan)
    a = d["accept_len"].to_numpy(dtype=float, na_value=np.nan)
    line = d["line_no"].to_numpy(dtype=np.int64)
    joins = np.zeros(len(d))
    jtok = np.zeros(len(d))
    prompt = prompt_var = np.nan
    if len(prefill) and "line_no" in prefill.columns:
        pl = prefill["line_no"].to_numpy(dtype=np.int64)
        seq = prefill["new_seq"].to_numpy(dtype=float, na_value=np.nan) \
            if "new_seq" in prefill.columns else np.ones(len(prefill))
        tok = prefill["new_token"].to_numpy(dtype=float, na_value=np.nan) \
            if "new_token" in prefill.columns else np.full(len(prefill), np.nan)
        if "cached_token" in prefill.columns:
            tok = tok + np.nan_to_num(prefill["cached_token"].to_numpy(dtype=float,
                                                                      na_value=np.nan))
        ok = np.isfinite(seq) & np.isfinite(tok) & (seq > 0)
        at = np.searchsorted(line, pl[ok])        # the decode line each prefill line precedes
        inside = at < len(d)
        joins = np.bincount(at[inside], weights=seq[ok][inside], minlength=len(d))
        # each admitted request holds its prompt and the first token the prefill made
        jtok = np.bincount(at[inside], weights=(tok + seq)[ok][inside], minlength=len(d))
        if seq[ok].sum() > 0:
            prompt = float(tok[ok].sum() / seq[ok].sum())
            # one prompt's variance: a line's mean over its m prompts varies as σ²/m
            m, x = seq[ok], tok[ok] / seq[ok]
            prompt_var = float((m * (x - prompt) ** 2).sum() / max(len(m) - 1, 1))
    if not np.isfinite(prompt):
        return None
    if rate.fast_available():
        # (the accept length's mean and the sums below in one pass each, in C: _ratekern)
        a_run, n_sum, nv, s2 = rate._ratekern.kv_life_sums(
            *rate._floats(kv, r, a, joins, jtok), float(interval), prompt, prompt_var)
        if not np.isfinite(a_run) or n_sum < MIN_FINISHED:
            return None
        return max(s2 / nv, nv / n_sum) / interval
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
