"""The notebook half of the API (issue 36): an Estimate behaves as its estimate, eaglelog.plot
returns figures, result.windows() is the data behind a verdict, to_frame() has a numeric
running_req and a startup column, the HTML report reads at 390 px (in a real Chromium), and
docs/api.md's notebook session runs."""
import dataclasses
import math
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import eaglelog
from conftest import ROOT, SAMPLES
from eaglelog.stats import Estimate, insufficient

FIVE = str(SAMPLES / "eagle3_5step.log")
TWO = SAMPLES / "eagle3_2step.log"
BATCH = str(SAMPLES / "batch_eagle3.log")
BATCH_BASE = str(SAMPLES / "batch_baseline.log")
SWEEP = sorted(str(p) for p in (SAMPLES / "sweep").glob("*.log"))


@pytest.fixture(scope="module")
def five():
    return eaglelog.breakeven(FIVE, baseline_toks=90)


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """eagle3_5step.log, then the 2-step server started 10 minutes later in the same file."""
    from test_plot import shifted
    p = tmp_path_factory.mktemp("restart") / "restarted.log"
    p.write_text(open(FIVE).read() + shifted(TWO.read_text(), 600))
    return str(p)


# ----------------------------------------------------------------------------- Estimate

def test_an_estimate_is_its_estimate_as_a_number(five):
    e = five.speedup
    assert float(e) == e.estimate == pytest.approx(0.931, abs=5e-4)
    assert f"{e:.3f}" == f"{e.estimate:.3f}" == "0.931"
    assert f"{e:.1%}" == f"{e.estimate:.1%}" and format(e, "e") == format(e.estimate, "e")
    assert f"{e}" == str(e) == repr(e) and format(e, "") == str(e)    # empty spec: as today
    assert e < 1 and e <= 1 and not e > 1 and not e >= 1
    assert 1 > e and 0.5 < e and e > np.float64(0.9) and e >= np.int64(0)
    assert math.isclose(math.log(e), math.log(e.estimate)) and np.float64(e) == e.estimate
    assert sorted([1.0, e, 0.5]) == [0.5, e, 1.0]
    # the interval stays in its attributes
    assert e.ci_low < float(e) < e.ci_high and e.sufficient and e.confidence == 0.95


def test_an_insufficient_estimate_is_nan_and_compares_false():
    e = insufficient(math.nan, 1, 0.95)
    assert math.isnan(float(e)) and f"{e:.3f}" == "nan"
    assert not (e < 1 or e <= 1 or e > 1 or e >= 1 or 1 < e or 1 > e)
    assert not e.sufficient and e.ci_low is None


def test_estimate_equality_and_hash_keep_their_dataclass_meaning():
    a = Estimate(2.0, 1.5, 2.5, 10, 0.95)
    b = Estimate(2.0, 1.5, 2.5, 10, 0.95)
    c = Estimate(2.0, 1.0, 3.0, 10, 0.95)          # the same point, another interval
    assert a == b and hash(a) == hash(b) and len({a, b, c}) == 2
    assert a != c and a <= 2 and a >= 2            # ordered by the point, equal by every field
    assert a != 2.0 and not (a == 2.0) and float(a) == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.estimate = 3.0
    with pytest.raises(TypeError, match="between two Estimates is ambiguous"):
        a < c
    with pytest.raises(TypeError):
        a < "2"
    with pytest.raises(TypeError):
        a > None


# ----------------------------------------------------------------------------- plot

def test_the_public_plot_module_is_a_lazy_facade():
    code = ("import sys, eaglelog.plot as p; assert 'matplotlib' not in sys.modules; "
            "print(','.join(p.KINDS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.strip()
    from eaglelog.cli import PLOT_KINDS
    from eaglelog.report import plot as figures
    kinds = out.split(",")
    assert set(figures.KINDS) <= set(kinds) and set(PLOT_KINDS) <= set(kinds)
    assert kinds == ["timeline", "phases", "breakeven", "sweep", "compare", "requests",
                     "latency", "acceptance", "schedule"]


def test_every_figure_from_a_result_or_from_the_logs(five, tmp_path):
    from matplotlib.figure import Figure

    import eaglelog.plot as P

    log = eaglelog.parse(FIVE)
    figs = {
        "timeline": P.timeline(FIVE), "timeline_log": P.timeline(log),
        "breakeven": P.breakeven(five),
        "breakeven_logs": P.breakeven(BATCH, baseline_log=BATCH_BASE),
        "phases": P.phases(eaglelog.summarize(FIVE)),
        "sweep": P.sweep(eaglelog.sweep(SWEEP, baseline_toks=90)),
        "compare": P.compare(SWEEP[2:4]),
        "requests": P.requests(FIVE),
        "acceptance": P.acceptance(eaglelog.acceptance(FIVE)),
        "schedule": P.schedule(sorted(str(p) for p in (SAMPLES / "schedule").glob("*.log")),
                               baseline_log=BATCH_BASE),
    }
    for name, fig in figs.items():
        assert isinstance(fig, Figure) and fig.axes, name
    # the break-even figure draws the result's numbers: one column per run, or per batch size
    assert len(figs["breakeven"].axes[0].get_xticklabels()) == 1
    by_batch = [t.get_text() for t in figs["breakeven_logs"].axes[0].get_xticklabels()]
    assert by_batch == ["1", "2", "4", "8", "16", "32"]
    # the same figure from a Runs, its run, or a list of runs; save writes the CLI's bytes
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    P.save(P.breakeven(five), a)
    P.save(P.breakeven([five[0]]), b)
    assert a.read_bytes() == b.read_bytes() and a.read_bytes().startswith(b"<?xml")
    assert P.caption(figs["timeline"]).startswith("Accept length")
    with pytest.raises(TypeError, match="keyword arguments"):
        P.breakeven(five, baseline_toks=90)


# ----------------------------------------------------------------------------- windows()

def test_windows_are_the_data_behind_the_verdict(five):
    w = five.windows()            # a Runs: its runs' labels first, as in to_frame()
    assert (w.pop("source") == five.source).all()
    assert w.equals(five[0].windows())
    assert list(w.columns) == ["line_no", "time", "series", "running_req", "batch",
                               "accept_len", "wall_ms", "prefill_ms", "cycle_ms", "weight",
                               "in_cycle", "in_accept", "left_out"]
    f = five.facts
    assert len(w) == f["windows"] == 106
    assert int(w["in_cycle"].sum()) == f["windows_used"] == 105
    # every window is used or has a reason: the reasons count as the facts do
    assert (w["left_out"].isna() == w["in_cycle"]).all()
    assert w["left_out"].dropna().value_counts().to_dict() == f["left_out"] == \
        {"first of its series": 1}
    assert w["left_out"].iloc[1] is None                  # None, not NaN, where used
    assert w["line_no"].is_monotonic_increasing and w["time"].notna().all()
    assert pd.api.types.is_datetime64_any_dtype(w["time"])
    # the verdict's numbers, window by window
    cyc, acc = w[w["in_cycle"]], w[w["in_accept"]]
    assert np.average(cyc["cycle_ms"], weights=cyc["weight"]) == \
        pytest.approx(five.cycle_ms.estimate, rel=1e-9)
    assert np.average(acc["accept_len"], weights=acc["weight"]) == \
        pytest.approx(five.accept_len.estimate, rel=1e-9)
    assert np.allclose(w["cycle_ms"], w["wall_ms"] - w["prefill_ms"])
    assert (w["weight"] > 0).all() and (w["running_req"] >= 1).all()


def test_windows_say_warm_up_and_baseline_coverage():
    r = eaglelog.breakeven(BATCH, baseline_toks={1: 90, 8: 60}, skip_warmup=7)
    w = r.windows()
    why = w["left_out"].value_counts().to_dict()
    # the first 7 windows: the first of its series (out already), then 6 of the warm-up
    assert r.facts["warmup_windows"] == 7 and why.get("warm-up") == 6
    assert w["left_out"].iloc[:7].tolist() == ["first of its series"] + ["warm-up"] * 6
    assert not w["in_accept"].iloc[:7].any() and w["left_out"].iloc[7:].ne("warm-up").all()
    outside = why.get("outside baseline coverage", 0)
    assert outside > 0 and r.coverage < 1
    assert (w.loc[w["left_out"] == "outside baseline coverage", "batch"] > 8).all()
    # the rate model's own reasons are its facts; the rest of the unused left the baseline
    named = {("left out" if k == "warm-up" else k): v for k, v in why.items()
             if k != "outside baseline coverage"}
    assert named == r.facts["left_out"]
    assert len(w) == r.facts["windows"] == r.facts["windows_used"] + sum(why.values())


def test_summary_windows_and_several_runs(restarted):
    s = eaglelog.summarize(FIVE)
    w = s.windows()
    assert len(w) == s.n_windows == s.to_dict()["runs"][0]["throughput"]["windows"] == 106
    assert int(w["in_cycle"].sum()) == s.windows_used
    r = eaglelog.breakeven(restarted, baseline_toks=90)
    ws = r.windows()                                 # a Runs: every run, its label first
    assert ws.columns[0] == "source"
    assert ws.groupby("source", sort=False).size().tolist() == \
        [x.facts["windows"] for x in r.runs] == [106, 120]
    with pytest.raises(eaglelog.EaglelogError, match="no decode windows"):
        dataclasses.replace(r[0], evidence=None).windows()


def test_windows_cost_nothing_until_asked():
    from eaglelog.analysis import engines
    from eaglelog.analysis.breakeven import Baseline, breakeven, run_windows
    log = eaglelog.parse(FIVE)
    src = log.sources[0].name
    r = breakeven(log, Baseline(tok_s=90))
    # the result refers to the windows the log's memo holds (no copy, no frame yet), and
    # neither its repr nor its equality carries them
    assert r.evidence.win is run_windows(engines.apply(log, src)[0], src)[1]
    assert "Evidence" not in repr(r) and "evidence" not in r.to_dict()
    assert r == dataclasses.replace(r, evidence=None)


# ----------------------------------------------------------------------------- to_frame()

def test_to_frame_running_req_is_numeric():
    b = eaglelog.breakeven(BATCH, baseline_log=BATCH_BASE, by_batch=True)
    t = b.to_frame()
    assert pd.api.types.is_numeric_dtype(t["running_req"]) and t["running_req"].dtype == "Int64"
    assert t["scope"].tolist() == ["all"] + ["bucket"] * 6
    assert t["running_req"].isna().tolist() == [True] + [False] * 6
    assert t["running_req"].iloc[1:].tolist() == [x.to_dict()["running_req"] for x in b.by_batch]
    assert "startup" not in t.columns and "running_req_max" not in t.columns
    assert t["running_req"].iloc[1:].sum() == 63                    # arithmetic works
    from eaglelog.analysis.rate import bucket_range as _bucket_range
    assert _bucket_range("4–7") == (4, 7) and _bucket_range("16") == (16, 16)
    assert _bucket_range(None) == (None, None)


def test_whatif_by_batch_frame_has_a_numeric_running_req():
    anchor = str(SAMPLES / "schedule" / "steps1.log")
    w = eaglelog.whatif(anchor, steps="3,5", by_batch=True)
    t = w.to_frame()
    assert t["running_req"].dtype == "Int64"
    whole, bucket = t[t["scope"] == "all"], t[t["scope"] == "bucket"]
    assert len(whole) == len(w.predictions) and whole["running_req"].isna().all()
    assert len(bucket) == sum(len(r.predictions) for r in w.by_batch)
    assert bucket["running_req"].drop_duplicates().tolist() == \
        [int(r.batch) for r in w.by_batch]
    assert (bucket["basis"] == "by batch").all()


def test_to_frame_has_a_startup_column_for_several_start_ups(restarted, run):
    r = eaglelog.breakeven(restarted, baseline_toks=90)
    t = r.to_frame()
    assert list(t.columns[:4]) == ["source", "startup", "scope", "running_req"]
    assert t["startup"].tolist() == [1, 2] and t["startup"].dtype == "Int64"
    s = eaglelog.summarize(restarted).to_frame()
    assert s["startup"].tolist() == [1, 2]
    # the CLI's csv is the same table
    import io
    out = run("-q", "breakeven", "--baseline-toks", "90", "-f", "csv", restarted)
    assert out.exit_code == 0, out.stderr
    csv = pd.read_csv(io.StringIO(out.stdout))
    assert csv["startup"].tolist() == [1, 2] and csv["running_req"].isna().all()
    assert csv["scope"].tolist() == ["all", "all"]


# ----------------------------------------------------------------------------- HTML at 390 px

NARROW = r"""(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const out = [];
  for (const c of document.querySelectorAll('td, th')) {
    if (!c.checkVisibility()) continue;
    const s = getComputedStyle(c), r = c.getBoundingClientRect();
    const inner = r.width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)
                  - parseFloat(s.borderLeftWidth) - parseFloat(s.borderRightWidth);
    const ch = inner / (0.5 * parseFloat(s.fontSize));     // in (narrow) characters
    const text = (c.textContent || '').trim();
    if (text.length >= 4 && ch < 4) out.push({text: text.slice(0, 40), ch: ch});
  }
  const page = document.documentElement.clientWidth, loose = [];
  for (const e of document.body.querySelectorAll('*')) {
    if (e.closest('div.table') || (e.closest('svg') && e.closest('svg') !== e)) continue;
    if (e.checkVisibility() && e.getBoundingClientRect().right > page + 1)
      loose.push(e.tagName.toLowerCase() + '.' + e.className);
  }
  return {narrow: out, cells: document.querySelectorAll('td, th').length,
          wrapped: [...document.querySelectorAll('table')].every(
            t => t.parentElement.matches('div.table')),
          loose: loose};
})()"""


@pytest.fixture(scope="module")
def phone_reports(tmp_path_factory):
    from click.testing import CliRunner

    from eaglelog.cli import main

    d = tmp_path_factory.mktemp("phone")
    out = {}
    for name, args in (("sweep", ["--baseline-toks", "90", *SWEEP]),
                       ("batch", ["--baseline-log", BATCH_BASE, BATCH]),
                       ("single", ["--baseline-toks", "90", FIVE])):
        out[name] = d / f"{name}.html"
        r = CliRunner().invoke(main, ["report", *args, "-o", str(out[name])],
                               catch_exceptions=False)
        assert r.exit_code == 0, r.stderr
    return out


@pytest.mark.skipif(os.environ.get("EAGLELOG_SKIP_BROWSER") == "1",
                    reason="EAGLELOG_SKIP_BROWSER=1")
def test_the_report_reads_on_a_390_px_phone(phone_reports):
    import browser

    with browser.Session() as b:
        for name, path in phone_reports.items():
            b.open(path)
            lay = b.layout(390)                 # every <details> opened
            # the page never scrolls sideways: a wide table scrolls in its own box
            assert lay["scrollWidth"] <= 390 and lay["clientWidth"] == 390, name
            got = b.evaluate(NARROW)
            assert got["cells"] > 50 and got["wrapped"], name
            assert got["loose"] == [], (name, got["loose"])
            # no table broken letter by letter: every cell is at least 4 characters wide
            assert got["narrow"] == [], (name, got["narrow"][:5])
        # and at 1280 px nothing scrolls, the tables included (as before)
        b.open(phone_reports["sweep"])
        wide = b.layout(1280)
        assert wide["scrollWidth"] == 1280 and wide["overflow"] == []


# ----------------------------------------------------------------------------- docs/api.md

API = (ROOT / "docs" / "api.md").read_text()
NOTEBOOK = [b for b in re.findall(r"```python\n(.*?)```", API, flags=re.S)
            if not b.lstrip().startswith(">>>")]


def test_the_api_page_has_a_notebook_session():
    assert NOTEBOOK and all("import eaglelog" in b for b in NOTEBOOK[:1])
    for name in ("float(r.speedup)", "r.windows()", "eaglelog.plot.", 'f"{r.speedup:.3f}'):
        assert any(name in b for b in NOTEBOOK), name


@pytest.mark.parametrize("block", NOTEBOOK, ids=[f"block{i}" for i in range(len(NOTEBOOK))])
def test_the_api_page_notebook_runs(block, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)                 # its paths are the repository's sample_logs/
    env: dict = {"__name__": "__docs__"}
    exec(compile(block, str(ROOT / "docs" / "api.md"), "exec"), env)
    out = capsys.readouterr().out
    assert "speedup 0.931 [" in out and ": below" in out
    assert env["r"].verdict == "below" and len(env["w"]) == 106
    from matplotlib.figure import Figure
    assert isinstance(env["fig"], Figure)
