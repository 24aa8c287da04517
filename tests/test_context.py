"""Acceptance against the context length (analysis/context.py; acceptance(…, by='context'),
the context column and trend note of breakeven's per-batch buckets): synthetic SGLang logs
whose acceptance falls with the context by a known amount (tests/context_sim.py), the bucket
values worked out from the written lines, and a calibration of the trend's interval over
simulated series (coverage and power side by side; docs/acceptance.md 'By context')."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eaglelog
from context_sim import context_log, finish_log, calibrate
from eaglelog.analysis.acceptance import acceptance
from eaglelog.analysis.breakeven import Baseline, breakeven
from eaglelog.analysis.context import (ContextResult, context_buckets, window_context)
from eaglelog.errors import EaglelogError
from eaglelog.library import breakeven_rows
from eaglelog.report.blocks import by_batch_table
from eaglelog.report.context import context_block, markdown_tables
from shortlogs import short_log


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("EAGLELOG_NO_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ----------------------------------------------------------------------------- pieces

def test_buckets_are_powers_of_two_merged_up_to_a_least_count():
    v = np.array([600] * 10 + [1500] * 10 + [3000] * 4 + [5000] * 6 + [9000] * 3 + [np.nan])
    codes, edges = context_buckets(v, 10)
    # 0–1k and 1k–2k have 10 each; 2k–4k (4) joins 4k–8k (6) to make 10; the 3 at 9k are
    # too few for a bucket of their own and join the one before, which becomes the open one
    assert edges == [(0, 1024), (1024, 2048), (2048, None)]
    assert codes.tolist() == [0] * 10 + [1] * 10 + [2] * 13 + [-1]
    codes, edges = context_buckets(np.array([100.0, 200.0]), 10)     # too few for any split
    assert edges == [(0, None)] and codes.tolist() == [0, 0]


def test_window_context_is_the_trapezoid_of_its_two_lines():
    tok = np.array([1000.0, 3000.0, 5000.0, 800.0])
    r = np.array([2.0, 2.0, 4.0, 1.0])
    # one series: T/R on its first line, then (T_prev + T) / (R_prev + R)
    assert window_context(tok, r, np.zeros(4)).tolist() == [500.0, 1000.0, 8000 / 6, 5800 / 5]
    # two interleaved series: each its own line before
    c = window_context(tok, r, np.array([0, 1, 0, 1]))
    assert c.tolist() == [500.0, 1500.0, 6000 / 6, 3800 / 3]


# ----------------------------------------------------------------------------- requests

def test_requests_bucketed_by_prompt_length_as_units(tmp_path):
    r = acceptance([write(tmp_path, "f.log", finish_log())], by="context")
    assert isinstance(r, ContextResult)
    (s,) = r.series
    assert (s.origin, s.unit) == ("sglang-histogram", "request")
    assert [b.label for b in s.buckets] == ["0–1k", "1k–2k", "≥ 2k"]
    assert [b.samples for b in s.buckets] == [10, 10, 13]
    # A = [2, 3, 3, 2]: P(≥ 1, 2, 3) = 0.8, 0.5, 0.2, τ 2.5; B = [6, 2, 2, 0]: 0.4, 0.2, 0
    reach = [[p.reach.estimate for p in b.curve.positions] for b in s.buckets]
    assert reach[0] == pytest.approx([0.8, 0.5, 0.2])
    assert reach[1] == pytest.approx([0.6, 0.35, 0.1])
    assert reach[2] == pytest.approx([0.4, 0.2, 0.0])
    assert [b.accept_len.estimate for b in s.buckets] == pytest.approx([2.5, 2.05, 1.6])
    # every request verified 10 times: the context is the plain mean prompt
    assert s.buckets[0].context == pytest.approx(np.mean([500 + 40 * i for i in range(10)]))
    last = [2100 + 180 * i for i in range(10)] + [9000, 9001, 9002]
    assert s.buckets[2].context == pytest.approx(np.mean(last))
    # prompt + output (B: 1 + 6 + 10 = 17 tokens)
    assert s.buckets[2].context_total == pytest.approx(np.mean(last) + 17)
    # the 1k–2k bucket mixes five of each: its interval is the acceptance module's
    assert s.buckets[1].accept_len.sufficient
    assert s.buckets[1].accept_len.ci_low < 2.05 < s.buckets[1].accept_len.ci_high
    f = r.to_frame()
    assert len(f) == 9 and set(f["bucket"]) == {"0–1k", "1k–2k", "≥ 2k"}
    d = r.to_dict()
    assert d["by"] == "context" and d["runs"][0]["series"][0]["buckets"][0]["bucket"] == "0–1k"


# ----------------------------------------------------------------------------- windows

def test_windows_bucketed_by_context_with_the_trend(tmp_path):
    text, s = context_log(400, seed=1, slope=-0.1)
    r = acceptance([write(tmp_path, "w.log", text)], by="context")
    (ser,) = r.series
    assert (ser.origin, ser.unit) == ("sglang-windows", "window")
    # the bucket values, from the lines as written: request-steps = #running-req × 40
    c, a, w = s["context"], s["accept_len"], s["req_steps"].astype(float)
    codes, edges = context_buckets(c, 30)
    assert [(b.lo, b.hi) for b in ser.buckets] == edges
    for g, b in enumerate(ser.buckets):
        m = codes == g
        assert b.samples == int(m.sum())
        assert b.accept_len.estimate == pytest.approx(np.dot(w[m], a[m]) / w[m].sum(), rel=1e-12)
        assert b.context == pytest.approx(np.dot(w[m], c[m]) / w[m].sum(), rel=1e-12)
        assert b.accept_len.sufficient
    # the accept length falls from bucket to bucket
    acc = [b.accept_len.estimate for b in ser.buckets]
    assert acc == sorted(acc, reverse=True)
    t = ser.trend
    assert t.windows == 401 and t.sufficient and t.verdict == "falls"
    assert t.ci_low <= -0.1 <= t.ci_high
    # the slope is the weighted least-squares one
    x = np.log2(c)
    X = np.c_[np.ones_like(x), x] * np.sqrt(w)[:, None]
    beta = np.linalg.lstsq(X, a * np.sqrt(w), rcond=None)[0][1]
    assert t.slope == pytest.approx(beta, rel=1e-6)
    block = context_block(r)
    assert "accept len [CI]" in block
    assert f"{t.slope:+.3f} tokens of accept length per doubling" in block
    assert ": falls (401 windows" in block
    md = markdown_tables(r)
    assert [row["context (tokens)"] for row in md[0]] == [b.label for b in ser.buckets]


def test_no_trend_said_as_such(tmp_path):
    text, _ = context_log(400, seed=3, slope=0.0)
    (ser,) = acceptance([write(tmp_path, "w.log", text)], by="context").series
    assert ser.trend.verdict == "no trend detected"
    assert ser.trend.ci_low < 0 < ser.trend.ci_high


def test_breakeven_buckets_carry_the_context_and_the_trend_note(tmp_path):
    text, s = context_log(400, seed=1, slope=-0.1)
    r = breakeven(eaglelog.parse(write(tmp_path, "w.log", text)), Baseline(tok_s=90),
                  by_batch=True)
    assert r.by_batch
    # each bucket's context, request-step (trapezoid B̃ × 40) weighted over its windows
    rr = s["running_req"].astype(float)
    b = rr.copy()
    b[1:] = (rr[1:] + rr[:-1]) / 2
    for bk in r.by_batch:
        m = rr == int(bk.batch)
        want = np.dot(b[m], s["context"][m]) / b[m].sum()
        assert bk.context == pytest.approx(want, rel=0.02)
        assert bk.to_dict()["context"] == bk.context
    t = r.facts["context_trend"]
    assert t["verdict"] == "falls" and t["ci_low"] <= -0.1 <= t["ci_high"]
    assert any(n.startswith("accept length falls with the context") for n in r.notes)
    table = by_batch_table(r)
    assert "context" in table.splitlines()[0]
    rows = breakeven_rows(r)
    assert rows[0]["context"] is None and rows[1]["context"] == r.by_batch[0].context


def test_breakeven_without_a_trend_adds_no_note(tmp_path):
    text, _ = context_log(400, seed=3, slope=0.0)
    r = breakeven(eaglelog.parse(write(tmp_path, "w.log", text)), Baseline(tok_s=90),
                  by_batch=True)
    assert r.facts["context_trend"]["verdict"] == "no trend detected"
    assert not any("with the context" in n for n in r.notes)


def test_one_context_is_insufficient_and_nothing_is_an_error(tmp_path):
    # short_log prints #token 900 + 50 × running_req at one batch size: one context
    p = write(tmp_path, "s.log", short_log(windows=40))
    (ser,) = acceptance([p], by="context").series
    assert len(ser.buckets) == 1 and ser.trend.verdict == "insufficient data"
    with pytest.raises(EaglelogError, match="by 'context' only"):
        acceptance([p], by="batch")
    prof = write(tmp_path, "p.log", short_log(blocks=5))
    with pytest.raises(EaglelogError, match="no acceptance with a context length"):
        acceptance([prof], by="context")


# ----------------------------------------------------------------------------- calibration

@pytest.mark.parametrize("windows,phi,ctx_phi", [(400, 0.5, 0.97), (400, 0.9, 0.97),
                                                 (100, 0.7, 0.9)])
def test_trend_interval_calibration(windows, phi, ctx_phi):
    """Coverage of the true slope (null 0 and −0.1 per doubling) and power against −0.03 and
    −0.1, side by side, 100 series each (figures in docs/acceptance.md)."""
    out = {}
    for slope in (0.0, -0.03, -0.1):
        out[slope] = calibrate(100, windows, slope, phi, ctx_phi, seed=7000)
        assert out[slope][2] == 100
    cov0, false_pos, _ = out[0.0]
    cov1, power1, _ = out[-0.1]
    # 95 % intervals: 100 series give a binomial σ of 2.2 points
    assert cov0 >= 0.90 and cov1 >= 0.90 and false_pos <= 0.10
    assert out[-0.03][1] >= false_pos
    if windows >= 400:
        assert power1 >= (0.95 if phi < 0.9 else 0.6)
    else:
        assert power1 >= 0.4
    print({k: (round(v[0], 3), round(v[1], 3)) for k, v in out.items()})
    assert all(math.isfinite(v[0]) for v in out.values())


def test_cli_acceptance_by_context():
    from click.testing import CliRunner
    from conftest import SAMPLES
    from eaglelog.cli import main
    log = str(SAMPLES / "eagle3_5step.log")
    res = CliRunner().invoke(main, ["acceptance", "--by", "context", log])
    assert res.exit_code == 0, res.output
    assert "sglang-windows" in res.output and "tokens of accept length per doubling" in res.output
    row = [ln.split() for ln in res.output.splitlines() if ln.startswith("≥ 0 ")]
    assert [r[2] for r in row] == ["40", "106"]          # requests, then windows
    res = CliRunner().invoke(main, ["acceptance", "--by", "context", "--plot", "x.png", log])
    assert res.exit_code == 2 and "it goes without --by" in res.output
