"""eaglelog plot: every kind renders from the sample logs (a real matplotlib render), the figures
draw the numbers of the analysis results, the output is deterministic, and a missing matplotlib
is a one-line error naming the extra."""
import dataclasses
import datetime as dt
import json
import re
import sys

import numpy as np
import pytest

import eaglelog
from conftest import SAMPLES
from eaglelog.analysis.breakeven import Baseline, breakeven
from eaglelog.analysis.compare import compare, runs_from_log
from eaglelog.analysis.summary import summarize
from eaglelog.analysis.sweep import sweep
from eaglelog.report import plot

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"
SWEEP = sorted((SAMPLES / "sweep").glob("*.log"))
BATCH = SAMPLES / "batch_eagle3.log"
BATCH_BASE = SAMPLES / "batch_baseline.log"

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})", re.M)


def shifted(text: str, seconds: float) -> str:
    """The log with every timestamp moved by ``seconds``."""
    def move(m):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f") + dt.timedelta(
            seconds=seconds)
        return "[" + t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return STAMP.sub(move, text)


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """eagle3_5step.log, then the 2-step server started 10 minutes later in the same file."""
    p = tmp_path_factory.mktemp("restart") / "restarted.log"
    p.write_text(FIVE.read_text() + shifted(TWO.read_text(), 600))
    return p


def svg_texts(path) -> str:
    return path.read_text(encoding="utf-8")


def units(log, fn):
    return [dataclasses.replace(fn(sub), source=label) for label, sub in log.units()]


# ----------------------------------------------------------------------------- every kind

KIND_CASES = {
    "timeline": ([FIVE], [], ["timeline: ", "accept length", "(tokens/verify)",
                              "decode throughput", "(tok/s)", "running requests",
                              "profile cycle", "TOTAL (ms)", "time since the log", "TP0"]),
    "phases": ([FIVE, TWO], [], ["cycle breakdown per run", "ms per cycle", "Draft steps",
                                 "Target verify", "Draft re-extend", "27.28 ms", "25.90 ms",
                                 "eagle3_5step.log", "eagle3_2step.log"]),
    "breakeven": ([BATCH], ["--baseline-log", BATCH_BASE],
                  ["break-even accept length by batch size", "accept length (tokens/verify)",
                   "running requests (batch size", "batch_eagle3.log", "batch_baseline.log",
                   "below", "above", "0.917×"]),
    "sweep": (SWEEP, ["--baseline-toks", "90"],
              ["sweep of 5 runs", "effective tok/s", "speculative_num_steps", "baseline 90 tok/s",
               "best", "steps1.log"]),
    "compare": ([FIVE, TWO], [], ["compare: ", "eagle3_2step.log", "vs the reference",
                                  "eagle3_5step.log", "ratio changed / reference",
                                  "1.0 = no change", "cycle time (ms)",
                                  "accept length (tokens/verify)"]),
}


@pytest.mark.parametrize("kind", list(KIND_CASES))
def test_every_kind_renders_an_svg_with_its_labels(run, tmp_path, kind):
    logs, extra, labels = KIND_CASES[kind]
    out = tmp_path / f"{kind}.svg"
    r = run("plot", "--kind", kind, *extra, "-o", out, *logs)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""                       # stdout carries data only: the file is the data
    svg = svg_texts(out)
    assert svg.startswith("<?xml") and "</svg>" in svg
    assert "<text" in svg                       # svg.fonttype none: labels stay text
    for label in labels:
        assert label in svg, (kind, label)
    for p in logs:
        if kind != "sweep":
            assert str(p) in svg or p.name in svg


@pytest.mark.parametrize("fmt,magic", [("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-"),
                                       ("svg", b"<?xml")])
def test_the_suffix_chooses_the_format_and_output_is_deterministic(run, tmp_path, fmt, magic):
    a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
    for out in (a, b):
        assert run("plot", "--kind", "timeline", "-o", out, FIVE).exit_code == 0
    assert a.read_bytes().startswith(magic)
    assert a.read_bytes() == b.read_bytes()
    if fmt == "png":
        from PIL import Image
        assert Image.open(a).size == (1000, 800)    # 10 × 8 in at 100 dpi: 100% zoom
    if fmt == "svg":
        text = a.read_text()
        assert "<dc:date>" not in text and "eaglelog 0.1.0" in text


def test_every_kind_is_deterministic_in_svg(tmp_path):
    log = eaglelog.parse([FIVE, TWO])
    for make in (lambda: plot.timeline_figure(log),
                 lambda: plot.phases_figure(units(log, summarize)),
                 lambda: plot.compare_figure(compare(runs_from_log(log, "sglang", None, 0.95)))):
        a, b = tmp_path / "a.svg", tmp_path / "b.svg"
        plot.save_figure(make(), a)
        plot.save_figure(make(), b)
        assert a.read_bytes() == b.read_bytes()


# ----------------------------------------------------------------------------- values drawn

def test_timeline_draws_the_decode_windows_and_the_profile_blocks():
    from eaglelog.analysis.breakeven import one_source

    log = eaglelog.parse(FIVE)
    fig = plot.timeline_figure(log)
    axes = fig.axes
    assert [a.get_ylabel() for a in axes] == ["accept length\n(tokens/verify)",
                                              "decode throughput\n(tok/s)", "running requests",
                                              "profile cycle\nTOTAL (ms)"]
    _, w = one_source(log, str(FIVE))
    acc = np.concatenate([ln.get_ydata() for ln in axes[0].lines])
    assert np.allclose(np.sort(acc), np.sort(w["accept_len"].to_numpy(float)))
    thr = np.concatenate([ln.get_ydata() for ln in axes[1].lines])
    assert np.allclose(np.sort(thr), np.sort(w["gen_throughput"].to_numpy(float)))
    prof = axes[3].lines[0].get_ydata()
    assert len(prof) == 42 and np.allclose(prof, log.prof.sort_values("line_no").total_ms)
    # the untimed EAGLE3_PROF blocks sit between the decode lines around them
    px = axes[3].lines[0].get_xdata()
    assert np.all(np.diff(px) > 0) and px[0] > 0
    assert axes[0].get_legend().get_texts()[0].get_text() == "TP0"
    assert axes[-1].get_xlabel() == "time since the log's first line (s)"
    # Okabe-Ito colours only
    palette = {c.lower() for c in plot.OKABE_ITO.values()}
    from matplotlib.colors import to_hex
    for ax in axes:
        for ln in ax.lines:
            assert to_hex(ln.get_color()) in palette


def test_timeline_marks_restarts_and_idle_gaps(run, restarted, tmp_path):
    log = eaglelog.parse(restarted)
    fig = plot.timeline_figure(log)
    restart_lines = [ln for ln in fig.axes[0].lines if ln.get_label() == "server restart"]
    assert len(restart_lines) == 1
    sa = log.server_args.sort_values("line_no")
    first = min(df["timestamp"].dropna().min() for df in log.tables.values()
                if "timestamp" in df and df["timestamp"].notna().any())
    want = (sa["timestamp"].iloc[1] - first).total_seconds() / 60
    assert fig.axes[-1].get_xlabel() == "time since the log's first line (min)"  # > 10 min
    assert restart_lines[0].get_xdata()[0] == pytest.approx(want)
    assert want == pytest.approx(10)
    # every panel marks it
    for ax in fig.axes:
        assert any(ln.get_linestyle() == "--" and ln.get_xdata()[0] == pytest.approx(want)
                   for ln in ax.lines)
    # the gap before the restart is an idle window (analysis.windows): shaded, and the lines
    # break there (one line per segment, the legend names the rank once)
    spans = [p for p in fig.axes[0].patches if p.get_label() == "idle gap" or
             p.get_facecolor()[:3] == pytest.approx((0.6, 0.6, 0.6))]
    assert spans
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "TP0", "idle gap", "server restart"]
    out = tmp_path / "restart.svg"
    assert run("plot", "-o", out, restarted).exit_code == 0
    svg = out.read_text()
    assert "restart (start-up 2)" in svg and "idle gap" in svg and "server restart" in svg


def test_phases_bars_are_the_summary_phases_with_the_total_interval():
    log = eaglelog.parse([FIVE, TWO])
    sums = units(log, summarize)
    fig = plot.phases_figure(sums)
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 2 * 4
    heights = np.array([b.get_height() for b in bars]).reshape(4, 2)   # phase × run
    for j, s in enumerate(sums):
        assert heights[:, j] == pytest.approx([p.ms_per_cycle.estimate for p in s.phases])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["eagle3_5step.log",
                                                            "eagle3_2step.log"]
    total = [ln for ln in ax.lines if len(ln.get_ydata()) == 2][0]
    assert total.get_ydata() == pytest.approx([s.cycle_ms.estimate for s in sums])
    caps = sorted(y for ln in ax.lines if len(ln.get_ydata()) == 2 for y in ln.get_ydata())
    for s in sums:
        assert any(c == pytest.approx(s.cycle_ms.ci_high) for c in caps)
        assert any(c == pytest.approx(s.cycle_ms.ci_low) for c in caps)
    assert ax.get_ylabel() == "ms per cycle"


def test_breakeven_band_per_batch_is_the_breakeven_result():
    r = breakeven(eaglelog.parse(BATCH), Baseline(log=eaglelog.parse(BATCH_BASE)), by_batch=True)
    fig = plot.breakeven_figure([r])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8", "16", "32"]
    band = ax.collections[0]          # fill_between: the break-even interval
    verts = band.get_paths()[0].vertices
    for i, b in enumerate(r.by_batch):
        ys = verts[np.isclose(verts[:, 0], i), 1]
        assert ys.min() == pytest.approx(b.breakeven_accept_len.ci_low)
        assert ys.max() == pytest.approx(b.breakeven_accept_len.ci_high)
    mid = [ln for ln in ax.lines if len(ln.get_ydata()) == 6]
    assert any(np.allclose(ln.get_ydata(), [b.breakeven_accept_len.estimate for b in r.by_batch])
               for ln in mid)
    assert any(np.allclose(ln.get_ydata(), [b.accept_len.estimate for b in r.by_batch])
               for ln in mid)
    notes = [t.get_text() for t in ax.texts]
    assert notes[-1] == "0.917×\nbelow" and notes[0].endswith("above")
    assert ax.get_ylabel() == "accept length (tokens/verify)"


def test_breakeven_per_run_with_a_stated_rate(run, tmp_path):
    log = eaglelog.parse([FIVE, TWO])
    rs = units(log, lambda sub: breakeven(sub, Baseline(tok_s=90)))
    fig = plot.breakeven_figure(rs)
    ax = fig.axes[0]
    rects = [p for p in ax.patches]
    assert len(rects) == 2
    for rect, r in zip(rects, rs):
        assert rect.get_y() == pytest.approx(r.breakeven_accept_len.ci_low)
        assert rect.get_y() + rect.get_height() == pytest.approx(r.breakeven_accept_len.ci_high)
    out = tmp_path / "be.svg"
    assert run("plot", "--kind", "breakeven", "--baseline-toks", "90", "-o", out, FIVE,
               TWO).exit_code == 0
    assert "vs baseline 90 tok/s" in out.read_text()


def test_sweep_draws_effective_throughput_against_the_key_and_the_baseline():
    res = sweep(eaglelog.parse(SWEEP), baseline=Baseline(tok_s=90))
    fig = plot.sweep_figure(res)
    ax = fig.axes[0]
    by_steps = sorted(res.rows, key=lambda r: r.keys["speculative_num_steps"])
    data = [ln for ln in ax.lines if len(ln.get_xdata()) == 5][0]
    assert list(data.get_xdata()) == [1, 2, 3, 5, 7]
    assert data.get_ydata() == pytest.approx([r.eff_tok_s.estimate for r in by_steps])
    base = [ln for ln in ax.lines if ln.get_label() == "baseline 90 tok/s"]
    assert len(base) == 1 and base[0].get_ydata()[0] == pytest.approx(90)
    # 7 steps is not told apart from 5 on these runs (tests/test_compare_sweep.py)
    assert sorted(t.get_text() for t in ax.texts) == ["best", "tied"]
    assert ax.get_xlabel() == "speculative_num_steps  (with speculative_num_draft_tokens)"
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        f"{k} · {r.keys['speculative_num_draft_tokens']}" for k, r in
        zip([1, 2, 3, 5, 7], by_steps)]


def test_compare_draws_each_metric_ratio_with_one_marked():
    log = eaglelog.parse([FIVE, TWO])
    res = compare(runs_from_log(log, "sglang", None, 0.95))
    fig = plot.compare_figure(res)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "per-stream rate (tok/s)" and "cycle time (ms)" in labels
    assert len(labels) == len(res.metrics) and res.metrics[0].metric == "eff_tok_s"
    one = [ln for ln in ax.lines if ln.get_label() == "1.0 = no change"]
    assert one and list(one[0].get_xdata()) == [1, 1]
    points = [ln for ln in ax.lines if ln.get_marker() == "o"]
    # a metric with no ratio (0.00 ms in both runs: not resolvable) gets no point
    finite = [m.ratio.estimate for m in res.metrics if np.isfinite(m.ratio.estimate)]
    assert len(finite) == len(res.metrics) - 1
    assert sorted(p.get_xdata()[0] for p in points) == pytest.approx(sorted(finite))
    hollow = [p for p in points if p.get_markerfacecolor() == "white"]
    assert len(hollow) == sum(1 for m in res.metrics if not (m.significant and m.practical)
                              and np.isfinite(m.ratio.estimate))
    # a significant difference is filled with its direction's colour: the 2-step run's
    # per-stream rate and accept length are worse (vermillion), its cycle better (green)
    from matplotlib.colors import to_hex
    face = {round(p.get_xdata()[0], 9): to_hex(p.get_markerfacecolor()) for p in points}
    by = {m.metric: m for m in res.metrics}
    assert by["eff_tok_s"].direction == "worse" and by["cycle_ms"].direction == "better"
    assert face[round(by["eff_tok_s"].ratio.estimate, 9)] == plot.DIRECTION["worse"].lower()
    assert face[round(by["accept_len"].ratio.estimate, 9)] == plot.DIRECTION["worse"].lower()
    assert face[round(by["cycle_ms"].ratio.estimate, 9)] == plot.DIRECTION["better"].lower()
    assert [t.get_text() for t in ax.get_legend().get_texts()][-3:] == [
        "better", "worse", "no detectable difference"]


# ----------------------------------------------------------------------------- errors

def test_missing_matplotlib_is_one_line_naming_the_extra(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "x.png"
    r = run("plot", "-o", out, FIVE)
    assert r.exit_code == 1
    assert r.stderr == ("eaglelog: error: plotting needs matplotlib: pip install "
                        "'eaglelog[plot]' (in a checkout: pip install '.[plot]')\n")
    assert not out.exists() and r.stdout == ""
    # report without matplotlib still writes the tables and says the pictures need the extra
    # (issue 16; its own tests check the page)
    r = run("report", "-o", tmp_path / "r.html", FIVE)
    assert r.exit_code == 0 and "'eaglelog[plot]'" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(eaglelog.EaglelogError, match=r"eaglelog\[plot\]"):
        plot.timeline_figure(eaglelog.parse(FIVE))


@pytest.mark.parametrize("args,msg", [
    (["-o", "x.gif"], "plots are written as .png, .svg, .pdf"),
    (["-o", "x"], "plots are written as"),
    (["--kind", "breakeven", "-o", "x.png"], "give the baseline"),
    (["--kind", "timeline", "--baseline-toks", "90", "-o", "x.png"], "takes no baseline"),
    (["--kind", "phases", "--key", "tp_size", "-o", "x.png"], "--key is for --kind sweep"),
    (["--kind", "compare", "-o", "x.png"], "needs at least two runs"),
    (["--kind", "pie", "-o", "x.png"], "Invalid value for '--kind'"),
])
def test_usage_errors_exit_2(run, tmp_path, monkeypatch, args, msg):
    monkeypatch.chdir(tmp_path)
    r = run("plot", *args, FIVE)
    assert r.exit_code == 2, r.stderr
    assert msg in r.stderr
    assert not list(tmp_path.iterdir())


def test_output_is_required(run):
    r = run("plot", FIVE)
    assert r.exit_code == 2 and "Missing option '-o'" in r.stderr


def test_runtime_errors_are_one_line(run, tmp_path):
    r = run("plot", "--kind", "phases", "-o", tmp_path / "p.png", SAMPLES / "baseline.log")
    assert r.exit_code == 1
    assert r.stderr.startswith("eaglelog: error: no EAGLE3_PROF blocks") and \
        r.stderr.count("\n") == 1
    r = run("plot", "-o", tmp_path / "nodir" / "p.png", FIVE)
    assert r.exit_code == 1 and r.stderr.startswith("eaglelog: error: ") and \
        "cannot write" in r.stderr and r.stderr.count("\n") == 1


def test_plot_kinds_of_the_cli_are_the_library_kinds():
    from eaglelog.cli import PLOT_KINDS
    assert PLOT_KINDS == plot.KINDS


def test_the_readme_shows_one_committed_picture_of_each_kind():
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    script = (ROOT / "docs" / "make_figures.py").read_text()
    for kind in plot.KINDS:
        assert f"](docs/img/{kind}.png)" in readme
        png = ROOT / "docs" / "img" / f"{kind}.png"
        assert png.read_bytes().startswith(b"\x89PNG")
        assert f'"{kind}":' in script
    for cmd in ("eaglelog plot", "eaglelog report"):
        assert f"| `{cmd} LOG..." in readme


@pytest.mark.parametrize("command", ["plot", "report"])
def test_help_ends_with_examples(run, command):
    r = run(command, "--help")
    assert r.exit_code == 0
    head, _, rest = r.stdout.partition("Examples:")
    examples, _, options = rest.partition("Options:")
    assert examples.count(f"eaglelog {command} ") >= 4 and "-o " in examples
    assert options and "--output" in options       # the examples close the description
    assert "'eaglelog[plot]'" in head


# ----------------------------------------------------------------------------- issue 16: pictures

def data_lines(ax):
    """The lines of a panel that draw data (not the restart and reference marks)."""
    return [ln for ln in ax.lines if not ln.get_label().startswith("_child") and
            ln.get_label() not in ("server restart", "sync-mode block")]


def test_each_run_keeps_its_own_colour_in_every_panel_including_the_profiler():
    from matplotlib.colors import to_hex

    log = eaglelog.parse([FIVE, TWO])
    fig = plot.timeline_figure(log)
    want = {"eagle3_5step.log · TP0": plot.SERIES_COLOURS[0].lower(),
            "eagle3_2step.log · TP0": plot.SERIES_COLOURS[1].lower()}
    assert len(fig.axes) == 4
    for ax in fig.axes:                           # accept, throughput, running, profiler
        got = {ln.get_label(): to_hex(ln.get_color()) for ln in data_lines(ax)}
        assert got == want, ax.get_ylabel()
        assert [t.get_text() for t in ax.get_legend().get_texts()] == list(want)
    assert plot.caption(fig) == (
        "Accept length, decode throughput and running requests per decode window and the "
        "profiler's cycle time (EAGLE3_PROF TOTAL, from 0 ms) over time, one colour per input "
        "(2 lines).")


def test_runs_beyond_the_palette_get_a_line_style(tmp_path):
    from matplotlib.colors import to_hex

    head = "".join(TWO.read_text().splitlines(keepends=True)[:160])
    paths = []
    for i in range(10):
        p = tmp_path / f"run{i:02d}.log"
        p.write_text(head)
        paths.append(p)
    fig = plot.timeline_figure(eaglelog.parse(paths))
    for ax in fig.axes:
        pairs = [(to_hex(ln.get_color()), ln.get_linestyle()) for ln in data_lines(ax)]
        assert len(pairs) == 10 and len(set(pairs)) == 10         # every run its own pair
        assert pairs[:8] == [(c.lower(), "-") for c in plot.SERIES_COLOURS]
        assert pairs[8:] == [(plot.SERIES_COLOURS[0].lower(), "--"),
                             (plot.SERIES_COLOURS[1].lower(), "--")]
    assert [plot.line_style(i) for i in (0, 8, 16, 24, 32)] == [
        {"color": plot.SERIES_COLOURS[0], "linestyle": s} for s in ("-", "--", ":", "-.", "-")]
    assert "one colour and line style per input (10 lines)" in plot.caption(fig)


def test_a_restart_breaks_every_line_including_the_profilers(restarted):
    log = eaglelog.parse(restarted)
    fig = plot.timeline_figure(log)
    restart = [ln for ln in fig.axes[0].lines if ln.get_label() == "server restart"][0]
    at = restart.get_xdata()[0]
    assert at == pytest.approx(10)                             # minutes
    for ax in fig.axes:
        lines = data_lines(ax)
        assert len(lines) == 1                  # one line per rank, the same colour after
        x = np.asarray(lines[0].get_xdata(), float)
        y = np.asarray(lines[0].get_ydata(), float)
        before = np.flatnonzero((x < at) & np.isfinite(y))
        after = np.flatnonzero(x >= at)
        assert len(before) and len(after)
        # a NaN point between the last point before the restart and the first after it
        assert np.isnan(y[before[-1] + 1:after[0]]).any(), ax.get_ylabel()
        # and no two neighbouring drawn points straddle it
        ok = np.isfinite(y)
        straddle = ok[:-1] & ok[1:] & (x[:-1] < at) & (x[1:] >= at)
        assert not straddle.any(), ax.get_ylabel()
    # the profiler's line: 42 blocks before, 48 after, each run's TOTALs drawn
    prof = data_lines(fig.axes[-1])[0]
    y = np.asarray(prof.get_ydata(), float)
    assert np.isfinite(y).sum() == 42 + 48 == len(log.prof)
    assert np.allclose(y[np.isfinite(y)], log.prof.sort_values("line_no").total_ms)
    cap = plot.caption(fig)
    assert "idle gaps shaded and a server restart dashed (the lines break there)" in cap


def test_the_profiler_axis_starts_at_zero():
    log = eaglelog.parse(FIVE)
    fig = plot.timeline_figure(log)
    by = {a.get_ylabel(): a for a in fig.axes}
    prof = by["profile cycle\nTOTAL (ms)"]
    lo, hi = prof.get_ylim()
    top = log.prof["total_ms"].max()
    assert lo == 0 and hi == pytest.approx(top * 1.08)
    assert log.prof["total_ms"].min() / top > 0.95    # 27 ms ± 2 %: drawn as ± 2 %, not a cliff
    assert by["decode throughput\n(tok/s)"].get_ylim()[0] == 0
    assert by["running requests"].get_ylim()[0] == 0


def test_the_caption_describes_only_what_is_drawn(tmp_path):
    fig = plot.timeline_figure(eaglelog.parse(SAMPLES / "baseline.log"))
    cap = plot.caption(fig)
    assert [a.get_ylabel() for a in fig.axes] == ["decode throughput\n(tok/s)",
                                                  "running requests"]
    assert cap.startswith("Decode throughput and running requests per decode window over time")
    for absent in ("accept length", "profiler", "idle", "restart", "colour", "sync"):
        assert absent not in cap.lower(), absent
    # blocks without timestamps nor decode lines: the profiler only, by line
    only = tmp_path / "prof_only.log"
    only.write_text("# SYNTHETIC: the EAGLE3_PROF blocks of eagle3_5step.log only\n" + "".join(
        ln for ln in FIVE.read_text().splitlines(keepends=True) if not ln.startswith("[")))
    fig = plot.timeline_figure(eaglelog.parse(only))
    assert plot.caption(fig) == ("The profiler's cycle time (EAGLE3_PROF TOTAL, from 0 ms) by "
                                 "line in the log (no timestamps).")
    assert plot.caption(object()) == ""


def phase_texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_phases_label_every_share_a_thin_phase_beside_its_bar():
    log = eaglelog.parse([FIVE, TWO])
    sums = units(log, summarize)
    fig = plot.phases_figure(sums)
    texts = phase_texts(fig)
    for s in sums:
        for p in s.phases:
            if p.ms_per_cycle.estimate <= 0:
                continue
            share, ms = f"{p.pct:.1f}%", f"{p.ms_per_cycle.estimate:.2f} ms"
            assert f"{share} · {ms}" in texts or f"{share}\n{ms}" in texts, p.phase
    draft = next(p for p in sums[0].phases if p.phase == "Draft steps")
    verify = next(p for p in sums[0].phases if p.phase == "Target verify")
    assert f"{draft.ms_per_cycle.estimate:.2f}" == "0.95" and verify.pct > 90
    ax = fig.axes[0]
    label = next(t for t in ax.texts if t.get_text() == f"{draft.pct:.1f}% · 0.95 ms")
    # beside the bar (a leader from the bar's edge), not inside a 1-pixel segment
    assert label.xy[0] == pytest.approx(plot.BAR / 2) and label.get_position()[0] > plot.BAR / 2
    assert f"{verify.pct:.1f}%\n{verify.ms_per_cycle.estimate:.2f} ms" in texts   # inside
    # no label overlaps another once drawn
    from matplotlib.text import Text

    fig.draw_without_rendering()
    boxes = [Text.get_window_extent(t) for t in ax.texts]      # the text, not its leader
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)
    assert plot.caption(fig).startswith("Cycle breakdown per run: each phase's mean ms per "
                                        "cycle stacked, labelled with its share")


@pytest.fixture(scope="module")
def sync_log(tmp_path_factory):
    """eagle3_5step.log with every EAGLE3_PROF block in sync mode (synthetic, as its source)."""
    p = tmp_path_factory.mktemp("sync") / "sync5.log"
    p.write_text(FIVE.read_text().replace(" tok, no sync)", " tok, sync)"))
    return p


def test_sync_mode_blocks_give_the_phase_shares_not_the_cycle(run, sync_log, tmp_path):
    s = summarize(eaglelog.parse(sync_log))
    assert s.cycle_ms is None and s.phases_from == "42 sync-mode blocks"
    fig = plot.phases_figure([s])
    (ax,) = fig.axes
    assert ax.get_ylabel() == "share of the cycle (%)"
    heights = [b.get_height() for b in ax.patches]
    assert heights == pytest.approx([p.pct for p in s.phases])
    assert sum(heights) == pytest.approx(100, abs=0.5)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["sync5.log\n(42 sync-mode blocks)"]
    assert "sync-mode blocks: phase shares" in ax.get_title()
    assert "no cycle time" in ax.get_title()
    texts = phase_texts(fig)
    assert all(f"{p.pct:.1f}%" in texts for p in s.phases if p.pct > 0)
    assert not any(t.endswith(" ms") for t in texts)          # no cycle time anywhere
    assert plot.caption(fig) == ("Cycle breakdown per run: from sync-mode blocks only: each "
                                 "phase's share of the cycle (%), no cycle time.")
    out = tmp_path / "sync.svg"
    r = run("plot", "--kind", "phases", "-o", out, sync_log)
    assert r.exit_code == 0, r.stderr
    assert "share of the cycle (%)" in out.read_text()
    assert "no EAGLE3_PROF blocks" not in r.stderr


def test_sync_and_no_sync_runs_are_drawn_apart(sync_log):
    log = eaglelog.parse(FIVE)
    timed, shares = summarize(log), summarize(eaglelog.parse(sync_log))
    fig = plot.phases_figure([timed, shares])
    a, b = fig.axes
    assert a.get_ylabel() == "ms per cycle" and b.get_ylabel() == "share of the cycle (%)"
    assert [p.get_height() for p in a.patches] == pytest.approx(
        [p.ms_per_cycle.estimate for p in timed.phases])
    assert [p.get_height() for p in b.patches] == pytest.approx([p.pct for p in shares.phases])
    # one colour per phase in both, one legend
    assert [p.get_facecolor() for p in a.patches] == [p.get_facecolor() for p in b.patches]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "Draft steps", "Target verify", "Draft re-extend", "Other overhead",
        "TOTAL with 95% interval"]


def long_config_sweep(tmp_path, n=3):
    """Sweep logs whose server_args differ in every string value (~40 keys, long paths), as
    fuzz finding R7 (synthetic: the sweep samples with their values rewritten)."""
    paths = []
    for i, k in enumerate((1, 2, 3)[:n]):
        text = (SAMPLES / "sweep" / f"steps{k}.log").read_text()
        head, _, rest = text.partition("server_args=ServerArgs(")
        args, _, tail = rest.partition("\n")
        args = re.sub(r"=(None|'[^']*'|False|True)",
                      lambda m: f"='/very/long/deployment/path/run-{i}/{m.group(1).strip(chr(39))}"
                                f"-with-a-suffix-that-goes-on'", args)
        p = tmp_path / f"long{i}.log"
        p.write_text(head + "server_args=ServerArgs(" + args + "\n" + tail)
        paths.append(p)
    return paths


def test_a_sweep_over_forty_keys_shows_three_and_counts_the_rest(tmp_path):
    import warnings

    res = sweep(eaglelog.parse(long_config_sweep(tmp_path)), baseline=Baseline(tok_s=90))
    assert len(res.keys) > 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # any warning that escapes fails the test
        fig = plot.sweep_figure(res)
        plot.save_figure(fig, tmp_path / "s.png")
        plot.figure_svg(fig)
    assert not getattr(fig, "eaglelog_warnings", ())      # the layout did not collapse
    ax = fig.axes[0]
    assert ax.get_position().height > 0.3 and ax.get_position().width > 0.5
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    k1, k2, k3 = res.keys[:3]
    assert ax.get_xlabel() == f"{k1} · {k2} · {k3} +{len(res.keys) - 3} more"
    assert len(ticks) == 3
    for t, row in zip(ticks, res.rows):
        lines = t.split("\n")
        assert all(len(line) <= plot.TICK_WIDTH for line in lines)
        assert "".join(lines).startswith(str(row.keys[k1])[:plot.VALUE_WIDTH - 1])
        assert t.count("…") == 3                     # three values, each shortened
    # a numeric key on the x axis: the others in the label, three keys in all
    res = sweep(eaglelog.parse(long_config_sweep(tmp_path)), baseline=Baseline(tok_s=90),
                keys=["speculative_num_steps", "model_path", "tokenizer_path", "dtype"])
    ax = plot.sweep_figure(res).axes[0]
    assert ax.get_xlabel() == "speculative_num_steps  (with model_path · tokenizer_path +1 more)"
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert plot._value("x" * 30) == "x" * 23 + "…" and len(plot._value("x" * 30)) == 24
    assert plot._keys_text([f"k{i}" for i in range(40)]) == "k0 · k1 · k2 +37 more"


def test_no_matplotlib_warning_reaches_stderr_of_plot_and_report(run, tmp_path):
    logs = long_config_sweep(tmp_path)
    r = run("plot", "--kind", "sweep", "--baseline-toks", "90", "-o", tmp_path / "p.png", *logs)
    assert r.exit_code == 0, r.stderr
    assert "Warning" not in r.stderr and "constrained_layout" not in r.stderr
    r = run("report", "--baseline-toks", "90", "-o", tmp_path / "r.html", *logs)
    assert r.exit_code == 0, r.stderr
    assert "Warning" not in r.stderr and "constrained_layout" not in r.stderr


def test_a_layout_warning_is_kept_on_the_figure_never_printed(tmp_path):
    import warnings

    fig = plot._new_figure(1.0, 1.0)
    ax = fig.subplots()
    ax.set_xlabel("\n".join(["a very long label"] * 40))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plot.save_figure(fig, tmp_path / "x.png")
    assert caught == []
    assert any("constrained_layout not applied" in w for w in fig.eaglelog_warnings)


def test_plot_says_what_it_wrote(run, tmp_path):
    from eaglelog.report import fmt_bytes

    out = tmp_path / "timeline.png"
    r = run("plot", "-o", out, FIVE)
    assert r.exit_code == 0 and r.stdout == ""
    assert r.stderr == f"eaglelog: wrote {out} ({fmt_bytes(out.stat().st_size)})\n"
    assert "KB)" in r.stderr
    for args in (["-q", "plot"], ["plot", "-q"]):
        r = run(*args, "-o", out, FIVE)
        assert r.exit_code == 0 and r.stderr == ""


def test_a_tied_row_is_marked_on_the_sweep_plot(tmp_path):
    copy = tmp_path / "again.log"
    copy.write_text(SWEEP[3].read_text())           # steps5.log once more: tied with itself
    res = sweep(eaglelog.parse([SWEEP[3], copy, SWEEP[2]]), baseline=Baseline(tok_s=90))
    assert [r.mark for r in res.rows] == ["best", "tied", ""]
    ax = plot.sweep_figure(res).axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["best", "tied"]


def test_every_file_written_is_said(run, tmp_path):
    """export -o, acceptance --plot and schedule --plot say what they wrote, as plot and report
    do (one line, unless -q)."""
    from eaglelog.report import fmt_bytes

    def said(out):
        return f"eaglelog: wrote {out} ({fmt_bytes(out.stat().st_size)})\n"

    out = tmp_path / "run.json"
    r = run("export", FIVE, "-o", out)
    assert r.exit_code == 0 and r.stderr == said(out)
    assert json.loads(out.read_text())["source"]
    png = tmp_path / "acc.png"
    r = run("acceptance", "--plot", png, "-f", "json", FIVE)
    assert r.exit_code == 0 and r.stderr.endswith(said(png))
    sched = sorted(str(p) for p in (SAMPLES / "schedule").glob("steps*.log"))
    png = tmp_path / "sched.png"
    r = run("-q", "schedule", "--baseline-log", SAMPLES / "batch_baseline.log", "--plot", png,
            *sched)
    assert r.exit_code == 0 and r.stderr == "" and png.stat().st_size > 1000
    r = run("schedule", "--baseline-log", SAMPLES / "batch_baseline.log", "--plot", png, *sched)
    assert r.exit_code == 0 and r.stderr.endswith(said(png))
