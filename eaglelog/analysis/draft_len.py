"""The most tokens one cycle can commit per request, from the metric lines themselves, for a log
without a config line (break-even's aggregate-baseline guard needs it).

* vLLM: k + 1, k the ``k`` column of the spec lines: V0 ``Number of speculative tokens``, V1 the
  length of the per-position acceptance list (vllm.md §2.1, §3.2).
* SGLang: ``accept rate`` is a function of ``accept len`` L and the draft shape whose formula
  changed by release (sglang.md §3.2): L / (S + 1), L / K, then (L − 1) / (K − 1).  So L / rate
  or 1 + (L − 1) / rate is the same whole number on every line — S + 1 or K, and K ≥ S + 1 (a
  tree's K is more: a looser bound, never a tighter one).  The reading that is a whole number
  within the printing's rounding (2 decimals each) on most lines is taken; where both are,
  the larger.
"""
from __future__ import annotations

import numpy as np

from ..api import ParsedLog
from . import rate

PRINTED = 0.005        # half a unit of the second decimal (accept len, accept rate)
AGREE = 0.9            # share of the lines a reading must fit
LEAST = 3              # lines with both numbers needed


def max_tokens_of_rows(log: ParsedLog, source: str) -> tuple[int, str] | None:
    """(the most tokens a cycle commits, where that came from), or None."""
    if "vllm_spec" in log.tables:
        k = log.values(source, "vllm_spec", "k")
        k = k[np.isfinite(k) & (k > 0)]
        if len(k):
            var = log.values(source, "vllm_spec", "variant", object)
            v0 = bool(len(var)) and all(str(v).startswith("v0") for v in var)
            where = "'Number of speculative tokens'" if v0 else "per-position acceptance lists"
            return int(k.max()) + 1, f"k + 1, k = {int(k.max())} from the spec lines' {where}"
    L = log.values(source, "decode", "accept_len")
    R = log.values(source, "decode", "accept_rate")
    if not len(L) or not len(R):
        return None
    if rate.fast_available() and len(L) == len(R):
        return _from_readings(*rate._floats(L, R))
    ok = np.isfinite(L) & np.isfinite(R) & (L >= 1) & (R > 0)
    if int(ok.sum()) < LEAST:
        return None
    L, R = L[ok], R[ok]
    found = []
    for c, tol in ((L / R, L / R * (PRINTED / L + PRINTED / R)),
                   (1 + (L - 1) / R, (L - 1) / R * (PRINTED / np.maximum(L - 1, 1e-9)
                                                    + PRINTED / R))):
        n = int(round(float(np.median(c))))
        if n >= 2 and np.mean(np.abs(c - n) <= tol + 1e-9) >= AGREE:
            found.append(n)
    return _found(found)


def _found(found: list[int]) -> tuple[int, str] | None:
    if not found:
        return None
    return max(found), ("K (num_steps + 1 for a chain) from accept len / accept rate on the "
                        "decode lines")


def _from_readings(L: np.ndarray, R: np.ndarray) -> tuple[int, str] | None:
    """max_tokens_of_rows's readings in C (rate._ratekern: k_readings, then k_hits), without
    an array of the lines' tolerances: the same numbers, the same answer."""
    found = []
    c = np.empty(len(L))
    for mode in (0, 1):
        m = rate._ratekern.k_readings(L, R, mode, c)
        if m < LEAST:
            return None
        n = int(round(rate._median(c[:m])))
        if n >= 2 and rate._ratekern.k_hits(L, R, mode, float(n), PRINTED) / m >= AGREE:
            found.append(n)
    return _found(found)
