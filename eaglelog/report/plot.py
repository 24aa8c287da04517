"""Pictures of the analysis results: one function per kind, each returning a matplotlib Figure.

    timeline   accept length, decode throughput and running requests over time (one line per
               input and scheduler rank, its own colour and line style in every panel), the
               profiler's cycle time (from 0 ms); idle gaps shaded, restarts marked, every line
               broken at both
    phases     the cycle breakdown per run as stacked bars (ms), each phase's share labelled,
               interval whiskers on TOTAL; sync-mode runs as phase shares (%), no cycle time
    breakeven  measured accept length with its interval against the break-even band (per batch
               size with a baseline log): where speculation stops paying
    sweep      effective tok/s against the varying config key, with intervals and the baseline
    compare    each metric's ratio changed / reference with its interval, 1.0 marked
    requests   the per-request accept length τ_r per group, and τ_r against output length
    latency    TTFT and TPOT p50/p99 and goodput against the load of a load test, speculation
               vs baseline, with intervals; the crossover load marked (analysis.latency)

The figures draw the numbers of the result objects the text commands print (summarize,
breakeven, sweep, compare, latency, the decode windows); nothing is recomputed here.  matplotlib
is an optional extra (``pip install 'eaglelog[plot]'``), imported on first use; figures are built
with the object API (no pyplot state, no GUI backend) and saved deterministically: the same input
gives the same SVG, PDF and PNG bytes.  ``caption(fig)`` is a sentence saying what a figure
draws (only what is drawn); matplotlib's warnings are kept on ``fig.eaglelog_warnings``, never
printed.
"""
from __future__ import annotations

import io
import math
import os
import re
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from ..errors import MissingDependency
from .blocks import num

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.breakeven import BreakevenResult
    from ..analysis.compare import CompareResult
    from ..analysis.requests import RequestsResult
    from ..analysis.summary import SummaryResult
    from ..analysis.sweep import SweepResult
    from ..api import ParsedLog

KINDS = ("timeline", "phases", "breakeven", "sweep", "compare", "requests", "latency")
FORMATS = ("png", "svg", "pdf")
INSTALL_HINT = ("plotting needs matplotlib: pip install 'eaglelog[plot]' "
                "(in a checkout: pip install '.[plot]')")

# Okabe & Ito (2008), the colour-blind-safe palette; declared once, used everywhere
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky blue": "#56B4E9",
             "bluish green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "reddish purple": "#CC79A7"}
# the order of lines and bar segments: strong colours first, yellow (low contrast on white) late
SERIES_COLOURS = tuple(OKABE_ITO[c] for c in ("blue", "orange", "bluish green", "vermillion",
                                              "reddish purple", "sky blue", "black", "yellow"))
GREY = "#999999"          # idle gaps, reference lines
BAND = OKABE_ITO["vermillion"]       # break-even band / baseline
MEASURED = OKABE_ITO["blue"]         # measured values
DIRECTION = {"better": OKABE_ITO["bluish green"], "worse": OKABE_ITO["vermillion"]}

STYLE = {
    "font.family": "DejaVu Sans",       # shipped with matplotlib: the same glyphs everywhere
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": None,            # set in _style() (needs cycler from matplotlib)
    "svg.fonttype": "none",             # text stays text: searchable, selectable, testable
    "svg.hashsalt": "eaglelog",          # stable ids: the same input gives the same SVG
    "pdf.fonttype": 42,
    "path.simplify": True,
}
DPI = 100


def _mpl():
    """matplotlib, or a one-line error naming the extra that installs it."""
    try:
        import matplotlib
        import matplotlib.figure
    except ImportError:
        raise MissingDependency(INSTALL_HINT) from None
    return matplotlib


def _style() -> dict:
    from cycler import cycler

    return {**STYLE, "axes.prop_cycle": cycler(color=list(SERIES_COLOURS))}


def _new_figure(width: float, height: float) -> "Figure":
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


class _Quiet:
    """Python warnings raised while a figure is built or saved (matplotlib's layout engine
    giving up, numpy on an all-NaN slice) are kept on the figure, ``fig.eaglelog_warnings``,
    and never printed: a library that never prints, a CLI whose stderr carries eaglelog's own
    lines only.  The figures are laid out so that the layout engine does not give up (tick
    labels shortened and wrapped); this is the net under that."""

    def __init__(self, fig: "Figure | None" = None):
        self.fig = fig

    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings(record=True)
        self.caught = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        if self.fig is not None and self.caught:
            kept = list(getattr(self.fig, "eaglelog_warnings", ()))
            kept += [str(w.message) for w in self.caught]
            self.fig.eaglelog_warnings = tuple(dict.fromkeys(kept))
        return False


def _styled(fn):
    """Build the figure under the eaglelog style (fonts, palette, grid), its warnings kept."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        mpl = _mpl()
        with _Quiet() as q, mpl.rc_context(_style()):
            fig = fn(*args, **kwargs)
        if q.caught:
            fig.eaglelog_warnings = tuple(dict.fromkeys(str(w.message) for w in q.caught))
        return fig
    return wrapper


# ----------------------------------------------------------------------------- saving

def format_of(path: str) -> str | None:
    """'png' / 'svg' / 'pdf' from a file name's suffix, None for anything else."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    return ext if ext in FORMATS else None


def _metadata(fmt: str, bare: bool = False) -> dict:
    from .. import __version__

    creator = f"eaglelog {__version__}"
    if fmt == "svg":
        if bare:   # inline in HTML: no RDF block, no namespace URIs
            return {"Date": None, "Creator": None, "Format": None, "Type": None}
        return {"Date": None, "Creator": creator}
    if fmt == "pdf":
        return {"CreationDate": None, "ModDate": None, "Creator": creator, "Producer": None}
    return {"Software": None}


def save_figure(fig: "Figure", target, fmt: str | None = None, *, salt: str = "eaglelog") -> None:
    """Write ``fig`` to a path or binary file object, the same bytes for the same figure."""
    mpl = _mpl()
    fmt = fmt or format_of(os.fspath(target))
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}; choose from {', '.join(FORMATS)}")
    with _Quiet(fig), mpl.rc_context({**_style(), "svg.hashsalt": salt}):
        fig.savefig(target, format=fmt, dpi=DPI, metadata=_metadata(fmt), facecolor="white")


def figure_svg(fig: "Figure", *, salt: str = "eaglelog") -> str:
    """The figure as an <svg> element to put inline in HTML: no XML prolog, no DOCTYPE, no
    metadata, no namespace declarations (HTML5 does not need them).  ``salt`` keeps the ids of
    several figures in one page apart."""
    mpl = _mpl()
    buf = io.StringIO()
    with _Quiet(fig), mpl.rc_context({**_style(), "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata=_metadata("svg", bare=True), facecolor="white")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text, count=3)
    # the group ids every figure repeats (figure_1, axes_1, line2d_1 …; referenced nowhere)
    # made unique in the page; the referenced ids (clip paths, markers) are salted hashes
    text = re.sub(r'id="([A-Za-z][\w.]*_\d+)"', lambda m: f'id="{salt}-{m.group(1)}"', text)
    return text.strip() + "\n"


# ----------------------------------------------------------------------------- helpers

def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1):]


def _logs_title(names: Sequence[str], width: int = 110) -> str:
    """The inputs for a title: every name, or as many as fit and a count of the rest."""
    names = list(dict.fromkeys(names))
    text = ", ".join(names)
    if len(text) <= width:
        return text
    shown = []
    for n in names:
        if len(", ".join(shown + [n])) > width - 12:
            break
        shown.append(n)
    shown = shown or [_short(names[0], width - 12)]
    return ", ".join(shown) + f" and {len(names) - len(shown)} more"


def _err(e, center: float | None = None) -> tuple[float, float]:
    """(below, above) distances of an interval from its estimate, 0 when there is none."""
    c = e.estimate if center is None else center
    if not e.sufficient:
        return 0.0, 0.0
    return max(0.0, c - e.ci_low), max(0.0, e.ci_high - c)


def _run_label(label: str) -> str:
    """A run's label on an axis: the file name and its start-up, wrapped."""
    base, _, rest = label.partition(" [")
    name = os.path.basename(base) or base
    return name + ("\n[" + rest if rest else "")


# ----------------------------------------------------------------------------- timeline

def _source_times(log: "ParsedLog", source: str) -> pd.DataFrame:
    """(line_no, timestamp) of every timestamped row of ``source``, in line order: the clock
    that places untimed rows (EAGLE3_PROF blocks printed with print()) by position in the file."""
    parts = []
    for df in log.tables.values():
        if "timestamp" in df.columns and len(df):
            m = (df["source"] == source) & df["timestamp"].notna()
            parts.append(df.loc[m, ["line_no", "timestamp"]])
    if not parts:
        return pd.DataFrame({"line_no": pd.Series([], dtype="int64"),
                             "timestamp": pd.Series([], dtype="datetime64[us]")})
    t = pd.concat(parts, ignore_index=True)
    t["line_no"] = t["line_no"].astype("int64")
    return t.sort_values("line_no").drop_duplicates("line_no").reset_index(drop=True)


def _place(rows: pd.DataFrame, clock: pd.DataFrame) -> pd.Series:
    """Each row's own timestamp, else that of the last timestamped line before it."""
    own = rows["timestamp"] if "timestamp" in rows.columns else pd.Series(pd.NaT, index=rows.index)
    if own.notna().all() or clock.empty:
        return own
    key = pd.DataFrame({"line_no": rows["line_no"].astype("int64").to_numpy(),
                        "i": np.arange(len(rows))}).sort_values("line_no")
    got = pd.merge_asof(key, clock, on="line_no", direction="backward").sort_values("i")
    return own.where(own.notna(), pd.Series(got["timestamp"].to_numpy(), index=rows.index))


def _idle(w: pd.DataFrame) -> pd.Series:
    """Windows that end an idle gap: analysis.windows' 'idle' (the wall time since the series'
    previous line is over IDLE_FACTOR × its median), also when the window is marked for another
    reason first (a prefill after the gap, the first line after a restart)."""
    from ..analysis.windows import IDLE_FACTOR

    out = w["reason"] == "idle"
    if "timestamp" not in w.columns or w["timestamp"].isna().any() or len(w) < 3:
        return out
    for _, g in w.groupby("series", sort=False):
        gap = g["timestamp"].diff().dt.total_seconds()
        med = gap.iloc[1:].median()
        if med > 0:
            out.loc[g.index] |= (gap > IDLE_FACTOR * med).fillna(False)
    return out


# the i-th line of a figure: the palette's eight colours, then the eight again dashed, dotted …
LINE_STYLES = ("-", "--", ":", "-.")


def line_style(i: int) -> dict:
    """Colour and line style of the i-th run of a figure: every run its own pair."""
    n = len(SERIES_COLOURS)
    return {"color": SERIES_COLOURS[i % n], "linestyle": LINE_STYLES[(i // n) % len(LINE_STYLES)]}


def _with_breaks(x, y, brk) -> tuple[np.ndarray, np.ndarray]:
    """``x, y`` with a NaN point before every point ``i`` where ``brk[i]``: matplotlib leaves a
    gap there, so one Line2D per run breaks at idle gaps and restarts.  The NaN point takes the
    x of the point before it: a step line does not run on into the gap."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    brk = np.asarray(brk, dtype=bool).copy()
    if len(brk):
        brk[0] = False
    idx = np.flatnonzero(brk)
    if not len(idx):
        return x, y
    return np.insert(x, idx, x[idx - 1]), np.insert(y, idx, np.nan)


def _startup_changes(startup: pd.Series) -> np.ndarray:
    """True where a row's start-up differs from the row before it (a restart between them)."""
    s = startup.astype("float64").fillna(-1.0).to_numpy()
    return np.r_[False, np.diff(s) != 0] if len(s) else np.zeros(0, dtype=bool)


def _spans(x: np.ndarray, cuts: Sequence[tuple[float, float]]) -> np.ndarray:
    """True at point i when an interval (x0, x1) of ``cuts`` lies between points i-1 and i."""
    brk = np.zeros(len(x), dtype=bool)
    for x0, x1 in cuts:
        brk[1:] |= (x[:-1] < x1) & (x[1:] > x0)
    return brk


def caption(fig: "Figure") -> str:
    """What a figure of this module draws, in a sentence (for a caption under it): only what is
    drawn, as the figure function recorded it; '' for a figure made elsewhere."""
    return getattr(fig, "eaglelog_caption", "")


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@_styled
def timeline_figure(log: "ParsedLog") -> "Figure":
    """Accept length, decode throughput and running requests over time, one line per run and
    scheduler rank (the decode windows of analysis.windows: TP ranks that print the same series
    count once); the EAGLE3_PROF TOTAL over time (its axis from 0: no magnified jitter); idle
    windows (analysis.windows' 'idle': a gap over 3× the series' median) shaded; each server
    restart (a new server_args line) marked.  Every line of an input keeps its colour and line
    style (line_style) in every panel and breaks (a NaN point) at idle gaps and restarts;
    ``caption(fig)`` says what was drawn."""
    from ..analysis.breakeven import one_source
    from ..errors import EaglelogError

    names = [i.name for i in log.sources if any(i.counts.values())]
    per_source = []
    for src in names:
        _, w = one_source(log, src)
        clock = _source_times(log, src)
        p = log.prof[(log.prof["source"] == src) &
                     log.prof["complete"].fillna(False).astype(bool)].sort_values("line_no")
        sa = log.server_args[log.server_args["source"] == src].sort_values("line_no")
        per_source.append((src, w, clock, p, sa))
    if all(w.empty and p.empty for _, w, _, p, _ in per_source):
        raise EaglelogError("nothing to draw a timeline of: no 'Decode batch' lines and no "
                            "EAGLE3_PROF blocks")
    timed = all(not c.empty for _, _, c, _, _ in per_source)
    # x: seconds (or minutes) since each input's first timestamped line; line numbers without
    # any timestamp
    spans = [(c["timestamp"].max() - c["timestamp"].min()).total_seconds()
             for _, _, c, _, _ in per_source if not c.empty]
    minutes = timed and spans and max(spans) > 600
    scale = 60.0 if minutes else 1.0

    def xs(src_clock: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
        if not timed:
            return rows["line_no"].to_numpy(dtype=float)
        t = _place(rows, src_clock)
        t0 = src_clock["timestamp"].min()
        return ((t - t0).dt.total_seconds() / scale).to_numpy(dtype=float)

    has_accept = any(len(w) and w["accept_len"].notna().any() for _, w, _, _, _ in per_source)
    has_prof = any(len(p) for _, _, _, p, _ in per_source)
    has_decode = any(len(w) for _, w, _, _, _ in per_source)
    panels = []
    if has_accept:
        panels.append(("accept_len", "accept length\n(tokens/verify)"))
    if has_decode:
        panels += [("gen_throughput", "decode throughput\n(tok/s)"),
                   ("running_req", "running requests")]
    if has_prof:
        panels.append(("prof", "profile cycle\nTOTAL (ms)"))
    fig = _new_figure(10.0, 1.0 + 1.75 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    ax_of = {key: ax for (key, _), ax in zip(panels, axes)}
    for (key, label), ax in zip(panels, axes):
        ax.set_ylabel(label)
    several = len(per_source) > 1
    styles: dict[tuple[str, str], dict] = {}     # (input, rank) -> colour and line style

    def style(key: tuple[str, str]) -> dict:
        if key not in styles:
            styles[key] = line_style(len(styles))
        return styles[key]

    idle_drawn = restart_drawn = sync_drawn = False
    tops: dict[str, float] = {}                  # each panel's highest value drawn
    restarts = 0
    for src, w, clock, p, sa in per_source:
        tag = f"{os.path.basename(src)} · " if several else ""
        # restarts: every server_args line after the first start-up of the input
        ups = sa[sa["startup"] > sa["startup"].min()] if len(sa) > 1 else sa.iloc[0:0]
        ux = xs(clock, ups) if len(ups) else np.empty(0)
        gaps: list[tuple[float, float]] = []     # idle gaps (x0, x1) of this input
        if len(w):
            w = w.assign(_x=xs(clock, w))
            idle = _idle(w)
            prev = w.groupby("series", sort=False)["_x"].shift(1)
            gaps = [(x0, x1) for x0, x1 in zip(prev[idle], w.loc[idle, "_x"])
                    if np.isfinite(x0) and np.isfinite(x1)]
            dec = log.decode[(log.decode["source"] == src).to_numpy(dtype=bool)]
            rank_of = dict(zip(dec["line_no"].astype("int64"), dec["ranks"]))
            for series, g in w.groupby("series", sort=False):
                ranks = [rank_of.get(int(n)) for n in g["line_no"]]
                rank = next((str(r) for r in ranks if isinstance(r, str) and r), "scheduler")
                kw = {**style((src, rank)), "lw": 1.3, "label": f"{tag}{rank}"}
                # a line breaks at an idle gap and at a restart
                brk = idle.loc[g.index].to_numpy(dtype=bool) | _startup_changes(g["startup"])
                brk |= _spans(g["_x"].to_numpy(dtype=float), [(x, x) for x in ux])
                for key in ("accept_len", "gen_throughput", "running_req"):
                    if key not in ax_of or g[key].isna().all():
                        continue
                    x, y = _with_breaks(g["_x"], g[key].to_numpy(dtype=float, na_value=np.nan),
                                        brk)
                    if np.isfinite(y).any():
                        tops[key] = max(tops.get(key, 0.0), float(np.nanmax(y)))
                    if key == "running_req":
                        ax_of[key].step(x, y, where="post", **kw)
                    else:
                        ax_of[key].plot(x, y, marker="o", ms=2.5, **kw)
            # idle gaps: from the previous line of the series to this one
            for x0, x1 in gaps:
                for ax in axes:
                    ax.axvspan(x0, x1, color=GREY, alpha=0.25, lw=0,
                               label="idle gap" if not idle_drawn and ax is axes[0] else None)
                idle_drawn = True
        if len(p) and "prof" in ax_of:
            p = p.assign(_x=xs(clock, p))
            # the profiler's line takes the colour of the same rank's decode line; blocks that
            # name no rank belong to the input's only decode line when it has one
            ranks = p["ranks"].astype("string")
            mine = [k[1] for k in styles if k[0] == src]
            only = mine[0] if len(mine) == 1 and ranks.dropna().eq(mine[0]).all() else None
            for rank, g in p.groupby(ranks.fillna(only or "profiler"), sort=True):
                key = (src, str(rank))
                gx = g["_x"].to_numpy(dtype=float)
                brk = _startup_changes(g["startup"]) | _spans(gx, gaps) | \
                    _spans(gx, [(x, x) for x in ux])
                x, y = _with_breaks(gx, g["total_ms"].to_numpy(dtype=float), brk)
                if np.isfinite(y).any():
                    tops["prof"] = max(tops.get("prof", 0.0), float(np.nanmax(y)))
                ax_of["prof"].plot(x, y, lw=1.3, marker="s", ms=3, label=f"{tag}{key[1]}",
                                   **style(key))
                sync = g["mode"].astype("string").eq("sync").fillna(False).to_numpy()
                if sync.any():
                    ax_of["prof"].plot(gx[sync], g["total_ms"].to_numpy(float)[sync], ls="",
                                       marker="s", ms=6, mfc="none", mec=OKABE_ITO["black"],
                                       label=None if sync_drawn else "sync-mode block")
                    sync_drawn = True
        for x, k in zip(ux, ups["startup"]):
            if not np.isfinite(x):
                continue
            restarts += 1
            for ax in axes:
                ax.axvline(x, color=OKABE_ITO["black"], ls="--", lw=1.2,
                           label="server restart" if not restart_drawn and ax is axes[0]
                           else None)
                restart_drawn = True
            axes[0].annotate(f"restart (start-up {int(k)})", (x, 1.0),
                             xycoords=("data", "axes fraction"), xytext=(3, -2),
                             textcoords="offset points", va="top", fontsize=8,
                             bbox={"boxstyle": "square,pad=0.15", "fc": "white",
                                   "ec": "none", "alpha": 0.85})
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                      borderaxespad=0.0)
    # rates and times from 0: a 2 % wobble is not drawn as a cliff
    for key in ("gen_throughput", "running_req", "prof"):
        if key in ax_of:
            ax_of[key].set_ylim(0, tops.get(key, 1.0) * 1.08 or 1.0)
    if "running_req" in ax_of:
        from matplotlib.ticker import MaxNLocator
        ax_of["running_req"].yaxis.set_major_locator(MaxNLocator(integer=True))
    if timed:
        unit = "min" if minutes else "s"
        axes[-1].set_xlabel(f"time since the log's first line ({unit})")
    else:
        axes[-1].set_xlabel("line in the log (no timestamps)")
    fig.suptitle(f"timeline: {_logs_title(names)}")
    # the caption: what is drawn, nothing else
    what = [label for key, label in (("accept_len", "accept length"),
                                     ("gen_throughput", "decode throughput"),
                                     ("running_req", "running requests")) if key in ax_of]
    parts = [f"{_and(what)} per decode window"] if what else []
    if "prof" in ax_of:
        parts.append("the profiler's cycle time (EAGLE3_PROF TOTAL, from 0 ms)")
    text = _and(parts) + (" over time" if timed else " by line in the log (no timestamps)")
    lines = len(styles)
    if lines > 1:
        per = "input" if lines == len({k[0] for k in styles}) else \
            "input and rank" if several else "rank"
        text += (f", one colour{' and line style' if lines > len(SERIES_COLOURS) else ''} per "
                 f"{per} ({lines} lines)")
    marks = []
    if idle_drawn:
        marks.append("idle gaps shaded")
    if restarts:
        marks.append(f"{'a server restart' if restarts == 1 else f'{restarts} server restarts'}"
                     " dashed")
    if marks:
        text += "; " + " and ".join(marks) + " (the lines break there)"
    if sync_drawn:
        text += "; sync-mode blocks ringed"
    fig.eaglelog_caption = text[0].upper() + text[1:] + "."
    return fig


# ----------------------------------------------------------------------------- phases

BAR = 0.42           # the width of a bar of the phases plot (x units: one run per unit)


def _ink(colour: str) -> str:
    """Black or white text, whichever reads on ``colour`` (its relative luminance)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return OKABE_ITO["black"] if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "#ffffff"


def _share_labels(ax, x: float, segs: list[tuple[float, float, str, str, str]], span: float,
                  inside_frac: float) -> None:
    """Each segment's label (bottom, height, inside text, beside text, colour) of the bar at
    ``x``:
    inside the segment when it is tall enough (``inside_frac`` of the axis ``span``), else
    beside the bar with a leader, the labels beside pushed apart so that none overlaps."""
    beside = []
    for bottom, h, inside, text, colour in segs:
        if h >= inside_frac * span:
            ax.text(x, bottom + h / 2, inside, ha="center", va="center", fontsize=8,
                    color=_ink(colour), fontweight="bold")
        else:
            beside.append((bottom + h / 2, text))
    gap = 0.055 * span                       # one line of 8-point text on a 3.5 in axis
    placed: list[float] = []
    for y, _ in beside:
        placed.append(max(y, placed[-1] + gap) if placed else y)
    for (y, text), yt in zip(beside, placed):
        ax.annotate(text, (x + BAR / 2, y), xytext=(x + BAR / 2 + 0.06, yt), ha="left",
                    va="center", fontsize=8,
                    arrowprops={"arrowstyle": "-", "lw": 0.6, "color": OKABE_ITO["black"],
                                "shrinkA": 0, "shrinkB": 0})


def _sync_blocks(s) -> str:
    """'12 sync-mode blocks' of a summary's phases_from ('' when it does not say)."""
    return s.phases_from if s.phases_from and "sync-mode" in s.phases_from else ""


@_styled
def phases_figure(summaries: Sequence["SummaryResult"]) -> "Figure":
    """The cycle breakdown of each run (analysis.summary): stacked bars of each phase's mean
    ms per cycle, with the TOTAL (cycle time) and its interval as a whisker, each segment
    labelled with its share of the cycle (and its ms), a thin one beside the bar.  Runs with
    sync-mode blocks only (no cycle time: the synchronize after each phase slows the cycle;
    analysis.summary gives their phase shares) are drawn apart, as shares of the cycle (%)."""
    from ..errors import EaglelogError

    timed = [s for s in summaries if s.cycle_ms is not None and s.phases]
    shares = [s for s in summaries if s.cycle_ms is None and s.phases]
    if not timed and not shares:
        raise EaglelogError("no EAGLE3_PROF blocks (complete, no-sync or sync mode): the phases "
                            "plot needs the profiler patch's cycle breakdown")
    labels = list(dict.fromkeys(p.phase for s in timed + shares for p in s.phases))
    colour = {label: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, label in enumerate(labels)}
    n = len(timed) + len(shares)
    fig = _new_figure(max(6.5, 2.2 + 2.4 * n), 5.4)
    groups = [g for g in (timed, shares) if g]
    axes = fig.subplots(1, len(groups), squeeze=False,
                        width_ratios=[len(g) + 0.6 for g in groups])[0]
    conf = f"{(timed or shares)[0].confidence:.0%}"
    drawn = set()
    for ax, runs in zip(axes, groups):
        ms = runs is timed
        x = np.arange(len(runs), dtype=float)
        bottom = np.zeros(len(runs))
        segs: list[list] = [[] for _ in runs]
        for label in labels:
            got = [next((p for p in s.phases if p.phase == label), None) for s in runs]
            h = np.array([0.0 if p is None else (p.ms_per_cycle.estimate if ms else p.pct)
                          for p in got], dtype=float)
            h = np.where(np.isfinite(h), h, 0.0)
            ax.bar(x, h, BAR, bottom=bottom, color=colour[label], edgecolor="white",
                   linewidth=0.5, label=None if label in drawn else label)
            drawn.add(label)
            for j, p in enumerate(got):
                if p is not None and h[j] > 0:
                    share = f"{p.pct:.1f}%" if math.isfinite(p.pct) else "?"
                    if ms:
                        e = p.ms_per_cycle.estimate
                        segs[j].append((bottom[j], h[j], f"{share}\n{e:.2f} ms",
                                        f"{share} · {e:.2f} ms", colour[label]))
                    else:
                        segs[j].append((bottom[j], h[j], share, share, colour[label]))
            bottom += h
        if ms:
            tot = np.array([s.cycle_ms.estimate for s in runs])
            err = np.array([_err(s.cycle_ms) for s in runs]).T
            ax.errorbar(x, tot, yerr=err, fmt="_", ms=BAR * 60, color=OKABE_ITO["black"],
                        capsize=6, lw=1.4, label=f"TOTAL with {conf} interval")
            for xi, s in zip(x, runs):
                e = s.cycle_ms
                ax.annotate(f"{e.estimate:.2f} ms", (xi, e.ci_high if e.sufficient else
                                                     e.estimate),
                            xytext=(0, 5), textcoords="offset points", ha="center",
                            va="bottom", fontsize=9)
            top = max(float(np.nanmax(np.r_[tot, bottom])),
                      max((s.cycle_ms.ci_high or 0) for s in runs)) * 1.15
            ax.set_ylabel("ms per cycle")
            ax.set_xticks(x, [_run_label(s.source) for s in runs])
            if len(groups) > 1:
                ax.set_title("ms per cycle and share", fontsize=10)
        else:
            top = max(105.0, float(np.nanmax(bottom)) * 1.08)
            ax.set_ylabel("share of the cycle (%)")
            ax.set_xticks(x, [f"{_run_label(s.source)}\n({_sync_blocks(s) or 'sync mode'})"
                              for s in runs])
            ax.set_title("sync-mode blocks: phase shares\n(no cycle time: a synchronize "
                         "after\neach phase slows the cycle)", fontsize=10)
        ax.set_ylim(0, top)
        for j, xi in enumerate(x):
            _share_labels(ax, xi, segs[j], top, 0.085 if ms else 0.05)
        ax.set_xlim(-0.6, len(runs) - 0.4 + 0.45)    # room for the labels beside the last bar
        ax.grid(axis="x", visible=False)
    handles, names = [], []
    for ax in axes:
        h, nm = ax.get_legend_handles_labels()
        handles += h
        names += nm
    fig.legend(handles, names, loc="outside lower center", ncols=min(4, len(names)),
               frameon=False)
    what = "EAGLE3_PROF" if not any(s.phases_from == "vLLM stage times" for s in timed) else \
        "EAGLE3_PROF / vLLM stage times"
    fig.suptitle(f"cycle breakdown per run ({what}, cycle-weighted): "
                 f"{_logs_title([s.source for s in timed + shares], 70)}", wrap=True)
    parts = []
    if timed:
        parts.append(f"each phase's mean ms per cycle stacked, labelled with its share of the "
                     f"cycle; the whisker is the {conf} interval of TOTAL")
    if shares:
        parts.append(f"{'the runs with' if timed else 'from'} sync-mode blocks only: each "
                     "phase's share of the cycle (%), no cycle time")
    fig.eaglelog_caption = "Cycle breakdown per run: " + "; ".join(parts) + "."
    return fig


# ----------------------------------------------------------------------------- breakeven

@_styled
def breakeven_figure(results: Sequence["BreakevenResult"]) -> "Figure":
    """Measured accept length with its interval against the break-even band (the break-even
    accept length's interval) of analysis.breakeven: per batch size for results with
    ``by_batch``, else one column per run."""
    per_batch = [r for r in results if r.by_batch]
    conf = f"{results[0].confidence:.0%}"
    if per_batch:
        fig = _new_figure(9.0, 1.2 + 3.6 * len(per_batch))
        axes = fig.subplots(len(per_batch), 1, squeeze=False)[:, 0]
        for ax, r in zip(axes, per_batch):
            _breakeven_axes(ax, [b.batch for b in r.by_batch], r.by_batch, conf, batch=True,
                            source=r.source)
            ax.set_title(f"{r.source}  vs  baseline {r.baseline}", fontsize=10)
        axes[-1].set_xlabel("running requests (batch size, #running-req)")
        fig.suptitle("break-even accept length by batch size:\nspeculation pays where the "
                     "measured accept length is above the band")
        return fig
    fig = _new_figure(max(6.0, 1.8 + 1.6 * len(results)), 4.8)
    ax = fig.subplots()
    _breakeven_axes(ax, [_run_label(r.source) for r in results], results, conf, batch=False,
                    source=", ".join(dict.fromkeys(r.source for r in results)))
    bases = list(dict.fromkeys(r.baseline for r in results))
    ax.set_title(f"break-even accept length vs baseline {', '.join(bases)}:\n"
                 f"{_logs_title([r.source for r in results], 80)}")
    return fig


def _breakeven_axes(ax, ticks: list[str], items, conf: str, batch: bool,
                    source: str = "") -> None:
    x = np.arange(len(items))
    be = [i.breakeven_accept_len for i in items]
    acc = [i.accept_len for i in items]
    lo = np.array([e.ci_low if e.sufficient else e.estimate for e in be], dtype=float)
    hi = np.array([e.ci_high if e.sufficient else e.estimate for e in be], dtype=float)
    mid = np.array([e.estimate for e in be], dtype=float)
    band_label = f"break-even accept length ({conf} interval)"
    if batch and len(items) > 1:
        ax.fill_between(x, lo, hi, color=BAND, alpha=0.25, lw=0, label=band_label)
        ax.plot(x, mid, color=BAND, lw=1.5)
    else:
        for i, (l, h, m) in enumerate(zip(lo, hi, mid)):
            ax.add_patch(_rect(i - 0.3, l, 0.6, max(h - l, 1e-9), BAND,
                               band_label if i == 0 else None))
            ax.plot([i - 0.3, i + 0.3], [m, m], color=BAND, lw=1.5)
    yerr = np.array([_err(e) for e in acc]).T
    ax.errorbar(x, [e.estimate for e in acc], yerr=yerr, fmt="o", color=MEASURED, ms=6,
                capsize=4, lw=1.5, label=f"measured accept length ({conf} interval)",
                zorder=3)
    if batch and len(items) > 1:
        ax.plot(x, [e.estimate for e in acc], color=MEASURED, lw=1, alpha=0.6)
    for xi, it in zip(x, items):
        sp = it.speedup
        ax.annotate(f"{num(sp.estimate, 3)}×\n{it.verdict}",
                    (xi, max(it.accept_len.ci_high or it.accept_len.estimate,
                             it.breakeven_accept_len.ci_high or it.breakeven_accept_len.estimate)),
                    xytext=(0, 6), textcoords="offset points", ha="center", va="bottom",
                    fontsize=8)
    ys = np.r_[lo, hi, [e.ci_high or e.estimate for e in acc], [e.ci_low or e.estimate
                                                                   for e in acc]].astype(float)
    ys = ys[np.isfinite(ys)]
    if not len(ys):        # every value insufficient (all windows left out, say): no axis
        from ..errors import EaglelogError
        raise EaglelogError(f"{source}: nothing to draw a break-even picture of: neither "
                            "the accept length nor the break-even accept length was measured "
                            f"({'; '.join(dict.fromkeys(str(i.verdict) for i in items))})")
    top, bot = float(ys.max()), float(ys.min())
    pad = (top - bot) * 0.15 + 0.05
    ax.set_ylim(max(0.0, bot - pad), top + 2.5 * pad)
    ax.set_xlim(-0.6, len(items) - 0.4)
    ax.set_xticks(x, ticks)
    ax.set_ylabel("accept length (tokens/verify)")
    ax.legend(loc="best", frameon=True, framealpha=0.85)


def _rect(x, y, w, h, colour, label):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, color=colour, alpha=0.25, lw=0, label=label)


# ----------------------------------------------------------------------------- sweep

def _numeric(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and
               math.isfinite(float(v)) for v in values)


@_styled
def sweep_figure(result: "SweepResult") -> "Figure":
    """Effective tok/s of each run of analysis.sweep (with its interval) against the first
    varying config key; the baseline rate as a line (1000 / its step time, the rate the
    speedup is relative to)."""
    rows = list(result.rows)
    key = result.keys[0] if result.keys else None
    xvals = [r.keys.get(key) for r in rows] if key else []
    numeric = key is not None and _numeric(xvals)
    if numeric:
        order = sorted(range(len(rows)), key=lambda i: float(xvals[i]))
        rows = [rows[i] for i in order]
        x = np.array([float(r.keys[key]) for r in rows])
    else:
        x = np.arange(len(rows), dtype=float)
    keys = list(result.keys)
    ticks = [_tick(r, keys) if keys else _run_label(r.run) for r in rows]
    if keys and len(set(ticks)) < len(ticks):      # the keys shown do not tell the runs apart
        ticks = [f"{t}\n{_run_label(r.run)}" for t, r in zip(ticks, rows)]
    widest = max((len(line) for t in ticks for line in t.split("\n")), default=1)
    width = max(6.5, 2.0 + max(0.9, 0.07 * widest + 0.2) * len(rows))
    fig = _new_figure(width, 4.8)
    ax = fig.subplots()
    eff = np.array([r.eff_tok_s.estimate for r in rows])
    yerr = np.array([_err(r.eff_tok_s) for r in rows]).T
    conf = f"{result.confidence:.0%}"
    ax.errorbar(x, eff, yerr=yerr, fmt="o-" if numeric else "o", color=MEASURED, ms=6,
                capsize=4, lw=1.5, label=f"effective tok/s ({conf} interval)", zorder=3)
    for xi, r in zip(x, rows):
        if r.mark:
            ax.annotate(r.mark, (xi, r.eff_tok_s.ci_high or r.eff_tok_s.estimate),
                        xytext=(0, 5), textcoords="offset points", ha="center", va="bottom",
                        fontsize=9, fontweight="bold" if r.mark == "best" else "normal")
    # eff tok/s / speedup = 1000 / baseline step: the rate each row's speedup is relative to
    base = [r.eff_tok_s.estimate / r.speedup.estimate
            if r.speedup is not None and r.speedup.estimate else math.nan for r in rows]
    if result.baseline and np.isfinite(base).any():
        b = np.array(base, dtype=float)
        label = f"baseline {result.baseline}"
        if np.nanmax(b) - np.nanmin(b) <= 1e-9 * np.nanmax(b):
            ax.axhline(np.nanmax(b), color=BAND, ls="--", lw=1.5, label=label)
        else:   # a baseline log matched on each run's batch sizes
            ax.plot(x, b, color=BAND, ls="--", lw=1.5, label=label + " (matched per run)")
    ax.set_xticks(x, ticks)
    if numeric and len(keys) > 1:
        xlabel = f"{_key(key)}  (with {_keys_text(keys[1:], MAX_KEYS - 1)})"
    else:
        xlabel = _keys_text(keys, MAX_KEYS) if keys else "run"
    import textwrap

    ax.set_xlabel(textwrap.fill(xlabel, max(40, int(width * 13))))
    ax.set_ylabel("effective tok/s (1000 × accept len / cycle ms)")
    hi = max(float(np.nanmax(eff + yerr[1])), float(np.nanmax(base)) if np.isfinite(base).any()
             else 0.0)
    ax.set_ylim(0, hi * 1.15)
    ax.legend(loc="lower right", frameon=True, framealpha=0.85)
    ax.set_title(f"sweep of {len(rows)} runs: {_logs_title([r.run for r in rows], 80)}",
                 wrap=True)
    return fig


MAX_KEYS = 3          # config keys named on a sweep's axis; the rest counted ('+37 more')
VALUE_WIDTH = 24      # characters of a config value in a tick label (longer ones end in '…')
TICK_WIDTH = 14       # a tick label wraps at this many characters a line


def _key(name: str, width: int = 32) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def _keys_text(keys: Sequence[str], most: int = MAX_KEYS) -> str:
    """'k1 · k2 · k3 +37 more': at most ``most`` key names and a count of the rest."""
    keys = list(keys)
    text = " · ".join(_key(k) for k in keys[:most])
    return text + (f" +{len(keys) - most} more" if len(keys) > most else "")


def _value(v) -> str:
    s = str(v)
    return s if len(s) <= VALUE_WIDTH else s[:VALUE_WIDTH - 1] + "…"


def _tick(row, keys) -> str:
    """A run's tick label: the values of its first MAX_KEYS config keys, each at most
    VALUE_WIDTH characters, on one line when short, else one value a line, wrapped."""
    import textwrap

    values = [_value(row.keys.get(k)) for k in list(keys)[:MAX_KEYS]]
    one = " · ".join(values)
    if len(one) <= TICK_WIDTH:
        return one
    return "\n".join(textwrap.fill(v, TICK_WIDTH, break_on_hyphens=False) or v for v in values)


# ----------------------------------------------------------------------------- compare

@_styled
def compare_figure(result: "CompareResult") -> "Figure":
    """Each metric's ratio changed / reference of analysis.compare, with its interval; 1.0
    (no change) marked; a significant difference is filled with its direction's colour (better:
    bluish green, worse: vermillion), no detectable difference is hollow."""
    metrics = list(dict.fromkeys((m.metric, m.label, m.unit) for m in result.metrics))
    runs = list(result.runs)
    fig = _new_figure(9.0, 1.4 + 0.42 * len(metrics) * max(1, len(runs) * 0.6))
    ax = fig.subplots()
    y0 = np.arange(len(metrics))[::-1].astype(float)
    step = 0.6 / max(1, len(runs))
    ax.axvline(1.0, color=OKABE_ITO["black"], lw=1.2, label="1.0 = no change")
    conf = f"{result.confidence:.0%}"
    for j, run in enumerate(runs):
        c = SERIES_COLOURS[j % len(SERIES_COLOURS)]
        off = (j - (len(runs) - 1) / 2) * step
        for i, (name, _, _) in enumerate(metrics):
            m = next((m for m in result.metrics if m.run == run and m.metric == name), None)
            if m is None:
                continue
            y = y0[i] - off
            r = m.ratio
            if not (r.estimate == r.estimate):     # nan: insufficient
                ax.annotate("insufficient data", (1.0, y), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=8)
                continue
            sig = m.significant and m.practical
            # the marker's fill says the direction: better / worse / no detectable difference
            face = DIRECTION.get(m.direction, c) if sig else "white"
            ax.errorbar([r.estimate], [y], xerr=np.array([_err(r)]).T, fmt="o", color=c,
                        mfc=face, mec=c, mew=1.6, ms=7, capsize=3, lw=1.4,
                        label=_short(run, 60) if i == 0 else None)
            ax.annotate(f"{r.estimate:.3f}", (r.ci_high if r.sufficient else r.estimate, y),
                        xytext=(5, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y0, [f"{label} ({unit})" for _, label, unit in metrics])
    ax.set_xlabel(f"ratio changed / reference, with {conf} interval")
    lo = min([min(m.ratio.ci_low or m.ratio.estimate, m.ratio.estimate) for m in result.metrics
              if m.ratio.estimate == m.ratio.estimate] + [1.0])
    hi = max([max(m.ratio.ci_high or m.ratio.estimate, m.ratio.estimate) for m in result.metrics
              if m.ratio.estimate == m.ratio.estimate] + [1.0])
    pad = (hi - lo) * 0.12 + 0.01
    ax.set_xlim(lo - pad, hi + 2 * pad)
    ax.grid(axis="y", visible=False)
    from matplotlib.lines import Line2D
    handles, labels = ax.get_legend_handles_labels()
    grey = OKABE_ITO["black"]
    handles += [Line2D([], [], ls="", marker="o", color=grey, mfc=DIRECTION["better"], ms=7),
                Line2D([], [], ls="", marker="o", color=grey, mfc=DIRECTION["worse"], ms=7),
                Line2D([], [], ls="", marker="o", color=grey, mfc="white", ms=7)]
    labels += ["better", "worse", "no detectable difference"]
    ax.legend(handles, labels, loc="upper center",
              bbox_to_anchor=(0.5, -0.08 - 0.3 / max(3, len(metrics))),
              ncols=2 if len(labels) > 3 else len(labels), frameon=False)
    ax.set_title(f"compare: {_logs_title(runs, 80)}\nvs the reference "
                 f"{_short(result.reference, 80)}")
    return fig


# ----------------------------------------------------------------------------- requests

MAX_BOXES = 16


@_styled
def requests_figure(result: "RequestsResult") -> "Figure":
    """analysis.requests: left, the distribution of τ_r per group (box: quartiles, whiskers to
    1.5 IQR, every request a dot) with the group's pooled τ and its interval; right, τ_r
    against output length, repetition-loop suspects ringed.  The break-even accept length is a
    line when the result has one.  Several runs: one box per run and group."""
    t = result.table[result.table["tau"].notna()]
    if not len(t):
        from ..errors import EaglelogError
        raise EaglelogError("no request with a per-request accept length to draw (benchmark "
                            "results per workload only have no requests: see `eaglelog "
                            "requests`)")
    runs = list(dict.fromkeys(t["run"].astype(str)))
    stats = {(r.run, g.group): g for r in result.runs
             for g in (r.groups or ((r.overall,) if r.overall else ()))}
    order = [(r.run, g.group) for r in result.runs
             for g in (r.groups or ((r.overall,) if r.overall else ()))][:MAX_BOXES]
    fig = _new_figure(11.0, 4.6)
    ax, ax2 = fig.subplots(1, 2, width_ratios=[max(1.0, 0.5 * len(order)) + 1, 4])
    rng = np.random.default_rng(0)              # the same jitter every time: the same file
    colours = {g: SERIES_COLOURS[i % len(SERIES_COLOURS)]
               for i, g in enumerate(dict.fromkeys(g for _, g in order))}
    conf = f"{result.confidence:.0%}"
    labels = []
    for i, (run, group) in enumerate(order):
        m = (t["run"].astype(str) == run).to_numpy() & \
            (t["group"].astype(str) == group).to_numpy()
        tau = t["tau"].to_numpy(dtype=float)[m]
        c = colours[group]
        if len(tau):
            ax.boxplot([tau], positions=[i], widths=0.55, showfliers=False,
                       medianprops={"color": c, "lw": 1.6}, boxprops={"color": c},
                       whiskerprops={"color": c}, capprops={"color": c})
            ax.scatter(i + rng.uniform(-0.18, 0.18, len(tau)), tau, s=9, color=c, alpha=0.45,
                       lw=0, zorder=3)
        g = stats.get((run, group))
        if g is not None and math.isfinite(g.pooled.estimate):
            ax.errorbar([i + 0.36], [g.pooled.estimate], yerr=np.array([_err(g.pooled)]).T,
                        fmt="D", ms=5, color=OKABE_ITO["black"], capsize=3, lw=1.2,
                        label=f"pooled, {conf} interval" if i == 0 else None, zorder=4)
        name = group if len(runs) == 1 else f"{_run_label(run)}\n{group}"
        labels.append(f"{name}\n({len(tau):,})")
    ax.set_xticks(range(len(order)), labels, rotation=30 if len(order) > 4 else 0,
                  ha="right" if len(order) > 4 else "center")
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel("accept length per request τ_r (tokens / verify)")
    by = result.by or "all requests"
    ax.set_title(f"τ_r by {by}" if result.by else "τ_r of every request")
    ax.grid(axis="x", visible=False)
    breakevens = {r.breakeven for r in result.runs if r.breakeven is not None}
    loops = {(o.source, o.line_no) for r in result.runs for o in r.outliers
             if o.kind == "loop suspect"}
    for i, group in enumerate(colours):
        m = (t["group"].astype(str) == group).to_numpy()
        ax2.scatter(t["output_tokens"].to_numpy(dtype=float, na_value=np.nan)[m],
                    t["tau"].to_numpy(dtype=float)[m], s=12, color=colours[group],
                    alpha=0.6, lw=0, label=group if result.by else None)
    if loops:
        key = list(zip(t["source"].astype(str), t["line_no"].astype(int)))
        m = np.array([k in loops for k in key], dtype=bool)
        ax2.scatter(t["output_tokens"].to_numpy(dtype=float, na_value=np.nan)[m],
                    t["tau"].to_numpy(dtype=float)[m], s=70, facecolors="none",
                    edgecolors=OKABE_ITO["vermillion"], lw=1.4,
                    label="repetition-loop suspect")
    for be in sorted(breakevens):
        for a in (ax, ax2):
            a.axhline(be, color=BAND, lw=1.2, ls="--",
                      label=f"break-even {be:.3g}" if a is ax2 else None)
    out = t["output_tokens"].to_numpy(dtype=float, na_value=np.nan)
    if np.isfinite(out).any() and np.nanmin(out) > 0 and np.nanmax(out) / np.nanmin(out) > 20:
        ax2.set_xscale("log")
    ax2.set_xlabel("output tokens")
    ax2.set_ylabel("τ_r")
    ax2.set_title("τ_r against output length")
    handles, names = ax2.get_legend_handles_labels()
    h1, n1 = ax.get_legend_handles_labels()
    if handles or h1:
        fig.legend(h1 + handles, n1 + names, loc="outside lower center", frameon=False,
                   ncols=min(5, len(names) + len(n1)))
    fig.suptitle(f"requests: {_logs_title([r.run for r in result.runs], 100)}")
    return fig


# ----------------------------------------------------------------------------- latency

LATENCY_PARTS = ("all", "percentiles", "goodput")
ARM_COLOUR = {"spec": MEASURED, "baseline": BAND}        # speculation blue, baseline vermillion
ARM_NAME = {"spec": "speculation", "baseline": "baseline"}
QUANTILE_STYLE = {"p50": {"ls": "-", "marker": "o"}, "p99": {"ls": "--", "marker": "s"}}


def _load_axis(result) -> tuple[np.ndarray, list[str], str]:
    """The x of each load point, the tick labels and the axis label.  A request rate of inf
    ('all at once') is drawn one step past the largest finite load, its tick '∞'."""
    loads = np.array([p.load for p in result.points], dtype=float)
    finite = loads[np.isfinite(loads)]
    x = loads.copy()
    if (~np.isfinite(loads)).any():
        step = float(np.min(np.diff(np.unique(finite)))) if len(finite) > 1 else \
            (float(finite[0]) if len(finite) else 1.0)
        x[~np.isfinite(loads)] = (float(finite.max()) if len(finite) else 0.0) + step
    ticks = ["∞" if not math.isfinite(v) else f"{v:g}" for v in loads]
    label = "request rate (req/s)" if result.load_kind == "rate" else \
        "max concurrency (requests)"
    return x, ticks, label


def _dodge(x: np.ndarray) -> float:
    """How far the two arms' points sit left and right of their load: their error bars apart."""
    span = float(np.ptp(x)) if len(x) > 1 else max(abs(float(x[0])), 1.0) if len(x) else 1.0
    return 0.012 * span if span > 0 else 0.05


def _arm_estimates(result, arm: str, get) -> list:
    """``get(Arm)`` (an Estimate or None) at every load point, None where the arm was not run."""
    out = []
    for p in result.points:
        a = p.spec if arm == "spec" else p.baseline
        out.append(None if a is None else get(a))
    return out


def _errorbar(ax, x, ests, colour, label, **style) -> tuple[int, int]:
    """Draw estimates with their intervals at ``x``; a side without a bound ('no bound': too
    few requests for that quantile) has no whisker and an open triangle pointing that way.
    Returns how many points lack an upper and a lower bound."""
    y = np.array([math.nan if e is None or e.estimate is None else float(e.estimate)
                  for e in ests], dtype=float)
    lo = np.array([0.0 if e is None or e.ci_low is None or not math.isfinite(e.estimate)
                   else max(0.0, e.estimate - e.ci_low) for e in ests])
    hi = np.array([0.0 if e is None or e.ci_high is None or not math.isfinite(e.estimate)
                   else max(0.0, e.ci_high - e.estimate) for e in ests])
    ax.errorbar(x, y, yerr=np.vstack([lo, hi]), color=colour, ms=5, capsize=3, lw=1.5,
                label=label, zorder=3, **style)
    no_hi = np.array([e is not None and e.ci_low is not None and e.ci_high is None
                      for e in ests])
    no_lo = np.array([e is not None and e.ci_high is not None and e.ci_low is None
                      for e in ests])
    for mask, marker in ((no_hi, "^"), (no_lo, "v")):
        if mask.any():
            off = 9 if marker == "^" else -9
            for xi, yi in zip(x[mask], y[mask]):
                ax.annotate("", (xi, yi), xytext=(0, off), textcoords="offset points",
                            arrowprops={"arrowstyle": "<-", "color": colour, "lw": 1.2})
    return int(no_hi.sum()), int(no_lo.sum())


def _crossover_line(ax, result, xs: dict, text: bool) -> bool:
    """The crossover load as a vertical line (labelled in the legend; with ``text`` also
    beside the line).  False when there is none."""
    c = result.crossover.get("overall")
    if c is None:
        return False
    x = xs.get(c)
    if x is None:
        return False
    from ..analysis.latency import _load_word

    why = [w for k, w in (("per_stream", "per-stream tok/s"), ("goodput", "goodput"))
           if result.crossover.get(k) == c]
    label = f"crossover at {_load_word(c, result.load_kind)}"
    ax.axvline(x, color=OKABE_ITO["black"], ls=":", lw=1.4, label=label, zorder=2)
    if text:
        ax.annotate(f"{label}\n({' and '.join(why)} below the baseline)", (x, 1.0),
                    xycoords=("data", "axes fraction"), xytext=(4, -4),
                    textcoords="offset points", ha="left", va="top", fontsize=8,
                    bbox={"boxstyle": "square,pad=0.2", "fc": "white", "ec": "none",
                          "alpha": 0.85})
    return True


def _percentile_panel(ax, result, metric: str, x, ticks, xlabel, dodge) -> tuple[int, int]:
    from ..analysis.latency import slo_text

    missing = [0, 0]
    for k, arm in enumerate(("spec", "baseline")):
        shift = -dodge if arm == "spec" else dodge
        for q in ("p50", "p99"):
            ests = _arm_estimates(result, arm, lambda a: a.quantiles[metric][q])
            a, b = _errorbar(ax, x + shift, ests, ARM_COLOUR[arm],
                             f"{ARM_NAME[arm]} {q}", mfc="white" if q == "p99" else None,
                             **QUANTILE_STYLE[q])
            missing[0] += a
            missing[1] += b
    bound = result.slo.get(metric)
    if bound is not None:
        ax.axhline(bound, color=GREY, lw=1.6, ls="-.", zorder=1,
                   label=f"SLO {slo_text({metric: bound})}")
    name = {"ttft": "TTFT", "tpot": "TPOT"}[metric]
    ax.set_title(f"{name} p50 and p99 ({result.confidence:.0%} intervals)")
    ax.set_ylabel(f"{name} (ms)")
    ax.set_xticks(x, ticks)
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    return missing[0], missing[1]


def _goodput_panel(ax, result, x, ticks, xlabel, dodge, xs) -> str:
    """Goodput of both arms with their intervals (with an SLO), else per-stream tok/s; the
    crossover marked.  Returns what the panel draws, for the caption."""
    from ..analysis.latency import slo_text

    conf = f"{result.confidence:.0%}"
    if result.slo:
        for arm in ("spec", "baseline"):
            ests = _arm_estimates(result, arm, lambda a: a.goodput)
            _errorbar(ax, x + (-dodge if arm == "spec" else dodge), ests, ARM_COLOUR[arm],
                      f"{ARM_NAME[arm]} goodput", marker="o", ls="-")
        if result.load_kind == "rate":
            fin = np.isfinite([p.load for p in result.points])
            if fin.any():
                xr = np.array([float(np.min(x[fin])), float(np.max(x[fin]))])
                ax.plot(xr, xr, color=GREY, lw=1.0, ls="--", zorder=1,
                        label="goodput = request rate")
        ax.set_title(f"goodput under the SLO {slo_text(result.slo)} ({conf} intervals; a "
                     f"load meets it when ≥ {result.attainment:.0%} of requests do)",
                     wrap=True)
        ax.set_ylabel("goodput (requests/s meeting the SLO)")
        what = "goodput"
    else:
        for arm in ("spec", "baseline"):
            ests = _arm_estimates(result, arm, lambda a: a.per_stream_tok_s)
            _errorbar(ax, x + (-dodge if arm == "spec" else dodge), ests, ARM_COLOUR[arm],
                      f"{ARM_NAME[arm]}", marker="o", ls="-")
        ax.set_title(f"per-stream tok/s = 1000 / p50 TPOT ({conf} intervals; no SLO given: "
                     "no goodput)", wrap=True)
        ax.set_ylabel("per-stream tok/s")
        what = "per-stream tok/s (no SLO given, so no goodput)"
    crossed = _crossover_line(ax, result, xs, text=True)
    ax.set_xticks(x, ticks)
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    if crossed:
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 1.18)            # room for the crossover's label
    return what


@_styled
def latency_figure(result, part: str = "all") -> "Figure":
    """analysis.latency's LatencyResult against the load: TTFT and TPOT p50/p99 of speculation
    and the baseline with their intervals (order statistics; a side the sample cannot bound
    has an arrow instead of a whisker), and goodput under the SLO of both arms with their
    Wilson intervals (per-stream tok/s without an SLO); the crossover load a dotted vertical
    line, the SLO's bounds dash-dotted.  The two arms sit a little left and right of their
    load so that their whiskers do not overlap.  ``part``: 'all' (three panels), 'percentiles'
    (TTFT and TPOT) or 'goodput' (one panel)."""
    from ..errors import EaglelogError

    if part not in LATENCY_PARTS:
        raise ValueError(f"part {part!r}: one of {', '.join(LATENCY_PARTS)}")
    if not result.points:
        raise EaglelogError("no load point to draw")
    x, ticks, xlabel = _load_axis(result)
    xs = {p.load: float(xi) for p, xi in zip(result.points, x)}
    dodge = _dodge(x)
    if part == "all":
        fig = _new_figure(10.0, 8.0)
        axd = fig.subplot_mosaic([["ttft", "tpot"], ["goodput", "goodput"]])
        pct_axes = [axd["ttft"], axd["tpot"]]
        good_ax = axd["goodput"]
    elif part == "percentiles":
        fig = _new_figure(10.0, 4.6)
        pct_axes = list(fig.subplots(1, 2))
        good_ax = None
    else:
        fig = _new_figure(10.0, 4.6)
        pct_axes = []
        good_ax = fig.subplots()
    no_hi = no_lo = 0
    for ax, metric in zip(pct_axes, ("ttft", "tpot")):
        a, b = _percentile_panel(ax, result, metric, x, ticks, xlabel, dodge)
        no_hi, no_lo = no_hi + a, no_lo + b
        _crossover_line(ax, result, xs, text=False)
    what = _goodput_panel(good_ax, result, x, ticks, xlabel, dodge, xs) \
        if good_ax is not None else None
    if pct_axes:
        # one legend for both panels: the arms and quantiles, the SLO's bounds, the crossover
        found: dict = {}
        for ax in pct_axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                found.setdefault(lab, h)
        order = sorted(found, key=lambda lab: (lab.startswith("SLO"),
                                               lab.startswith("crossover")))
        handles, labels = [found[lab] for lab in order], order
        if no_hi or no_lo:
            from matplotlib.lines import Line2D
            handles.append(Line2D([], [], ls="", marker=r"$\uparrow$", color=GREY, ms=9))
            labels.append("no upper bound (too few requests)")
        if good_ax is None:
            fig.legend(handles, labels, loc="outside lower center", frameon=False,
                       ncols=min(4, len(labels)))
        else:
            # the percentiles grow with the load: the upper left is where the data is not
            pct_axes[0].legend(handles, labels, loc="upper left", frameon=True,
                               framealpha=0.85, fontsize=8)
    if good_ax is not None:
        good_ax.legend(loc="upper left", frameon=True, framealpha=0.85, fontsize=8)
    def files(arm: str) -> str:
        names = [os.path.basename(s.rsplit(":", 1)[0] if re.search(r":\d+$", s) else s)
                 for a in _arm_estimates(result, arm, lambda a: a) if a is not None
                 for s in a.sources]
        return _logs_title(names, 45)

    head = {"all": "latency under load", "percentiles": "latency percentiles under load",
            "goodput": "goodput under load" if result.slo else "per-stream tok/s under load"}
    fig.suptitle(f"{head[part]}: speculation ({files('spec')}) vs baseline "
                 f"({files('baseline')})", wrap=True)
    # the caption: what is drawn, nothing else
    unit = "request rate" if result.load_kind == "rate" else "max concurrency"
    parts = []
    if pct_axes:
        parts.append("TTFT and TPOT p50 (solid) and p99 (dashed) of speculation (blue) and the "
                     f"baseline (vermillion) with their {result.confidence:.0%} intervals")
    if what:
        parts.append(f"{what} of both with {result.confidence:.0%} intervals")
    text = _and(parts) + f" against the {unit}"
    if result.slo and pct_axes:
        text += "; the SLO's bounds dash-dotted"
    c = result.crossover.get("overall")
    if c is not None:
        from ..analysis.latency import _load_word
        text += f"; the crossover at {_load_word(c, result.load_kind)} dotted"
    if no_hi:
        text += "; an arrow where a percentile has no upper bound (too few requests)"
    fig.eaglelog_caption = text[0].upper() + text[1:] + "."
    return fig
