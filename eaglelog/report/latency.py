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


def _acc(v: float) -> str:
    return f"{v:.2f}"


def _with_acceptance(r: LatencyResult):
    """(point, arm, its acceptance) of every arm that read per-request accept lengths."""
    for p in r.points:
        for a in (p.spec, p.baseline):
            if a is not None and a.acceptance is not None:
                yield p, a, a.acceptance


def acceptance_rows(r: LatencyResult) -> list[dict]:
    """One row per arm with per-request accept lengths (docs/latency.md §2.1)."""
    out = []
    for p, a, c in _with_acceptance(r):
        row = {"load": _load_word(p.load, r.load_kind), "arm": a.arm,
               "accept len, mean": _cell(c.mean, _acc), "n": c.mean.n,
               "one sample": c.unit,
               "pooled": "n/a" if c.pooled is None else _acc(c.pooled),
               "ρ(accept, TPOT)": _cell(c.rho, lambda v: f"{v:+.2f}"),
               "TPOT p50, lower half (ms)": _cell(c.tpot_low),
               "TPOT p50, upper half (ms)": _cell(c.tpot_high)}
        out.append(row)
    return out


def acceptance_lines(r: LatencyResult) -> list[str]:
    """The acceptance of each arm in words: the mean over requests with its interval, the
    run's pooled value and, where requests carry both, the relation to TPOT."""
    lines = []
    for p, a, c in _with_acceptance(r):
        s = (f"{_load_word(p.load, r.load_kind)} {a.arm}: accept length "
             f"{_cell(c.mean, _acc)} (mean over {c.mean.n:,} {_plural(c.unit, c.mean.n)})")
        if c.pooled is not None:
            s += f", pooled {_acc(c.pooled)} ({c.pooled_def})"
        if c.rho is not None:
            s += (f"; against TPOT: Spearman ρ {_cell(c.rho, lambda v: f'{v:+.2f}')} over "
                  f"{c.paired:,} requests")
        if c.tpot_low is not None and c.tpot_high is not None:
            s += (f", TPOT p50 {_cell(c.tpot_low)} ms below the median accept length, "
                  f"{_cell(c.tpot_high)} ms above")
        lines.append(s)
    return lines


def _plural(unit: str, n: int) -> str:
    if n == 1:
        return unit
    head, sep, tail = unit.partition(", ")
    return head + "s" + (sep + tail.replace("its ", "their ") if sep else "")


def _load_word(load: float, kind: str) -> str:
    if kind == "rate":
        return "all at once" if load == math.inf else f"{load:g} req/s"
    return f"concurrency {load:g}"


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
    acc = acceptance_lines(r)
    if acc:
        lines.append("")
        lines.append(f"acceptance (tokens a verify step — for specdec_bench a streamed chunk; "
                     f"the mean over requests with its {r.confidence:.0%} t interval, the "
                     "pooled value the tool's own; ρ: Spearman, Bonett–Wright interval; the "
                     "halves' TPOT p50: order-statistic intervals):")
        lines.extend("  " + x for x in acc)
    lines.append("")
    lines.append("verdict: " + r.verdict)
    return "\n".join(lines) + "\n"


def markdown_rows(r: LatencyResult) -> list[list[dict]]:
    verdicts = [{"load": f"{p.load:g}", "verdict": p.verdict} for p in r.points]
    acc = acceptance_rows(r)
    return [rows(r), verdicts] + ([acc] if acc else []) + [[{"verdict": r.verdict}]]
