"""`eaglelog summary` and `eaglelog reconcile` on the sample logs (values asserted)."""
import json

import pytest

import eaglelog
from eaglelog.analysis.breakeven import Baseline
from eaglelog.analysis.reconcile import reconcile
from eaglelog.analysis.summary import summarize
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"


def test_summary_values():
    s = summarize(eaglelog.parse(FIVE), baseline=Baseline(tok_s=90))
    assert s.config["algorithm"] == "EAGLE3" and s.config["steps"] == 5
    assert s.cycle_ms.estimate == pytest.approx(27.2802, abs=1e-4)
    assert (s.blocks, s.cycles) == (42, 4200)
    assert [p.phase for p in s.phases] == ["Draft steps", "Target verify", "Draft re-extend",
                                           "Other overhead"]
    assert s.bottleneck == "Target verify"
    verify = s.phases[1]
    assert verify.ms_per_cycle.estimate == pytest.approx(26.04, abs=0.01)
    assert verify.pct == pytest.approx(95.45, abs=0.05)
    assert sum(p.ms_per_cycle.estimate for p in s.phases) == pytest.approx(
        s.cycle_ms.estimate, abs=1e-9)
    assert s.phases[3].ms_per_cycle.estimate == 0 and s.phases[3].ms_per_cycle.sufficient
    assert s.accept_sglang.estimate == pytest.approx(2.2857, abs=1e-4)
    assert s.accept_profiler.estimate == pytest.approx(1.1371, abs=1e-4)
    assert (s.n_windows, s.windows_used) == (106, 105)
    # the per-stream rate is the steady state: accept len / cycle (prefill time removed)
    assert s.eff_tok_s.estimate == pytest.approx(83.8, abs=0.1)
    assert s.eff_tok_s.estimate == pytest.approx(
        1000 * s.accept_sglang.estimate / s.cycle_ms.estimate, rel=0.005)
    assert s.cycle_derived.estimate == pytest.approx(s.cycle_ms.estimate, rel=0.001)
    assert s.throughput_all == pytest.approx(73.9, abs=0.1)   # with the prefills and gaps
    assert s.breakeven.verdict == "below"
    assert s.span_s == pytest.approx(162.186)


def test_summary_cli_human_and_json(run):
    out = run("-q", "summary", FIVE).stdout
    assert "  cycle           27.28 ms  [27.27 … 27.29]   42 no-sync EAGLE3_PROF blocks, 4,200 " \
           "cycles" in out
    assert "Target verify       26.04 ms   95.5%" in out and "← bottleneck" in out
    assert "break-even      give --baseline-toks TOK_S or --baseline-log BASE.log" in out
    d = json.loads(run("summary", "--baseline-toks", "90", "-f", "json", FIVE).stdout)["runs"][0]
    assert d["bottleneck"] == "Target verify" and d["breakeven"]["verdict"] == "below"
    assert d["accept_len"]["sglang"]["n"] == 106 and d["phases"][1]["phase"] == "Target verify"
    base = run("-q", "summary", SAMPLES / "baseline.log").stdout
    assert "no speculative decoding" in base and "  step            11.10 ms" in base
    assert "per stream      90.09 tok/s" in base


def test_reconcile_sample():
    r = reconcile(eaglelog.parse(FIVE))
    assert r.aligned_by == "position in the file"
    assert r.profiler_accept_len.estimate == pytest.approx(1.1371, abs=1e-4)
    assert r.sglang_accept_len.estimate == pytest.approx(2.2796, abs=1e-4)
    assert r.ratio.estimate == pytest.approx(0.4988, abs=1e-4) and r.ratio.ci_high < 1
    f = {x.factor: x for x in r.findings}
    assert f["bonus token"].verdict == "no" and f["batch size"].verdict == "no"
    assert "no-op since v0.3.6" in f["num_continuous_decode_steps"].text
    assert "unexplained" not in f      # a possible explanation: cycles counted twice
    assert r.requests == pytest.approx({"requests": 40, "left_out": 0, "mean_reported": 2.3014,
                                        "mean_per_step": 2.2916, "pooled_per_step": 2.2859},
                                       abs=1e-4)
    assert r.eff_tok_s_printed.estimate == pytest.approx(41.68, abs=0.01)
    # one set of numbers: the whole run's accept length and cycle, as breakeven uses them
    assert r.run_accept_len.estimate == pytest.approx(2.2857, abs=1e-4)
    from eaglelog.analysis.breakeven import breakeven
    be = breakeven(eaglelog.parse(FIVE), Baseline(tok_s=90))
    assert r.eff_tok_s_recomputed.estimate == pytest.approx(be.eff_tok_s.estimate, rel=1e-9)
    assert "use SGLang's per-batch accept len (2.286, the whole run's" in r.recommended
    assert f["cycles counted per iteration"].verdict == "possible"      # 0.499 ≈ 1/2


def test_reconcile_finds_the_bonus_token(write):
    """A profiler that counts drafts without the bonus: tok/cycles = SGLang's value − 1."""
    lines = []
    for i in range(24):
        lines.append(f"[2026-03-02 14:00:{i:02d} TP0] Decode batch, #running-req: 1, #token: "
                     f"{900 + i}, token usage: 0.01, accept len: {2.30 + 0.02 * (i % 3 - 1):.2f}, "
                     "accept rate: 0.38, cuda graph: True, gen throughput (token/s): 84.30, "
                     "#queue-req: 0\n")
        if i % 2 == 1:
            lines.append("EAGLE3_PROF (100 cycles, 130 tok, no sync)\n  Draft steps:  0.95 ms/cyc\n"
                         "  Target verify: 26.33 ms/cyc\n  TOTAL: 27.28 ms/cyc\n"
                         "  Accept len: 1.30\n  Eff tok/s: 47.7\n\n")
    lines = lines * 2                    # 48 windows, 24 blocks: enough for intervals
    r = reconcile(eaglelog.parse(write("bonus.log", "".join(lines))))
    f = {x.factor: x for x in r.findings}
    assert f["bonus token"].verdict == "explains"
    assert "unexplained" not in f


def test_reconcile_errors(run):
    r = run("reconcile", SAMPLES / "baseline.log")
    assert r.exit_code == 1 and "no complete EAGLE3_PROF blocks: nothing to reconcile" in r.stderr
    d = json.loads(run("reconcile", "-f", "json", FIVE).stdout)["runs"][0]
    assert d["ratio"]["estimate"] == pytest.approx(0.4988, abs=1e-4)
    assert [x["factor"] for x in d["findings"]][:2] == ["bonus token", "batch size"]


def test_reconcile_aligns_by_timestamp_when_blocks_have_one():
    r = reconcile(eaglelog.parse(SAMPLES / "eagle3_2step.log"))
    assert r.aligned_by == "timestamp"
    assert r.profiler_accept_len.estimate == pytest.approx(1.0102, abs=1e-4)
    assert r.sglang_accept_len.n >= 100
    assert r.sglang_accept_len.estimate == pytest.approx(1.99, abs=0.02)


def test_the_batch_size_note_is_said_once():
    """summary with a baseline: the break-even's note on mixed batch sizes stands for the
    summary's own (it also says what to do)."""
    import eaglelog
    from eaglelog.analysis.summary import summarize
    from eaglelog.baseline import Baseline
    from conftest import SAMPLES
    log = eaglelog.parse(SAMPLES / "batch_eagle3.log")
    alone = summarize(log)
    assert sum("the run spans batch sizes" in n for n in alone.notes) == 1
    s = summarize(log, baseline=Baseline(tok_s=90.0))
    said = [n for n in s.notes + s.breakeven.notes if "spans" in n]
    assert len(said) == 1 and "--baseline-toks 1:90,8:70" in said[0]
    # a wide span with one stated rate: the per-batch table is the answer
    assert s.breakeven.by_batch is not None and s.breakeven.verdict == "mixed"


def test_a_damaged_completion_count_is_left_out_not_nan(tmp_path):
    """Fuzz seed 3013: one Finish line's completion_tokens damaged (a flipped byte) made the
    per-request finding print 'nan'; that request is now left out and counted."""
    text = (SAMPLES / "sweep" / "steps5.log").read_text(encoding="utf-8")
    i = text.index("'completion_tokens': ") + len("'completion_tokens': ")
    bad = tmp_path / "damaged.log"
    bad.write_text(text[:i] + "\u00c0" + text[i + 1:], encoding="utf-8")
    r = reconcile(eaglelog.parse(str(bad)))
    (f,) = [f for f in r.findings if f.factor == "per-request accept length"]
    assert "nan" not in f.text and "1 request(s) without a readable completion_tokens " \
        "left out" in f.text
    whole = reconcile(eaglelog.parse(str(SAMPLES / "sweep" / "steps5.log")))
    (g,) = [f for f in whole.findings if f.factor == "per-request accept length"]
    assert "left out" not in g.text


def test_a_cycle_not_measured_says_why(run, tmp_path):
    """A log cut after two decode windows and a cut-short block: the cycle line says that the
    windows are too few, not that the decode lines lack an accept len (they print one)."""
    short = tmp_path / "short.log"
    short.write_text("".join(FIVE.read_text().splitlines(keepends=True)[:15]))
    out = run("-q", "summary", "--baseline-toks", "90", short).stdout
    assert ("  cycle           not measured: no complete EAGLE3_PROF block, too few usable decode "
            "windows to derive it\n") in out
    # two windows: an interval with 1 degree of freedom (wide, not a refusal)
    assert "  accept length   2.440  [1.594 … 3.735]" in out
    assert "insufficient data: fewer than 2 usable windows or blocks behind the cycle" in out
    assert "(1 window of 2, prefill time included: an upper bound)" in out
    assert "no accept len" not in out
