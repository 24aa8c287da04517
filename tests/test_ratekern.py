"""The passes over every window in C (eaglelog/analysis/_ratekern.c) against the numpy passes
they replace, which stay as the fallback without a C compiler and as the oracle here: sums
within rounding (they run in another order), the elementwise passes, the block sums of
products and the medians to the bit; and the fit's figures on a sample log within 1e-12."""
import math
import os
import warnings

import numpy as np
import pytest

from eaglelog.analysis import rate
from eaglelog.analysis.rate_windows import Windows


def test_the_kernel_is_built():
    # CI installs with a C compiler: a build that silently fell back to numpy fails here
    assert rate._ratekern is not None
    assert rate.fast_available() == (os.environ.get("EAGLELOG_PURE_PYTHON", "") in ("", "0"))


def windows(n: int, seed: int, *, measured: bool = True, nin: bool = True,
            nan: bool = True) -> Windows:
    """Random windows with every feature the passes read: batch sizes that move, a mean batch
    off the trapezoid, prefill work in a fifth of them (the first and last included), and
    (``nan``) missing values."""
    rng = np.random.default_rng(seed)
    r = rng.integers(1, 40, n).astype(float)
    if nan:
        r[rng.random(n) < 0.01] = np.nan
    rp = np.roll(r, 1).astype(np.float32)
    b = np.where(rng.random(n) < 0.5, (r + rp) / 2, r - rng.random(n))
    y = rng.uniform(5, 30, n)
    if nan:
        y[rng.random(n) < 0.01] = np.nan
    x = np.zeros((n, 5))
    held = rng.random(n) < 0.2
    held[[0, -1]] = True
    x[held] = rng.uniform(0, 3, (int(held.sum()), 5))
    x[held, 4] *= rng.random(int(held.sum())) < 0.3
    bvar = np.where(rng.random(n) < 0.5, rng.uniform(0, 0.1, n), 0.0) if measured else None
    nins = rng.integers(0, 3, n).astype(np.float32) if nin else None
    return Windows(16, np.arange(n), None, np.zeros(n, np.int8), r, b, y, y, x,
                   np.zeros(n, np.int8), True, np.zeros(n, bool), None, bvar, rp, nins)


def both(monkeypatch, f):
    """f() with the C passes, then with numpy's (whatever EAGLELOG_PURE_PYTHON says)."""
    monkeypatch.setattr(rate, "_PURE", False)
    fast = f()
    monkeypatch.setattr(rate, "_PURE", True)
    slow = f()
    monkeypatch.setattr(rate, "_PURE", False)
    return fast, slow


@pytest.mark.parametrize("keep", [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3, 4, 7],
                                  [0, 1, 2, 3, 4, 5, 6, 7], [3, 5], [2, 0, 6]])
@pytest.mark.parametrize("n", [1, 7, 5000, 70_000])
def test_moments_are_numpys_within_rounding(monkeypatch, keep, n):
    win = windows(n, seed=n + len(keep), nan=False)
    rng = np.random.default_rng(3)
    use = rng.random(n) < 0.8
    use[0] = True
    om = rng.uniform(0.5, 2, n)
    (A1, r1), (A0, r0) = both(monkeypatch,
                              lambda: rate._gram(win, (20.0, 19.0), keep, om, use, win.y))
    assert A1.shape == A0.shape == (len(keep), len(keep))
    np.testing.assert_allclose(A1, A0, rtol=1e-13, atol=1e-13 * np.abs(A0).max())
    np.testing.assert_allclose(r1, r0, rtol=1e-13, atol=1e-13 * np.abs(r0).max())
    assert (A1 == A1.T).all()                  # (summed once per pair: exactly symmetric)
    # no y: no right-hand side
    (_, r1), _ = both(monkeypatch, lambda: rate._gram(win, (20.0, 19.0), keep, om, use))
    assert not r1.any()


def test_moments_by_hand():
    # three windows, the middle one left out, the last holding prefill work
    win = Windows(16, np.arange(3), None, np.zeros(3, np.int8), np.array([2.0, 4.0, 6.0]),
                  np.array([2.0, 4.0, 6.0]), np.full(3, 2.0), np.array([10.0, 20.0, 30.0]),
                  np.array([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [5, 0, 0, 0, 0]], float),
                  np.zeros(3, np.int8), True, np.zeros(3, bool))
    om = np.array([1.0, 100.0, 2.0])
    A, r = rate._gram(win, (4.0, 2.0), [0, 1, 3], om, np.array([True, False, True]), win.y)
    # z = (1, u, x0): (1, −1, 0) weight 1, (1, 1, 5) weight 2
    np.testing.assert_array_equal(A, [[3, 1, 10], [1, 3, 10], [10, 10, 50]])
    np.testing.assert_array_equal(r, [70, 50, 300])


def test_nan_propagates_like_numpy(monkeypatch):
    win = windows(2000, seed=5)                # NaN batch sizes and cycles
    use = np.ones(2000, bool)
    om = np.ones(2000)
    (A1, r1), (A0, r0) = both(monkeypatch,
                              lambda: rate._gram(win, (20.0, 19.0), [0, 1, 3], om, use, win.y))
    np.testing.assert_array_equal(np.isnan(A1), np.isnan(A0))
    np.testing.assert_array_equal(np.isnan(r1), np.isnan(r0))
    assert np.isnan(A1[1, 1]) and np.isnan(r1[0])


@pytest.mark.parametrize("coef", [[1.5, -2.0, 0.25, 0.7, 0.0, -1.1], [0.0] * 6,
                                  [3.0, 1.0, 1.0, math.nan, 1.0, 1.0],
                                  [-0.0, 1e300, -1e300, 2.0, 3.0, 4.0]])
@pytest.mark.parametrize("n", [1, 3, 70_000])
def test_times_is_numpys_to_the_bit(monkeypatch, coef, n):
    win = windows(n, seed=11)
    keep = [0, 1, 2, 3, 5, 7]
    fast, slow = both(monkeypatch, lambda: rate._times(win, (20.0, 19.0), keep, coef))
    assert fast.tobytes() == slow.tobytes()
    # (a coefficient of 0 on a prefill column adds nothing, not 0 × NaN)
    fast, slow = both(monkeypatch, lambda: rate._times(win, (20.0, 19.0), [3, 4], [0.0, 1.0]))
    assert fast.tobytes() == slow.tobytes()


@pytest.mark.parametrize("measured,nin", [(True, True), (False, True), (True, False),
                                          (False, False)])
@pytest.mark.parametrize("gamma", [[10.0, 3.0, 0.5], [10.0, -0.5, 2.0], [10.0, 3.0],
                                   [1e-3, 40.0, -30.0]])
def test_within_cov_is_numpys_to_the_bit(monkeypatch, measured, nin, gamma):
    win = windows(50_000, seed=13, measured=measured, nin=nin)
    spec = rate.ModelSpec((0,), tuple(range(len(gamma))), (20.0, 19.0))

    def run():
        win.vac = None
        return rate.within_cov(win, np.array(gamma), spec)
    fast, slow = both(monkeypatch, run)
    assert (fast != 0).sum() > 1000
    assert fast.tobytes() == slow.tobytes()


def test_bad_shapes_are_errors_not_crashes():
    from eaglelog.analysis import _ratekern
    b = np.ones(4)
    A, r = np.zeros((2, 2)), np.zeros(2)
    xr, xv = np.zeros(0, np.int64), np.zeros((0, 5))
    with pytest.raises(ValueError, match="omega"):
        _ratekern.moments(b, np.ones(3), np.ones(4, bool), None, xr, xv, 0.0, 1.0,
                          bytes([0, 1]), A, r)
    with pytest.raises(ValueError, match="cols"):
        _ratekern.moments(b, b, np.ones(4, bool), None, xr, xv, 0.0, 1.0, bytes([0, 9]), A, r)
    with pytest.raises(ValueError, match="xvals"):
        _ratekern.times(b, np.zeros(1, np.int64), np.zeros(4), 0.0, 1.0, bytes([0]),
                        np.ones(1), np.zeros(4))
    with pytest.raises(TypeError):             # (a read-only output)
        _ratekern.times(b, xr, xv, 0.0, 1.0, bytes([0]), np.ones(1), np.zeros(4).tobytes())


def test_the_fit_is_numpys_within_1e12(monkeypatch):
    from eaglelog import api
    from eaglelog.analysis import breakeven
    log = api.load("sample_logs/eagle3_5step.log")
    _, win = breakeven.run_windows(log, log.sources[0].name)

    def run():
        win.vac = None
        return rate.fit(win, 0.95, lambda b: np.full(np.shape(b), 11.1))
    fast, slow = both(monkeypatch, run)
    assert (fast.used, fast.kind, fast.warmup, fast.left_out) == \
        (slow.used, slow.kind, slow.warmup, slow.left_out)
    for k in rate.OUTPUTS:
        e1, e0 = fast[k], slow[k]
        for f in ("estimate", "ci_low", "ci_high"):
            assert getattr(e1, f) == pytest.approx(getattr(e0, f), rel=1e-12, nan_ok=True), (k, f)


def _compare_point(win, use, acc, step, spec, prec, strata, monkeypatch):
    """_point_and_sums (its two C passes) against _point_and_terms, both with numpy's moments
    (whose order of summation, on a design this far from orthogonal, moves γ by ~1e-11)."""
    counted = use | acc
    n = int(counted.sum())
    monkeypatch.setattr(rate, "_PURE", True)
    th1, sums1 = rate._point_and_sums(win, use, acc, step, spec, prec, strata, n=n)
    th0, terms = rate._point_and_terms(win, use, acc, step, spec, prec, strata)
    sums0 = rate._term_sums(terms, counted, n)
    p1, _ = rate._point_and_sums(win, use, acc, None, spec, prec, strata, point_only=True)
    p0, _ = rate._point_and_terms(win, use, acc, None, spec, prec, strata, point_only=True)
    monkeypatch.setattr(rate, "_PURE", False)
    assert th1.keys() == th0.keys()
    for k in th0:
        np.testing.assert_allclose(th1[k], th0[k], rtol=1e-12, atol=0, err_msg=k)
    assert p1["cycle_ms"] == pytest.approx(p0["cycle_ms"], rel=1e-12, nan_ok=True)
    np.testing.assert_allclose(p1["_beta"], p0["_beta"], rtol=1e-12)
    for k, s1, s0 in zip(rate.OUTPUTS, sums1, sums0):
        assert (s1 is None) == (s0 is None), k
        if s0 is not None:
            assert len(s1) == len(s0) == min(n, 4096)
            scale = np.abs(s0).max()
            np.testing.assert_allclose(s1, s0, rtol=1e-9, atol=1e-12 * scale, err_msg=k)
    return th1, sums1


@pytest.mark.parametrize("n", [40, 5000, 60_000])
@pytest.mark.parametrize("case", ["plain", "prec+step", "negative strata", "no accept",
                                  "no cycle", "linear"])
def test_point_and_sums_are_point_and_terms(monkeypatch, n, case):
    win = windows(n, seed=n, nan=False)
    rng = np.random.default_rng(n + 1)
    use = rng.random(n) < 0.7
    acc = rng.random(n) < 0.9
    smooth = (0, 1) if case == "linear" else (0, 1, 2)
    spec = rate.ModelSpec((0, 1, 4), smooth, (20.0, 19.0))
    strata = rate.strata_of(win.r, use | acc)
    prec = step = None
    if case == "prec+step":
        prec = np.where(win.x.held(), 0.5, 1.0)
        step = rng.uniform(10, 12, n)
    elif case == "negative strata":
        strata[rng.random(n) < 0.1] = -1
    elif case == "no accept":
        acc[:] = False
    elif case == "no cycle":
        use[:] = False
    th, sums = _compare_point(win, use, acc, step, spec, prec, strata, monkeypatch)
    if case == "no cycle":
        assert math.isnan(th["cycle_ms"]) and sums[1] is None and sums[0] is not None
    if case == "no accept":
        assert math.isnan(th["accept_len"]) and sums[0] is None and sums[2] is None
    if case == "prec+step":
        assert th["step_ms"] > 10 and sums[4] is not None and sums[5] is not None


@pytest.mark.parametrize("measured,nin", [(True, True), (False, False)])
def test_point_sums_make_the_within_terms_as_the_array_holds_them(monkeypatch, measured, nin):
    # a point-only pass (the fit's second, with the printed batch) gives point_sums the
    # quadratic curve's arguments, not within_cov's array: each window's term is made where it
    # is read, the same number, so the same cycle to the bit
    n = 60_000
    win = windows(n, seed=7, measured=measured, nin=nin, nan=False)
    rng = np.random.default_rng(8)
    use = rng.random(n) < 0.7
    acc = rng.random(n) < 0.9
    spec = rate.ModelSpec((0, 1, 4), (0, 1, 2), (20.0, 19.0))
    strata = rate.strata_of(win.r, use | acc)
    terms = []
    real = rate._within_terms
    monkeypatch.setattr(rate, "_within_terms", lambda *a: terms.append(real(*a)) or terms[-1])
    quad, _ = rate._point_and_sums(win, use, acc, None, spec, None, strata, point_only=True)
    assert isinstance(terms[0], tuple) and len(terms[0]) == 11
    monkeypatch.setattr(rate, "_within_terms", rate.within_cov)
    arr, _ = rate._point_and_sums(win, use, acc, None, spec, None, strata, point_only=True)
    assert math.isfinite(quad["cycle_ms"])
    assert quad["cycle_ms"] == arr["cycle_ms"] and quad["_beta"].tobytes() == arr["_beta"].tobytes()
    # a tuple of the wrong length of windows is an error, not a read past the arrays
    from eaglelog.analysis import _ratekern
    args = list(terms[0])
    args[0] = args[0][:-1]
    with pytest.raises(ValueError):
        _ratekern.within_quad(*args, np.empty(n))


def test_term_sums_rejects_a_wrong_count(monkeypatch):
    win = windows(100, seed=1, nan=False)
    use = np.ones(100, bool)
    spec = rate.ModelSpec((), (0, 1), (20.0, 19.0))
    with pytest.raises(ValueError, match="count"):
        rate._point_and_sums(win, use, use, None, spec, n=99)


@pytest.mark.parametrize("levels", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("nan", [False, True])
def test_ranges_choose_as_numpy_does(monkeypatch, levels, nan):
    n = 3000
    win = windows(n, seed=levels, nan=nan)
    rng = np.random.default_rng(levels)
    if levels:
        win.r = rng.choice(np.arange(1.0, levels + 1) * 4, n)
        win.b = win.r.copy()
        if levels > 1:
            win.b -= rng.random(n)
    use = rng.random(n) < (0.6 if levels else 0.0)
    if nan and levels:
        win.r[::97] = np.nan
    fast, slow = both(monkeypatch, lambda: rate._choose(win, use))
    assert fast == slow
    if levels:
        xlo, xhi = np.empty(5), np.empty(5)
        got = rate._ratekern.ranges(use, win.r, win.b, win.x.rows, win.x.vals, xlo, xhi)
        r = win.r[use & np.isfinite(win.r)]
        assert got[:3] == (r.min(), r.max(), min(len(set(r)), 3))
        held = use[win.x.rows]
        assert got[5:] == (int(held.sum()), int(use.sum()))
        np.testing.assert_array_equal(xlo, win.x.vals[held].min(axis=0))
        np.testing.assert_array_equal(xhi, win.x.vals[held].max(axis=0))


@pytest.mark.parametrize("cov,step", [(True, "nan"), (False, None), (True, "all")])
@pytest.mark.parametrize("n", [30, 20_000])
def test_bucket_parts_are_numpys(monkeypatch, cov, step, n):
    win = windows(n, seed=n + 7, nan=False)
    rng = np.random.default_rng(n)
    win.r = rng.choice([1.0, 2.0, 4.0, 8.0, 9.0], n)
    use, acc = rng.random(n) < 0.7, rng.random(n) < 0.8
    acc[win.r == 9.0] = False                 # a bucket without an accept length …
    use[win.r == 1.0] = False                 # … and one without a cycle
    codes, labels = rate.bucket_of(win.r)
    codes[::50] = -1                          # windows of no bucket
    fit = rate.RateFit({}, "corrected", (0.1, 2.0, 0.0, 0.3, 0.0), int(use.sum()), n, {},
                       1.0, 1, use=use, acc=acc, cov=rng.uniform(0, 0.01, n) if cov else None)
    steps = None
    if step:
        steps = rng.uniform(10, 12, n)
        if step == "nan":
            steps[win.r == 8.0] = np.nan      # a bucket the baseline does not cover
    fast, slow = both(monkeypatch, lambda: (
        rate._bucket_parts(win, fit, codes, len(labels), steps),
        rate._bucket_parts_numpy(win, fit, codes, len(labels), steps)))[0]
    assert [g for g, _ in fast] == [g for g, _ in slow]
    for (_, (n1, th1, s1, u1, a1, w1)), (_, (n0, th0, s0, u0, a0, w0)) in zip(fast, slow):
        assert (n1, u1, a1) == (n0, u0, a0)
        assert w1 == pytest.approx(w0, rel=1e-13)
        assert th1.keys() == th0.keys()
        for k in th0:
            assert th1[k] == pytest.approx(th0[k], rel=1e-13, nan_ok=True), k
        for k, x, y in zip(rate.OUTPUTS, s1, s0):
            assert (x is None) == (y is None), k
            if y is not None:
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-13 * np.abs(y).max(),
                                           err_msg=k)
    # int8 codes (window_buckets keeps them so) are read as they are, with the same sums
    if rate.fast_available():
        byte = rate._bucket_parts(win, fit, codes.astype(np.int8), len(labels), steps)
        assert [g for g, _ in byte] == [g for g, _ in fast]
        for (_, p1), (_, p0) in zip(byte, fast):
            assert p1[0] == p0[0] and p1[1] == p0[1] and p1[3:] == p0[3:]
            for x, y in zip(p1[2], p0[2]):
                assert (x is None and y is None) or np.array_equal(x, y)
        with pytest.raises(ValueError, match="codes"):
            rate._ratekern.bucket_totals(codes.astype(np.int16), *(
                [np.zeros(n, np.uint8)] * 2 + [np.zeros(n)] * 2 + [np.zeros(0, np.int64),
                                                                 np.zeros(0)]),
                np.zeros(rate.N_X), 0.0, None, np.zeros(n), None, np.zeros(len(labels) * 12))
    if n < 1000:
        return
    assert [g for g, _ in fast] == list(range(len(labels)))
    by_label = dict(zip(labels, (p for _, p in fast)))
    assert math.isnan(by_label["9"][1]["accept_len"]) and by_label["9"][2][0] is None
    assert math.isnan(by_label["1"][1]["cycle_ms"]) and by_label["1"][2][1] is None
    if step == "nan":
        assert math.isnan(by_label["8"][1]["step_ms"]) and by_label["8"][2][4] is None


@pytest.mark.parametrize("path", ["sample_logs/eagle3_5step.log", "sample_logs/eagle3_2step.log",
                                  "sample_logs/batch_eagle3.log"])
def test_kv_lifetime_is_numpys(monkeypatch, path):
    from eaglelog import api
    from eaglelog.analysis import kv_life
    log = api.load(path)
    src = log.sources[0].name
    dec, pre = log.rows_of(src, "decode"), log.rows_of(src, "prefill")
    fast, slow = both(monkeypatch, lambda: kv_life.kv_lifetime(dec, pre, 16))
    assert slow is not None and slow > 1
    assert fast == pytest.approx(slow, rel=1e-13)


def test_kv_life_sums_by_hand():
    # three lines: 4 → 4 → 2 running, 2 requests (20 tokens) admitted before the last, accept
    # length 2 throughout, KV slots 100 → 160 → 120, one iteration a window, prompts of 5
    kv = np.array([100.0, 160.0, 120.0])
    r = np.array([4.0, 4.0, 2.0])
    a = np.full(3, 2.0)
    none = np.zeros(0, bool)
    a_run, n, nv, s2 = rate._ratekern.kv_life_sums(kv, 0, none, r, 0, none, a, np.array([2]),
                                                   np.array([2.0]), np.array([20.0]), 1.0, 5.0,
                                                   math.nan)
    assert a_run == 2.0
    # window 1: none finished (left out); window 2: 4 + 2 − 2 = 4 finished, their length
    # 2 × 3 × 1 committed + 20 admitted + 40 freed = 66, each 66 / 4 − 5 = 11.5 output
    # tokens, 5.75 verify steps
    assert (n, nv, s2) == (4.0, 4 * 5.75, 4 * 5.75 * 5.75)


def test_kv_life_sums_read_integer_columns_and_masks():
    # the table's own nullable integer columns (int64, int32: data and mask) give the floats'
    # sums to the bit; prefill contributions at the lines they precede, 0 elsewhere
    rng = np.random.default_rng(7)
    n = 5000
    kv = rng.integers(1000, 90_000, n)
    r = rng.integers(1, 40, n).astype(np.int32)
    miss_k, miss_r = rng.random(n) < 0.02, rng.random(n) < 0.02
    a = rng.uniform(1, 4, n)
    a[rng.random(n) < 0.05] = np.nan
    at = np.flatnonzero(rng.random(n) < 0.1).astype(np.int64)
    joins, jtok = rng.integers(1, 4, len(at)).astype(float), rng.uniform(50, 900, len(at))
    kvf = np.where(miss_k, np.nan, kv.astype(float))
    rf = np.where(miss_r, np.nan, r.astype(float))
    none = np.zeros(0, bool)
    K = rate._ratekern
    args = (a, at, joins, jtok, 16.0, 200.0, 40.0)
    ints = K.kv_life_sums(kv, 1, miss_k, r, 2, miss_r, *args)
    floats = K.kv_life_sums(kvf, 0, none, rf, 0, none, *args)
    assert ints == floats and all(math.isfinite(v) for v in ints)
    # the numpy path's dense arrays: the same sums
    dj, dt = np.zeros(n), np.zeros(n)
    dj[at], dt[at] = joins, jtok
    a_run = float(np.nanmean(np.where(a >= 1, a, np.nan)))
    bt = (rf[1:] + rf[:-1]) / 2
    fin = rf[:-1] + dj[1:] - rf[1:]
    length = np.where(a[1:] >= 1, a[1:], a_run) * bt * 16.0 + dt[1:] - (kvf[1:] - kvf[:-1])
    ok = np.isfinite(fin) & np.isfinite(length) & (fin >= 1) & (length > 0)
    nn = np.rint(fin[ok])
    assert ints[0] == pytest.approx(a_run, rel=1e-13) and ints[1] == nn.sum()
    v = np.maximum(length[ok] / nn - 200.0, 1.0) / a_run
    assert ints[2] == pytest.approx((nn * v).sum(), rel=1e-12)
    # bad inputs: errors, not crashes
    for bad in ((kv, 3, miss_k, r, 2, miss_r, *args),           # no such kind
                (kv, 2, miss_k, r, 2, miss_r, *args),           # int64 read as int32
                (kv, 1, miss_k[:-1], r, 2, miss_r, *args),      # a short mask
                (kv, 1, miss_k, r, 2, miss_r, a, at[::-1].copy(), joins, jtok, 16.0, 1.0, 1.0),
                (kv, 1, miss_k, r, 2, miss_r, a, at + n, joins, jtok, 16.0, 1.0, 1.0),
                (kv, 1, miss_k, r, 2, miss_r, a, at, joins[:-1], jtok, 16.0, 1.0, 1.0)):
        with pytest.raises(ValueError):
            K.kv_life_sums(*bad)


def test_kv_lifetime_reads_nullable_columns_as_floats(monkeypatch):
    # the same life whether the decode table's columns are nullable integers (the parser's),
    # floats, or a TP rank's rows among another's (the lowest rank kept), in C and numpy
    import pandas as pd
    from eaglelog.analysis import kv_life
    rng = np.random.default_rng(3)
    n = 400
    r = rng.integers(2, 9, n)
    dec = pd.DataFrame({"line_no": pd.array(np.arange(n) * 3 + 1, dtype="Int64"),
                        "running_req": pd.array(r, dtype="Int32"),
                        "num_tokens": pd.array(r * 700 + rng.integers(0, 300, n),
                                               dtype="Int64"),
                        "accept_len": rng.uniform(1.5, 3.5, n)})
    dec.loc[[5, 77], "num_tokens"] = pd.NA
    dec.loc[[9], "running_req"] = pd.NA
    pre = pd.DataFrame({"line_no": pd.array(np.arange(0, 3 * n, 9), dtype="Int64"),
                        "new_seq": pd.array(np.ones(n // 3 + 1, int), dtype="Int64"),
                        "new_token": pd.array(rng.integers(100, 900, n // 3 + 1),
                                              dtype="Int64")})
    flo = dec.astype({"running_req": float, "num_tokens": float})
    (fast, slow), (fast_f, slow_f) = (both(monkeypatch, lambda d=d: kv_life.kv_lifetime(
        d, pre, 16)) for d in (dec, flo))
    assert fast == fast_f and slow == slow_f and fast > 1
    assert fast == pytest.approx(slow, rel=1e-13)
    two = pd.concat([dec.assign(tp=pd.array([0] * n, dtype="Int32")),
                     dec.assign(tp=pd.array([1] * n, dtype="Int32"),
                                line_no=dec["line_no"] + 1,
                                num_tokens=dec["num_tokens"] * 2)]).sort_values("line_no")
    assert both(monkeypatch, lambda: kv_life.kv_lifetime(two, pre, 16)) == \
        both(monkeypatch, lambda: kv_life.kv_lifetime(dec, pre, 16))


@pytest.mark.parametrize("n", [1, 3, 4096, 4097, 70_001])
def test_product_blocks_are_numpys_to_the_bit(monkeypatch, n):
    from eaglelog.analysis import context
    rng = np.random.default_rng(n)
    w, x, a = rng.random(n), rng.random(n) * 10, rng.random(n) * 3
    x[::11] = np.nan
    products = ((w,), (w, x), (w, a), (w, x, x), (w, x, a, a))
    fast, slow = both(monkeypatch, lambda: context._product_blocks(products, n))
    assert fast.sums.shape == (min(n, 4096), 5)
    assert fast.sums.tobytes() == slow.sums.tobytes()
    assert fast.counts.tobytes() == slow.counts.tobytes() and fast.n == slow.n == n


def test_median_is_numpys_number():
    rng = np.random.default_rng(0)
    K = rate._ratekern
    for trial in range(1500):
        n = int(rng.integers(1, 50)) if trial < 1400 else int(rng.integers(1000, 100_000))
        v = [rng.normal(size=n), rng.integers(0, 5, n).astype(float),
             np.round(rng.normal(size=n), 2), rng.uniform(1, 1.001, n),
             np.where(rng.random(n) < 0.5, 0.0, -0.0)][trial % 5]
        if trial % 7 == 0:
            v[rng.integers(0, n)] = np.nan
        mask = rng.random(n) < 0.6
        pos = np.flatnonzero(rng.random(n) < 0.5)
        c = float(rng.normal())
        for sel, picked in ((None, v), (mask, v[mask]), (pos, v[pos])):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = np.median(picked) if len(picked) else np.nan
                want_c = np.median(np.abs(picked - c)) if len(picked) else np.nan
            got, got_c = K.median(v, sel, math.nan), K.median(v, sel, c)
            assert got == want or np.isnan(got) and np.isnan(want), (trial, got, want)
            assert got_c == want_c or np.isnan(got_c) and np.isnan(want_c), (trial, got_c)
    with pytest.raises(IndexError):
        K.median(np.ones(3), np.array([0, 3]), math.nan)
    with pytest.raises(ValueError):
        K.median(np.ones(3), np.ones(2, bool), math.nan)


def test_mad_and_median_helpers_are_numpys(monkeypatch):
    rng = np.random.default_rng(3)
    v = rng.standard_t(3, 10_001)
    use = rng.random(10_001) < 0.7
    pos = np.flatnonzero(use)[::3]
    fast, slow = both(monkeypatch, lambda: (rate._mad(v, use), rate._median(v, pos),
                                            rate._median(v, use)))
    assert fast == slow


def test_residuals_pass_is_numpys(monkeypatch):
    win = windows(30_000, seed=21, nan=False)
    rng = np.random.default_rng(21)
    use = rng.random(win.n) < 0.8
    beta = np.array([0.5, 2.0, 0.1, -0.3, 1.5])
    keep = [0, 1, 2]
    (A1, r1), (A0, r0) = both(monkeypatch, lambda: rate._gram(win, (20.0, 19.0), keep, win.w,
                                                             use, win.y, beta))
    np.testing.assert_allclose(A1, A0, rtol=1e-13)
    np.testing.assert_allclose(r1, r0, rtol=1e-12)
    z = win.y - win.x.dot(beta)
    coef = np.array([10.0, 3.0, 0.5])
    fitted, res = np.empty(win.n), np.empty(win.n)
    rate._ratekern.resid(win.b, win.y, win.x.rows, win.x.vals, *rate._beta(beta), 20.0, 19.0,
                         bytes(keep), coef, fitted, res)
    monkeypatch.setattr(rate, "_PURE", True)
    want = rate._times(win, (20.0, 19.0), keep, coef)
    assert fitted.tobytes() == want.tobytes()
    np.testing.assert_allclose(res, z - want, rtol=0, atol=1e-12)


def test_grouped_medians_are_numpys():
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(1, 60)) if trial < 280 else 50_000
        v = [rng.normal(size=n), rng.integers(0, 4, n).astype(float)][trial % 2]
        if trial % 9 == 0:
            v[rng.integers(0, n)] = np.nan
        G = int(rng.integers(1, 17))
        codes = rng.integers(-1, G, n).astype(np.int32)
        centers = rng.normal(size=G)
        for c in (None, centers):
            out = np.empty(G)
            rate._ratekern.medians(v, codes, c, out)
            for g in range(G):
                picked = v[codes == g] if c is None else np.abs(v[codes == g] - c[g])
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = np.median(picked) if len(picked) else np.nan
                assert out[g] == want or np.isnan(out[g]) and np.isnan(want), (trial, g)
    with pytest.raises(ValueError, match="groups"):
        rate._ratekern.medians(np.ones(3), np.zeros(3, np.int32), None, np.empty(17))
    with pytest.raises(ValueError, match="beyond"):
        rate._ratekern.medians(np.ones(3), np.full(3, 2, np.int32), None, np.empty(2))


def test_precision_is_numpys(monkeypatch):
    win = windows(20_000, seed=9, nan=False)
    rng = np.random.default_rng(9)
    use = rng.random(win.n) < 0.8
    res = rng.standard_t(4, win.n) * np.where(win.x.held(), 3.0, 1.0)
    fast, slow = both(monkeypatch, lambda: rate.precision(win, use, res))
    assert fast.tobytes() == slow.tobytes()
    assert len(np.unique(fast)) >= 2


def test_a_stated_rate_adds_no_within_window_step():
    # the shortcut (StatedStep.flat) gives what the general pass gives a flat curve: zeros
    win = windows(20_000, seed=4)
    flat = rate.StatedStep(11.1)
    general = rate.step_within(win, lambda b: np.where(np.isfinite(np.asarray(b, float)), 11.1,
                                                         np.nan))
    assert rate.step_within(win, flat).tobytes() == general.tobytes() == bytes(8 * win.n)
    b = np.array([1.0, np.nan, 7.5])
    np.testing.assert_array_equal(flat(b), [11.1, np.nan, 11.1])


def test_strata_are_numpys(monkeypatch):
    rng = np.random.default_rng(0)
    for trial in range(150):
        n = int(rng.integers(1, 300)) if trial < 140 else 100_000
        r = [rng.integers(0, 40, n).astype(float), rng.integers(0, 3, n).astype(float),
             rng.uniform(0, 10, n), rng.integers(0, 2**21, n).astype(float),
             rng.integers(-1, 5, n).astype(float)][trial % 5]
        if trial % 3 == 0:
            r[rng.random(n) < 0.1] = np.nan
        if trial % 7 == 0:
            r[rng.random(n) < 0.05] = np.inf
        use = rng.random(n) < 0.7
        for least in (1, 5, 30):
            fast, slow = both(monkeypatch, lambda: rate.strata_of(r, use, least))
            assert fast.dtype == slow.dtype == np.int32
            assert fast.tobytes() == slow.tobytes(), (trial, least)


@pytest.mark.parametrize("n", [3, 39, 41, 1000, 70_001])
def test_warmup_inputs_are_numpys(monkeypatch, n):
    win = windows(n, seed=n, nan=False)
    rng = np.random.default_rng(n)
    use = rng.random(n) < 0.8
    res = rng.standard_t(3, n) * 2
    res[::17] = np.nan
    fitted = rng.uniform(10, 20, n)
    strata = rate.strata_of(win.r, use)
    strata[::29] = -1
    fast, slow = both(monkeypatch, lambda: rate._within_clipped(win, res, fitted, 0.4, use,
                                                                strata))
    assert fast.tobytes() == slow.tobytes()
    # made in the residuals' own array (the fit's warm-up lets them go): the same numbers
    mine = res.copy()
    out = rate._within_clipped(win, mine, fitted, 0.4, use, strata, into_res=True)
    assert out is mine and out.tobytes() == fast.tobytes()
    # the stall test a block at a time: the whole arrays' expression
    for mad in (0.0, 0.4, 3.0):
        want = use & (res > rate.STALL_SIGMAS * mad) & (res > rate.STALL_SHARE * fitted)
        got = rate._stalls(use, res, fitted, mad)
        assert got.dtype == bool and got.tobytes() == want.tobytes()
    # a warm-up: the first fifth 30 % slower
    z = rng.normal(0, 1, n) + np.where(np.arange(n) < n // 5, 30.0, 0.0)
    z[::13] = np.nan
    w = np.where(use, rng.uniform(1, 2, n), 0.0)
    fast, slow = both(monkeypatch, lambda: rate.warmup_windows(z, w, 100.0))
    assert fast == slow
    if n > 1000:
        assert n // 5 - 50 <= fast <= n // 5 + 50


@pytest.mark.parametrize("shape", ["chain", "tree", "noise", "few"])
def test_draft_length_readings_are_numpys(monkeypatch, shape):
    from eaglelog.analysis import draft_len
    rng = np.random.default_rng(len(shape))
    n = {"few": 4}.get(shape, 20_000)
    L = np.round(rng.uniform(1, 4, n), 2)
    if shape == "chain":          # accept rate = L / (S + 1), S = 5
        R = np.round(L / 6, 2)
    elif shape == "tree":         # (L − 1) / (K − 1), K = 8
        R = np.round((L - 1) / 7, 2)
    else:
        R = np.round(rng.uniform(0.05, 1, n), 2)
    L[::50], R[::77] = np.nan, 0.0

    class Log:                    # (the two columns max_tokens_of_rows reads)
        tables = {}

        @staticmethod
        def values(source, table, column):
            return {"accept_len": L, "accept_rate": R}[column]
    fast, slow = both(monkeypatch, lambda: draft_len.max_tokens_of_rows(Log, "x"))
    assert fast == slow
    assert (fast or (None,))[0] == {"chain": 6, "tree": 8}.get(shape)


def test_window_buckets_are_made_once_and_read_only():
    win = windows(1000, seed=2)
    codes, labels = rate.window_buckets(win)
    again = rate.window_buckets(win)
    assert again[0] is codes and again[1] is labels
    want = rate.bucket_of(win.r)
    assert codes.dtype == np.int8 and (codes == want[0]).all() and labels == want[1]
    with pytest.raises(ValueError):
        codes[0] = 3
    win.r = win.r.copy()            # (new batch sizes: made again)
    assert rate.window_buckets(win)[0] is not codes


@pytest.mark.parametrize("labels", [("-|-|-|-",), ("0|-|-|-", "1|-|-|-", "0|-|-|-"),
                                    ("vllm 0|-|-|-", "vllm 1|-|-|-")])
@pytest.mark.parametrize("rs", [False, True])
def test_per_rank_aggregate_is_numpys_to_the_bit(monkeypatch, labels, rs):
    # (ranks.aggregate: one C pass of np.bincount's sums over the counted windows)
    from eaglelog.analysis import ranks
    n = 90_000
    win = windows(n, seed=len(labels) + 10 * rs)
    rng = np.random.default_rng(5)
    win.series = rng.integers(0, len(labels), n).astype(np.int8)
    win.labels = labels
    win.why = rng.choice(np.arange(8, dtype=np.int8), n, p=[.6, .05, .05, .05, .05, .05, .1, .05])
    win.a = np.where(rng.random(n) < 0.1, np.nan, rng.uniform(1, 4, n))
    win.b[rng.random(n) < 0.02] = 0.0
    if rs:
        win.rs = rng.uniform(0, 100, n)
    fast, slow = both(monkeypatch, lambda: ranks.aggregate(win))
    assert fast is not None and fast > 0 and fast == slow
    if len(labels) == 1:
        # series codes with no labels of their own (Windows made by hand): one rank, as
        # rank_of has it
        win.labels = ()
        win.series = rng.integers(0, 3, n).astype(np.int8)
        assert both(monkeypatch, lambda: ranks.aggregate(win)) == (fast, fast)
    # no window counted: None both ways
    win.why = np.full(n, rate.FIRST, dtype=np.int8)
    assert both(monkeypatch, lambda: ranks.aggregate(win)) == (None, None)


def test_rank_sums_rejects_codes_outside_its_table():
    from eaglelog.analysis import _ratekern
    n = 4
    f = np.ones(n)
    with pytest.raises(ValueError, match="series"):
        _ratekern.rank_sums(np.array([0, 1, 2, 0], np.int8), np.zeros(2, np.int64),
                            np.zeros(n, np.int8), b"", f, f, f, None, 16.0, np.empty(1),
                            np.empty(1))
    with pytest.raises(ValueError, match="of_series"):
        _ratekern.rank_sums(np.zeros(n, np.int8), np.array([3], np.int64), np.zeros(n, np.int8),
                            b"", f, f, f, None, 16.0, np.empty(1), np.empty(1))
