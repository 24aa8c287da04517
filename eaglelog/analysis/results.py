"""The result types of the break-even, summary and compare analyses, and the verdict's words:
the bottom of the analysis layer.  breakeven.py, summary.py and compare.py build them and
re-export them; analysis/llamacpp.py builds them for a llama-server log without importing
those analyses (issue 38: no import circle between them)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from .._lazy import pd

from .. import stats
from ..stats import Estimate


# ----------------------------------------------------------------------------- break-even

NEEDS_ACCEPT = "needs accept length"


VERDICTS = ("above", "below", "inconclusive", "insufficient data", "partial", "mixed",
            "invalid baseline", NEEDS_ACCEPT)


ESTIMATES = ("cycle_ms", "baseline_step_ms", "breakeven_accept_len", "accept_len", "speedup")


# the one gate of every --check (breakeven, fleet): these verdicts fail it, and a run without
# a verdict fails it unless the user lets it pass (--allow-insufficient)
GATE_FAILS = ("below", "partial", "mixed", "invalid baseline")


NO_VERDICT = ("insufficient data", NEEDS_ACCEPT)


def gate_fails(verdict: str | None, allow_no_verdict: bool = False) -> bool:
    """Whether a ``--check`` gate fails on ``verdict`` (None: no baseline, nothing to gate)."""
    return verdict in GATE_FAILS or (verdict in NO_VERDICT and not allow_no_verdict)


def gate_message(source: str, verdict: str, reason: str | None) -> str:
    """One run's part of the 'check failed' line."""
    if verdict in NO_VERDICT:
        return f"{source}: no verdict ({reason or verdict})"
    return f"{source}: {verdict}" + (f" ({reason})" if reason else "")


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
    share: float = math.nan      # the bucket's share of the run's request-steps
    eff_tok_s: Estimate | None = None   # the per-stream rate at this batch size (tokens/s)
    steps: str | None = None     # the K it ran under adaptive slots (analysis/adaptive_slots.py)
    context: float | None = None  # mean context per running request, tokens: #token /
                                  # #running-req, request-step weighted (analysis/context.py)

    def to_dict(self) -> dict:
        batch = int(self.batch) if self.batch.isdigit() else self.batch
        return {"running_req": batch, "windows": self.windows, "share": _num(self.share),
                **({"steps": self.steps} if self.steps is not None else {}),
                **({"context": _num(self.context)} if self.context is not None else {}),
                **_estimates(self), "verdict": self.verdict}


def _num(v):
    return None if v is None or not math.isfinite(v) else float(v)


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
    cycle_kind: str = "corrected"    # clean | corrected | upper bound | profiler
    coverage: float = 1.0            # share of the run's request-steps the baseline covers
    verdict_reason: str | None = None
    facts: dict = field(default_factory=dict)   # windows used / left out, τ, batches, …
    # the rate model over every window, the baseline's coverage aside (summary reuses it)
    whole_fit: object = field(default=None, repr=False, compare=False)
    # the decode windows behind the verdict (references to the rate model's arrays; the
    # frame is built by windows())
    evidence: object = field(default=None, repr=False, compare=False)

    def windows(self) -> pd.DataFrame:
        """The decode windows behind the verdict, one row each: time, batch, accept length,
        derived cycle, weight, whether each counts for the cycle and the accept length, and why
        it is left out (analysis/evidence.py; docs/api.md)."""
        from .evidence import windows_of
        return windows_of(self.evidence, self.source)

    @property
    def eff_tok_s(self) -> Estimate | None:
        """The rate one request stream gets, tokens/s (1000 × accept_len / cycle_ms)."""
        if self.rate is None:
            return None
        return _scaled(self.rate, 1000.0, "tokens/s per request stream")

    def to_dict(self) -> dict:
        d = {"source": self.source, "baseline": self.baseline, **_estimates(self),
             "eff_tok_s": self.eff_tok_s.to_dict() if self.eff_tok_s else None,
             "cycle_kind": self.cycle_kind, "coverage": _num(self.coverage),
             "confidence": self.confidence, "verdict": self.verdict,
             "verdict_reason": self.verdict_reason, "notes": list(self.notes),
             "facts": self.facts}
        if self.by_batch is not None:
            d["by_batch"] = [b.to_dict() for b in self.by_batch]
        return d


def _scaled(e: Estimate, k: float, source: str | None = None) -> Estimate:
    lo = e.ci_low * k if e.ci_low is not None else None
    hi = e.ci_high * k if e.ci_high is not None else None
    return Estimate(e.estimate * k, lo, hi, e.n, e.confidence, e.se_log, e.df,
                    source or e.source)


def verdict_of(speedup: Estimate) -> str:
    if not speedup.sufficient:
        return "insufficient data"
    if speedup.ci_low > 1:
        return "above"
    if speedup.ci_high < 1:
        return "below"
    return "inconclusive"


# ----------------------------------------------------------------------------- summary

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
    throughput_all: float | None      # aggregate tok/s over the decode windows' wall time
    eff_tok_s: Estimate | None        # the rate one request stream gets: 1000 × accept / cycle
    n_windows: int                    # decode windows of the run (JSON: "windows")
    windows_used: int                 # decode windows behind the derived cycle
    breakeven: BreakevenResult | None
    notes: tuple[str, ...] = ()
    engine: str | None = None      # the log family (labels only; not in the JSON)
    # where the phases come from: 'no-sync blocks', 'N sync-mode blocks' (shares only, no
    # cycle), 'vLLM stage times', or None
    phases_from: str | None = None
    cycle_derived: Estimate | None = None     # the rate model's cycle (decode lines)
    cycle_kind: str | None = None             # clean | corrected | upper bound
    speculative: bool = True                  # the decode lines print an accept length
    counted: str = "lines"                    # what ``lines`` counts: log lines, or the
                                              # windows of a /metrics or Prometheus source
    cycle_used: Estimate | None = None        # the cycle behind the per-stream rate
    ranks: int = 1                            # DP ranks / vLLM engines the aggregate adds up
    by_rank: tuple = ()                       # ranks.RankRow each, where the ranks differ
    # the decode windows behind the derived cycle and accept length (references; windows())
    evidence: object = field(default=None, repr=False, compare=False)

    def windows(self) -> pd.DataFrame:
        """The decode windows behind the derived cycle and the accept length, one row each
        (analysis/evidence.py; docs/api.md).  With a baseline, ``s.breakeven.windows()`` are
        those of the verdict."""
        from .evidence import windows_of
        return windows_of(self.evidence, self.source)

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
                "cycle_derived_ms": d(self.cycle_derived), "cycle_kind": self.cycle_kind,
                "throughput": {"aggregate_tok_s": self.throughput_all,
                               "per_stream_tok_s": d(self.eff_tok_s),
                               "windows": self.n_windows, "windows_used": self.windows_used,
                               "ranks": self.ranks,
                               "by_rank": [r.to_dict() for r in self.by_rank]},
                "breakeven": self.breakeven.to_dict() if self.breakeven else None,
                "notes": list(self.notes)}


# ----------------------------------------------------------------------------- compare

EXPORT_KEY = "eaglelog_export"


EXPORT_VERSION = 2


@dataclass(frozen=True)
class Metric:
    """One metric of a run: its estimate (with se on the log scale and df), what it means, and
    where it comes from (``kind``: the kind of windows, for comparability)."""

    name: str
    label: str
    unit: str
    better: str                  # "higher" or "lower"
    estimate: Estimate
    kind: str = ""
    resolution: float = 0.0      # half a unit of the printed last digit (0: not printed)
    constant: bool = False       # every window printed the same value
    batch_logs: tuple[float, ...] = ()   # per-batch log estimates (Mann-Whitney)

    def to_dict(self) -> dict:
        e = self.estimate
        return {"label": self.label, "unit": self.unit, "better": self.better,
                "estimate": _f(e.estimate), "ci_low": _f(e.ci_low), "ci_high": _f(e.ci_high),
                "se_log": _f(e.se_log), "df": _f(e.df), "n": e.n, "source": e.source,
                "kind": self.kind, "resolution": self.resolution, "constant": self.constant,
                "batch_logs": [float(x) for x in self.batch_logs]}

    @classmethod
    def from_dict(cls, name: str, d: dict, confidence: float) -> "Metric":
        est, se, df = (_number(d, k, name) for k in ("estimate", "se_log", "df"))
        _number(d, "n", name, whole=True)
        _number(d, "resolution", name)
        for k in ("label", "unit", "better"):
            if not isinstance(d[k], str):
                raise ValueError(f"{name}.{k}")
        if d.get("source") is not None and not isinstance(d["source"], str):
            raise ValueError(f"{name}.source")
        if not isinstance(d.get("batch_logs") or [], list) or \
                not all(_is_number(x) for x in d.get("batch_logs") or []):
            raise ValueError(f"{name}.batch_logs")
        if est is None:
            e = stats.insufficient(math.nan, d.get("n") or 0, confidence, d.get("source"))
        elif se is None:
            e = stats.insufficient(est, d.get("n") or 0, confidence, d.get("source"))
        else:
            e = stats.from_log_se(est, se, df if df is not None else math.inf, d.get("n"),
                                  confidence, d.get("source"))
        return cls(name, d["label"], d["unit"], d["better"], e, d.get("kind", ""),
                   float(d.get("resolution") or 0.0), bool(d.get("constant")),
                   tuple(d.get("batch_logs") or ()))


def _f(x):
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(d: dict, key: str, metric: str, whole: bool = False):
    """``d[key]`` of an export's metric: a number (``whole``: a whole one), or None when
    missing; ValueError naming the metric and key otherwise (load_export says it in one
    line)."""
    v = d.get(key)
    if v is None:
        return None
    if not _is_number(v) or (whole and v != int(v)):
        raise ValueError(f"{metric}.{key}")
    return v


@dataclass
class Run:
    """One run to compare: its metrics plus what tells whether runs are comparable, and its
    batch-size mix (request-step weight per mean batch size), to match a baseline later."""

    label: str
    engine: str
    config: dict
    metrics: dict[str, Metric]
    batch_sizes: list[float] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    mix: list[tuple[float, float]] = field(default_factory=list)
    cycle_kind: str = ""
    # the metrics that hold the cycle, per source the run has (family(kind) -> metrics)
    by_source: dict = field(default_factory=dict)

    def to_export(self) -> dict:
        return {EXPORT_KEY: EXPORT_VERSION, "source": self.label, "engine": self.engine,
                "config": self.config, "batch_sizes": self.batch_sizes, "modes": self.modes,
                "mix": [[b, w] for b, w in self.mix], "cycle_kind": self.cycle_kind,
                "metrics": {k: m.to_dict() for k, m in self.metrics.items()
                            if k != "speedup"},
                # the metrics that hold the cycle from each source the run has (a later
                # compare takes the one both runs carry)
                "by_source": {src: {k: m.to_dict() for k, m in ms.items() if k != "speedup"}
                              for src, ms in self.by_source.items()}}

    @classmethod
    def from_export(cls, d: dict, label: str, confidence: float = 0.95) -> "Run":
        if d[EXPORT_KEY] == 1:        # window series: estimated again with today's rules
            metrics = {}
            for k, v in d["metrics"].items():
                e = stats.weighted_mean(np.asarray(v["values"], float),
                                        np.asarray(v["weights"], float), confidence,
                                        v.get("source"))
                name = {"cycle_ms_derived": "cycle_ms"}.get(k, k)
                if name in metrics:
                    continue
                metrics[name] = Metric(name, v["label"], v["unit"], v["better"], e, "v1 export")
            return cls(d.get("source") or label, d.get("engine", "sglang"),
                       d.get("config") or {}, metrics, _sizes_of(d.get("batch_sizes")),
                       _modes_of(d.get("modes")), [], "v1 export")
        return cls(d.get("source") or label, d.get("engine", "sglang"), d.get("config") or {},
                   {k: Metric.from_dict(k, v, confidence) for k, v in d["metrics"].items()},
                   _sizes_of(d.get("batch_sizes")), _modes_of(d.get("modes")),
                   [(float(b), float(w)) for b, w in d.get("mix") or []],
                   d.get("cycle_kind", ""),
                   {str(src): {k: Metric.from_dict(k, v, confidence) for k, v in ms.items()}
                    for src, ms in (d.get("by_source") or {}).items()})


class _NonFinite(ValueError):
    pass


def _no_constant(name: str):
    raise _NonFinite(f"a non-finite number: {name}")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise _NonFinite(f"a number out of range: {text[:40]}")
    return v


def _sizes_of(values) -> list[int]:
    """An export's batch sizes: whole numbers ≥ 0 (ValueError otherwise)."""
    out = []
    for x in values or []:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0 or x != int(x):
            raise ValueError("batch_sizes")
        out.append(int(x))
    return out


def _modes_of(values) -> list[str]:
    if not all(isinstance(x, str) for x in values or []):
        raise ValueError("modes")
    return list(values or [])
