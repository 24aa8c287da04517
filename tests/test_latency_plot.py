"""Issue 39's pictures: `eaglelog plot --kind latency` and eaglelog.plot.latency — TTFT/TPOT
percentiles and goodput against the load, speculation vs baseline, with their intervals and the
crossover marked.  Real matplotlib renders; the values asserted are read back from the figure's
artists and compared with the LatencyResult the text command prints."""
import io

import numpy as np
import pytest

import eaglelog
import latency_sim as S
from conftest import SAMPLES
from eaglelog.report import plot

LAT = SAMPLES / "latency"
SPEC = sorted(str(p) for p in LAT.glob("spec-*.json"))
BASE = sorted(str(p) for p in LAT.glob("base-*.json"))
SLO = "ttft=2s,tpot=50ms"
LOADS = [2.0, 4.0, 6.0, 8.0]


@pytest.fixture(scope="module")
def result():
    return eaglelog.latency(SPEC, BASE, slo=SLO)


@pytest.fixture(scope="module")
def fig(result):
    return plot.latency_figure(result)


def axis(fig, title_start):
    (ax,) = [a for a in fig.axes if a.get_title().startswith(title_start)]
    return ax


def series(ax, label):
    """(x, y, [(low, high) of each whisker]) of the errorbar container labelled ``label``."""
    (c,) = [c for c in ax.containers if c.get_label() == label]
    line, _, (bars,) = c.lines
    segs = [(float(s[0][1]), float(s[1][1])) if len(s) else (np.nan, np.nan)
            for s in bars.get_segments()]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float), segs


def arm(p, name):
    return p.spec if name == "spec" else p.baseline


def test_percentile_panels_draw_the_results_percentiles_and_intervals(result, fig):
    dodge = plot._dodge(np.array(LOADS))
    for metric, title in (("ttft", "TTFT p50 and p99"), ("tpot", "TPOT p50 and p99")):
        ax = axis(fig, title)
        assert ax.get_xlabel() == "request rate (req/s)"
        assert ax.get_ylabel() == f"{metric.upper()} (ms)"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4", "6", "8"]
        for name, word, shift in (("spec", "speculation", -dodge), ("baseline", "baseline",
                                                                   dodge)):
            for q in ("p50", "p99"):
                x, y, segs = series(ax, f"{word} {q}")
                ests = [arm(p, name).quantiles[metric][q] for p in result.points]
                np.testing.assert_allclose(x, np.array(LOADS) + shift)
                np.testing.assert_allclose(y, [e.estimate for e in ests])
                # every interval of the sample is two-sided (400 requests: p99 bounded)
                np.testing.assert_allclose(segs, [(e.ci_low, e.ci_high) for e in ests])
        # the SLO's bound, and the crossover at 6 req/s
        slo = [ln for ln in ax.lines if ln.get_label().startswith("SLO ")]
        assert [ln.get_ydata()[0] for ln in slo] == [{"ttft": 2000.0, "tpot": 50.0}[metric]]
        (cross,) = [ln for ln in ax.lines if ln.get_label() == "crossover at 6 req/s"]
        assert list(cross.get_xdata()) == [6.0, 6.0]
    # the sample's p99 in words: what `eaglelog latency` prints
    x, y, segs = series(axis(fig, "TTFT"), "speculation p99")
    assert round(y[0]) == 640 and (round(segs[0][0]), round(segs[0][1])) == (577, 894)


def test_goodput_panel_marks_the_crossover_and_states_the_slo(result, fig):
    ax = axis(fig, "goodput under the SLO")
    assert ax.get_title() == ("goodput under the SLO ttft=2s,tpot=50ms (95% intervals; a load "
                              "meets it when ≥ 90% of requests do)")
    assert ax.get_xlabel() == "request rate (req/s)"
    assert ax.get_ylabel() == "goodput (requests/s meeting the SLO)"
    for name, word in (("spec", "speculation"), ("baseline", "baseline")):
        _, y, segs = series(ax, f"{word} goodput")
        ests = [arm(p, name).goodput for p in result.points]
        np.testing.assert_allclose(y, [e.estimate for e in ests])
        np.testing.assert_allclose(segs, [(e.ci_low, e.ci_high) for e in ests])
    _, y, _ = series(ax, "speculation goodput")
    assert list(np.round(y, 2)) == [1.96, 3.63, 3.43, 1.10]
    assert result.crossover["overall"] == 6.0
    (cross,) = [ln for ln in ax.lines if ln.get_label() == "crossover at 6 req/s"]
    assert list(cross.get_xdata()) == [6.0, 6.0]
    texts = [t.get_text() for t in ax.texts]
    assert "crossover at 6 req/s\n(per-stream tok/s and goodput below the baseline)" in texts
    assert "latency under load: speculation (spec-2qps.json" in fig._suptitle.get_text()
    assert plot.caption(fig) == (
        "TTFT and TPOT p50 (solid) and p99 (dashed) of speculation (blue) and the baseline "
        "(vermillion) with their 95% intervals and goodput of both with 95% intervals against "
        "the request rate; the SLO's bounds dash-dotted; the crossover at 6 req/s dotted.")


def test_it_renders_png_svg_and_pdf_deterministically(result, fig, tmp_path):
    from PIL import Image

    for fmt, magic in (("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml"), ("pdf", b"%PDF-")):
        a, b = io.BytesIO(), io.BytesIO()        # two figures of one result: the same bytes
        plot.save_figure(plot.latency_figure(result), a, fmt)
        plot.save_figure(plot.latency_figure(result), b, fmt)
        assert len(a.getvalue()) > 10_000 and a.getvalue().startswith(magic)
        assert a.getvalue() == b.getvalue()
    png = io.BytesIO()
    plot.save_figure(fig, png, "png")
    img = np.asarray(Image.open(io.BytesIO(png.getvalue())).convert("RGB"))
    assert img.shape[:2] == (800, 1000)
    # Okabe-Ito blue (speculation) and vermillion (baseline) are on it
    for rgb in ((0x00, 0x72, 0xB2), (0xD5, 0x5E, 0x00)):
        assert (np.abs(img.astype(int) - rgb).sum(axis=2) < 30).sum() > 200, rgb
    assert not getattr(fig, "eaglelog_warnings", ())


def test_the_report_parts_and_no_slo(result):
    pct = plot.latency_figure(result, "percentiles")
    assert [a.get_title()[:4] for a in pct.axes] == ["TTFT", "TPOT"]
    good = plot.latency_figure(result, "goodput")
    assert [a.get_title()[:7] for a in good.axes] == ["goodput"]
    with pytest.raises(ValueError, match="part 'pie'"):
        plot.latency_figure(result, "pie")
    bare = eaglelog.latency(SPEC, BASE, resamples=200)
    ax = axis(plot.latency_figure(bare), "per-stream tok/s")
    assert "no SLO given: no goodput" in ax.get_title()
    _, y, segs = series(ax, "speculation")
    np.testing.assert_allclose(y, [p.spec.per_stream_tok_s.estimate for p in bare.points])
    assert not [ln for a in plot.latency_figure(bare).axes for ln in a.lines
                if ln.get_label().startswith("SLO")]


def test_a_side_without_a_bound_gets_an_arrow_not_a_whisker(tmp_path):
    # 100 requests a point: p99 has no upper bound at 95 % (it needs 368)
    rng = np.random.default_rng(5)
    spec = [S.run_of("spec", x, 100, rng) for x in (2.0, 4.0)]
    base = [S.run_of("baseline", x, 100, rng) for x in (2.0, 4.0)]
    r = eaglelog.latency(spec, base, resamples=200)
    assert r.points[0].spec.quantiles["ttft"]["p99"].ci_high is None
    fig = plot.latency_figure(r, "percentiles")
    ax = axis(fig, "TTFT")
    _, y, segs = series(ax, "speculation p99")
    assert all(hi == pytest.approx(e) for (_, hi), e in zip(segs, y))   # no whisker above
    assert len([t for t in ax.texts if t.arrow_patch is not None]) == 4  # both arms, both loads
    assert "an arrow where a percentile has no upper bound" in plot.caption(fig)
    assert "no upper bound (too few requests)" in [t.get_text() for t in
                                                   fig.legends[0].get_texts()]


def test_the_public_facade_takes_a_result_or_the_files(result):
    import eaglelog.plot as P

    f = P.latency(SPEC, baseline=BASE, slo=SLO, resamples=200)
    _, y, _ = series(axis(f, "TTFT"), "speculation p99")
    np.testing.assert_allclose(y, [p.spec.quantiles["ttft"]["p99"].estimate
                                   for p in result.points])
    assert P.latency(result, part="goodput").axes[0].get_title().startswith("goodput")
    with pytest.raises(TypeError, match="keyword arguments"):
        P.latency(result, slo="ttft=1s")
    with pytest.raises(TypeError, match="baseline="):
        P.latency(SPEC)


def test_cli_plot_kind_latency(run, tmp_path):
    out = tmp_path / "latency.svg"
    r = run("plot", "--kind", "latency", "-o", out, *SPEC, "--baseline", *BASE, "--slo", SLO)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "" and r.stderr.startswith(f"eaglelog: wrote {out} (")
    svg = out.read_text()
    for label in ("TTFT p50 and p99", "TPOT (ms)", "goodput under the SLO ttft=2s,tpot=50ms",
                  "crossover at 6 req/s", "request rate (req/s)", "speculation p99",
                  "baseline goodput", "spec-2qps.json"):
        assert label in svg, label
    png = tmp_path / "latency.png"
    assert run("-q", "plot", "--kind", "latency", "-o", png, *SPEC, f"--baseline={BASE[0]}",
               *BASE[1:]).exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 20_000


@pytest.mark.parametrize("args,words", [
    (["--kind", "latency", str(SAMPLES / "eagle3_5step.log"), "--baseline", *BASE],
     "eagle3_5step.log is not one of the load-test results"),
    (["--kind", "latency", *SPEC], "needs the baseline's load-test files after --baseline"),
    (["--kind", "latency", "--baseline", *BASE], "needs the speculative load-test files"),
    (["--kind", "latency", "--baseline-toks", "90", *SPEC, "--baseline", *BASE],
     "takes its baseline load tests after --baseline"),
    (["--kind", "timeline", str(SAMPLES / "eagle3_5step.log"), "--baseline", BASE[0]],
     "--baseline BASE... is for --kind latency"),
    (["--slo", "ttft=2s", str(SAMPLES / "eagle3_5step.log")], "--slo is for --kind latency"),
    (["--kind", "latency", *SPEC, "--baseline", *BASE, "--slo", "ttft=fast"],
     "--slo: cannot read 'ttft=fast'"),
    ([str(SAMPLES / "eagle3_5step.log"), "--bogus"], "No such option"),
])
def test_cli_usage_errors_are_one_line(run, tmp_path, args, words):
    out = tmp_path / "x.png"
    r = run("plot", "-o", out, *args)
    assert r.exit_code == 2, r.stderr
    # (CliRunner shows click's usage lines; the console entry prints the last line only)
    assert words in r.stderr.splitlines()[-1] and r.stdout == ""
    assert not out.exists()


def test_a_missing_file_is_a_runtime_error(run, tmp_path):
    r = run("plot", "--kind", "latency", "-o", tmp_path / "x.png", str(tmp_path / "none.json"),
            "--baseline", *BASE)
    assert r.exit_code == 1 and r.stderr == f"eaglelog: error: {tmp_path / 'none.json'}: no " \
        "such file\n"


def test_a_concurrency_axis_and_a_load_only_one_arm_ran():
    from eaglelog.parsers import loadtest

    rng = np.random.default_rng(9)

    def run_at(arm, c):
        o = S.result(arm, c / 4, 60, rng)
        o["request_rate"], o["max_concurrency"] = "inf", c
        return loadtest.from_result(o, f"{arm}-c{c}.json")

    spec = [run_at("spec", c) for c in (8, 16)]
    base = [run_at("baseline", c) for c in (8, 16, 32)]
    r = eaglelog.latency(spec, base, slo="tpot=60ms", resamples=200)
    fig = plot.latency_figure(r)
    ax = axis(fig, "TTFT")
    assert ax.get_xlabel() == "max concurrency (requests)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "16", "32"]
    _, y, _ = series(ax, "speculation p50")
    assert np.isfinite(y[:2]).all() and np.isnan(y[2])       # no spec run at 32
    _, y, _ = series(axis(fig, "goodput"), "baseline goodput")
    np.testing.assert_allclose(y, [p.baseline.goodput.estimate for p in r.points])
    # no rate axis: no 'goodput = request rate' line
    assert "goodput = request rate" not in [ln.get_label() for ln in
                                            axis(fig, "goodput").lines]
