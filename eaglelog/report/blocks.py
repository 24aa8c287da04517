"""Human blocks for analysis results (hyperfine style: a fixed, aligned block per input)."""
from __future__ import annotations

import math

from ..stats import Estimate


def num(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    dec = max(0, digits - 1 - mag)
    return f"{v:.{dec}f}"


def ci(e: Estimate, digits: int = 4) -> str:
    if not e.sufficient:
        return "insufficient data"
    if e.ci_low == e.ci_high:
        return "exact"
    return f"[{num(e.ci_low, digits)} … {num(e.ci_high, digits)}]"


def row(label: str, e: Estimate, unit: str = "", digits: int = 4, source: bool = True) -> str:
    value = f"{num(e.estimate, digits)}{unit}"
    src = f"  {e.source}" if source and e.source else ""
    return f"  {label:<20}{value:>11}  {ci(e, digits):<22}{src}"


def pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}%"


def breakeven_block(r) -> str:
    conf = f"{r.confidence:.0%}"
    lines = [f"{r.source}  vs  baseline {r.baseline}   (intervals: {conf} confidence)"]
    lines.append(row("cycle time", r.cycle_ms, " ms"))
    lines.append(row("baseline step", r.baseline_step_ms, " ms"))
    lines.append(row("break-even accept", r.breakeven_accept_len, "", source=False))
    lines.append(row("accept length", r.accept_len))
    lines.append(row("speedup", r.speedup, "×", source=False))
    lines.append(f"  {'verdict':<20}{verdict_sentence(r)}")
    if r.verdict in ("below", "inconclusive") and r.cycle_ms.sufficient and \
            r.breakeven_accept_len.sufficient:
        need_cycle = r.accept_len.estimate * r.baseline_step_ms.estimate
        lines.append(f"  {'to break even':<20}accept length {num(r.accept_len.estimate)} → "
                     f"{num(r.breakeven_accept_len.estimate)} "
                     f"(+{pct(r.breakeven_accept_len.estimate / r.accept_len.estimate - 1)}), or "
                     f"cycle {num(r.cycle_ms.estimate)} → {num(need_cycle)} ms "
                     f"(−{pct(1 - need_cycle / r.cycle_ms.estimate)})")
    if r.by_batch:
        lines.append("")
        lines.append(by_batch_table(r))
    for n in r.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines) + "\n"


def verdict_sentence(r) -> str:
    sp = r.speedup
    conf = f"{r.confidence:.0%}"
    if r.verdict == "insufficient data":
        return "insufficient data: too few windows for an interval (need ≥ 10)"
    if r.verdict == "above":
        return (f"ABOVE break-even: {num(sp.estimate, 3)}× the baseline "
                f"({pct(sp.estimate - 1)} faster; {conf} CI {pct(sp.ci_low - 1)} – "
                f"{pct(sp.ci_high - 1)} faster)")
    if r.verdict == "below":
        return (f"BELOW break-even: {num(sp.estimate, 3)}× the baseline "
                f"({pct(1 - sp.estimate)} slower; {conf} CI {pct(1 - sp.ci_high)} – "
                f"{pct(1 - sp.ci_low)} slower)")
    return (f"INCONCLUSIVE: {num(sp.estimate, 3)}× the baseline, but the {conf} interval "
            f"{ci(sp, 3)} contains 1")


def by_batch_table(r) -> str:
    from tabulate import tabulate

    rows = []
    for b in r.by_batch:
        rows.append([b.batch, b.windows, num(b.cycle_ms.estimate), num(b.baseline_step_ms.estimate),
                     num(b.breakeven_accept_len.estimate), num(b.accept_len.estimate),
                     f"{num(b.speedup.estimate, 3)} {ci(b.speedup, 3)}", b.verdict])
    return tabulate(rows, headers=["running_req", "windows", "cycle ms", "step ms", "break-even",
                                   "accept len", "speedup [CI]", "verdict"],
                    tablefmt="simple", disable_numparse=True)
