"""Break-even analysis: the worked example, agreement of the two cycle-time paths, calibration
of the intervals by simulation, a bootstrap cross-check, insufficient data, the CLI."""
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import eaglelog
from eaglelog.analysis.breakeven import Baseline, breakeven
from eaglelog.api import ParsedLog, SourceInfo
from eaglelog.schema import TABLES
from eaglelog.tables import build_frame
from conftest import CANON, SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"


def decode_line(i, al, tput, rr=1):
    return (f"[2026-03-02 14:{i // 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: {rr}, "
            f"#token: {900 + i}, token usage: 0.01, accept len: {al:.2f}, accept rate: "
            f"{al / 4:.2f}, cuda graph: True, gen throughput (token/s): {tput:.2f}, "
            "#queue-req: 0\n")


def test_worked_example_2_46(write):
    """eagle3_prof.md: 27.28 ms / (1000/90 ms) = 2.46; the decode lines derive the same cycle
    (1000 × 2.30 × 1 / 84.31 = 27.28 ms)."""
    text = CANON + "\n" + "".join(decode_line(i, 2.30, 84.31) for i in range(40))
    r = breakeven(eaglelog.parse(write("w.log", text)), Baseline(tok_s=90))
    assert r.cycle_ms.estimate == pytest.approx(1000 * 2.30 / 84.31)
    assert r.cycle_kind == "clean"            # no prefill line: nothing to remove
    # every window prints the same numbers: the interval is the stated systematic floor of a
    # derived cycle (the batch inside a window is not printed), ±1.96 × 0.35 %
    from eaglelog.analysis import rate
    assert rate.SYS_FLOOR == 0.0035
    assert r.cycle_ms.ci_high / r.cycle_ms.estimate - 1 == pytest.approx(
        math.exp(1.959964 * 0.0035) - 1, rel=0.05)
    assert r.baseline_step_ms.estimate == pytest.approx(1000 / 90)
    assert round(r.breakeven_accept_len.estimate, 2) == 2.46
    assert r.accept_len.estimate == pytest.approx(2.30)
    assert r.speedup.estimate == pytest.approx(2.30 / 2.4552, rel=1e-3)
    assert r.verdict == "below"  # every window says 2.30 < 2.46, with no spread at all
    assert r.eff_tok_s.estimate == pytest.approx(84.31)  # one stream: the printed throughput


def test_five_step_sample_golden():
    r = breakeven(eaglelog.parse(FIVE), Baseline(tok_s=90))
    # the sample was written with a 27.28 ms cycle (its profiler blocks say so)
    assert r.cycle_ms.estimate == pytest.approx(27.28, abs=0.02)
    assert r.cycle_ms.ci_low < 27.28 < r.cycle_ms.ci_high
    assert r.cycle_kind == "corrected" and r.cycle_ms.n == 106
    assert r.cycle_ms.source == "decode lines (105 windows of 106, prefill time removed)"
    assert round(r.breakeven_accept_len.estimate, 2) == 2.46
    assert r.accept_len.estimate == pytest.approx(2.2857, abs=1e-4) and r.accept_len.n == 106
    assert r.speedup.estimate == pytest.approx(0.9309, abs=5e-4)
    assert r.speedup.ci_high < 1 and r.verdict == "below"
    assert r.facts["prefill_ms_per_token"] > 0


def test_derived_cycle_agrees_with_profile_blocks():
    """Tolerance 1 %: accept len is printed with 2 decimals (±0.2 % at 2.3) and the decode
    windows and the profile blocks cover different subsets of the same cycles.  The derived
    cycle removes the prefill time of the 39 windows that hold a prefill (their wall time per
    iteration is over 5 % above the profiler's)."""
    log = eaglelog.parse(FIVE)
    prof = breakeven(log, Baseline(tok_s=90), cycle_from="prof")
    der = breakeven(log, Baseline(tok_s=90), cycle_from="decode")
    assert prof.cycle_kind == "profiler" and der.cycle_kind == "corrected"
    assert abs(der.cycle_ms.estimate / prof.cycle_ms.estimate - 1) < 0.01
    assert der.cycle_ms.ci_low <= prof.cycle_ms.ci_high and \
        prof.cycle_ms.ci_low <= der.cycle_ms.ci_high  # intervals overlap
    from eaglelog.analysis.breakeven import run_windows
    _, win = run_windows(log, str(FIVE))
    held = (win.x[:, 1] > 0) & (win.why == 0)
    assert int(held.sum()) == 39          # the 40 prefills' windows, the first one left out
    assert np.nanmean(win.y[held]) > 1.05 * prof.cycle_ms.estimate
    # nothing said about the two: they agree
    assert not any("differ by" in n for n in der.notes)


def test_baseline_log_matches_batch_size():
    r = breakeven(eaglelog.parse(FIVE),
                  Baseline(log=eaglelog.parse(SAMPLES / "baseline.log")), by_batch=True)
    assert r.baseline_step_ms.estimate == pytest.approx(11.10, abs=0.01)
    assert r.baseline_step_ms.source == "baseline log, step per running_req 1"
    assert [b.batch for b in r.by_batch] == ["1"] and r.by_batch[0].verdict == "below"
    assert r.coverage == 1.0


def test_insufficient_data(write):
    """Insufficient data only below 2 units: two decode lines make one usable window (the
    first's start is unknown)."""
    text = "".join(decode_line(i, 2.3, 84.0) for i in range(2))
    r = breakeven(eaglelog.parse(write("few.log", text)), Baseline(tok_s=90))
    assert r.verdict == "insufficient data"
    assert r.speedup.ci_low is None and r.cycle_ms.ci_low is None
    d = r.to_dict()
    assert d["speedup"]["ci_low"] is None and d["verdict"] == "insufficient data"


def test_few_windows_get_an_interval(write):
    """Six lines (five usable windows) give an interval, not a refusal: 0.933× below 1."""
    text = "".join(decode_line(i, 2.3 + 0.02 * (i % 3), 84.0 + 0.5 * (i % 2)) for i in range(6))
    r = breakeven(eaglelog.parse(write("few.log", text)), Baseline(tok_s=90))
    assert r.speedup.sufficient and r.verdict == "below"
    assert r.speedup.ci_low < r.speedup.estimate < r.speedup.ci_high < 1


def test_plus_minus_baseline_widens_the_interval():
    log = eaglelog.parse(FIVE)
    exact = breakeven(log, Baseline(tok_s=90))
    fuzzy = breakeven(log, Baseline(tok_s=90, sd=3))
    assert fuzzy.breakeven_accept_len.estimate == exact.breakeven_accept_len.estimate
    w_exact = exact.speedup.ci_high - exact.speedup.ci_low
    w_fuzzy = fuzzy.speedup.ci_high - fuzzy.speedup.ci_low
    assert w_fuzzy > 2 * w_exact
    # the step's relative uncertainty is 3/90: 95 % normal interval of 1000/X
    lo, hi = fuzzy.baseline_step_ms.ci_low, fuzzy.baseline_step_ms.ci_high
    assert math.log(hi / lo) / 2 == pytest.approx(1.959964 * 3 / 90, rel=1e-6)


def test_a_rate_per_batch_size_is_matched_to_the_run(write):
    """--baseline-toks 1:90,…: the step at the run's own batch sizes, linear between the given
    ones, nothing outside (a partial verdict names what it covers)."""
    spec = eaglelog.parse(SAMPLES / "batch_eagle3.log")
    steps = {b: 11.1 + 0.45 * (b - 1) for b in (1, 2, 4, 8, 16, 32)}
    full = breakeven(spec, Baseline(per_batch=tuple((b, 1000 / s) for b, s in steps.items())),
                     by_batch=True)
    # pays at 1–16, not at 32: one verdict rule, 'mixed', whether the table is asked for or not
    assert full.coverage == 1.0 and full.verdict == "mixed"
    assert full.verdict_reason.startswith("pays at running_req 1, 2, 4, 8") and \
        full.verdict_reason.split("; ")[1].startswith("not at 32")
    got = {b.batch: b for b in full.by_batch}
    assert got["32"].baseline_step_ms.estimate == pytest.approx(steps[32], rel=1e-3)
    assert got["32"].verdict == "below" and got["1"].verdict == "above"
    part = breakeven(spec, Baseline(per_batch=((1, 90.0), (2, 1000 / steps[2]))))
    assert part.verdict == "partial" and part.coverage < 0.1
    assert part.verdict_reason.startswith("above at running_req 1–2")


def test_an_aggregate_rate_is_caught(write):
    """720 tok/s against a 5-step run: a break-even of 19.6 tokens per cycle, more than twice
    the 6 a cycle can commit: not a per-stream rate."""
    r = breakeven(eaglelog.parse(FIVE), Baseline(tok_s=720))
    assert r.verdict == "invalid baseline"
    assert any("probably an aggregate rate" in n for n in r.notes)
    slow = breakeven(eaglelog.parse(SAMPLES / "sweep" / "steps1.log"), Baseline(tok_s=90))
    # 2.33 > 2 = num_steps + 1: this config cannot pay at any acceptance (a note, a verdict)
    assert slow.verdict == "below"
    assert any("cannot beat the baseline at any acceptance" in n for n in slow.notes)


# ------------------------------------------------------------------ calibration by simulation

def ar1(rng, n, phi, sd):
    e = rng.normal(0, sd, n)
    x = np.empty(n)
    x[0] = e[0] / math.sqrt(1 - phi ** 2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def synthetic_log(rng, n_windows=160, n_blocks=80, phi=0.3, mu_l=2.3, mu_c=27.28, rr=2):
    """A run drawn from a known truth: per-window accept length and cycle time are AR(1)
    around mu_l and mu_c at a constant batch of ``rr``; gen throughput consistent with both."""
    L = mu_l + ar1(rng, n_windows, phi, 0.12)
    c = mu_c + ar1(rng, n_windows, phi, 0.6)
    dec = [{"source": "sim", "line_no": i + 1, "timestamp": None, "running_req": rr,
            "accept_len": float(L[i]), "accept_rate": float(L[i]) / 4,
            "gen_throughput": float(1000 * L[i] * rr / c[i]), "queue_req": 0, "header": ","}
           for i in range(n_windows)]
    tot = mu_c + ar1(rng, n_blocks, phi, 0.3)
    prof = [{"source": "sim", "line_no": 10_000 + j, "mode": "no sync", "cycles": 100,
             "tokens": 114, "total_ms": float(tot[j]), "complete": True}
            for j in range(n_blocks)]
    tables = {name: build_frame(TABLES[name], []) for name in TABLES}
    tables["decode"] = build_frame(TABLES["decode"], dec)
    tables["prof"] = build_frame(TABLES["prof"], prof)
    return ParsedLog(tables, [SourceInfo("sim")], [])


@pytest.mark.parametrize("cycle_from", ["prof", "decode"])
def test_intervals_are_calibrated(cycle_from):
    """The 95 % intervals of accept length, break-even and speedup cover the truth 91–99 % of
    the time over 300 synthetic runs (AR(1) windows, φ = 0.3, a baseline of 90±3 tok/s whose
    stated value is itself a draw).  (The request-level simulator's scenarios are in
    tests/test_calibration.py and benchmarks/calibration.py.)"""
    rng = np.random.default_rng(20261129 + (cycle_from == "decode"))
    mu_l, mu_c, tok, sd = 2.3, 27.28, 90.0, 3.0
    truth = {"accept_len": mu_l, "breakeven_accept_len": mu_c * tok / 1000,
             "speedup": mu_l * 1000 / tok / mu_c, "cycle_ms": mu_c}
    hits = {k: 0 for k in truth}
    reps = 300
    for _ in range(reps):
        log = synthetic_log(rng)
        observed = rng.normal(tok, sd)
        r = breakeven(log, Baseline(tok_s=observed, sd=sd), cycle_from=cycle_from, warmup=0)
        for k, v in truth.items():
            e = getattr(r, k)
            hits[k] += e.ci_low <= v <= e.ci_high
    cover = {k: h / reps for k, h in hits.items()}
    for k, c in cover.items():
        # a derived cycle carries a 0.25 % systematic floor (the batch inside a window is not
        # printed; this synthetic log has none of that error): it may cover more
        top = 1.0 if k == "cycle_ms" and cycle_from == "decode" else 0.99
        assert 0.91 <= c <= top, (k, cover)


def test_interval_agrees_with_a_block_bootstrap():
    """The influence (delta-method) interval of the speedup is checked against a block
    bootstrap that resamples batches of the same length (and the baseline rate from
    N(90, 3))."""
    rng = np.random.default_rng(7)
    log = synthetic_log(rng, n_windows=300, n_blocks=50)
    r = breakeven(log, Baseline(tok_s=90, sd=3), cycle_from="decode", warmup=0)
    d = log.decode
    L = d.accept_len.to_numpy()
    c = 1000 * L * 2 / d.gen_throughput.to_numpy()
    b = r.facts["batches"]
    n = len(L)
    labels = (np.arange(n) * b) // n
    ok = np.arange(n) > 0  # the first window has no start
    boot = []
    for _ in range(4000):
        pick = rng.integers(0, b, b)
        idx = np.concatenate([np.flatnonzero(labels == k) for k in pick])
        ratio = np.mean(L[idx]) / np.mean(c[idx][ok[idx]])
        boot.append(ratio * 1000 / rng.normal(90, 3))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    width = r.speedup.ci_high - r.speedup.ci_low
    assert abs(r.speedup.ci_low - lo) < 0.2 * width
    assert abs(r.speedup.ci_high - hi) < 0.2 * width


# ------------------------------------------------------------------ CLI

def test_cli_json_shape(run):
    res = run("breakeven", "--baseline-toks", "90", "-f", "json", FIVE)
    assert res.exit_code == 0
    whole = json.loads(res.stdout)
    # one shape whatever the input holds: the runs, the command, the confidence, the errors
    assert set(whole) == {"command", "confidence", "runs", "errors"}
    assert (whole["command"], whole["confidence"], whole["errors"]) == ("breakeven", 0.95, [])
    (d,) = whole["runs"]
    for k in ("cycle_ms", "baseline_step_ms", "breakeven_accept_len", "accept_len", "speedup"):
        assert set(d[k]) >= {"estimate", "ci_low", "ci_high", "n"}
    assert d["cycle_ms"]["source"].startswith("decode lines (105 windows of 106")
    assert d["cycle_kind"] == "corrected" and d["coverage"] == 1.0
    assert d["confidence"] == 0.95 and d["verdict"] == "below" and d["notes"] == []
    assert round(d["breakeven_accept_len"]["estimate"], 2) == 2.46
    assert round(d["eff_tok_s"]["estimate"], 1) == 83.8
    assert d["facts"]["windows_used"] == 105 and d["facts"]["batches"] >= 5


def test_cli_human_block(run):
    out = run("-q", "breakeven", "--baseline-toks", "90", FIVE).stdout.splitlines()
    assert out[0] == f"{FIVE}  vs  baseline 90 tok/s   (intervals: 95% confidence)"
    assert out[1].split()[:4] == ["cycle", "time", "27.28", "ms"]
    assert out[3].split()[:3] == ["break-even", "accept", "2.456"]
    assert out[6].split()[:4] == ["per-stream", "rate", "83.77", "tok/s"]
    assert "BELOW break-even: 0.931× the baseline (6.9% slower" in out[7]
    assert out[8].strip().startswith("to break even       accept length 2.286 → 2.456")


def test_cli_check_gate(run):
    assert run("-q", "breakeven", "--baseline-toks", "90", "--check", FIVE).exit_code == 3
    ok = run("-q", "breakeven", "--baseline-toks", "60", "--check", FIVE)
    assert ok.exit_code == 0 and "ABOVE break-even" in ok.stdout


def test_cli_confidence_and_errors(run):
    a = json.loads(run("breakeven", "--baseline-toks", "90", "--confidence", "0.8", "-f", "json",
                       FIVE).stdout)["runs"][0]
    b = json.loads(run("breakeven", "--baseline-toks", "90", "-f", "json", FIVE).stdout)["runs"][0]
    assert a["confidence"] == 0.8
    assert a["accept_len"]["ci_high"] - a["accept_len"]["ci_low"] < \
        b["accept_len"]["ci_high"] - b["accept_len"]["ci_low"]
    r = run("breakeven", FIVE)
    assert r.exit_code == 2 and "give the baseline" in r.stderr
    r = run("breakeven", "--baseline-toks", "ninety", FIVE)
    assert r.exit_code == 2 and "'ninety': not a rate like 90, 90±3 or 1:90,8:70" in r.stderr
    r = run("breakeven", "--baseline-toks", "1:90,x:3", FIVE)
    assert r.exit_code == 2 and "'x:3' is not BATCH:TOK_S" in r.stderr
    r = run("breakeven", "--baseline-toks", "90", "--skip-warmup", "some", FIVE)
    assert r.exit_code == 2 and "'auto' or a number of windows" in r.stderr
    r = run("breakeven", "--baseline-toks", "90", SAMPLES / "baseline.log")
    assert r.exit_code == 1
    assert "nothing to take a cycle time from (is this a speculative run?)" in r.stderr


def test_cli_csv_has_one_row_per_log_and_bucket(run):
    out = run("-q", "breakeven", "--baseline-log", SAMPLES / "baseline.log", "--by", "batch",
              "-f", "csv", FIVE, SAMPLES / "eagle3_2step.log").stdout
    df = pd.read_csv(pd.io.common.StringIO(out))
    assert df.scope.tolist() == ["all", "bucket", "all", "bucket"]
    assert df.running_req.isna().tolist() == [True, False, True, False]     # numeric: no 'all'
    assert df.running_req[1] == df.running_req[3] == 1
    assert df.verdict.tolist() == ["below"] * 4


def test_by_batch_finds_where_speculation_stops_paying():
    """batch_*.log: cycle(b) = 27.28 + 1.9 (b−1) ms, step(b) = 11.1 + 0.45 (b−1) ms, accept
    len ≈ 3.15 (make_samples.py): speculation pays up to 16 requests, not at 32."""
    spec = eaglelog.parse(SAMPLES / "batch_eagle3.log")
    base = eaglelog.parse(SAMPLES / "batch_baseline.log")
    r = breakeven(spec, Baseline(log=base), by_batch=True)
    got = {b.batch: b for b in r.by_batch}
    assert list(got) == ["1", "2", "4", "8", "16", "32"]
    for size, b in got.items():
        n = int(size)
        assert b.cycle_ms.estimate == pytest.approx(27.28 + 1.9 * (n - 1), rel=0.01)
        assert b.baseline_step_ms.estimate == pytest.approx(11.1 + 0.45 * (n - 1), rel=0.01)
        assert b.accept_len.estimate == pytest.approx(3.15, abs=0.05)
        truth = 3.15 * (11.1 + 0.45 * (n - 1)) / (27.28 + 1.9 * (n - 1))
        assert b.speedup.estimate == pytest.approx(truth, rel=0.02)
    # at 16 the truth is 3.15 × 17.85 / 55.78 = 1.008: above 1, by little (50 windows of a
    # 1 % noise decide it, or leave it open; never 'below')
    assert [b.verdict for b in r.by_batch][:4] == ["above"] * 4
    assert r.by_batch[4].verdict in ("above", "inconclusive") and r.by_batch[5].verdict == "below"
    assert r.verdict == "mixed"


def test_cli_by_batch_table(run):
    out = run("-q", "breakeven", "--baseline-log", SAMPLES / "batch_baseline.log", "--by",
              "batch", SAMPLES / "batch_eagle3.log").stdout
    table = out[out.index("running_req    windows"):].splitlines()
    assert table[0].split()[:4] == ["running_req", "windows", "context", "cycle"]   # #token
    assert table[2].split()[0] == "1" and table[2].split()[-1] == "above"
    assert table[7].split()[0] == "32" and table[7].split()[-1] == "below"


def test_a_speculative_log_is_not_a_baseline(run):
    r = run("-q", "breakeven", "--check", "--baseline-log", SAMPLES / "eagle3_2step.log", FIVE)
    assert r.exit_code == 1
    assert "not a baseline: it is a speculative run (speculative_algorithm='EAGLE3')" in r.stderr


def test_a_partial_baseline_matches_the_same_windows_on_both_sides(write, tmp_path):
    """Batch sizes the baseline lacks are left out of the run too, not only of the baseline."""
    text = (SAMPLES / "batch_baseline.log").read_text()
    kept = "".join(ln for ln in text.splitlines(keepends=True)
                   if "#running-req: 16," not in ln and "#running-req: 32," not in ln)
    base = eaglelog.parse(write("base.log", kept))
    r = breakeven(eaglelog.parse(SAMPLES / "batch_eagle3.log"), Baseline(log=base),
                  by_batch=True)
    got = {b.batch: b.verdict for b in r.by_batch}
    assert got == {"1": "above", "2": "above", "4": "above", "8": "above",
                   "16": "no baseline", "32": "no baseline"}
    # 1–8 is a small share of the run's request-steps (the large batches weigh most)
    assert r.verdict == "partial" and r.verdict_reason.startswith("above at running_req 1–8")
    assert any("the baseline covers running_req 1–8" in n for n in r.notes)


def test_a_baseline_that_covers_none_of_the_run_is_an_invalid_baseline(run):
    """Not 'insufficient data' (the run has data; the baseline matches none of it), and a
    gate fails on it even with --allow-insufficient."""
    r = eaglelog.breakeven(SAMPLES / "batch_eagle3.log", baseline_toks="64:50,128:40")
    assert r.verdict == "invalid baseline"
    assert r.verdict_reason == ("the baseline covers running_req 64–128, none of the run's "
                                "batch sizes (the run: 1–32)")
    assert r.coverage == 0
    got = run("-q", "breakeven", "--baseline-toks", "64:50,128:40", "--check",
              "--allow-insufficient", SAMPLES / "batch_eagle3.log")
    assert got.exit_code == 3, got.output
    # the summary keeps the run's own accept length and per-stream rate
    s = eaglelog.summary(SAMPLES / "batch_eagle3.log", baseline_toks="64:50,128:40")
    free = eaglelog.summary(SAMPLES / "batch_eagle3.log")
    assert s.accept_sglang.estimate == free.accept_sglang.estimate
    assert s.eff_tok_s.estimate == free.eff_tok_s.estimate


@pytest.mark.parametrize("n", [10, 11, 17, 99, 100, 101, 399, 400, 401, 12345, 3790831])
def test_batch_starts_match_the_batch_labels(n):
    import numpy as np
    from eaglelog.stats import batch_labels, batch_starts
    labels = batch_labels(n)
    assert np.array_equal(batch_starts(n), np.flatnonzero(np.diff(labels, prepend=-1)))


@pytest.mark.parametrize("text", ["٩٠", "９０", "1_000", "inf", "nan", "1e400", "90±inf",
                                  "1:٩٠", "８:70"])
def test_a_baseline_rate_is_ascii_digits_and_finite(run, text):
    """--baseline-toks reads numbers as the parsers do (issue 13): other digits, '_', inf and
    nan are a usage error, never a rate."""
    r = run("-q", "breakeven", "--baseline-toks", text, FIVE)
    assert r.exit_code == 2 and r.stdout == ""
    why = (f"'{text}' is not BATCH:TOK_S (an integer batch size and a rate)" if ":" in text
           else "not a rate like 90, 90±3 or 1:90,8:70")
    assert f"Invalid value for --baseline-toks: '{text}': {why}" in r.stderr


def test_a_slow_high_batch_level_is_not_taken_for_idle_gaps(tmp_path):
    """A 7-step run whose clients step 2 → 8 → 16 on convex hardware: its windows at 16
    requests take 5–6× as long as those at 2 (the cycle grows with the batch), which is not
    an idle gap. Compared with the windows of the same #running-req, none is left out."""
    from eaglelog.analysis import rate
    from eaglelog.analysis.breakeven import run_windows
    from eaglelog.library import load
    from simlab.simulate import ConvexVerify, Scenario, simulate
    sc = Scenario(name="lv", clients=((0.0, 2), (120.0, 8), (240.0, 16)), think_s=0.05,
                  output_median=250.0, output_sigma=0.4, duration_s=360.0, hw=ConvexVerify(),
                  accept_probs=(0.85, 0.74, 0.66, 0.6, 0.55, 0.5, 0.46), num_steps=7)
    p = str(tmp_path / "s7.log")
    run_ = simulate(sc, 71)
    run_.write(p)
    _, win = run_windows(load(p), p)
    f = rate.fit(win, 0.95, None)
    assert rate.WHY[rate.IDLE] not in f.left_out
    # 16 requests hold a third of the time and most of the request-steps: with them the
    # per-stream rate is the truth's (64.7 tok/s), inside its interval; without them it was
    # 107 (the level taken for idle gaps)
    truth = run_.truth.sums.metrics().rate_spec
    assert truth == pytest.approx(64.69, abs=0.01)
    assert f["rate"].ci_low * 1000 <= truth <= f["rate"].ci_high * 1000


def test_a_baseline_log_of_many_batch_sizes_gives_a_step_at_each(tmp_path):
    """A baseline log whose #running-req takes more than 16 values (a ramp 1 → 24): every size
    with enough windows is a point of the step curve.  (The per-batch tables group such sizes
    by powers of two, '4–7'; a group's step is the step at no one size, and until 2026-12-04
    the baseline kept only the groups of one size, here size 1 alone: this run at 14 was
    'insufficient data' at 0 % coverage.)  The simulated baseline is noise-free: its step at
    B is the hardware's b(B) (simlab/simulate.py, Hardware.step_ms)."""
    from eaglelog.analysis.breakeven import size_ranges
    from simlab.simulate import SCENARIOS, baseline_log, ramp, simulate
    sc = SCENARIOS["growing"].replace(duration_s=480.0, clients=ramp(1, 24, 480.0),
                                      log_requests=False)
    base = tmp_path / "base.log"
    baseline_log(sc).write(str(base))
    run = tmp_path / "run.log"
    simulate(sc.replace(clients=((0.0, 14),), duration_s=240.0), 1).write(str(run))
    blog = eaglelog.parse(str(base))
    assert blog.decode["running_req"].nunique() > 16
    r = eaglelog.breakeven(eaglelog.parse(str(run)), baseline_log=blog)
    assert r.verdict in ("above", "below", "inconclusive"), (r.verdict, r.notes)
    assert r.runs[0].facts["coverage"] > 0.99
    sizes = [int(s) for s in r.baseline_step_ms.source.split("running_req ")[1]
             .replace("–", ",").split(",")]
    assert min(sizes) <= 2 and max(sizes) >= 20, r.baseline_step_ms.source
    # the stated mean step is the hardware's at the run's batch mix, within its interval
    b = eaglelog.parse(str(run)).decode["running_req"].to_numpy(float)
    hw = float(np.mean([sc.hw.step_ms(x) for x in b]))
    assert r.baseline_step_ms.estimate == pytest.approx(hw, rel=0.01)
    assert size_ranges([1, 2, 3, 4, 6, 8, 9]) == "1–4, 6, 8–9"
    assert size_ranges([5]) == "5" and size_ranges([]) == ""


def test_a_profiler_cycle_over_cycles_beside_a_cycle_over_request_steps_is_explained():
    """sample_logs/schedule/steps5.log runs at batch sizes 1–32: its EAGLE3_PROF blocks give
    57.02 ms a cycle, the mean over cycles, and so do its decode lines per iteration; break-even
    compares the mean over request-steps, 111.72 ms, which weighs each cycle by its batch size.
    summary prints both, and says why they differ."""
    r = eaglelog.breakeven(SAMPLES / "schedule" / "steps5.log",
                           baseline_log=SAMPLES / "batch_baseline.log")
    assert round(r.cycle_ms.estimate, 2) == 111.72
    assert ("the EAGLE3_PROF cycle (57.02 ms) is a mean over cycles, as is the decode lines' "
            "per iteration (57.01 ms); break-even uses their mean over request-steps (111.72 ms), "
            "which weighs each cycle by its batch size") in r.notes
    # one batch size: the means agree, no such note
    one = eaglelog.breakeven(FIVE, baseline_toks=90)
    assert not any("mean over cycles" in n for n in one.notes)


def test_a_window_whose_accept_len_is_damaged_is_left_out_not_taken_as_one_token(write):
    """A damaged `accept len: x.49` is warned about when parsed; its window has no tokens per
    iteration, so its wall time is not known.  Taken as one token (a = 1), as until
    2026-12-04, it was a window 2–3× too fast inside the cycle."""
    text = FIVE.read_text()
    lines = text.splitlines(keepends=True)
    at = [i for i, ln in enumerate(lines) if "Decode batch" in ln][50]
    lines[at] = re.sub(r"accept len: \d\.\d\d", "accept len: x.49", lines[at])
    bad = eaglelog.parse(write("damaged.log", "".join(lines)))
    assert any(d.line_no == at + 1 and d.kind == "bad_value" for d in bad.diagnostics)
    good = eaglelog.breakeven(FIVE, baseline_toks=90)
    r = eaglelog.breakeven(bad, baseline_toks=90)
    assert r.runs[0].facts["left_out"].get("no accept len") == 1
    assert r.cycle_ms.estimate == pytest.approx(good.cycle_ms.estimate, rel=2e-4)
    assert r.accept_len.n == good.accept_len.n - 1


def test_the_verdict_and_the_gate_do_not_depend_on_asking_for_the_table(run):
    """One stated rate against a run at 1–32: 'mixed' with or without --by batch (the table is
    computed either way), and --check fails both ways; summary prints the table its verdict
    points to."""
    log = SAMPLES / "batch_eagle3.log"
    for extra in ([], ["--by", "batch"]):
        r = run("-q", "breakeven", "--baseline-toks", "90", *extra, "-f", "json", log)
        assert json.loads(r.stdout)["runs"][0]["verdict"] == "mixed", extra
        assert run("-q", "breakeven", "--baseline-toks", "90", *extra, "--check",
                   log).exit_code == 3, extra
    out = run("-q", "summary", "--baseline-toks", "90", log).stdout
    assert "MIXED: pays at running_req 1, 2, 4; not at 8, 16, 32" in out and \
        "(see the table)" in out
    rows = [ln.split() for ln in out.splitlines() if ln.strip().split(" ")[0] in
            ("1", "2", "4", "8", "16", "32")]
    assert [r[0] for r in rows] == ["1", "2", "4", "8", "16", "32"]
    assert [r[-1] for r in rows] == ["above", "above", "above", "below", "below", "below"]
