"""Break-even accept length and projected speedup, with intervals (docs/statistics.md).

    breakeven_accept_len = cycle_ms / baseline_step_ms
    speedup              = accept_len × baseline_step_ms / cycle_ms

Speculation pays when speedup > 1, i.e. when accept_len > breakeven_accept_len.  The verdict is
``above`` / ``below`` when the speedup interval lies entirely above / below 1, ``inconclusive``
when it straddles 1, ``insufficient data`` when an interval cannot be had.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import stats
from ..api import ParsedLog
from ..baseline import Baseline  # noqa: F401 - re-exported: analysis.breakeven.Baseline
from ..errors import EaglelogError
from ..stats import Estimate
from .windows import bucket_labels, decode_interval, derived_ms, rows_where, windows

VERDICTS = ("above", "below", "inconclusive", "insufficient data")
ESTIMATES = ("cycle_ms", "baseline_step_ms", "breakeven_accept_len", "accept_len", "speedup")


def _estimates(obj) -> dict:
    return {k: getattr(obj, k).to_dict() for k in ESTIMATES}


@dataclass(frozen=True)
class BucketResult:
    batch: str
    windows: int
    cycle_ms: Estimate
    baseline_step_ms: Estimate
    breakeven_accept_len: Estimate
    accept_len: Estimate
    speedup: Estimate
    verdict: str

    def to_dict(self) -> dict:
        batch = int(self.batch) if self.batch.isdigit() else self.batch
        return {"running_req": batch, "windows": self.windows, **_estimates(self),
                "verdict": self.verdict}


@dataclass(frozen=True)
class BreakevenResult:
    source: str
    baseline: str
    confidence: float
    cycle_ms: Estimate
    baseline_step_ms: Estimate
    breakeven_accept_len: Estimate
    accept_len: Estimate
    speedup: Estimate
    verdict: str
    notes: tuple[str, ...] = ()
    by_batch: tuple[BucketResult, ...] | None = None
    rate: Estimate | None = None     # accept_len / cycle_ms: the run's own part of the speedup

    def to_dict(self) -> dict:
        d = {"source": self.source, "baseline": self.baseline, **_estimates(self),
             "confidence": self.confidence, "verdict": self.verdict, "notes": list(self.notes)}
        if self.by_batch is not None:
            d["by_batch"] = [b.to_dict() for b in self.by_batch]
        return d


def verdict_of(speedup: Estimate) -> str:
    if not speedup.sufficient:
        return "insufficient data"
    if speedup.ci_low > 1:
        return "above"
    if speedup.ci_high < 1:
        return "below"
    return "inconclusive"


# ----------------------------------------------------------------------------- pieces

def one_source(log: ParsedLog, source: str) -> tuple[dict, pd.DataFrame]:
    """(config, windows of the source's decode lines), computed once per ParsedLog."""
    memo = log.__dict__.setdefault("_windows", {})
    if source not in memo:
        cfg = log.config(source)
        dec = log.decode
        if len(log.sources) > 1 or (len(dec) and (dec["source"] != source).any()):
            dec = dec[dec["source"] == source]
        pre = rows_where(log.prefill, log.prefill["source"] == source)
        memo[source] = (cfg, windows(dec, pre, decode_interval(cfg)))
    return memo[source]


def prof_cycle(log: ParsedLog, source: str, confidence: float, notes: list[str]) -> Estimate | None:
    p = log.prof[log.prof["source"] == source]
    if p.empty:
        return None
    mode = p["mode"]
    complete = p["complete"].fillna(False).astype(bool)
    sync = (mode == "sync").fillna(False).astype(bool)       # NA (no mode) is not sync
    if sync.any():
        notes.append(f"{int(sync.sum())} EAGLE3_PROF block(s) in sync mode left out: a device "
                     "synchronize after each phase distorts the cycle time")
    if (~complete).any():
        notes.append(f"{int((~complete).sum())} incomplete EAGLE3_PROF block(s) left out")
    if mode.isna().any():
        notes.append(f"{int(mode.isna().sum())} EAGLE3_PROF block(s) without a mode are taken as "
                     "'no sync'")
    use = p[complete & ~sync].sort_values("line_no")
    if use.empty:
        return None
    return stats.weighted_mean(use["total_ms"].to_numpy(), use["cycles"].to_numpy(dtype=float),
                               confidence, f"EAGLE3_PROF blocks ({len(use)} no-sync blocks, "
                               "cycle-weighted)")


def derived_cycle(w: pd.DataFrame, confidence: float, notes: list[str],
                  what: str = "cycle") -> tuple[Estimate, pd.DataFrame]:
    """Mean derived cycle (or step) time over clean windows; all windows when too few are
    clean (said in a note)."""
    use = rows_where(w, w["clean"])
    label = f"decode lines ({len(use)} clean windows of {len(w)})"
    if len(use) < stats.MIN_WINDOWS:
        rest = rows_where(w, np.isfinite(derived_ms(w)) & (w["reason"] != "first").to_numpy())
        if len(rest) > len(use):
            notes.append(f"only {len(use)} of {len(w)} decode windows are free of prefill and "
                         f"idle time: the derived {what} time uses {len(rest)} windows and "
                         "includes that time (an upper bound)")
            use = rest
            label = f"decode lines ({len(use)} windows incl. prefill/idle time)"
    est = stats.weighted_mean(derived_ms(use), np.ones(len(use)), confidence, label)
    return est, use


_ACCEPT_MEMO: dict[int, tuple[weakref.ref, dict]] = {}   # id(frame) -> (its ref, estimates)


def accept_from_windows(w: pd.DataFrame, confidence: float) -> Estimate:
    """Request-step weighted accept length of the windows; remembered for as long as the frame
    object lives (summary and its break-even ask about the same windows)."""
    hit = _ACCEPT_MEMO.get(id(w))
    if hit is None or hit[0]() is not w:
        hit = (weakref.ref(w, lambda _, k=id(w): _ACCEPT_MEMO.pop(k, None)), {})
        _ACCEPT_MEMO[id(w)] = hit
    memo = hit[1]
    if confidence not in memo:
        a = rows_where(w, np.isfinite(w["accept_len"].to_numpy(dtype=float)))
        memo[confidence] = stats.weighted_mean(
            a["accept_len"].to_numpy(dtype=float), a["req_steps"].to_numpy(dtype=float),
            confidence, f"decode lines ({len(a)} windows, request-step weighted)")
    return memo[confidence]


def diluted(dec: pd.DataFrame) -> bool:
    """Lines of releases ≤ v0.5.3.post1 ('Decode batch.' with accept len, no accept rate) mix
    prefill samples of 1.0 into accept len (sglang.md §3.6)."""
    if dec.empty or "accept_rate" not in dec.columns:
        return bool(len(dec)) and dec["accept_len"].notna().any()
    if "header" not in dec.columns:      # vLLM rows only: no SGLang release to dilute
        return False
    spec = dec["accept_len"].notna()
    old = spec & dec["accept_rate"].isna() & (dec["header"] == ".").fillna(False)
    return bool(old.any())


def baseline_steps(baseline: Baseline, confidence: float, notes: list[str]):
    """(step Estimate, None) for a stated rate, or (None, the baseline log's windows with their
    batch-size bucket) for a baseline log."""
    if baseline.log is None:
        step = 1000.0 / baseline.tok_s
        sd = 1000.0 * baseline.sd / baseline.tok_s ** 2 if baseline.sd else None
        src = f"--baseline-toks {baseline.label}" + (" (σ of the rate)" if baseline.sd else
                                                      " (taken as exact)")
        return stats.constant(step, sd, confidence, src), None
    log = baseline.log
    src = log.sources[0].name
    ups = log.startups(src)
    if len(ups) > 1:
        raise EaglelogError(f"{src}: the baseline log holds {len(ups)} server start-ups: give a "
                            "log of one run")
    cfg, w = one_source(log, src)
    if cfg.get("speculative_algorithm") or (len(w) and w["accept_len"].notna().any()):
        why = (f"speculative_algorithm={cfg['speculative_algorithm']!r}"
               if cfg.get("speculative_algorithm") else "its decode lines print accept len")
        raise EaglelogError(f"{src}: not a baseline: it is a speculative run ({why}); give a "
                            "log of the same model without speculation")
    if w.empty:
        raise EaglelogError(f"{src}: the baseline log has no 'Decode batch' lines to derive a "
                            "step time from")
    w = w.assign(bucket=bucket_labels(w["running_req"]))
    return None, w


# ----------------------------------------------------------------------------- main

@dataclass(frozen=True)
class RunPart:
    """What a speculative run alone says: cycle time, accept length, and their ratio (the
    tokens per ms each request stream gets), with the windows behind them."""

    cycle_ms: Estimate
    accept_len: Estimate
    rate: Estimate          # accept_len / cycle_ms, tokens per ms per request
    spec_windows: pd.DataFrame
    notes: tuple[str, ...]
    cycle_windows: pd.DataFrame | None = None   # the windows of a derived cycle time


def run_part(log: ParsedLog, source: str | None = None, confidence: float = 0.95,
             cycle_from: str = "auto", buckets: set | None = None) -> RunPart:
    """Cycle time, accept length and their ratio for one run; with ``buckets``, only the
    decode windows of those batch-size buckets (the ones a baseline log can match)."""
    if not 0 < confidence < 1:
        raise EaglelogError("--confidence must be between 0 and 1, e.g. 0.95")
    source = source or log.sources[0].name
    notes: list[str] = []
    cfg, w = one_source(log, source)
    dec = rows_where(log.decode, log.decode["source"] == source)
    spec_w = rows_where(w, np.isfinite(w["accept_len"].to_numpy(dtype=float))) if len(w) else w
    if buckets is not None and len(spec_w):
        lab = bucket_labels(spec_w["running_req"])
        keep = lab.isin(buckets).to_numpy()
        if not keep.all():
            lost = sorted(set(lab[~keep].dropna()), key=lambda b: int(str(b).split("–")[0]))
            notes.append(f"the baseline log has too few windows at running_req "
                         f"{', '.join(map(str, lost))}: the run's {int((~keep).sum())} windows "
                         f"({(~keep).mean():.0%}) at those batch sizes are left out")
            spec_w = spec_w[keep]
            if spec_w.empty:
                raise EaglelogError(f"{source}: the baseline log matches none of the run's batch "
                                    "sizes (#running-req)")

    # --- cycle time
    cyc = None
    if cycle_from in ("auto", "prof"):
        cyc = prof_cycle(log, source, confidence, notes)
        if cyc is not None and not cyc.sufficient and cycle_from == "auto" and len(spec_w):
            notes.append(f"only {cyc.n} usable EAGLE3_PROF blocks: cycle time derived from the "
                         "decode lines instead")
            cyc = None
        if cyc is None and cycle_from == "prof":
            raise EaglelogError(f"{source}: no usable EAGLE3_PROF blocks for --cycle-from prof")
    cyc_windows = None
    if cyc is None:
        if spec_w.empty:
            raise EaglelogError(f"{source}: no EAGLE3_PROF blocks and no 'Decode batch' lines with "
                                "accept len: nothing to take a cycle time from (is this a "
                                "speculative run?)")
        cyc, cyc_windows = derived_cycle(spec_w, confidence, notes)

    # --- accept length (per-batch, request-step weighted)
    if len(spec_w):
        acc = accept_from_windows(spec_w, confidence)
        if diluted(dec):
            notes.append("accept len comes from SGLang ≤ v0.5.3.post1 lines, which mix a 1.0 "
                         "sample per prefilled request into it (sglang.md §3.6): a lower bound")
    else:
        acc = requests_accept(log, source, confidence)
        if acc is None:
            raise EaglelogError(f"{source}: no accept length: the decode lines print no "
                                "'accept len' and there are no Finish lines with spec_verify_ct")
        notes.append("the decode lines print no accept len: accept length from the Finish "
                     "lines, (completion_tokens − 1) / spec_verify_ct pooled over requests")
    if cyc_windows is not None:
        # accept length and cycle time come from the same windows: jackknife their ratio jointly
        rate = joint_ratio(spec_w, confidence)
    else:
        rate = stats.combine(acc.estimate / cyc.estimate, [(acc, 1), (cyc, -1)], confidence)
        if buckets is not None and any("left out" in n for n in notes):
            notes.append("the EAGLE3_PROF cycle time covers every batch size of the run: "
                         "--cycle-from decode matches the baseline exactly")
    return RunPart(cyc, acc, rate, spec_w, tuple(notes), cyc_windows)


def breakeven(log: ParsedLog, baseline: Baseline, *, source: str | None = None,
              confidence: float = 0.95, by_batch: bool = False,
              cycle_from: str = "auto") -> BreakevenResult:
    """Break-even analysis of one input of ``log`` (default: the first) against ``baseline``."""
    source = source or log.sources[0].name
    notes: list[str] = []
    step, base_w = baseline_steps(baseline, confidence, notes)
    matchable = None
    if base_w is not None:
        matchable = {b for b, g in base_w.groupby("bucket", observed=True)
                     if _bucket_step(g, confidence).sufficient}
    part = run_part(log, source, confidence, cycle_from, buckets=matchable)
    notes = list(part.notes) + notes
    cyc, acc, spec_w = part.cycle_ms, part.accept_len, part.spec_windows
    buckets = None
    if base_w is not None:
        # the same windows weigh both sides: those of the derived cycle, else all spec windows
        step, share_note = matched_step(part.cycle_windows if part.cycle_windows is not None
                                        else spec_w, base_w, confidence)
        if share_note:
            notes.append(share_note)

    # --- ratio and speedup
    be = stats.combine(cyc.estimate / step.estimate, [(cyc, 1), (step, -1)], confidence,
                       "cycle_ms / baseline_step_ms")
    sp = stats.combine(part.rate.estimate * step.estimate, [(part.rate, 1), (step, 1)],
                       confidence, "accept_len × baseline_step_ms / cycle_ms")
    if by_batch:
        if base_w is None:
            raise EaglelogError("--by batch needs --baseline-log: a stated baseline rate has no "
                                "batch size")
        buckets = tuple(by_bucket(spec_w, base_w, confidence))
    sizes = spec_w["running_req"].dropna().unique() if len(spec_w) else []
    if len(sizes) > 1:
        lo, hi = int(min(sizes)), int(max(sizes))
        notes.append(f"the run spans batch sizes {lo}–{hi}: the overall numbers mix them "
                     "(cycle and step time grow with the batch)" +
                     ("" if by_batch else "; --by batch with --baseline-log shows each"))
    rho = lag1(spec_w["accept_len"].to_numpy(dtype=float)) if len(spec_w) > 3 else 0.0
    if rho > 0.5:
        notes.append(f"consecutive windows are strongly autocorrelated (lag-1 r = {rho:.2f}): "
                     "intervals may be too narrow; a longer run gives more independent batches")
    return BreakevenResult(source, baseline.label, confidence, cyc, step, be, acc, sp,
                           verdict_of(sp), tuple(notes), buckets, part.rate)


def lag1(x: np.ndarray) -> float:
    finite = np.isfinite(x)
    if not finite.all():
        x = x[finite]
    d = x - x.mean()
    den = float(np.dot(d, d))
    return float(np.dot(d[1:], d[:-1]) / den) if den > 0 else 0.0


def joint_ratio(w: pd.DataFrame, confidence: float) -> Estimate:
    """accept_len / cycle_ms from the same windows (request-step weighted accept length over all
    windows, mean derived cycle over clean ones), jackknifed over batches of windows."""
    a = w["accept_len"].to_numpy(dtype=float)
    rs = w["req_steps"].to_numpy(dtype=float)
    c = derived_ms(w)
    clean = w["clean"].to_numpy(dtype=bool)
    if clean.sum() < stats.MIN_WINDOWS:
        clean = np.isfinite(c) & (w["reason"].to_numpy() != "first")

    def fn(mask):
        m2 = mask & clean
        if not m2.any():
            return math.nan
        return float(np.sum(a[mask] * rs[mask]) / np.sum(rs[mask]) / np.mean(c[m2]))
    return stats.jackknife(fn, len(w), confidence, "decode lines")


def requests_accept(log: ParsedLog, source: str, confidence: float) -> Estimate | None:
    r = log.requests[(log.requests["source"] == source)].sort_values("line_no")
    r = r[r["verify_ct"].fillna(0) > 0]
    if r.empty:
        return None
    c = r["completion_tokens"].to_numpy(dtype=float) - 1
    v = r["verify_ct"].to_numpy(dtype=float)
    return stats.jackknife(lambda m: float(c[m].sum() / v[m].sum()), len(r), confidence,
                           f"Finish lines ({len(r)} requests, pooled per verify step)")


def _bucket_step(bw: pd.DataFrame, confidence: float) -> Estimate:
    notes: list[str] = []
    est, _ = derived_cycle(bw, confidence, notes, "step")
    return est


def matched_step(spec_w: pd.DataFrame, base_w: pd.DataFrame, confidence: float):
    """Baseline step time matched on batch size: per running_req bucket, weighted by the spec
    run's share of windows in that bucket."""
    sb = bucket_labels(spec_w["running_req"]) if len(spec_w) else pd.Series([], dtype="string")
    share = sb.value_counts(normalize=True)
    parts, missing = [], []
    for b, p in share.items():
        bw = base_w[base_w["bucket"] == b]
        est = _bucket_step(bw, confidence) if len(bw) else None
        if est is None or not est.sufficient:
            missing.append((b, p))
            continue
        parts.append((b, p, est))
    note = None
    if missing:
        lost = sum(p for _, p in missing)
        note = (f"the baseline log has too few windows at running_req "
                f"{', '.join(str(b) for b, _ in missing)}: {lost:.0%} of the run's windows are "
                "matched with the other batch sizes only")
    if not parts:
        return stats.insufficient(math.nan, 0, confidence, "baseline log (no batch size of the "
                                  "run has enough baseline windows)"), note
    tot = sum(p for _, p, _ in parts)
    step = sum(p / tot * e.estimate for _, p, e in parts)
    var = sum((p / tot * e.estimate * e.se_log) ** 2 for _, p, e in parts)
    num = var ** 2
    den = sum((p / tot * e.estimate * e.se_log) ** 4 / e.df for _, p, e in parts if e.df)
    df = num / den if den > 0 else math.inf
    n = sum(e.n for _, _, e in parts)
    label = ("baseline log, matched on running_req " +
             ", ".join(f"{b} ({p / tot:.0%})" for b, p, _ in parts))
    if var == 0:
        return stats.Estimate(step, step, step, n, confidence, 0.0, math.inf, label), note
    return stats.from_log_se(step, math.sqrt(var) / step, df, n, confidence, label), note


def by_bucket(spec_w: pd.DataFrame, base_w: pd.DataFrame, confidence: float):
    sw = spec_w.assign(bucket=bucket_labels(spec_w["running_req"]))
    keys = sorted(set(sw["bucket"].dropna()), key=lambda s: int(str(s).split("–")[0]))
    for b in keys:
        w = sw[sw["bucket"] == b]
        bw = base_w[base_w["bucket"] == b]
        notes: list[str] = []
        cyc, _ = derived_cycle(w, confidence, notes)
        acc = accept_from_windows(w, confidence)
        step = _bucket_step(bw, confidence) if len(bw) else stats.insufficient(
            math.nan, 0, confidence, "baseline log: no window at this batch size")
        be = stats.combine(cyc.estimate / step.estimate, [(cyc, 1), (step, -1)], confidence)
        r = joint_ratio(w, confidence)
        sp = stats.combine(r.estimate * step.estimate, [(r, 1), (step, 1)], confidence)
        yield BucketResult(str(b), len(w), cyc, step, be, acc, sp, verdict_of(sp))
