"""Which config of a sweep wins: one row per run, sorted by effective throughput.

effective tok/s = 1000 × accept_len / cycle_ms, the decode rate one request stream gets (SGLang's
per-batch accept length over the cycle time; docs/statistics.md).  The best row is marked; rows
whose interval overlaps the best one's are marked as statistically tied.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import stats
from ..api import ParsedLog
from ..errors import EaglelogError
from ..stats import Estimate
from .breakeven import Baseline, breakeven, run_part
from .compare import NOT_CONFIG
from .metrics import run_metrics


@dataclass(frozen=True)
class SweepRow:
    run: str
    keys: dict
    cycle_ms: Estimate
    verify_ms: Estimate | None
    accept_len: Estimate
    eff_tok_s: Estimate
    breakeven_accept_len: Estimate | None
    speedup: Estimate | None
    verdict: str | None
    mark: str   # 'best', 'tied' or ''

    def to_dict(self) -> dict:
        def d(e):
            return e.to_dict() if e is not None else None
        return {"run": self.run, "config": self.keys, "cycle_ms": d(self.cycle_ms),
                "verify_ms": d(self.verify_ms), "accept_len": d(self.accept_len),
                "eff_tok_s": d(self.eff_tok_s),
                "breakeven_accept_len": d(self.breakeven_accept_len),
                "speedup": d(self.speedup), "verdict": self.verdict, "mark": self.mark}


@dataclass(frozen=True)
class SweepResult:
    keys: tuple[str, ...]
    rows: tuple[SweepRow, ...]
    confidence: float
    baseline: str | None
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"keys": list(self.keys), "confidence": self.confidence,
                "baseline": self.baseline, "rows": [r.to_dict() for r in self.rows],
                "notes": list(self.notes)}


def _overlap(a: Estimate, b: Estimate) -> bool:
    return a.sufficient and b.sufficient and a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def sweep(log: ParsedLog, *, keys: list[str] | None = None, baseline: Baseline | None = None,
          confidence: float = 0.95, keep_going: bool = False) -> SweepResult:
    notes: list[str] = []
    units, parts = [], []
    for label, sub in log.units():
        try:
            parts.append(run_part(sub, confidence=confidence))
            units.append((label, sub))
        except EaglelogError as e:
            if not keep_going:
                raise
            notes.append(f"left out: {e}")
    if len(units) < 2:
        raise EaglelogError("sweep needs at least two runs (logs, or server start-ups in a log)")
    configs = []
    for label, sub in units:
        su = sub.decode["startup"].dropna()
        configs.append(sub.config(sub.sources[0].name, int(su.iloc[0]) if len(su) else None))
    no_args = [label for (label, _), c in zip(units, configs) if not c]
    if no_args:
        notes.append(f"no server_args line in {', '.join(no_args)}: its config keys are unknown")
    sizes = {label: sorted(set(int(x) for x in sub.decode["running_req"].dropna()))
             for label, sub in units}
    if len({tuple(v) for v in sizes.values()}) > 1:
        notes.append("the runs ran at different batch sizes (#running-req): cycle time and "
                     "throughput depend on it, so the rows are not comparable as they stand")
    if keys:
        missing = [k for k in keys if all(k not in c for c in configs)]
        if missing:
            raise EaglelogError(f"--key {', '.join(missing)}: not in any server_args line")
        chosen = list(keys)
    else:
        known = [c for c in configs if c]
        every = dict.fromkeys(k for c in known for k in c)
        chosen = [k for k in every if k not in NOT_CONFIG and
                  len({repr(c.get(k)) for c in known}) > 1]
        if not chosen:
            notes.append("the runs' server_args do not differ (or are missing): rows are named "
                         "by their log")
    rows = []
    for (label, sub), cfg, part in zip(units, configs, parts):
        eff = stats.from_log_se(1000 * part.rate.estimate, part.rate.se_log, part.rate.df,
                                part.rate.n, confidence, "1000 × accept len / cycle") \
            if part.rate.sufficient else stats.insufficient(1000 * part.rate.estimate,
                                                            part.rate.n, confidence)
        series = run_metrics(sub)
        verify = series.get("phase:Target verify")
        be = breakeven(sub, baseline, confidence=confidence) if baseline else None
        rows.append(SweepRow(label, {k: cfg.get(k) for k in chosen}, part.cycle_ms,
                             verify.estimate(confidence) if verify else None, part.accept_len,
                             eff, be.breakeven_accept_len if be else None,
                             be.speedup if be else None, be.verdict if be else None, ""))
    # rows with an interval first, by effective throughput; 'best' only among them
    rows.sort(key=lambda r: (not r.eff_tok_s.sufficient, -r.eff_tok_s.estimate))
    best = rows[0] if rows[0].eff_tok_s.sufficient else None
    marked = []
    for r in rows:
        mark = "best" if r is best else (
            "tied" if best is not None and _overlap(r.eff_tok_s, best.eff_tok_s) else "")
        marked.append(SweepRow(**{**r.__dict__, "mark": mark}))
    return SweepResult(tuple(chosen), tuple(marked), confidence,
                       baseline.label if baseline else None, tuple(notes))
