"""One screen per log: config, cycle breakdown, accept length (both views), throughput and the
break-even verdict when a baseline is given."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import stats
from ..api import ParsedLog
from ..schema import CONFIG_LABELS
from ..stats import Estimate
from .windows import rows_where, tokens_per_iter
from .breakeven import Baseline, BreakevenResult, accept_from_windows, breakeven, one_source

CONFIG_KEYS = tuple(kv for kv in CONFIG_LABELS if kv[1] != "decode_log_interval")


@dataclass(frozen=True)
class Phase:
    phase: str
    ms_per_cycle: Estimate
    pct: float

    def to_dict(self) -> dict:
        return {"phase": self.phase, "ms_per_cycle": self.ms_per_cycle.to_dict(), "pct": self.pct}


@dataclass(frozen=True)
class SummaryResult:
    source: str
    confidence: float
    config: dict
    lines: int
    span_s: float | None
    cycle_ms: Estimate | None
    blocks: int
    cycles: int
    phases: tuple[Phase, ...]
    bottleneck: str | None
    accept_sglang: Estimate | None
    accept_profiler: Estimate | None
    throughput_all: float | None
    throughput_clean: Estimate | None
    windows: int
    clean_windows: int
    breakeven: BreakevenResult | None
    notes: tuple[str, ...] = ()
    engine: str | None = None      # the log family (labels only; not in the JSON)
    # where the phases come from: 'no-sync blocks', 'N sync-mode blocks' (shares only, no
    # cycle), 'vLLM stage times', or None
    phases_from: str | None = None

    def to_dict(self) -> dict:
        def d(e):
            return e.to_dict() if e is not None else None
        return {"source": self.source, "confidence": self.confidence, "config": self.config,
                "lines": self.lines, "span_s": self.span_s,
                "cycle_ms": d(self.cycle_ms), "blocks": self.blocks, "cycles": self.cycles,
                "phases": [p.to_dict() for p in self.phases], "phases_from": self.phases_from,
                "bottleneck": self.bottleneck,
                "accept_len": {"sglang": d(self.accept_sglang),
                               "profiler": d(self.accept_profiler)},
                "throughput": {"all_windows_tok_s": self.throughput_all,
                               "clean_windows_tok_s": d(self.throughput_clean),
                               "windows": self.windows, "clean_windows": self.clean_windows},
                "breakeven": self.breakeven.to_dict() if self.breakeven else None,
                "notes": list(self.notes)}


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
              confidence: float = 0.95) -> SummaryResult:
    source = source or log.sources[0].name
    info = next(i for i in log.sources if i.name == source)
    cfg, w = one_source(log, source)
    config = {label: cfg.get(key) for key, label in CONFIG_KEYS if key in cfg}
    notes: list[str] = []
    # span
    ends = []                  # (first, last) timestamp of each table (NaT skipped)
    for df in log.tables.values():
        if "timestamp" not in df or not len(df):
            continue
        col = df["timestamp"]
        if len(log.sources) > 1:
            col = col[(df["source"] == source).to_numpy(dtype=bool)]
        lo, hi = col.min(), col.max()
        if not pd.isna(lo):
            ends.append((lo, hi))
    span = None
    if ends:
        span = (max(h for _, h in ends) - min(lo for lo, _ in ends)).total_seconds()
    # cycle breakdown from no-sync complete blocks
    p = log.prof[log.prof["source"] == source]
    sync = (p["mode"] == "sync").to_numpy(dtype=bool)
    complete = p["complete"].fillna(False).astype(bool).to_numpy()
    use = p[complete & ~sync].sort_values("line_no")
    cyc, phases, bottleneck, phases_from = None, [], None, None
    if len(use):
        weights = use["cycles"].to_numpy(float)
        cyc = stats.weighted_mean(use["total_ms"].to_numpy(), weights, confidence,
                                  f"{len(use)} no-sync EAGLE3_PROF blocks")
        phases = _phases(log, source, use, cyc.estimate, confidence)
        phases_from = "no-sync blocks"
        n_sync = int(sync.sum())
        if n_sync:
            notes.append(f"{n_sync} sync-mode block(s) left out of the cycle breakdown")
    elif (complete & sync).any():
        # sync mode: a device synchronize after each phase makes the split exact and the cycle
        # slower than production: the shares are shown, never the cycle time
        sblocks = p[complete & sync].sort_values("line_no")
        scyc = stats.weighted_mean(sblocks["total_ms"].to_numpy(), sblocks["cycles"].to_numpy(
            float), confidence, f"{len(sblocks)} sync-mode EAGLE3_PROF blocks")
        phases = _phases(log, source, sblocks, scyc.estimate, confidence)
        phases_from = f"{len(sblocks)} sync-mode blocks"
    if phases:
        bottleneck = max(phases, key=lambda x: x.ms_per_cycle.estimate).phase
    if not len(use) and not phases and "vllm_stages" in log.tables:
        cyc, phases, bottleneck, n_stage = vllm_stage_breakdown(log, source, confidence)
        if cyc is not None:
            phases_from = "vLLM stage times"
            notes.append(f"cycle breakdown from {n_stage} vLLM 'SpecDecodeWorker stage times' "
                         "lines: draft + scoring + verification leave scheduling out (a lower "
                         "bound of the cycle); break-even uses the cycle derived from throughput")
    spec_w = rows_where(w, np.isfinite(w["accept_len"].to_numpy(dtype=float))) if len(w) else w
    acc_sg = accept_from_windows(spec_w, confidence) if len(spec_w) else None
    acc_pr = stats.weighted_mean(use["accept_len"].to_numpy(), use["cycles"].to_numpy(float),
                                 confidence, f"{len(use)} EAGLE3_PROF blocks, cycle-weighted") \
        if len(use) else None
    # throughput: all windows (tokens / wall time, pooled) and clean windows (mean)
    t_all, t_clean, n_clean = None, None, 0
    if len(w):
        gen = w["gen_throughput"].to_numpy(float)
        tokens = tokens_per_iter(w)   # per iteration; × interval cancels
        ok = (w["reason"] != "first").to_numpy(dtype=bool) & (gen > 0) & (tokens > 0)
        if ok.any():       # (divided in place: arrays of millions of windows, as few as can be)
            tk = tokens[ok]
            total = tk.sum()
            tk /= gen[ok]
            t_all = float(total / tk.sum())
            del tk
        clean = w["clean"].to_numpy(dtype=bool)
        n_clean = int(clean.sum())
        if n_clean:
            # pooled like the all-windows figure: tokens over wall time (each window's weight is
            # its wall time, tokens / throughput)
            wall = tokens[clean]
            del tokens
            g_clean = gen[clean]
            wall /= g_clean
            t_clean = stats.weighted_mean(g_clean, wall, confidence,
                                          f"{n_clean} windows without prefill or idle time")
        else:
            del tokens
    sizes = sorted(int(x) for x in w["running_req"].dropna().unique()) if len(w) else []
    if len(sizes) > 1:
        notes.append(f"the run spans batch sizes {sizes[0]}–{sizes[-1]}: throughput and cycle "
                     "figures mix them (windows free of prefill are rarer at large batches)")
    be = None
    if baseline is not None and (len(use) or len(spec_w)):
        be = breakeven(log, baseline, source=source, confidence=confidence)
        if any(n.startswith("the run spans batch sizes") for n in be.notes):
            # the break-even's note says it (with what to do): one note, not two
            notes = [n for n in notes if not n.startswith("the run spans batch sizes")]
    elif baseline is not None:
        notes.append("not a speculative run (no EAGLE3_PROF blocks, no accept len): there is no "
                     "break-even to compute")
    return SummaryResult(source, confidence, config, info.lines, span, cyc, len(use),
                         int(use["cycles"].sum()) if len(use) else 0, tuple(phases), bottleneck,
                         acc_sg, acc_pr, t_all, t_clean, len(w), n_clean, be, tuple(notes),
                         info.engine, phases_from)


def _phases(log: ParsedLog, source: str, blocks: pd.DataFrame, total: float,
            confidence: float) -> list[Phase]:
    """Each phase's ms per cycle over ``blocks`` (cycle-weighted) and its share of ``total``."""
    weights = blocks["cycles"].to_numpy(float)
    ph = log.prof_phases[log.prof_phases["source"] == source]
    ph = ph[ph["block"].isin(blocks["line_no"])]
    wmap = pd.Series(weights, index=blocks["line_no"].to_numpy(dtype=np.int64))
    out = []
    for label in ph["phase"].drop_duplicates().astype(str):
        rows = ph[(ph["phase"] == label).to_numpy(dtype=bool)].sort_values("block")
        est = stats.weighted_mean(
            rows["ms_per_cycle"].to_numpy(),
            wmap.reindex(rows["block"].to_numpy(dtype=np.int64)).to_numpy(), confidence)
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
    from .compare import extra_from_series

    config = {label: run.config.get(key) for key, label in CONFIG_KEYS if key in run.config}
    metrics = tuple((name, s.label, s.unit, s.estimate(confidence))
                    for name, s in run.series.items())
    extra, notes = {}, []
    if baseline is not None:
        extra = extra_from_series(run, baseline, confidence)
        if not extra:
            notes.append("the export holds too few windows of cycle time and accept length "
                         "for a break-even")
    return ExportSummary(run.label, run.engine, confidence, config, metrics, extra, tuple(notes))
