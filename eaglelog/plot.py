"""Figures from Python: one function per picture ``eaglelog plot --kind`` and the HTML report draw,
each returning a matplotlib ``Figure`` (docs/api.md, "Figures").

    >>> import eaglelog, eaglelog.plot
    >>> fig = eaglelog.plot.timeline("server.log")            # a path, a list, or a ParsedLog
    >>> r = eaglelog.breakeven("server.log", baseline_toks=90)
    >>> fig = eaglelog.plot.breakeven(r)                      # a result of the library …
    >>> fig = eaglelog.plot.breakeven("server.log", baseline_toks=90)   # … or the logs
    >>> eaglelog.plot.save(fig, "breakeven.svg")              # the CLI's deterministic bytes

Each function takes either the analysis result it draws (``eaglelog.breakeven(...)``,
``eaglelog.summarize(...)``, …, a ``Runs`` or a list of runs) or the logs themselves (a path, a
list of paths or a ``ParsedLog``) with the keyword arguments of that analysis.  This module is a
thin facade over ``eaglelog.report.plot``: matplotlib (``pip install 'eaglelog[plot]'``) is
imported on the first figure, not on import; without it a figure is a one-line
``eaglelog.errors.MissingDependency`` naming the extra.  Figures are built with the object API
(no pyplot state, no GUI backend): in a notebook, show one by leaving it as a cell's value.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["KINDS", "timeline", "phases", "breakeven", "sweep", "compare", "requests",
           "latency", "acceptance", "schedule", "caption", "save"]

# every picture: the CLI's ``plot --kind`` ones (eaglelog.report.plot.KINDS), then those of
# ``acceptance --plot`` and ``schedule --plot`` (a test keeps them in step)
KINDS = ("timeline", "phases", "breakeven", "sweep", "compare", "requests", "latency",
         "acceptance", "schedule")


def _figures():
    from .report import plot as figures
    figures._mpl()            # a missing matplotlib is said before any log is read
    return figures


def _is_logs(x) -> bool:
    """Whether ``x`` names logs (a path, a list of paths, a ParsedLog) rather than a result."""
    from .api import ParsedLog

    if isinstance(x, (str, os.PathLike, ParsedLog)):
        return True
    return isinstance(x, (list, tuple)) and bool(x) and \
        all(isinstance(p, (str, os.PathLike)) for p in x)


def _runs(x) -> list:
    """The runs of a ``Runs`` result, of a list of results, or the one result."""
    from .library import Runs

    if isinstance(x, Runs):
        return list(x.runs)
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            out += _runs(item)
        return out
    return [x]


def _no_kwargs(kind: str, kwargs: dict) -> None:
    if kwargs:
        raise TypeError(f"eaglelog.plot.{kind}: keyword arguments ({', '.join(kwargs)}) are "
                        "for the logs: given a result, the figure draws that result as it is")


def _of(kind: str, result, kwargs: dict, analysis: str | None = None):
    """``result`` as given (then without keyword arguments), or, given logs, the library's
    analysis ``analysis`` (default: ``kind``) of them with ``kwargs``."""
    from . import library

    if _is_logs(result):
        return getattr(library, analysis or kind)(result, **kwargs)
    _no_kwargs(kind, kwargs)
    return result


def timeline(log, **kwargs: Any) -> "Figure":
    """Accept length, decode throughput, running requests and the profiler's cycle time over
    time, one line per input and rank; idle gaps shaded, restarts marked.  ``log``: a path, a
    list of paths or a ParsedLog; ``kwargs``: those of ``eaglelog.parse``-like selection
    (``since``, ``until``, ``startup``, ``engine``, ``base_date``)."""
    from .library import load

    figures = _figures()
    return figures.timeline_figure(load(log, **kwargs))


def phases(summaries, **kwargs: Any) -> "Figure":
    """The cycle breakdown per run as stacked bars.  ``summaries``: ``eaglelog.summarize(...)``
    (or a list of its runs), or logs and summarize's keyword arguments."""
    figures = _figures()
    return figures.phases_figure(_runs(_of("phases", summaries, kwargs, "summarize")))


def breakeven(results, **kwargs: Any) -> "Figure":
    """Measured accept length against the break-even band, per run (per batch size with a
    baseline log).  ``results``: ``eaglelog.breakeven(...)`` or a list of its runs, or logs
    and breakeven's keyword arguments (``baseline_toks=`` or ``baseline_log=``; with a
    baseline log the figure is per batch size, as ``eaglelog plot --kind breakeven``)."""
    figures = _figures()
    if _is_logs(results) and kwargs.get("baseline_log") is not None:
        kwargs.setdefault("by_batch", True)
    return figures.breakeven_figure(_runs(_of("breakeven", results, kwargs)))


def sweep(result, **kwargs: Any) -> "Figure":
    """The per-stream rate against the config key that varies between runs, with intervals.
    ``result``: ``eaglelog.sweep(...)``, or logs and sweep's keyword arguments."""
    figures = _figures()
    return figures.sweep_figure(_of("sweep", result, kwargs))


def compare(result, **kwargs: Any) -> "Figure":
    """Each metric's ratio to the first run, with its interval.  ``result``:
    ``eaglelog.compare(...)``, or logs (at least two runs) and compare's keyword arguments."""
    figures = _figures()
    return figures.compare_figure(_of("compare", result, kwargs))


def requests(result, **kwargs: Any) -> "Figure":
    """The accept length of every request per group, and against its output length.
    ``result``: ``eaglelog.requests(...)``, or logs and requests' keyword arguments (``by``
    defaults to what ``eaglelog plot --kind requests`` groups by)."""
    from . import library

    figures = _figures()
    if _is_logs(result) and "by" not in kwargs:
        from .analysis.requests import auto_by
        result = library.load(result, engine=kwargs.get("engine", "auto"))
        kwargs["by"] = auto_by(result)
    return figures.requests_figure(_of("requests", result, kwargs))


def latency(result, baseline=None, *, slo=None, part: str = "all", **kwargs: Any) -> "Figure":
    """Latency and goodput against the load, speculation vs baseline (``eaglelog plot --kind
    latency``): TTFT and TPOT p50/p99 with their intervals, and goodput under ``slo`` with its
    interval (per-stream tok/s without an SLO), the crossover load marked.  ``result``:
    ``eaglelog.latency(...)``, or the speculative load-test files (a path or a list) with
    ``baseline=`` the baseline's and latency's keyword arguments (``slo``, ``attainment``,
    ``confidence``, ``resamples``, ``seed``).  ``part``: ``"all"`` (three panels),
    ``"percentiles"`` (TTFT and TPOT) or ``"goodput"`` — the report draws the last two.

        >>> fig = eaglelog.plot.latency(glob.glob("spec-*.json"),
        ...                             baseline=glob.glob("base-*.json"), slo="ttft=2s")
    """
    from . import library
    from .analysis.latency import LatencyResult

    figures = _figures()
    if not isinstance(result, LatencyResult):
        if baseline is None:
            raise TypeError("eaglelog.plot.latency: give the baseline's load-test files "
                            "(baseline=...) with the speculative ones, or a LatencyResult")
        result = library.latency(result, baseline, slo=slo, **kwargs)
    else:
        _no_kwargs("latency", {**kwargs, **({"baseline": baseline} if baseline is not None
                                            else {}), **({"slo": slo} if slo is not None
                                                         else {})})
    return figures.latency_figure(result, part)


def acceptance(result, **kwargs: Any) -> "Figure":
    """P(accept ≥ i) against the draft position i, and the conditional rates (``eaglelog
    acceptance --plot``).  ``result``: ``eaglelog.acceptance(...)``, or logs and its keyword
    arguments."""
    from .report.acceptance import acceptance_figure

    _figures()
    return acceptance_figure(_of("acceptance", result, kwargs))


def schedule(result, **kwargs: Any) -> "Figure":
    """The per-stream rate against batch size for each num_steps, and the chosen schedule
    (``eaglelog schedule --plot``).  ``result``: ``eaglelog.schedule(...)``, or logs and its
    keyword arguments."""
    from .report.schedule import schedule_figure

    _figures()
    return schedule_figure(_of("schedule", result, kwargs))


def caption(fig: "Figure") -> str:
    """What a figure draws, in a sentence (the HTML report's caption under it)."""
    from .report.plot import caption as _caption
    return _caption(fig)


def save(fig: "Figure", path, fmt: str | None = None) -> None:
    """Write ``fig`` to ``path`` (.png, .svg or .pdf; or a binary file object and ``fmt``):
    the same figure gives the same bytes, as ``eaglelog plot -o``."""
    from .report.plot import save_figure
    save_figure(fig, os.fspath(path) if isinstance(path, os.PathLike) else path, fmt)
