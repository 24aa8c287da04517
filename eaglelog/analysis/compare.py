"""Did the change help?  Runs against a reference, as one family of tests (docs/statistics.md).

The first run is the reference.  Every run is summarised by the same estimates ``breakeven`` and
``summary`` print (the rate model of analysis/rate.py and the EAGLE3_PROF blocks): each metric is
an estimate with a standard error on the log scale and its degrees of freedom.  Two runs are
compared metric by metric with **Welch's t-test on the log ratio** (t = log(new/ref) / √(se² +
se²), Welch–Satterthwaite degrees of freedom); ``test='mannwhitney'`` uses the Mann-Whitney U test
on the runs' batch estimates instead.

* **One primary metric** carries the headline verdict in words (better / worse / no detectable
  difference) and is what ``--fail-on-regression`` gates by default: the speedup when a baseline
  is given, otherwise the per-stream rate (effective tok/s, 1000 × accept length / cycle).
* **Secondary metrics** (accept length, the cycle the rate uses, the profiler's accept length and
  phases) are a family: their p-values are Holm-adjusted within each compared pair and shown next
  to the raw ones; near-duplicates (break-even = cycle / a constant, a second cycle estimate) are
  not in it.
* **Resolution**: a series constant at its printed precision has the rounding error (half a unit
  of the last digit ÷ √3) as its standard error, and a difference of at most one printed unit is
  "not resolvable at the printed precision", never significant.
* **One window rule**: every metric comes from the windows breakeven uses; two runs whose cycle
  comes from different kinds of windows (profiler vs decode lines, an upper bound vs an unbiased
  estimate) are said to be not comparable on the metrics that hold it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from .. import distributions as dist
from .. import stats
from ..api import ParsedLog
from ..errors import EaglelogError
from ..stats import Estimate
from .breakeven import Baseline, BaseSide, baseline_side, breakeven, free_fit, run_windows
from .results import (EXPORT_KEY, EXPORT_VERSION, Metric, Run, _f, _scaled,  # noqa: F401
                      _finite_float, _modes_of, _no_constant, _NonFinite, _sizes_of)

NOT_CONFIG = {"port", "host", "nccl_port", "random_seed", "dist_init_addr", "metrics_port"}
PRIMARY = ("speedup", "eff_tok_s")


def _mean_metric(name, label, unit, better, values, weights, confidence, source, kind,
                 printed=True) -> Metric:
    res = stats.half_unit(values) if printed else 0.0
    e, logs = stats.weighted_mean_batches(values, weights, confidence, source, resolution=res,
                                          floor=stats.BLOCK_PHI if kind == "profiler"
                                          else stats.SHORT_PHI)
    v = np.asarray(values, dtype=float)
    const = bool(len(v) and np.nanmax(v) == np.nanmin(v))
    return Metric(name, label, unit, better, e, kind, res, const, logs)


def run_of(sub: ParsedLog, label: str, engine: str, baseline: Baseline | None,
           confidence: float, warmup="auto") -> Run:
    """The metrics of one run (a ParsedLog of one input or start-up)."""
    src = sub.sources[0].name
    from . import llamacpp         # a llama-server log: its requests (analysis/llamacpp.py)
    if llamacpp.handles(sub, src):
        return llamacpp.run_of(sub, label, engine, baseline, confidence)
    su = sub.decode["startup"].dropna()
    cfg = sub.config(src, int(su.iloc[0]) if len(su) else None)
    eng = sub.sources[0].engine or (engine if engine != "auto" else "sglang")
    _, win = run_windows(sub, src)
    metrics: dict[str, Metric] = {}
    kind = ""
    mix: list[tuple[float, float]] = []
    by_source: dict[str, dict[str, Metric]] = {}
    if win.n and (win.spec or len(sub.prof)):
        fit = free_fit(sub, src, confidence, warmup)
        acc = fit["accept_len"]
        cyc_metrics, kind = _cycle_metrics(sub, src, win, fit, baseline, confidence, warmup,
                                           "auto")
        metrics.update({k: v for k, v in cyc_metrics.items() if k != "cycle_ms"})
        by_source[family(kind)] = cyc_metrics
        # the other source of the cycle, when the run has it: two runs whose own choices
        # differ are compared on the one both carry
        other = "decode" if kind == "profiler" else "prof" if len(sub.prof) else None
        if other is not None:
            try:
                alt, alt_kind = _cycle_metrics(sub, src, win, fit, baseline, confidence,
                                               warmup, other)
            except EaglelogError:
                alt, alt_kind = {}, ""
            if alt and family(alt_kind) not in by_source:
                by_source[family(alt_kind)] = alt
        if win.spec:
            metrics["accept_len"] = Metric("accept_len", "accept length", "tokens/verify",
                                           "higher", acc, "decode lines",
                                           batch_logs=fit.batch_logs.get("accept_len", ()))
        if "cycle_ms" in cyc_metrics:
            metrics["cycle_ms"] = cyc_metrics["cycle_ms"]
        # the run's batch mix: request-step weight per mean batch size (to 0.5)
        ok = np.isfinite(win.b) & (win.b > 0)
        if ok.any():
            bins = np.round(win.b[ok] * 2) / 2
            u, inv = np.unique(bins, return_inverse=True)
            wsum = np.bincount(inv, weights=win.w[ok])
            mix = [(float(b), float(w)) for b, w in zip(u, wsum / wsum.sum())]
    p = sub.prof
    if len(p):
        use = p[p["complete"].fillna(False).astype(bool) &
                ~p["mode"].astype("string").eq("sync").fillna(False)].sort_values("line_no")
        if len(use):
            w = use["cycles"].to_numpy(float)
            ph = sub.prof_phases[sub.prof_phases["block"].isin(use["line_no"])]
            wmap = dict(zip(use["line_no"].to_numpy(), w))
            for lab in dict.fromkeys(ph["phase"].astype(str)):
                rows = ph[ph["phase"].astype(str) == lab].sort_values("block")
                key = "phase:" + lab
                metrics[key] = _mean_metric(key, lab, "ms", "lower",
                                            rows["ms_per_cycle"].to_numpy(float),
                                            np.array([wmap[b] for b in rows["block"]]),
                                            confidence, "EAGLE3_PROF phase line, cycle-weighted",
                                            "profiler")
            metrics["accept_len_profiler"] = _mean_metric(
                "accept_len_profiler", "profiler accept length", "tokens/cycle", "higher",
                use["accept_len"].to_numpy(float), w, confidence,
                "EAGLE3_PROF Accept len, cycle-weighted", "profiler")
            if "cycle_ms" not in metrics:
                metrics["cycle_ms"] = _mean_metric(
                    "cycle_ms", "cycle time", "ms", "lower", use["total_ms"].to_numpy(float), w,
                    confidence, "EAGLE3_PROF TOTAL, no-sync blocks, cycle-weighted", "profiler")
                kind = kind or "profiler"
    return Run(label, eng, cfg, metrics,
               sorted(float(x) for x in sub.decode["running_req"].dropna().unique()),
               sorted(str(m) for m in sub.prof["mode"].dropna().unique()), mix, kind,
               by_source)


CYCLE_METRICS = ("speedup", "eff_tok_s", "cycle_ms")


def family(kind: str) -> str:
    """The comparability family of a cycle's kind: 'decode' (clean or corrected: unbiased
    estimates from the decode lines), 'profiler', 'upper bound', or the kind itself."""
    return "decode" if kind in ("clean", "corrected") else kind


def _cycle_metrics(sub: ParsedLog, src: str, win, fit, baseline: Baseline | None,
                   confidence: float, warmup, cycle_from: str) -> tuple[dict[str, Metric], str]:
    """The metrics that hold the cycle (speedup with a baseline, per-stream rate, cycle) with
    the cycle from ``cycle_from`` ('auto', 'prof' or 'decode', as breakeven takes it), and
    its kind."""
    out: dict[str, Metric] = {}
    logs = fit.batch_logs
    acc = fit["accept_len"]
    if baseline is not None:
        be = breakeven(sub, baseline, source=src, confidence=confidence, warmup=warmup,
                       cycle_from=cycle_from)
        cyc, acc, r, kind = be.cycle_ms, be.accept_len, be.rate, be.cycle_kind
        # the baseline is common to the compared runs: the speedup ratio carries the runs'
        # own uncertainty only (the rate's)
        sp = be.speedup
        if r is not None and r.sufficient and sp.sufficient:
            sp = stats.from_log_se(sp.estimate, r.se_log, r.df, r.n, confidence, sp.source)
        out["speedup"] = Metric("speedup", "speedup", "×", "higher", sp, kind,
                                batch_logs=logs.get("speedup", ()) if kind != "profiler"
                                else ())
    else:
        # the cycle breakeven would take (breakeven.choose_cycle: one rule)
        from .breakeven import choose_cycle, prof_cycle
        prof = prof_cycle(sub, src, confidence, []) if cycle_from != "decode" else None
        if cycle_from == "prof" and prof is None:
            return {}, ""
        if cycle_from == "decode" and not (win.spec and math.isfinite(fit["cycle_ms"].estimate)):
            return {}, ""
        cyc, kind, r = choose_cycle(prof, fit, win, acc, cycle_from, confidence, [],
                                    no_accept=not win.spec)
    if win.spec and r is not None and math.isfinite(r.estimate):
        eff = Estimate(1000 * r.estimate, None if r.ci_low is None else 1000 * r.ci_low,
                       None if r.ci_high is None else 1000 * r.ci_high, r.n, r.confidence,
                       r.se_log, r.df, "1000 × accept length / cycle")
        out["eff_tok_s"] = Metric("eff_tok_s", "per-stream rate", "tok/s", "higher", eff, kind,
                                  batch_logs=logs.get("rate", ()) if kind != "profiler"
                                  else ())
    if math.isfinite(cyc.estimate):
        res, const = 0.0, False
        if kind == "profiler":
            # the blocks' TOTAL as printed: a difference within its last digit is not
            # resolvable (compare_metric), as for the phases
            p = sub.prof[(sub.prof["source"] == src).to_numpy(dtype=bool)]
            p = p[p["complete"].fillna(False).astype(bool).to_numpy() &
                  ~(p["mode"] == "sync").fillna(False).to_numpy(dtype=bool)]
            tot = p["total_ms"].to_numpy(dtype=float)
            res = stats.half_unit(tot)
            const = bool(len(tot)) and float(np.nanmax(tot)) == float(np.nanmin(tot))
        out["cycle_ms"] = Metric("cycle_ms", "cycle time", "ms", "lower", cyc, kind, res, const,
                                 batch_logs=logs.get("cycle_ms", ()) if kind != "profiler"
                                 else ())
    return out, kind


def runs_from_log(log: ParsedLog, engine: str, baseline: Baseline | None,
                  confidence: float, warmup="auto") -> list[Run]:
    return [run_of(sub, label, engine, baseline, confidence, warmup)
            for label, sub in log.units()]


def speedup_of_export(run: Run, base: BaseSide, confidence: float) -> Estimate | None:
    """An exported run's speedup against a baseline: its per-stream rate × the baseline step at
    its batch mix (the mix it carries; analysis/from_export.py, as breakeven of an export)."""
    from .from_export import mix_step, over
    eff = run.metrics.get("eff_tok_s")
    at = mix_step(run, base) if eff is not None else None
    if at is None:
        return None
    return over(_scaled(eff.estimate, 1e-3), *at, 1, confidence,
                "export: per-stream rate × baseline step")


def load_export(path: str, confidence: float = 0.95) -> Run | None:
    """An eaglelog export (``eaglelog export``), or None when the file is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
            if not head.startswith(b"{"):
                return None
            f.seek(0)
            d = json.load(f, parse_constant=_no_constant, parse_float=_finite_float)
    except _NonFinite as e:
        raise EaglelogError(f"{path}: not a valid eaglelog export ({e}); make one with "
                            "`eaglelog export LOG -o FILE.json`") from None
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or EXPORT_KEY not in d:
        return None
    if d[EXPORT_KEY] not in (1, 2):
        raise EaglelogError(f"{path}: export format {d[EXPORT_KEY]!r} is newer than this eaglelog")
    try:
        run = Run.from_export(d, path, confidence)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise EaglelogError(f"{path}: not a valid eaglelog export (bad or missing {e}); make "
                            "one with `eaglelog export LOG -o FILE.json`") from None
    run.label = f"{path} (export of {run.label})"
    return run


# ----------------------------------------------------------------------------- comparing

@dataclass(frozen=True)
class MetricComparison:
    metric: str
    label: str
    unit: str
    better: str
    run: str
    reference_mean: float
    mean: float
    ratio: Estimate
    p_value: float | None
    test: str
    significant: bool
    practical: bool
    verdict: str
    n_reference: int | None
    n: int | None
    role: str = "secondary"          # primary | secondary
    p_adjusted: float | None = None  # Holm within the pair's secondary family
    direction: str | None = None     # better | worse | None (no detectable difference)

    @property
    def worse(self) -> bool:
        return self.direction == "worse"

    def to_dict(self) -> dict:
        return {"metric": self.metric, "label": self.label, "unit": self.unit,
                "better": self.better, "role": self.role, "run": self.run,
                "reference_mean": _f(self.reference_mean), "mean": _f(self.mean),
                "ratio": _f(self.ratio.estimate), "ratio_ci_low": _f(self.ratio.ci_low),
                "ratio_ci_high": _f(self.ratio.ci_high), "test": self.test,
                "p_value": _f(self.p_value) if self.p_value is not None else None,
                "p_adjusted": _f(self.p_adjusted) if self.p_adjusted is not None else None,
                "significant": self.significant, "practical": self.practical,
                "direction": self.direction, "worse": self.worse, "verdict": self.verdict,
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
    primary: str | None = None
    headline: dict = field(default_factory=dict)     # run -> better | worse | no … | …

    def to_frame(self):
        """One row per compared metric and run (the columns of ``eaglelog compare -f csv``)."""
        import pandas as pd
        return pd.DataFrame([m.to_dict() for m in self.metrics])

    def to_dict(self) -> dict:
        return {"command": "compare", "reference": self.reference, "runs": list(self.runs),
                "confidence": self.confidence, "test": self.test,
                "min_effect": self.min_effect, "primary": self.primary,
                "headline": self.headline, "metrics": [m.to_dict() for m in self.metrics],
                "config_diff": self.config_diff, "warnings": list(self.warnings),
                "notes": list(self.notes)}


def _words(label: str, better: str, unit: str, r: float) -> str:
    if unit == "ms":   # times: faster / slower
        return f"{1 / r:.3g}x faster" if r < 1 else f"{r:.3g}x slower"
    return f"{label} {r:.3g}x higher" if r > 1 else f"{label} {1 / r:.3g}x lower"


def log_ratio_test(ref: Estimate, new: Estimate, confidence: float) -> tuple[Estimate, float]:
    """Ratio new/ref with its interval, and Welch's p-value on the log scale."""
    if not (ref.estimate > 0 and new.estimate > 0):
        return stats.insufficient(math.nan, 0, confidence, "a value is not positive"), math.nan
    ratio = stats.combine(new.estimate / ref.estimate, [(new, 1), (ref, -1)], confidence,
                          "changed / reference")
    if not ratio.sufficient:
        return ratio, math.nan
    lr = math.log(ratio.estimate)
    if ratio.se_log == 0:
        return ratio, (1.0 if lr == 0 else 0.0)
    t = lr / ratio.se_log
    p = 2 * (dist.stdtr(ratio.df, -abs(t)) if math.isfinite(ratio.df) else dist.ndtr(-abs(t)))
    return ratio, float(p)


def holm(p: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None: not tested)."""
    idx = [i for i, x in enumerate(p) if x is not None and math.isfinite(x)]
    order = sorted(idx, key=lambda i: p[i])
    m = len(order)
    out: list[float | None] = [None] * len(p)
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out


def _not_comparable(a: Metric, b: Metric) -> str | None:
    kinds = {family(a.kind), family(b.kind)}
    if a.name in ("cycle_ms", "eff_tok_s", "speedup") and len(kinds) > 1 and \
            "v1 export" not in kinds:
        return (f"not comparable: the cycle comes from different kinds of windows "
                f"({b.kind or '?'} vs {a.kind or '?'})")
    return None


def compare_metric(a: Metric, b: Metric, run: str, confidence: float, test: str,
                   min_effect: float, role: str) -> MetricComparison:
    ea, eb = a.estimate, b.estimate
    ratio, p = log_ratio_test(ea, eb, confidence)
    used = "welch"
    if test == "mannwhitney" and ratio.sufficient and len(a.batch_logs) >= 3 and \
            len(b.batch_logs) >= 3:
        from scipy.stats import mannwhitneyu
        ba = np.round(np.array(a.batch_logs), 12)
        bb = np.round(np.array(b.batch_logs), 12)
        p = float(mannwhitneyu(ba, bb, alternative="two-sided").pvalue) \
            if not np.array_equal(np.sort(ba), np.sort(bb)) else 1.0
        used = "mannwhitney"
    why = _not_comparable(a, b)
    unresolved = (a.resolution and b.resolution and (a.constant or b.constant) and
                  abs(eb.estimate - ea.estimate) <= 2 * max(a.resolution, b.resolution) + 1e-12)
    if why:
        verdict, sig, prac, p = why, False, False, None
    elif unresolved:
        verdict, sig, prac, p = "not resolvable at the printed precision", False, False, None
    elif not ratio.sufficient or p is None or not math.isfinite(p):
        verdict, sig, prac, p = "insufficient data", False, False, None
    else:
        sig = bool(p < 1 - confidence)
        prac = abs(math.log(ratio.estimate)) >= math.log1p(min_effect)
        verdict = ""
    return MetricComparison(a.name, a.label, a.unit, a.better, run, ea.estimate, eb.estimate,
                            ratio, p, used, sig, prac, verdict, ea.n, eb.n, role)


def _finish(m: MetricComparison, p_adj: float | None, confidence: float,
            min_effect: float) -> MetricComparison:
    """Significance on the adjusted p (secondaries) and the verdict in words."""
    if m.verdict:                         # not comparable, not resolvable, insufficient
        return MetricComparison(**{**m.__dict__, "p_adjusted": p_adj, "significant": False})
    p = p_adj if m.role == "secondary" else m.p_value
    sig = p is not None and p < 1 - confidence
    direction, words = None, ""
    if not sig:
        words = "no detectable difference"
    elif not m.practical:
        words = f"below --min-effect {min_effect:.1%}: no difference that matters"
    else:
        up = m.ratio.estimate > 1
        direction = "better" if up == (m.better == "higher") else "worse"
        words = f"{direction} ({_words(m.label, m.better, m.unit, m.ratio.estimate)})"
    return MetricComparison(**{**m.__dict__, "p_adjusted": p_adj, "significant": sig,
                               "direction": direction, "verdict": words})


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
    if ref.batch_sizes and run.batch_sizes and set(ref.batch_sizes) != set(run.batch_sizes):
        out.append(f"{run.label}: different batch sizes (#running-req "
                   f"{_sizes(run.batch_sizes)} vs {_sizes(ref.batch_sizes)}): cycle and step "
                   "time grow with the batch; the per-stream rate and the speedup weigh each "
                   "run's own mix")
    if ref.modes and run.modes and ref.modes != run.modes:
        out.append(f"{run.label}: EAGLE3_PROF modes differ ({', '.join(run.modes)} vs "
                   f"{', '.join(ref.modes)}): sync-mode cycle times are distorted")
    return out


def _sizes(v: list[float]) -> str:
    v = sorted(int(x) for x in v)
    return str(v[0]) if len(v) == 1 else f"{v[0]}–{v[-1]}"


def _on_common_source(ref: Run, run: Run, notes: list[str]) -> tuple[dict, dict]:
    """The two runs' metrics, those that hold the cycle taken from one source both carry
    when their own choices differ (the reference's choice first, then the run's; never an
    upper bound), with a note; else their own."""
    ka, kb = family(ref.cycle_kind), family(run.cycle_kind)
    if ka == kb or not ref.by_source or not run.by_source:
        return ref.metrics, run.metrics
    for k in (ka, kb):
        if k != "upper bound" and k in ref.by_source and k in run.by_source:
            notes.append(f"{run.label}: the cycle of both runs from {_SOURCE_WORDS.get(k, k)}, "
                         f"which both carry (on its own, {run.label} takes it from "
                         f"{_SOURCE_WORDS.get(kb, kb)}, {ref.label} from "
                         f"{_SOURCE_WORDS.get(ka, ka)})")
            return ({**ref.metrics, **ref.by_source[k]}, {**run.metrics, **run.by_source[k]})
    return ref.metrics, run.metrics


_SOURCE_WORDS = {"decode": "the decode lines", "profiler": "the EAGLE3_PROF blocks",
                 "upper bound": "the decode lines (an upper bound)"}


def compare(runs: list[Run], *, confidence: float = 0.95, test: str = "welch",
            min_effect: float = 0.0, baseline: Baseline | None = None) -> CompareResult:
    if len(runs) < 2:
        raise EaglelogError("compare needs at least two runs (a reference and a changed run)")
    ref = runs[0]
    notes = []
    if baseline is not None:
        base = None
        for r in runs:
            if "speedup" not in r.metrics:
                base = base or baseline_side(baseline, confidence, [])
                sp = speedup_of_export(r, base, confidence)
                if sp is not None:
                    r.metrics["speedup"] = Metric("speedup", "speedup", "×", "higher", sp,
                                                  r.cycle_kind)
                    notes.append(f"{r.label}: speedup from its exported per-stream rate and "
                                 "batch mix")
    primary = next((p for p in PRIMARY if all(p in r.metrics for r in runs)), None)
    metrics, diff, warns, headline = [], {}, [], {}
    said_no_config: set[str] = set()
    for run in runs[1:]:
        ref_m, run_m = _on_common_source(ref, run, notes)
        common = [k for k in ref_m if k in run_m]
        if not common:
            hint = ("; a run without speculation is the baseline of a speculative one: "
                    "`eaglelog breakeven --baseline-log BASE.log SPEC.log`"
                    if not run.metrics or not ref.metrics else "")
            raise EaglelogError(f"{run.label} and {ref.label} have no metric in common (one has "
                                f"{', '.join(run.metrics) or 'none'}, the other "
                                f"{', '.join(ref.metrics) or 'none'}){hint}")
        secondary = [k for k in common if k not in PRIMARY]
        if primary:
            m = compare_metric(ref_m[primary], run_m[primary], run.label,
                               confidence, test, min_effect, "primary")
            m = _finish(m, None, confidence, min_effect)
            metrics.append(m)
            headline[run.label] = (m.direction or
                                   (m.verdict if m.verdict.startswith(("not ", "insufficient"))
                                    else "no detectable difference"))
        sec = [compare_metric(ref_m[k], run_m[k], run.label, confidence, test,
                              min_effect, "secondary") for k in secondary]
        adj = holm([m.p_value if not m.verdict else None for m in sec])
        metrics += [_finish(m, a, confidence, min_effect) for m, a in zip(sec, adj)]
        diff[run.label] = _config_diff(ref, run)
        for r in (ref, run):
            if not r.config and r.label not in said_no_config:
                said_no_config.add(r.label)
                notes.append(f"{r.label} prints no server_args line: its configuration is not "
                             "compared")
        warns += _warnings(ref, run)
    if baseline is not None and primary == "speedup":
        notes.append("the baseline is common to every run: with a stated rate its uncertainty "
                     "cancels in the speedup ratio")
    return CompareResult(ref.label, tuple(r.label for r in runs[1:]), confidence, test,
                         min_effect, tuple(metrics), diff, tuple(warns), tuple(notes), primary,
                         headline)
