"""The context passes of a large log's summary made a block at a time or in fewer arrays
(analysis/context.py): the same numbers, to the bit, as the whole-array formulas they replace
(kept here as the oracle)."""
import numpy as np
import pandas as pd
import pytest

from eaglelog.analysis import context


def _window_context_whole(t, r, s):
    """window_context as whole arrays (the formula before it went a block at a time)."""
    tp, rp = np.full(len(t), np.nan), np.full(len(t), np.nan)
    for code in np.unique(s):
        idx = np.flatnonzero(s == code)
        tp[idx[1:]], rp[idx[1:]] = t[idx[:-1]], r[idx[:-1]]
    first = ~(np.isfinite(tp) & np.isfinite(rp) & (rp > 0))
    num = np.where(first, t, t + tp)
    den = np.where(first, r, r + rp)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    out[~(np.isfinite(out) & (den > 0) & (num >= 0))] = np.nan
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 5, 65_536, 65_537, 200_001])
@pytest.mark.parametrize("layout", ["one", "contiguous", "interleaved"])
def test_window_context_is_the_whole_array_formula(n, layout):
    rng = np.random.default_rng(n + len(layout))
    t = rng.uniform(0, 9e4, n)
    r = rng.integers(0, 40, n).astype(float)
    t[rng.random(n) < 0.02] = np.nan
    r[rng.random(n) < 0.02] = np.nan
    if layout == "one":
        s = np.zeros(n, np.int8)
    elif layout == "contiguous":
        s = np.repeat(np.arange(3, dtype=np.int8), -(-n // 3))[:n]
    else:
        s = rng.integers(0, 4, n).astype(np.int8)
    got = context.window_context(t, r, s)
    want = _window_context_whole(t, r, s)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()


def test_tokens_at_gives_an_array_of_its_own():
    dec = pd.DataFrame({"line_no": pd.array([1, 4, 9], dtype="Int64"),
                        "num_tokens": pd.array([10, None, 30], dtype="Int64")})
    tok = context.tokens_at(dec, np.array([1, 4, 9]))
    tok[0] = -1.0                                  # (its own: the frame is not written)
    assert dec["num_tokens"].iloc[0] == 10 and np.isnan(tok[1]) and tok[2] == 30
    flo = dec.astype({"num_tokens": float})
    tok = context.tokens_at(flo, np.array([1, 4, 9]))
    tok[0] = -1.0
    assert flo["num_tokens"].iloc[0] == 10.0
    # lines out of order are sorted first; lines asked for that no line printed are NaN
    rev = dec.iloc[::-1]
    assert np.array_equal(context.tokens_at(rev, np.array([1, 5, 9])), [10, np.nan, 30],
                          equal_nan=True)


def test_bucket_context_is_the_whole_array_formula():
    rng = np.random.default_rng(5)
    n = 100_003
    ctx, w = rng.uniform(10, 5e4, n), rng.uniform(0, 300, n)
    ctx[rng.random(n) < 0.05] = np.nan
    w[rng.random(n) < 0.01] = 0.0
    codes = rng.integers(-1, 6, n).astype(np.int8)
    mask = rng.random(n) < 0.9
    labels = [str(i) for i in range(6)]
    got = context.bucket_context(ctx, w, codes, labels, mask)
    ok = mask & np.isfinite(ctx) & np.isfinite(w) & (w > 0) & (codes >= 0)
    num = np.bincount(codes[ok], weights=w[ok] * ctx[ok], minlength=6)
    den = np.bincount(codes[ok], weights=w[ok], minlength=6)
    assert got == {lab: float(num[i] / den[i]) for i, lab in enumerate(labels) if den[i] > 0}


@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 12_289, 1_000_003])
def test_block_counts_are_the_ids_counts(n):
    from eaglelog import stats
    w = np.ones(n)
    k = min(n, stats.FINE)
    got = context._product_blocks(((w,),), n)
    ids = (np.arange(n, dtype=np.int64) * k) // n
    assert got.counts.tobytes() == np.bincount(ids, minlength=k).astype(float).tobytes()
    assert got.sums[:, 0].tobytes() == got.counts.tobytes()


def test_the_fits_compact_precision_is_precisions_array(monkeypatch):
    # fit() holds precision()'s weights as each window's group and the groups' weights: the
    # same array, and the same products with w, to the bit (C and numpy medians)
    from eaglelog.analysis import rate
    from test_ratekern import both, windows
    win = windows(20_000, seed=11, nan=False)
    rng = np.random.default_rng(2)
    use = rng.random(win.n) < 0.9
    res = rng.standard_normal(win.n) * np.where(win.x.held(), 3.0, 1.0)
    for dense, compact in zip(*(both(monkeypatch, lambda f=f: f(win, use, res))
                                for f in (rate.precision, rate._precision))):
        assert compact is not None and len(set(compact.lut[:-1])) > 1
        assert np.asarray(compact).tobytes() == dense.tobytes()
        w = np.where(use, win.w, 0.0)
        assert compact.scale(w.copy()).tobytes() == (w * dense).tobytes()
    # one group: every weight 1, and None
    assert rate._precision(win, np.zeros(win.n, bool), res) is None
