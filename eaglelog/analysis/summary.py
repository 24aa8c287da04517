"""One screen per log: config, cycle breakdown, accept length (both views), throughput and the
break-even verdict when a baseline is given."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import stats
from ..api import ParsedLog
from ..schema import CONFIG_LABELS
from ..stats import Estimate
from . import engines, ranks, rate
from .evidence import Evidence
from .prof_blocks import ProfBlocks
from .breakeven import (Baseline, breakeven, choose_cycle, free_fit, prof_cycle,
                        run_windows, short_note)
from .results import Phase, SummaryResult  # noqa: F401  (their home: results.py)

CONFIG_KEYS = tuple(kv for kv in CONFIG_LABELS if kv[1] != "decode_log_interval")


# vLLM V0 stage-time columns -> phase labels of the cycle breakdown
VLLM_PHASES = (("draft_ms", "Draft (proposal)"), ("scoring_ms", "Scoring (target)"),
               ("verification_ms", "Verification"), ("prefill_sync_ms", "Prefill sync"))


def vllm_stage_breakdown(log: ParsedLog, source: str, confidence: float):
    """vLLM V0 'SpecDecodeWorker stage times' lines as a cycle breakdown: each line is one
    window (~5 s of steps) of equal weight; the stage sum, a lower bound of the cycle, stands for
    it.  (None, (), None, 0) when the log has no such lines."""
    st = log.tables["vllm_stages"]
    st = st[(st["source"] == source).to_numpy(dtype=bool)].sort_values("line_no")
    tot = st["stage_sum_ms"].to_numpy(dtype=float) if len(st) else np.empty(0)
    ok = np.isfinite(tot)
    if not ok.any():
        return None, (), None, 0
    st, ones = st[ok], np.ones(int(ok.sum()))
    n = len(st)
    cyc = stats.weighted_mean(tot[ok], ones, confidence,
                              f"{n} SpecDecodeWorker stage-time lines (stage sum)")
    phases = []
    for col, label in VLLM_PHASES:
        v = st[col].to_numpy(dtype=float, na_value=np.nan) if col in st else np.full(n, np.nan)
        if np.isfinite(v).all():
            est = stats.weighted_mean(v, ones, confidence)
            phases.append(Phase(label, est, 100 * est.estimate / cyc.estimate
                                if cyc.estimate else float("nan")))
    bottleneck = max(phases, key=lambda x: x.ms_per_cycle.estimate).phase if phases else None
    return cyc, tuple(phases), bottleneck, n


def summarize(log: ParsedLog, *, source: str | None = None, baseline: Baseline | None = None,
              confidence: float = 0.95, warmup: str | int = "auto") -> SummaryResult:
    source = source or log.sources[0].name
    from . import llamacpp         # a llama-server log: its requests (analysis/llamacpp.py)
    if llamacpp.handles(log, source):
        return llamacpp.summarize(log, source=source, baseline=baseline, confidence=confidence)
    info = next(i for i in log.sources if i.name == source)
    cfg = log.config(source)
    config = {label: cfg.get(key) for key, label in CONFIG_KEYS if key in cfg}
    log, notes = engines.apply(log, source)    # engine/version corrections (docs/engines.md)
    span = log.span_s(source)
    # cycle breakdown from no-sync complete blocks
    p = ProfBlocks.of(log, source)
    sync = p.sync
    use = p.take(p.usable())
    cyc, phases, bottleneck, phases_from = None, [], None, None
    if len(use):
        cyc = stats.weighted_mean(use.total_ms, use.cycles, confidence,
                                  f"{len(use)} no-sync EAGLE3_PROF blocks",
                                  floor=stats.BLOCK_PHI)
        phases = _phases(log, source, use, cyc.estimate, confidence)
        phases_from = "no-sync blocks"
        n_sync = int(sync.sum())
        if n_sync:
            notes.append(f"{n_sync} sync-mode block(s) left out of the cycle breakdown")
    elif p.usable(sync=True).any():
        # sync mode: a device synchronize after each phase makes the split exact and the cycle
        # slower than production: the shares are shown, never the cycle time
        sblocks = p.take(p.usable(sync=True))
        scyc = stats.weighted_mean(sblocks.total_ms, sblocks.cycles, confidence,
                                   f"{len(sblocks)} sync-mode EAGLE3_PROF blocks",
                                   floor=stats.BLOCK_PHI)
        phases = _phases(log, source, sblocks, scyc.estimate, confidence)
        phases_from = f"{len(sblocks)} sync-mode blocks"
    if log.single_use and "prof_phases" in log.tables:
        log.release("prof_phases")      # (read by the breakdown above alone)
    if phases:
        bottleneck = max(phases, key=lambda x: x.ms_per_cycle.estimate).phase
    if not len(use) and not phases and "vllm_stages" in log.tables:
        cyc, phases, bottleneck, n_stage = vllm_stage_breakdown(log, source, confidence)
        if cyc is not None:
            phases_from = "vLLM stage times"
            notes.append(f"cycle breakdown from {n_stage} vLLM 'SpecDecodeWorker stage times' "
                         "lines: draft + scoring + verification leave scheduling out (a lower "
                         "bound of the cycle); break-even uses the cycle derived from throughput")
    # the rate model (analysis/rate.py): accept length, derived cycle, per-stream rate — the
    # numbers break-even uses
    _, win = run_windows(log, source)
    be = None
    if baseline is not None and (len(use) or win.spec):
        be = breakeven(log, baseline, source=source, confidence=confidence, warmup=warmup)
    # the rate model once: break-even's own fit over every window when it made one
    fit = be.whole_fit if be is not None and be.whole_fit is not None else \
        free_fit(log, source, confidence, warmup) if win.n else None
    # the run's own accept length and per-stream rate, over all of it: where the baseline
    # covers only part of the run, break-even's figures (in its own line) are of that part
    whole = be is None or be.coverage >= 1 - 1e-9
    acc_sg = (be.accept_len if be is not None and whole else fit["accept_len"]) \
        if win.spec else None
    acc_pr = stats.weighted_mean(use.accept_len, use.cycles, confidence,
                                 f"{len(use)} EAGLE3_PROF blocks, cycle-weighted",
                                 floor=stats.BLOCK_PHI) \
        if len(use) else None
    derived = fit["cycle_ms"] if fit is not None and math.isfinite(fit["cycle_ms"].estimate) \
        else None
    eff, cycle_used = None, None
    if be is not None and whole and be.eff_tok_s is not None and \
            math.isfinite(be.eff_tok_s.estimate):
        eff, cycle_used = be.eff_tok_s, be.cycle_ms
    elif fit is not None and win.spec:
        # the cycle break-even would use (one story: the same choice, the same notes)
        cnotes: list[str] = []
        prof = prof_cycle(log, source, confidence, []) if len(use) else None
        cycle_used, kind, r = choose_cycle(prof, fit, win, fit["accept_len"], "auto",
                                           confidence, cnotes)
        if be is None:
            notes.extend(cnotes)          # (break-even's notes carry them otherwise)
        if math.isfinite(r.estimate):
            eff = Estimate(1000 * r.estimate, None if r.ci_low is None else 1000 * r.ci_low,
                           None if r.ci_high is None else 1000 * r.ci_high, r.n, r.confidence,
                           r.se_log, r.df, "1000 × accept length / cycle ("
                           + ("EAGLE3_PROF blocks" if kind == "profiler" else "decode lines")
                           + ")")
    elif derived is not None and be is None:
        notes.extend(fit.notes)               # (break-even's notes carry them otherwise)
    if derived is not None and not win.spec:       # no speculation: a token per step
        d = derived
        eff = Estimate(1000 / d.estimate, None if d.ci_high is None else 1000 / d.ci_high,
                       None if d.ci_low is None else 1000 / d.ci_low, d.n, d.confidence,
                       d.se_log, d.df, "1000 / step (decode lines)")
    # the aggregate throughput: tokens over the decode windows' wall time (those with a known
    # start and no idle gap or stall), summed over concurrent DP ranks / vLLM engines
    # (analysis/ranks.py); one row per rank where the ranks differ
    t_all = ranks.aggregate(win) if fit is not None else None
    by_rank = ranks.by_rank(win, confidence, warmup) if fit is not None else ()
    code, rank_labels = ranks.rank_of(win)
    within = []                     # each rank's own batch sizes: never pooled across ranks
    for k, label in enumerate(rank_labels):
        rk = win.r[code == k] if len(rank_labels) > 1 else win.r
        sz = [int(x) for x in rate.distinct(rk[np.isfinite(rk)])] if len(rk) else []
        if len(sz) > 1:
            within.append((label, sz[0], sz[-1]))
    if len(rank_labels) == 1 and within:
        notes.append(f"the run spans batch sizes {within[0][1]}–{within[0][2]}: the aggregate "
                     "throughput mixes them; the per-stream rate weighs each window by its "
                     "request-steps")
    elif within:
        notes.append("the run spans batch sizes within its ranks ("
                     + "; ".join(f"{lab}: {lo}–{hi}" for lab, lo, hi in within)
                     + "): the per-stream rate weighs each window by its request-steps")
    if len(rank_labels) > 1 and by_rank:
        notes.append(f"the {len(rank_labels)} ranks differ (batch sizes or per-stream rates; the "
                     "rows above): the aggregate adds them, the per-stream rate pools their "
                     "request-steps")
    if be is not None:
        if any(n.startswith("--baseline-toks is a per-stream rate") for n in be.notes):
            notes = [n for n in notes if not n.startswith("the run spans batch sizes")]
    elif baseline is not None:
        notes.append("not a speculative run (no EAGLE3_PROF blocks, no accept len): there is no "
                     "break-even to compute")
    bad_total = p.bad_total_note()
    if bad_total and be is None:     # (break-even's notes say it otherwise: prof_cycle)
        notes.append(bad_total)
    if fit is not None and fit.warmup and be is None:
        notes.append(f"the first {fit.warmup} decode windows differ from the rest (a warm-up): "
                     "left out (--skip-warmup 0 keeps them)")
    if be is None:         # (break-even's notes say it otherwise)
        short = short_note(fit, cyc, acc_sg)
        if short:
            notes.append(short)
    return SummaryResult(source, confidence, config, info.lines, span, cyc, len(use),
                         int(np.nansum(use.cycles)) if len(use) else 0, tuple(phases), bottleneck,
                         acc_sg, acc_pr, t_all, eff, win.n, fit.used if fit else 0, be,
                         tuple(dict.fromkeys(notes)), info.engine, phases_from, derived,
                         fit.kind if fit is not None else None, win.spec,
                         "metrics windows" if cfg.get("metrics_engine") else "lines",
                         cycle_used, len(rank_labels), by_rank,
                         Evidence(win, fit) if fit is not None else None)


def _phases(log: ParsedLog, source: str, blocks: "ProfBlocks", total: float,
            confidence: float) -> list[Phase]:
    """Each phase's ms per cycle over ``blocks`` (cycle-weighted) and its share of ``total``."""
    weights = blocks.cycles
    block = log.values(source, "prof_phases", "block", np.int64, -1)
    lines = blocks.line
    # (np.isin's answer by a search: np.isin loads numpy.ma, ~8 ms of a small log's start)
    pool = np.sort(lines)
    at = np.minimum(np.searchsorted(pool, block), max(len(pool) - 1, 0))
    keep = pool[at] == block if len(pool) else np.zeros(len(block), dtype=bool)
    block = block[keep]
    code, labels = log.codes(source, "prof_phases", "phase")
    code = code[keep]
    ms = log.values(source, "prof_phases", "ms_per_cycle")[keep]
    order = np.argsort(lines, kind="stable")
    w_of = weights[order][np.searchsorted(lines[order], block)]    # each row's block weight
    out = []
    present, first = np.unique(code, return_index=True)
    for k in present[np.argsort(first, kind="stable")]:    # (the order they first occur)
        label = labels[int(k)]
        m = code == k
        by = np.argsort(block[m], kind="stable")
        est = stats.weighted_mean(ms[m][by], w_of[m][by], confidence, floor=stats.BLOCK_PHI)
        out.append(Phase(label, est, 100 * est.estimate / total if total else float("nan")))
    return out


@dataclass(frozen=True)
class ExportSummary:
    """What an eaglelog export (``eaglelog export``) holds: each metric's estimate over its
    windows and, with a baseline, the break-even accept length and the speedup."""

    source: str
    engine: str
    confidence: float
    config: dict
    metrics: tuple[tuple[str, str, str, Estimate], ...]    # (name, label, unit, estimate)
    extra: dict                                           # breakeven_accept_len, speedup
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"source": self.source, "engine": self.engine, "export": True,
                "confidence": self.confidence, "config": self.config,
                "metrics": {n: {"label": lab, "unit": u, **e.to_dict()}
                            for n, lab, u, e in self.metrics},
                "breakeven": {k: e.to_dict() for k, e in self.extra.items()} or None,
                "notes": list(self.notes)}

    def rows(self) -> list[dict]:
        """One flat row (csv/markdown): each metric's estimate and interval."""
        row = {"source": self.source}
        for n, _, _, e in self.metrics:
            row.update({n: e.estimate, f"{n}_ci_low": e.ci_low, f"{n}_ci_high": e.ci_high})
        for n, e in self.extra.items():
            row.update({n: e.estimate, f"{n}_ci_low": e.ci_low, f"{n}_ci_high": e.ci_high})
        return [row]


def summarize_export(run, *, baseline: Baseline | None = None,
                     confidence: float = 0.95) -> ExportSummary:
    """Summary of an exported run (analysis.compare.Run from load_export)."""
    from .breakeven import baseline_side
    from .compare import speedup_of_export

    config = {label: run.config.get(key) for key, label in CONFIG_KEYS if key in run.config}
    metrics = tuple((name, m.label, m.unit, m.estimate) for name, m in run.metrics.items())
    extra, notes = {}, []
    if baseline is not None:
        base = baseline_side(baseline, confidence, notes)
        sp = speedup_of_export(run, base, confidence)
        cyc = run.metrics.get("cycle_ms")
        acc = run.metrics.get("accept_len")
        if sp is not None and cyc is not None and acc is not None and math.isfinite(sp.estimate):
            # speedup = accept × step / cycle: the matched step is speedup × cycle / accept
            c = cyc.estimate
            step = sp.estimate * c.estimate / acc.estimate.estimate
            be = stats.from_log_se(c.estimate / step, c.se_log, c.df, c.n, confidence) \
                if c.sufficient else stats.insufficient(c.estimate / step, c.n, confidence)
            extra = {"breakeven_accept_len": be, "speedup": sp}
        else:
            notes.append("the export holds no per-stream rate and batch mix (an older export, or "
                         "too few windows) for a break-even")
    return ExportSummary(run.label, run.engine, confidence, config, metrics, extra, tuple(notes))
