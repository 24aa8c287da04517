"""`eaglelog latency`: the human block and the rounded rows of -f markdown (docs/latency.md).
The numbers are analysis.latency's; nothing is recomputed here."""
from __future__ import annotations

import math

from ..analysis.latency import LatencyResult, slo_text, span
from ..stats import Estimate
from .requests import tabulate


def _ms(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def _cell(e: Estimate | None, fmt=_ms) -> str:
    if e is None or e.estimate is None or not math.isfinite(e.estimate):
        return "n/a"
    s = span(e, fmt)
    return f"{fmt(e.estimate)} {s}" if s else fmt(e.estimate)


def _tok(v: float) -> str:
    return f"{v:.1f}"


def rows(r: LatencyResult) -> list[dict]:
    """One row per load point and arm, rounded, with units in the headers."""
    out = []
    unit = "req/s" if r.load_kind == "rate" else "conc."
    for p in r.points:
        for a in (p.spec, p.baseline):
            if a is None:
                continue
            row = {f"load ({unit})": f"{p.load:g}", "arm": a.arm, "n": a.completed}
            for m in ("ttft", "tpot"):
                for q in ("p50", "p99"):
                    row[f"{m.upper()} {q} (ms)"] = _cell(a.quantiles[m][q])
            row["ITL p99 (ms)"] = _cell(a.quantiles["itl"]["p99"])
            row["stream tok/s"] = _cell(a.per_stream_tok_s, _tok)
            row["total tok/s"] = "n/a" if a.output_tok_s is None else f"{a.output_tok_s:,.0f}"
            if r.slo:
                row["goodput (req/s)"] = _cell(a.goodput, lambda v: f"{v:.2f}")
                row["SLO"] = a.slo or ""
            out.append(row)
    return out


def latency_block(r: LatencyResult) -> str:
    pct = f"{r.confidence:.0%}"
    lines = [f"latency under load: speculation vs baseline, per load point ({pct} intervals; "
             "TTFT/TPOT: order statistics over requests, ITL and the tok/s ratio: percentile "
             f"bootstrap over requests, B = {r.resamples:,})"]
    if r.slo:
        lines.append(f"SLO {slo_text(r.slo)}: goodput = completed requests meeting every bound "
                     f"per second; a load meets it when ≥ {r.attainment:.0%} of requests do "
                     "(Wilson interval)")
    lines.append("")
    lines.append(tabulate(rows(r), "keys"))
    lines.append("")
    for p in r.points:
        lines.append(p.verdict)
    lines.append("")
    lines.append("verdict: " + r.verdict)
    return "\n".join(lines) + "\n"


def markdown_rows(r: LatencyResult) -> list[list[dict]]:
    verdicts = [{"load": f"{p.load:g}", "verdict": p.verdict} for p in r.points]
    return [rows(r), verdicts, [{"verdict": r.verdict}]]
