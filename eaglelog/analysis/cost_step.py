"""A step in the verify's cost: a forward whose kernels pad the tokens they check to a tile
costs the same up to the tile's end and a tile more after it — a shape no polynomial in the
batch size follows (issue 34: with verify flat to 64 tokens and +5 ms a 64-token tile, the
smooth model predicted configurations across the step 15–17 % off, with intervals that
excluded the truth).

whatif's cost models (the per-batch one on EAGLE3_PROF cells, whatif_batch.BatchCost; the
derived-cycle one without them, whatif_derived) test a step against their polynomial when
their cells span several n = batch × K: a column 1[n > n*] for each n* between two measured
n with at least MIN_SIDE cells on either side, the best of them kept when it lowers the
weighted residual sum of squares more than an F test at STEP_LEVEL / (the number of n* tried)
allows (Bonferroni: the breakpoint is chosen from the data).

The step is only known to lie between the two measured n around it (``lo``, ``hi``): a
prediction at an n between them takes half the step, and half the step as its standard
uncertainty (the step may or may not apply there).
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from ..distributions import stdtr

MIN_SIDE = 2          # cells, and runs, on each side of a breakpoint
STEP_LEVEL = 0.05     # the F test's level, over every breakpoint tried


@dataclass(frozen=True)
class Step:
    """1[n > n*] with n* somewhere in (lo, hi]."""

    lo: float             # the largest measured n below the step
    hi: float             # the smallest measured n above it

    def at(self, n: float) -> tuple[float, float]:
        """(the indicator's value at n, its standard uncertainty)."""
        if n <= self.lo:
            return 0.0, 0.0
        if n >= self.hi:
            return 1.0, 0.0
        return 0.5, 0.5

    def column(self, n: np.ndarray) -> np.ndarray:
        return (np.asarray(n, dtype=float) > self.lo).astype(float)

    @property
    def text(self) -> str:
        return f"a step between n = {self.lo:g} and {self.hi:g}"


def find_step(n: np.ndarray, X: np.ndarray, rss_of, rival: np.ndarray,
              runs=None) -> Step | None:
    """The step that fits the cells best, when it is significant against the design ``X``
    (``rss_of(X')``: the weighted residual sum of squares of the fit with design X') and fits
    better than ``X`` with the column ``rival`` instead (n²: a convex verify can pass the F test
    against the line with a step in a gap of the measured n — simulated, convex hardware at 4
    clients, one run held out: 2 of 5 steps found in a gap, the held-out 5-step run predicted
    −6 % and −7 %).  ``runs``: each cell's run — a step must be
    seen inside a run (one run with cells on both sides: its batch moved across it) or across
    two runs or more on each side; a side held by one run alone, which has no cell on the
    other, is that run's own level, not a step (simulated: a convex verify with only the
    7-step run above a gap in n took a step there, and the held-out 5-step run was predicted
    −6 % and −7 %)."""
    vals = np.unique(np.round(np.asarray(n, dtype=float), 9))
    runs = np.asarray(runs if runs is not None else np.arange(len(n)), dtype=object)
    tried, best = 0, None
    for lo, hi in zip(vals[:-1], vals[1:]):
        above = n > lo
        if above.sum() < MIN_SIDE or (~above).sum() < MIN_SIDE:
            continue
        up, down = set(runs[above]), set(runs[~above])
        if not (up & down) and (len(up) < MIN_SIDE or len(down) < MIN_SIDE):
            continue
        col = above.astype(float)
        Xs = np.column_stack([X, col])
        if np.linalg.matrix_rank(Xs) < Xs.shape[1]:
            continue
        tried += 1
        rss = rss_of(Xs)
        if best is None or rss < best[1]:
            best = (Step(float(lo), float(hi)), rss)
    rss0, dof1 = rss_of(X), len(n) - X.shape[1] - 1
    if best is None or dof1 < 1 or not best[1] < rss0:
        return None
    f = (rss0 - best[1]) / (best[1] / dof1) if best[1] > 0 else math.inf
    # F(1, d) is t² on d degrees of freedom: P(F > f) = 2 P(T > √f)
    p = min(1.0, 2 * (1 - stdtr(dof1, math.sqrt(f))) * tried) if math.isfinite(f) else 0.0
    if p >= STEP_LEVEL or not best[1] < rss_of(np.column_stack([X, rival])):
        return None
    return best[0]
