"""A self-contained HTML report, answer first: a one-paragraph conclusion (the verdict, the best
config, the bottleneck), then the tables, then the pictures, in one file that needs nothing else
to be read or printed.

Everything is inline: the CSS, and each figure of ``eaglelog.report.plot`` as an <svg> element
(no scripts, no fonts, no images fetched from anywhere).  Every number is formatted by the text
renderers' functions (``report.blocks``: ``num``, ``ci``, the verdict sentence, the blocks
themselves), so the page says 0.931× where ``eaglelog breakeven`` says 0.931×.  With several
runs each run's detail (its ``summary`` / ``breakeven`` / ``reconcile`` blocks) folds away in a
<details> element.  Nothing is wider than the content column at 1280 px or at print width:
tables wrap their text cells, the text blocks wrap their long lines with a hanging indent
(tests/test_report_html.py measures it in a real Chromium).  Without matplotlib the report
still holds every table and says that the pictures need the extra.  The same inputs give the
same bytes (no date in the file).

Given load tests (``eaglelog.latency``'s result), the page has a "Latency under load" section:
latency's table, each load point's verdict, and its two figures (percentiles; goodput) beside
the table they draw — after the conclusion when there are logs too, else the page is about the
load tests alone (docs/latency.md §3.1).  At a phone's width (390 px) the page does not scroll
sideways: a wide table scrolls in its own box and the figures shrink to the column.
"""
from __future__ import annotations

import dataclasses
import html
import math
import re
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import EaglelogError
from .blocks import (_pv, _val, breakeven_block, ci, config_diff_text, ms2, num, reconcile_block,
                     summary_block, verdict_sentence)

if TYPE_CHECKING:
    from ..analysis.breakeven import Baseline, BreakevenResult
    from ..analysis.latency import LatencyResult
    from ..analysis.reconcile import ReconcileResult
    from ..analysis.summary import SummaryResult
    from ..analysis.sweep import SweepResult
    from ..api import ParsedLog

PLOT_EXTRA = "pip install 'eaglelog[plot]'"

CSS = """
:root { --ink: #1a1a1a; --muted: #555; --rule: #d0d0d0; --above: #009E73; --below: #D55E00;
        --unsure: #E69F00; --bg-alt: #f5f5f5; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1040px; padding: 24px 28px 48px; color: var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       background: #fff; overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 32px 0 8px; padding-bottom: 4px;
     border-bottom: 2px solid var(--rule); }
h3 { font-size: 1.05em; margin: 20px 0 6px; }
p.meta, p.note, figcaption { color: var(--muted); font-size: 0.9em; }
p.conclusion { font-size: 1.05em; margin: 8px 0 0; padding: 10px 14px; background: var(--bg-alt);
               border-left: 4px solid var(--rule); }
p.conclusion.above { border-left-color: var(--above); }
p.conclusion.below { border-left-color: var(--below); }
p.conclusion.unsure { border-left-color: var(--unsure); }
pre.block { background: var(--bg-alt); border: 1px solid var(--rule); padding: 8px 12px;
            margin: 6px 0 12px; font: 12px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace;
            white-space: pre-wrap; overflow-wrap: anywhere; }
pre.block > span { display: block; padding-left: var(--hang, 2ch);
                   text-indent: calc(-1 * var(--hang, 2ch)); }
pre.block > span.gap { height: 1.4em; }
div.table { max-width: 100%; overflow-x: auto; margin: 6px 0 14px; }
table { border-collapse: collapse; margin: 0; font-size: 0.86em; }
th, td { border: 1px solid var(--rule); padding: 3px 6px; text-align: left; vertical-align: top;
         overflow-wrap: break-word; word-break: normal; }
th { background: var(--bg-alt); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; overflow-wrap: normal; }
td.num .ci { display: block; color: var(--muted); font-size: 0.88em; }
tr.best td { font-weight: bold; }
.mark { white-space: nowrap; }
figure { margin: 10px 0 24px; }
figure svg { display: block; max-width: 100%; height: auto; }
.verdict { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff;
           font-weight: bold; white-space: nowrap; }
.verdict.above { background: var(--above); }
.verdict.below, .verdict.invalid { background: var(--below); }
.verdict.inconclusive, .verdict.insufficient, .verdict.partial, .verdict.mixed {
  background: var(--unsure); color: #000; }
details { margin: 8px 0; border: 1px solid var(--rule); padding: 4px 10px; }
details > summary { cursor: pointer; font-weight: bold; padding: 2px 0; }
details[open] > summary { margin-bottom: 6px; }
nav ul { margin: 6px 0; padding-left: 20px; columns: 2; }
ul.verdicts { margin: 6px 0 10px; padding-left: 20px; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.85em;
         border-top: 1px solid var(--rule); padding-top: 8px; }
@media screen and (max-width: 600px) {
  body { padding: 14px 12px 32px; }
  nav ul { columns: 1; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  div.table { overflow: visible; }
  th, td { overflow-wrap: anywhere; }
  nav { display: none; }
  h2 { break-after: avoid; }
  figure, tr, pre.block > span { break-inside: avoid; }
  pre.block { font-size: 7.5pt; }
  table { font-size: 7.5pt; }
  th, td { padding: 2px 3px; }
  td.num .ci { white-space: normal; }
  details { border: none; padding: 0; }
  details::details-content { content-visibility: visible; display: block; }
  details > summary { list-style: none; }
  .verdict { border: 1px solid #000; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


class Raw(str):
    """Markup already escaped: put in a table cell as it is."""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _breakable(text: str) -> str:
    """Escaped text with break opportunities after '/' and '_' (paths, server_args keys):
    a narrow column wraps 'speculative_num_draft_tokens' between its words."""
    return re.sub(r"([/_])(?=\w)", r"\1<wbr>", _e(text))


def _cell(v) -> str:
    if v is None:
        return ""
    return v if isinstance(v, Raw) else _e(v)


def _table(headers: Sequence, rows: Sequence[Sequence], numeric: Sequence[int] = (),
           row_class: Sequence[str] | None = None) -> str:
    num_cls = ' class="num"'
    heads = "".join(f"<th{num_cls if i in numeric else ''}>{_cell(h)}</th>"
                    for i, h in enumerate(headers))
    # (in a box of its own that scrolls sideways when the table is wider than the page: the
    # page never does, and no column is squeezed below its longest word)
    out = ['<div class="table"><table>', f"<thead><tr>{heads}</tr></thead>", "<tbody>"]
    for k, r in enumerate(rows):
        cells = "".join(f"<td{num_cls if i in numeric else ''}>{_cell(v)}</td>"
                        for i, v in enumerate(r))
        cls = row_class[k] if row_class and row_class[k] else ""
        out.append(f'<tr class="{cls}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _with_ci(estimate: str, interval: str) -> Raw:
    """An estimate with its interval under it (the interval as the text output writes it)."""
    return Raw(f'{_e(estimate)}<span class="ci">{_e(interval)}</span>')


def _verdict(v: str | None) -> Raw:
    if not v:
        return Raw("")
    cls = v.split()[0]
    return Raw(f'<span class="verdict {_e(cls)}">{_e(v)}</span>')


def _hang(line: str) -> int:
    """Where a wrapped line of a text block continues: under its value column (after the
    label and its run of spaces), or two characters in."""
    lead = len(line) - len(line.lstrip(" "))
    m = re.match(r"( *\S(?:.*?\S)?  +)\S", line)
    if m and len(m.group(1)) <= 40:
        return len(m.group(1))
    return lead + 2


def _block(text: str) -> str:
    """A text block of the CLI (summary_block, breakeven_block, reconcile_block) as it prints:
    one span per line, a long line wrapping under its value column instead of overflowing."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        if not line.strip():
            out.append('<span class="gap"></span>')
        else:
            out.append(f'<span style="--hang:{_hang(line)}ch">{_e(line)}</span>')
    return '<pre class="block">' + "".join(out) + "</pre>"


class _Pictures:
    """The figures of the report, drawn at the end; or, without matplotlib, the reason."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.parts: list[str] = []
        self.count = 0

    def add(self, make: Callable, caption: str, salt: str, notes: list[str]) -> None:
        if not self.enabled:
            return
        from .plot import caption as drawn_caption, figure_svg

        try:
            fig = make()
        except EaglelogError as e:
            notes.append(f"{caption}: not drawn: {e}")
            self.parts.append(f'<p class="note">{_e(caption)}: not drawn: {_e(e)}</p>')
            return
        text = drawn_caption(fig) or caption
        self.count += 1
        self.parts.append(f'<figure id="fig-{salt}">\n{figure_svg(fig, salt=salt)}'
                          f"<figcaption>{_e(text)}</figcaption>\n</figure>")

    def inline(self, make: Callable, caption: str, salt: str, notes: list[str]) -> str:
        """A figure for a section of its own (the latency section's): its <figure>, or the
        note saying why it was not drawn; '' without matplotlib (the section says so)."""
        n = len(self.parts)
        self.add(make, caption, salt, notes)
        return self.parts.pop() if len(self.parts) > n else ""

    def body(self) -> str:
        if not self.enabled:
            return ('<p class="note">The pictures need matplotlib, which is not installed: '
                    f"{_e(PLOT_EXTRA)} adds them. Every number is in the tables above.</p>")
        return "\n".join(self.parts) or '<p class="note">nothing to draw</p>'


def _estimate_rows(obj, keys, units, digits=None) -> list[list]:
    rows = []
    for k in keys:
        e = getattr(obj, k)
        d = (digits or {}).get(k, 4)
        rows.append([k, num(e.estimate, d), units.get(k, ""), ci(e, d),
                     e.n if e.n is not None else "", e.source or ""])
    return rows


def _disagree(r: "ReconcileResult") -> bool:
    """The profiler's and SGLang's accept lengths differ: the ratio's interval excludes 1."""
    q = r.ratio
    return bool(q.sufficient and (q.ci_high < 1 or q.ci_low > 1))


def _explained_by(r: "ReconcileResult") -> str:
    found = [f.factor for f in r.findings if f.verdict in ("explains", "possible")]
    return ", ".join(found) if found else "not explained by the log"


def _config_words(s: "SummaryResult") -> str:
    c = s.config or {}
    parts = [f"{k.replace('_', ' ')} {c[k]}" for k in ("steps", "topk", "draft_tokens")
             if c.get(k) is not None]
    return " · ".join(parts)


def _bottleneck(s: "SummaryResult") -> str | None:
    """'Target verify, 26.26 ms of the 27.49 ms cycle (95.5%)' (summary_block's formats)."""
    p = next((p for p in s.phases if p.phase == s.bottleneck), None)
    if p is None:
        return None
    if s.cycle_ms is not None and math.isfinite(p.ms_per_cycle.estimate):
        return (f"{p.phase}, {p.ms_per_cycle.estimate:.2f} ms of the "
                f"{s.cycle_ms.estimate:.2f} ms cycle ({p.pct:.1f}%)")
    return f"{p.phase}, {p.pct:.1f}% of the cycle ({s.phases_from})"


def _conclusion(summaries, results: dict, sr: "SweepResult | None", recs: dict,
                baseline, several: bool) -> tuple[str, str]:
    """The answer in one paragraph (HTML) and the class of its frame (above/below/unsure)."""
    by_label = {s.source: s for s in summaries}
    best = None
    if sr is not None and sr.rows:
        best = next((r.run for r in sr.rows if r.mark == "best"), sr.rows[0].run)
    elif results:
        finite = [r for r in results.values() if math.isfinite(r.speedup.estimate)]
        best = max(finite, key=lambda r: r.speedup.estimate).source if finite else None
    if best is None:
        rated = [s for s in summaries if s.eff_tok_s is not None and
                 math.isfinite(s.eff_tok_s.estimate)]
        best = (max(rated, key=lambda s: s.eff_tok_s.estimate).source if rated
                else summaries[0].source)
    s = by_label.get(best, summaries[0])
    r = results.get(best)
    out = []
    frame = "unsure"
    if several:
        row = next((x for x in (sr.rows if sr else ()) if x.run == best), None)
        what = (" · ".join(f"{k} {row.keys.get(k)}" for k in sr.keys) if row is not None and
                sr.keys else _config_words(s))
        sent = f"<b>Best config</b> of the {len(summaries)} runs: {_e(what or best)}"
        sent += f" ({_e(best)})" if what else ""
        if row is not None:
            sent += (f", {_e(num(row.eff_tok_s.estimate))} tok/s per stream "
                     f"{_e(ci(row.eff_tok_s))}")
            tied = [x.run for x in sr.rows if x.mark == "tied"]
            if tied:
                sent += (f"; tied with {_e(', '.join(tied))} (not distinguishable from it at "
                         f"{sr.confidence:.0%})")
        out.append(sent + ".")
    else:
        what = _config_words(s)
        out.append(f"<b>{_e(best)}</b>" + (f" ({_e(what)})" if what else "") + ".")
    if r is not None:
        frame = {"above": "above", "below": "below"}.get(r.verdict, "unsure")
        out.append(f"<b>Verdict</b>{' of the best' if several else ''}: "
                   f"{_e(verdict_sentence(r))}; accept length {_e(num(r.accept_len.estimate))} "
                   f"measured against {_e(num(r.breakeven_accept_len.estimate))} needed to "
                   "break even.")
        if several:
            counts: dict[str, int] = {}
            for x in results.values():
                counts[x.verdict] = counts.get(x.verdict, 0) + 1
            order = ("above", "inconclusive", "below", "partial", "mixed", "invalid baseline",
                     "insufficient data")
            words = [f"{counts[v]} {v}" for v in order if counts.get(v)]
            out.append(f"Against {_e(r.baseline)}: {_e(', '.join(words))} (of {len(results)} "
                       "runs).")
    elif baseline is None:
        eff = s.eff_tok_s
        rate = (f" It gets {_e(num(eff.estimate))} tok/s per stream {_e(ci(eff))}."
                if eff is not None and math.isfinite(eff.estimate) and not several else "")
        out.append("<b>No verdict</b>: no baseline given (run with --baseline-toks TOK_S or "
                   f"--baseline-log BASE.log).{rate}")
    else:
        out.append("<b>No verdict</b>: the break-even could not be computed (see the notes).")
    bn = _bottleneck(s)
    if bn:
        same = several and all(x.bottleneck == s.bottleneck for x in summaries)
        out.append(f"<b>Bottleneck</b>: {_e(bn)}" +
                   (f"; {_e(s.bottleneck)} is the bottleneck of every run" if same else "") + ".")
    else:
        out.append("<b>Bottleneck</b>: not known (no EAGLE3_PROF blocks: no cycle breakdown).")
    off = [x for x in recs.values() if _disagree(x)]
    if off:
        lo = min(x.ratio.estimate for x in off)
        hi = max(x.ratio.estimate for x in off)
        span = (f"{num(lo, 3)}×" if len(off) == 1 else f"{num(lo, 3)}× – {num(hi, 3)}×")
        where = (f"in {len(off)} of {len(recs)} runs ({_e(span)} SGLang's)" if several else
                 f"({_e(span)} SGLang's)")
        out.append(f"The profiler's accept length disagrees with SGLang's {where}; the "
                   "break-even uses SGLang's (see <a href=\"#reconcile\">Reconcile</a>).")
    return " ".join(out), frame


def report_html(log: "ParsedLog | None", *, baseline: "Baseline | None" = None,
                confidence: float = 0.95, title: str | None = None, warmup="auto",
                pictures: bool | None = None, latency: "LatencyResult | None" = None) -> str:
    """The whole report as one HTML document (a str).

    ``pictures``: draw the figures (needs matplotlib); None: when matplotlib is installed.
    Without them the page holds every table and says which extra adds the pictures.
    ``latency``: an ``eaglelog.latency(...)`` result of load tests: a "Latency under load"
    section (its table, the verdicts, and its two figures beside them) after the conclusion;
    with ``log`` None the page is about the load tests only.

    >>> import eaglelog
    >>> from eaglelog.baseline import Baseline
    >>> page = report_html(eaglelog.parse("sample_logs/eagle3_5step.log"),
    ...                    baseline=Baseline(tok_s=90.0))
    >>> "BELOW break-even: 0.931× the baseline" in page
    True
    """
    from .. import __version__
    from .. import library
    from ..analysis.breakeven import ESTIMATES
    from ..analysis.reconcile import reconcile
    from . import fmt_bytes

    if pictures is None:
        pictures = plot_available()
    if log is None:
        if latency is None:
            raise EaglelogError("nothing to report: no log and no load test")
        return _latency_page(latency, title, pictures)
    units = log.units()
    if not units:
        raise EaglelogError("no input holds decode lines or EAGLE3_PROF blocks to report on")
    several = len(units) >= 2
    names = [i.name for i in log.sources]
    title = title or "eaglelog report: " + ", ".join(names + _latency_files(latency))
    notes: list[str] = []
    figs = _Pictures(pictures)
    summaries = list(library.summarize(log, baseline=baseline, confidence=confidence,
                                       skip_warmup=warmup).runs)
    results: dict[str, "BreakevenResult"] = {}
    if baseline is not None:
        try:
            got = library.breakeven(log, baseline=baseline, confidence=confidence,
                                    by_batch=baseline.log is not None, skip_warmup=warmup,
                                    on_error=lambda m: notes.append(f"break-even of {m}"))
            results = {r.source: r for r in got.runs}
        except EaglelogError as e:
            notes.append(f"break-even of {units[0][0]}: {e}")
    recs: dict[str, "ReconcileResult"] = {}
    no_rec: list[str] = []
    for label, sub in units:
        if sub.prof.empty:
            continue
        try:
            recs[label] = dataclasses.replace(reconcile(sub, confidence=confidence,
                                                        warmup=warmup), source=label)
        except EaglelogError as e:
            msg = str(e)
            no_rec.append(f"{label}: {msg.split(': ', 1)[-1] if msg.startswith(label) else msg}")
    sr = None
    sweep_error = None
    if several:
        try:
            sr = library.sweep(log, baseline=baseline, confidence=confidence, keep_going=True,
                               skip_warmup=warmup)
        except EaglelogError as e:
            sweep_error = str(e)
    sections: list[tuple[str, str, str]] = []     # (id, heading, body)

    # --- the answer
    text, frame = _conclusion(summaries, results, sr, recs, baseline, several)
    if latency is not None:
        text += f" <b>Under load</b>: {_e(latency.verdict)}."
    sections.append(("conclusion", "Conclusion", f'<p class="conclusion {frame}">{text}</p>'))
    if latency is not None:
        sections.append(("latency", "Latency under load", _latency_section(latency, figs,
                                                                           notes)))

    # --- several runs: the sweep table is the answer's table
    if several:
        body = []
        if sr is not None:
            headers: list = [Raw(_breakable(k)) for k in sr.keys]
            headers += ["cycle ms", "verify ms", "accept len", "eff tok/s"]
            if sr.baseline:
                headers += ["break-even", "speedup", "vs baseline"]
            headers += ["", "run"]
            rows, marks = [], []
            for r in sr.rows:
                line: list = [str(r.keys.get(k)) for k in sr.keys]
                line += [ms2(r.cycle_ms), ms2(r.verify_ms, ""),
                         num(r.accept_len.estimate if r.accept_len else None),
                         _with_ci(num(r.eff_tok_s.estimate), ci(r.eff_tok_s))]
                if sr.baseline:
                    line += [num(r.breakeven_accept_len.estimate),
                             _with_ci(f"{num(r.speedup.estimate, 3)}×", ci(r.speedup, 3)),
                             _verdict(r.verdict)]
                line += [Raw(f'<span class="mark">{_e(r.mark)}</span>'), Raw(_breakable(r.run))]
                rows.append(line)
                marks.append("best" if r.mark == "best" else "")
            k = len(sr.keys)
            numeric = tuple(range(k, k + 4)) + ((k + 4, k + 5) if sr.baseline else ())
            body.append(_table(headers, rows, numeric=numeric, row_class=marks))
            body.append(f'<p class="note">sorted by effective tok/s = 1000 × accept len / cycle '
                        f"ms ({confidence:.0%} intervals under each value); best: the highest; "
                        + _e(_tied_means(confidence)) + "</p>")
            for n in sr.notes:
                body.append(f'<p class="note">note: {_e(n)}</p>')
            figs.add(lambda: _plot().sweep_figure(sr),
                     "Effective tok/s of each run with its interval"
                     + (", the baseline as a dashed line" if sr.baseline else ""),
                     "eaglelog-sweep", notes)
        else:
            body.append(f'<p class="note">no sweep: {_e(sweep_error)}</p>')
        sections.append(("sweep", "Sweep", "\n".join(body)))

    # --- break-even
    if baseline is not None:
        parts = []
        units_of = {"cycle_ms": "ms", "baseline_step_ms": "ms", "breakeven_accept_len":
                    "tokens/verify", "accept_len": "tokens/verify", "speedup": "×"}
        if several and results:
            rows = []
            for r in results.values():
                eff = r.eff_tok_s
                rows.append([Raw(_breakable(r.source)), _verdict(r.verdict),
                             _with_ci(f"{num(r.speedup.estimate, 3)}×", ci(r.speedup, 3)),
                             _with_ci(num(r.accept_len.estimate), ci(r.accept_len)),
                             _with_ci(num(r.breakeven_accept_len.estimate),
                                      ci(r.breakeven_accept_len)),
                             _with_ci(num(r.cycle_ms.estimate), ci(r.cycle_ms)),
                             _with_ci(num(eff.estimate), ci(eff)) if eff is not None else ""])
            parts.append(_table(["run", "verdict", "speedup", "accept len", "break-even",
                                 "cycle ms", "per-stream tok/s"], rows, numeric=(2, 3, 4, 5, 6)))
            parts.append(f'<p class="note">{confidence:.0%} intervals under each value; each '
                         "run's verdict sentence and estimates are in its detail below "
                         '(<a href="#runs">Each run</a>)</p>')
        for r in (results.values() if not several else ()):
            parts.append(f"<p>{_verdict(r.verdict)} {_e(verdict_sentence(r))}</p>")
            parts.append(_table(["quantity", "estimate", "unit", f"{confidence:.0%} interval",
                                 "windows", "from"],
                                _estimate_rows(r, ESTIMATES, units_of, {"speedup": 3}),
                                numeric=(1, 4)))
            if r.by_batch:
                parts.append(_by_batch(r, confidence))
        if results:
            figs.add(lambda: _plot().breakeven_figure(list(results.values())),
                     "Measured accept length against the break-even band"
                     + (" per batch size" if any(r.by_batch for r in results.values())
                        else ""), "eaglelog-breakeven", notes)
        sections.append(("breakeven", f"Break-even (baseline {baseline.label})",
                         "\n".join(parts) or '<p class="note">no break-even result</p>'))
    else:
        sections.append(("breakeven", "Break-even",
                         '<p class="note">no baseline given: run with --baseline-toks TOK_S or '
                         "--baseline-log BASE.log for the break-even verdict</p>"))

    # --- cycle breakdown
    if several and any(s.phases for s in summaries):
        body = _phases_by_run(summaries, confidence)
    else:
        body = _phases_long(summaries, confidence)
    if body:
        figs.add(lambda: _plot().phases_figure(summaries),
                 "Cycle breakdown per run (EAGLE3_PROF, no-sync blocks, cycle-weighted); the "
                 "whisker is the interval of TOTAL", "eaglelog-phases", notes)
    else:
        body = '<p class="note">no EAGLE3_PROF blocks: no cycle breakdown</p>'
    sections.append(("phases", "Cycle breakdown", body))

    # --- reconcile: where the profiler and SGLang disagree
    sections.append(("reconcile", "Reconcile: profiler vs SGLang accept length",
                     _reconcile_section(recs, no_rec, confidence, several)))

    # --- several runs: compare
    if several:
        body = []
        try:
            engine = log.sources[0].engine or "sglang"
            cr = library.compare(log, baseline=baseline, confidence=confidence,
                                 skip_warmup=warmup, engine=engine)
            body.append(f'<p class="meta">reference: {_e(cr.reference)} ({confidence:.0%} '
                        "intervals; Welch's t-test on the log ratio; secondary metrics "
                        "Holm-adjusted)</p>")
            for run in cr.runs:
                table = _table(
                    ["metric", "reference", "changed", "ratio", "p", "p (Holm)", "verdict"],
                    [[(f"{m.label} ({m.metric})" if m.metric != m.label else m.label) +
                      (" ← primary" if m.role == "primary" else ""),
                      _val(m.reference_mean, m.unit), _val(m.mean, m.unit),
                      _with_ci(num(m.ratio.estimate), ci(m.ratio, 4)) if m.ratio.sufficient
                      else "n/a", _pv(m.p_value),
                      _pv(m.p_adjusted) if m.role == "secondary" else "", m.verdict]
                     for m in cr.metrics if m.run == run], numeric=(1, 2, 3, 4, 5))
                cfg = ('<p class="note">config: '
                       + _e(config_diff_text(cr.config_diff.get(run) or {})) + "</p>")
                head = f"{_e(run)} vs reference: {_e(cr.headline.get(run, ''))}"
                if len(cr.runs) > 1:
                    body.append(f"<details><summary>{head}</summary>\n{table}\n{cfg}\n"
                                "</details>")
                else:
                    body.append(f"<h3>{head}</h3>\n{table}\n{cfg}")
            for w in cr.warnings:
                body.append(f'<p class="note">warning: {_e(w)}</p>')
            figs.add(lambda: _plot().compare_figure(cr),
                     "Ratio changed / reference of every common metric, with its interval; 1.0 "
                     "is no change", "eaglelog-compare", notes)
        except EaglelogError as e:
            body.append(f'<p class="note">no comparison: {_e(e)}</p>')
        sections.append(("compare", "Compare (the first run is the reference)", "\n".join(body)))

    # --- each run's detail: the text blocks of the commands, folded when there are several
    parts = []
    for s in summaries:
        r = results.get(s.source)
        inner = [_block(summary_block(s))]
        if r is not None:
            inner.append(_block(breakeven_block(r)))
        if s.source in recs:
            inner.append(_block(reconcile_block(recs[s.source])))
        if several:
            head = _e(s.source)
            if r is not None:
                head += f" {_verdict(r.verdict)} {_e(num(r.speedup.estimate, 3))}×"
            parts.append(f"<details><summary>{head}</summary>\n" + "\n".join(inner) +
                         "\n</details>")
        else:
            parts.append("\n".join(inner))
    sections.append(("runs", "Each run" if several else "Summary",
                     ('<p class="note">what <code>eaglelog summary</code>, <code>breakeven'
                      "</code> and <code>reconcile</code> print for each run (click a run to "
                      "open it)</p>\n" if several else "") + "\n".join(parts)))

    # --- inputs
    rows = []
    for i in log.sources:
        counts = " · ".join(f"{k} {v:,}" for k, v in i.counts.items() if v)
        rows.append([Raw(_breakable(i.name)), i.engine or "", f"{i.lines:,}", fmt_bytes(i.size),
                     f"{i.skipped:,}" + (f" (first at line {i.first_skipped})"
                                          if i.skipped else ""), counts or (i.error or "")])
    body = _table(["input", "engine", "lines", "size", "lines without a record", "records"],
                  rows, numeric=(2, 3))
    if latency is not None:
        body += "\n" + _latency_inputs(latency)
    errs = [d for d in log.diagnostics if d.severity in ("error", "warning")]
    if errs:
        shown = [d for d in errs if not d.more][:20]
        rest = sum(d.more or 1 for d in errs) - len(shown)
        body += "\n<p class=\"note\">" + "<br>\n".join(_e(f"{d.severity}: {d}") for d in shown)
        body += (f"<br>\n… and {rest:,} more" if rest > 0 else "") + "</p>"
    sections.append(("inputs", "Inputs", body))

    # --- the pictures, last
    figs.add(lambda: _plot().timeline_figure(log),
             "Accept length, decode throughput and running requests per decode window, and the "
             "profiler's cycle time, over time; idle gaps shaded, restarts dashed",
             "eaglelog-timeline", notes)
    sections.append(("pictures", "Pictures", figs.body()))

    # --- the document
    meta = (f"eaglelog {__version__} · {len(units)} run{'s' if len(units) != 1 else ''} from "
            f"{len(names)} input{'s' if len(names) != 1 else ''} · intervals: {confidence:.0%} "
            "confidence" + (f" · baseline {baseline.label}" if baseline is not None else "")
            + (f" · {len(latency.points)} load points from "
               f"{len(_latency_files(latency))} load-test files" if latency is not None
               else ""))
    return _document(title, meta, sections, notes, names + _latency_files(latency),
                     "docs/statistics.md" + (" and docs/latency.md" if latency is not None
                                             else ""))


def _document(title: str, meta: str, sections, notes: list[str], names: list[str],
              docs: str = "docs/statistics.md") -> str:
    """The page: the title and meta line, the first section (the answer), the contents, the
    other sections, the notes and the footer."""
    from .. import __version__

    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
           f"<header><h1>{_e(title)}</h1>", f'<p class="meta">{_e(meta)}</p></header>']
    nav = "<nav><ul>" + "".join(f'<li><a href="#{sid}">{_e(h)}</a></li>'
                                for sid, h, _ in sections[1:]) + "</ul></nav>"
    for k, (sid, heading, body) in enumerate(sections):
        out.append(f'<section id="{sid}">\n<h2>{_e(heading)}</h2>\n{body}\n</section>')
        if k == 0:
            out.append(nav)
    if notes:
        out.append('<section id="notes">\n<h2>Notes</h2>\n' +
                   "\n".join(f'<p class="note">{_e(n)}</p>' for n in notes) + "\n</section>")
    out.append(f"<footer>Made by eaglelog {__version__} from {_e(', '.join(names))}. Every "
               "interval states its confidence level; the statistical model is described in "
               f"{docs} of eaglelog. The file is self-contained: it loads nothing "
               "from the network.</footer>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- latency

def _latency_files(r: "LatencyResult | None") -> list[str]:
    """The load-test files of a latency result, speculation's first, each once."""
    if r is None:
        return []
    out = [src for name in ("spec", "baseline") for p in r.points
           for a in ((p.spec if name == "spec" else p.baseline),) if a is not None
           for src in a.sources]
    return list(dict.fromkeys(out))


def _split_cell(text: str):
    """'224 [209, 237]' (report.latency's cell) → the estimate with its interval under it."""
    head, sep, tail = str(text).partition(" [")
    return _with_ci(head, "[" + tail) if sep else text


def _latency_section(r: "LatencyResult", figs: "_Pictures", notes: list[str]) -> str:
    """``eaglelog latency``'s table (its cells, each interval under its estimate), the verdict
    of each load point and the overall one, its notes, and the two figures: the percentiles
    and the goodput against the load."""
    from ..analysis.latency import slo_text
    from .latency import latency_block, rows

    head = latency_block(r).split("\n")
    parts = [f'<p class="meta">{_e(line)}</p>' for line in head[:2 if r.slo else 1]]
    table = rows(r)
    headers = list(table[0]) if table else []
    numeric = tuple(i for i, h in enumerate(headers) if h not in ("arm", "SLO"))
    parts.append(_table(headers, [[_split_cell(v) for v in row.values()] for row in table],
                        numeric=numeric))
    parts.append('<ul class="verdicts">' + "".join(f"<li>{_e(p.verdict)}</li>"
                                                   for p in r.points) + "</ul>")
    frame = "below" if r.crossover.get("overall") is not None else \
        "above" if all(p.pays == "yes" for p in r.points if p.pays != "n/a") else "unsure"
    parts.append(f'<p class="conclusion {frame}"><b>Verdict</b>: {_e(r.verdict)}.</p>')
    for n in r.notes:
        parts.append(f'<p class="note">note: {_e(n)}</p>')
    if figs.enabled:
        what = f"goodput under the SLO {slo_text(r.slo)}" if r.slo else "per-stream tok/s"
        parts.append(figs.inline(lambda: _plot().latency_figure(r, "percentiles"),
                                 "TTFT and TPOT p50 and p99 against the load",
                                 "eaglelog-latency", notes))
        parts.append(figs.inline(lambda: _plot().latency_figure(r, "goodput"),
                                 f"{what[0].upper()}{what[1:]} against the load",
                                 "eaglelog-goodput", notes))
    else:
        parts.append('<p class="note">The pictures of this section need matplotlib, which is '
                     f"not installed: {_e(PLOT_EXTRA)} adds them.</p>")
    return "\n".join(parts)


def _latency_inputs(r: "LatencyResult") -> str:
    """One row per load point and arm: its files, the requests and the duration."""
    from ..analysis.latency import _load_word

    rows = []
    for p in r.points:
        for a in (p.spec, p.baseline):
            if a is None:
                continue
            rows.append([Raw("<br>".join(_breakable(x) for x in a.sources)),
                         "speculation" if a.arm == "spec" else "baseline",
                         _load_word(p.load, r.load_kind), f"{a.sent:,}", f"{a.completed:,}",
                         f"{a.duration_s:,.1f}",
                         "yes" if a.detailed else "no (the file's own percentiles only)"])
    return _table(["load-test file", "arm", "load", "requests sent", "completed",
                   "duration (s)", "per-request data"], rows, numeric=(3, 4, 5))


def _latency_page(r: "LatencyResult", title: str | None, pictures: bool) -> str:
    """The report of load tests alone: the answer, the latency section, the inputs."""
    from .. import __version__

    import os

    files = _latency_files(r)
    shown = [os.path.basename(f) for f in files[:2]]
    title = title or (f"eaglelog report: latency under load, {len(files)} load-test "
                      f"file{'s' if len(files) != 1 else ''} ({', '.join(shown)}"
                      f"{', …' if len(files) > 2 else ''})")
    notes: list[str] = []
    figs = _Pictures(pictures)
    p0 = next((p for p in r.points if p.spec is not None and p.baseline is not None),
              r.points[0])
    frame = "below" if r.crossover.get("overall") is not None else "unsure"
    text = (f"<b>Under load</b>, speculation against its baseline at {len(r.points)} load "
            f"point{'s' if len(r.points) != 1 else ''}: {_e(r.verdict)}. At the lowest: "
            f"{_e(p0.verdict)}.")
    sections = [("conclusion", "Conclusion", f'<p class="conclusion {frame}">{text}</p>'),
                ("latency", "Latency under load", _latency_section(r, figs, notes)),
                ("inputs", "Inputs", _latency_inputs(r))]
    meta = (f"eaglelog {__version__} · {len(r.points)} load points from {len(files)} load-test "
            f"files · intervals: {r.confidence:.0%} confidence")
    return _document(title, meta, sections, notes, files, "docs/latency.md")


def _phase_ms(s, e) -> str:
    return f"{e.estimate:.2f}" if s.cycle_ms is not None and math.isfinite(e.estimate) else ""


def _phases_long(summaries, confidence: float) -> str:
    """One row per (run, phase): summary_block's numbers (ms .2f, share .1f%)."""
    rows = []
    for s in summaries:
        label = Raw(_breakable(s.source))
        for p in s.phases:
            e = p.ms_per_cycle
            timed = bool(_phase_ms(s, e))
            rows.append([label, p.phase, _phase_ms(s, e), f"{p.pct:.1f}%",
                         (f"[{e.ci_low:.2f} … {e.ci_high:.2f}]" if e.sufficient else
                          "insufficient data") if timed else "",
                         "bottleneck" if p.phase == s.bottleneck else ""])
        if s.cycle_ms is not None:
            rows.append([label, "TOTAL", f"{s.cycle_ms.estimate:.2f}", "100.0%",
                         ci(s.cycle_ms), f"{s.blocks} blocks, {s.cycles:,} cycles"])
        elif s.phases:
            rows.append([label, "TOTAL", "", "100.0%", "",
                         f"{s.phases_from}: shares only, no cycle time"])
    if not rows:
        return ""
    return _table(["run", "phase", "ms per cycle", "share", f"{confidence:.0%} interval", ""],
                  rows, numeric=(2, 3))


def _phases_by_run(summaries, confidence: float) -> str:
    """One row per run, one column per phase (ms per cycle, its share under it), the cycle
    with its interval and the bottleneck: several runs side by side."""
    names: list[str] = []
    for s in summaries:
        names += [p.phase for p in s.phases if p.phase not in names]
    rows = []
    for s in summaries:
        by = {p.phase: p for p in s.phases}
        line: list = [Raw(_breakable(s.source)),
                      _with_ci(f"{s.cycle_ms.estimate:.2f}", ci(s.cycle_ms))
                      if s.cycle_ms is not None else (s.phases_from or "")]
        for n in names:
            p = by.get(n)
            if p is None:
                line.append("")
                continue
            ms = _phase_ms(s, p.ms_per_cycle)
            line.append(_with_ci(ms, f"{p.pct:.1f}%") if ms else f"{p.pct:.1f}%")
        line.append(s.bottleneck or "")
        rows.append(line)
    k = len(names)
    return (_table(["run", "cycle ms"] + [f"{n} ms" for n in names] + ["bottleneck"], rows,
                   numeric=tuple(range(1, k + 2))) +
            f'\n<p class="note">EAGLE3_PROF no-sync blocks, cycle-weighted: ms per cycle, its '
            f"share of the cycle under it; the cycle's {confidence:.0%} interval under it; each "
            "run's phase intervals are in its detail below</p>")


def _by_batch(r: "BreakevenResult", confidence: float) -> str:
    """The per-batch-size break-even (the columns of blocks.by_batch_table)."""
    return _table(
        ["running_req", "windows", "cycle ms", "step ms", "break-even", "accept len",
         "speedup", "verdict"],
        [[b.batch, b.windows, num(b.cycle_ms.estimate), num(b.baseline_step_ms.estimate),
          num(b.breakeven_accept_len.estimate), num(b.accept_len.estimate),
          _with_ci(num(b.speedup.estimate, 3), ci(b.speedup, 3)), _verdict(b.verdict)]
         for b in r.by_batch], numeric=(1, 2, 3, 4, 5, 6))


def _reconcile_section(recs: dict, no_rec: list[str], confidence: float, several: bool) -> str:
    if not recs:
        why = "; ".join(no_rec) if no_rec else "no input holds EAGLE3_PROF blocks"
        return f'<p class="note">nothing to reconcile: {_e(why)}</p>'
    rows = []
    for r in recs.values():
        rows.append([Raw(_breakable(r.source)),
                     _with_ci(num(r.profiler_accept_len.estimate), ci(r.profiler_accept_len)),
                     _with_ci(num(r.sglang_accept_len.estimate), ci(r.sglang_accept_len)),
                     _with_ci(f"{num(r.ratio.estimate, 3)}×", ci(r.ratio, 3)),
                     "yes" if _disagree(r) else "no", _explained_by(r)])
    out = [_table(["run", "profiler", "SGLang", "ratio", "disagree", "explained by"], rows,
                  numeric=(1, 2, 3)),
           f'<p class="note">accept length in tokens per verify step ({confidence:.0%} '
           "intervals under each value); they disagree when the interval of the ratio excludes "
           "1</p>"]
    off = [r for r in recs.values() if _disagree(r)]
    if not off:
        out.append('<p class="note">The profiler and SGLang agree in every run: nothing to '
                   "explain.</p>")
    for r in off:
        table = _table(["factor", "verdict", "what the log says"],
                       [[f.factor, f.verdict, f.text] for f in r.findings])
        rec = f'<p><b>Recommended</b>: {_e(r.recommended)}</p>'
        if several and len(off) > 1:
            out.append(f"<details><summary>{_e(r.source)}: ratio {_e(num(r.ratio.estimate, 3))}× "
                       f"— {_e(_explained_by(r))}</summary>\n{table}\n{rec}\n</details>")
        else:
            out.append(f"<h3>{_e(r.source)}: what the log says</h3>\n{table}\n{rec}")
    for n in no_rec:
        out.append(f'<p class="note">not reconciled: {_e(n)}</p>')
    return "\n".join(out)


def _plot():
    from . import plot
    return plot


def plot_available() -> bool:
    """Whether matplotlib (the 'plot' extra) can be imported: the report draws its pictures."""
    from ..errors import MissingDependency

    try:
        _plot()._mpl()
    except MissingDependency:
        return False
    return True


def _tied_means(confidence: float) -> str:
    from ..analysis.sweep import TIED_MEANS
    return TIED_MEANS.format(conf=f"{confidence:.0%}")
