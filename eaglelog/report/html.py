"""A self-contained HTML report: the summary, the break-even verdict, the tables and the plots in
one file that needs nothing else to be read or printed.

Everything is inline: the CSS, and each figure of ``eaglelog.report.plot`` as an <svg> element
(no scripts, no fonts, no images fetched from anywhere).  The text blocks are those of the
commands (``summary``, ``breakeven``); the tables hold the same result objects' numbers.  The
same inputs give the same bytes (no date in the file).
"""
from __future__ import annotations

import dataclasses
import html
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import EaglelogError
from .blocks import _pv, _val, breakeven_block, ci, num, summary_block, verdict_sentence

if TYPE_CHECKING:
    from ..analysis.breakeven import Baseline
    from ..api import ParsedLog

CSS = """
:root { --ink: #1a1a1a; --muted: #555; --rule: #d0d0d0; --above: #009E73; --below: #D55E00;
        --unsure: #E69F00; --bg-alt: #f5f5f5; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1040px; padding: 24px 28px 48px; color: var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       background: #fff; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--rule); }
h3 { font-size: 1.05em; margin: 20px 0 6px; word-break: break-all; }
p.meta, p.note, figcaption { color: var(--muted); font-size: 0.9em; }
pre { background: var(--bg-alt); border: 1px solid var(--rule); padding: 10px 12px;
      overflow-x: auto; font: 12.5px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace;
      white-space: pre; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 0.88em; }
th, td { border: 1px solid var(--rule); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg-alt); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 10px 0 20px; }
figure svg { display: block; max-width: 100%; height: auto; }
.verdict { display: inline-block; padding: 1px 8px; border-radius: 3px; color: #fff;
           font-weight: bold; }
.verdict.above { background: var(--above); }
.verdict.below { background: var(--below); }
.verdict.inconclusive, .verdict.insufficient { background: var(--unsure); color: #000; }
nav ul { margin: 6px 0; padding-left: 20px; columns: 2; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.85em;
         border-top: 1px solid var(--rule); padding-top: 8px; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  nav { display: none; }
  h2 { break-after: avoid; }
  figure, table, pre { break-inside: avoid; }
  pre { white-space: pre-wrap; font-size: 8pt; }
  section { break-before: auto; }
  .verdict { border: 1px solid #000; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence], numeric: Sequence[int] = ()) -> str:
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) +
           "</tr></thead>", "<tbody>"]
    for r in rows:
        cells = []
        for i, v in enumerate(r):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{_e('' if v is None else v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _verdict(v: str) -> str:
    cls = v.split()[0] if v else ""
    return f'<span class="verdict {_e(cls)}">{_e(v)}</span>'


def _figure(make: Callable, caption: str, salt: str, notes: list[str]) -> str:
    """An inline SVG figure, or a note saying why it is missing."""
    from .plot import figure_svg

    try:
        fig = make()
    except EaglelogError as e:
        notes.append(f"{caption}: not drawn: {e}")
        return f'<p class="note">{_e(caption)}: not drawn: {_e(e)}</p>'
    return (f"<figure>\n{figure_svg(fig, salt=salt)}<figcaption>{_e(caption)}</figcaption>\n"
            "</figure>")


def _estimate_rows(obj, keys, units) -> list[list]:
    rows = []
    for k in keys:
        e = getattr(obj, k)
        rows.append([k, num(e.estimate), units.get(k, ""), ci(e), e.n if e.n is not None else "",
                     e.source or ""])
    return rows


def report_html(log: "ParsedLog", *, baseline: "Baseline | None" = None,
                confidence: float = 0.95, title: str | None = None) -> str:
    """The whole report as one HTML document (a str)."""
    from .. import __version__
    from ..analysis.breakeven import ESTIMATES, breakeven
    from ..analysis.compare import compare, runs_from_log
    from ..analysis.summary import summarize
    from ..analysis.sweep import sweep
    from . import plot
    from . import fmt_bytes

    plot._mpl()
    units = log.units()
    if not units:
        raise EaglelogError("no input holds decode lines or EAGLE3_PROF blocks to report on")
    names = [i.name for i in log.sources]
    title = title or "eaglelog report: " + ", ".join(names)
    notes: list[str] = []
    summaries = [dataclasses.replace(summarize(sub, baseline=baseline, confidence=confidence),
                                     source=label) for label, sub in units]
    sections: list[tuple[str, str, str]] = []     # (id, heading, body)

    # --- inputs
    rows = []
    for i in log.sources:
        counts = " · ".join(f"{k} {v:,}" for k, v in i.counts.items() if v)
        rows.append([i.name, i.engine or "", f"{i.lines:,}", fmt_bytes(i.size),
                     f"{i.skipped:,}" + (f" (first at line {i.first_skipped})"
                                          if i.skipped else ""), counts or (i.error or "")])
    body = _table(["input", "engine", "lines", "size", "lines without a record", "records"],
                  rows, numeric=(2, 3))
    errs = [d for d in log.diagnostics if d.severity in ("error", "warning")]
    if errs:
        shown = [d for d in errs if not d.more][:20]
        rest = sum(d.more or 1 for d in errs) - len(shown)
        body += "\n<p class=\"note\">" + "<br>\n".join(_e(f"{d.severity}: {d}") for d in shown)
        body += (f"<br>\n… and {rest:,} more" if rest > 0 else "") + "</p>"
    sections.append(("inputs", "Inputs", body))

    # --- summary blocks
    body = "\n".join(f"<h3>{_e(s.source)}</h3>\n<pre>{_e(summary_block(s).rstrip())}</pre>"
                     for s in summaries)
    sections.append(("summary", "Summary", body))

    # --- break-even
    if baseline is not None:
        results = []
        for label, sub in units:
            try:
                results.append(dataclasses.replace(
                    breakeven(sub, baseline, confidence=confidence,
                              by_batch=baseline.log is not None), source=label))
            except EaglelogError as e:
                notes.append(f"break-even of {label}: {e}")
        parts = []
        units_of = {"cycle_ms": "ms", "baseline_step_ms": "ms", "breakeven_accept_len":
                    "tokens/verify", "accept_len": "tokens/verify", "speedup": "×"}
        for r in results:
            parts.append(f"<h3>{_e(r.source)}</h3>\n<p>{_verdict(r.verdict)} "
                         f"{_e(verdict_sentence(r))}</p>")
            parts.append(_table(["quantity", "estimate", "unit", f"{confidence:.0%} interval",
                                 "windows", "from"],
                                _estimate_rows(r, ESTIMATES, units_of), numeric=(1, 4)))
            if r.by_batch:
                parts.append(_table(
                    ["running_req", "windows", "cycle ms", "step ms", "break-even",
                     "accept len", "speedup", f"speedup {confidence:.0%} interval", "verdict"],
                    [[b.batch, b.windows, num(b.cycle_ms.estimate),
                      num(b.baseline_step_ms.estimate), num(b.breakeven_accept_len.estimate),
                      num(b.accept_len.estimate), num(b.speedup.estimate, 3), ci(b.speedup, 3),
                      b.verdict] for b in r.by_batch], numeric=(1, 2, 3, 4, 5, 6)))
            parts.append(f"<pre>{_e(breakeven_block(r).rstrip())}</pre>")
        if results:
            parts.append(_figure(lambda: plot.breakeven_figure(results),
                                 "Measured accept length against the break-even band"
                                 + (" per batch size" if any(r.by_batch for r in results)
                                    else ""), "eaglelog-breakeven", notes))
        sections.append(("breakeven", f"Break-even (baseline {baseline.label})",
                         "\n".join(parts) or '<p class="note">no break-even result</p>'))
    else:
        sections.append(("breakeven", "Break-even",
                         '<p class="note">no baseline given: run with --baseline-toks TOK_S or '
                         "--baseline-log BASE.log for the break-even verdict</p>"))

    # --- cycle breakdown
    rows = []
    for s in summaries:
        for p in s.phases:
            e = p.ms_per_cycle
            rows.append([s.source, p.phase, f"{e.estimate:.2f}", f"{p.pct:.1f}%", ci(e),
                         "bottleneck" if p.phase == s.bottleneck else ""])
        if s.cycle_ms is not None:
            rows.append([s.source, "TOTAL", f"{s.cycle_ms.estimate:.2f}", "100.0%",
                         ci(s.cycle_ms), f"{s.blocks} blocks, {s.cycles:,} cycles"])
    if rows:
        body = _table(["run", "phase", "ms per cycle", "share", f"{confidence:.0%} interval",
                       ""], rows, numeric=(2, 3))
        body += "\n" + _figure(lambda: plot.phases_figure(summaries),
                               "Cycle breakdown per run (EAGLE3_PROF, no-sync blocks, "
                               "cycle-weighted); the whisker is the interval of TOTAL",
                               "eaglelog-phases", notes)
    else:
        body = '<p class="note">no EAGLE3_PROF blocks: no cycle breakdown</p>'
    sections.append(("phases", "Cycle breakdown", body))

    # --- timeline
    sections.append(("timeline", "Timeline", _figure(
        lambda: plot.timeline_figure(log),
        "Accept length, decode throughput and running requests per decode window, and the "
        "profiler's cycle time, over time; idle gaps shaded, restarts dashed",
        "eaglelog-timeline", notes)))

    # --- several runs: compare and sweep
    if len(units) >= 2:
        body = []
        try:
            engine = log.sources[0].engine or "sglang"
            cr = compare(runs_from_log(log, engine, baseline, confidence), confidence=confidence,
                         baseline=baseline)
            body.append(f'<p class="meta">reference: {_e(cr.reference)} ({confidence:.0%} '
                        "intervals; Welch's t-test on the log ratio; secondary metrics "
                        "Holm-adjusted)</p>")
            for run in cr.runs:
                body.append(f"<h3>{_e(run)} vs reference: {_e(cr.headline.get(run, ''))}</h3>")
                body.append(_table(
                    ["metric", "reference", "changed", "ratio",
                     f"{confidence:.0%} interval", "p", "p (Holm)", "verdict"],
                    [[(f"{m.label} ({m.metric})" if m.metric != m.label else m.label) +
                      (" ← primary" if m.role == "primary" else ""),
                      _val(m.reference_mean, m.unit), _val(m.mean, m.unit),
                      num(m.ratio.estimate), ci(m.ratio, 4), _pv(m.p_value),
                      _pv(m.p_adjusted) if m.role == "secondary" else "", m.verdict]
                     for m in cr.metrics if m.run == run], numeric=(1, 2, 3, 5, 6)))
                diff = cr.config_diff.get(run) or {}
                body.append('<p class="note">config: ' + (_e("; ".join(
                    f"{k} {a!r} → {b!r}" for k, (a, b) in diff.items())) if diff else
                    "no difference in server_args") + "</p>")
            for w in cr.warnings:
                body.append(f'<p class="note">warning: {_e(w)}</p>')
            body.append(_figure(lambda: plot.compare_figure(cr),
                                "Ratio changed / reference of every common metric, with its "
                                "interval; 1.0 is no change", "eaglelog-compare", notes))
        except EaglelogError as e:
            body.append(f'<p class="note">no comparison: {_e(e)}</p>')
        sections.append(("compare", "Compare (the first run is the reference)", "\n".join(body)))
        body = []
        try:
            sr = sweep(log, baseline=baseline, confidence=confidence, keep_going=True)
            headers = list(sr.keys) + ["cycle ms", "verify ms", "accept len", "eff tok/s",
                                       f"{confidence:.0%} interval"]
            if sr.baseline:
                headers += ["break-even", "speedup", "vs baseline"]
            headers += ["", "run"]
            rows = []
            for r in sr.rows:
                line = [str(r.keys.get(k)) for k in sr.keys]
                line += [f"{r.cycle_ms.estimate:.2f}",
                         f"{r.verify_ms.estimate:.2f}" if r.verify_ms else "",
                         num(r.accept_len.estimate), num(r.eff_tok_s.estimate), ci(r.eff_tok_s)]
                if sr.baseline:
                    line += [num(r.breakeven_accept_len.estimate), num(r.speedup.estimate, 3),
                             r.verdict]
                line += [r.mark, r.run]
                rows.append(line)
            k = len(sr.keys)
            body.append(_table(headers, rows, numeric=tuple(range(k, k + 4))))
            body.append('<p class="note">sorted by effective tok/s = 1000 × accept len / cycle '
                        "ms; best: the highest; tied: its interval overlaps the best one's</p>")
            for n in sr.notes:
                body.append(f'<p class="note">note: {_e(n)}</p>')
            body.append(_figure(lambda: plot.sweep_figure(sr),
                                "Effective tok/s of each run with its interval"
                                + (", the baseline as a dashed line" if sr.baseline else ""),
                                "eaglelog-sweep", notes))
        except EaglelogError as e:
            body.append(f'<p class="note">no sweep: {_e(e)}</p>')
        sections.append(("sweep", "Sweep", "\n".join(body)))

    # --- the document
    meta = (f"eaglelog {__version__} · {len(units)} run{'s' if len(units) != 1 else ''} from "
            f"{len(names)} input{'s' if len(names) != 1 else ''} · intervals: {confidence:.0%} "
            "confidence" + (f" · baseline {baseline.label}" if baseline is not None else ""))
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
           f"<header><h1>{_e(title)}</h1>", f'<p class="meta">{_e(meta)}</p></header>',
           "<nav><ul>" + "".join(f'<li><a href="#{sid}">{_e(h)}</a></li>'
                                 for sid, h, _ in sections) + "</ul></nav>"]
    for sid, heading, body in sections:
        out.append(f'<section id="{sid}">\n<h2>{_e(heading)}</h2>\n{body}\n</section>')
    if notes:
        out.append('<section id="notes">\n<h2>Notes</h2>\n' +
                   "\n".join(f'<p class="note">{_e(n)}</p>' for n in notes) + "\n</section>")
    out.append(f"<footer>Made by eaglelog {__version__} from {_e(', '.join(names))}. Every "
               "interval states its confidence level; the statistical model is described in "
               "docs/statistics.md of eaglelog. The file is self-contained: it loads nothing "
               "from the network.</footer>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
