"""`eaglelog acceptance`: the per-position table as a human block, its rounded rows for
-f markdown, and its figure (docs/acceptance.md).  The numbers are those of
analysis.acceptance; nothing is recomputed here."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..stats import Estimate
from .blocks import num
from .requests import tabulate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.acceptance import AcceptanceResult, Curve

UNIT_WORD = {"request": "request", "window": "window", "run": "whole-run total"}


def _value(e: Estimate, reached: float | None = None) -> str:
    if reached == 0 and e.estimate == 0:
        return "0 (none reached)"
    if not math.isfinite(e.estimate):
        return "n/a"
    if not e.sufficient:
        return f"{num(e.estimate)}  insufficient data"
    return f"{num(e.estimate)}  [{num(e.ci_low)} … {num(e.ci_high)}]"


def _count(v: float) -> str:
    if not math.isfinite(v):
        return "?"
    return f"{v:,.0f}" if abs(v - round(v)) < 1e-6 else f"{v:,.1f}"


def position_rows(c: "Curve") -> list[dict]:
    """The rounded, labelled table of one curve (what -f markdown prints, with the run)."""
    rows = []
    for p in c.positions:
        rows.append({"i": str(p.position),
                     "P(accept ≥ i) [CI]": _value(p.reach, p.reached),
                     "P(≥ i | ≥ i−1) [CI]": _value(p.conditional, p.reached if p.base else None)
                     if p.position > 1 else "= P(accept ≥ 1)",
                     "reached i": _count(p.reached), "reached i−1": _count(p.base)})
    return rows


def markdown_rows(result: "AcceptanceResult") -> list[dict]:
    return [{"run": c.run, "source": c.origin, **row} for c in result.curves
            for row in position_rows(c)]


def _sizes(c: "Curve") -> str:
    drafts = "" if not math.isfinite(c.drafts) else \
        f", {_count(c.drafts)} {'verifies' if c.origin == 'sglang-histogram' else 'drafts'}"
    if c.unit == "run":
        return f"one whole-run total{drafts}"
    return f"{c.samples:,} {c.unit}s{drafts}"


def acceptance_block(result: "AcceptanceResult") -> str:
    conf = f"{result.confidence:.0%}"
    out = []
    for c in result.curves:
        out.append(f"{c.run}   {c.what}   {_sizes(c)}   (intervals: {conf} confidence)")
        out.append(f"  model: {c.model}"
                   + (f"; autocorrelation time {c.autocorr_time:.2g} windows, {c.batches} "
                      "batches" if c.unit == "window" and c.batches else ""))
        rows = position_rows(c)
        table = tabulate([list(r.values()) for r in rows], headers=list(rows[0].keys()),
                         tablefmt="simple", disable_numparse=True)
        out.extend("  " + line for line in table.split("\n"))
        idt = c.identity
        out.append(f"  {'τ = 1 + Σ P(accept ≥ i)':<26}{_value(idt.tau)}")
        if idt.logged is None:
            out.append(f"  {'logged accept length':<26}not printed: identity not checked")
        else:
            verdict = {"holds": "identity holds",
                       "within interval": "identity holds within the interval",
                       "mismatch": "MISMATCH (see the note)"}[idt.status]
            out.append(f"  {'logged accept length':<26}{num(idt.logged)}  ({idt.logged_as}): "
                       f"{verdict}, difference {idt.difference:+.4f} (rounding allows "
                       f"±{idt.tolerance:.2g})")
        for n in c.notes:
            out.append(f"  note: {n}")
        out.append("")
    for n in result.notes:
        out.append(f"note: {n}")
    return "\n".join(out).rstrip("\n") + "\n"


# ----------------------------------------------------------------------------- figure

def _label(c: "Curve") -> str:
    from .plot import _run_label

    src = {"sglang-histogram": "SGLang histogram", "llamacpp-request": "llama.cpp requests",
           "vllm-window": "vLLM windows", "vllm-counters": "vLLM counters",
           "llamacpp-statistics": "llama.cpp statistics", "vllm-bench-serve": "vllm bench serve",
           "vllm-offline": "vLLM offline"}.get(c.origin, c.origin)
    extra = f" (line {c.lines[0]})" if c.unit == "run" else ""
    return f"{_run_label(c.run).replace(chr(10), ' ')}: {src}{extra}"


def acceptance_figure(result: "AcceptanceResult") -> "Figure":
    """Left: P(accept ≥ i) against the position i, one line per curve, interval whiskers
    (none, and a hollow marker, where the data are insufficient), τ in the legend; right: the
    conditional rates P(accept ≥ i | accept ≥ i − 1).  Positions nothing reached are left out
    of the right panel (undefined) and drawn at 0 on the left."""
    from . import plot

    mpl = plot._mpl()
    import numpy as np

    with mpl.rc_context(plot._style()):
        fig = plot._new_figure(11.0, 4.4)
        ax, ax2 = fig.subplots(1, 2)
        conf = f"{result.confidence:.0%}"
        n = len(result.curves)
        for j, c in enumerate(result.curves):
            colour = plot.SERIES_COLOURS[j % len(plot.SERIES_COLOURS)]
            off = (j - (n - 1) / 2) * 0.06 if n > 1 else 0.0   # whiskers side by side
            xs = np.array([p.position for p in c.positions], dtype=float) + off
            reach = [p.reach for p in c.positions]
            err = np.array([plot._err(e) for e in reach]).T
            tau = c.identity.tau
            ax.errorbar(xs, [e.estimate for e in reach], yerr=err, fmt="o-", ms=4, lw=1.4,
                        capsize=3, color=colour,
                        label=f"{_label(c)}, τ = {tau.estimate:.3f}")
            weak = [(x, e.estimate) for x, e in zip(xs, reach) if not e.sufficient]
            if weak:      # no interval (insufficient data): hollow markers
                ax.scatter([x for x, _ in weak], [y for _, y in weak], s=30, zorder=4,
                           facecolors="white", edgecolors=colour, lw=1.2)
            cond = [(x, p.conditional) for x, p in zip(xs, c.positions)
                    if math.isfinite(p.conditional.estimate) and p.base > 0]
            if cond:
                cx = [x for x, _ in cond]
                ce = [e for _, e in cond]
                ax2.errorbar(cx, [e.estimate for e in ce],
                             yerr=np.array([plot._err(e) for e in ce]).T, fmt="s--", ms=4,
                             lw=1.2, capsize=3, color=colour)
        kmax = max(c.k for c in result.curves)
        for a in (ax, ax2):
            a.set_xticks(range(1, kmax + 1))
            a.set_xlim(0.5, kmax + 0.5)
            a.set_ylim(0, 1.02)
            a.set_xlabel("draft position i")
        ax.set_ylabel("P(accept ≥ i)")
        ax.set_title(f"reach: drafts accepting ≥ i tokens ({conf} intervals)")
        ax2.set_ylabel("P(accept ≥ i | accept ≥ i − 1)")
        ax2.set_title("conditional acceptance at position i")
        fig.legend(loc="outside lower center", frameon=False, ncols=min(2, n))
        fig.suptitle(f"acceptance by position: "
                     f"{plot._logs_title([c.run for c in result.curves], 100)}")
    return fig
