"""The mean batch of a window measured from millisecond timestamps (SGLANG_LOG_MS=1), the
errors-in-variables correction for its rounding, and the regressor of prefills that found the
decode batch drained (eaglelog/analysis/rate.py; docs/statistics.md, 'What one sample is').

SGLang (python/sglang/srt/managers/scheduler_metrics_mixin.py, log_decode_stats, v0.5.10):
``gap_latency = time.perf_counter() - self.last_decode_stats_tic`` then
``self.last_decode_stats_tic = time.perf_counter()`` and ``gen_throughput =
self.num_generated_tokens / gap_latency``: the throughput of a decode line covers the time since
the previous decode line, so tokens = throughput × the time between the two lines' stamps."""
import math

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis import rate
from eaglelog.analysis.breakeven import run_windows

I = 40


def stamp(t_ms: float, ms: bool) -> str:
    sec = int(t_ms // 1000)
    frac = f".{int(t_ms - sec * 1000):03d}" if ms else ""
    return f"[2026-03-02 14:{sec // 60:02d}:{sec % 60:02d}{frac} TP0] "


def window_log(windows, ms=True, interval=I, t0=5_000.0):
    """Decode lines of windows (printed #running-req r, true mean batch, accept len, wall ms):
    tokens = accept × mean batch × interval, printed throughput = tokens / wall."""
    out, t = [], t0
    for r, mean_b, a, wall in windows:
        t += wall
        tok = a * mean_b * interval
        out.append(stamp(t, ms) + f"Decode batch, #running-req: {r}, #token: 5000, token usage: "
                   f"0.05, accept len: {a:.2f}, accept rate: {(a - 1) / 3:.2f}, cuda graph: True, "
                   f"gen throughput (token/s): {tok / (wall / 1000):.2f}, #queue-req: 0\n")
    return "".join(out)


def windows_of(tmp_path, text, name="w.log"):
    p = tmp_path / name
    p.write_text(text)
    log = eaglelog.parse(str(p))
    return run_windows(log, log.sources[0].name)[1]


# eight windows; the batch dips inside window 3 (mean 7.5 although both lines print 8) and
# jumps 4 -> 8 inside window 6 (mean 6.0)
WINDOWS = [(8, 8.0, 2.50, 800.0), (8, 8.0, 2.50, 800.0), (8, 7.5, 2.40, 760.0),
           (8, 8.0, 2.60, 800.0), (4, 5.0, 2.50, 700.0), (8, 6.0, 2.50, 730.0),
           (8, 8.0, 2.50, 800.0), (8, 8.0, 2.50, 800.0)]


def test_millisecond_stamps_measure_the_mean_batch(tmp_path):
    win = windows_of(tmp_path, window_log(WINDOWS))
    assert not win.measured[0] and win.measured[1:].all()     # the first has no start
    truth = np.array([w[1] for w in WINDOWS])
    # rounding of accept len (2 decimals) and the truncated stamps: within 0.3 %
    assert win.b[1:] == pytest.approx(truth[1:], rel=3e-3)
    assert win.b[2] == pytest.approx(7.5, rel=3e-3)           # the trapezoid says 8
    # wall per iteration straight from the stamps
    assert win.y[1:] == pytest.approx(np.array([w[3] for w in WINDOWS])[1:] / I, abs=0.03)
    # the 4 -> 8 jump is used: its mean batch is measured, not guessed
    assert win.why[5] == rate.USED and win.b[5] == pytest.approx(6.0, rel=3e-3)
    # the variance from the printed precision is carried (a relative σ of about 0.1 %)
    assert (win.bvar[1:] > 0).all()
    assert np.sqrt(win.bvar[1:]) / win.b[1:] == pytest.approx(0.0012, rel=0.3)


def test_whole_second_stamps_keep_the_trapezoid(tmp_path):
    slow = [(r, b, a, wall * 2) for r, b, a, wall in WINDOWS]   # windows of 1.4–1.6 s
    win = windows_of(tmp_path, window_log(slow, ms=False))
    assert win.measured is None and win.bvar is None
    assert win.b[2] == 8.0 and win.b[4] == 6.0 and win.b[5] == 6.0   # (r_{j-1} + r_j) / 2
    assert win.why[5] == rate.JUMP          # 4 -> 8: the mean batch is not known
    # … and the text says it was left out, and what would measure it
    f = rate.fit(win, 0.95, warmup=0)
    assert f.left_out[rate.WHY[rate.JUMP]] == 2       # 8 -> 4 and 4 -> 8
    assert ("2 of 8 decode windows left out of the cycle: the batch size moved by more than "
            "half between their two lines, so their mean batch is not known (SGLANG_LOG_MS=1 "
            "stamps measure it)") in f.notes
    # millisecond stamps measure it: the window is used, no note
    g = rate.fit(windows_of(tmp_path, window_log(WINDOWS), "ms.log"), 0.95, warmup=0)
    assert rate.WHY[rate.JUMP] not in g.left_out and not any("left out" in n for n in g.notes)


def test_a_wrong_decode_log_interval_keeps_the_trapezoid(tmp_path):
    # lines written every 20 iterations but read with the default 40: the measured batch would
    # be half the printed one, so the series keeps the trapezoid rather than halve the cycle
    win = windows_of(tmp_path, window_log(WINDOWS, interval=20))
    assert win.measured is None
    assert win.b[3] == 8.0


def test_the_derived_cycle_needs_no_systematic_floor_when_measured(tmp_path):
    rows = [(8, 8.0, 2.50, 800.0 + 5 * ((k * 7) % 3)) for k in range(60)]
    for ms, floor in ((True, False), (False, True)):
        walls = rows if ms else [(r, b, a, w * 2) for r, b, a, w in rows]
        r = eaglelog.breakeven(eaglelog.parse(str(_write(tmp_path, window_log(walls, ms=ms)))),
                               baseline_toks=90)
        sys_rel = r.runs[0].facts["cycle_systematic_rel"]
        assert (sys_rel >= rate.SYS_FLOOR) is floor, (ms, sys_rel)


def _write(tmp_path, text, name="f.log"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_errors_in_variables_correction_recovers_the_prefill_cost():
    """y = c(B) + 6 ms × prefill batches per iteration; B barely moves between windows (its
    spread is twice its rounding error) and the windows with a prefill have a lower batch (a
    request left before the next was admitted).  Least squares on the measured batch leaks
    the attenuated batch control into β; the corrected normal equations do not."""
    rng = np.random.default_rng(7)
    n = 200_000
    cnt = rng.poisson(2.0, n).astype(float)
    b_true = 16.0 - 0.05 * cnt + rng.normal(0, 0.03, n)
    y_true = 12.0 + 0.58 * b_true + 6.0 * cnt / I + rng.normal(0, 0.02, n)
    # the errors of a real window: the accept-len rounding in b alone, and the two truncated
    # stamps (variance STAMP_VAR ms² on Δt = y × I) in both b and y
    err_sd = 0.03
    stamps = rng.normal(0, np.sqrt(rate.STAMP_VAR), n)
    dt = y_true * I
    b_meas = b_true + rng.normal(0, err_sd, n) + b_true * stamps / dt
    y = y_true + stamps / I
    bvar = err_sd ** 2 + (b_meas / dt) ** 2 * rate.STAMP_VAR
    x = np.zeros((n, rate.N_X))
    x[:, 1] = cnt / I

    def win(bvar):
        return rate.Windows(I, np.arange(n), None, np.zeros(n, np.int64), np.round(b_meas),
                            b_meas, np.full(n, 2.5), y, x, np.zeros(n, np.int8), True,
                            np.zeros(n, bool), None, bvar)
    use = np.ones(n, bool)
    spec = rate.ModelSpec((1,), (0, 1), (16.0, 1.0))
    naive = rate._beta_of(win(None), use, spec)[1]
    fixed = rate._beta_of(win(bvar), use, spec)[1]
    assert abs(naive - 6.0) > 0.3                 # attenuated: about 3.4
    assert fixed == pytest.approx(6.0, abs=0.1)


def _still_batch(spread, err=0.03, n=20_000, seed=3):
    """Windows at a batch that moves by ``spread`` (sd) around 8, measured with rounding error
    ``err`` (sd): the corrected design keeps 1 − err² / (spread² + err²) of the batch's sum of
    squares."""
    rng = np.random.default_rng(seed)
    b = 8.0 + rng.normal(0, spread, n) + rng.normal(0, err, n)
    y = 12.0 + 0.6 * b
    return rate.Windows(I, np.arange(n), None, np.zeros(n, np.int64), np.round(b), b,
                        np.full(n, 2.5), y, np.zeros((n, rate.N_X)), np.zeros(n, np.int8), True,
                        np.zeros(n, bool), None, np.full(n, err ** 2))


@pytest.mark.parametrize("spread, share, kept", [(0.06, 0.2, (0, 1, 2)), (0.01, 0.9, (0, 1)),
                                                 (0.005, 0.973, (0,))])
def test_a_batch_its_rounding_error_swamps_loses_the_curve(spread, share, kept):
    """rate.identified: the errors-in-variables correction divides by what is left of the
    batch's spread once its rounding error is taken out; where under 5 % is left in some
    direction of the design the top terms of the curve in B go (ar09 seed 5021 had 0.05 %
    left, and its cycle came out +5.3 % with an interval from 0 to 10¹⁶)."""
    win = _still_batch(spread)
    use = np.ones(win.n, bool)
    lo, hi = float(win.b.min()), float(win.b.max())
    line = rate.ModelSpec((), (0, 1), ((lo + hi) / 2, (hi - lo) / 2))
    assert rate._noise_share(win, use, line, win.w) == pytest.approx(share, abs=0.01)
    quad = rate.ModelSpec((), (0, 1, 2), line.scale)
    assert rate.identified(win, use, quad, win.w).smooth == kept


def test_a_design_that_is_not_finite_is_not_identified():
    """A non-finite moment (a NaN in the prefill work of a used window) leaves nothing the
    correction could divide by: the curve is dropped, never a LinAlgError."""
    win = _still_batch(0.06)
    win.x[0, 0] = np.nan
    use = np.ones(win.n, bool)
    lo, hi = float(win.b.min()), float(win.b.max())
    quad = rate.ModelSpec((0,), (0, 1, 2), ((lo + hi) / 2, (hi - lo) / 2))
    assert rate._noise_share(win, use, quad, win.w) == 1.0
    assert rate.identified(win, use, quad, win.w).smooth == (0,)


def test_a_cycle_whose_precision_weights_sit_on_a_still_batch_keeps_its_curve(tmp_path):
    """ar09 seed 5021 (a simulated run at 7–8 requests, true cycle 16.380 ms): the clean windows
    got 98 % of the precision weight and their batch barely moved (the corrected matrix was
    singular there: λ = 1.0005), so the cycle was 17.28 ms in [0 … 5·10¹⁶].  The fit now falls
    back to equal precisions, where the curve is identified."""
    from simlab.simulate import SCENARIOS, simulate
    p = str(tmp_path / "ar09.log")
    run = simulate(SCENARIOS["ar09"], 5021)
    run.write(p)
    log = eaglelog.parse(p)
    f = rate.fit(run_windows(log, log.sources[0].name)[1], 0.95, None)
    truth = run.truth.sums.metrics().cycle_ms
    assert truth == pytest.approx(16.380, abs=0.001)
    c = f["cycle_ms"]
    assert c.estimate == pytest.approx(truth, rel=0.001)
    assert c.ci_low <= truth <= c.ci_high
    assert c.ci_high / c.ci_low < 1.01


def test_prefills_that_found_the_batch_drained_carry_the_idle_before_them(tmp_path):
    """growing (1 → 32 clients): at one client every request finishes into an empty batch and
    the server waits the client's 3 ms before the next prefill; the drained-prefill regressor
    takes that wait (about 3 ms), so the prefill cost per batch stays the simulator's 6.0."""
    from simlab import simulate as S
    sc = S.SCENARIOS["growing"].replace(duration_s=300.0, clients=S.ramp(1, 8, 300.0),
                                        log_requests=False)
    run = S.simulate(sc, 3)
    log = eaglelog.parse(run.write(str(tmp_path / "growing.log")))
    _, win = run_windows(log, log.sources[0].name)
    assert (win.x[:, 4] > 0).any()
    f = rate.fit(win, 0.95, None)
    assert f.beta[1] == pytest.approx(6.0, abs=0.6)
    assert f.beta[4] == pytest.approx(3.0, abs=1.5)
    assert f["cycle_ms"].estimate == pytest.approx(run.truth.sums.metrics().cycle_ms, rel=3e-3)


def test_whole_second_stamps_say_what_the_allowance_costs(tmp_path):
    """With whole-second stamps the cycle's interval holds the systematic allowance for each
    window's mean batch (SYS_FLOOR); where it is the larger part of the interval, breakeven and
    summary say so and name SGLANG_LOG_MS=1 (v0.5.6 →, ../shared/formats/sglang.md §1: PR
    #14183).  Millisecond stamps measure the mean batch: no allowance, no note."""
    rows = [(8, 8.0, 2.50, 800.0 + 5 * ((k * 7) % 3)) for k in range(60)]
    for ms in (False, True):
        walls = rows if ms else [(r, b, a, w * 2) for r, b, a, w in rows]
        path = str(_write(tmp_path, window_log(walls, ms=ms), f"{ms}.log"))
        log = eaglelog.parse(path)
        be = eaglelog.breakeven(log, baseline_toks=90)
        said = [n for n in be.notes if n.startswith("whole-second timestamps")]
        s = eaglelog.summary(log)
        said_s = [n for n in s.notes if n.startswith("whole-second timestamps")]
        if ms:
            assert not said and not said_s
            continue
        c = be.cycle_ms
        half = (c.ci_high / c.ci_low) ** 0.5 - 1
        assert half == pytest.approx(1.959964 * rate.SYS_FLOOR, rel=0.05)
        assert said == [f"whole-second timestamps: most of the cycle's ±{half:.2%} is an "
                        "allowance for each window's mean batch, which they cannot measure "
                        f"(statistical part ±{said[0].split('part ±')[1][:5]}); SGLANG_LOG_MS=1 "
                        "stamps (SGLang v0.5.6 →), or a wrapper's (docker or kubectl logs "
                        "--timestamps), measure it"]
        stat = float(said[0].split("part ±")[1].split("%")[0]) / 100
        fit = rate.fit(run_windows(log, log.sources[0].name)[1], 0.95)
        se_stat = math.sqrt(fit["cycle_ms"].se_log ** 2 - fit.sys_rel ** 2)
        assert 0 < stat < half / 2
        assert stat == pytest.approx(half * se_stat / fit["cycle_ms"].se_log, abs=6e-5)
        assert said_s == said            # summary without a baseline says it too
