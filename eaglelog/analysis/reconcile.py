"""Why the profiler's accept length and SGLang's `accept len` differ (sglang.md §3, §10).

The profiler's ``Accept len`` is tok/cycles of the profiled request(s); SGLang's ``accept len`` is
pooled over all (request, verify-step) pairs of a decode-log window on one scheduler, bonus token
included.  ``reconcile`` puts both on the same period, with intervals and their ratio, and tests
each explanation the log can speak to.  The number that belongs in the break-even formula is
SGLang's per-batch value: break-even compares the tokens a cycle yields per request with the one
token a baseline step yields per request, at the same batch size.
"""
from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import stats
from ..api import ParsedLog
from ..errors import EaglelogError
from ..stats import Estimate
from . import engines
from .breakeven import accept_from_windows, diluted, free_fit, one_source, prof_cycle
from .windows import decode_interval, rows_where


@dataclass(frozen=True)
class Finding:
    factor: str
    verdict: str   # 'explains', 'possible', 'partly', 'no', 'n/a'
    text: str

    def to_dict(self) -> dict:
        return {"factor": self.factor, "verdict": self.verdict, "text": self.text}


@dataclass(frozen=True)
class ReconcileResult:
    source: str
    confidence: float
    aligned_by: str
    profiler_accept_len: Estimate
    sglang_accept_len: Estimate
    ratio: Estimate
    requests: dict | None
    findings: tuple[Finding, ...]
    recommended: str
    eff_tok_s_printed: Estimate | None
    eff_tok_s_recomputed: Estimate | None
    run_accept_len: Estimate | None = None     # the whole run's: what breakeven uses

    def to_dict(self) -> dict:
        return {"source": self.source, "confidence": self.confidence,
                "aligned_by": self.aligned_by,
                "profiler_accept_len": self.profiler_accept_len.to_dict(),
                "sglang_accept_len": self.sglang_accept_len.to_dict(),
                "ratio": self.ratio.to_dict(), "requests": self.requests,
                "findings": [f.to_dict() for f in self.findings],
                "recommended": self.recommended,
                "eff_tok_s_printed": self.eff_tok_s_printed.to_dict()
                if self.eff_tok_s_printed else None,
                "eff_tok_s_recomputed": self.eff_tok_s_recomputed.to_dict()
                if self.eff_tok_s_recomputed else None,
                "run_accept_len": self.run_accept_len.to_dict() if self.run_accept_len else None}


def _aligned_windows(blocks: pd.DataFrame, w: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Decode windows of the period the profile blocks cover: by timestamp when both carry
    one, otherwise by position in the file (between the first and the last block)."""
    if blocks["timestamp"].notna().all() and w["timestamp"].notna().all() and len(w):
        span_ms = (blocks["cycles"].astype(float) * blocks["total_ms"]).iloc[0]
        start = blocks["timestamp"].min() - pd.Timedelta(milliseconds=float(span_ms))
        end = blocks["timestamp"].max()
        sel = w[(w["timestamp"] > start) & (w["timestamp"] <= end + pd.Timedelta(seconds=1))]
        return sel, "timestamp"
    lo, hi = blocks["line_no"].min(), blocks["end_line"].max()
    # the windows that end between the first and the last block, plus the one after the last
    inside = w[(w["line_no"] > lo) & (w["line_no"] < hi)]
    after = w[w["line_no"] > hi].head(1)
    return pd.concat([inside, after]), "position in the file"


def reconcile(log: ParsedLog, *, source: str | None = None,
              confidence: float = 0.95, warmup="auto") -> ReconcileResult:
    source = source or log.sources[0].name
    log, engine_notes = engines.apply(log, source)    # corrections (docs/engines.md)
    cfg, w = one_source(log, source)
    p = log.prof[(log.prof["source"] == source)]
    p = p[p["complete"].fillna(False).astype(bool)].sort_values("line_no")
    if p.empty:
        raise EaglelogError(f"{source}: no complete EAGLE3_PROF blocks: nothing to reconcile "
                            "(reconcile compares the profiler's accept length with SGLang's)")
    spec_w = w[np.isfinite(w["accept_len"].to_numpy(dtype=float))] if len(w) else w
    if spec_w.empty:
        raise EaglelogError(f"{source}: the decode lines print no accept len: nothing to "
                            "compare the profiler's accept length with")
    aligned, how = _aligned_windows(p, spec_w)
    if len(aligned) < stats.MIN_WINDOWS:
        aligned, how = spec_w, "whole log (too few decode windows inside the profiled period)"
    prof_acc = stats.weighted_mean(p["accept_len"].to_numpy(), p["cycles"].to_numpy(float),
                                   confidence, f"EAGLE3_PROF blocks ({len(p)}, cycle-weighted)",
                                   floor=stats.BLOCK_PHI)
    sg = accept_from_windows(aligned, confidence)
    ratio = stats.combine(prof_acc.estimate / sg.estimate, [(prof_acc, 1), (sg, -1)],
                          confidence, "profiler / SGLang")
    findings: list[Finding] = [Finding("engine accounting", "explains", n)
                               for n in engine_notes]

    # 1. the bonus token (UNO's verify commits two non-draft tokens: analysis/engines.py)
    nd = engines.non_draft_tokens(cfg)
    what = ("the bonus token SGLang includes" if nd == 1 else
            f"the {nd} non-draft tokens an UNO verify commits and SGLang includes "
            "(sglang 0.5.23 uno_worker_v2.py:407)")
    plus1 = prof_acc.estimate + nd
    if not math.isfinite(plus1):
        # (blocks whose cycles are all 0 or unreadable weigh nothing: no accept length to add
        # the bonus to, never 'nan' on the screen: fuzz seed 74, case 148)
        findings.append(Finding("bonus token", "n/a", "the EAGLE3_PROF blocks give no accept "
                                "length (no block with a readable cycle count above 0) to test "
                                "against SGLang's"))
    elif sg.sufficient and sg.ci_low - 0.02 <= plus1 <= sg.ci_high + 0.02:
        findings.append(Finding("bonus token", "explains",
                                f"profiler + {nd} = {plus1:.3f} lies in SGLang's interval: "
                                "consistent with a profiler that counts accepted draft tokens "
                                f"without {what}"))
    elif sg.sufficient:
        findings.append(Finding("bonus token", "no",
                                f"profiler + {nd} = {plus1:.3f} is outside SGLang's interval "
                                f"[{sg.ci_low:.3f} … {sg.ci_high:.3f}]: a missing bonus token "
                                "alone does not explain the gap"))
    else:
        findings.append(Finding("bonus token", "n/a", f"profiler + {nd} = {plus1:.3f}; too few "
                                "decode windows for an interval to test it against"))
    # 2. batch size
    rr = aligned["running_req"].astype(float).dropna()
    if not len(rr):
        findings.append(Finding("batch size", "n/a", "no readable #running-req in the aligned "
                                "windows"))
    elif rr.max() <= 1:
        findings.append(Finding("batch size", "no", "#running-req is 1 in every aligned window: "
                                "SGLang pools one request, the same one the profiler sees"))
    else:
        findings.append(Finding("batch size", "partly",
                                f"#running-req is {rr.min():.0f}–{rr.max():.0f} (mean "
                                f"{rr.mean():.1f}): SGLang pools every request of the batch, "
                                "weighted by request-steps; a profiler that follows one request "
                                "sees only that request's acceptance"))
    # 3. num_continuous_decode_steps
    ncds = cfg.get("num_continuous_decode_steps")
    if isinstance(ncds, int) and ncds > 1:
        findings.append(Finding("num_continuous_decode_steps", "no",
                                f"set to {ncds}, but SGLang has ignored it since v0.3.6 "
                                "(2024-11): it changes neither accept len nor the window"))
    else:
        findings.append(Finding("num_continuous_decode_steps", "no",
                                f"{'default (1)' if ncds == 1 else 'not in the log'}; it has been "
                                "a no-op since v0.3.6 in any case"))
    # 4. prefill dilution
    dec = rows_where(log.decode, log.decode["source"] == source)
    if diluted(dec):
        above = ratio.sufficient and ratio.ci_low > 1
        findings.append(Finding("prefill dilution", "partly" if above else "no",
                                "SGLang's lines are from ≤ v0.5.3.post1, where each prefilled "
                                "request adds a 1.0 sample: SGLang's value is biased DOWN" +
                                (", which goes some way to put the profiler above it" if above
                                 else ", which would make it smaller, not larger")))
    else:
        findings.append(Finding("prefill dilution", "no", "the decode lines print accept rate "
                                "or a newer header: no prefill samples in SGLang's value"))
    # 5. sync-mode blocks
    n_sync = int(p["mode"].astype("string").eq("sync").fillna(False).sum())
    findings.append(Finding("sync mode", "no",
                            f"{n_sync} sync-mode block(s): synchronising slows the cycle but does "
                            "not change tokens per cycle" if n_sync else "all blocks are no-sync"))
    # 6. double counting: a ratio near 1/n (n cycles counted per decode iteration: one per
    # forward, draft and verify, or one per draft step)
    steps = cfg.get("speculative_num_steps")
    if ratio.sufficient and ratio.estimate < 0.95:
        for n in range(2, 9):
            if ratio.ci_low <= 1 / n <= ratio.ci_high:
                why = (f"one per draft step (num_steps = {steps})" if steps == n else
                       "one per forward pass (draft and verify)" if n == 2 else
                       f"{n} per decode iteration")
                findings.append(Finding("cycles counted per iteration", "possible",
                                        f"the ratio {ratio.estimate:.3f} is 1/{n} within its "
                                        f"interval: a profiler that counts {why} gives exactly "
                                        "this; check where the patch increments its cycle "
                                        "counter"))
                break
    # 7. the bonus token's meaning flipped between SGLang's spec workers: v1 returns accepted
    # drafts (no bonus), v2 (enable_beta_spec, SGLANG_ENABLE_SPEC_V2, default from v0.5.11)
    # accept lengths that include it (sglang.md §3.7b)
    v2 = bool(cfg.get("enable_beta_spec"))
    if sg.sufficient and sg.ci_low <= prof_acc.estimate <= sg.ci_high:
        findings.append(Finding("bonus token (spec v2)", "explains",
                                "the profiler equals SGLang's value: it counts the bonus too, as "
                                "the spec-v2 worker's accept lengths do" +
                                (" (enable_beta_spec=True)" if v2 else "")))
    elif v2:
        findings.append(Finding("bonus token (spec v2)", "no",
                                "enable_beta_spec=True: the worker's accept lengths include the "
                                "bonus, yet the profiler differs from SGLang's value"))
    # 8. profiler cycles that include prefill or idle calls: tokens per cycle diluted by the
    # prefill batches of the profiled period (estimated from its Prefill lines)
    pre = rows_where(log.prefill, log.prefill["source"] == source)
    if len(pre) and len(aligned) and ratio.sufficient and ratio.estimate < 1:
        lo_line, hi_line = aligned["line_no"].min(), aligned["line_no"].max()
        n_pre = int(((pre["line_no"] >= lo_line) & (pre["line_no"] <= hi_line)).sum())
        iters = len(aligned) * decode_interval(cfg)
        diluted_by = iters / (iters + n_pre)
        if n_pre and ratio.ci_low <= diluted_by <= ratio.ci_high:
            findings.append(Finding("prefill calls counted as cycles", "explains",
                                    f"{n_pre} prefill batches beside {iters} decode iterations "
                                    f"in the profiled period: counting them as cycles gives a "
                                    f"ratio of {diluted_by:.3f}, inside the interval"))
        elif n_pre:
            findings.append(Finding("prefill calls counted as cycles", "no",
                                    f"{n_pre} prefill batches beside {iters} decode iterations "
                                    f"would give a ratio of {diluted_by:.3f}, outside "
                                    f"[{ratio.ci_low:.3f} … {ratio.ci_high:.3f}]"))
    # 9. DP ranks: SGLang's windows of several DP ranks against the blocks of one
    if "dp" in dec.columns and dec["dp"].nunique() > 1:
        ranks = sorted(int(x) for x in dec["dp"].dropna().unique())
        pr = sorted(int(x) for x in p["dp"].dropna().unique()) if "dp" in p.columns else []
        findings.append(Finding("DP rank", "partly" if pr and len(pr) < len(ranks) else "n/a",
                                f"the decode lines come from DP ranks {ranks}, the profile "
                                f"blocks from {pr or 'unknown ranks'}: compare one rank with "
                                "the same rank (acceptance differs between ranks' batches)"))
    # 10. per-request views
    req = requests_views(log, source)
    if req:
        findings.append(Finding("per-request accept length", "n/a",
                                f"Finish lines: mean of completion_tokens/spec_verify_ct = "
                                f"{req['mean_reported']:.3f} (biased up by the first token), "
                                f"per step (completion−1)/verify_ct = {req['mean_per_step']:.3f}, "
                                f"pooled over requests = {req['pooled_per_step']:.3f} — the "
                                "pooled per-step value is SGLang's quantity" +
                                (f" ({req['left_out']} request(s) without a readable "
                                 "completion_tokens left out)" if req["left_out"] else "")))
    explained = any(f.verdict in ("explains", "possible") for f in findings)
    if not explained and sg.sufficient and prof_acc.sufficient and \
            (ratio.ci_high < 1 or ratio.ci_low > 1):
        findings.append(Finding("unexplained", "n/a",
                                f"the log does not explain a ratio of {ratio.estimate:.2f}: the "
                                "profiler's token count is defined differently (check what the "
                                "patch counts per cycle: accepted drafts only, one request of "
                                "the batch, tokens after EOS trimming)"))
    # the numbers break-even uses (the rate model over the whole run): one set of numbers
    fit = free_fit(log, source, confidence, warmup)
    run_acc = fit["accept_len"]
    cyc, how_cyc = fit["cycle_ms"], "the derived cycle"
    if not (fit.kind != "upper bound" and cyc.sufficient):
        prof = prof_cycle(log, source, confidence, [])
        if prof is not None:
            cyc, how_cyc = prof, "TOTAL"
    value = (f"{run_acc.estimate:.3f}, the whole run's, as breakeven does"
             if math.isfinite(run_acc.estimate) else
             "none is readable in this log: too few decode windows with a batch size")
    recommended = (f"use SGLang's per-batch accept len ({value}) in the break-even formula: it "
                   "counts every token a cycle commits per request (bonus included), which is "
                   "what one baseline step (one token per request) is compared with")
    eff_p = stats.weighted_mean(p["eff_tok_s"].to_numpy(), p["cycles"].to_numpy(float),
                                confidence, "printed by the profiler", floor=stats.BLOCK_PHI)
    eff_r = stats.combine(1000 * run_acc.estimate / cyc.estimate, [(run_acc, 1), (cyc, -1)],
                          confidence, f"1000 × SGLang accept len / {how_cyc}")
    return ReconcileResult(source, confidence, how, prof_acc, sg, ratio, req, tuple(findings),
                           recommended, eff_p, eff_r, run_acc)


def requests_views(log: ParsedLog, source: str) -> dict | None:
    r = log.requests[log.requests["source"] == source]
    r = r[r["verify_ct"].fillna(0) > 0]
    c = r["completion_tokens"].to_numpy(dtype=float, na_value=np.nan)
    v = r["verify_ct"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(c) & np.isfinite(v)       # a damaged completion_tokens: left out, counted
    if not ok.any():
        return None
    c, v = c[ok], v[ok]
    return {"requests": int(ok.sum()), "left_out": int((~ok).sum()),
            "mean_reported": float(np.mean(c / v)),
            "mean_per_step": float(np.mean((c - 1) / v)),
            "pooled_per_step": float((c - 1).sum() / v.sum())}
