"""The human block of a llama-server run's summary (analysis/llamacpp.py: LlamaSummary)."""
from __future__ import annotations

from .format import ci, num, verdict_sentence


def summary_block(s) -> str:
    run = s.run
    out = [f"{s.source}   ({s.lines:,} lines, {run.requests} requests; intervals: "
           f"{s.confidence:.0%} confidence)"]
    c = s.config
    parts = [str(c["algorithm"])] if c.get("algorithm") else \
        ["draft model" if c.get("draft") else "no draft"]
    parts += [f"{k.replace('_', ' ')} {c[k]}" for k in ("draft", "draft_max", "slots")
              if c.get(k) is not None]
    out.append(f"  {'config':<16}{' · '.join(parts)}")
    conc = f"concurrency {run.concurrency:g}, " if run.concurrency is not None else ""
    out.append(f"  {'requests':<16}{run.requests} ({conc}{run.tokens:,} decode tokens in "
               f"{run.eval_s:.2f} s of eval time)")
    lo, med, hi = run.per_request_rate
    out.append(f"  {'per stream':<16}{num(s.eff_tok_s.estimate)} tok/s  {ci(s.eff_tok_s)}   "
               f"Σ tokens / Σ eval time (each request {num(lo)} … {num(hi)} tok/s, "
               f"median {num(med)})")
    if s.speculative:
        a = s.accept_sglang
        out.append(f"  {'accept length':<16}{num(a.estimate)}  {ci(a)}   llama-server mean len, "
                   "pooled per verify step")
        if run.acceptance_rate is not None:
            out.append(f"  {'acceptance':<16}{run.acceptance_rate:.1%} of {run.drafted:,} "
                       f"drafted tokens ({run.accepted:,} accepted)")
        cyc = s.cycle_derived
        out.append(f"  {'cycle':<16}{num(cyc.estimate)} ms  {ci(cyc)}   accept length / "
                   "per-stream rate: one draft-and-verify step")
    else:
        st = s.cycle_derived
        out.append(f"  {'step':<16}{num(st.estimate)} ms  {ci(st)}   Σ eval time / Σ tokens "
                   "(no draft: a baseline for --baseline-toks or --baseline-log)")
    for t in run.statistics:
        if t["calls_a"] is None or t["accepted_tokens"] is None:
            continue
        same = (t["accepted_tokens"], t["draft_tokens"]) == (run.accepted, run.drafted)
        out.append(f"  {'statistics':<16}{t['label']}: {t['lines']} cumulative lines "
                   f"differenced: {t['accepted_tokens']:,} / {t['draft_tokens']:,} tokens "
                   f"accepted in {t['calls_a']:,} accept calls, mean acc len "
                   f"{num(t['accept_len'])}" + (" (= the requests' counts)" if same else ""))
    if s.breakeven is not None:
        b = s.breakeven
        out.append(f"  {'break-even':<16}accept length {num(b.breakeven_accept_len.estimate)} "
                   f"{ci(b.breakeven_accept_len)} vs {b.baseline}; measured "
                   f"{num(b.accept_len.estimate)}; speedup {num(b.speedup.estimate, 3)}× "
                   f"{ci(b.speedup, 3)}")
        out.append(f"  {'verdict':<16}{verdict_sentence(b)}")
        for n in b.notes:
            out.append(f"  note: {n}")
    elif s.speculative:
        out.append(f"  {'break-even':<16}give --baseline-toks TOK_S or --baseline-log BASE.log")
    for n in s.notes:
        out.append(f"  note: {n}")
    return "\n".join(out) + "\n"
