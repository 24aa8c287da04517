"""Human blocks for analysis results (hyperfine style: a fixed, aligned block per input)."""
from __future__ import annotations

import math

from ..stats import Estimate  # noqa: F401
from .format import ci, ms2, num, pct, row, verdict_sentence  # noqa: F401  (re-exported)


def breakeven_block(r) -> str:
    conf = f"{r.confidence:.0%}"
    lines = [f"{r.source}  vs  baseline {r.baseline}   (intervals: {conf} confidence)"]
    lines.append(row("cycle time", r.cycle_ms, " ms"))
    lines.append(row("baseline step", r.baseline_step_ms, " ms"))
    lines.append(row("break-even accept", r.breakeven_accept_len, "", source=False))
    if r.verdict == "needs accept length":
        lines.append(f"  {'accept length':<20}{'—':>11}  {r.accept_len.source}")
        lines.append(f"  {'speedup':<20}{'—':>11}  needs the accept length")
    else:
        lines.append(row("accept length", r.accept_len))
        lines.append(row("speedup", r.speedup, "×", digits=3, source=False))
    eff = getattr(r, "eff_tok_s", None)
    if eff is not None and math.isfinite(eff.estimate):
        lines.append(row("per-stream rate", eff, " tok/s", source=False) +
                     "   1000 × accept length / cycle (the rate one request stream gets)")
    lines.append(f"  {'verdict':<20}{verdict_sentence(r)}")
    if r.verdict in ("below", "inconclusive") and r.speedup.estimate < 0.9995 and \
            r.cycle_ms.sufficient and r.breakeven_accept_len.sufficient and \
            r.accept_len.estimate > 0 and r.cycle_ms.estimate > 0:
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


def by_batch_table(r) -> str:
    from .table_text import simple_table

    rows = []
    k = any(b.steps is not None for b in r.by_batch)     # an adaptive run's K per bucket
    cx = any(getattr(b, "context", None) is not None for b in r.by_batch)   # #token printed
    for b in r.by_batch:
        rows.append([b.batch, *([b.steps or "?"] if k else []), b.windows,
                     *([f"{b.context:,.0f}" if b.context is not None else "—"] if cx else []),
                     num(b.cycle_ms.estimate), num(b.baseline_step_ms.estimate),
                     num(b.breakeven_accept_len.estimate), num(b.accept_len.estimate),
                     f"{num(b.speedup.estimate, 3)} {ci(b.speedup, 3)}", b.verdict])
    return simple_table(rows, ["running_req", *(["K"] if k else []), "windows",
                               *(["context"] if cx else []), "cycle ms", "step ms",
                               "break-even", "accept len", "speedup [CI]", "verdict"])


def by_rank_table(rows) -> str:
    """The summary's per-rank rows (analysis/ranks.py): each DP rank or vLLM engine's windows,
    batch sizes, accept length, per-stream rate and aggregate tok/s."""
    from .table_text import simple_table

    out = []
    for r in rows:
        sizes = "n/a" if r.sizes is None else str(r.sizes[0]) if r.sizes[0] == r.sizes[1] \
            else f"{r.sizes[0]}–{r.sizes[1]}"
        acc = "—" if r.accept_len is None else num(r.accept_len.estimate)
        eff = "n/a" if r.eff_tok_s is None else f"{num(r.eff_tok_s.estimate)} {ci(r.eff_tok_s)}"
        out.append([r.rank, r.windows, sizes, acc, eff, num(r.aggregate_tok_s)])
    return simple_table(out, ["rank", "windows", "running_req", "accept len",
                              "per stream tok/s [CI]", "aggregate tok/s"])


def summary_block(s) -> str:
    if getattr(s, "cycle_kind", None) == "llama.cpp requests":   # analysis/llamacpp.py
        from .llamacpp import summary_block as llama_block
        return llama_block(s)
    from .__init__ import fmt_duration

    span = f", {fmt_duration(s.span_s)}" if s.span_s is not None else ""
    out = [f"{s.source}   ({s.lines:,} {getattr(s, 'counted', 'lines')}{span}; intervals: "
           f"{s.confidence:.0%} confidence)"]
    c = s.config
    if c:
        if c.get("algorithm"):
            parts = [str(c["algorithm"])] + [f"{k.replace('_', ' ')} {c[k]}" for k in
                                             ("draft", "steps", "topk", "draft_tokens")
                                             if c.get(k) is not None]
        else:
            parts = ["no speculative decoding"]
        parts += [f"{k} {c[k]}" for k in ("tp", "dp") if c.get(k) is not None]
        out.append(f"  {'config':<16}{' · '.join(parts)}")
    if s.cycle_ms is not None:
        where = f"{s.blocks} no-sync EAGLE3_PROF blocks, {s.cycles:,} cycles" if s.blocks \
            else f"{s.cycle_ms.source} (a lower bound: scheduling left out)"
        out.append(f"  {'cycle':<16}{s.cycle_ms.estimate:.2f} ms  {ci(s.cycle_ms)}   {where}")
        for p in s.phases:
            mark = "   ← bottleneck" if p.phase == s.bottleneck else ""
            e = p.ms_per_cycle
            interval = (f"[{e.ci_low:.2f} … {e.ci_high:.2f}]" if e.sufficient else
                        "insufficient data")
            out.append(f"    {p.phase:<18}{e.estimate:>7.2f} ms  {p.pct:5.1f}%  {interval}{mark}")
    elif s.phases:        # sync-mode blocks only: the shares, not the times
        out.append(f"  {'cycle':<16}not measured: {s.phases_from} only (exact phase shares; "
                   "a device sync after each phase slows the cycle)")
        for p in s.phases:
            mark = "   ← bottleneck" if p.phase == s.bottleneck else ""
            out.append(f"    {p.phase:<18}{p.pct:5.1f}% of the cycle{mark}")
    used = getattr(s, "cycle_used", None)
    rate_on_derived = bool(s.blocks) and used is not None and s.cycle_derived is not None and \
        used.estimate == s.cycle_derived.estimate
    if s.cycle_derived is not None and (s.cycle_ms is None or not s.blocks or rate_on_derived):
        label = "cycle" if s.cycle_ms is None and not s.phases else "derived cycle"
        if not getattr(s, "speculative", True):
            label = "step"
        out.append(f"  {label:<16}{num(s.cycle_derived.estimate)} ms  {ci(s.cycle_derived)}   "
                   f"{s.cycle_derived.source}")
    elif s.cycle_ms is None and not s.phases:
        why = ("too few usable decode windows to derive it"
               if s.accept_sglang is not None else "no accept len in the decode lines")
        out.append(f"  {'cycle':<16}not measured: no complete EAGLE3_PROF block, {why}")
    families = set((s.engine or "sglang").split("+"))
    server = ("vLLM" if "vllm" in families and "sglang" not in families else
              "SGLang" if "sglang" in families and "vllm" not in families else "server")
    if s.accept_sglang is not None:
        out.append(f"  {'accept length':<16}{num(s.accept_sglang.estimate)}  "
                   f"{ci(s.accept_sglang)}   {server} accept len: {s.accept_sglang.source}")
    if s.accept_profiler is not None:
        ratio = ""
        if s.accept_sglang is not None and math.isfinite(s.accept_sglang.estimate) and \
                s.accept_sglang.estimate > 0 and math.isfinite(s.accept_profiler.estimate):
            ratio = (f"; {s.accept_profiler.estimate / s.accept_sglang.estimate:.2f}× "
                     f"{server}'s — see `eaglelog reconcile`")
        label = "" if s.accept_sglang is not None else "accept length"
        out.append(f"  {label:<16}{num(s.accept_profiler.estimate)}  {ci(s.accept_profiler)}   "
                   f"profiler Accept len: {s.accept_profiler.source}{ratio}")
    if s.throughput_all is not None:
        n_ranks = getattr(s, "ranks", 1)
        added = f" of its {n_ranks} ranks added" if n_ranks > 1 else ""
        out.append(f"  {'throughput':<16}{num(s.throughput_all)} tok/s aggregate: all streams"
                   f"{added}, over the wall time of {s.n_windows} decode windows (their prefill "
                   "time included)")
    if s.eff_tok_s is not None:
        how = (f"1000 × accept length / {'derived ' if rate_on_derived else ''}cycle: the rate "
               "one request gets (what the break-even compares)"
               if getattr(s, "speculative", True) else
               "1000 / step: the rate one request gets (a baseline for --baseline-toks)")
        out.append(f"  {'per stream':<16}{num(s.eff_tok_s.estimate)} tok/s  {ci(s.eff_tok_s)}   "
                   + how)
    if getattr(s, "by_rank", ()):
        out.append(f"  {'by rank':<16}(the ranks differ)")
        out.append("\n".join("    " + ln for ln in by_rank_table(s.by_rank).splitlines()))
    if s.breakeven is not None:
        b = s.breakeven
        cyc = ""
        shown = s.cycle_ms if s.cycle_ms is not None else s.cycle_derived
        if shown is None or abs(b.cycle_ms.estimate - shown.estimate) > 1e-9:
            cyc = (f" (cycle {b.cycle_ms.estimate:.2f} ms from {b.cycle_ms.source})"
                   if math.isfinite(b.cycle_ms.estimate) else
                   f" (no cycle time: {b.cycle_ms.source})")
        measured = "not in the log" if b.verdict == "needs accept length" else \
            num(b.accept_len.estimate)
        out.append(f"  {'break-even':<16}accept length {num(b.breakeven_accept_len.estimate)} "
                   f"{ci(b.breakeven_accept_len)} vs {s.breakeven.baseline}; measured "
                   f"{measured}{cyc}")
        out.append(f"  {'verdict':<16}{verdict_sentence(b)}")
        if b.by_batch:                  # a wide span at one stated rate: the table is the answer
            out.append("")
            out.append("\n".join("  " + ln for ln in by_batch_table(b).splitlines()))
        for n in b.notes:
            out.append(f"  note: {n}")
    elif s.accept_sglang is not None or s.cycle_ms is not None:
        out.append(f"  {'break-even':<16}give --baseline-toks TOK_S or --baseline-log BASE.log")
    for n in s.notes:
        out.append(f"  note: {n}")
    return "\n".join(out) + "\n"


def export_summary_block(s) -> str:
    """An export's summary: each metric it holds, then the break-even with a baseline."""
    out = [f"{s.source}   (an eaglelog export; intervals: {s.confidence:.0%} confidence)"]
    for name, label, unit, e in s.metrics:
        interval = ci(e) if e.sufficient else "insufficient data"
        out.append(f"  {label:<26}{num(e.estimate):>10} {unit:<15}{interval}   {e.n} windows")
    if s.extra:
        be, sp = s.extra["breakeven_accept_len"], s.extra["speedup"]
        out.append(f"  {'break-even accept length':<26}{num(be.estimate):>10} {'':<15}{ci(be)}")
        out.append(f"  {'speedup':<26}{num(sp.estimate, 3):>9}× {'':<15}{ci(sp, 3)}")
    for n in s.notes:
        out.append(f"  note: {n}")
    return "\n".join(out) + "\n"


def reconcile_block(r) -> str:
    out = [f"{r.source}   (aligned by {r.aligned_by}; intervals: {r.confidence:.0%} confidence)"]
    out.append(row("profiler", r.profiler_accept_len, source=True))
    out.append(row("SGLang accept len", r.sglang_accept_len, source=True))
    out.append(row("ratio", r.ratio, "×", digits=3, source=True))
    if r.requests:
        q = r.requests
        out.append(f"  {'Finish lines':<20}{q['requests']} requests: completion/verify_ct mean "
                   f"{q['mean_reported']:.3f} · (completion−1)/verify_ct mean "
                   f"{q['mean_per_step']:.3f} · pooled {q['pooled_per_step']:.3f}")
    out.append("  what the log says:")
    for f in r.findings:
        out.append(f"    {f.factor:<32}{f.verdict:<9}{f.text}")
    out.append(f"  {'recommended':<20}{r.recommended}")
    if r.eff_tok_s_printed and r.eff_tok_s_recomputed:
        out.append(f"  {'eff tok/s':<20}printed {num(r.eff_tok_s_printed.estimate)} → "
                   f"{num(r.eff_tok_s_recomputed.estimate)} {ci(r.eff_tok_s_recomputed)} with "
                   "SGLang's accept length")
    return "\n".join(out) + "\n"


def config_diff_text(diff: dict) -> str:
    """'speculative_num_steps 3 → 5; …' (a setting one run does not print: 'not printed'),
    or 'no difference in server_args'."""
    if not diff:
        return "no difference in server_args"

    def v(x):
        return "not printed" if x is None else str(x)
    return "; ".join(f"{k} {v(a)} → {v(b)}" for k, (a, b) in diff.items())


def _pv(p) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_is(p, name: str = "p") -> str:
    """'p = 0.012', 'p < 0.001' or 'p n/a': a p-value in a sentence."""
    if p is None:
        return f"{name} n/a"
    return f"{name} < 0.001" if p < 0.001 else f"{name} = {p:.3f}"


def _msd(mean, sd, unit) -> str:
    u = "" if unit in ("", "×") else f" {unit}"
    if sd is None or (isinstance(sd, float) and math.isnan(sd)):
        return f"{num(mean)}{u}"
    if abs(sd) < 1e-9 * max(abs(mean), 1e-300):
        sd = 0.0
    m = f"{mean:.2f}" if unit == "ms" else num(mean)
    return f"{m} ± {sd:.2g}{u}"


def batch_compare_block(r, tablefmt: str = "simple") -> str:
    """compare --by batch (analysis/batch_compare.py): a bucket a row, K of each run, the
    per-stream rates and their ratio."""
    from .table_text import draw

    def rate(e):
        return "—" if e is None else f"{num(e.estimate)} {ci(e)}"
    rows = [[b.batch, b.ref_steps or "?", b.new_steps or "?", rate(b.ref_tok_s),
             rate(b.new_tok_s), "—" if b.ratio is None else f"{num(b.ratio.estimate, 3)} "
             f"{ci(b.ratio, 3)}", "—" if b.p_adjusted is None else f"{b.p_adjusted:.3g}",
             b.verdict] for b in r.buckets]
    out = [f"reference: {r.reference}", f"changed:   {r.run}   ({r.confidence:.0%} intervals)",
           draw(rows, ["running_req", "K ref", "K new", "ref tok/s [CI]", "new tok/s [CI]",
                       "ratio [CI]", "p (Holm)", "verdict"], tablefmt)]
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out) + "\n"


def compare_block(r, tablefmt: str = "simple") -> str:
    """The comparison; ``tablefmt='github'``: as markdown (what `-f markdown` prints)."""
    from .table_text import draw
    md = tablefmt == "github"

    test = {"welch": "Welch's t-test on the log ratio", "mannwhitney":
            "Mann-Whitney U on batch estimates"}[r.test]
    out = [f"reference: {r.reference}   ({r.confidence:.0%} intervals; {test}; secondary "
           "metrics Holm-adjusted" + (f"; --min-effect {r.min_effect:.1%}" if r.min_effect
                                      else "") + ")"]
    for run in r.runs:
        rows = []
        head = r.headline.get(run)
        prim = next((m for m in r.metrics if m.run == run and m.role == "primary"), None)
        for m in r.metrics:
            if m.run != run:
                continue
            name = f"{m.label} ({m.metric})" if m.metric != m.label else m.label
            if m.role == "primary":
                name += " ← primary"
            rows.append([name, _val(m.reference_mean, m.unit), _val(m.mean, m.unit),
                         f"{num(m.ratio.estimate)} [{num(m.ratio.ci_low)} … "
                         f"{num(m.ratio.ci_high)}]" if m.ratio.sufficient else "n/a",
                         _pv(m.p_value), _pv(m.p_adjusted) if m.role == "secondary" else "",
                         m.verdict])
        out += ["", f"{'### ' if md else ''}{run} vs reference"]
        if prim is not None:
            if head in ("better", "worse"):
                words = prim.verdict.split("(", 1)[-1].rstrip(")")
                out.append(f"  verdict: {head.upper()}: {words} ({p_is(prim.p_value)})")
            else:
                out.append(f"  verdict: {head} in the {prim.label}" +
                           (f" ({p_is(prim.p_value)})" if prim.p_value is not None else ""))
        out += [""] if md else []
        out.append(draw(rows, ["metric", "reference", "changed", "ratio [CI]", "p", "p (Holm)",
                               "verdict"], tablefmt))
        out += [""] if md else []
        out.append("  config: " + config_diff_text(r.config_diff.get(run) or {}))
    for w in r.warnings:
        out.append(f"{'- ' if md else '  '}warning: {w}")
    for n in r.notes:
        out.append(f"{'- ' if md else '  '}note: {n}")
    return "\n".join(out) + "\n"


def fenced(text: str) -> str:
    """A human block as markdown: in a fenced text block, so its columns stay aligned where
    it is pasted (a PR, an issue)."""
    return "```text\n" + text.rstrip("\n") + "\n```\n"


def _val(v: float, unit: str) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    u = "" if unit in ("×",) else f" {unit}"
    return (f"{v:.2f}" if unit == "ms" else num(v)) + u


def sweep_block(r, tablefmt: str = "simple") -> str:
    """The sweep table; ``tablefmt='github'``: as markdown (what `-f markdown` prints)."""
    from .table_text import draw

    headers = list(r.keys) + ["cycle ms", "verify ms", "accept len", "eff tok/s [CI]"]
    if r.baseline:
        headers += ["break-even", "speedup [CI]", "vs baseline"]
    headers += [""]
    rows = []
    for sr in r.rows:
        line = [str(sr.keys.get(k)) for k in r.keys] if r.keys else []
        line += [ms2(sr.cycle_ms), ms2(sr.verify_ms, ""),
                 num(sr.accept_len.estimate if sr.accept_len else None),
                 f"{num(sr.eff_tok_s.estimate)} "
                 f"{ci(sr.eff_tok_s)}"]
        if r.baseline:
            line += [num(sr.breakeven_accept_len.estimate),
                     f"{num(sr.speedup.estimate, 3)} {ci(sr.speedup, 3)}", sr.verdict]
        line += [sr.mark, sr.run]
        rows.append(line)
    headers += ["run"]
    title = f"sweep of {len(r.rows)} runs, sorted by effective tok/s ({r.confidence:.0%} intervals"
    title += f"; baseline {r.baseline})" if r.baseline else ")"
    md = tablefmt == "github"
    out = [title] + ([""] if md else []) + [draw(rows, headers, tablefmt)]
    from ..analysis.sweep import TIED_MEANS
    out += [""] if md else []
    out.append("best: highest effective tok/s; " + TIED_MEANS.format(conf=f"{r.confidence:.0%}"))
    for n in r.notes:
        out.append(f"{'- ' if md else ''}note: {n}")
    return "\n".join(out) + "\n"
