"""The simulator (simlab/simulate.py, docs/simulation.md): its log is what its truth implies.

The logs are synthetic (written by the simulator in SGLang's documented formats).  The checks are
the engine's own arithmetic (SGLang v0.5.10, observability/scheduler_metrics_mixin.py): a decode
line's accept len is the window's committed tokens over its request-verifies, its gen throughput
those tokens over the wall time since the previous decode line, #running-req the batch that ran
last.
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

import eaglelog
from simlab.simulate import (SCENARIOS, Scenario, baseline_log, baseline_map,
                               ramp, simulate, stated_steps)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONT = SCENARIOS["continuous"].replace(duration_s=40.0)
REF = SCENARIOS["reference"].replace(duration_s=90.0)


def parsed(run, tmp_path, name="sim.log"):
    path = run.write(tmp_path / name)
    return eaglelog.parse(path), path


def stamps_ms(df) -> np.ndarray:
    return df["timestamp"].to_numpy().astype("datetime64[us]").astype(np.int64) / 1000.0


@pytest.fixture(scope="module")
def cont():
    return simulate(CONT, seed=3, keep_arrays=True)


# ----------------------------------------------------------------------------- the log


@pytest.mark.parametrize("sc", [
    CONT, REF.replace(prof_every=100, prof_prefix=True), SCENARIOS["prof5"],
    CONT.replace(version="0.5.8", overlap=True, tp_size=1, log_ms=False),
    SCENARIOS["continuous_pause"].replace(duration_s=100.0, clients=((0, 8), (40, 0), (60, 8))),
], ids=["continuous", "prof-prefixed", "prof5", "v0.5.8-overlap", "pause"])
def test_the_log_parses_whole_and_clean(sc, tmp_path):
    run = simulate(sc, seed=1)
    log, path = parsed(run, tmp_path)
    assert [d.message for d in log.diagnostics if d.kind != "date"] == []
    tr = run.truth
    assert len(log.decode) == len(tr.windows["line_no"]) > 0
    assert log.decode["line_no"].tolist() == tr.windows["line_no"].tolist()
    assert len(log.prefill) == int(tr.windows["prefill_lines"].sum()) + \
        _prefill_lines_after_last_window(run)
    assert len(log.prof) == len(tr.blocks["line_no"])
    assert len(log.requests) == (tr.requests if sc.log_requests else 0)
    assert log.prof["complete"].all() if len(log.prof) else True
    cfg = log.config()
    assert cfg["speculative_algorithm"] == "EAGLE3"
    assert cfg["speculative_num_steps"] == sc.k and cfg["speculative_eagle_topk"] == 1
    assert cfg["speculative_num_draft_tokens"] == sc.k + 1
    assert cfg["decode_log_interval"] == 40 and cfg["tp_size"] == sc.tp_size


def _prefill_lines_after_last_window(run) -> int:
    text = run.text
    last = run.lines[run.truth.windows["line_no"][-1] - 1]
    return text[text.index(last) + len(last):].count("Prefill batch")


def test_decode_lines_carry_what_the_truth_implies(cont, tmp_path):
    log, _ = parsed(cont, tmp_path)
    d, w, it = log.decode, cont.truth.windows, cont.truth.iterations
    n = len(w["line_no"]) * 40
    # Σ tokens of the windows is Σ T_i over the decode iterations they cover
    assert w["tokens"].sum() == it["T"][:n].sum() == cont.truth.sums.tokens.sum()
    assert w["req_steps"].sum() == it["B"][:n].sum()
    al = d["accept_len"].to_numpy(float)
    # each line: committed tokens / request-verifies, printed with 2 decimals
    assert np.max(np.abs(al - w["tokens"] / w["req_steps"])) <= 0.005 + 1e-12
    # accept rate (v0.5.5.post3 – v0.5.10) = accept len / K, from the unrounded value
    assert np.max(np.abs(d["accept_rate"].to_numpy(float) - w["tokens"] / w["req_steps"] / 4)) \
        <= 0.005 + 1e-12
    # pooled with the exact window weights: the truth's τ to printing precision
    assert abs(np.sum(al * w["req_steps"]) / w["req_steps"].sum() - cont.truth.tau) < 0.005
    # gen throughput × the wall time since the previous decode line = the window's tokens
    wall = np.diff(stamps_ms(d))
    g = d["gen_throughput"].to_numpy(float)[1:]
    assert np.all(np.abs(g * wall / 1000 - w["tokens"][1:]) <= 0.001 * g + 0.005 * wall / 1000
                  + 1e-6)
    # #running-req: the batch of the logging iteration; #token: KV in use after it
    ends = w["end_iter"]
    assert d["running_req"].tolist() == it["B"][ends].tolist()
    assert d["num_tokens"].tolist() == it["KV"][ends].tolist()


def test_window_wall_time_is_decode_plus_prefill_plus_idle(cont):
    w = cont.truth.windows
    assert np.allclose(w["wall_ms"], w["decode_ms"] + w["prefill_ms"] + w["idle_ms"])
    # non-overlap scheduler: a window's Prefill lines are the prefills whose time it holds
    assert np.array_equal(w["prefill_lines"], w["prefills"])
    assert ((w["prefills"] > 0) == (w["prefill_ms"] > 0)).all()
    # continuous traffic: a prefill in almost every window
    assert np.mean(w["prefill_lines"] > 0) > 0.95


def test_finish_lines_keep_sglang_identities(cont, tmp_path):
    log, _ = parsed(cont, tmp_path)
    r = log.requests
    c, a, v = (r[k].to_numpy(float) for k in ("completion_tokens", "accepted_drafts",
                                              "verify_ct"))
    assert np.all(c == 1 + a + v)
    hist = [json.loads(h) for h in r["accept_histogram"]]
    assert all(sum(h) == x for h, x in zip(hist, v))
    assert np.allclose(r["spec_accept_length"], c / v)
    assert np.allclose(r["proposed_drafts"], v * 3)
    # v0.5.10 counts a trimmed last verify's drafts untrimmed (eagle_info.py: the histogram and
    # spec_accepted_tokens come from the list copied before trimming): the identity breaks and
    # eaglelog says so
    run = simulate(CONT.replace(untrimmed_finish_drafts=True, duration_s=20.0), seed=3)
    log2, _ = parsed(run, tmp_path, "untrimmed.log")
    assert any(d.kind == "identity" for d in log2.diagnostics)


# ----------------------------------------------------------------------------- determinism

def test_the_same_seed_gives_the_same_log_and_truth():
    a, b = simulate(CONT, seed=7), simulate(CONT, seed=7)
    assert a.text == b.text
    assert a.truth.metrics() == b.truth.metrics()
    c = simulate(CONT, seed=8)
    assert c.text != a.text and c.truth.tau != a.truth.tau


# ----------------------------------------------------------------------------- the truth

def test_truth_definitions_hold_together(cont):
    m = cont.truth.metrics()
    it = cont.truth.iterations
    n = len(cont.truth.windows["line_no"]) * 40
    B, T, C = it["B"][:n], it["T"][:n], it["C"][:n]
    step = SCENARIOS["continuous"].hw.step_ms(B)
    assert m.tau == pytest.approx(T.sum() / B.sum())
    assert m.cycle_ms == pytest.approx((B * C).sum() / B.sum())
    assert m.cycle_ms_iter == pytest.approx(C.mean())
    assert m.rate_spec == pytest.approx(1000 * T.sum() / (B * C).sum())
    assert m.rate_base == pytest.approx(1000 * B.sum() / (B * step).sum())
    assert m.speedup == pytest.approx(m.tau * m.step_ms / m.cycle_ms)
    assert m.breakeven_accept_len == pytest.approx(m.cycle_ms / m.step_ms)
    # a run's conditional truth on itself is itself; shares sum to 1
    s = cont.truth.sums
    assert s.conditional(s).metrics(cont.truth.hw_step_ms).to_dict() == pytest.approx(
        s.metrics(cont.truth.hw_step_ms).to_dict())
    assert sum(s.shares().values()) == pytest.approx(1.0)


def test_stated_baseline_makes_the_population_speedup_the_target():
    runs = [simulate(REF, seed=s) for s in range(2)]
    pop = runs[0].truth.sums + runs[1].truth.sums
    steps, mu = stated_steps(pop, REF, target=1.0)
    assert pop.metrics(steps).speedup == pytest.approx(1.0)
    assert mu == pytest.approx(pop.metrics(REF.hw.step_ms).speedup)
    text = baseline_map(steps, [1, 8])
    assert text == f"1:{1000 / steps[1]:.6g},8:{1000 / steps[8]:.6g}"


def test_baseline_log_steps_are_exact(tmp_path):
    from eaglelog.analysis.windows import derived_ms, windows
    sc = REF.replace(duration_s=40.0, name="reference-baseline")
    run = simulate(sc, 10_000, speculative=False, noise=False, step_scale=1.25, keep_arrays=True)
    assert run.text == baseline_log(REF.replace(duration_s=40.0), mu=1.25).text
    log, _ = parsed(run, tmp_path)
    assert log.decode["accept_len"].isna().all()
    assert log.config()["speculative_algorithm"] is None
    w = windows(log.decode, log.prefill, 40)
    B = run.truth.iterations["B"][:len(w) * 40].reshape(-1, 40)
    steady = w["clean"].to_numpy() & (B.min(axis=1) == B.max(axis=1))
    want = REF.hw.step_ms(w["running_req"].to_numpy(float)) / 1.25
    assert steady.sum() > 30
    assert np.allclose(derived_ms(w)[steady], want[steady], rtol=2e-4)
    # a clean window whose batch shrank in its last iteration (a request finished, its
    # replacement is prefilled after the decode line): #running-req is the batch of that
    # iteration only, so the derived step is off (sglang.md §3.4)
    odd = w["clean"].to_numpy() & ~steady
    assert np.all(np.abs(derived_ms(w)[odd] / want[odd] - 1) > 0.01)


# ----------------------------------------------------------------------------- the knobs

def _lag1(x):
    d = x - x.mean()
    return float(np.dot(d[1:], d[:-1]) / np.dot(d, d))


def test_drift_rho_makes_windows_autocorrelated():
    base = REF.replace(duration_s=240.0, difficulty_sd=0.0, output_median=4000.0,
                       max_new_tokens=8000, drift_sd=0.5)
    lo = simulate(base.replace(drift_rho=0.0), seed=2).truth.windows
    hi = simulate(base.replace(drift_rho=0.9), seed=2).truth.windows
    r_lo = _lag1(lo["tokens"] / lo["req_steps"])
    r_hi = _lag1(hi["tokens"] / hi["req_steps"])
    assert r_lo < 0.3 < 0.7 < r_hi


def test_acceptance_curve_and_steps():
    geo = simulate(REF.replace(accept_probs=(0.6,), difficulty_sd=0, drift_sd=0), seed=1)
    # a chain of k = 3 positions, each accepted with 0.6 given the ones before:
    # E[a + 1] = 1 + 0.6 + 0.36 + 0.216 (a little less: the last verify is cut short)
    assert geo.truth.tau == pytest.approx(2.176, abs=0.03)
    steep = simulate(REF.replace(accept_probs=(0.9, 0.5, 0.2), difficulty_sd=0, drift_sd=0),
                     seed=1)
    assert steep.truth.tau == pytest.approx(1 + 0.9 + 0.45 + 0.09, abs=0.03)
    five = simulate(REF.replace(num_steps=5, accept_probs=(0.6,), difficulty_sd=0, drift_sd=0),
                    seed=1)
    assert five.truth.tau == pytest.approx(sum(0.6 ** j for j in range(6)), abs=0.03)
    assert five.truth.metrics().cycle_ms > geo.truth.metrics().cycle_ms   # more drafting


def test_cycle_scale_and_warmup():
    a = simulate(REF, seed=4)
    b = simulate(REF.replace(cycle_scale=1.1), seed=4)
    # the same noise, every cycle 10 % longer (fewer iterations in the same 90 s)
    per_a = a.truth.sums.cycle_ms[8] / a.truth.sums.iters[8]
    per_b = b.truth.sums.cycle_ms[8] / b.truth.sums.iters[8]
    assert per_b / per_a == pytest.approx(1.1, rel=0.003)
    w = simulate(REF.replace(warmup_amp=1.0, warmup_iters=400.0), seed=4)
    win = w.truth.windows
    first, last = win["decode_ms"][0] / 40, np.mean(win["decode_ms"][-10:] / 40)
    assert first > 1.7 * last
    assert w.truth.warmup_end == math.ceil(400 * math.log(1000))
    assert w.truth.metrics(steady=True).cycle_ms == pytest.approx(per_a, rel=0.01)
    assert w.truth.metrics().cycle_ms > 1.02 * w.truth.metrics(steady=True).cycle_ms


def test_an_idle_pause_prints_nothing_and_lands_in_one_window(tmp_path):
    sc = CONT.replace(duration_s=80.0, clients=((0, 8), (30, 0), (50, 8)))
    run = simulate(sc, seed=5)
    log, _ = parsed(run, tmp_path)
    gaps = np.diff(stamps_ms(log.decode))
    assert gaps.max() > 15_000               # no decode line while idle
    w = run.truth.windows
    assert w["idle_ms"].max() > 15_000
    assert np.argmax(w["idle_ms"]) == np.argmax(np.r_[0, gaps])
    # the clients drain first: the batch shrinks before the pause
    assert log.decode["running_req"].min() < 8


def test_batch_schedules():
    grow = simulate(SCENARIOS["growing"].replace(duration_s=160.0, clients=ramp(1, 32, 160.0, 8)),
                    seed=1)
    b = grow.truth.windows["running_req"]
    assert b[:5].max() <= 2 and b[-5:].min() >= 28
    shares = grow.truth.sums.shares()
    assert max(shares) >= 30 and min(shares) == 1
    buckets = grow.truth.sums.by_bucket(grow.truth.hw_step_ms, pow2=True)
    assert list(buckets) == ["1", "4–7", "8–15", "16–31", "32–63"]    # levels 1, 5, 9, … 32
    assert sum(share for _, share in buckets.values()) == pytest.approx(1.0)
    # the run's speedup is no bucket's: the buckets' rates pooled by request-steps
    m = grow.truth.metrics()
    inv = sum(share / bm.rate_spec * (bm.tau / m.tau) for bm, share in buckets.values())
    assert 1 / inv == pytest.approx(m.rate_spec)
    assert buckets["1"][0].speedup > m.speedup > buckets["32–63"][0].speedup
    exact = grow.truth.sums.by_bucket(pow2=False)
    assert set(exact) == {str(b) for b in shares}
    vary = Scenario(clients=(), random_clients=(10.0, 1, 32), duration_s=120.0,
                    output_median=200.0)
    v1, v2 = simulate(vary, seed=1), simulate(vary, seed=2)
    assert len(set(v1.truth.windows["running_req"])) > 8
    assert not np.array_equal(v1.truth.sums.iters, v2.truth.sums.iters)


def test_overlap_v058_prints_the_prefill_line_a_window_early():
    run = simulate(CONT.replace(version="0.5.8", overlap=True), seed=2)
    w = run.truth.windows
    # a prefill scheduled right after a logging iteration: its line comes before that decode
    # line (one window early), its time after it
    assert (w["prefill_lines"] != w["prefills"]).any()
    early = np.cumsum(w["prefill_lines"]) - np.cumsum(w["prefills"])
    assert early.min() >= 0 and early.max() >= 1
    assert "#queue-req: 0, \n" in run.text          # the v0.5.4.post1 – v0.5.8 trailing ", "
    plain = simulate(CONT, seed=2).truth.windows
    assert np.array_equal(plain["prefill_lines"], plain["prefills"])


def test_profiler_blocks(tmp_path):
    sc = REF.replace(prof_every=100, clients=((0, 4),))
    run = simulate(sc, seed=6, keep_arrays=True)
    log, _ = parsed(run, tmp_path)
    blk, it = run.truth.blocks, run.truth.iterations
    C = it["C"]
    for end, total in zip(blk["end_iter"], log.prof["total_ms"]):
        assert total == pytest.approx(C[end - 99:end + 1].mean(), abs=0.0051)
    # 'request0': the batch's first request's tokens per cycle — one of the 4, so about a
    # quarter of the batch's tokens
    assert np.allclose(log.prof["tokens"], blk["tok"])
    ratio = blk["tok"].sum() / blk["tokens"].sum()
    assert 0.2 < ratio < 0.3
    batch = simulate(sc.replace(prof_accept="batch"), seed=6).truth.blocks
    assert np.array_equal(batch["tok"], batch["tokens"])
    drafts = simulate(sc.replace(prof_accept="request0_drafts"), seed=6).truth.blocks
    assert np.array_equal(drafts["tok"], blk["tok"] - 100)
    # only the first N blocks with prof_blocks; phase_means: noise-free constant phases
    const = simulate(sc.replace(prof_blocks=2, phase_means=(0.1249, 13.0, 0.55, 0.66)),
                     seed=6)
    log3, _ = parsed(const, tmp_path, "const.log")
    assert len(log3.prof) == 2
    ph = log3.prof_phases
    assert set(ph.loc[ph["phase"] == "Draft steps", "ms_per_cycle"]) == {0.12}


def test_the_aggregate_rate_scenario_is_an_impossible_break_even():
    sc = SCENARIOS["aggregate_baseline"]
    m = simulate(sc.replace(duration_s=60.0), seed=1).truth.metrics()
    assert 1000 / m.step_ms == pytest.approx(90, rel=0.01)        # the per-stream rate
    assert m.cycle_ms * sc.baseline_toks / 1000 > sc.k + 1        # what 720 implies


def test_calibrate_runs_the_cli_on_simulated_logs():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import calibration
    r = calibration.calibrate("few_windows", reps=3)
    assert r["errors"] == 0 and r["reps"] == 3
    assert r["speedup"]["truth"] == pytest.approx(1.0, abs=0.02)
    assert 10 <= r["windows"] <= 25
    assert sum(r[v] for v in ("above", "below", "inconclusive", "insufficient data")) == 1
