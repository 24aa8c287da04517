"""Two runs compared batch size by batch size (``eaglelog compare --by batch``; docs/compare.md):
did a schedule pay, bucket by bucket?  The closing loop of ``eaglelog schedule``: a fixed-K run
against the adaptive run that loaded the emitted config, each #running-req bucket with the K it
ran (analysis/adaptive_slots.py) and the ratio of its per-stream rates.

Model: each run's per-stream rate at a bucket is the rate model's (analysis/rate.py
``by_bucket``: the bucket's own windows in time order, their correlation allowed for) — the
same figure ``breakeven --by batch`` multiplies by the baseline step.  The two runs are
independent: the ratio's interval and Welch's p on the log scale (compare.log_ratio_test), the
buckets one family of tests, their p-values Holm-adjusted for the verdicts.  A bucket only one
run visited is listed, not compared.  The speedup's ratio is the rate's: the baseline step at a
batch size is the same for both runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import EaglelogError
from ..stats import Estimate
from . import adaptive_slots, rate
from .breakeven import run_windows
from .compare import holm, log_ratio_test
from .results import _scaled


@dataclass(frozen=True)
class BucketComparison:
    batch: str
    ref_steps: str | None
    new_steps: str | None
    ref_tok_s: Estimate | None       # per request stream, tokens/s
    new_tok_s: Estimate | None
    ratio: Estimate | None           # new / ref
    p_value: float | None
    p_adjusted: float | None
    verdict: str

    def to_dict(self) -> dict:
        def e(x):
            return x.to_dict() if x is not None else None
        return {"running_req": int(self.batch) if self.batch.isdigit() else self.batch,
                "ref_steps": self.ref_steps, "new_steps": self.new_steps,
                "ref_tok_s": e(self.ref_tok_s), "new_tok_s": e(self.new_tok_s),
                "ratio": e(self.ratio), "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "verdict": self.verdict}


@dataclass(frozen=True)
class BatchComparison:
    reference: str
    run: str
    confidence: float
    buckets: tuple
    notes: tuple = ()

    def to_dict(self) -> dict:
        return {"reference": self.reference, "run": self.run, "confidence": self.confidence,
                "buckets": [b.to_dict() for b in self.buckets], "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for b in self.buckets:
            row = {"reference": self.reference, "run": self.run,
                   "running_req": b.batch, "ref_steps": b.ref_steps, "new_steps": b.new_steps}
            for name, x in (("ref_tok_s", b.ref_tok_s), ("new_tok_s", b.new_tok_s),
                            ("ratio", b.ratio)):
                row.update({name: x.estimate if x else math.nan,
                            f"{name}_ci_low": x.ci_low if x else math.nan,
                            f"{name}_ci_high": x.ci_high if x else math.nan})
            row.update({"p_value": b.p_value, "p_adjusted": b.p_adjusted,
                        "verdict": b.verdict})
            rows.append(row)
        return pd.DataFrame(rows)


def _whole(log, which: str):
    """The one run of an input: the whole run across an adaptive run's configurations."""
    plans = log.unit_plans(whole=True)
    if not plans:
        raise EaglelogError(f"{which}: no decode lines to compare")
    sources = {p[0] for _, p in plans}
    startups = {(p[0], p[1]) for _, p in plans}
    if len(sources) > 1 or len(startups) > 1:
        raise EaglelogError(f"{which}: compare --by batch takes one run an input (this one holds "
                            f"{len(startups)}: pick one with --startup, or one file)")
    label, plan = plans[0]
    return label, log.unit(plan)


def _steps(cfg: dict, plan_, r: np.ndarray) -> str | None:
    if plan_ is not None:
        return plan_.label(r)
    if cfg.get("speculative_adaptive") is True:      # its slots' file unread: unknown
        return None
    k = cfg.get("speculative_num_steps")
    if k is None:
        k = cfg.get("num_speculative_tokens")
    return str(k) if isinstance(k, int) and not isinstance(k, bool) else None


def compare_by_batch(ref_log, new_log, *, confidence: float = 0.95,
                     adaptive_config: str | None = None, engine: str = "auto",
                     base_date=None) -> BatchComparison:
    """``new_log``'s per-stream rate over ``ref_log``'s at every #running-req bucket (each a
    ParsedLog or a path).  ``adaptive_config``: the --speculative-adaptive-config file of
    whichever run is adaptive (the new one when neither says so).

        >>> c = eaglelog.compare_by_batch("fixed3.log", "adaptive.log",
        ...                               adaptive_config="sched.json")
        >>> [(b.batch, b.ref_steps, b.new_steps, b.verdict) for b in c.buckets][:2]
        [('1', '3', '5', 'faster'), ('2', '3', '5', 'faster')]
    """
    from .requests import _load

    if adaptive_config is not None:
        adaptive_slots.load_file(adaptive_config)
    ref_log = _load(ref_log, engine=engine, base_date=base_date)
    new_log = _load(new_log, engine=engine, base_date=base_date)
    sides = []
    for log, which in ((ref_log, "the reference"), (new_log, "the changed run")):
        label, sub = _whole(log, which)
        src = sub.sources[0].name
        cfg, win = run_windows(sub, src)
        if not win.n or not win.spec and not len(win.r):
            raise EaglelogError(f"{label}: no decode windows to compare")
        sides.append((label, cfg, win))
    takes = [i for i, (_, cfg, _) in enumerate(sides) if cfg.get("speculative_adaptive") is True]
    file_for = (takes[0] if takes else 1) if adaptive_config is not None else None
    notes = []
    # one bucketing for both runs: the printed #running-req of either
    codes_all, labels = rate.bucket_of(np.concatenate([w.r for _, _, w in sides]))
    n0 = len(sides[0][2].r)
    per, steps = [], []
    for i, (label, cfg, win) in enumerate(sides):
        plan_ = adaptive_slots.plan(cfg, adaptive_config if i == file_for else None)
        why = adaptive_slots.unread(cfg, adaptive_config if i == file_for else None)
        if why:
            notes.append(f"{label}: {why}")
        if plan_ is not None:
            notes.append(f"{label}: K per bucket from {plan_.origin}")
            notes.extend(f"{label}: {n}" for n in plan_.notes)
        codes = codes_all[:n0] if i == 0 else codes_all[n0:]
        fit = rate.fit(win, confidence, None)
        got = {bk.label: bk for bk in rate.by_bucket(win, fit, confidence,
                                                     buckets=(codes, labels))}
        per.append(got)
        steps.append({lab: _steps(cfg, plan_, win.r[codes == g]) for g, lab in enumerate(labels)})
    rows = []
    for lab in labels:
        a, b = per[0].get(lab), per[1].get(lab)
        ra = _tok_s(a)
        rb = _tok_s(b)
        if ra is None or rb is None:
            rows.append([lab, ra, rb, None, None,
                         "only in the reference" if rb is None and ra is not None else
                         "only in the changed run" if ra is None and rb is not None else
                         "no rate in either run"])
            continue
        ratio, p = log_ratio_test(ra, rb, confidence)
        rows.append([lab, ra, rb, ratio, p if math.isfinite(p) else None, None])
    adj = holm([r[4] for r in rows])
    out = []
    for (lab, ra, rb, ratio, p, fixed), pa in zip(rows, adj):
        if fixed is None:
            if pa is None:
                fixed = "insufficient data"
            elif pa < 1 - confidence:
                fixed = "faster" if ratio.estimate > 1 else "slower"
            else:
                fixed = "no detectable difference"
        out.append(BucketComparison(lab, steps[0].get(lab), steps[1].get(lab), ra, rb, ratio,
                                    p, pa, fixed))
    if not any(b.ratio is not None for b in out):
        raise EaglelogError(f"{sides[0][0]} and {sides[1][0]} share no #running-req bucket: "
                            "nothing to compare batch size by batch size")
    notes.append("per-stream tokens/s at each bucket; ratio = changed / reference; verdicts on "
                 f"Holm-adjusted p over the {sum(b.p_value is not None for b in out)} buckets "
                 f"compared, at {confidence:.0%}")
    return BatchComparison(sides[0][0], sides[1][0], confidence, tuple(out), tuple(notes))


def _tok_s(bk) -> Estimate | None:
    if bk is None:
        return None
    r = bk["rate"]
    if r is None or not math.isfinite(r.estimate) or r.estimate <= 0:
        return None
    return _scaled(r, 1000.0, "tokens/s per request stream")
