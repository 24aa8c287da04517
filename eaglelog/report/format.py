"""The formatting of numbers, intervals and the verdict sentence that every human block shares
(report/blocks.py, report/llamacpp.py, …): the bottom of the report layer, importing only the
core."""
from __future__ import annotations

import math

from ..stats import Estimate


def num(v: float | None, digits: int = 4) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    dec = max(0, digits - 1 - mag)
    return f"{v:.{dec}f}"


def ms2(e: Estimate | None, missing: str = "n/a") -> str:
    """A time in ms with two decimals (``missing`` where there is none, or it is not a
    number)."""
    if e is None or e.estimate is None or not math.isfinite(e.estimate):
        return missing
    return f"{e.estimate:.2f}"


def ci(e: Estimate, digits: int = 4) -> str:
    if not e.sufficient:
        return "insufficient data"
    if e.ci_low == e.ci_high and e.n is None:
        return "exact"
    return f"[{num(e.ci_low, digits)} … {num(e.ci_high, digits)}]"


def row(label: str, e: Estimate, unit: str = "", digits: int = 4, source: bool = True) -> str:
    value = f"{num(e.estimate, digits)}{unit}"
    src = f"  {e.source}" if source and e.source else ""
    return f"  {label:<20}{value:>11}  {ci(e, digits):<22}{src}".rstrip()


def pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}%"


def verdict_sentence(r) -> str:
    sp = r.speedup
    conf = f"{r.confidence:.0%}"
    reason = getattr(r, "verdict_reason", None)
    if r.verdict == "insufficient data":
        return ("insufficient data: fewer than 2 usable windows or blocks behind the cycle or "
                "the accept length (a series' first window only starts it): nothing to "
                "estimate an interval from")
    if r.verdict == "needs accept length":
        be = r.breakeven_accept_len
        interval = ci(be) if be.sufficient else "(no interval: fewer than 2 blocks)"
        return (f"NO VERDICT: pays when the accept length exceeds {num(be.estimate)} "
                f"{interval}; {reason}")
    if r.verdict == "partial":
        return f"PARTIAL: {reason}"
    if r.verdict == "mixed":
        pooled = (f"; over the run's batch mix {num(sp.estimate, 3)}× {ci(sp, 3)}"
                  if math.isfinite(sp.estimate) else "")
        return f"MIXED: {reason}{pooled} (see the table)"
    if r.verdict == "invalid baseline":
        return f"INVALID BASELINE: {reason} (see the note)"
    if r.verdict == "above":
        bound = " at least" if getattr(r, "cycle_kind", "") == "upper bound" else ""
        return (f"ABOVE break-even:{bound} {num(sp.estimate, 3)}× the baseline "
                f"({pct(sp.estimate - 1)} faster; {conf} CI {pct(sp.ci_low - 1)} – "
                f"{pct(sp.ci_high - 1)} faster)")
    if r.verdict == "below":
        return (f"BELOW break-even: {num(sp.estimate, 3)}× the baseline "
                f"({pct(1 - sp.estimate)} slower; {conf} CI {pct(1 - sp.ci_high)} – "
                f"{pct(1 - sp.ci_low)} slower)")
    if reason:
        return (f"INCONCLUSIVE: {num(sp.estimate, 3)}× the baseline at least ({reason}; "
                f"{conf} interval of the bound {ci(sp, 3)})")
    return (f"INCONCLUSIVE: {num(sp.estimate, 3)}× the baseline, but the {conf} interval "
            f"{ci(sp, 3)} contains 1")
