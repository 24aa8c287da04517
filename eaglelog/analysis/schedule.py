"""Which num_steps at which batch size: a per-batch-size schedule from measured runs, written as
the engines load it (docs/schedule.md; the engines' rules: eaglelog/engine_schedules.py).

Evidence: runs of the same model and server at different ``speculative_num_steps``, each over
the batch sizes it met, against a baseline per batch size (a baseline log, or
``--baseline-toks 1:90,8:70,…``).  Per #running-req bucket every run gives what `breakeven --by
batch` gives: the per-stream rate and the speedup with their intervals (the rate model,
docs/statistics.md).  In each bucket:

* the **best** K is the one with the highest per-stream rate; the others that Hsu's comparisons
  with the best cannot tell apart from it are **tied** (sweep.tied_with_best);
* the bucket **pays** when the best's speedup interval is above 1, is **inconclusive** when it
  holds 1, and gets **no speculation** (K = 0) when it is below 1.  The schedule runs the best
  K where its speedup estimate is above 1 and K = 0 elsewhere, and says which of its entries
  the data does not settle.

The **crossover** is the batch size at which the best speedup falls through 1, interpolated
linearly in log speedup against log batch size between the buckets around it; its interval is
where the lower and upper interval bounds cross 1 (pointwise bounds, not a joint band),
widened to where they cross under a linear interpolation in batch size too: between two
buckets the curve's shape is not measured.  Nothing
is extrapolated: batch sizes beyond the measured ones get the nearest measured entry, and the
output says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..errors import EaglelogError
from ..stats import Estimate
from .breakeven import breakeven
from .sweep import tied_with_best


@dataclass(frozen=True)
class Candidate:
    steps: int
    run: str
    eff_tok_s: Estimate
    speedup: Estimate
    tied: bool = False               # not distinguishable from the bucket's best

    def to_dict(self) -> dict:
        return {"steps": self.steps, "run": self.run, "eff_tok_s": self.eff_tok_s.to_dict(),
                "speedup": self.speedup.to_dict(), "tied": self.tied}


@dataclass(frozen=True)
class Slot:
    """One #running-req bucket of the schedule."""

    batch: str                       # the bucket's label ('8', '4–7')
    lo: int
    hi: int
    candidates: tuple[Candidate, ...]   # by per-stream rate, best first
    steps: int                       # the schedule's choice (0: no speculation)
    status: str                      # pays | inconclusive | no speculation | insufficient data

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def to_dict(self) -> dict:
        return {"running_req": self.batch, "from": self.lo, "to": self.hi, "steps": self.steps,
                "status": self.status, "candidates": [c.to_dict() for c in self.candidates]}


@dataclass(frozen=True)
class Crossover:
    estimate: float | None           # batch size where the best speedup falls through 1
    low: float | None                # where its lower bound does (the earliest it can be) …
    high: float | None               # … and its upper bound (None: not in the measured range)
    text: str

    def to_dict(self) -> dict:
        return {"running_req": self.estimate, "low": self.low, "high": self.high,
                "text": self.text}


@dataclass(frozen=True)
class ScheduleResult:
    confidence: float
    baseline: str
    runs: tuple[tuple[str, int], ...]     # (run, num_steps)
    slots: tuple[Slot, ...]
    crossover: Crossover
    vllm: dict | None                # the --speculative-config object (None: no K > 0)
    sglang: dict | None              # the --speculative-adaptive-config object
    sglang_num_steps: int | None     # the --speculative-num-steps it needs
    notes: tuple[str, ...] = ()
    sglang_padded: tuple = ()        # (batch, intended K, K SGLang runs) where padding moves it

    def to_dict(self) -> dict:
        return {"command": "schedule", "confidence": self.confidence, "baseline": self.baseline,
                "runs": [{"run": r, "steps": s} for r, s in self.runs],
                "slots": [s.to_dict() for s in self.slots],
                "crossover": self.crossover.to_dict(), "vllm": self.vllm,
                "sglang": self.sglang, "sglang_num_steps": self.sglang_num_steps,
                "sglang_padded": [{"running_req": b, "intended_steps": w, "sglang_runs": g}
                                  for b, w, g in self.sglang_padded],
                "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        """One row per bucket and candidate."""
        rows = []
        for s in self.slots:
            for c in s.candidates:
                rows.append({"running_req": s.batch, "from": s.lo, "to": s.hi,
                             "chosen_steps": s.steps, "status": s.status, "steps": c.steps,
                             "eff_tok_s": c.eff_tok_s.estimate,
                             "eff_tok_s_ci_low": c.eff_tok_s.ci_low,
                             "eff_tok_s_ci_high": c.eff_tok_s.ci_high,
                             "speedup": c.speedup.estimate, "speedup_ci_low": c.speedup.ci_low,
                             "speedup_ci_high": c.speedup.ci_high, "tied": c.tied,
                             "run": c.run})
        return pd.DataFrame(rows)


def _bounds(label: str) -> tuple[int, int]:
    parts = label.replace("–", "-").split("-")
    return int(parts[0]), int(parts[-1])


def _cross(xs: list[float], ys: list[float | None], log_x: bool = True) -> float | None:
    """The first x where y falls through 1 (linear in log y against log x, or against x);
    xs[0] when it starts below; None when it never does."""
    prev = None
    for x, y in zip(xs, ys):
        if y is None or not math.isfinite(y) or y <= 0:
            continue
        if y < 1:
            if prev is None:
                return x
            (x0, y0) = prev
            f = math.log(y0) / (math.log(y0) - math.log(y))
            if not log_x:
                return x0 + f * (x - x0)
            return math.exp(math.log(x0) + f * (math.log(x) - math.log(x0)))
        prev = (x, y)
    return None


def crossover(slots: list[Slot]) -> Crossover:
    live = [s for s in slots if s.best is not None]
    if not live:
        return Crossover(None, None, None, "no bucket with an interval")
    xs = [float(s.lo) for s in live]
    est = _cross(xs, [s.best.speedup.estimate for s in live])
    # the lower bound falls first; between two buckets the curve's shape is not measured, so
    # the bounds hold both interpolations, in log batch size and in batch size
    lows = [_cross(xs, [s.best.speedup.ci_low for s in live], g) for g in (True, False)]
    highs = [_cross(xs, [s.best.speedup.ci_high for s in live], g) for g in (True, False)]
    lo = None if None in lows else min(lows)
    hi = None if None in highs else max(highs)
    top = live[-1].hi
    if est is None:
        text = f"speculation pays at every measured batch size (up to {top})" \
            if lo is None else f"no crossover in the measured range (up to {top})"
        if lo is not None:
            text += f"; the lower bound falls through 1 at running_req ≈ {lo:.3g}"
        return Crossover(None, lo, hi, text)
    if est == xs[0]:
        return Crossover(est, lo, hi, f"speculation does not pay even at running_req {top}"
                         if len(live) == 1 else "the best K is slower than the baseline from "
                         f"the smallest measured batch size ({int(xs[0])})")
    rng = f"{lo:.3g} … {hi:.3g}" if lo is not None and hi is not None else \
        f"{lo:.3g} … beyond {top}" if lo is not None else f"? … {hi:.3g}"
    return Crossover(est, lo, hi, f"speculation stops paying at running_req ≈ {est:.3g} "
                                  f"[{rng}] (log-linear between buckets; pointwise bounds "
                                  "that hold a linear interpolation too)")


def schedule(logs, baseline=None, *, baseline_toks=None, baseline_log=None,
             confidence: float = 0.95, skip_warmup="auto", engine: str = "auto"
             ) -> ScheduleResult:
    """Which num_steps at which batch size: per #running-req bucket the best measured K (or 0),
    the tied ones, the crossover, and the configs vLLM and SGLang load, from runs at different
    num_steps against a baseline per batch size.

        >>> r = eaglelog.schedule(glob.glob("sample_logs/schedule/*.log"),
        ...                       baseline_log="sample_logs/batch_baseline.log")
        >>> [(s.batch, s.steps) for s in r.slots], r.vllm["num_speculative_tokens_per_batch_size"]
    """
    from ..api import load
    from ..baseline import make_baseline
    baseline = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                         required=False)
    log = load(logs, engine=engine)
    warmup = skip_warmup
    if baseline is None:
        raise EaglelogError("schedule needs a baseline per batch size: --baseline-log BASE.log "
                            "or --baseline-toks 1:90,8:70,32:40")
    if baseline.log is None and not baseline.per_batch:
        raise EaglelogError("schedule compares each batch size with the baseline at that batch "
                            "size: one --baseline-toks rate cannot be that; give --baseline-log "
                            "or a rate per batch size (--baseline-toks 1:90,8:70,32:40)")
    runs, notes, method, draft, first_cfg = [], [], None, None, None
    measured_on: set[str] = set()
    by_bucket: dict[tuple[int, int], list[tuple[str, int, object]]] = {}
    labels: dict[tuple[int, int], str] = {}
    for label, sub in log.units():
        src = sub.sources[0].name
        cfg = sub.config(src)
        steps = cfg.get("speculative_num_steps")
        if not cfg.get("speculative_algorithm") or not steps:
            raise EaglelogError(f"{label}: no speculative_algorithm / speculative_num_steps in "
                                "its server_args: give the speculative runs (the baseline goes "
                                "to --baseline-log)")
        steps = _draft_steps(label, steps)
        method = method or str(cfg["speculative_algorithm"]).lower()
        first_cfg = first_cfg or cfg
        vs = sub.tables.get("vllm_spec")
        measured_on.add("vLLM" if vs is not None and len(vs) else "SGLang")
        draft = draft or cfg.get("speculative_draft_model_path")
        r = breakeven(sub, baseline, confidence=confidence, by_batch=True, warmup=warmup)
        runs.append((label, int(steps)))
        for b in r.by_batch or ():
            if b.eff_tok_s is None or b.verdict == "no baseline":
                continue
            key = _bounds(b.batch)
            labels[key] = b.batch
            by_bucket.setdefault(key, []).append((label, int(steps), b))
    if len({s for _, s in runs}) < 2:
        notes.append("every run has the same num_steps: the schedule only chooses between it "
                     "and no speculation")
    if len({s for _, s in runs}) < len(runs):
        notes.append("several runs have the same num_steps: each is a candidate of its own")
    slots = []
    unsure: list[str] = []         # runs that measured a bucket without an interval
    for key in sorted(by_bucket):
        # every run that measured the bucket is a candidate, with an interval or without one
        # (dropping one without an interval chose, in an independent simulation, a K 20–29 %
        # slower than the best measured, marked 'pays', no tie)
        cands = [Candidate(s, run, b.eff_tok_s, b.speedup) for run, s, b in by_bucket[key]
                 if math.isfinite(b.eff_tok_s.estimate) and math.isfinite(b.speedup.estimate)]
        cands.sort(key=lambda c: -c.eff_tok_s.estimate)
        if not cands:
            slots.append(Slot(labels[key], key[0], key[1], (), 0, "insufficient data"))
            continue
        unsure += [f"{c.run} at running_req {labels[key]} ({c.eff_tok_s.n or 0} windows)"
                   for c in cands if not c.eff_tok_s.sufficient]
        best = cands[0]
        if not best.eff_tok_s.sufficient:
            # the highest estimate has no interval: nothing is told apart from it
            ties = [True] * (len(cands) - 1)
        else:
            ties = tied_with_best(best.eff_tok_s, [c.eff_tok_s for c in cands[1:]], confidence)
            # one without an interval cannot be told apart from the best either
            ties = [t or not c.eff_tok_s.sufficient for t, c in zip(ties, cands[1:])]
        cands = [best] + [Candidate(c.steps, c.run, c.eff_tok_s, c.speedup, t)
                          for c, t in zip(cands[1:], ties)]
        sp = best.speedup
        status = "inconclusive" if not sp.sufficient else "pays" if sp.ci_low > 1 else \
            "no speculation" if sp.ci_high < 1 else "inconclusive"
        slots.append(Slot(labels[key], key[0], key[1], tuple(cands),
                          cands[0].steps if sp.estimate > 1 else 0, status))
    if not slots:
        raise EaglelogError("no batch size that both the runs and the baseline cover")
    missing = [s.batch for s in slots if len(s.candidates) < len(runs)]
    if missing:
        notes.append(f"not every run reached running_req {', '.join(missing)}: those buckets "
                     "choose among the runs that did")
    if unsure:
        notes.append("measured without an interval, kept as a candidate and not told apart from "
                     "the best: " + "; ".join(unsure))
    # the tables the engines load: each bucket's choice from its lower bound up to the next
    # bucket's; above the last measured bucket the last entry holds (both engines do that)
    chosen = [s for s in slots if s.status != "insufficient data"]
    ranges = []
    for i, s in enumerate(chosen):
        end = chosen[i + 1].lo - 1 if i + 1 < len(chosen) else s.hi
        start = 1 if i == 0 else s.lo
        if ranges and ranges[-1][2] == s.steps:
            ranges[-1] = (ranges[-1][0], end, s.steps)
        else:
            ranges.append((start, end, s.steps))
    vllm = sglang = None
    num_steps = None
    padded: tuple = ()
    if chosen and max(k for _, _, k in ranges) > 0:
        vllm, sglang, num_steps, padded = engine_configs(
            ranges, max(chosen[-1].hi, chosen[-1].lo), method, draft, first_cfg or {},
            measured_on, notes)
        if any(k == 0 for _, _, k in ranges):
            notes.append("K = 0 (no drafting) in a SGLang slot needs v0.5.14 or later "
                         "(candidate_steps ≥ 0; v0.5.13 takes only positive steps)")
    else:
        notes.append("speculation pays at no measured batch size: run without it")
    if chosen and chosen[0].lo > 1:
        notes.append(f"batch sizes below {chosen[0].lo} were not measured: they take the "
                     "smallest measured bucket's entry")
    if chosen:
        notes.append(f"batch sizes above {chosen[-1].hi} were not measured: both engines keep "
                     f"the last entry (K = {chosen[-1].steps}) there")
    open_ = [s.batch for s in chosen if s.status == "inconclusive" or
             any(c.tied for c in s.candidates)]
    if open_:
        notes.append(f"running_req {', '.join(open_)}: the choice is not settled by the data "
                     "(a tied K, or a speedup interval that holds 1)")
    return ScheduleResult(confidence, baseline.label, tuple(runs), tuple(slots),
                          crossover(slots), vllm, sglang, num_steps, tuple(notes), padded)


def _draft_steps(label: str, steps) -> int:
    """A run's num_steps as a K the engines take (a whole number 1 … MAX_DRAFT), or a one-line
    refusal naming the run (issue 36, item 9: a K of -1 or 2.5 reached the engines' config
    checks, and their EngineConfigError surfaced as an internal error)."""
    from ..parsers.numbers import MAX_DRAFT
    ok = not isinstance(steps, bool) and isinstance(steps, (int, float)) and \
        math.isfinite(steps) and steps == int(steps) and 1 <= steps <= MAX_DRAFT
    if not ok:
        raise EaglelogError(f"{label}: speculative_num_steps {str(steps)[:40]!r} is no number "
                            f"of draft steps (a whole number 1 … {MAX_DRAFT}): no engine "
                            "config has such a K")
    return int(steps)


def engine_configs(ranges: list[tuple[int, int, int]], last: int, method: str,
                   draft: str | None, cfg: dict, measured_on: set[str], notes: list[str]):
    """(vLLM config, SGLang config, its --speculative-num-steps, SGLang's padding moves) of a
    schedule's ``ranges``, each None where the engine has no method for the runs' algorithm or
    would ignore the schedule (notes say why and what each config needs; docs/schedule.md)."""
    from ..engine_schedules import (EngineConfigError, sglang_config, sglang_ignores,
                                    sglang_padding_changes, vllm_config, vllm_ignores,
                                    vllm_method)
    vllm = sglang = num_steps = None
    padded: tuple = ()
    try:
        why = vllm_ignores(cfg)
        if why:
            # vLLM would start, warn once and run its static K: refused, not emitted
            raise EngineConfigError(f"{why} (vllm 0.34.0 config/vllm.py:1031–1048)")
        vllm = vllm_config(ranges, vllm_method(method), draft)
    except EngineConfigError as e:
        notes.append(f"no vLLM config: {e}")
    else:
        # vllm 0.24.0 config/speculative.py:162 adds the field; 0.23.0's @config forbids
        # fields it does not know (config/utils.py: ConfigDict(extra="forbid"))
        notes.append("the vLLM config needs vLLM 0.24.0 or later: "
                     "num_speculative_tokens_per_batch_size first ships there, and 0.23.0 "
                     "rejects a field it does not know at start-up")
        # vllm 0.24.0 config/vllm.py:758–773 _maybe_override_dynamic_sd_cudagraph_mode; no
        # longer in 0.34.0
        notes.append("vLLM 0.24.0 switches full CUDA graphs to PIECEWISE whenever this field "
                     "is set (a warning; 0.34.0 no longer does): the rates measured here with "
                     "full graphs may not hold on such a release — measure the schedule there, "
                     "or run a release without the override")
    slots = [(lo, k) for lo, _, k in ranges]
    why = sglang_ignores(cfg)
    if why:
        # SGLang would start, warn once and run fixed steps: refused, not emitted
        notes.append(f"no SGLang config: SGLang switches adaptive speculation off for this "
                     f"server ({why}; sglang 0.5.23 adaptive_spec_params.py:56–100), with only "
                     "a warning — the schedule would be ignored")
    else:
        try:
            sglang, num_steps = sglang_config(slots), ranges[0][2]
        except EngineConfigError as e:          # refused in one line (-f sglang), not raised
            notes.append(f"no SGLang config: {e}")
    if sglang is not None:
        mb = cfg.get("cuda_graph_max_bs")
        mb = mb if isinstance(mb, int) and not isinstance(mb, bool) and mb > 0 else 256
        padded = tuple(sglang_padding_changes(slots, mb, last))
        if padded:
            notes.append("SGLang pads each batch up to a CUDA-graph size before it picks the "
                         f"slot (cuda_graph_max_bs {mb}; sglang 0.5.23 "
                         "adaptive_spec_params.py:342–358): "
                         + ", ".join(f"running_req {b} runs K = {g}, not {w}"
                                     for b, w, g in padded[:8])
                         + (", …" if len(padded) > 8 else ""))
    for eng, emitted in (("vLLM", vllm), ("SGLang", sglang)):
        if emitted is not None and eng not in measured_on:
            notes.append(f"the runs were measured on {' and '.join(sorted(measured_on))}, not "
                         f"{eng}: its {eng} config carries costs and acceptance that {eng} did "
                         "not measure (another engine's kernels, scheduler and graphs) — "
                         "measure before you trust it there")
    return vllm, sglang, num_steps, padded
