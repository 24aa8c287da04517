"""The C passes split over threads (eaglelog/analysis/_ratekern.c, "threads"): every number is
the same, to the bit, for 1 to 8 threads.  A pass takes threads from 2^18 windows on; here
``set_threads(n, least)`` lowers that bar so that small passes split too, at awkward places
(a thread's share smaller than a block, blocks of a few windows, empty chunks)."""
import math
import os

import numpy as np
import pytest

from eaglelog.analysis import rate
from test_ratekern import windows

K = rate._ratekern
COUNTS = (1, 2, 3, 5, 8)
pytestmark = pytest.mark.skipif(K is None, reason="no C passes in this build")


@pytest.fixture(autouse=True)
def _reset_threads():
    yield
    rate.set_threads()


def each_count(f, least: int = 64) -> list:
    """f()'s result (as bytes) with every thread count, the bar at ``least`` windows."""
    out = []
    for t in COUNTS:
        assert K.set_threads(t, least) == t
        out.append(f())
    return out


def same(results: list) -> bool:
    return all(r == results[0] for r in results)


def as_bytes(*arrays) -> bytes:
    return b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)


def test_set_threads_clamps_and_the_default_is_the_workers(monkeypatch):
    assert K.set_threads(0) == 1 and K.set_threads(99) == 8
    monkeypatch.setenv("EAGLELOG_WORKERS", "3")
    assert rate.set_threads() == 3
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    assert rate.set_threads() == 1


@pytest.mark.parametrize("n,keep", [(70_000, 0.9), (9_000, 0.5), (4096 * 6, 1.0),
                                    (4096 * 5 + 3, 0.999)])
def test_moments_are_the_same_on_every_count(n, keep):
    win = windows(n, seed=n, nan=False)
    use = np.random.default_rng(n).random(n) < keep
    beta = np.array([0.5, 2.0, 0.1, -0.3, 1.5])

    def run():
        A, r = rate._gram(win, (20.0, 19.0), [0, 1, 2, 3, 4, 5, 6, 7], win.w, use, win.y, beta)
        return as_bytes(A, r)
    got = each_count(run)
    assert same(got)
    # and the sums are the moments (one thread's: the order tests/test_ratekern.py checks)
    A = np.frombuffer(got[0][:8 * 64]).reshape(8, 8)
    assert A[0, 0] == pytest.approx(win.w[use].sum(), rel=1e-12)


@pytest.mark.parametrize("n", [200, 5_000, 100_003])
@pytest.mark.parametrize("share", [0.01, 0.6, 1.0])
def test_masked_sum_is_numpys_pairwise_sum_on_every_count(n, share):
    rng = np.random.default_rng(n)
    v, w = rng.normal(size=n) * 1e3, rng.uniform(size=n)
    m = rng.random(n) < share
    got = each_count(lambda: (K.masked_sum(v, m), K.masked_sum(v, m, w)), least=16)
    assert same(got)
    assert got[0] == (float(v[m].sum()), float((v[m] * w[m]).sum()))


@pytest.mark.parametrize("n", [3, 1_000, 50_001])
def test_medians_are_numpys_on_every_count(n):
    rng = np.random.default_rng(n)
    v = np.round(rng.normal(size=n), 2)
    mask = rng.random(n) < 0.7
    pos = np.flatnonzero(rng.random(n) < 0.5)
    codes = rng.integers(-1, 5, n).astype(np.int32)
    centers = rng.normal(size=5)

    def run():
        grouped = np.empty(5), np.empty(5)
        K.medians(v, codes, None, grouped[0])
        K.medians(v, codes, centers, grouped[1])
        return (K.median(v, None, math.nan), K.median(v, mask, math.nan),
                K.median(v, pos, 0.25), as_bytes(*grouped))
    got = each_count(run, least=8)
    assert same(got)
    assert got[0][:3] == (np.median(v), np.median(v[mask]), np.median(np.abs(v[pos] - 0.25)))
    want = [np.median(v[codes == g]) if (codes == g).any() else np.nan for g in range(5)]
    np.testing.assert_array_equal(np.frombuffer(got[0][3][:40]), want)
    # a NaN anywhere in a group: NaN, whichever thread met it
    v[-1] = np.nan
    nan = each_count(lambda: K.median(v, None, math.nan), least=8)
    assert all(math.isnan(x) for x in nan)


def test_residuals_and_within_terms_are_the_same_on_every_count():
    win = windows(30_000, seed=3)
    beta = np.array([0.5, 2.0, 0.1, -0.3, 1.5])
    coef = np.array([10.0, 3.0, 0.5])
    spec = rate.ModelSpec((0, 1, 2), (0, 1, 2), (20.0, 19.0))

    def run():
        fitted, res = np.empty(win.n), np.empty(win.n)
        K.resid(win.b, win.y, win.x.rows, win.x.vals, *rate._beta(beta), 20.0, 19.0,
                bytes([0, 1, 2]), coef, fitted, res)
        win.vac = None
        return as_bytes(fitted, res, rate.within_cov(win, coef, spec))
    assert same(each_count(run))


@pytest.mark.parametrize("n,case", [(60_000, "plain"), (60_000, "prec+step"),
                                    (3_000, "plain"), (50, "plain")])
def test_point_and_term_sums_are_the_same_on_every_count(n, case):
    win = windows(n, seed=n, nan=False)
    rng = np.random.default_rng(n + 1)
    use = rng.random(n) < 0.7
    acc = rng.random(n) < 0.9
    spec = rate.ModelSpec((0, 1, 4), (0, 1, 2), (20.0, 19.0))
    strata = rate.strata_of(win.r, use | acc)
    prec = step = None
    if case == "prec+step":
        prec = np.where(win.x.held(), 0.5, 1.0)
        step = rng.uniform(10, 12, n)
    count = int((use | acc).sum())

    def run():
        th, sums = rate._point_and_sums(win, use, acc, step, spec, prec, strata, n=count)
        return (sorted((k, np.asarray(v).tobytes()) for k, v in th.items()),
                [None if s is None else as_bytes(s) for s in sums])
    assert same(each_count(run, least=16))


def test_the_fit_is_the_same_on_every_count():
    # a whole fit (warm-up, MAD by selection, strata, moments, both point passes, the terms'
    # block sums) of windows enough for every pass to split
    win = windows(40_000, seed=11, nan=False)

    def run():
        win.vac = None
        f = rate.fit(win, 0.95, lambda b: np.full(np.shape(b), 11.1))
        return [(k, f[k].estimate, f[k].ci_low, f[k].ci_high) for k in rate.OUTPUTS] + \
            [f.used, f.kind, f.warmup]
    got = each_count(run, least=256)
    assert same(got)
    assert math.isfinite(got[0][1][1])


@pytest.mark.parametrize("text,want", [("200000 100000\n", 2), ("150000 100000", 2),
                                       ("50000 100000", 1), ("max 100000", None),
                                       ("garbage", None), ("", None)])
def test_a_cgroup_cpu_quota_bounds_the_cores(tmp_path, text, want):
    from eaglelog import _cores
    p = tmp_path / "cpu.max"
    p.write_text(text)
    assert _cores._quota(str(p)) == want
    mine = len(os.sched_getaffinity(0))
    assert _cores.available(str(p)) == (min(mine, want) if want else mine)
    assert _cores.available(str(tmp_path / "none")) == mine


def test_workers_is_the_environment_else_the_cores_at_most_8(monkeypatch):
    from eaglelog import _cores
    monkeypatch.setenv("EAGLELOG_WORKERS", "5")
    assert _cores.workers() == 5
    monkeypatch.setenv("EAGLELOG_WORKERS", "x")
    monkeypatch.setattr(_cores, "available", lambda: 64)
    assert _cores.workers() == 8
    monkeypatch.delenv("EAGLELOG_WORKERS")
    monkeypatch.setattr(_cores, "available", lambda: 3)
    assert _cores.workers() == 3
