"""The decode windows behind a verdict, as a table (``BreakevenResult.windows()``,
``SummaryResult.windows()``; docs/api.md, "The windows behind a verdict").

A result keeps references to the rate model's arrays (analysis/rate.py ``Windows``, the fit's
masks), never a copy: the log's own memo holds them already, and the frame is built only when
asked for.  One row per decode window of the run, in line order:

    line_no      the decode line that closes the window
    time         its timestamp (NaT where the line has none)
    series       the scheduler it belongs to ('dp|pp|attn_cp|moe_dp'; '-' for a tag not printed)
    running_req  the #running-req the line prints (the batch of its last iteration)
    batch        the mean batch size over the window (B̃: the mean of two lines, or measured)
    accept_len   the accept length the line prints (NaN: none)
    wall_ms      wall time per iteration (1000 × accept × B̃ / throughput)
    prefill_ms   the fitted prefill time per iteration inside the window (β·x), taken out
    cycle_ms     wall_ms − prefill_ms: the derived pure-decode cycle
    weight       request-steps (B̃ × decode_log_interval; a vLLM window's drafts)
    in_cycle     the window counts for the derived cycle (and the baseline's step)
    in_accept    the window counts for the accept length
    left_out     why it is not in the cycle (None when in_cycle): 'first of its series',
                 'idle gap', 'stall', 'no throughput', 'warm-up', 'batch size jump',
                 'no accept len', 'outside baseline coverage', 'cycle from EAGLE3_PROF blocks'

A window left out of the cycle may still count for the accept length (the first window of a
series: its accept length is printed, its mean batch and wall time are not known).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .._lazy import pd

from . import rate

WARM_UP = "warm-up"
OUTSIDE = "outside baseline coverage"
BY_PROFILER = "cycle from EAGLE3_PROF blocks"
COLUMNS = ("line_no", "time", "series", "running_req", "batch", "accept_len", "wall_ms",
           "prefill_ms", "cycle_ms", "weight", "in_cycle", "in_accept", "left_out")


def reason_names() -> tuple[str, ...]:
    """Every reason ``left_out`` may hold."""
    names = [WARM_UP if c == rate.SKIPPED else rate.WHY[c] for c in range(1, len(rate.WHY))]
    return tuple(names) + (OUTSIDE, BY_PROFILER)


@dataclass(frozen=True, eq=False)
class Evidence:
    """The rate model's windows of one run and what its fit did with each (references)."""

    win: "rate.Windows"
    fit: "rate.RateFit"
    cycle_from_prof: bool = False     # the verdict's cycle is the EAGLE3_PROF blocks'

    def __repr__(self) -> str:
        return f"Evidence({self.win.n} windows)"

    def frame(self) -> pd.DataFrame:
        win, fit = self.win, self.fit
        n = win.n
        why = fit.why if fit.why is not None else win.why
        use = fit.use if fit.use is not None else why == rate.USED
        acc = fit.acc if fit.acc is not None else np.zeros(n, dtype=bool)
        names = np.array([None] + [WARM_UP if c == rate.SKIPPED else rate.WHY[c]
                                   for c in range(1, len(rate.WHY))], dtype=object)
        left = names[np.clip(why.astype(np.int64), 0, len(names) - 1)]
        left[(why == rate.USED) & ~use] = OUTSIDE
        in_cycle = use.copy()
        if self.cycle_from_prof:
            left[in_cycle] = BY_PROFILER
            in_cycle[:] = False
        beta = np.asarray(fit.beta, dtype=float)
        if len(beta) == win.x.shape[1] and np.isfinite(beta).all():
            pre = win.x.dot(beta)
        else:
            pre = np.full(n, np.nan)
        ts = np.asarray(win.ts, dtype=np.int64).view("datetime64[us]") \
            if win.ts is not None else np.full(n, np.datetime64("NaT"), dtype="datetime64[us]")
        labels = list(win.labels) or ["-|-|-|-"]
        codes = np.asarray(win.series, dtype=np.int64)
        series = pd.Categorical.from_codes(np.clip(codes, 0, len(labels) - 1), labels) \
            if n else pd.Categorical([], categories=labels)
        return pd.DataFrame({
            "line_no": np.asarray(win.line, dtype=np.int64),
            "time": ts,
            "series": series,
            "running_req": np.asarray(win.r, dtype=float),
            "batch": np.asarray(win.b, dtype=float),
            "accept_len": np.asarray(win.a, dtype=float),
            "wall_ms": np.asarray(win.y, dtype=float),
            "prefill_ms": pre,
            "cycle_ms": np.asarray(win.y, dtype=float) - pre,
            "weight": np.asarray(win.w, dtype=float),
            "in_cycle": in_cycle,
            "in_accept": np.asarray(acc, dtype=bool),
            "left_out": pd.Series(left, dtype=object),   # (None where used, not NaN)
        }, columns=list(COLUMNS))


def windows_of(evidence: Evidence | None, what: str) -> pd.DataFrame:
    """``evidence.frame()``, or an EaglelogError saying why ``what`` kept no decode windows."""
    if evidence is None:
        from ..errors import EaglelogError
        raise EaglelogError(f"{what}: no decode windows behind this result (a llama.cpp run, "
                            "an eaglelog export, or a log without decode lines)")
    return evidence.frame()
