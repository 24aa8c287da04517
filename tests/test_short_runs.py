"""Answers on the data people actually have (issue 33): the EAGLE3_PROF readout alone, a few
minutes of decode lines, the NCCL change compared, one verdict rule, one gate, one screen.

Every log here is written by tests/shortlogs.py with known values (synthetic, said in its first
line); the expected answers are computed from those values, not read off the tool."""
from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shortlogs import short_log, truth_speedup  # noqa: E402

import eaglelog  # noqa: E402
from eaglelog.analysis.breakeven import Baseline, breakeven, gate_fails  # noqa: E402
from eaglelog.cli import main  # noqa: E402


@pytest.fixture
def run():
    def _run(*args):
        return CliRunner().invoke(main, ["--no-cache", *[str(a) for a in args]])
    return _run


@pytest.fixture
def logfile(tmp_path):
    def _write(name, text):
        p = tmp_path / name
        p.write_text(text)
        return p
    return _write


# ----------------------------------------------------------------------------- the readout alone

def test_the_8_block_readout_gives_the_breakdown_with_intervals(run, logfile):
    """8 no-sync blocks, totals within ±0.05 ms of 27.28 ms, nothing else: every phase and the
    cycle with an interval (the 8 blocks are the units), the bottleneck named, exit 0."""
    log = logfile("prof8.log", short_log(blocks=8))
    r = run("summary", log)
    assert r.exit_code == 0, r.output
    assert "insufficient data" not in r.stdout
    d = json.loads(run("summary", "-f", "json", log).stdout)["runs"][0]
    c = d["cycle_ms"]
    assert c["estimate"] == pytest.approx(27.28, abs=0.03)
    # 8 uniform totals of σ 0.1/√12: an interval of a few hundredths of a ms around them
    assert c["ci_low"] < 27.28 < c["ci_high"] and c["ci_high"] - c["ci_low"] < 0.15
    verify = next(p for p in d["phases"] if p["phase"] == "Target verify")
    assert verify["ms_per_cycle"]["ci_low"] is not None and verify["pct"] == pytest.approx(95.5,
                                                                                          abs=0.1)
    assert d["bottleneck"] == "Target verify"


@pytest.mark.parametrize("command", ["summary", "breakeven"])
def test_the_8_block_readout_gives_the_break_even_and_says_what_a_verdict_needs(run, logfile,
                                                                                  command):
    """27.28 / 11.11 = 2.455: the number the engineer computes by hand, with its interval; the
    verdict line says what it needs (the per-batch accept length) and why the profiler's 1.14
    is not it; exit 0."""
    log = logfile("prof8.log", short_log(blocks=8))
    r = run(command, "--baseline-toks", "90", log)
    assert r.exit_code == 0, r.output
    assert "NO VERDICT: pays when the accept length exceeds 2.45" in r.stdout
    assert "needs the per-batch accept length" in r.stdout and "the profiler's 1.14 is per " \
        "request" in r.stdout and "eaglelog reconcile" in r.stdout
    d = json.loads(run(command, "--baseline-toks", "90", "-f", "json", log).stdout)["runs"][0]
    be = d["breakeven"] if command == "summary" else d
    assert be["verdict"] == "needs accept length"
    e = be["breakeven_accept_len"]
    assert e["estimate"] == pytest.approx(27.28 * 90 / 1000, abs=0.003)
    assert e["ci_low"] < 2.4552 < e["ci_high"] and e["ci_high"] - e["ci_low"] < 0.02
    assert be["speedup"]["estimate"] is None


def test_check_without_a_verdict_fails_with_its_own_message(run, logfile):
    log = logfile("prof8.log", short_log(blocks=8))
    r = run("breakeven", "--baseline-toks", "90", "--check", log)
    assert r.exit_code == 3
    assert "check failed" in r.stderr and "no verdict (needs the per-batch accept length" in \
        r.stderr and "--allow-insufficient" in r.stderr
    assert run("breakeven", "--baseline-toks", "90", "--check", "--allow-insufficient",
               log).exit_code == 0


def test_three_blocks_give_an_interval_and_one_does_not(logfile):
    three = breakeven(eaglelog.parse(logfile("p3.log", short_log(blocks=3))), Baseline(tok_s=90))
    assert three.breakeven_accept_len.sufficient
    assert three.breakeven_accept_len.ci_low < 27.28 * 0.09 < three.breakeven_accept_len.ci_high
    one = breakeven(eaglelog.parse(logfile("p1.log", short_log(blocks=1))), Baseline(tok_s=90))
    assert not one.breakeven_accept_len.sufficient


# ----------------------------------------------------------------------------- short runs

def test_10_blocks_and_30_windows_decide_a_true_0_937(logfile):
    """Accept len 2.3 (σ 0.2 a window, AR(1) 0.3), truth 0.937×: BELOW, and an interval about
    half as wide as the batch-means one of before (0.861 … 1.010)."""
    log = eaglelog.parse(logfile("s.log", short_log(blocks=10, windows=30, seed=1)))
    r = breakeven(log, Baseline(tok_s=90))
    assert truth_speedup(2.3, 27.28, 90) == pytest.approx(0.937, abs=0.001)
    assert r.verdict == "below"
    assert r.speedup.ci_high - r.speedup.ci_low < 0.10
    assert r.speedup.ci_low < 0.937 < r.speedup.ci_high
    assert r.facts["batches"] == 31      # every window its own unit (short-series rule)
    (note,) = [n for n in r.notes if n.startswith("a short run")]
    assert "31 decode windows, neighbours taken as alike as a lag-1 autocorrelation of" in \
        note and "Short runs" in note


def test_30_blocks_and_90_windows_at_3_1_are_above_and_pass_the_gate(run, logfile):
    log = logfile("s.log", short_log(blocks=30, windows=90, accept=3.1, seed=2))
    d = json.loads(run("breakeven", "--baseline-toks", "90", "-f", "json", log).stdout)
    assert d["runs"][0]["verdict"] == "above"
    assert d["runs"][0]["speedup"]["ci_low"] < truth_speedup(3.1, 27.28, 90) < \
        d["runs"][0]["speedup"]["ci_high"]
    assert run("breakeven", "--baseline-toks", "90", "--check", log).exit_code == 0


# ----------------------------------------------------------------------------- compare

def nccl_pair(logfile, windows_b=90):
    a = logfile("before.log", short_log(blocks=30, windows=90, cycle=27.28, seed=3,
                                        verify_share=26.04 / 27.28))
    b = logfile("nccl.log", short_log(blocks=30, windows=windows_b, cycle=20.24, seed=4,
                                      verify_share=19.30 / 20.24))
    return a, b


def test_compare_of_the_nccl_change(run, logfile):
    """cycle 27.28 → 20.24 ms, verify 26.04 → 19.30: comparable on the cycle, every phase
    compared block against block (verify −26 %, significant)."""
    a, b = nccl_pair(logfile)
    d = json.loads(run("compare", "-f", "json", a, b).stdout)
    got = {m["metric"]: m for m in d["metrics"]}
    assert not any(m["verdict"].startswith(("not comparable", "insufficient"))
                   for m in d["metrics"]), [m["verdict"] for m in d["metrics"]]
    assert got["cycle_ms"]["ratio"] == pytest.approx(20.24 / 27.28, rel=0.005)
    v = got["phase:Target verify"]
    assert v["ratio"] == pytest.approx(19.30 / 26.04, rel=0.005) and v["direction"] == "better"
    assert got["eff_tok_s"]["direction"] == "better"


def test_compare_takes_the_cycle_source_both_runs_carry(run, logfile):
    """The changed run has one usable decode window (its derived cycle has no interval, so on
    its own it takes the profiler's); the reference takes the decode lines'. Both carry
    EAGLE3_PROF blocks: compared on those, with a note, never 'not comparable'."""
    a, b = nccl_pair(logfile, windows_b=1)
    d = json.loads(run("compare", "-f", "json", a, b).stdout)
    got = {m["metric"]: m for m in d["metrics"]}
    assert got["cycle_ms"]["verdict"].startswith("better")
    assert got["cycle_ms"]["ratio"] == pytest.approx(20.24 / 27.28, rel=0.005)
    assert any("the cycle of both runs from the EAGLE3_PROF blocks" in n for n in d["notes"])


# ----------------------------------------------------------------------------- one verdict rule

def test_gate_rule_is_one():
    for v in ("below", "partial", "mixed", "invalid baseline", "insufficient data",
              "needs accept length"):
        assert gate_fails(v)
    for v in ("above", "inconclusive", None):
        assert not gate_fails(v)
    assert not gate_fails("insufficient data", True) and not gate_fails("needs accept length",
                                                                        True)
    assert gate_fails("below", True)


def test_a_batch_dependent_run_is_mixed_against_a_baseline_log(run):
    """sample_logs/batch_eagle3.log pays at batch 1–16 and not at 32 (make_samples.py): the
    headline is 'mixed' and names where, the table is shown, --check exits 3 — with a baseline
    log and with a stated rate alike."""
    samples = os.path.join(os.path.dirname(__file__), "..", "sample_logs")
    spec = os.path.join(samples, "batch_eagle3.log")
    base = os.path.join(samples, "batch_baseline.log")
    out = run("summary", "--baseline-log", base, spec).stdout
    assert "MIXED: pays at running_req 1, 2, 4, 8" in out and "not at 32" in out
    assert "over the run's batch mix 0.967×" in out
    rows = [ln.split() for ln in out.splitlines() if ln.split()[:1] in (["1"], ["32"])]
    assert rows[0][-1] == "above" and rows[-1][-1] == "below"
    assert run("breakeven", "--baseline-log", base, "--check", spec).exit_code == 3
    d = json.loads(run("breakeven", "--baseline-toks", "90", "-f", "json", spec).stdout)
    assert d["runs"][0]["verdict"] == "mixed"


# ----------------------------------------------------------------------------- one screen

def test_summary_shows_the_cycle_its_per_stream_rate_uses(run, logfile):
    """Decode lines whose cycle (149 ms) disagrees with the blocks' (27.28 ms): the per-stream
    rate uses the derived cycle, so summary shows it and says the two differ."""
    log = logfile("two.log", short_log(blocks=10, windows=40, derived_cycle=149.0, seed=5))
    out = run("summary", log).stdout
    assert "  cycle           27.2" in out and "10 no-sync EAGLE3_PROF blocks" in out
    assert "  derived cycle   149.0 ms" in out
    assert "1000 × accept length / derived cycle" in out
    assert "the EAGLE3_PROF cycle (27.2" in out and "and the cycle derived from the decode " \
        "lines (149.00 ms per iteration) differ by 82%" in out
    d = json.loads(run("summary", "-f", "json", log).stdout)["runs"][0]
    per = d["throughput"]["per_stream_tok_s"]["estimate"]
    acc = d["accept_len"]["sglang"]["estimate"]
    assert per == pytest.approx(1000 * acc / d["cycle_derived_ms"]["estimate"], rel=1e-9)


def test_fleet_check_fails_on_a_slow_instance_with_few_windows(tmp_path):
    """An instance at about 0.6× with a few windows: fleet --check fails on it (the gate of
    breakeven --check), whether its few windows decide 'below' or leave it without a verdict;
    it passed with 'below?' before."""
    from promserver import free_port
    from test_metrics import start_exporter
    good, bad = free_port(), free_port()
    phases = {good: {"scenario": "reference", "seed": 1, "overrides": {"duration_s": 60.0}},
              bad: {"scenario": "reference", "seed": 2,
                    "overrides": {"duration_s": 60.0, "accept_probs": [0.15]}}}
    proc = start_exporter(tmp_path, [{"port": p, "engine": "sglang", "phases": [ph]}
                                     for p, ph in phases.items()])
    try:
        r = CliRunner().invoke(main, ["--no-cache", "fleet", "--baseline-toks", "130", "--check",
                                      "--step", "0.01", "--duration", "0.15", "-f", "json",
                                      *[f"http://127.0.0.1:{p}/metrics" for p in phases]])
    finally:
        proc.kill()
    assert r.exit_code == 3, r.output
    rows = {x["instance"]: x for x in json.loads(r.stdout)["instances"]}
    slow = rows[f"http://127.0.0.1:{bad}/metrics"]
    assert slow["speedup"] is None or slow["speedup"] < 0.8
    assert f"http://127.0.0.1:{bad}/metrics: " in r.stderr and "check failed" in r.stderr
    assert CliRunner().invoke(main, ["fleet", "--check", "http://127.0.0.1:1/metrics"]
                              ).exit_code == 2      # a gate needs a baseline


def test_a_bucket_at_the_edge_of_the_baseline_is_matched(logfile):
    """A run at 16 requests that sometimes prints 17 (its windows after one sit at a mean
    batch of 16.5, beyond a baseline measured at 15–16): the headline matches the windows the
    baseline covers, and so does the running_req 16 row, never 'no baseline' (it said so while
    the headline matched it: issue 33, item 4)."""
    from shortlogs import batch_log
    sizes = ([16] * 9 + [17]) * 8
    spec = logfile("spec.log", batch_log(sizes, lambda r: 20.0 + 0.5 * r))
    base = logfile("base.log", batch_log([15] * 40 + [16] * 40, lambda r: 10.0 + 0.2 * r,
                                         accept=None))
    r = breakeven(eaglelog.parse(spec), Baseline(log=eaglelog.parse(base)), by_batch=True)
    rows = {b.batch: b for b in r.by_batch}
    assert rows["16"].verdict != "no baseline" and rows["17"].verdict == "no baseline"
    assert rows["16"].baseline_step_ms.estimate == pytest.approx(13.2, rel=0.005)
    assert r.verdict == "above" and r.coverage > 0.8
