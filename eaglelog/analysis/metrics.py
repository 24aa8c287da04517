"""The per-run metrics that compare and sweep work on, each as a series of window means.

A metric is a series of window means in time order with their weights (what each window
averages), the unit and which direction is better.  The same series feed the estimates
(``stats.weighted_mean``: batch-means jackknife), the spread (weighted σ of the windows) and the
tests.  An exported run (``eaglelog export``) stores exactly these series.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import stats
from ..api import ParsedLog
from .breakeven import one_source
from .windows import derived_ms


@dataclass(frozen=True)
class Series:
    name: str
    label: str
    unit: str
    better: str            # "lower" or "higher"
    values: np.ndarray
    weights: np.ndarray
    source: str

    def estimate(self, confidence: float) -> stats.Estimate:
        return stats.weighted_mean(self.values, self.weights, confidence, self.source)

    @property
    def sd(self) -> float:
        v, w = self.values, self.weights
        if len(v) < 2:
            return math.nan
        m = np.sum(w * v) / np.sum(w)
        return float(math.sqrt(np.sum(w * (v - m) ** 2) / np.sum(w) * len(v) / (len(v) - 1)))

    def batch_means(self) -> np.ndarray:
        labels = stats.batch_labels(len(self.values))
        out = []
        for k in range(int(labels.max()) + 1 if len(labels) else 0):
            m = labels == k
            out.append(float(np.sum(self.weights[m] * self.values[m]) / np.sum(self.weights[m])))
        return np.array(out)

    def to_dict(self) -> dict:
        return {"label": self.label, "unit": self.unit, "better": self.better,
                "source": self.source, "values": [float(x) for x in self.values],
                "weights": [float(x) for x in self.weights]}

    @classmethod
    def from_dict(cls, name: str, d: dict) -> "Series":
        return cls(name, d["label"], d["unit"], d["better"],
                   np.asarray(d["values"], dtype=float), np.asarray(d["weights"], dtype=float),
                   d.get("source", ""))


def run_metrics(log: ParsedLog) -> dict[str, Series]:
    """Every metric one run (a ParsedLog of one input or start-up) carries."""
    source = log.sources[0].name
    out: dict[str, Series] = {}
    p = log.prof
    if len(p):
        use = p[p["complete"].fillna(False).astype(bool) &
                ~p["mode"].astype("string").eq("sync").fillna(False)].sort_values("line_no")
        if len(use):
            w = use["cycles"].to_numpy(float)
            out["cycle_ms"] = Series("cycle_ms", "cycle time", "ms", "lower",
                                     use["total_ms"].to_numpy(float), w,
                                     "EAGLE3_PROF TOTAL, no-sync blocks, cycle-weighted")
            ph = log.prof_phases[log.prof_phases["block"].isin(use["line_no"])]
            wmap = dict(zip(use["line_no"].to_numpy(), w))
            for label in dict.fromkeys(ph["phase"].astype(str)):
                rows = ph[ph["phase"].astype(str) == label].sort_values("block")
                key = "phase:" + label
                out[key] = Series(key, label, "ms", "lower", rows["ms_per_cycle"].to_numpy(float),
                                  np.array([wmap[b] for b in rows["block"]]),
                                  "EAGLE3_PROF phase line, cycle-weighted")
            out["accept_len_profiler"] = Series(
                "accept_len_profiler", "profiler accept length", "tokens/cycle", "higher",
                use["accept_len"].to_numpy(float), w, "EAGLE3_PROF Accept len, cycle-weighted")
    _, win = one_source(log, source)
    if len(win):
        spec = win[np.isfinite(win["accept_len"].to_numpy(dtype=float))]
        if len(spec):
            out["accept_len"] = Series("accept_len", "accept length", "tokens/verify", "higher",
                                       spec["accept_len"].to_numpy(float),
                                       spec["req_steps"].to_numpy(float),
                                       "SGLang accept len, request-step weighted")
        clean = win[win["clean"]]
        if len(clean):
            out["gen_throughput"] = Series("gen_throughput", "decode throughput", "tok/s",
                                           "higher", clean["gen_throughput"].to_numpy(float),
                                           np.ones(len(clean)),
                                           "gen throughput, windows without prefill/idle time")
            name, label = (("cycle_ms_derived", "derived cycle time") if len(spec)
                           else ("step_ms_derived", "derived step time"))
            out[name] = Series(name, label, "ms", "lower", derived_ms(clean),
                               np.ones(len(clean)), "1000 × accept len × running_req / gen "
                               "throughput, clean windows")
    return out
