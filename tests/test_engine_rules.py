"""The engine/version rules of docs/engines.md, one synthetic fixture each
(tests/fixtures/engines/, written by make_fixtures.py; the truth of each is in truth.json)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis import engines, rate
from eaglelog.analysis.breakeven import Baseline, breakeven, run_windows
from eaglelog.analysis.summary import summarize
from eaglelog.api import ParsedLog
from eaglelog.parsers import sglang

F = Path(__file__).parent / "fixtures" / "engines"
TRUTH = json.loads((F / "truth.json").read_text())
BASE = Baseline(tok_s=90.0)


def parse(name: str) -> ParsedLog:
    return eaglelog.parse(str(F / name), base_date="2026-03-02")


def only(log: ParsedLog):
    units = log.units()
    assert len(units) == 1
    return units[0][1]


def test_fixtures_say_they_are_synthetic():
    for p in F.glob("*.log"):
        assert p.read_text().startswith("# SYNTHETIC LOG"), p.name


# ------------------------------------------------------------------ (a) vLLM V0 throughput

def test_vllm_v0_cycle_counts_one_token_per_sequence_step():
    log = parse("vllm_v0_throughput.log")
    _, win = run_windows(log, log.sources[0].name)
    assert win.steps_throughput.all()
    # y = 1000 × running / gen_throughput = 1000 × 4 / 160.0, not × accept length (2.5)
    used = win.why == rate.USED
    assert np.allclose(win.y[used], 25.0)
    assert np.allclose(win.a[np.isfinite(win.a)], 2.5)
    r = breakeven(log, BASE)
    assert r.cycle_ms.estimate == pytest.approx(25.0, rel=1e-9)
    assert r.accept_len.estimate == pytest.approx(2.5, rel=1e-9)
    # delivered per-stream rate = τ / cycle = 100 tok/s; speedup 100 / 90
    assert r.eff_tok_s.estimate == pytest.approx(100.0, rel=1e-9)
    assert r.speedup.estimate == pytest.approx(100 / 90, rel=1e-9)


# ------------------------------------------------------------------ (b) beta spec

def test_beta_spec_detected_and_corrected():
    log = parse("sglang_beta_spec.log")
    src = log.sources[0].name
    b = engines.beta_spec(log, src)
    assert b.inflated and b.flag is True and b.lines == 60 and b.requests == 30
    assert b.finish_accept == pytest.approx(2.5, abs=0.02)
    assert b.decode_accept - b.finish_accept == pytest.approx(1.0, abs=0.05)
    fixed, notes = engines.apply(log, src)
    a = fixed.decode["accept_len"].to_numpy(float)
    assert np.allclose(a, log.decode["accept_len"].to_numpy(float) - 1)
    assert a.mean() == pytest.approx(TRUTH["sglang_beta_spec.log"]["accept_len_mean_lines"],
                                     abs=0.006)
    assert "#11823" in notes[0] and "corrected by −1 on 60" in notes[0]
    r = breakeven(log, BASE)
    assert r.accept_len.estimate == pytest.approx(2.51, abs=0.02)
    assert r.cycle_ms.estimate == pytest.approx(20.0, rel=0.005)     # unaffected
    assert r.notes[0] == notes[0]
    s = summarize(log, baseline=BASE)
    assert notes[0] in s.notes
    assert s.accept_sglang.estimate == pytest.approx(2.51, abs=0.02)
    # idempotent: an adjusted log is not corrected twice
    again, notes2 = engines.apply(fixed, src)
    assert again is fixed and notes2 == notes
    # the unit the commands analyse carries the correction
    assert only(log).decode["accept_len"].mean() == pytest.approx(a.mean())


def test_beta_spec_fixed_in_v054_is_left_alone():
    log = parse("sglang_beta_spec_v054.log")
    assert engines.beta_spec(log, log.sources[0].name) is None   # 'Decode batch [N], ' shape
    r = breakeven(log, BASE)
    assert r.accept_len.estimate == pytest.approx(2.53, abs=0.02)
    assert r.cycle_ms.estimate == pytest.approx(20.0, rel=0.005)
    assert not any("#11823" in n for n in r.notes)


def test_beta_spec_contradicted_by_lines_below_two():
    log = parse("sglang_beta_spec.log")
    dec = log.decode.copy()
    dec.loc[3, "accept_len"] = 1.8                # impossible with a doubled bonus
    tables = dict(log.tables, decode=dec)
    b = engines.beta_spec(ParsedLog(tables, log.sources, log.diagnostics), log.sources[0].name)
    assert not b.inflated and b.below_two == 1


# ------------------------------------------------------------------ (c) overlap scheduler

def test_overlap_prefill_in_next_window_cycle_unbiased():
    log = parse("sglang_overlap.log")
    truth = TRUTH["sglang_overlap.log"]["cycle_ms"]
    r = breakeven(log, BASE)
    assert r.cycle_kind == "corrected"
    assert abs(r.cycle_ms.estimate / truth - 1) < 0.01
    # the regressors hold this window's and the previous window's prefill work (x columns 2, 3
    # are columns 0, 1 one window earlier); the fitted cost per prompt token is the simulator's
    # (Hardware.prefill1 = 0.03 ms)
    _, win = run_windows(log, log.sources[0].name)
    assert np.array_equal(win.x[1:, 2][win.series[1:] == win.series[:-1]],
                          win.x[:-1, 0][win.series[1:] == win.series[:-1]])
    fit = rate.fit(win, 0.95, None)
    assert fit.beta[0] + fit.beta[2] == pytest.approx(0.03, rel=0.05)
    # prefill time left in the cycle (no regressors): 2 % and more too long
    none = rate.Windows(**{**win.__dict__, "x": np.zeros_like(win.x)})
    assert rate.fit(none, 0.95, None)["cycle_ms"].estimate / truth - 1 > 0.02


# ------------------------------------------------------------------ (d) DP attention

def test_dp_attention_pools_prefills_of_every_rank():
    log = parse("sglang_dp_attention.log")
    src = log.sources[0].name
    assert log.config(src)["enable_dp_attention"] is True
    cfg, win = run_windows(log, src)              # breakeven passes enable_dp_attention
    dp0 = win.series == win.series[0]
    assert (win.x[dp0, 0] > 0).sum() > 50        # DP0 prints no prefill line but is stalled
    r = breakeven(log, BASE)
    assert r.cycle_ms.estimate == pytest.approx(20.0, rel=0.01)
    own = rate.decode_windows(log.decode, log.prefill, 40, dp_attention=False)
    assert (own.x[own.series == own.series[0], 0] == 0).all()
    biased = rate.fit(own, 0.95, None)["cycle_ms"].estimate
    assert biased > 20.0 * 1.03                  # DP0's stalls counted as decode time


# ------------------------------------------------------------------ (e) n-gram on vLLM

def test_vllm_ngram_mal_counts_drafted_requests_only():
    log = parse("vllm_ngram.log")
    t = TRUTH["vllm_ngram.log"]
    assert log.config(log.sources[0].name)["speculative_algorithm"] == "ngram"
    r = breakeven(log, BASE)
    # the cycle and the accept length are both overstated by MAL / τ = 1.5 …
    assert r.cycle_ms.estimate == pytest.approx(t["derived_cycle_ms"], rel=1e-4)
    assert r.cycle_ms.estimate / t["cycle_ms"] == pytest.approx(1.5, rel=1e-3)
    assert r.accept_len.estimate == pytest.approx(3.0)
    # … so the speedup is the true one: τ × step / cycle = 2.0 × (1000 / 90) / 15
    assert r.speedup.estimate == pytest.approx(2.0 * (1000 / 90) / 15.0, rel=1e-3)
    assert any(n.startswith("n-gram drafting on vLLM") for n in r.notes)


# ------------------------------------------------------------------ (f) adaptive speculation

def test_parse_spec_params_line():
    res = sglang.parse_spec_params_line("[2026-03-02 14:00:30 TP0] Adaptive spec params updated: "
                                        "steps 3 -> 5 (ema_accept_len=2.61)")
    assert res.record["steps_from"] == 3 and res.record["steps_to"] == 5
    assert res.record["ema_accept_len"] == 2.61 and res.record["tp"] == 0
    assert sglang.parse_spec_params_line("Adaptive spec params updated: steps ?").record is None
    assert sglang.parse_spec_params_line("Decode batch, …").record is None


def test_adaptive_steps_split_the_run():
    log = parse("sglang_adaptive.log")
    src = log.sources[0].name
    segs = log.segments(src, 1)
    assert [(s.lo, s.hi, s.steps) for s in segs] == [(None, 53, 3), (53, None, 5)]
    units = log.units()
    assert [label for label, _ in units] == [f"{src} [steps 3 until line 53]",
                                             f"{src} [steps 5 from line 53]"]
    for (label, sub), want in zip(units, TRUTH["sglang_adaptive.log"]["segments"]):
        assert sub.config(src)["speculative_num_steps"] == want["steps"]
        assert sub.config(src)["speculative_num_draft_tokens"] == want["steps"] + 1
        r = breakeven(sub, BASE, warmup=0)
        assert r.cycle_ms.estimate == pytest.approx(want["cycle_ms"], rel=0.005), label
    # pooled, the two configurations would give one cycle that is neither
    pooled = breakeven(log, BASE, warmup=0).cycle_ms.estimate
    assert 18.5 < pooled < 23.5


def test_adaptive_lines_parsed_end_to_end():
    log = parse("sglang_adaptive.log")
    sp = log.tables["spec_params"]
    assert list(sp["steps_to"]) == [5, 5] and list(sp["line_no"]) == [53, 54]
    assert [s.steps for s in log.segments(log.sources[0].name, 1)] == [3, 5]


def test_vllm_k_change_splits_the_run():
    log = parse("vllm_v0_k_change.log")
    src = log.sources[0].name
    units = log.units()
    assert len(units) == 2
    assert [s.steps for s in log.segments(src)] == [3, 5]     # k of the V0 spec lines
    got = [round(breakeven(sub, BASE).cycle_ms.estimate, 6) for _, sub in units]
    assert got == [25.0, 32.0]
    assert units[1][0].endswith("[steps 5 from line 82]")


# ------------------------------------------------------------------ (g) vLLM configuration

def test_vllm_config_labels_like_sglang():
    log = parse("vllm_config.log")
    t = TRUTH["vllm_config.log"]
    s = summarize(log)
    assert s.config["algorithm"] == t["algorithm"] and s.config["steps"] == t["steps"]
    assert s.config["draft"] == t["draft"] and s.config["tp"] == t["tp"]
    from eaglelog.analysis.compare import runs_from_log
    from eaglelog.analysis.sweep import sweep
    run = runs_from_log(log, "auto", None, 0.95)[0]
    assert run.config["speculative_num_steps"] == 3
    assert run.config["speculative_algorithm"] == "eagle3"
    both = eaglelog.parse([str(F / "vllm_config.log"), str(F / "sglang_adaptive.log")],
                          base_date="2026-03-02")
    res = sweep(both, keys=["speculative_num_steps"])
    # the vLLM run, and the SGLang run's two configurations (steps 3, then 5), never pooled
    assert sorted(r.keys["speculative_num_steps"] for r in res.rows) == [3, 3, 5]
