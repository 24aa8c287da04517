"""The rate model's treatment of what happens inside a window (eaglelog/analysis/rate.py;
docs/statistics.md, 'The batch inside a window', 'Warm-up', the precision groups):

* the covariance of the batch and the cycle across a window's iterations (``within_cov``);
* a warm-up is a start slower than the rest, tested with the means' autocorrelation;
* precision groups too small for a stable variance join the prefill group;
* the jackknife's batches run over the windows that count."""
import numpy as np
import pytest

from eaglelog.analysis import rate


def windows(r, b, y=None, x=None, measured=True, nin=None, interval=40):
    """Windows of one series: printed #running-req r, mean batch b (measured where
    ``measured``: a positive bvar), wall per iteration y."""
    n = len(r)
    r = np.asarray(r, float)
    b = np.asarray(b, float)
    y = np.full(n, 20.0) if y is None else np.asarray(y, float)
    x = np.zeros((n, rate.N_X)) if x is None else x
    rp = np.r_[np.nan, r[:-1]]
    bvar = np.where(np.broadcast_to(measured, (n,)), 1e-6, 0.0)
    return rate.Windows(interval, np.arange(n), None, np.zeros(n, np.int64), r, b,
                        np.full(n, 2.5), y, x, np.zeros(n, np.int8), True, np.zeros(n, bool),
                        None, bvar, rp, np.zeros(n) if nin is None else np.asarray(nin, float))


def linear_spec(lo, hi):
    """A fitted c(B) = 10 + 0.5 B over [lo, hi], as ModelSpec and γ (1, u, u²)."""
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    spec = rate.ModelSpec((), (0, 1, 2), (centre, half))
    return spec, np.array([10 + 0.5 * centre, 0.5 * half, 0.0])


def test_one_step_inside_a_window_gives_the_exact_covariance():
    # r′ = 4 → r = 8 with a measured mean batch of 6: half the iterations at each, var 4;
    # c = 10 + 0.5 B: cov(B, c) = 0.5 × 4 = 2 ms·request, per request-step 2 / 6
    win = windows([4, 8, 8], [4, 6, 8])
    spec, g = linear_spec(4, 8)
    cov = rate.within_cov(win, g, spec)
    assert cov[1] == pytest.approx(0.5 * 4 / 6)
    # no move, no covariance (the first window has no line before it)
    assert cov[0] == 0 and cov[2] == 0
    # the same truth by brute force: Σ B_i c_i / Σ B_i over 20 iterations at 4, 20 at 8,
    # against the window's (Σ B_i) × mean c
    B = np.r_[np.full(20, 4.0), np.full(20, 8.0)]
    c = 10 + 0.5 * B
    assert (B * c).sum() / B.sum() - c.mean() == pytest.approx(cov[1])


def test_a_step_late_in_the_window_and_a_trapezoid_window():
    # a quarter of the iterations at r: p = 1/4, var = 3/16 × 16 = 3
    win = windows([4, 8], [4, 5], measured=np.array([True, True]))
    spec, g = linear_spec(4, 8)
    assert rate.within_cov(win, g, spec)[1] == pytest.approx(0.5 * 3 / 5)
    # whole-second stamps: the trapezoid mean batch, p(1 − p) averaged over a uniform step
    # time, 1/6 — never the p of the trapezoid itself (always ½)
    win = windows([4, 8], [4, 6], measured=np.array([False, False]))
    assert rate.within_cov(win, g, spec)[1] == pytest.approx(0.5 * 16 / 6 / 6)


def test_joins_beyond_the_rise_are_slots_that_stood_empty_one_iteration():
    # r′ = r = 8, but a prefill line admitted 2 requests: 2 finished, each slot empty for at
    # least one iteration of 40 (SGLang takes a new request in at a later pass of its loop)
    win = windows([8, 8], [8, 8], nin=[0, 2])
    spec, g = linear_spec(4, 12)
    gap = 1 / 40
    assert rate.within_cov(win, g, spec)[1] == pytest.approx(0.5 * 2 * gap * (1 - gap) / 8)
    # a rise of 2 that 2 joins explain holds no pair
    win = windows([6, 8], [6, 7], nin=[0, 2])
    assert rate.within_cov(win, g, spec)[1] == pytest.approx(0.5 * 0.25 * 4 / 7)


def test_the_slope_is_clipped_to_a_cycle_that_grows_not_faster_than_the_batch():
    win = windows([4, 8], [4, 6])
    spec = rate.ModelSpec((), (0, 1, 2), (6.0, 2.0))
    falling = np.array([20.0, -5.0, 0.0])            # c falls with B: no covariance
    assert rate.within_cov(win, falling, spec)[1] == 0
    steep = np.array([20.0, 200.0, 0.0])              # c(8) = 220: at most c/B = 27.5 a request
    assert rate.within_cov(win, steep, spec)[1] == pytest.approx(220 / 8 * 4 / 6)
    # vLLM windows (request-steps from the drafts) hold many moves: none modelled
    vl = windows([4, 8], [4, 6])
    vl.rs = np.array([160.0, 240.0])
    assert not rate.within_cov(vl, linear_spec(4, 8)[1], linear_spec(4, 8)[0]).any()


def test_a_warm_up_is_a_slower_start_and_a_faster_one_is_the_traffic():
    rng = np.random.default_rng(3)
    z = rng.normal(0, 1, 1000)
    w = np.ones(1000)
    slow = z.copy()
    slow[:200] += 3.0
    cut = rate.warmup_windows(slow, w)
    assert 150 <= cut <= 250
    fast = z.copy()
    fast[:200] -= 3.0
    assert rate.warmup_windows(fast, w) == 0


def test_small_precision_groups_join_the_prefill_group():
    n = 400
    x = np.zeros((n, rate.N_X))
    x[20:, 1] = 0.05                                   # 20 clean windows, 380 with prefill
    win = windows(np.full(n, 8.0), np.full(n, 8.0), x=x)
    res = np.r_[np.full(20, 1e-4), np.random.default_rng(0).normal(0, 0.1, n - 20)]
    use = np.ones(n, bool)
    # 20 near-identical clean windows would take weights 10⁶ times the others': merged instead
    assert (rate.precision(win, use, res) == 1).all()
    n = 4000                                           # 1000 clean windows: their own group
    x = np.zeros((n, rate.N_X))
    x[1000:, 1] = 0.05
    win = windows(np.full(n, 8.0), np.full(n, 8.0), x=x)
    res = np.r_[np.random.default_rng(1).normal(0, 0.05, 1000),
                np.random.default_rng(2).normal(0, 0.1, n - 1000)]
    p = rate.precision(win, np.ones(n, bool), res)
    # weights are inverse variances relative to the tighter group: (0.05 / 0.1)² = 0.25
    assert (p[:1000] == 1).all() and p[1500] == pytest.approx(0.25, rel=0.15)
    assert (p[1000:] == p[1500]).all()


def test_the_jackknife_batches_run_over_the_windows_that_count():
    """A warm-up left out does not shorten the batches: the same windows after 600 skipped
    ones give the interval they give alone."""
    rng = np.random.default_rng(5)
    n = 900
    a = np.clip(2.5 + rng.normal(0, 0.3, n), 1, None)
    y = 20 + rng.normal(0, 0.2, n)
    win = windows(np.full(n, 8.0), np.full(n, 8.0), y=y)
    win.a = a
    alone = rate.fit(win.restrict(np.arange(n) >= 600), 0.95, warmup=0)
    skipped = rate.fit(win, 0.95, warmup=600)
    assert skipped.warmup == 600
    for k in ("accept_len", "cycle_ms"):
        assert skipped[k].estimate == pytest.approx(alone[k].estimate, rel=1e-9)
    assert skipped.batches == alone.batches and skipped.tau == pytest.approx(alone.tau)
    assert skipped["accept_len"].se_log == pytest.approx(alone["accept_len"].se_log, rel=1e-9)
    # the cycle's may only grow: what remains after a cut is tested for a leftover trend
    assert skipped["cycle_ms"].se_log >= alone["cycle_ms"].se_log * (1 - 1e-9)


def test_a_warm_up_tail_the_cut_left_widens_the_cycle():
    """After a cut, a decaying tail in what remains (0.3 % at the cut, decaying over 200
    windows) is a systematic uncertainty of the cycle: half the difference of the remaining
    halves' residuals, less what their noise gives it; a flat remainder gets none."""
    rng = np.random.default_rng(7)
    n = 3000
    t = np.arange(n)
    tail = 20 * (1 + 0.003 * np.exp(-(t - 300).clip(0) / 200)) + rng.normal(0, 0.05, n)
    flat = 20 + rng.normal(0, 0.05, n)
    f = rate.fit(windows(np.full(n, 8.0), np.full(n, 8.0), y=tail), 0.95, warmup=300)
    g = rate.fit(windows(np.full(n, 8.0), np.full(n, 8.0), y=flat), 0.95, warmup=300)
    assert f.sys_rel > 1e-4 and g.sys_rel < f.sys_rel / 5
    assert f["cycle_ms"].ci_low <= 20.0 <= f["cycle_ms"].ci_high


def test_each_output_carries_its_own_batch_means_correction():
    """stats.influence_estimates: the batches are one set, sized from the longest τ (here an
    accept length whose terms are AR(1), ρ = 0.95), but the batch-means correction
    1/√(1 − τ/L) of each standard error is its own series' τ: an independent cycle is not
    widened by the accept length's (that had the simulated cycle's coverage at 99 %)."""
    from eaglelog import stats
    rng = np.random.default_rng(11)
    n = 3000
    ar = np.zeros(n)
    for i in range(1, n):
        ar[i] = 0.95 * ar[i - 1] + rng.normal()
    iid = rng.normal(size=n)
    terms = [(ar - ar.mean()) / n, (iid - iid.mean()) / n]
    ests, facts = stats.influence_estimates([2.5, 20.0], terms, n, 0.95, tau_of=(0,))
    b = facts["batches"]
    labels = (np.arange(n) * b) // n
    raw = [float(np.sqrt(b * np.var(np.bincount(labels, weights=t, minlength=b), ddof=1)))
           for t in terms]
    length = n / b
    assert facts["tau"] == pytest.approx(stats.autocorr_time(terms[0]))
    assert facts["tau"] > 25 and length >= stats.C_TAU * facts["tau"]
    assert ests[0].se_log / raw[0] == pytest.approx(
        stats.batch_means_inflation(facts["tau"], length), rel=1e-9)
    assert ests[0].se_log / raw[0] > 1.1
    tau_cycle = stats.autocorr_time(terms[1])
    assert tau_cycle < 2
    assert ests[1].se_log / raw[1] == pytest.approx(
        stats.batch_means_inflation(tau_cycle, length), rel=1e-9)
    assert ests[1].se_log / raw[1] < 1.02


@pytest.mark.parametrize("phi", [0.3, 0.95, 0.9995])
def test_a_long_series_tau_reaches_for_its_lags_in_steps(phi, monkeypatch):
    """Over stats.LONG_SERIES windows the autocovariances come from an FFT of n + lags points,
    the reach growing until Geyer's sequence stops inside it; τ is the full computation's (to
    rounding), including a series whose sequence runs past the first reach (φ = 0.9995:
    τ ≈ 4,000 windows, pairs positive beyond lag 4,096)."""
    from scipy.signal import lfilter

    from eaglelog import stats
    n = 150_000
    x = lfilter([1.0], [1.0, -phi], np.random.default_rng(5).normal(size=n))
    reached = stats.autocorr_time(x)
    monkeypatch.setattr(stats, "LONG_SERIES", 10 ** 12)      # the whole 2n-point FFT
    whole = stats.autocorr_time(x)
    assert reached == pytest.approx(whole, rel=1e-12)
    if phi < 0.999:
        assert whole == pytest.approx((1 + phi) / (1 - phi), rel=0.5)
    else:                      # 150,000 windows hold ~40 τ: the estimate is rough, and long
        assert whole > 2000


def test_fast_fft_lengths():
    from eaglelog import stats
    assert [stats._fast_len(n) for n in (1, 7, 100, 3_804_095)] == [1, 8, 100, 3_840_000]


@pytest.mark.parametrize("values", [
    [3.0], [2.0, 3.0], [1.0, 1.0, 2.0, 8.0], [0.0, 5.0, 5.0, 5.0, 7.0, 9.0],
    [1.5, 2.0, 2.0],                   # not integers: np.median itself
    [-1.0, 2.0, 4.0],                  # negative: np.median itself
])
def test_the_counting_median_is_numpys(values):
    v = np.array(values)
    assert rate.median(v) == float(np.median(v))
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 1000, 1001):
        w = rng.integers(0, 40, n).astype(float)
        assert rate.median(w) == float(np.median(w))


def test_small_integers_are_what_counting_can_take():
    assert rate.small_ints(np.array([0.0, 3.0, 16.0]))
    assert not rate.small_ints(np.array([0.0, 3.5]))
    assert not rate.small_ints(np.array([-1.0, 3.0]))
    assert rate.small_ints(np.array([-1.0, 3.0]), signed=True)
    assert not rate.small_ints(np.array([-2.0, 3.0]), signed=True)
    assert not rate.small_ints(np.array([1.0, float(1 << 20)]))
    assert not rate.small_ints(np.array([]))
    assert list(rate._present(np.zeros(5, dtype=np.int8))) == [0]
    assert list(rate._present(np.array([0, 2, 2, 0]))) == [0, 2]
