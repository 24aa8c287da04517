"""The public analyses (``eaglelog.breakeven``, ``summarize`` and the rest) take plain
arguments and return result objects, and the CLI calls exactly these; the reading they start
from is api.py's (``parse``, ``load``: inputs into a ParsedLog, no analysis).

Layer 7 (docs/dev/architecture.md): above the analyses it dispatches to, below report/ and cli/.

    >>> import eaglelog
    >>> r = eaglelog.breakeven("server.log", baseline_toks=90)
    >>> r.speedup                       # one run: its fields are the result's
    Estimate(estimate=0.931, ci_low=0.913, ci_high=0.949, ...)
    >>> r.verdict, r.to_dict()["runs"][0]["verdict"]
    ('below', 'below')
    >>> r.to_frame()                    # one row per run (and per batch size with by_batch)

``logs`` is a path, a list of paths (local, ``host:path``, compressed, ``http://…/metrics``) or a
``ParsedLog`` (``eaglelog.parse``).  A log with several server start-ups (or adaptive-speculation
configurations) holds several runs: a :class:`Runs` result lists them (``r.runs``, ``r[0]``,
``len(r)``); attribute access on it works when it holds exactly one.  ``.to_dict()`` is the JSON
the CLI prints with ``-f json``; ``.to_frame()`` its flat table (``-f csv``).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .errors import EaglelogError

__all__ = ["Runs", "summarize", "summary", "breakeven", "reconcile", "compare", "sweep",
           "requests", "compare_paired", "compare_by_batch", "acceptance", "whatif",
           "schedule", "latency", "load", "make_baseline"]

# analyses that live whole in their own module (they take plain arguments already): the
# library hands out those functions themselves, docstrings and all
_ELSEWHERE = {"requests": "analysis.requests", "compare_paired": "analysis.requests",
              "compare_by_batch": "analysis.batch_compare",
              "acceptance": "analysis.acceptance", "whatif": "analysis.whatif",
              "schedule": "analysis.schedule", "latency": "analysis.latency"}


def __getattr__(name: str):
    if name in _ELSEWHERE:
        import importlib
        return getattr(importlib.import_module("." + _ELSEWHERE[name], __package__), name)
    raise AttributeError(name)


# ----------------------------------------------------------------------------- inputs

# (both live below the analyses: api.load, baseline.make_baseline; the library's names for
# them stay)
from .api import load  # noqa: E402,F401
from .baseline import make_baseline  # noqa: E402,F401


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class Runs(Sequence):
    """The results of one analysis over every run of the inputs (one per input and start-up),
    and the runs that could not be analysed (``errors``: one message each)."""

    command: str
    runs: tuple
    confidence: float
    errors: tuple[str, ...] = ()
    rows_of: Callable[[Any], list[dict]] | None = field(default=None, repr=False,
                                                        compare=False)
    # each run's server start-up (1, 2, …; 0 before the first) where an input holds several,
    # else None: the ``startup`` column of to_frame()
    startups: tuple = field(default=(), repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, i):
        return self.runs[i]

    def __getattr__(self, name: str):
        # the one run's fields (r.speedup, r.verdict) when there is exactly one
        if name.startswith("__") or name in ("runs", "command", "confidence", "errors",
                                             "rows_of", "startups"):
            raise AttributeError(name)
        runs = object.__getattribute__(self, "runs")
        if len(runs) == 1:
            return getattr(runs[0], name)
        raise AttributeError(f"{name!r}: this result holds {len(runs)} runs "
                             f"({', '.join(r.source for r in runs)}); use .runs[i].{name}")

    def to_dict(self) -> dict:
        """The JSON of ``eaglelog COMMAND -f json``: one shape whatever the input holds."""
        return {"command": self.command, "confidence": self.confidence,
                "runs": [r.to_dict() for r in self.runs], "errors": list(self.errors)}

    def to_frame(self):
        """One row per run (and per batch-size bucket where the analysis has them): the
        columns of ``-f csv``.  Where an input holds several server start-ups, a ``startup``
        column (1, 2, …; 0: the lines before the first) follows ``source``."""
        import pandas as pd
        several = any(k is not None for k in self.startups)
        rows = []
        for i, r in enumerate(self.runs):
            for row in (self.rows_of(r) if self.rows_of else [r.to_dict()]):
                if several and "source" in row:
                    k = self.startups[i] if i < len(self.startups) else None
                    row = {"source": row["source"], "startup": k,
                           **{c: v for c, v in row.items() if c != "source"}}
                rows.append(row)
        frame = pd.DataFrame(rows)
        for col in ("startup", "running_req", "running_req_max"):
            if col in frame.columns:
                frame[col] = frame[col].astype("Int64")
        return frame

    def windows(self):
        """The decode windows behind every run's figures (``windows()`` of each run), one
        frame with the run's label in a ``source`` column first (docs/api.md)."""
        import pandas as pd
        frames = []
        for r in self.runs:
            fn = getattr(r, "windows", None)
            if not callable(fn):
                raise AttributeError(f"windows: {self.command} results keep no decode windows")
            f = fn()
            f.insert(0, "source", r.source)
            frames.append(f)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


PARALLEL_RUNS = 64        # from this many runs on, the runs are analysed by processes
_JOB: tuple | None = None  # (analyse, log, plans) of the parallel map, inherited by the fork


def _analyse_one(i: int):
    """Run ``i`` of the job, in a forked worker, its tables built there: the result, or the
    EaglelogError it raised (another exception travels as itself)."""
    analyse, log, plans = _JOB
    label, plan = plans[i]
    try:
        res = labelled(analyse(log.unit(plan)), label, plan)
    except EaglelogError as e:
        return e
    return _without_windows(res) if log.single_use else res


def _without_windows(res):
    """A single-use log's result (the command line's: it prints, and never asks a result for
    its windows) without the decode windows and the whole-run fit behind it, which would cross
    from the worker as ~15 KB of pickled arrays a small log (~0.1 ms each way)."""
    def lean(r):
        drop = {k: None for k in ("evidence", "whole_fit") if getattr(r, k, None) is not None}
        return dataclasses.replace(r, **drop) if drop else r
    res = lean(res)
    be = getattr(res, "breakeven", None)
    if be is not None and hasattr(be, "evidence"):
        res = dataclasses.replace(res, breakeven=lean(be))
    return res


def _map_runs(analyse: Callable, log, plans: list, workers: int) -> list:
    """``analyse`` over the units, by ``workers`` forked processes when there are many runs
    (a few milliseconds each: thousands of small logs), fork is available and this process may
    have children (not a pool's daemonic worker) — each worker builds its units' tables
    itself; in order either way, and the same results (each run's analysis depends on that run
    only)."""
    global _JOB
    import multiprocessing as mp
    import threading

    def one(item):
        label, plan = item
        try:
            return labelled(analyse(log.unit(plan)), label, plan)
        except EaglelogError as e:
            return e
    from ._cores import may_start_processes
    if workers <= 1 or len(plans) < PARALLEL_RUNS or not may_start_processes():
        return [one(p) for p in plans]
    for t in threading.enumerate():      # no thread may hold an import lock across the fork
        if t.name == "eaglelog-preload":
            t.join()
    log.unit(plans[0][1])                # the shared per-input row maps, built before the fork
    _JOB = (analyse, log, plans)
    import gc
    # the parent's objects (the tables of thousands of logs) out of the workers' collections:
    # a collection in a worker would write to every one of them and copy their pages (the
    # fork's copy-on-write), a share of each small log's cost
    gc.freeze()
    try:
        with mp.get_context("fork").Pool(min(workers, len(plans)),
                                         initializer=_one_thread) as pool:
            return pool.map(_analyse_one, range(len(plans)),
                            chunksize=max(1, len(plans) // (8 * workers)))
    finally:
        _JOB = None
        gc.unfreeze()


def _one_thread():
    """A forked worker's fit passes on its own thread: the workers already use the cores."""
    from .analysis import rate
    rate.set_threads(1)


WHOLE_RUN = ("breakeven", "summary")     # also the whole run of a run whose config changed
MIXED_NOTE = ("the whole run across its configurations (steps {steps}, changed at run time "
              "{n} times): the per-stream rate, the speedup and the verdict are the run's as it "
              "ran; the cycle, the accept length and the break-even are averages over the "
              "configurations (each one's own figures follow where its segments allow)")


def labelled(res, label: str, plan: tuple):
    """A unit's result named by its label; a whole run across configurations says so."""
    from .api import WholeRun
    res = dataclasses.replace(res, source=label)
    seg = plan[2]
    if isinstance(seg, WholeRun) and hasattr(res, "notes"):
        res = dataclasses.replace(res, notes=(MIXED_NOTE.format(
            steps=", ".join(str(k) for k in seg.mixed), n=len(seg.path) - 1),)
            + tuple(res.notes))
    return res


def each_run(log, analyse: Callable, command: str, confidence: float,
             on_error: Callable[[str], None] | None = None, workers: int = 1) -> Runs:
    """``analyse`` on every run of the log (a restarted server is a new run: its config and
    numbers are never pooled).  With several runs, one that cannot be analysed is an entry of
    ``errors`` (and ``on_error(message)``); the others are still answered.  ``workers`` > 1:
    many runs are analysed by that many forked processes (the same results, in order)."""
    plans = log.unit_plans(whole=command in WHOLE_RUN)
    if not plans:
        raise EaglelogError("no input holds decode lines or EAGLE3_PROF blocks to analyse")
    if len(plans) == 1:
        label, plan = plans[0]
        unit = log.unit(plan)
        if log.single_use:
            # the one run takes the decode, prefill and profiler-phase tables over: the log lets
            # them go now, the run once it has read them (breakeven.run_windows, summary's
            # breakdown; mark_single_use)
            unit.mark_single_use()
            for name in ("decode", "prefill", "prof_phases"):
                if name in log.tables and log is not unit:
                    log.release(name)
        return Runs(command, (labelled(analyse(unit), label, plan),),
                    confidence, rows_of=ROWS.get(command), startups=(plan[1],))
    out, errors, first, ups = [], [], None, []
    for (label, plan), res in zip(plans, _map_runs(analyse, log, plans, workers)):
        if isinstance(res, EaglelogError):
            first = first or res
            msg = str(res)
            msg = msg if msg.startswith(label + ": ") else f"{label}: {msg}"
            errors.append(msg)
            if on_error is not None:
                on_error(msg)
        else:
            out.append(res)
            ups.append(plan[1])
    if not out:
        raise first
    return Runs(command, tuple(out), confidence, tuple(errors), ROWS.get(command), tuple(ups))


# ----------------------------------------------------------------------------- flat rows

def breakeven_rows(r) -> list[dict]:
    """Flat rows (csv/markdown): the overall result (``scope`` 'all', no ``running_req``), then
    one per batch bucket (``scope`` 'bucket', ``running_req`` its batch size; a bucket of
    several sizes, '4–7' beyond 16 sizes, adds ``running_req_max``)."""
    from .analysis.breakeven import ESTIMATES as keys

    ranges = any(not b.batch.isdigit() for b in (r.by_batch or ()))
    # the mean context per running request (#token / #running-req) where the log prints it
    ctx = any(getattr(b, "context", None) is not None for b in (r.by_batch or ()))

    from .analysis.rate import bucket_range

    def flat(batch, obj, verdict):
        lo, hi = bucket_range(batch)
        row = {"source": r.source, "scope": "all" if batch is None else "bucket",
               "running_req": lo}
        if ranges:
            row["running_req_max"] = hi
        if ctx:
            row["context"] = getattr(obj, "context", None) if batch is not None else None
        for k in keys:
            e = getattr(obj, k)
            row.update({k: e.estimate, f"{k}_ci_low": e.ci_low, f"{k}_ci_high": e.ci_high})
        row.update({"confidence": r.confidence, "verdict": verdict})
        return row
    rows = [flat(None, r, r.verdict)]
    rows += [flat(b.batch, b, b.verdict) for b in (r.by_batch or ())]
    return rows


def summary_rows(s) -> list[dict]:
    row = {"source": s.source, **{f"config_{k}": v for k, v in s.config.items()}}
    for name, e in (("cycle_ms", s.cycle_ms), ("accept_len_sglang", s.accept_sglang),
                    ("accept_len_profiler", s.accept_profiler),
                    ("cycle_derived_ms", s.cycle_derived), ("per_stream_tok_s", s.eff_tok_s)):
        row.update({name: e.estimate if e else None, f"{name}_ci_low": e.ci_low if e else None,
                    f"{name}_ci_high": e.ci_high if e else None})
    row["aggregate_tok_s"] = s.throughput_all
    for p in s.phases:
        row[f"phase_{p.phase}_ms"] = p.ms_per_cycle.estimate
    row["bottleneck"] = s.bottleneck
    if s.breakeven:
        row.update({"breakeven_accept_len": s.breakeven.breakeven_accept_len.estimate,
                    "speedup": s.breakeven.speedup.estimate, "verdict": s.breakeven.verdict})
    return [row]


def reconcile_rows(r) -> list[dict]:
    return [{"source": r.source, "profiler_accept_len": r.profiler_accept_len.estimate,
             "sglang_accept_len": r.sglang_accept_len.estimate,
             "ratio": r.ratio.estimate, "ratio_ci_low": r.ratio.ci_low,
             "ratio_ci_high": r.ratio.ci_high,
             "explained_by": ", ".join(f.factor for f in r.findings
                                       if f.verdict == "explains") or None}]


ROWS = {"breakeven": breakeven_rows, "summary": summary_rows, "reconcile": reconcile_rows}


# ----------------------------------------------------------------------------- the analyses

def breakeven(logs, *, baseline_toks=None, baseline_log=None, baseline=None,
              confidence: float = 0.95,
              by_batch: bool = False, cycle_from: str = "auto", skip_warmup="auto",
              since=None, until=None, startup: int | None = None, engine: str = "auto",
              base_date=None, on_error=None, workers: int = 1,
              adaptive_config: str | None = None) -> Runs:
    """Is speculation paying off?  Break-even accept length and projected speedup of every run,
    against ``baseline_toks`` (tokens/s of one request stream without speculation: 90,
    '90±3', '1:90,8:70' or {1: 90, 8: 70}) or ``baseline_log`` (a run without speculation).

        >>> r = eaglelog.breakeven("server.log", baseline_toks=90)
        >>> r.verdict, r.speedup.estimate, r.speedup.ci_low, r.speedup.ci_high
        ('below', 0.931, 0.913, 0.949)

    ``by_batch``: also per #running-req bucket (``r.by_batch``).  ``cycle_from``: 'auto',
    'prof' or 'decode'.  ``skip_warmup``: 'auto', or the number of leading decode windows to
    leave out.  ``adaptive_config``: an SGLang adaptive run's --speculative-adaptive-config
    file — each batch bucket then says the K it ran.  The model: docs/statistics.md."""
    from .analysis.breakeven import breakeven as _breakeven

    if adaptive_config is not None:       # a bad file: one error, before any run
        from .analysis.adaptive_slots import load_file
        load_file(adaptive_config)
    base = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                     base_date=base_date)
    exports = exports_in(logs, confidence, "breakeven")
    if exports:                           # eaglelog exports: from their estimates
        from .analysis.from_export import breakeven as of_export
        return Runs("breakeven", tuple(of_export(r, base, confidence) for r in exports),
                    confidence, rows_of=ROWS.get("breakeven"))
    log = load(logs, engine=engine, base_date=base_date, since=since, until=until,
               startup=startup)
    return each_run(log, lambda sub: _breakeven(sub, base, confidence=confidence,
                                                by_batch=by_batch, cycle_from=cycle_from,
                                                warmup=skip_warmup,
                                                adaptive_config=adaptive_config),
                    "breakeven", confidence, on_error, workers)


def summarize(logs, *, baseline_toks=None, baseline_log=None, baseline=None,
              confidence: float = 0.95,
              skip_warmup="auto", since=None, until=None, startup: int | None = None,
              engine: str = "auto", base_date=None, on_error=None, workers: int = 1) -> Runs:
    """One summary per run: config, cycle breakdown, accept lengths, the per-stream rate and
    the aggregate throughput, and with a baseline the break-even verdict.

        >>> s = eaglelog.summarize("server.log", baseline_toks=90)
        >>> s.bottleneck, s.cycle_ms.estimate, s.breakeven.verdict
        ('Target verify', 27.28, 'below')
    """
    from .analysis.summary import summarize as _summarize

    base = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                     base_date=base_date, required=False)
    exports = exports_in(logs, confidence)
    if exports:
        from .analysis.summary import summarize_export
        return Runs("summary", tuple(summarize_export(run, baseline=base, confidence=confidence)
                                     for run in exports), confidence,
                    rows_of=lambda r: r.rows())
    log = load(logs, engine=engine, base_date=base_date, since=since, until=until,
               startup=startup)
    return each_run(log, lambda sub: _summarize(sub, baseline=base, confidence=confidence,
                                                warmup=skip_warmup),
                    "summary", confidence, on_error, workers)


summary = summarize


def exports_in(logs, confidence: float = 0.95, command: str = "summary") -> list:
    """The eaglelog exports (``eaglelog export``: local .json files) among ``logs``: all of
    them, or none (a UsageProblem when logs and exports are mixed)."""
    from .api import ParsedLog

    if isinstance(logs, ParsedLog):
        return []
    specs = [os.fspath(logs)] if isinstance(logs, (str, os.PathLike)) else \
        [os.fspath(p) for p in logs]
    found = [_export_at(s, confidence) for s in specs]
    if not any(e is not None for e in found):
        return []
    if any(e is None for e in found):
        from .errors import UsageProblem
        raise UsageProblem(f"{command} reads either logs or eaglelog exports, not both in one "
                           "call")
    return found


def _export_at(spec: str, confidence: float):
    """The eaglelog export at ``spec`` (a local .json file), or None."""
    if spec == "-" or not spec.endswith(".json") or not os.path.isfile(spec):
        return None
    from .analysis.compare import load_export
    return load_export(spec, confidence)


def reconcile(logs, *, confidence: float = 0.95, skip_warmup="auto", since=None, until=None,
              startup: int | None = None, engine: str = "auto", base_date=None,
              on_error=None, workers: int = 1) -> Runs:
    """Why the profiler's accept length differs from SGLang's: both with intervals, their
    ratio, the explanations the log can test, and the value break-even uses.

        >>> r = eaglelog.reconcile("server.log")
        >>> r.ratio.estimate, [f.factor for f in r.findings if f.verdict == "explains"]
        (0.499, [])
    """
    from .analysis.reconcile import reconcile as _reconcile

    log = load(logs, engine=engine, base_date=base_date, since=since, until=until,
               startup=startup)
    return each_run(log, lambda sub: _reconcile(sub, confidence=confidence,
                                                warmup=skip_warmup),
                    "reconcile", confidence, on_error, workers)


def compare(logs, *, baseline_toks=None, baseline_log=None, baseline=None,
            confidence: float = 0.95, test: str = "welch", min_effect: float = 0.0,
            skip_warmup="auto", since=None, until=None, startup: int | None = None,
            engine: str = "auto", base_date=None, keep_going: bool = False, reader=None):
    """Every run against the first (the reference): the primary metric (the speedup with a
    baseline, else the per-stream rate) in words — better / worse / no detectable difference —
    and the secondary metrics with Holm-adjusted p-values.

        >>> c = eaglelog.compare(["before.log", "after.log"])
        >>> [(m.metric, m.verdict) for m in c.metrics if m.role == "primary"]
        [('eff_tok_s', 'worse (per-stream rate 1.09x lower)')]

    ``logs``: a ParsedLog, or paths in order, each a log or an eaglelog export (``eaglelog
    export``: a ``.json`` file), so last week's run can be the reference; the logs are read
    once (``reader(paths)``: how, default ``load``), a log given twice is the same run twice.
    ``min_effect``: the smallest relative difference that matters (0.02: 2 %)."""
    from .analysis.compare import compare as _compare

    base = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                     base_date=base_date, required=False)

    def read(paths):
        if reader is not None:
            return reader(paths)
        return load(paths, engine=engine, base_date=base_date, keep_going=keep_going,
                    since=since, until=until, startup=startup)
    runs = compare_runs(logs, read, engine, base, confidence, skip_warmup)
    if len(runs) < 2:
        from .errors import UsageProblem
        raise UsageProblem("compare needs at least two runs: two logs (or one log that holds "
                           "two server start-ups)")
    return _compare(runs, test=test, confidence=confidence, min_effect=min_effect,
                    baseline=base)


def compare_runs(logs, read, engine, baseline, confidence, skip_warmup="auto") -> list:
    """The runs of ``logs`` (a ParsedLog, or paths of logs and eaglelog exports, in order) as
    compare runs; the logs are read once by ``read(paths)``."""
    from .analysis.compare import load_export, runs_from_log
    from .api import ParsedLog

    if isinstance(logs, ParsedLog):
        return runs_from_log(logs, engine, baseline, confidence, skip_warmup)
    specs = [os.fspath(logs)] if isinstance(logs, (str, os.PathLike)) else \
        [os.fspath(p) for p in logs]
    items = []
    for spec in specs:
        exp = load_export(spec, confidence) if spec != "-" and os.path.isfile(spec) else None
        items.append(exp if exp is not None else spec)
    paths = list(dict.fromkeys(i for i in items if isinstance(i, str)))
    by_name: dict[str, list] = {}
    if paths:
        for r in runs_from_log(read(paths), engine, baseline, confidence, skip_warmup):
            by_name.setdefault(r.label.split(" [start-up")[0], []).append(r)
    out = []
    for item in items:
        if isinstance(item, str):
            from .live.metrics import runs_named      # a metrics source holds runs of its own names
            out += by_name.get(item, []) or runs_named(by_name, item)
        else:
            out.append(item)
    return out


def sweep(logs, *, keys: Iterable[str] | None = None, baseline_toks=None, baseline_log=None,
          baseline=None, confidence: float = 0.95, skip_warmup="auto", keep_going: bool = False,
          since=None, until=None, startup: int | None = None, engine: str = "auto",
          base_date=None, exports: Sequence = ()):
    """Which config wins: one row per run sorted by the per-stream rate; ``tied`` rows cannot be
    told apart from the best.  An eaglelog export among ``logs`` (or in ``exports``, as
    compare.load_export gives them) is a row of its own.

        >>> s = eaglelog.sweep(sorted(glob.glob("steps*.log")), baseline_toks=90)
        >>> [(r.keys["speculative_num_steps"], r.mark) for r in s.rows][:2]
        [(5, 'best'), (7, 'tied')]
    """
    from .analysis.sweep import sweep as _sweep
    from .api import ParsedLog

    base = baseline or make_baseline(baseline_toks, baseline_log, engine=engine,
                                     base_date=base_date, required=False)
    # eaglelog exports among the inputs are rows of their own (analysis/from_export.py)
    exports, rest = list(exports), logs
    if not isinstance(logs, ParsedLog) and logs is not None:
        specs = [os.fspath(logs)] if isinstance(logs, (str, os.PathLike)) else \
            [os.fspath(p) for p in logs]
        found = [_export_at(s, confidence) for s in specs]
        exports += [e for e in found if e is not None]
        rest = [s for s, e in zip(specs, found) if e is None]
    log = load(rest, engine=engine, base_date=base_date, keep_going=keep_going, since=since,
               until=until, startup=startup) if rest is not None and (
        isinstance(rest, ParsedLog) or len(rest)) else None
    return _sweep(log, keys=list(keys) if keys else None, baseline=base, confidence=confidence,
                  keep_going=keep_going, warmup=skip_warmup, exports=tuple(exports))
