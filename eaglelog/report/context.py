"""Text and markdown of ``acceptance(…, by='context')`` (analysis/context.py): one block per
source and run — what the context is, the model, a row per context bucket, the trend and the
notes."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .format import num
from .requests import tabulate

if TYPE_CHECKING:
    from ..analysis.context import ContextResult, ContextSeries


def _est(e) -> str:
    if e is None or not math.isfinite(e.estimate):
        return "n/a"
    if not e.sufficient:
        return f"{num(e.estimate)} (insufficient data)"
    return f"{num(e.estimate)} [{num(e.ci_low)} … {num(e.ci_high)}]"


def _tokens(v) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:,.0f}"


def bucket_rows(s: "ContextSeries") -> list[dict]:
    """The rounded rows of one series' buckets (the table and markdown)."""
    rows = []
    k = max((len(b.curve.positions) for b in s.buckets if b.curve is not None), default=0)
    for b in s.buckets:
        row = {"context (tokens)": b.label, s.unit + "s": f"{b.samples:,}",
               "mean context": _tokens(b.context)}
        if s.unit == "request":
            row["prompt + output"] = _tokens(b.context_total)
        row["accept len [CI]"] = _est(b.accept_len)
        if b.curve is not None:
            for p in b.curve.positions[:k]:
                row[f"P(≥{p.position})"] = num(p.reach.estimate, 3)
        rows.append(row)
    return rows


def _trend(s: "ContextSeries") -> str | None:
    t = s.trend
    if t is None:
        return None
    if not t.sufficient:
        return f"  trend               insufficient data ({t.windows:,} windows)"
    return (f"  trend               {t.slope:+.3f} tokens of accept length per doubling of the "
            f"context [{t.ci_low:+.3f} … {t.ci_high:+.3f}]: {t.verdict} ({t.windows:,} "
            f"windows, {t.batches or '?'} batches)")


def context_block(result: "ContextResult") -> str:
    """The human block of every series."""
    out = []
    conf = f"{result.confidence:.0%}"
    for s in result.series:
        out.append(f"{s.run}  ·  {s.origin}  (intervals: {conf} confidence)")
        out.append(f"  context             {s.context_from}")
        out.append(f"  model               {s.model}")
        out.append("")
        out.append(tabulate(bucket_rows(s), "keys", tablefmt="simple",
                            disable_numparse=True))
        t = _trend(s)
        if t:
            out.append(t)
        for n in s.notes:
            out.append(f"  note: {n}")
        out.append("")
    for n in result.notes:
        out.append(f"note: {n}")
    return "\n".join(out).rstrip("\n") + "\n"


def markdown_tables(result: "ContextResult") -> list[list[dict]]:
    """One rounded table per series (-f markdown)."""
    return [[{"run": s.run, "origin": s.origin, **r} for r in bucket_rows(s)]
            for s in result.series]


__all__ = ["bucket_rows", "context_block", "markdown_tables"]
