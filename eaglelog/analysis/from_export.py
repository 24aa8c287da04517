"""What an eaglelog export (``eaglelog export LOG -o run.json``) can still answer without its log
(issue 36 item 11): ``breakeven`` and ``sweep`` take exports as they take logs, ``summary`` and
``compare`` did already; every other command needs the log's lines and says so in one line
(``refuse``).

An export keeps one run's estimates — cycle, accept length, per-stream rate, each with its
standard error on the log scale and degrees of freedom — and its batch-size mix (request-step
weight per mean batch size).  Against a baseline the speedup is the rate × the baseline step at
that mix (compare.speedup_of_export) and the break-even accept length the cycle ÷ the same step;
the baseline's uncertainty adds on the log scale.  What the log would add and the export cannot:
the per-batch table, the warm-up and prefill corrections of today's rules (an export keeps the
rules of the day it was made), the profiler's phases beyond what was exported.
"""
from __future__ import annotations

import math

import numpy as np

from .. import stats
from ..errors import EaglelogError
from ..stats import Estimate
from .results import _scaled

def mix_step(run, base) -> tuple[float, float, float] | None:
    """(the baseline step at the run's batch mix, its se on the log scale, df), or None when
    the export carries no mix or the baseline covers none of it."""
    if not run.mix:
        return None
    b = np.array([x for x, _ in run.mix], dtype=float)
    w = np.array([y for _, y in run.mix], dtype=float)
    st = np.asarray(base.step_of(b), dtype=float)
    ok = np.isfinite(st) & (w > 0)
    if not ok.any():
        return None
    se, df = base.uncertainty(b[ok], w[ok])
    return float((w[ok] * st[ok]).sum() / w[ok].sum()), se, df


def over(e: Estimate, step: float, se_b: float, df_b: float, power: int, confidence: float,
          source: str) -> Estimate:
    """e × step^power with the step's uncertainty added on the log scale."""
    v = e.estimate * step ** power
    if not e.sufficient or e.se_log is None:
        return stats.insufficient(v, e.n, confidence, source)
    se = math.hypot(e.se_log, se_b)
    df = e.df if not se_b else min(e.df, df_b) if df_b and math.isfinite(df_b) else e.df
    return stats.from_log_se(v, se, df, e.n, confidence, source)


def breakeven(run, baseline, confidence: float = 0.95):
    """A BreakevenResult of an exported run against ``baseline``."""
    from .breakeven import BreakevenResult, NO_VERDICT, baseline_side, verdict_of

    notes = [f"from an eaglelog export ({run.cycle_kind or 'cycle'} as exported): the "
             "per-batch table, today's warm-up and prefill rules and the phases need the log"]
    base = baseline_side(baseline, confidence, notes)
    m = run.metrics
    cyc, acc, eff = (m.get(k) for k in ("cycle_ms", "accept_len", "eff_tok_s"))
    if cyc is None or acc is None or eff is None:
        missing = [k for k, v in (("cycle_ms", cyc), ("accept_len", acc), ("eff_tok_s", eff))
                   if v is None]
        raise EaglelogError(f"{run.label}: the export holds no {', '.join(missing)}: no "
                            "break-even without them")
    at = mix_step(run, base)
    nothing = stats.insufficient(math.nan, 0, confidence)
    if at is None:
        why = ("the export carries no batch-size mix (made before eaglelog 2)" if not run.mix
               else "the baseline covers none of the run's batch sizes")
        return BreakevenResult(run.label, baseline.label, confidence, cyc.estimate, nothing,
                               nothing, acc.estimate, nothing, "invalid baseline",
                               tuple(notes), verdict_reason=why)
    step, se_b, df_b = at
    step_e = stats.from_log_se(step, se_b, df_b, None, confidence, base.source) if se_b > 0 \
        else stats.constant(step, None, confidence, base.source)
    be = over(cyc.estimate, step, se_b, df_b, -1, confidence, "cycle / baseline step")
    rate = eff.estimate
    sp = over(_scaled(rate, 1e-3), step, se_b, df_b, 1, confidence,
               "export: per-stream rate × baseline step")
    verdict = verdict_of(sp) if sp.sufficient else "insufficient data"
    return BreakevenResult(run.label, baseline.label, confidence, cyc.estimate, step_e, be,
                           acc.estimate, sp, verdict, tuple(notes),
                           rate=_scaled(rate, 1e-3),
                           cycle_kind=run.cycle_kind or "corrected",
                           verdict_reason=None if verdict not in NO_VERDICT else
                           "the export's rate has no interval")
