"""eaglelog acceptance (analysis/acceptance.py, report/acceptance.py): per-position acceptance
from every source, its intervals and the τ identity.  The fixtures (tests/fixtures/acceptance,
synthetic, make_fixtures.py) mix two kinds of request / window in equal numbers so that every
value below, intervals included, was worked out by hand (the README there shows the working)."""
from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest
from click.testing import CliRunner

from eaglelog.analysis.acceptance import _vllm_curves, acceptance
from eaglelog.cli import main
from eaglelog.errors import EaglelogError

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "acceptance")
SAMPLES = os.path.join(HERE, "..", "sample_logs")
T9 = 2.262157    # Student t, 9 df, 97.5 %


def fx(name: str) -> str:
    return os.path.join(FIX, name)


def curve(result, origin):
    (c,) = [c for c in result.curves if c.origin == origin]
    return c


def close(e, est, lo=None, hi=None, tol=1e-5):
    assert e.estimate == pytest.approx(est, abs=1e-12)
    if lo is None:
        assert not e.sufficient
    else:
        assert e.ci_low == pytest.approx(lo, abs=tol)
        assert e.ci_high == pytest.approx(hi, abs=tol)


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("EAGLELOG_NO_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


# ----------------------------------------------------------------------------- SGLang histograms

def test_sglang_histogram_requests_are_the_units():
    c = curve(acceptance([fx("sglang_histogram.log")]), "sglang-histogram")
    assert (c.unit, c.samples, c.drafts, c.k) == ("request", 10, 100.0, 3)
    r1, r2, r3 = c.positions
    # A = [2, 3, 3, 2] and B = [6, 2, 2, 0], five each: reached ≥ 1, 2, 3 = 60, 35, 10 of 100
    assert [(p.reached, p.base) for p in c.positions] == [(60, 100), (35, 60), (10, 35)]
    # residuals y − R·x: ±2, ±1.5, ±1 → se = √(10/9 · 10 e²) / 100 = 0.0667, 0.05, 0.0333
    close(r1.reach, 0.6, 0.6 - T9 * 0.2 / 3, 0.6 + T9 * 0.2 / 3)
    close(r2.reach, 0.35, 0.35 - T9 * 0.05, 0.35 + T9 * 0.05)
    close(r3.reach, 0.1, 0.1 - T9 * 0.1 / 3, 0.1 + T9 * 0.1 / 3)
    assert r1.conditional == r1.reach
    # conditional 2 = 35 / 60, residuals ±1/3 → se = (10/9) / 60
    close(r2.conditional, 35 / 60, 35 / 60 - T9 * (10 / 9) / 60, 35 / 60 + T9 * (10 / 9) / 60)
    # conditional 3 = 10 / 35, residuals ±4/7 → se = √(10/9 · 10 · 16/49) / 35
    se3 = math.sqrt(10 / 9 * 10 * 16 / 49) / 35
    close(r3.conditional, 10 / 35, 10 / 35 - T9 * se3, 10 / 35 + T9 * se3)
    # τ = 1 + 1.05: tokens per verify 25 / 10 and 16 / 10, residuals ±4.5 → se 0.15
    idt = c.identity
    close(idt.tau, 2.05, 2.05 - T9 * 0.15, 2.05 + T9 * 0.15)
    assert idt.logged == pytest.approx(2.05, abs=1e-12)     # Σ (completion − 1) / Σ verify_ct
    assert idt.status == "holds" and idt.tolerance == 0.0
    assert c.lines == (2, 11)
    assert any("1 request(s) without a usable spec_accept_histogram" in n for n in c.notes)


def test_sample_log_histogram():
    c = curve(acceptance([os.path.join(SAMPLES, "eagle3_5step.log")]), "sglang-histogram")
    assert (c.samples, c.drafts, c.k) == (40, 4243.0, 5)
    assert [p.reached for p in c.positions] == [3364, 1668, 424, 0, 0]
    assert c.positions[0].reach.estimate == pytest.approx(3364 / 4243, abs=1e-12)
    assert c.positions[2].conditional.estimate == pytest.approx(424 / 1668, abs=1e-12)
    # nothing reached position 4: 0 without an interval; position 5's conditional undefined
    assert c.positions[3].reach.estimate == 0 and not c.positions[3].reach.sufficient
    assert math.isnan(c.positions[4].conditional.estimate)
    assert c.identity.status == "holds"
    assert c.identity.tau.estimate == pytest.approx(1 + (3364 + 1668 + 424) / 4243, abs=1e-12)


# ----------------------------------------------------------------------------- vLLM windows

def test_vllm_windows_batch_means():
    c = curve(acceptance([fx("vllm_windows.log")]), "vllm-window")
    assert (c.unit, c.samples, c.drafts, c.k) == ("window", 30, 30000.0, 3)
    # 30 windows (under stats.LONG_SERIES_MIN): each window its own unit (the short-series
    # rule), the delete-one-window jackknife × the AR(1) correction for the allowance's lag-1
    # 0.3 (the alternating windows show less: r1 ≈ −1), Student t on short_df(30, 0.3) df
    assert c.autocorr_time == pytest.approx(1.0) and c.batches == 30
    # windows alternate 800 and 600 accepted at position 1 of 1000 drafts: leaving out an A
    # gives 20200 / 29000, a B 20400 / 29000; deviations ±d/2, d = ln(20400 / 20200)
    from eaglelog import stats
    from scipy.stats import t as student
    d = math.log(20400 / 20200)
    se = math.sqrt(29 / 30 * 30 * (d / 2) ** 2 * stats.ar1_kappa(30, 0.3))
    tq = student.ppf(0.975, stats.short_df(30, 0.3))
    close(c.positions[0].reach, 0.7, 0.7 * math.exp(-tq * se), 0.7 * math.exp(tq * se))
    assert [p.reach.estimate for p in c.positions] == pytest.approx([0.7, 0.5, 0.3], abs=1e-12)
    assert [p.conditional.estimate for p in c.positions] == pytest.approx([0.7, 5 / 7, 0.6],
                                                                          abs=1e-12)
    assert all(p.reach.sufficient and p.conditional.sufficient for p in c.positions)
    assert c.identity.tau.estimate == pytest.approx(2.5, abs=1e-12)
    assert c.identity.logged == pytest.approx(2.5, abs=1e-12)
    assert c.identity.status == "holds"
    assert c.identity.tolerance == pytest.approx(3 * 0.0005)


def test_vllm_sample_log():
    c = curve(acceptance([os.path.join(SAMPLES, "vllm_v1.log")]), "vllm-window")
    assert (c.samples, c.drafts, c.k) == (48, 94453.0, 3)
    assert c.identity.status == "holds"
    assert all(p.reach.sufficient for p in c.positions)


def _vllm_curve_of(text, tmp_path):
    path = tmp_path / "part.log"
    path.write_text(text, encoding="utf-8")
    return curve(acceptance([str(path)]), "vllm-window")


def test_vllm_ten_windows_give_intervals_and_one_does_not(tmp_path):
    # the first 10 windows only (20 lines after the header): each its own unit, an interval
    with open(fx("vllm_windows.log"), encoding="utf-8") as fh:
        lines = fh.readlines()[:21]
    c = _vllm_curve_of("".join(lines), tmp_path)
    assert c.samples == 10
    assert [p.reach.estimate for p in c.positions] == pytest.approx([0.7, 0.5, 0.3])
    assert all(p.reach.sufficient for p in c.positions) and c.batches == 10
    assert not any("intervals need" in n for n in c.notes)
    c = _vllm_curve_of("".join(lines[:3]), tmp_path)
    assert c.samples == 1 and not any(p.reach.sufficient for p in c.positions)
    assert any("1 window(s): intervals need ≥ 2" in n for n in c.notes)


def test_vllm_counter_windows():
    # what eaglelog.live.metrics makes of /metrics counter deltas: drafts, accepted and the
    # per-position counts divided by the drafts (6 decimals)
    rows = []
    for w in range(4):
        d = 200.0 if w % 2 else 100.0
        per = [0.9 * d, 0.5 * d]
        rows.append({"line_no": w + 1, "variant": "metrics", "dp": 0, "drafts": d,
                     "window_accepted": sum(per), "drafts_from": "counter",
                     "per_position": json.dumps([round(v / d, 6) for v in per])})
    (c,) = _vllm_curves("prom", pd.DataFrame(rows), 0.95)
    assert (c.origin, c.samples, c.drafts, c.k) == ("vllm-counters", 4, 600.0, 2)
    assert [p.reach.estimate for p in c.positions] == pytest.approx([0.9, 0.5], abs=1e-12)
    assert c.positions[1].conditional.estimate == pytest.approx(5 / 9, abs=1e-12)
    assert c.identity.status == "holds"


# ----------------------------------------------------------------------------- llama.cpp, bench

def test_llamacpp_requests_and_statistics():
    res = acceptance([fx("llamacpp.log")])
    c = curve(res, "llamacpp-request")
    # 50 drafts a request (recovered as accepted / (MAL − 1) = 90 / 1.8 and 60 / 1.2)
    assert (c.unit, c.samples, c.drafts, c.k) == ("request", 10, 500.0, 3)
    # y1 = 40 and 30 of x = 50: residuals ±5 → se = √(10/9 · 250) / 500 = 1/30
    close(c.positions[0].reach, 0.7, 0.7 - T9 / 30, 0.7 + T9 / 30)
    # conditional 2 = 250 / 350, residuals ±10/7 → se = √(10/9 · 10 · 100/49) / 350
    se2 = math.sqrt(10 / 9 * 10 * 100 / 49) / 350
    close(c.positions[1].conditional, 5 / 7, 5 / 7 - T9 * se2, 5 / 7 + T9 * se2)
    # τ: tokens per request 140 and 110 for 50 drafts, residuals ±15 → se 0.1
    close(c.identity.tau, 2.5, 2.5 - T9 * 0.1, 2.5 + T9 * 0.1)
    assert c.identity.status == "holds"
    s = curve(res, "llamacpp-statistics")
    assert (s.unit, s.samples, s.drafts) == ("run", 1, 500.0)
    close(s.positions[2].reach, 0.3)
    close(s.positions[2].conditional, 0.6)
    assert [p.reached for p in s.positions] == pytest.approx([350, 250, 150])
    assert s.identity.status == "holds"


def test_bench_mismatch_is_a_note():
    c = curve(acceptance([fx("vllm_bench_mismatch.log")]), "vllm-bench-serve")
    assert [p.reach.estimate for p in c.positions] == pytest.approx([0.7, 0.5, 0.2], abs=1e-12)
    assert c.positions[2].conditional.estimate == pytest.approx(0.4, abs=1e-12)
    assert c.identity.tau.estimate == pytest.approx(2.4, abs=1e-12)
    assert c.identity.logged == pytest.approx(2.5, abs=1e-12)      # 1 + 1500 / 1000
    assert c.identity.difference == pytest.approx(0.1, abs=1e-12)
    assert c.identity.status == "mismatch"
    assert any(n.startswith("τ = 1 + Σ P(accept ≥ i) = 2.4000 but the logged accept length is "
                            "2.5000") for n in c.notes)


def test_no_per_position_data_is_an_error():
    with pytest.raises(EaglelogError, match="no per-position acceptance"):
        acceptance([os.path.join(SAMPLES, "baseline.log")])


def test_to_dict_and_frame():
    res = acceptance([fx("sglang_histogram.log")])
    d = res.to_dict()
    assert d["command"] == "acceptance" and d["confidence"] == 0.95
    (run1,) = d["runs"]                        # one object per run, as every command prints
    assert run1["run"].endswith("sglang_histogram.log")
    (cd,) = run1["curves"]
    assert cd["origin"] == "sglang-histogram" and cd["unit"] == "request"
    assert "one sample is a request" in cd["model"]
    assert [p["reach"]["estimate"] for p in cd["positions"]] == pytest.approx([0.6, 0.35, 0.1])
    f = res.to_frame()
    assert list(f["position"]) == [1, 2, 3]
    assert list(f["reached"]) == [60, 35, 10]
    assert f["tau"].iloc[0] == pytest.approx(2.05)


# ----------------------------------------------------------------------------- CLI

def run(*args):
    return CliRunner().invoke(main, list(args))


def test_cli_table():
    r = run("acceptance", fx("sglang_histogram.log"))
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "SGLang Finish lines: spec_accept_histogram   10 requests, 100 verifies" in out
    assert "  1    0.6000  [0.4492 … 0.7508]" in out
    assert "τ = 1 + Σ P(accept ≥ i)   2.050  [1.711 … 2.389]" in out
    assert "identity holds" in out


def test_cli_json_csv_markdown():
    r = run("acceptance", "-f", "json", fx("llamacpp.log"))
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    (cs,) = [r["curves"] for r in d["runs"]]
    assert [c["origin"] for c in cs] == ["llamacpp-request", "llamacpp-statistics"]
    assert cs[1]["positions"][0]["reach"]["ci_low"] is None
    r = run("acceptance", "-f", "csv", fx("vllm_bench_mismatch.log"))
    assert r.exit_code == 0
    lines = r.stdout.strip().split("\n")
    assert lines[0].startswith("run,origin,unit,samples,drafts,k,position,reach,")
    assert len(lines) == 4 and ",mismatch," in lines[1]
    r = run("acceptance", "-f", "markdown", fx("vllm_bench_mismatch.log"))
    assert r.exit_code == 0 and r.stdout.startswith("| run ")
    assert "| 0.7000  insufficient data |" in r.stdout
    # a "|" in a header or cell is escaped: every line of the table has as many cells
    r = run("acceptance", "-f", "markdown", os.path.join(SAMPLES, "eagle3_5step.log"))
    assert r.exit_code == 0 and "P(≥ i \\| ≥ i−1) [CI]" in r.stdout
    cells = {len(line.replace("\\|", "").split("|")) for line in r.stdout.strip().split("\n")}
    assert cells == {9}          # 7 columns: 8 separators, 9 pieces


def test_cli_no_data_exit_1():
    r = run("acceptance", os.path.join(SAMPLES, "baseline.log"))
    assert r.exit_code == 1
    assert r.stdout == ""
    assert r.stderr.strip().startswith("eaglelog: error: no per-position acceptance")
    assert len(r.stderr.strip().split("\n")) == 1


def test_cli_plot(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "acc.png"
    r = run("acceptance", "--plot", str(png), "-f", "json", fx("sglang_histogram.log"),
            fx("vllm_windows.log"))
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "acc.svg"
    assert run("acceptance", "--plot", str(svg), fx("llamacpp.log")).exit_code == 0
    text = svg.read_text(encoding="utf-8")
    assert "P(accept ≥ i)" in text and "τ = 2.500" in text
    # the same input gives the same bytes
    svg2 = tmp_path / "again.svg"
    assert run("acceptance", "--plot", str(svg2), fx("llamacpp.log")).exit_code == 0
    assert svg2.read_bytes() == svg.read_bytes()


def test_cli_plot_bad_suffix():
    r = run("acceptance", "--plot", "out.txt", fx("llamacpp.log"))
    assert r.exit_code == 2


def test_linearised_terms_sum_over_the_gradients_nonzeros_only():
    """Issue 36 item 10: a per-position list of 3,000 positions has 6,001 outputs over 3,002
    sums; each output's terms are dev @ g (stats._terms) summed over g's nonzeros — the same
    numbers as the dense product, sparse or dense g, an all-zero row included."""
    import numpy as np
    from eaglelog.stats import _terms
    rng = np.random.default_rng(0)
    dev = rng.normal(size=(50, 30))
    g = np.zeros((40, 30))
    for i in range(40):
        g[i, rng.integers(0, 30, 2)] = rng.normal(size=2)
    g[5] = 0
    assert np.allclose(_terms(dev, g), dev @ g.T, atol=1e-12, rtol=0)
    dense = rng.normal(size=(7, 30))
    assert np.allclose(_terms(dev, dense), dev @ dense.T, atol=1e-12, rtol=0)
