"""Which run is faster, by how much, and is it real (pyperf's compare_to, for window means).

The first run is the reference.  For every metric both runs carry, each run's estimate is the
weighted mean of its windows with a batch-means jackknife standard error on the log scale
(docs/statistics.md).  The ratio changed/reference gets a delta-method interval; the default test
is **Welch's t-test on the log scale**: t = log(ratio) / se, with Welch–Satterthwaite degrees of
freedom (unequal variances, batch means as the independent units).  ``test="mannwhitney"`` uses
the Mann-Whitney U test on the two runs' batch means instead.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special as _sp

from .. import stats
from ..api import ParsedLog
from ..errors import EaglelogError
from ..stats import Estimate
from .breakeven import Baseline, breakeven
from .metrics import Series, run_metrics
from .windows import derived_ms, rows_where

EXPORT_KEY = "eaglelog_export"
NOT_CONFIG = {"port", "host", "nccl_port", "random_seed", "dist_init_addr", "metrics_port"}


@dataclass
class Run:
    """One run to compare: its metric series plus what tells whether runs are comparable."""

    label: str
    engine: str
    config: dict
    series: dict[str, Series]
    batch_sizes: list[float] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    extra: dict[str, Estimate] = field(default_factory=dict)   # breakeven, speedup

    def to_export(self) -> dict:
        return {EXPORT_KEY: 1, "source": self.label, "engine": self.engine,
                "config": self.config, "batch_sizes": self.batch_sizes, "modes": self.modes,
                "metrics": {k: s.to_dict() for k, s in self.series.items()}}

    @classmethod
    def from_export(cls, d: dict, label: str) -> "Run":
        return cls(d.get("source") or label, d.get("engine", "sglang"), d.get("config") or {},
                   {k: Series.from_dict(k, v) for k, v in d["metrics"].items()},
                   d.get("batch_sizes") or [], d.get("modes") or [])


def runs_from_log(log: ParsedLog, engine: str, baseline: Baseline | None,
                  confidence: float) -> list[Run]:
    out = []
    for label, sub in log.units():
        src = sub.sources[0].name
        su = sub.decode["startup"].dropna()
        cfg = sub.config(src, int(su.iloc[0]) if len(su) else None)
        eng = sub.sources[0].engine or (engine if engine != "auto" else "sglang")
        run = Run(label, eng, cfg, run_metrics(sub),
                  sorted(float(x) for x in sub.decode["running_req"].dropna().unique()),
                  sorted(str(m) for m in sub.prof["mode"].dropna().unique()))
        if baseline is not None and ("accept_len" in run.series):
            run.extra = _shared_baseline(breakeven(sub, baseline, confidence=confidence),
                                         confidence)
        out.append(run)
    return out


def _shared_baseline(r, confidence: float) -> dict:
    """Break-even and speedup of one run with the baseline step taken as exact: every compared
    run divides by the same baseline, so its own uncertainty cancels in their ratio."""
    step = r.baseline_step_ms.estimate
    cyc, rate = r.cycle_ms, r.rate

    def scaled(e: Estimate, factor: float) -> Estimate:
        if not e.sufficient:
            return stats.insufficient(e.estimate * factor, e.n, confidence)
        return stats.from_log_se(e.estimate * factor, e.se_log, e.df, e.n, confidence)
    return {"breakeven_accept_len": scaled(cyc, 1 / step), "speedup": scaled(rate, step)}


def extra_from_series(run: Run, baseline: Baseline, confidence: float) -> dict:
    """Break-even and speedup of an exported run (its metric windows) against a baseline rate;
    the baseline step counts as exact, as in _shared_baseline."""
    cyc_s = run.series.get("cycle_ms") or run.series.get("cycle_ms_derived")
    acc_s = run.series.get("accept_len")
    if cyc_s is None or acc_s is None:
        return {}
    if baseline.log is not None:
        from .breakeven import baseline_steps
        _, base_w = baseline_steps(baseline, confidence, [])
        clean = derived_ms(rows_where(base_w, base_w["clean"]))
        step = float(np.nanmean(clean)) if np.isfinite(clean).any() else math.nan
    else:
        step = 1000.0 / baseline.tok_s
    cyc, acc = cyc_s.estimate(confidence), acc_s.estimate(confidence)
    if not (cyc.sufficient and acc.sufficient):
        return {}
    rate = stats.combine(acc.estimate / cyc.estimate, [(acc, 1), (cyc, -1)], confidence)
    return {"breakeven_accept_len": stats.from_log_se(cyc.estimate / step, cyc.se_log, cyc.df,
                                                      cyc.n, confidence),
            "speedup": stats.from_log_se(rate.estimate * step, rate.se_log, rate.df, rate.n,
                                         confidence)}


def load_export(path: str) -> Run | None:
    """An eaglelog export (``eaglelog export``), or None when the file is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
            if not head.startswith(b"{"):
                return None
            f.seek(0)
            d = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or EXPORT_KEY not in d:
        return None
    if d[EXPORT_KEY] != 1:
        raise EaglelogError(f"{path}: export format {d[EXPORT_KEY]!r} is newer than this eaglelog")
    try:
        run = Run.from_export(d, path)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise EaglelogError(f"{path}: not a valid eaglelog export (bad or missing {e}); make "
                            "one with `eaglelog export LOG -o FILE.json`") from None
    run.label = f"{path} (export of {run.label})"
    return run


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    label: str
    unit: str
    better: str
    run: str
    reference_mean: float
    reference_sd: float | None
    mean: float
    sd: float | None
    ratio: Estimate
    p_value: float | None
    test: str
    significant: bool
    practical: bool
    verdict: str
    n_reference: int | None
    n: int | None

    @property
    def worse(self) -> bool:
        if not (self.significant and self.practical):
            return False
        return self.ratio.estimate > 1 if self.better == "lower" else self.ratio.estimate < 1

    def to_dict(self) -> dict:
        def f(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
        return {"metric": self.metric, "label": self.label, "unit": self.unit,
                "better": self.better, "run": self.run, "reference_mean": f(self.reference_mean),
                "reference_sd": f(self.reference_sd), "mean": f(self.mean), "sd": f(self.sd),
                "ratio": f(self.ratio.estimate), "ratio_ci_low": f(self.ratio.ci_low),
                "ratio_ci_high": f(self.ratio.ci_high), "test": self.test,
                "p_value": f(self.p_value), "significant": self.significant,
                "practical": self.practical, "worse": self.worse, "verdict": self.verdict,
                "n_reference": self.n_reference, "n": self.n}


@dataclass(frozen=True)
class CompareResult:
    reference: str
    runs: tuple[str, ...]
    confidence: float
    test: str
    min_effect: float
    metrics: tuple[MetricComparison, ...]
    config_diff: dict
    warnings: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"reference": self.reference, "runs": list(self.runs),
                "confidence": self.confidence, "test": self.test,
                "min_effect": self.min_effect, "metrics": [m.to_dict() for m in self.metrics],
                "config_diff": self.config_diff, "warnings": list(self.warnings),
                "notes": list(self.notes)}


def _words(label: str, better: str, unit: str, r: float) -> str:
    if unit == "ms":   # times: faster / slower
        return f"{1 / r:.2f}x faster" if r < 1 else f"{r:.2f}x slower"
    return f"{label} {r:.2f}x higher" if r > 1 else f"{label} {1 / r:.2f}x lower"


def compare_estimates(ref: Estimate, new: Estimate, confidence: float) -> tuple[Estimate, float]:
    """Ratio new/ref with its interval, and the Welch p-value on the log scale."""
    if ref.estimate == 0 or new.estimate == 0:
        if ref.estimate == new.estimate and ref.sufficient and new.sufficient:
            return Estimate(1.0, 1.0, 1.0, min(ref.n or 0, new.n or 0), confidence, 0.0,
                            math.inf, "both zero"), 1.0
        return stats.insufficient(math.nan, 0, confidence, "a mean is zero: no ratio"), math.nan
    ratio = stats.combine(new.estimate / ref.estimate, [(new, 1), (ref, -1)], confidence,
                          "changed / reference")
    if not ratio.sufficient:
        return ratio, math.nan
    lr = math.log(ratio.estimate)
    if ratio.se_log == 0:
        return ratio, (1.0 if lr == 0 else 0.0)
    t = lr / ratio.se_log
    p = 2 * (_sp.stdtr(ratio.df, -abs(t)) if math.isfinite(ratio.df) else _sp.ndtr(-abs(t)))
    return ratio, float(p)


def compare_metric(name: str, ref: Run, run: Run, confidence: float, test: str,
                   min_effect: float) -> MetricComparison:
    alpha = 1 - confidence
    if name in ref.series:
        a, b = ref.series[name], run.series[name]
        ea, eb = a.estimate(confidence), b.estimate(confidence)
        label, unit, better, sda, sdb = a.label, a.unit, a.better, a.sd, b.sd
    else:
        ea, eb = ref.extra[name], run.extra[name]
        label = {"breakeven_accept_len": "break-even accept length", "speedup": "speedup"}[name]
        unit, better = ("tokens/cycle", "lower") if name == "breakeven_accept_len" else \
            ("×", "higher")
        sda = sdb = None
        a = b = None
    ratio, p = compare_estimates(ea, eb, confidence)
    used = "welch"
    if test == "mannwhitney" and a is not None and ratio.sufficient:
        # 12 significant digits: float noise in a batch mean is no difference
        ba = np.array([float(f"{x:.12g}") for x in a.batch_means()])
        bb = np.array([float(f"{x:.12g}") for x in b.batch_means()])
        from scipy.stats import mannwhitneyu
        p = float(mannwhitneyu(ba, bb, alternative="two-sided").pvalue) \
            if not np.array_equal(np.sort(ba), np.sort(bb)) else 1.0
        used = "mannwhitney"
    if not ratio.sufficient:
        verdict, sig, prac, p = "insufficient data", False, False, None
    else:
        sig = bool(p < alpha)
        prac = abs(math.log(ratio.estimate)) >= math.log1p(min_effect)
        if not sig:
            verdict = "not significant"
        elif not prac:
            verdict = f"not significant in practice (below --min-effect {min_effect:.1%})"
        else:
            verdict = _words(label, better, unit, ratio.estimate)
    return MetricComparison(name, label, unit, better, run.label, ea.estimate, sda,
                            eb.estimate, sdb, ratio, p, used, sig, prac, verdict, ea.n, eb.n)


def _config_diff(ref: Run, run: Run) -> dict:
    keys = sorted(set(ref.config) | set(run.config))
    return {k: [ref.config.get(k), run.config.get(k)] for k in keys
            if k not in NOT_CONFIG and repr(ref.config.get(k)) != repr(run.config.get(k))}


def _warnings(ref: Run, run: Run) -> list[str]:
    out = []
    if run.engine != ref.engine:
        out.append(f"{run.label}: runs of different engines ({run.engine} vs {ref.engine}): "
                   "the metrics mean the same (accept length with the bonus token, emitted "
                   "tokens per second) but windows differ (SGLang: decode_log_interval "
                   "iterations; vLLM: seconds) and so do the schedulers")
    ma, mb = ref.config.get("model_path"), run.config.get("model_path")
    if ma and mb and ma != mb:
        out.append(f"{run.label}: different model ({mb} vs {ma}): the runs are not comparable")
    if ref.batch_sizes and run.batch_sizes:
        if set(ref.batch_sizes) != set(run.batch_sizes):
            out.append(f"{run.label}: different batch sizes (#running-req "
                       f"{_sizes(run.batch_sizes)} vs {_sizes(ref.batch_sizes)}): cycle and step "
                       "time grow with the batch")
        elif len(run.batch_sizes) > 1:
            out.append(f"{run.label}: both runs span batch sizes {_sizes(run.batch_sizes)}: "
                       "throughput and cycle time pool them by time; compare one batch size "
                       "at a time (eaglelog breakeven --by batch) before concluding")
    if ref.modes and run.modes and ref.modes != run.modes:
        out.append(f"{run.label}: EAGLE3_PROF modes differ ({', '.join(run.modes)} vs "
                   f"{', '.join(ref.modes)}): sync-mode cycle times are distorted")
    return out


def _sizes(v: list[float]) -> str:
    v = sorted(int(x) for x in v)
    return str(v[0]) if len(v) == 1 else f"{v[0]}–{v[-1]}"


def compare(runs: list[Run], *, confidence: float = 0.95, test: str = "welch",
            min_effect: float = 0.0, baseline: Baseline | None = None) -> CompareResult:
    if len(runs) < 2:
        raise EaglelogError("compare needs at least two runs (a reference and a changed run)")
    ref = runs[0]
    notes = []
    if baseline is not None:
        for r in runs:
            if not r.extra:
                r.extra = extra_from_series(r, baseline, confidence)
                if r.extra:
                    notes.append(f"{r.label}: break-even and speedup from its exported windows "
                                 "(cycle and accept length taken as independent)")
    metrics, diff, warns = [], {}, []
    for run in runs[1:]:
        common = [k for k in ref.series if k in run.series] + \
                 [k for k in ref.extra if k in run.extra]
        if not common:
            raise EaglelogError(f"{run.label} and {ref.label} have no metric in common (one has "
                                f"{', '.join(run.series) or 'none'}, the other "
                                f"{', '.join(ref.series) or 'none'})")
        metrics += [compare_metric(k, ref, run, confidence, test, min_effect) for k in common]
        diff[run.label] = _config_diff(ref, run)
        warns += _warnings(ref, run)
    if baseline is not None and any(m.metric in ("speedup", "breakeven_accept_len")
                                    for m in metrics):
        notes.append("the baseline is common to every run: its own uncertainty cancels in the "
                     "break-even and speedup ratios")
    return CompareResult(ref.label, tuple(r.label for r in runs[1:]), confidence, test,
                         min_effect, tuple(metrics), diff, tuple(warns), tuple(notes))
