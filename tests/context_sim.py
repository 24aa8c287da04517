"""Synthetic SGLang runs whose acceptance decays with the context by a known amount (issue 39,
'context length as an axis'): decode lines (the v0.5.10 line of tests/shortlogs.py, with the
'#token' this module chooses) and Finish lines with a prompt length and a histogram.  Every
line is invented.

The window model: the mean context per running request at each decode line follows
log2 c = centre + spread × an AR(1) series of lag-1 ``ctx_phi`` (contexts drift slowly as
requests grow and are replaced); '#token' = c × #running-req; a window's context is
(T_prev + T) / (R_prev + R) (analysis/context.window_context), and its accept length

    a = accept + slope × (log2 c_window − centre) + noise × an AR(1) series of lag-1 ``phi``

printed with two decimals: ``slope`` tokens of accept length per doubling of the context.

    text, truth = context_log(windows=400, slope=-0.1, seed=1)
    a, w, c = context_series(windows=400, slope=-0.1, seed=1)     # the arrays, no text
"""
from __future__ import annotations

import datetime as _dt

import numpy as np

from shortlogs import HEADER, START, ar1, decode_line

from eaglelog.analysis.context import trend

CYCLE_MS = 25.3


def context_series(windows: int = 400, slope: float = -0.1, accept: float = 3.0,
                   noise: float = 0.15, phi: float = 0.5, centre: float = 12.0,
                   spread: float = 1.0, ctx_phi: float = 0.97, seed: int = 0,
                   interval: int = 40) -> dict:
    """The lines' batch sizes, '#token', window contexts and printed accept lengths of
    ``windows`` + 1 decode lines (the first only opens the series, with an accept length of
    its own as windows() counts it)."""
    rng = np.random.default_rng(seed)
    n = windows + 1
    lc = centre + spread * ar1(n, ctx_phi, rng)
    r = np.clip(np.rint(6 + 2 * ar1(n, 0.9, rng)), 2, 12).astype(int)
    tok = np.rint(2.0 ** lc * r).astype(int)
    c = np.empty(n)
    c[0] = tok[0] / r[0]
    c[1:] = (tok[1:] + tok[:-1]) / (r[1:] + r[:-1])
    a = accept + slope * (np.log2(c) - centre) + noise * ar1(n, phi, rng)
    a = np.round(np.clip(a, 1.0, 6.0), 2)
    return {"running_req": r, "tokens": tok, "context": c, "accept_len": a,
            "req_steps": r * interval, "slope": slope}


def context_log(windows: int = 400, seed: int = 0, **kw) -> tuple[str, dict]:
    """Decode lines of context_series (its keywords), SGLANG_LOG_MS stamps, one window a
    40 × CYCLE_MS ms; (text, the series)."""
    s = context_series(windows, seed=seed, **kw)
    out, t = [HEADER], START
    for rr, tok, a in zip(s["running_req"], s["tokens"], s["accept_len"]):
        out.append(decode_line(t, int(rr), float(a), 1000 * a * rr / CYCLE_MS,
                               tokens=int(tok)))
        t += _dt.timedelta(milliseconds=40 * CYCLE_MS)
    return "".join(out), s


def finish_line(rid: str, prompt: int, hist: list[int]) -> str:
    """A v0.5.11 Finish line (no prefix; sglang.md §7.4) with its acceptance histogram."""
    v = sum(hist)
    acc = sum(j * c for j, c in enumerate(hist))
    comp = 1 + acc + v
    s = len(hist) - 1
    return (f"Finish: obj=GenerateReqInput(rid='{rid}', stream=False), out={{'meta_info': "
            f"{{'id': '{rid}', 'finish_reason': {{'type': 'length', 'length': {comp}}}, "
            f"'prompt_tokens': {prompt}, 'weight_version': 'default', 'total_retractions': 0, "
            f"'completion_tokens': {comp}, 'cached_tokens': 0, "
            f"'spec_accept_rate': {acc / (s * v)!r}, 'spec_accept_length': {comp / v!r}, "
            f"'spec_accepted_drafts': {acc}, 'spec_proposed_drafts': {s * v}, "
            f"'spec_verify_ct': {v}, 'spec_accept_histogram': {hist}, 'e2e_latency': 0.25}}}}\n")


A = [2, 3, 3, 2]      # P(accept ≥ 1, 2, 3) = 0.8, 0.5, 0.2; τ = 2.5
B = [6, 2, 2, 0]      # 0.4, 0.2, 0.0; τ = 1.6


def finish_log() -> str:
    """Requests whose acceptance falls with the prompt: 10 of kind A at 500–900 tokens, 5 A
    and 5 B at 1,100–1,900, 10 B at 2,100–3,900 and 3 B at 9,000 (too few for a bucket of
    their own: merged into the one before)."""
    out = [HEADER]
    k = 0

    def add(prompt, h):
        nonlocal k
        out.append(finish_line(f"ctx{k:05d}", prompt, h))
        k += 1
    for i in range(10):
        add(500 + 40 * i, A)
    for i in range(10):
        add(1100 + 80 * i, A if i % 2 == 0 else B)
    for i in range(10):
        add(2100 + 180 * i, B)
    for i in range(3):
        add(9000 + i, B)
    return "".join(out)


def calibrate(n_series: int, windows: int, slope: float, phi: float, ctx_phi: float,
               seed: int) -> tuple[float, float, int]:
    """(coverage of the true slope, share of series whose interval excludes 0, intervals) of
    the trend over ``n_series`` simulated series (context_series), 95 %."""
    cover = reject = have = 0
    for k in range(n_series):
        s = context_series(windows, slope=slope, phi=phi, ctx_phi=ctx_phi, seed=seed + k)
        rr = s["running_req"].astype(float)
        b = rr.copy()
        b[1:] = (rr[1:] + rr[:-1]) / 2
        t = trend(s["accept_len"], b * 40, s["context"], 0.95)
        if not t.sufficient:
            continue
        have += 1
        cover += t.ci_low <= slope <= t.ci_high
        reject += t.ci_high < 0 or t.ci_low > 0
    return cover / max(have, 1), reject / n_series, have
