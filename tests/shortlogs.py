"""Small synthetic SGLang logs with known values, for the short-run cases of issue 33: the
EAGLE3_PROF readout alone, a few minutes of decode lines, both.  Every line is invented, in
the formats of shared/formats/sglang.md (v0.5.10 decode line, SGLANG_LOG_MS=1 prefix or
whole seconds) and eagle3_prof.md (the canonical no-sync block, printed with print()).

    text = short_log(blocks=8)                       # the 8-block readout of the brief
    text = short_log(blocks=10, windows=30, accept=2.3, accept_sd=0.2, seed=1)
"""
from __future__ import annotations

import datetime as _dt
import math

import numpy as np

START = _dt.datetime(2026, 3, 2, 14, 0, 0)
HEADER = "# SYNTHETIC LOG written by tests/shortlogs.py; every line is invented.\n"


def prof_block(total: float, verify_share: float = 0.9545, draft: float = 0.95,
               accept: float = 1.14, cycles: int = 100) -> str:
    """The canonical no-sync block: Draft steps, Target verify, Draft re-extend, Other."""
    verify = total * verify_share
    extend = max(total - draft - verify, 0.0)
    tok = int(round(accept * cycles))
    rows = [("Draft steps", draft), ("Target verify", verify), ("Draft re-extend", extend),
            ("Other overhead", 0.0)]
    out = [f"EAGLE3_PROF ({cycles} cycles, {tok} tok, no sync)"]
    for label, ms in rows:
        out.append(f"  {label + ':':<18}{ms:6.2f} ms/cyc  ({100 * ms / total:5.1f}%)")
    out.append(f"  {'TOTAL:':<18}{total:6.2f} ms/cyc")
    out.append(f"  Accept len:      {tok / cycles:.2f}")
    out.append(f"  Eff tok/s:       {1000 * tok / cycles / total:.1f}")
    return "\n".join(out) + "\n\n"


def decode_line(t: _dt.datetime, rr: int, accept: float, tput: float, ms: bool = True,
                tag: str = "TP0", tokens: int | None = None) -> str:
    """``tokens``: the '#token' printed (KV slots in use; 900 + 50 per request unless given)."""
    stamp = t.strftime("%Y-%m-%d %H:%M:%S") + (f".{t.microsecond // 1000:03d}" if ms else "")
    tok = 900 + rr * 50 if tokens is None else tokens
    return (f"[{stamp} {tag}] Decode batch, #running-req: {rr}, #token: {tok}, "
            f"token usage: 0.01, accept len: {accept:.2f}, accept rate: {accept / 6:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: 0\n")


def ar1(n: int, phi: float, rng) -> np.ndarray:
    """A stationary AR(1) series of unit variance."""
    x = np.empty(n)
    x[0] = rng.standard_normal()
    s = math.sqrt(1 - phi * phi)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + s * rng.standard_normal()
    return x


def short_log(blocks: int = 0, windows: int = 0, cycle: float = 27.28, block_jitter: float = 0.05,
              accept: float = 2.3, accept_sd: float = 0.2, phi: float = 0.3, seed: int = 0,
              rr: int = 1, interval: int = 40, ms: bool = True, verify_share: float = 0.9545,
              prof_accept: float = 1.14, derived_cycle: float | None = None) -> str:
    """``blocks`` EAGLE3_PROF blocks (TOTAL uniform within ±block_jitter of ``cycle``) and then
    ``windows`` + 1 decode lines (the first only starts the series) at batch ``rr``, each
    window's accept length ``accept`` + accept_sd × an AR(1) series of lag-1 ``phi``, its wall
    time interval × cycle (``derived_cycle`` when the decode lines' cycle is another)."""
    rng = np.random.default_rng(seed)
    out = [HEADER]
    for _ in range(blocks):
        out.append(prof_block(cycle + rng.uniform(-block_jitter, block_jitter), verify_share,
                              accept=prof_accept))
    if windows:
        c = derived_cycle or cycle
        acc = accept + accept_sd * ar1(windows + 1, phi, rng)
        t = START
        for j in range(windows + 1):
            a = float(np.clip(acc[j], 1.0, 6.0))
            tput = 1000 * a * rr / c
            out.append(decode_line(t, rr, a, tput, ms))
            t += _dt.timedelta(milliseconds=interval * c)
    return "".join(out)


def truth_speedup(accept: float, cycle: float, baseline_tok_s: float) -> float:
    """accept × baseline step / cycle: the speedup a log of ``short_log`` is written with."""
    return accept * (1000 / baseline_tok_s) / cycle


def batch_log(sizes, cycle_of, accept: float | None = 2.5, interval: int = 40,
              seed: int = 0) -> str:
    """Decode lines at the printed batch sizes ``sizes`` (one per line, in order), each window
    interval × cycle_of(size) ms long; ``accept`` None writes a baseline's lines (no accept
    len: one token per request and step)."""
    rng = np.random.default_rng(seed)
    out, t = [HEADER], START
    for r in sizes:
        c = cycle_of(r) * (1 + 0.002 * rng.standard_normal())
        stamp = t.strftime("%Y-%m-%d %H:%M:%S") + f".{t.microsecond // 1000:03d}"
        if accept is None:
            out.append(f"[{stamp} TP0] Decode batch, #running-req: {r}, #token: {900 + r * 50}, "
                       f"token usage: 0.01, cuda graph: True, gen throughput (token/s): "
                       f"{1000 * r / c:.2f}, #queue-req: 0\n")
        else:
            out.append(decode_line(t, r, accept, 1000 * accept * r / c))
        t += _dt.timedelta(milliseconds=interval * c)
    return "".join(out)
