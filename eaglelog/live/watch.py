"""``eaglelog watch``: a live view per instance of /metrics endpoints or a Prometheus server,
and alert conditions over a stated window for cron and CI.

Every ``interval`` seconds each /metrics endpoint is scraped (a Prometheus source is asked for
the last ``window`` seconds); the samples become the tables of eaglelog/live/metrics.py and the view
of each instance is computed by the library's own analyses over the last ``window`` seconds:
accept length (request-step weighted), per-position acceptance (vLLM), the rate one request
stream gets and, with a baseline, the speedup with its interval (``breakeven``).

An alert ``METRIC OP VALUE`` (``speedup<1``, ``accept_len<1.5``; metrics: accept_len,
accept_rate, speedup, rate (tok/s per stream), throughput (tok/s); ops < <= > >=) **fires** for
an instance when the metric computed over the windows that ended in the last ``alert_for``
seconds of its samples satisfies it (the pooled value over that span, not one sample).

Latency alerts (``tpot_p99>50ms``; ttft_p50/p90/p99, tpot_p50/p90/p99; VALUE in ms or s, a bare
number is ms) read the engines' TTFT and TPOT histograms (eaglelog/live/histograms.py) over the same
span, on **speculating instances only**.  A histogram places the quantile in one bucket,
(lower, upper], and no closer: the alert **fires** (exit 3) only when the whole bucket satisfies
the condition (for ``>``: even its lower edge is at or above the SLO, so the quantile certainly
exceeds it); when the SLO lies inside the bucket it is a line ``ALERT? … possibly holds`` that
names the bucket and does not fire.

    >>> from eaglelog.live.watch import Watcher, Alert
    >>> w = Watcher(["http://gpu7:30000/metrics"], alerts=[Alert.parse("accept_len<1.5")])
    >>> view = w.refresh()          # scrape now; a view once two scrapes exist
    >>> view.firings
"""
from __future__ import annotations

import json
import math
import operator
import re
import time
from dataclasses import dataclass

from ..errors import EaglelogError
from .histograms import EMPTY as _NO_LATENCY
from .histograms import NOTE as LATENCY_NOTE
from .histograms import LatencySummary, summarize
from .metrics import CELL, Recorder, _spec_params, cell, parse_duration, parsed_log, scrape_all

__all__ = ["Alert", "Firing", "InstanceView", "WatchView", "Watcher", "pooled"]

LATENCY = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p50", "tpot_p90", "tpot_p99")
METRICS = ("accept_len", "accept_rate", "speedup", "rate", "throughput") + LATENCY
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_ALERT = re.compile(r"^\s*([a-z_0-9]+)\s*(<=|>=|<|>)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)"
                    r"\s*(ms|s)?\s*$")


@dataclass(frozen=True)
class Alert:
    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> "Alert":
        m = _ALERT.match(text)
        if not m or m.group(1) not in METRICS:
            raise ValueError(f"{text!r} is not a condition: write METRIC OP VALUE, e.g. "
                             f"'speedup<1', 'accept_len<1.5' or 'tpot_p99>50ms' (metrics: "
                             f"{', '.join(METRICS)}; ops: < <= > >=)")
        value, unit = float(m.group(3)), m.group(4)
        if unit and m.group(1) not in LATENCY:
            raise ValueError(f"{text!r}: {m.group(1)} takes a plain number (a unit only for "
                             f"the latency metrics {', '.join(LATENCY)})")
        return cls(m.group(1), m.group(2), value * 1000 if unit == "s" else value)

    @property
    def latency(self) -> bool:
        """A quantile of a latency histogram (value in ms)."""
        return self.metric in LATENCY

    def holds(self, v: float | None) -> bool:
        return v is not None and math.isfinite(v) and _OPS[self.op](v, self.value)

    def judge(self, summary: LatencySummary | None):
        """(the bucket quantile, 'certain' | 'possible' | None) of a latency alert."""
        if summary is None:
            return None, None
        metric, p = self.metric.split("_p")
        bq = summary.get(metric, int(p) / 100)
        return bq, (bq.holds(self.op, self.value / 1000) if bq is not None else None)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}" + ("ms" if self.latency else "")


@dataclass(frozen=True)
class Firing:
    source: str
    alert: str
    value: float
    span_s: float
    windows: int
    at: str                        # the end of the span (time of the latest sample)
    certain: bool = True           # False: a latency alert whose SLO lies inside the bucket
    bounds: str | None = None      # a latency alert: where its quantile lies ('in (10, 15] ms')
    requests: int | None = None    # a latency alert: the requests its histogram counted

    def line(self) -> str:
        name = self.alert.split('<')[0].split('>')[0]
        span = (f"over the last {self.span_s:g} s ({self.windows} window"
                f"{'s' if self.windows != 1 else ''} to {self.at})")
        if self.bounds is None:
            return (f"ALERT {cell(self.source)}: {self.alert} holds: {name} = "
                    f"{self.value:.4g} {span}")
        slo = self.alert[len(name):].lstrip("<>=")
        where = f"{name} {self.bounds}"
        how = (f"holds: {where}" if self.certain else
               f"possibly holds: {where}, a bucket that holds {slo}: its counts cannot tell on "
               "which side the quantile lies")
        return (f"ALERT{'' if self.certain else '?'} {cell(self.source)}: {self.alert} {how} "
                f"(interpolated {self.value:.4g} ms; {self.requests} "
                f"request{'s' if self.requests != 1 else ''}) {span}")

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class InstanceView:
    source: str
    engine: str
    windows: int
    last: str | None
    accept_len: float | None
    per_position: tuple[float, ...] | None
    rate: float | None                 # tok/s one request stream gets
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    verdict: str | None
    throughput: float | None
    error: str | None = None
    latency: LatencySummary | None = None    # TTFT and TPOT quantiles over the view's span

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["per_position"] = list(self.per_position) if self.per_position else None
        lat = d.pop("latency")
        d.update(lat.flat() if lat is not None else _NO_LATENCY)
        return d


@dataclass(frozen=True)
class WatchView:
    at: float
    instances: tuple[InstanceView, ...]
    firings: tuple[Firing, ...] = ()
    notes: tuple[str, ...] = ()
    possible: tuple[Firing, ...] = ()        # latency alerts whose SLO lies inside the bucket

    def to_dict(self) -> dict:
        return {"at": self.at, "instances": [i.to_dict() for i in self.instances],
                "firings": [f.to_dict() for f in self.firings],
                "possible": [f.to_dict() for f in self.possible], "notes": list(self.notes)}

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame([i.to_dict() for i in self.instances])

    def text(self) -> str:
        """The human table."""
        from tabulate import tabulate
        rows = []
        for i in self.instances:
            if i.error:
                rows.append([cell(i.source), cell(i.engine or ""), "", "", "", "", "", "", "",
                             cell(f"error: {i.error}")])
                continue
            sp = ""
            if i.speedup is not None and math.isfinite(i.speedup):
                sp = f"{i.speedup:.3f}×"
                if i.speedup_low is not None:
                    sp += f" [{i.speedup_low:.3f}, {i.speedup_high:.3f}]"
            rows.append([cell(i.source), cell(i.engine), i.windows, _f(i.accept_len, 3),
                         " ".join(f"{p:.2f}" for p in i.per_position) if i.per_position else "",
                         _f(i.rate, 1), sp,
                         i.latency.cell("ttft") if i.latency else "",
                         i.latency.cell("tpot") if i.latency else "",
                         cell((i.verdict or "") + (f"  last {i.last[11:19]}" if i.last else ""))])
        head = ["instance", "engine", "windows", "accept_len", "per-position", "tok/s/stream",
                "speedup", "TTFT p99", "TPOT p99", "verdict"]
        out = tabulate(rows, head, disable_numparse=True) + "\n"
        if any(i.latency for i in self.instances):
            out += LATENCY_NOTE + "\n"
        for n in self.notes:
            out += f"note: {cell(n, 2 * CELL)}\n"
        return out


def _f(v, nd):
    return "" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def pooled(decode, spec=None) -> dict:
    """Request-step weighted accept length and rate, tokens/s and per-position acceptance of a
    run's decode rows (and vllm_spec rows)."""
    import numpy as np
    out = {"accept_len": None, "accept_rate": None, "throughput": None, "per_position": None}
    if decode is None or not len(decode):
        return out
    w = decode["drafts"].to_numpy(dtype=float, na_value=np.nan) if "drafts" in decode else \
        np.full(len(decode), np.nan)
    a = decode["accept_len"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(w) & np.isfinite(a) & (w > 0)
    if ok.any():
        out["accept_len"] = float(np.sum(w[ok] * a[ok]) / np.sum(w[ok]))
        if "accept_rate" in decode:
            r = decode["accept_rate"].to_numpy(dtype=float, na_value=np.nan)
            okr = ok & np.isfinite(r)
            if okr.any():
                out["accept_rate"] = float(np.sum(w[okr] * r[okr]) / np.sum(w[okr]))
    g = decode["gen_throughput"].to_numpy(dtype=float, na_value=np.nan)
    if np.isfinite(g).any():
        out["throughput"] = float(np.nanmean(g))
    if spec is not None and len(spec) and "per_position" in spec:
        acc, tot = None, 0.0
        for pp, d in zip(spec["per_position"], spec["drafts"]):
            if not isinstance(pp, str) or not d or not math.isfinite(float(d)):
                continue
            v = np.asarray(json.loads(pp), dtype=float)
            acc = v * d if acc is None else (acc + v * d if len(acc) == len(v) else acc)
            tot += float(d)
        if acc is not None and tot:
            out["per_position"] = tuple(float(x) for x in acc / tot)
    return out


class Watcher:
    """Reads the sources at each ``refresh`` and computes the views and firings."""

    def __init__(self, sources, *, baseline=None, window: float = 600.0, alerts=(),
                 alert_for: float | None = None, interval: float = 15.0, match=(),
                 confidence: float = 0.95):
        self.sources = [str(s) for s in sources]
        self.baseline = baseline
        self.window = float(window)
        self.alerts = [a if isinstance(a, Alert) else Alert.parse(a) for a in alerts]
        self.interval = float(interval)
        self.alert_for = float(alert_for) if alert_for else self.interval
        self.match = tuple(match)
        self.confidence = confidence
        self.rec = Recorder()
        self.endpoints = []
        self.proms = []
        for s in self.sources:
            url, params = _spec_params(s)
            if url.startswith("prom+"):
                self.proms.append((url, params))
            elif url.startswith(("http://", "https://")):
                self.endpoints.append(url)
            else:
                raise EaglelogError(f"{s}: watch reads http(s)://…/metrics endpoints and "
                                    "prom+http(s)://… Prometheus servers (for a log file: "
                                    "eaglelog summary --follow)")
        self.refreshes = 0
        self.answered = 0                 # refreshes in which some instance had a view

    def no_data(self) -> str | None:
        """After the refreshes: why no source gave a view (None when one did), one line: a
        gate (--alert with --count) must not pass on no data."""
        if self.answered:
            return None
        errs = [f"{src}: {err}" for src, err in self.rec.errors.items()]
        return (f"no source answered in {self.refreshes} refresh"
                f"{'es' if self.refreshes != 1 else ''}, so no condition could be checked"
                + (": " + cell("; ".join(errs), 2 * CELL) if errs else ""))

    def _read(self) -> tuple[Recorder, list]:
        from .metrics import current_limits
        diags: list = []
        # each scrape within its deadline (the limits' timeout, at most the interval, at least
        # 1 s): a late endpoint is its own error row, the others are still read
        for sc in scrape_all(self.endpoints, timeout=max(1.0, min(current_limits().timeout,
                                                                  self.interval))):
            self.rec.add_scrape(sc)
        span = max(self.window, self.alert_for) + 2 * self.interval
        latest = max((s.t[-1] for r in self.rec.runs.values() for s in r.series.values()
                      if s.t), default=None)
        if latest is not None:
            self.rec.trim(latest - span)
        rec = self.rec
        if self.proms:
            from . import prom
            rec = Recorder()
            rec.runs, rec.errors = dict(self.rec.runs), dict(self.rec.errors)
            rec.seen, rec.answered = set(self.rec.seen), set(self.rec.answered)
            for url, params in self.proms:
                prom.read_into(rec, url, match=params.get("match") or self.match,
                               since=span, diags=diags)
        return rec, diags

    def refresh(self) -> WatchView:
        self.refreshes += 1
        rec, diags = self._read()
        names = self.endpoints + [u for u, _ in self.proms]
        views, firings, notes, possible = [], [], [], []
        try:
            log = parsed_log(rec, names, diags, require=False)
        except EaglelogError as e:                 # pragma: no cover - require=False
            return WatchView(time.time(), (), (), (str(e),))
        for info in log.sources:
            if info.error and not any(info.counts.values()):
                if self.refreshes == 1 and "fewer than two samples" in info.error:
                    continue                       # the first scrape: no window yet
                views.append(InstanceView(info.name, info.engine or "", 0, None, None, None,
                                          None, None, None, None, None, None, error=info.error))
                continue
            sub = log.subset(info.name)
            view, fired, maybe, said = self._instance(info, sub)
            views.append(view)
            firings += fired
            possible += maybe
            notes += said
        for d in log.diagnostics:
            if d.kind in ("restart", "metrics") and d.severity != "error":
                notes.append(str(d))
        from ..stats import MIN_UNITS
        few = [v.source for v in views if v.verdict == "insufficient data" and
               0 < v.windows <= MIN_UNITS]
        if few:
            notes.append(f"{len(few)} view{'s' if len(few) > 1 else ''} of {MIN_UNITS} windows "
                         f"or fewer (each series' first is left out): no speedup interval (the "
                         "window holds --window / --interval scrapes of a /metrics source, "
                         "--window / the scrape interval of a Prometheus one): a longer "
                         "--window gives one")
        if any(not v.error for v in views):
            self.answered += 1
        return WatchView(time.time(), tuple(views), tuple(firings), tuple(dict.fromkeys(notes)),
                         tuple(possible))

    def _span(self, sub, seconds: float):
        """(sub-log, windows, first line): the windows that ended in the last ``seconds`` of
        the run's samples, and one window before them in the sub-log (the analyses leave each
        series' first window out); ``first line`` is the line_no of the first window inside."""
        import numpy as np
        from ..api import ParsedLog
        dec = sub.decode
        if not len(dec):
            return sub, 0, None
        ts = dec["timestamp"].to_numpy(dtype="datetime64[us]").view(np.int64) / 1e6
        lines = dec["line_no"].to_numpy(dtype=np.int64)
        inside = ts > np.nanmax(ts) - seconds + 1e-3
        if not inside.any():
            return sub, 0, None
        first = int(lines[inside].min())
        before = lines[~inside & (lines < first)]
        lo = int(before.max()) if len(before) else first
        tables = {}
        for t, df in sub.tables.items():
            if len(df) and "line_no" in df and t != "server_args":
                df = df[df["line_no"].to_numpy() >= lo].reset_index(drop=True)
            tables[t] = df
        return ParsedLog(tables, sub.sources, []), int(inside.sum()), first

    def _analyse(self, sub, first):
        """(breakeven result or None, pooled values over the lines from ``first``)."""
        from ..analysis.breakeven import breakeven
        from ..baseline import Baseline

        def part(df):
            return df[df["line_no"].to_numpy() >= first] if df is not None and len(df) and \
                first is not None else df
        p = pooled(part(sub.decode), part(sub.tables.get("vllm_spec")))
        base = self.baseline or Baseline.from_text("1")
        try:
            r = breakeven(sub, base, confidence=self.confidence)
        except (EaglelogError, ValueError, ZeroDivisionError, IndexError, KeyError):
            r = None
        return r, p

    def _instance(self, info, sub):
        dec = sub.decode
        last = str(dec["timestamp"].max()) if len(dec) else None
        v_sub, n_view, first = self._span(sub, self.window)
        r, p = self._analyse(v_sub, first)
        rate = sp = lo = hi = verdict = None
        if r is not None:
            e = r.eff_tok_s
            rate = e.estimate if e is not None else None
            if self.baseline is not None:
                sp, lo, hi, verdict = (r.speedup.estimate, r.speedup.ci_low, r.speedup.ci_high,
                                       r.verdict)
        view = InstanceView(info.name, info.engine or "", n_view, last, p["accept_len"],
                            p["per_position"], _fin(rate), _fin(sp), _fin(lo), _fin(hi), verdict,
                            p["throughput"], latency=_latency(sub, self.window)[0])
        fired, maybe, notes = [], [], []
        lat_alerts = [a for a in self.alerts if a.latency]
        if lat_alerts:
            cfg = sub.config(info.name)
            if cfg.get("speculative_algorithm"):
                summary, n_lat, at = _latency(sub, self.alert_for)
                for a in lat_alerts:
                    bq, how = a.judge(summary)
                    metric = a.metric.split("_")[0]
                    if bq is None:
                        n_req = getattr(summary, f"{metric}_requests", None)
                        notes.append(f"{a}: not checked on {cell(info.name, 120)}: " + (
                            f"no request observed in its {metric.upper()} histogram over the "
                            f"last {self.alert_for:g} s" if n_req == 0 else
                            f"it exposes no {metric.upper()} histogram"
                            + (" (sglang:request_time_per_output_token_seconds: SGLang "
                               "0.5.22 →; vllm:request_time_per_output_token_seconds: vLLM "
                               "#24015, 2025-09 →)" if metric == "tpot" else "")))
                        continue
                    if how is None:
                        continue
                    f = Firing(info.name, str(a), bq.value * 1000, self.alert_for, n_lat, at,
                               certain=how == "certain", bounds=bq.bounds_text(),
                               requests=bq.n)
                    (fired if how == "certain" else maybe).append(f)
            else:
                notes.append(f"{', '.join(str(a) for a in lat_alerts)}: checked on speculating "
                             "instances only; " + cell(info.name, 120) + " does not speculate")
        if self.alerts:
            a_sub, n, a_first = self._span(sub, self.alert_for)
            ar, ap = self._analyse(a_sub, a_first)
            vals = {"accept_len": ap["accept_len"], "accept_rate": ap["accept_rate"],
                    "throughput": ap["throughput"],
                    "rate": _fin(ar.eff_tok_s.estimate) if ar is not None and ar.eff_tok_s
                    else None,
                    "speedup": _fin(ar.speedup.estimate) if ar is not None and
                    self.baseline is not None else None}
            for a in self.alerts:
                if not a.latency and n and a.holds(vals[a.metric]):
                    fired.append(Firing(info.name, str(a), float(vals[a.metric]),
                                        self.alert_for, n, last[:19] if last else ""))
        return view, fired, maybe, notes


def _latency(sub, seconds: float):
    """(LatencySummary or None, windows, end) of the latency histograms' windows that ended
    in the last ``seconds`` of the instance's histogram samples."""
    import datetime as _dt
    df = sub.tables.get("latency_hist")
    if df is None or not len(df):
        return None, 0, ""
    t_end = df["t_end"].to_numpy(dtype=float)
    top = float(t_end.max())
    since = top - seconds + 1e-3
    n = len(set(t_end[t_end > since].tolist()))
    at = _dt.datetime.fromtimestamp(top).isoformat(sep=" ", timespec="seconds")
    return summarize(df, since=since), n, at


def _fin(v):
    return float(v) if v is not None and isinstance(v, (int, float)) and math.isfinite(v) \
        else None


def check_alert_metrics(alerts, baseline) -> None:
    """A speedup alert needs a baseline."""
    for a in alerts:
        if a.metric == "speedup" and baseline is None:
            raise EaglelogError(f"--alert {a}: a speedup needs the baseline (--baseline-toks or "
                                "--baseline-log)")


def parse_alerts(texts) -> list[Alert]:
    out = []
    for t in texts:
        try:
            out.append(Alert.parse(t))
        except ValueError as e:
            raise EaglelogError(f"--alert {e}") from None
    return out


__all__ += ["check_alert_metrics", "parse_alerts", "parse_duration"]
