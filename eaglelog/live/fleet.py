"""``eaglelog fleet``: one row per instance of a fleet, ranked by speedup.

The instances are the runs of the sources (a Prometheus server: every instance it scrapes that
exposes SGLang's or vLLM's families, one run per instance and model; or /metrics endpoints), each
analysed by ``breakeven`` as a log would be.  Rows are sorted by speedup, best first (by the rate
one request stream gets when there is no baseline); an instance whose verdict is ``below`` is
marked ``BELOW`` (``below?`` when only its estimate is under 1); **outliers** are instances whose
speedup (or accept length) is far from the fleet's: more than 3.5 robust z-scores (median and
MAD scaled to σ) away, and more than 5 % off the median.  Each row also carries the TTFT and
TPOT quantiles of the instance's latency histograms over the span read (eaglelog/live/histograms.py:
p50/p90/p99, each the interpolated value and the bucket it lies in; the table shows p99).

    >>> from eaglelog.live.fleet import fleet
    >>> f = fleet("prom+http://prometheus:9090?match=job%3D%22sglang%22&since=1h",
    ...           baseline_toks=90)
    >>> f.rows[0].instance, f.rows[0].speedup
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import EaglelogError
from .histograms import EMPTY as _NO_LATENCY
from .histograms import NOTE as LATENCY_NOTE
from .histograms import LatencySummary, summarize
from .metrics import cell

__all__ = ["fleet", "FleetRow", "FleetResult", "outliers"]

Z_OUTLIER = 3.5
MIN_REL = 0.05


@dataclass(frozen=True)
class FleetRow:
    rank: int
    instance: str
    engine: str
    model: str | None
    windows: int
    accept_len: float | None
    rate: float | None                 # tok/s per request stream
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    verdict: str | None
    mark: str                          # 'BELOW', 'below?' or ''
    outlier: str | None                # why the instance stands out, or None
    error: str | None = None
    latency: LatencySummary | None = None   # TTFT and TPOT quantiles over the span read

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        lat = d.pop("latency")
        d.update(lat.flat() if lat is not None else _NO_LATENCY)
        return d


@dataclass(frozen=True)
class FleetResult:
    rows: tuple[FleetRow, ...]
    baseline: str | None
    confidence: float
    median_speedup: float | None
    median_accept_len: float | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "confidence": self.confidence,
                "median_speedup": self.median_speedup,
                "median_accept_len": self.median_accept_len,
                "instances": [r.to_dict() for r in self.rows], "notes": list(self.notes)}

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame([r.to_dict() for r in self.rows])

    @property
    def below(self) -> tuple[FleetRow, ...]:
        return tuple(r for r in self.rows if r.mark == "BELOW")

    def text(self) -> str:
        from tabulate import tabulate
        rows = []
        for r in self.rows:
            if r.error:
                rows.append(["", cell(r.instance), cell(r.engine), "", "", "", "", "", "",
                             cell(f"error: {r.error}")])
                continue
            sp = ""
            if r.speedup is not None:
                sp = f"{r.speedup:.3f}×"
                if r.speedup_low is not None and r.speedup_high is not None:
                    sp += f" [{r.speedup_low:.3f} … {r.speedup_high:.3f}]"
            rows.append([r.rank, cell(r.instance), cell(r.engine), r.windows,
                         "" if r.accept_len is None else f"{r.accept_len:.3f}",
                         "" if r.rate is None else f"{r.rate:.1f}", sp,
                         r.latency.cell("ttft") if r.latency else "",
                         r.latency.cell("tpot") if r.latency else "",
                         " ".join(x for x in (r.mark, r.verdict if not r.mark else "",
                                              f"OUTLIER: {r.outlier}" if r.outlier else "") if x)])
        head = ["#", "instance", "engine", "windows", "accept_len", "tok/s/stream", "speedup",
                "TTFT p99", "TPOT p99", "verdict"]
        out = tabulate(rows, head, disable_numparse=True) + "\n"
        n_below = len(self.below)
        live = [r for r in self.rows if not r.error]
        none = sum(r.verdict in ("insufficient data", "needs accept length") for r in live)
        if self.median_speedup is not None:
            out += (f"{len(live)} instance{'s' if len(live) != 1 else ''}; median speedup "
                    f"{self.median_speedup:.3f}×; {n_below} below break-even"
                    + (f"; {none} without a verdict" if none else "") + "\n")
        if any(r.latency for r in self.rows):
            out += LATENCY_NOTE + "\n"
        for n in self.notes:
            out += f"note: {cell(n, 400)}\n"
        return out


def outliers(values: dict[str, float], what: str, fmt: str = "{:.3f}") -> dict[str, str]:
    """{key: reason} of the values more than Z_OUTLIER robust z-scores (and MIN_REL) from the
    median of ``values``."""
    import numpy as np
    keys = [k for k, v in values.items() if v is not None and math.isfinite(v)]
    if len(keys) < 5:
        return {}
    x = np.array([values[k] for k in keys])
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med))) * 1.4826
    out = {}
    for k, v in zip(keys, x):
        rel = abs(v - med) / abs(med) if med else math.inf
        z = abs(v - med) / mad if mad > 0 else (math.inf if rel > MIN_REL else 0.0)
        if z > Z_OUTLIER and rel > MIN_REL:
            out[k] = (f"{what} {fmt.format(v)} vs fleet median {fmt.format(med)} "
                      f"({'+' if v > med else '−'}{rel:.0%})")
    return out


def fleet(sources, *, baseline=None, baseline_toks=None, confidence: float = 0.95,
          log=None) -> FleetResult:
    """Rank the instances of ``sources`` (specs or a ParsedLog already read, ``log``)."""
    from ..analysis.breakeven import breakeven
    from ..baseline import Baseline
    from .watch import pooled

    if baseline is None and baseline_toks is not None:
        baseline = Baseline.from_text(str(baseline_toks))
    if log is None:
        from ..api import parse
        log = parse(list(sources) if not isinstance(sources, str) else [sources])
    base = baseline or Baseline.from_text("1")
    raw = []
    notes = []
    for info in log.sources:
        if info.error and not any(info.counts.values()):
            raw.append(dict(instance=info.name, engine=info.engine or "", error=info.error))
            continue
        sub = log.subset(info.name)
        cfg = sub.config(info.name) if hasattr(sub, "config") else {}
        lat = summarize(sub.tables.get("latency_hist"))
        p = pooled(sub.decode, sub.tables.get("vllm_spec"))
        try:
            r = breakeven(sub, base, confidence=confidence)
        except EaglelogError as e:
            msg = str(e)
            if msg.startswith(info.name + ": "):
                msg = msg[len(info.name) + 2:]        # the row names the instance
            if cfg.get("metrics_flagged"):
                msg = cfg["metrics_flagged"]          # an impossible accept length, flagged
            elif cfg.get("metrics_engine") and not cfg.get("speculative_algorithm"):
                msg = ("not speculating: no accept length in its series (vLLM: no "
                       "vllm:spec_decode_* counters; SGLang: sglang:spec_accept_length 0)")
            raw.append(dict(instance=info.name, engine=info.engine or "", error=msg))
            continue
        eff = r.eff_tok_s
        sp = r.speedup if baseline is not None else None
        raw.append(dict(instance=info.name, engine=info.engine or "",
                        model=cfg.get("model_path"), windows=int(len(sub.decode)),
                        accept_len=p["accept_len"],
                        rate=_fin(eff.estimate) if eff is not None else None,
                        speedup=_fin(sp.estimate) if sp is not None else None,
                        speedup_low=_fin(sp.ci_low) if sp is not None else None,
                        speedup_high=_fin(sp.ci_high) if sp is not None else None,
                        verdict=r.verdict if baseline is not None else None, latency=lat))
    live = [x for x in raw if "error" not in x]
    key = "speedup" if baseline is not None else "rate"
    if baseline is None:
        notes.append("no baseline: ranked by the rate one request stream gets (give "
                     "--baseline-toks for speedups and break-even)")
    live.sort(key=lambda x: -(x.get(key) if x.get(key) is not None else -math.inf))
    out_sp = outliers({x["instance"]: x.get(key) for x in live},
                      "speedup" if key == "speedup" else "tok/s per stream")
    out_al = outliers({x["instance"]: x.get("accept_len") for x in live}, "accept length")
    rows = []
    for i, x in enumerate(live, 1):
        mark = ""
        if x.get("verdict") == "below":
            mark = "BELOW"
        elif x.get("speedup") is not None and x["speedup"] < 1:
            mark = "below?"
        why = "; ".join(v for v in (out_sp.get(x["instance"]), out_al.get(x["instance"])) if v)
        rows.append(FleetRow(i, x["instance"], x["engine"], x.get("model"), x["windows"],
                             x.get("accept_len"), x.get("rate"), x.get("speedup"),
                             x.get("speedup_low"), x.get("speedup_high"), x.get("verdict"),
                             mark, why or None, latency=x.get("latency")))
    for x in raw:
        if "error" in x:
            rows.append(FleetRow(0, x["instance"], x["engine"], None, 0, None, None, None, None,
                                 None, None, "", None, error=x["error"]))
    import statistics
    sps = [r.speedup for r in rows if r.speedup is not None]
    als = [r.accept_len for r in rows if r.accept_len is not None]
    if not live:
        raise EaglelogError("no instance could be analysed: " +
                            "; ".join(f"{x['instance']}: {x['error']}" for x in raw))
    return FleetResult(tuple(rows), str(baseline.tok_s) + " tok/s" if baseline is not None and
                       baseline.tok_s else (None if baseline is None else "baseline"),
                       confidence, statistics.median(sps) if sps else None,
                       statistics.median(als) if als else None, tuple(notes))


def _fin(v):
    return float(v) if v is not None and math.isfinite(v) else None
