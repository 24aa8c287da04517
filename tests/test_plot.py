"""eaglelog plot: every kind renders from the sample logs (a real matplotlib render), the figures
draw the numbers of the analysis results, the output is deterministic, and a missing matplotlib
is a one-line error naming the extra."""
import dataclasses
import datetime as dt
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
                   "below", "above", "0.918×"]),
    "sweep": (SWEEP, ["--baseline-toks", "90"],
              ["sweep of 5 runs", "effective tok/s", "speculative_num_steps", "baseline 90 tok/s",
               "best", "tied", "steps1.log"]),
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
    assert notes[-1] == "0.918×\nbelow" and notes[0].endswith("above")
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
    assert sorted(t.get_text() for t in ax.texts) == ["best", "tied"]
    assert ax.get_xlabel().startswith("speculative_num_steps")


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
    r = run("report", "-o", tmp_path / "r.html", FIVE)
    assert r.exit_code == 1 and r.stderr.endswith("pip install '.[plot]')\n")
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
