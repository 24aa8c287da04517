"""Which config of a sweep wins: one row per run, sorted by effective throughput.

effective tok/s = 1000 × accept_len / cycle_ms, the decode rate one request stream gets (the rate
model's per-stream rate, the same numbers breakeven prints; docs/statistics.md).  The best row is
the one with the highest estimate; a row is ``tied`` when it cannot be told apart from the best:
Hsu's multiple comparisons with the best, as one-sided Welch tests on log(best / row) (the claim
"this row is slower than the best" is one-sided), Holm-adjusted across the rows.  With
probability ≥ 95 % the truly best row is then marked best or tied.  A row without an interval
(too little data) is marked ``no interval``: it can be neither tied nor told apart.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..api import ParsedLog
from ..errors import EaglelogError
from ..stats import Estimate
from . import from_export
from .breakeven import Baseline, breakeven
from .compare import NOT_CONFIG, holm, log_ratio_test, run_of

TIED_MEANS = ("tied: not distinguishable from the best at {conf} (one-sided Welch's t on the "
              "log ratio, Holm-adjusted across the rows: Hsu's comparisons with the best)")


@dataclass(frozen=True)
class SweepRow:
    run: str
    keys: dict
    cycle_ms: Estimate | None       # None: a run without speculation (a llama-server baseline)
    verify_ms: Estimate | None
    accept_len: Estimate | None
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
        return {"command": "sweep", "keys": list(self.keys), "confidence": self.confidence,
                "baseline": self.baseline, "rows": [r.to_dict() for r in self.rows],
                "notes": list(self.notes)}

    def to_frame(self):
        """One row per run: its config keys, each estimate with its interval, verdict, mark
        (the columns of ``eaglelog sweep -f csv``)."""
        import pandas as pd
        flat = []
        for r in self.rows:
            row = {"run": r.run, **r.keys}
            for k in ("cycle_ms", "verify_ms", "accept_len", "eff_tok_s",
                      "breakeven_accept_len", "speedup"):
                e = getattr(r, k)
                row.update({k: e.estimate if e else None, f"{k}_ci_low": e.ci_low if e else None,
                            f"{k}_ci_high": e.ci_high if e else None})
            row.update({"verdict": r.verdict, "mark": r.mark})
            flat.append(row)
        return pd.DataFrame(flat)


def tied_with_best(best: Estimate, others: list[Estimate], confidence: float) -> list[bool]:
    """Which of ``others`` cannot be told apart from ``best`` (the highest estimate): Hsu's
    multiple comparisons with the best — a one-sided Welch's t on the log ratio of each to the
    best, Holm-adjusted across them; not significantly slower at 1 − confidence is tied.  An
    estimate without an interval is never tied."""
    ps = []
    for e in others:
        ratio, p = log_ratio_test(best, e, confidence)
        # one-sided: the row is slower than the best (the best is the highest estimate, so the
        # ratio row / best is at most 1)
        ok = e.sufficient and math.isfinite(p)
        ps.append(p / 2 if ok and ratio.estimate <= 1 else (1 - p / 2) if ok else None)
    return [p is not None and p >= 1 - confidence for p in holm(ps)]


def sweep(log: ParsedLog | None, *, keys: list[str] | None = None,
          baseline: Baseline | None = None, confidence: float = 0.95, keep_going: bool = False,
          warmup="auto", exports: tuple = ()) -> SweepResult:
    """``exports``: runs from eaglelog exports (compare.load_export) beside the log's runs —
    last week's sweep point as one row (analysis/from_export.py)."""
    notes: list[str] = []
    units, runs = [], []
    for run in exports:
        if "eff_tok_s" not in run.metrics:
            raise EaglelogError(f"{run.label}: the export holds no per-stream rate")
        runs.append(run)
        units.append((run.label, None))
    for label, sub in (log.units() if log is not None else ()):
        try:
            run = run_of(sub, label, "auto", None, confidence, warmup)
            if "eff_tok_s" not in run.metrics:
                raise EaglelogError(f"{label}: no per-stream rate (no accept length or no cycle "
                                    "time in the log)")
            runs.append(run)
            units.append((label, sub))
        except EaglelogError as e:
            if not keep_going:
                raise
            notes.append(f"left out: {e}")
    if len(units) < 2:
        raise EaglelogError("sweep needs at least two runs (logs, or server start-ups in a log)")
    configs = [r.config for r in runs]
    no_args = [label for (label, _), c in zip(units, configs) if not c]
    if no_args:
        notes.append(f"no server_args line in {', '.join(no_args)}: its config keys are unknown")
    sizes = {label: sorted(set(int(x) for x in sub.decode["running_req"].dropna()))
             if sub is not None else sorted(set(run.batch_sizes))
             for (label, sub), run in zip(units, runs)}
    if len({tuple(v) for v in sizes.values()}) > 1:
        notes.append("the runs ran at different batch sizes (#running-req): the per-stream rate "
                     "weighs each run's own mix, so rows differ by their mix too")
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
    for (label, sub), run in zip(units, runs):
        m = run.metrics
        be = None if not baseline else breakeven(sub, baseline, confidence=confidence,
                                                  warmup=warmup) if sub is not None \
            else from_export.breakeven(run, baseline, confidence)
        verify = m.get("phase:Target verify")
        cyc, acc = m.get("cycle_ms"), m.get("accept_len")
        if cyc is None or acc is None:
            notes.append(f"{label}: no speculation (no accept length or cycle time): its row "
                         "has the per-stream rate alone")
        rows.append(SweepRow(label, {k: run.config.get(k) for k in chosen},
                             cyc.estimate if cyc else None,
                             verify.estimate if verify else None,
                             acc.estimate if acc else None,
                             m["eff_tok_s"].estimate,
                             be.breakeven_accept_len if be else None,
                             be.speedup if be else None, be.verdict if be else None, ""))
    # rows with an interval first, by effective throughput; 'best' only among them
    rows.sort(key=lambda r: (not r.eff_tok_s.sufficient, -r.eff_tok_s.estimate))
    best = rows[0] if rows[0].eff_tok_s.sufficient else None
    marks = ["" if r.eff_tok_s.sufficient else "no interval" for r in rows]
    if best is not None:
        marks[0] = "best"
        for i, tied in enumerate(tied_with_best(best.eff_tok_s, [r.eff_tok_s for r in rows[1:]],
                                                confidence), 1):
            if tied:
                marks[i] = "tied"
    marked = [SweepRow(**{**r.__dict__, "mark": mk}) for r, mk in zip(rows, marks)]
    return SweepResult(tuple(chosen), tuple(marked), confidence,
                       baseline.label if baseline else None, tuple(notes))
