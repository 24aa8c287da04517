"""Human blocks of `eaglelog requests` and `eaglelog compare --paired` (docs/requests.md), and
their flat tables for -f markdown."""
from __future__ import annotations

import math

from tabulate import tabulate as _tabulate

from ..stats import Estimate
from .blocks import num

BAR = 30          # width of the longest histogram bar
DEFINITIONS = {
    "sglang": "SGLang: τ_r = (completion − 1) / verify steps (the first token comes from the "
              "prefill and needs no verify; spec_accept_length keeps it)",
    "spec-bench": "Spec-Bench: τ_r = Σ accept_lengths / decoding steps (its per-step "
                  "definition)",
    "eagle": "EAGLE answers: τ_r = Σ new_tokens / Σ (idx + 1)",
    "vllm": "vLLM: τ_r = 1 + accepted draft tokens / spec steps (per-request "
            "mean_acceptance_length; the first token needs no step)",
    "sglang-response": "SGLang responses: τ_r = 1 + spec_num_correct_drafts / spec_verify_ct "
                       "(sglext.spec_tokens_details; the first token needs no verify)",
    "llamacpp-response": "llama-server responses: τ_r = (predicted_n − 1) / (predicted_n − 1 − "
                         "draft_n_accepted) (timings; steps that drafted nothing included)",
}


def tabulate(rows, headers, **kw) -> str:
    """tabulate's 'simple' table without the trailing blanks of its last column."""
    return "\n".join(line.rstrip() for line in _tabulate(rows, headers=headers, **kw).split("\n"))


def _ci(e: Estimate, digits: int = 4) -> str:
    if not e.sufficient:
        return "insufficient data"
    return f"[{num(e.ci_low, digits)} … {num(e.ci_high, digits)}]"


def _with_ci(e: Estimate, digits: int = 4) -> str:
    return f"{num(e.estimate, digits)} {_ci(e, digits)}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{100 * v:.1f}%"


def _p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _below(below) -> str:
    if below is None:
        return ""
    share, lo, hi = below
    return _pct(share) + ("" if lo is None else f" [{_pct(lo)} … {_pct(hi)}]")


def _origins(o: dict) -> str:
    names = {"sglang": "SGLang Finish lines", "spec-bench": "Spec-Bench answers",
             "eagle": "EAGLE answers", "vllm": "vLLM responses",
             "sglang-response": "SGLang responses (sglext)",
             "llamacpp-response": "llama-server responses (timings)"}
    return ", ".join(f"{names.get(k, k)}" + (f" {v:,}" if len(o) > 1 else "")
                     for k, v in o.items())


def group_rows(run, by: str | None) -> list[dict]:
    """The rounded, labelled group table of one run (what -f markdown prints)."""
    rows = []
    be = run.breakeven is not None
    for g in (run.groups or ((run.overall,) if run.overall else ())):
        row = {f"{by or 'group'}": g.group, "requests": f"{g.requests:,}",
               "pooled accept len [CI]": _with_ci(g.pooled),
               "median": num(g.quantiles.get("p50")),
               "p10 … p90": f"{num(g.quantiles.get('p10'))} … {num(g.quantiles.get('p90'))}"}
        if be:
            row["below break-even"] = _below(g.below)
        row["mean output tok"] = num(g.output_tokens_mean, 3) if math.isfinite(
            g.output_tokens_mean) else "n/a"
        rows.append(row)
    return rows


def requests_block(result) -> str:
    conf = f"{result.confidence:.0%}"
    out = []
    for run in result.runs:
        out.append(f"{run.run}   {run.requests:,} requests ({_origins(run.origins)}; "
                   f"intervals: {conf} confidence)")
        for o in run.origins:
            out.append("  " + DEFINITIONS.get(o, f"{o}: τ_r = tokens of the verify steps / "
                                                 "steps"))
        g = run.overall
        if g is None:
            out.append("  no request has a verify step: no accept length to show")
        else:
            sg = set(run.origins) == {"sglang"}
            out.append(f"  {'pooled':<18}{_with_ci(g.pooled):<28}"
                       + ("Σ (completion − 1) / Σ verify" if sg else
                          "Σ step tokens / Σ steps")
                       + f" over {g.requests:,} requests, {g.steps:,} verify steps"
                       + (": the quantity SGLang's accept len pools" if sg else ""))
            out.append(f"  {'mean':<18}{_with_ci(g.mean):<28}each request counts once")
            q = g.quantiles
            out.append(f"  {'quantiles':<18}p5 {num(q['p5'])} · p10 {num(q['p10'])} · p25 "
                       f"{num(q['p25'])} · median {num(q['p50'])} · p75 {num(q['p75'])} · p90 "
                       f"{num(q['p90'])} · p95 {num(q['p95'])}   (min {num(g.minimum)}, max "
                       f"{num(g.maximum)})")
            if run.breakeven is not None:
                out.append(f"  {'below break-even':<18}{_below(g.below)} of the requests have "
                           f"τ_r < {num(run.breakeven)} ({run.breakeven_source})")
            if run.histogram:
                top = max(c for _, _, c in run.histogram) or 1
                out.append("  histogram")
                for a, b, c in run.histogram:
                    bar = "█" * int(round(BAR * c / top)) if c else ""
                    out.append(f"    {a:4.2f}–{b:4.2f}  {bar:<{BAR}} {c:,}")
        if run.groups:
            out.append("")
            out.append(tabulate([list(r.values()) for r in group_rows(run, result.by)],
                                headers=list(group_rows(run, result.by)[0].keys()),
                                tablefmt="simple", disable_numparse=True))
        if run.outliers:
            out.append("")
            out.append("  outliers (line: τ_r · output tokens · verify steps · finish · id)")
            for o in run.outliers:
                if o.kind == "loop suspect":
                    continue
                out.append(f"    {o.kind:<8} {o.line_no:>7}: {num(o.tau)} · "
                           f"{'?' if o.output_tokens is None else f'{o.output_tokens:,}'} tok · "
                           f"{'?' if o.steps is None else f'{o.steps:,}'} steps · "
                           f"{o.finish_reason or '?'} · {_short_id(o.id)}"
                           + (f"   {o.why}" if o.why else ""))
            loops = [o for o in run.outliers if o.kind == "loop suspect"]
            if loops:
                out.append(f"  repetition-loop suspects ({len(loops)}):")
                for o in loops[:20]:
                    out.append(f"    {o.line_no:>7}: τ_r {num(o.tau)} · {_short_id(o.id)} · "
                               f"{o.why}")
                if len(loops) > 20:
                    out.append(f"    … and {len(loops) - 20} more (-f json lists them all)")
            else:
                out.append("  repetition-loop suspects: none (a long output, ≥ 512 tokens "
                           "and twice the median, whose acceptance is far above that of "
                           "requests of its length"
                           + (f", or that accepted ≥ 98% of its drafts (τ_r of at most "
                              f"{run.max_accept:g})" if run.max_accept else "")
                           + "; docs/requests.md)")
        for n in run.notes:
            out.append(f"  note: {n}")
        out.append("")
    if result.workloads:
        out.append("workloads as the benchmark files report them (not per request)")
        rows = [[w["source"] + f":{w['line_no']}", w["tool"], w["workload"],
                 num(w["accept_len"]), w["accept_len_def"] or "",
                 "" if w["requests"] is None else f"{w['requests']:,}",
                 _config(w)] for w in result.workloads]
        out.append(tabulate(rows, headers=["where", "tool", "workload", "accept len",
                                           "definition", "requests", "config"],
                            tablefmt="simple", disable_numparse=True))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _config(w: dict) -> str:
    labels = (("batch_size", "bs"), ("spec_steps", "steps"), ("spec_topk", "topk"),
              ("spec_draft_tokens", "draft tokens"))
    return " · ".join(f"{label} {w[k]}" for k, label in labels if w.get(k) is not None)


def _short_id(v: str | None) -> str:
    if not v:
        return "no id"
    return v if len(v) <= 18 else v[:16] + "…"


def _change(ratio: Estimate) -> str:
    r = ratio.estimate
    if r is None or not math.isfinite(r):
        return "ratio n/a"
    word = "higher" if r >= 1 else "lower"
    text = f"{abs(r - 1) * 100:.1f}% {word}"
    if ratio.sufficient:
        lo, hi = sorted((abs(ratio.ci_low - 1), abs(ratio.ci_high - 1)))
        if (ratio.ci_low - 1) * (ratio.ci_high - 1) > 0:
            text += f"; {ratio.confidence:.0%} CI {lo * 100:.1f}% – {hi * 100:.1f}% {word}"
        else:
            text += f"; {ratio.confidence:.0%} CI {ratio.ci_low:.3f} – {ratio.ci_high:.3f}×"
    return text


def paired_block(r) -> str:
    conf = f"{r.confidence:.0%}"
    how = {"question": "benchmark question id", "prompt": "prompt hash", "rid": "request id",
           "rid-map": "request id, through the rid map"}[r.match]
    c = r.counts
    out = [f"paired comparison   reference: {r.reference}", f"{'':20}changed:   {r.changed}",
           f"  matched by {how}; {conf} intervals; t-test of the per-prompt log(τ_new / τ_ref)"
           " (prompts as units)"]
    out.append(f"  {'prompts':<14}{c['matched']:,} matched of {c['ref_prompts']:,} in the "
               f"reference and {c['new_prompts']:,} in the changed run (unmatched: "
               f"{_pct(c['unmatched_ref'])} and {_pct(c['unmatched_new'])})")
    out.append(f"  {'per prompt':<14}ratio {_with_ci(r.ratio, 4)}   p {_p(r.p_value)}"
               + (f"   (t = {r.t:.2f}, {r.df:.0f} df)" if r.t is not None and
                  math.isfinite(r.t) else "")
               + f"   wins {r.wins:,} · losses {r.losses:,} · ties {r.ties:,}")
    if r.verdict in ("better", "worse"):
        verdict = f"{r.verdict.upper()}: accept length {_change(r.ratio)} per prompt"
    elif r.verdict == "insufficient data":
        verdict = "insufficient data: too few matched prompts for the paired test"
    else:
        verdict = f"no detectable difference (p = {_p(r.p_value)}; {_change(r.ratio)})"
    out.append(f"  {'verdict':<14}{verdict}")
    out.append(f"  {'pooled':<14}ratio {_with_ci(r.pooled_ratio, 4)}   Σ-pooled accept "
               "length new / ref on the matched prompts (SGLang's accept len)")
    u = r.unpaired
    out.append(f"  {'unpaired':<14}ratio {_with_ci(u['ratio'], 4)}   p {_p(u['p_value'])}   the "
               "same prompts compared without the pairing (Welch): about what comparing "
               "the runs' averages can tell")
    if r.groups:
        out.append("")
        out.append(tabulate(paired_group_rows(r), headers="keys", tablefmt="simple",
                            disable_numparse=True))
    if r.worse:
        out.append("")
        out.append(f"  prompts that got worse ({r.losses:,}; the worst {len(r.worse)}):")
        rows = [[w["key"]] + ([w["group"]] if r.by else []) +
                [f"{num(w['accept_len_ref'])} → {num(w['accept_len_new'])}", num(w["ratio"]),
                 w["ref"], w["new"]] for w in r.worse]
        out.append(tabulate(rows, headers=["prompt"] + ([r.by] if r.by else []) +
                            ["τ ref → new", "ratio", "reference", "changed"],
                            tablefmt="simple", disable_numparse=True))
    for n in r.notes:
        out.append(f"  note: {n}")
    return "\n".join(out) + "\n"


def paired_group_rows(r) -> list[dict]:
    return [{r.by or "group": g.group, "pairs": f"{g.pairs:,}", "wins": f"{g.wins:,}",
             "losses": f"{g.losses:,}", "ratio [CI]": _with_ci(g.ratio, 4),
             "p": _p(g.p_value), "p (Holm)": _p(g.p_adjusted), "verdict": g.verdict}
            for g in r.groups]
