"""The summary's peak memory, issue 37 round 4: the passes that made every window's arrays at
once now make them a block at a time, or not at all — with the same numbers, to the bit.  The
whole-array versions they replaced are kept here as the oracles."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis import _ratekern, breakeven, context, rate
from eaglelog.analysis.rate_windows import (_by_value, _counted_median, _gap_medians,
                                            _peer_counts, distinct, median, picked_sum,
                                            small_ints, IDLE_PEERS, _blocks)
from simlab.simulate import SCENARIOS, simulate


# ------------------------------------------------------------------ the oracles (whole arrays)

def _bucket_of_whole(r: np.ndarray, exact: bool = False) -> tuple[np.ndarray, list[str]]:
    """Batch-size buckets of the printed #running-req: each value when there are at most 16
    distinct (or ``exact``: always), else powers of two ('4–7'); codes (−1: none) and
    labels."""
    ok = np.isfinite(r) & (r > 0)
    v = np.where(ok, r, np.nan)
    uniq = distinct(v[ok])
    if len(uniq) > 16 and not exact:
        v = np.where(ok, 2.0 ** np.floor(np.log2(np.clip(v, 1, None))), np.nan)
        uniq = distinct(v[ok])
        labels = [f"{int(a)}" if a == 2 * a - 1 else f"{int(a)}–{int(2 * a - 1)}" for a in uniq]
    else:
        labels = [str(int(a)) for a in uniq]
    vv = v[ok]
    if len(uniq) and small_ints(uniq) and float(uniq[-1]) < 1 << 20:
        # (printed sizes, or their powers of two: a table lookup, not a search per window)
        lut = np.full(int(uniq[-1]) + 1, -1, dtype=np.int64)
        lut[uniq.astype(np.int64)] = np.arange(len(uniq))
        codes = np.full(len(r), -1, dtype=np.int64)
        codes[ok] = lut[vv.astype(np.int64)]
        return codes, labels
    codes = np.where(ok, np.searchsorted(uniq, np.where(ok, v, uniq[0] if len(uniq) else 0)), -1)
    return codes.astype(np.int64), labels


def _gap_medians_whole(gap: np.ndarray, r: np.ndarray, med: float) -> np.ndarray:
    """The wall time a window of its batch size usually takes: the median gap of the windows
    printing the same #running-req (at least IDLE_PEERS of them), else the series' median
    scaled by its batch over the median batch (at least 1×): a window's time grows with the
    cycle, and the cycle with the batch size — the series' median alone took every window of a
    slow high-batch level for an idle gap (a 7-step run at 2 → 8 → 16 requests lost its 16).
    ``med``: the series' median gap.  Where the gaps are whole seconds (SGLang's default
    stamps), the medians are counted from one histogram of (#running-req, gap)
    (``_peer_counts``): the same numbers, without sorting millions of windows by batch size."""
    ok = np.isfinite(r) & (r > 0)
    if not ok.any():
        return np.full(len(gap), med if len(gap) else 0.0)
    counts = _peer_counts(gap, r, ok)
    out = np.full(len(gap), med if len(gap) else 0.0)
    peers = None
    if counts is None:
        r_med = median(r[ok], scratch=True)
    else:
        nv = counts.sum(axis=1)          # windows printing each #running-req (0: not ok)
        nv[0] = 0
        r_med = _counted_median(nv)
        # each batch size's median gap where IDLE_PEERS or more windows print it, else NaN
        peers = np.full(len(nv), np.nan)
        for v in np.flatnonzero(nv >= IDLE_PEERS):
            peers[v] = _counted_median(counts[v])
        del counts
    for lo, hi in _blocks(len(gap)):
        ob, okb, rb = out[lo:hi], ok[lo:hi], r[lo:hi]
        # out × max(1, r / r_med) where ok, else out
        f = np.where(okb, rb, 1.0)
        f /= r_med
        np.maximum(1.0, f, out=f)
        np.multiply(ob, f, out=f)
        np.copyto(ob, f, where=okb)
        if peers is not None:
            p = peers[np.where(okb, rb, 0.0).astype(np.intp)]
            np.copyto(ob, p, where=~np.isnan(p))
    if peers is None:
        for v, sel in _by_value(np.where(ok, r, -1.0)):
            if v > 0 and len(sel) >= IDLE_PEERS:
                out[sel] = median(gap[sel], scratch=True)
    return out


def _bucket_context_whole(ctx: np.ndarray, w: np.ndarray, codes: np.ndarray, labels: list[str],
                   mask: np.ndarray) -> dict[str, float]:
    """The mean context per running request of each batch-size bucket's windows (``codes``
    into ``labels``, rate.bucket_of; ``mask``: the windows that count), weighted by their
    request-steps."""
    ok = mask & np.isfinite(ctx) & np.isfinite(w) & (w > 0) & (codes >= 0)
    out = {}
    if not ok.any():
        return out
    # (w[ok] × ctx[ok] made in w[ok]'s array after its own sums: two arrays of the windows
    # alive, not four; the same products, the same sums)
    cw, wk = codes[ok], w[ok]
    den = np.bincount(cw, weights=wk, minlength=len(labels))
    wk *= ctx[ok]
    num = np.bincount(cw, weights=wk, minlength=len(labels))
    del cw, wk
    for i, label in enumerate(labels):
        if den[i] > 0:
            out[label] = float(num[i] / den[i])
    return out


def _same(a, b) -> bool:
    return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b, equal_nan=True)


def _bits(x) -> bytes:
    return np.float64(x).tobytes()


# ------------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 1000, 65_537, 300_001])
@pytest.mark.parametrize("share", [1.0, 0.5, 0.03])
def test_masked_sum_is_numpys_sum_of_the_picked_values(n, share):
    rng = np.random.default_rng(n + int(share * 100))
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)
    v[rng.random(n) < 0.1] = -0.0
    m = rng.random(n) < share
    assert _bits(_ratekern.masked_sum(v, m)) == _bits(v[m].sum())
    assert _bits(picked_sum(v, m)) == _bits(v[m].sum())
    z = -np.abs(v) * 0.0                      # every one −0.0: numpy's sum is −0.0 … or 0.0
    assert _bits(_ratekern.masked_sum(z, m)) == _bits(z[m].sum())


def _sizes(rng, n, kind):
    if kind == 0:
        return rng.integers(0, 10, n).astype(float)
    if kind == 1:
        return rng.integers(-3, 400, n).astype(float)
    if kind == 2:
        return rng.random(n) * 50
    if kind == 3:
        return rng.integers(1, 3_000_000, n).astype(float)
    if kind == 4:
        return rng.integers(0, 40, n).astype(np.float32)
    return np.round(rng.random(n) * 30, 1)


@pytest.mark.parametrize("kind", range(6))
@pytest.mark.parametrize("n", [0, 1, 17, 70_000, 150_000])
def test_bucket_of_by_blocks_is_the_whole_arrays(kind, n):
    rng = np.random.default_rng(kind * 7 + n)
    r = _sizes(rng, n, kind)
    if n:
        r[rng.random(n) < 0.1] = np.nan
        r[rng.random(n) < 0.02] = np.inf
    if n > 70_000:
        r[70_000:] += 0.5 * (r[70_000:] > 0)       # a later block's sizes not whole
    for exact in (False, True):
        codes, labels = _bucket_of_whole(r, exact)
        got, got_labels = rate.bucket_of(r, exact)
        assert got_labels == labels and _same(got, codes)
        small, small_labels = rate.bucket_of(r, exact, small=True)
        assert small_labels == labels
        want = codes.astype(np.int8) if len(labels) < 127 else codes
        assert _same(small, want)


@pytest.mark.parametrize("seed", range(12))
def test_gap_medians_by_blocks_are_the_whole_arrays(seed):
    rng = np.random.default_rng(seed)
    n = [3, 50, 1000, 70_000, 140_000, 200_000][seed % 6]
    gap = rng.integers(0, 5, n).astype(float) if seed % 2 else rng.random(n) * 3
    r = rng.integers(-1, 40 if seed % 3 else 3, n).astype(float)
    if seed % 4 == 0:
        r[rng.random(n) < 0.2] = np.nan
    if seed == 11:
        r[:] = np.nan
    med = float(np.median(gap)) + 0.1
    assert _same(_gap_medians(gap, r, med), _gap_medians_whole(gap, r, med))


@pytest.mark.parametrize("seed", range(10))
def test_bucket_context_by_blocks_is_the_whole_arrays(seed):
    rng = np.random.default_rng(seed)
    n = [0, 1, 1000, 70_000, 200_000][seed % 5]
    nl = int(rng.integers(1, 20))
    codes = rng.integers(-1, nl, n).astype(np.int8 if seed % 2 else np.int64)
    ctx = rng.random(n) * 1e4
    ctx[rng.random(n) < 0.1] = np.nan
    w = rng.random(n) * 100 - 5
    w[rng.random(n) < 0.05] = np.nan
    mask = rng.random(n) < 0.8
    labels = [str(i) for i in range(nl)]
    want = _bucket_context_whole(ctx, w, codes, labels, mask)
    got = context.bucket_context(ctx, w, codes, labels, mask)
    assert got.keys() == want.keys()
    assert all(_bits(got[k]) == _bits(want[k]) for k in want)


def test_tokens_kept_as_int32_come_back_as_the_same_floats():
    rng = np.random.default_rng(1)
    tok = rng.integers(0, 2_000_000, 200_000).astype(float)
    tok[rng.random(len(tok)) < 0.1] = np.nan
    packed = breakeven._packed(tok)
    assert packed.dtype == np.int32 and packed.nbytes == len(tok) * 4
    assert _same(breakeven._unpacked(packed), tok)
    for odd in (2.5, -3.0, 2.0**31, -0.0, np.inf):      # not a count: kept as it is
        t = tok.copy()
        t[123_456] = odd
        assert breakeven._packed(t) is t
    assert breakeven._packed(None) is None and breakeven._unpacked(None) is None


def test_trend_takes_handed_arrays_and_gives_the_same_slope():
    rng = np.random.default_rng(4)
    n = 150_000
    c = np.exp(rng.random(n) * 6)
    a = 2.5 - 0.05 * np.log2(c) + rng.standard_normal(n) * 0.3
    w = rng.random(n) * 8 + 1
    mask = rng.random(n) < 0.9
    plain = context.trend(a, w, c, 0.95, mask=mask)
    hw, hc = [w.copy()], [c.copy()]
    handed = context.trend(a, hw, hc, 0.95, mask=mask)
    assert hw == [] and hc == []
    assert plain.to_dict() == handed.to_dict()
    assert math.isfinite(plain.slope) and plain.slope < 0


def _windows(tmp_path, scenario, seed):
    path = tmp_path / f"{scenario.name}-{seed}.log"
    simulate(scenario, seed).write(str(path))
    return breakeven.run_windows(eaglelog.parse(str(path)), str(path))[1]


@pytest.mark.parametrize("name", ["reference", "warmup", "continuous_s"])
def test_a_stated_step_as_one_number_gives_the_arrays_answers(tmp_path, name):
    """The C passes take a stated rate's step as one number (rate._one_step); a step given as
    a function of the batch takes the array path: every estimate the same, to the bit, in the
    fit and per bucket."""
    if not rate.fast_available():
        pytest.skip("no C passes in this build")
    scen = SCENARIOS[name]
    win = _windows(tmp_path, scen.replace(duration_s=min(scen.duration_s, 600.0)), 0)
    one = rate.StatedStep(1000.0 / 90)

    def curve(b):                      # the same numbers, not a StatedStep: arrays
        return one(b)
    assert rate._one_step(win, one) == one.ms and rate._one_step(win, curve) is None
    f1, f2 = rate.fit(win, 0.95, one), rate.fit(win, 0.95, curve)
    for k in rate.OUTPUTS:
        a, b = f1[k], f2[k]
        assert (_bits(a.estimate), _bits(a.ci_low), _bits(a.ci_high)) == \
            (_bits(b.estimate), _bits(b.ci_low), _bits(b.ci_high)), k
    assert math.isfinite(f1["speedup"].estimate)
    b1, b2 = rate.by_bucket(win, f1, 0.95, one), rate.by_bucket(win, f2, 0.95, curve)
    assert [x.label for x in b1] == [x.label for x in b2] and b1
    for x, y in zip(b1, b2):
        assert _bits(x.share) == _bits(y.share)
        for k in rate.OUTPUTS:
            assert _bits(x[k].estimate) == _bits(y[k].estimate), (x.label, k)


@pytest.mark.parametrize("share", [1.0, 0.6, 0.05])
def test_picked_weighted_sum_is_numpys_average_parts(share):
    """np.average(v[m], weights=w[m]) is Σ v w / Σ w over the picked values, each sum numpy's
    pairwise one: picked_sum gives both to the bit (rate._fit's warm-up scale)."""
    rng = np.random.default_rng(int(share * 100))
    n = 300_001
    v = rng.standard_normal(n) * 30 + 100
    w = rng.random(n) * 8
    m = rng.random(n) < share
    assert _bits(picked_sum(v, m, w)) == _bits((v[m] * w[m]).sum())
    assert _bits(picked_sum(v, m, w) / picked_sum(w, m)) == \
        _bits(np.average(v[m], weights=w[m]))
    small = slice(0, 1000)                      # (below a block: numpy's own sums)
    assert _bits(picked_sum(v[small], m[small], w[small])) == \
        _bits((v[small][m[small]] * w[small][m[small]]).sum())


def test_warmup_cut_found_a_block_at_a_time_is_the_counted_windows_position():
    """The cut is the position of the (5 · d)-th window that counts (finite z, w > 0), found a
    block at a time: the same as the positions of every counted window, indexed."""
    rng = np.random.default_rng(8)
    n = 400_000
    z = rng.standard_normal(n)
    z[:60_000] += 4.0                           # a warm-up: slower at the start
    z[rng.random(n) < 0.3] = np.nan             # windows that do not count
    w = rng.random(n) * 4
    w[rng.random(n) < 0.1] = 0.0
    cut = rate.warmup_windows(z, w, 1.0)
    ok = np.flatnonzero(np.isfinite(z) & (w > 0))
    assert cut > 0
    d = int(np.searchsorted(ok, cut))
    assert ok[d] == cut and d % 5 == 0          # a counted window, the first of a group of 5
    assert 50_000 < cut < 70_000


def test_tokens_at_lines_packed_and_int32_lines_give_tokens_at():
    import pandas as pd
    rng = np.random.default_rng(3)
    n = 100_000
    lines = np.arange(n, dtype=np.int64) * 3 + 7
    tok = pd.array(rng.integers(0, 500_000, n), dtype="Int64")
    tok[rng.random(n) < 0.1] = pd.NA
    dec = pd.DataFrame({"line_no": pd.array(lines, dtype="Int64"), "num_tokens": tok})
    ln, floats, own = context.token_lines(dec)
    packed = breakeven._packed(floats)
    assert packed.dtype == np.int32
    for ask in (lines, lines.astype(np.int32), lines[::7].astype(np.int32),
                np.array([6, 7, 8, 10, 3 * n + 4], dtype=np.int64)):
        want = context.tokens_at(dec, ask.astype(np.int64))
        assert _same(context.tokens_at_lines(ln, floats, own, ask), want)
        got = context.tokens_at_lines(ln, packed, True, ask)
        assert got.dtype == np.int32 and _same(breakeven._unpacked(got), want)


def test_windows_keep_int32_line_numbers_and_the_same_answers(tmp_path):
    win = _windows(tmp_path, SCENARIOS["reference"].replace(duration_s=300.0), 1)
    assert win.line.dtype == np.int32 and np.all(np.diff(win.line) > 0)
    wide = rate.Windows(**{f: getattr(win, f) for f in win.__dataclass_fields__
                           if f not in ("_w",)})
    wide.line = win.line.astype(np.int64)
    f1, f2 = rate.fit(win, 0.95), rate.fit(wide, 0.95)
    for k in rate.OUTPUTS:
        assert _bits(f1[k].estimate) == _bits(f2[k].estimate)


def test_settle_trims_only_a_single_use_log_of_many_windows(monkeypatch):
    from eaglelog import _memory, model
    calls = []
    monkeypatch.setattr(_memory, "trim", lambda: calls.append(1))
    log = model.ParsedLog.__new__(model.ParsedLog)
    log.__dict__["_single_use"] = False
    log.settle(10 ** 7)
    assert calls == []
    log.mark_single_use()
    log.settle(model.SETTLE_LEAST - 1)
    assert calls == []
    log.settle(model.SETTLE_LEAST)
    assert calls == [1]


def test_windows_made_of_a_handed_frame_let_its_copied_columns_go(tmp_path):
    """decode_windows(consume=True) deletes from the frame it is handed the columns it has
    copied (not alive beside the windows), and makes the same windows."""
    scen = SCENARIOS["reference"].replace(duration_s=300.0)
    path = tmp_path / "w.log"
    simulate(scen, 2).write(str(path))
    log = eaglelog.parse(str(path))
    cfg = log.config(str(path))
    interval = breakeven.decode_interval(cfg)
    kept = rate.decode_windows(log.decode, log.prefill, interval)
    handed = log.decode.copy()
    got = rate.decode_windows(handed, log.prefill, interval, consume=True)
    assert "running_req" not in handed.columns and "accept_len" not in handed.columns
    assert "running_req" in log.decode.columns
    for f in ("line", "ts", "series", "r", "b", "a", "y", "why", "rp", "nin"):
        assert _same(getattr(got, f), getattr(kept, f)), f
    assert got.lifetime == kept.lifetime


def _stamps(n: int, seed: int, step_us: int = 1_000_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = 1_765_000_000_000_000 + np.cumsum(rng.integers(0, 5, n)) * step_us
    t[rng.random(n) < 0.05] = rate.NAT
    return t.astype(np.int64)


@pytest.mark.parametrize("n", [1, 70_000, 200_001])
def test_whole_second_stamps_kept_as_int32_are_the_same_stamps(n):
    from eaglelog.analysis.rate_windows import Stamps
    ts = _stamps(n, n)
    st = Stamps.of(ts)
    if (ts != rate.NAT).any():
        assert isinstance(st, Stamps) and st.sec.dtype == np.int32 and st.nbytes == 4 * n
        assert np.asarray(st).tobytes() == ts.tobytes()
        # (numpy's operators read them as the int64 stamps)
        assert (st % 1_000_000).tobytes() == (ts % 1_000_000).tobytes()
        assert st.dtype == ts.dtype and (st == ts).all()
        rng = np.random.default_rng(1)
        mask = rng.random(n) < 0.3
        pos = np.flatnonzero(mask)
        assert np.asarray(st[mask]).tobytes() == ts[mask].tobytes()
        assert np.asarray(st[pos]).tobytes() == ts[pos].tobytes()
        assert st[3:n // 2].tobytes() == ts[3:n // 2].tobytes()
        assert np.asarray(st, dtype=np.int64).view("datetime64[us]")[0] == \
            ts.view("datetime64[us]")[0]
    # stamps it cannot hold exactly come back as they are: sub-second ones (SGLANG_LOG_MS=1),
    # a span beyond 2³¹ s, none at all
    for other in (ts + 1000 * (ts != rate.NAT), np.full(n, rate.NAT),
                  np.where(np.arange(n) == n - 1, ts[0] + (1 << 31) * 1_000_000, ts)):
        if n > 1 or other[0] == rate.NAT:
            assert Stamps.of(other) is other
    assert Stamps.of(None) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_whole_seconds_reads_int32_stamps_as_the_int64_ones(seed):
    from eaglelog.analysis.rate_windows import Stamps
    n = 150_000
    rng = np.random.default_rng(seed)
    for ts in (_stamps(n, seed), _stamps(n, seed, step_us=250_000)):
        win = rate.Windows(16, np.arange(n, dtype=np.int32), ts, np.zeros(n, np.int8),
                           np.ones(n), np.ones(n), np.ones(n), np.ones(n), np.zeros((n, 5)),
                           np.zeros(n, np.int8), True, np.zeros(n, bool))
        compact = rate.Windows(**{f: getattr(win, f) for f in win.__dataclass_fields__
                                  if f != "_w"})
        compact.ts = Stamps.of(ts)
        assert isinstance(compact.ts, Stamps) == (ts[ts != rate.NAT] % 1_000_000 == 0).all()
        for rows in (rng.random(n) < 0.2, np.zeros(n, bool), ts == rate.NAT,
                     np.flatnonzero(rng.random(n) < 0.01)):
            assert rate.whole_seconds(compact, rows) == rate.whole_seconds(win, rows)
            assert rate.whole_seconds(compact.restrict(np.ones(n, bool)), rows) == \
                rate.whole_seconds(win, rows)


def test_sglang_windows_keep_compact_stamps_and_no_step_flags(tmp_path):
    import os
    import re
    from eaglelog.analysis.rate_windows import Stamps
    src = os.path.join(os.path.dirname(__file__), "..", "sample_logs", "eagle3_5step.log")
    # SGLang's default stamps: whole seconds (the sample's are SGLANG_LOG_MS=1's)
    path = tmp_path / "whole.log"
    with open(src) as f:
        path.write_text(re.sub(r"(\d\d:\d\d:\d\d)\.\d{3}", r"\1", f.read()))
    win = breakeven.run_windows(eaglelog.parse(str(path)), str(path))[1]
    assert isinstance(win.ts, Stamps) and win.n > 50
    # (millisecond stamps stay int64)
    ms = _windows(tmp_path, SCENARIOS["reference"].replace(duration_s=300.0), 1)
    assert isinstance(ms.ts, np.ndarray) and ms.ts.dtype == np.int64
    st = win.steps_throughput
    assert len(st) == win.n and not st.any() and not st.flags.writeable and st.strides == (0,)
    half = win.restrict(np.arange(win.n) % 2 == 0)
    assert isinstance(half.ts, Stamps) and len(half.steps_throughput) == half.n
