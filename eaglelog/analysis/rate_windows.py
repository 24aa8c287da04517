"""The rate model's windows (analysis/rate.py): one window a ``Decode batch`` line of one
scheduler — its mean batch, wall time per iteration, accept length, request-steps, the prefill
work inside it, and why it is left out — built from the decode and prefill tables, with the
clocks of wrapped stamps measured (decode_windows).  The model (the fit and its inference)
lives in rate.py, which re-exports every name here.  docs/statistics.md, "The rate model"."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from .._lazy import pd
from ..frame import is_numpy_backed, is_plain_range

from ..model import contiguous
from .sums import picked_sum
from .windows import SERIES_TAGS, _series_codes

# why a window is not used for the cycle (codes of Windows.why)
USED, FIRST, IDLE, STALL, NO_THROUGHPUT, SKIPPED, JUMP, NO_ACCEPT = range(8)

IDLE_FACTOR = 5        # a window whose wall time is over this × its series' median …


IDLE_EXTRA_S = 1.0     # … and at least this much longer, by its timestamps, held an idle gap


IDLE_PEERS = 5         # … and (windows of the same #running-req, at least this many) over


IDLE_PEER_FACTOR = 1.4  # this × their median wall time: a slow high-batch level is not idle


N_X = 5                # prefill regressors: tokens and batches, this window and the one before,


WHY = ("", "first of its series", "idle gap", "stall", "no throughput", "left out",
       "batch size jump", "no accept len")


PRINTED_STEP = 0.01     # SGLang prints accept len and gen throughput with 2 decimals


STAMP_VAR = 2 / 12      # ms²: the variance of the difference of two truncated ms stamps


FIELD_VAR = 2e-6 / 12   # ms²: the same for two truncated µs stamps (the 'timestamp:' field)


PINNED_LEAST = 20       # pairs of lines a wrapper's stamp variance is measured on


JITTER_LIMIT = 0.005    # a wrapper whose stamps time a window worse than this (σ of Δt over


                        # the median Δt) is not used
NAT = np.iinfo(np.int64).min   # a missing timestamp (NaT) as int64 µs


JUMP_SHARE = 0.5       # a batch size that moves by more than this share between two lines:


class PrefillWork:
    """The prefill regressors x of a run's windows (n × N_X, per iteration), kept by the rows
    that hold any: most windows of a busy log hold none (79 % of a long SGLang log's), and
    dense they were 40 of a window's ~100 bytes.  The same numbers as the dense matrix
    (``dense()``; ``np.asarray(x)``, ``x[i, j]`` and ``x[...] = v`` go through it, for
    tests and small logs), with the passes the fit makes over millions of windows done on
    the stored rows: ``dot``, ``col``, ``take``, ``held``."""

    __slots__ = ("n", "rows", "vals", "_slot")

    def __init__(self, dense: np.ndarray):
        dense = np.asarray(dense, dtype=float).reshape(-1, N_X)
        self.n = len(dense)
        # (a NaN counts as held: the dense matrix's products carry it)
        self.rows = np.flatnonzero(dense.any(axis=1))
        self.vals = np.ascontiguousarray(dense[self.rows])
        self._slot = None

    @classmethod
    def of_rows(cls, n: int, rows: np.ndarray, vals: np.ndarray) -> "PrefillWork":
        """The prefill work of n windows from its rows that hold any (ascending) and their
        values: what the dense matrix gives, without making it (decode_windows)."""
        out = cls.__new__(cls)
        out.n, out.rows, out._slot = n, rows, None
        out.vals = np.ascontiguousarray(vals, dtype=float)
        return out

    def slot(self) -> np.ndarray:
        """Each window's row in ``vals`` (−1: none), made once: the fit takes rows of the
        design a block at a time, and a lookup is one gather where a search was a log."""
        if self._slot is None:
            self._slot = np.full(self.n, -1, dtype=np.int32 if self.n < 2**31 else np.int64)
            self._slot[self.rows] = np.arange(len(self.rows))
        return self._slot

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, N_X)

    def __len__(self) -> int:
        return self.n

    def dense(self) -> np.ndarray:
        out = np.zeros((self.n, N_X))
        out[self.rows] = self.vals
        return out

    def __array__(self, dtype=None, copy=None):
        d = self.dense()
        return d if dtype is None else d.astype(dtype)

    def __getitem__(self, key):
        return self.dense()[key]

    def __setitem__(self, key, value) -> None:
        d = self.dense()
        d[key] = value
        self.__init__(d)

    def held(self) -> np.ndarray:
        """Whether each window holds prefill work (a row not all zero)."""
        out = np.zeros(self.n, dtype=bool)
        out[self.rows] = True
        return out

    def positive(self, c: int) -> np.ndarray:
        """Whether column c is above 0 at each window (``col(c) > 0``, without the column)."""
        out = np.zeros(self.n, dtype=bool)
        out[self.rows[self.vals[:, c] > 0]] = True
        return out

    def dot(self, beta) -> np.ndarray:
        """x @ beta (a window without prefill work: 0 · β, NaN where β is not finite)."""
        beta = np.asarray(beta, dtype=float)
        out = np.full(self.n, float(np.zeros(N_X) @ beta))
        if len(self.rows):
            out[self.rows] = self.vals @ beta
        return out

    def col(self, c: int, rows=None) -> np.ndarray:
        """Column c, of every window or of ``rows`` (a mask, positions or a slice)."""
        if rows is None:
            out = np.zeros(self.n)
            out[self.rows] = self.vals[:, c]
            return out
        return self.take(rows, c)

    def take(self, rows, c: int | None = None) -> np.ndarray:
        """The rows ``rows`` (a mask, ascending positions or a slice) as a dense matrix (``c``:
        its column c only, without the matrix)."""
        cols, width = (slice(None), (N_X,)) if c is None else (c, ())
        if isinstance(rows, slice):
            lo, hi, step = rows.indices(self.n)
            if step == 1:
                a, b = np.searchsorted(self.rows, (lo, hi))
                out = np.zeros((max(hi - lo, 0),) + width)
                out[self.rows[a:b] - lo] = self.vals[a:b, cols]
                return out
            rows = np.arange(lo, hi, step)
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        out = np.zeros((len(rows),) + width)
        if len(rows) and len(self.rows):
            at = self.slot()[rows]
            hit = at >= 0
            out[hit] = self.vals[at[hit], cols]
        return out

    def restrict(self, keep: np.ndarray) -> "PrefillWork":
        out = PrefillWork.__new__(PrefillWork)
        keep = np.asarray(keep, dtype=bool)
        out.n = int(keep.sum())
        sel = keep[self.rows]
        out.rows = (np.cumsum(keep) - 1)[self.rows[sel]]
        out.vals = np.ascontiguousarray(self.vals[sel])
        out._slot = None
        return out


class Stamps(np.lib.mixins.NDArrayOperatorsMixin):
    """The windows' stamps (µs since the epoch; NaT: min int64) kept as int32 whole seconds
    from ``base`` (NaT: min int32): 4 bytes a window, not 8, where every stamp is a whole
    second within 2³¹ s of the first (SGLang's default stamps; Stamps.of decides).
    ``np.asarray`` gives the int64 stamps, and so do numpy's functions and operators
    (``ts % 1_000_000``); indexing by rows (a mask or positions) gives the Stamps of those
    rows, by a slice the int64 stamps of the slice."""

    __slots__ = ("base", "sec")
    NONE = np.iinfo(np.int32).min

    def __init__(self, base: int, sec: np.ndarray):
        self.base, self.sec = int(base), sec

    @classmethod
    def of(cls, ts: np.ndarray | None):
        """``ts`` as Stamps where they hold it exactly, else ``ts`` as it is (None, no stamp,
        a sub-second stamp, a span beyond 68 years)."""
        if ts is None or not len(ts):
            return ts
        base = None
        for lo, hi in _blocks(len(ts)):
            t = ts[lo:hi]
            t = t[t != NAT]
            if not len(t):
                continue
            if base is None:
                base = int(t[0])
            if (t % 1_000_000).any() or int(t.min()) - base < -(2**31 - 1) * 1_000_000 or \
                    int(t.max()) - base > (2**31 - 1) * 1_000_000:
                return ts
        if base is None:
            return ts
        sec = np.empty(len(ts), dtype=np.int32)
        for lo, hi in _blocks(len(ts)):
            t = ts[lo:hi]
            v = (t - base) // 1_000_000
            v[t == NAT] = cls.NONE
            sec[lo:hi] = v
        return cls(base, sec)

    def __len__(self) -> int:
        return len(self.sec)

    def __array__(self, dtype=None, copy=None):
        out = self.sec.astype(np.int64)
        none = self.sec == self.NONE
        out *= 1_000_000
        out += self.base
        out[none] = NAT
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, rows):
        if isinstance(rows, slice):
            return np.asarray(Stamps(self.base, self.sec[rows]))
        return Stamps(self.base, self.sec[rows])

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, Stamps) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    @property
    def dtype(self):
        return np.dtype(np.int64)

    @property
    def nbytes(self) -> int:
        return self.sec.nbytes


@dataclass
class Windows:
    """The decode windows of one run (every series, in line order) as the rate model sees
    them."""

    interval: int
    line: np.ndarray             # line numbers, ascending (int32 where they fit, else int64)
    ts: np.ndarray | None        # µs since the epoch, int64 (NaT: min int64), or None; or
                                 # Stamps (whole seconds, as int32) where they hold them
    series: np.ndarray
    r: np.ndarray                # printed #running-req
    b: np.ndarray                # mean batch size over the window
    a: np.ndarray                # accept length (NaN: none printed)
    y: np.ndarray                # wall time per iteration, ms (NaN: not derivable)
    x: PrefillWork               # n × N_X prefill work per iteration (a dense array given
                                 # is stored as a PrefillWork)
    why: np.ndarray              # int8, USED or why not
    spec: bool                   # the lines print an accept length
    steps_throughput: np.ndarray  # bool: the throughput counts sequence-steps (vLLM V0)
    rs: np.ndarray | None = None  # request-steps (vLLM: the window's drafts, exact)
    bvar: np.ndarray | None = None  # variance of b where the stamps measured it (> 0), from
                                    # the printed precision; 0 where b is the trapezoid B̃
    rp: np.ndarray | None = None    # the #running-req printed by the line before (NaN: none)
    nin: np.ndarray | None = None   # requests its own prefill lines admitted into a running
                                    # batch (#new-seq; not those of a drained one)
    svar: np.ndarray | None = None  # variance of the measured wall time Δt (ms²) from its two
                                    # stamps, where bvar > 0 (STAMP_VAR, FIELD_VAR, a wrapper's)
    clock_notes: tuple = ()         # what became of a wrapper's stamps (rate._said)
    labels: tuple = ()              # each series code's label 'dp|pp|attn_cp|moe_dp' ('vllm '
                                    # before a vLLM engine's), windows._series_codes
    lifetime: float | None = None   # requests' mean life in windows: Σ B̃ / the requests the
                                    # prefill lines admitted (None: not known; vLLM windows)
    vac: float | None = None        # vacancy(): computed once (None: not yet)
    req_accept: tuple | None = None  # (se of log accept length, df) over the Finish lines'
                                     # requests as independent units (None: none)
    _w: tuple | None = field(default=None, repr=False, compare=False)
                                    # (the b it was made of, w) while a fit runs: it reads w
                                    # dozens of times (rate._keeping_w); None otherwise

    def __post_init__(self):
        if not isinstance(self.x, PrefillWork):
            self.x = PrefillWork(self.x)

    @property
    def n(self) -> int:
        return len(self.line)

    def restrict(self, keep: np.ndarray) -> "Windows":
        keep = np.asarray(keep, dtype=bool)
        return Windows(self.interval, self.line[keep], None if self.ts is None else self.ts[keep],
                       self.series[keep], self.r[keep], self.b[keep], self.a[keep],
                       self.y[keep], self.x.restrict(keep), self.why[keep], self.spec,
                       self.steps_throughput[keep], None if self.rs is None else self.rs[keep],
                       None if self.bvar is None else self.bvar[keep],
                       None if self.rp is None else self.rp[keep],
                       None if self.nin is None else self.nin[keep],
                       None if self.svar is None else self.svar[keep], self.clock_notes,
                       self.labels, self.lifetime, self.vac, self.req_accept)

    @property
    def measured(self) -> np.ndarray | None:
        """Where the stamps measured the window's mean batch (None: nowhere)."""
        return None if self.bvar is None else self.bvar > 0

    @property
    def bycov(self) -> np.ndarray | None:
        """Covariance of a measured b's error with y's: both hold the window's two stamps
        (Δt = y × interval; ∂b/∂Δt = b/Δt, ∂y/∂Δt = 1/interval)."""
        if self.bvar is None:
            return None
        sv = STAMP_VAR if self.svar is None else self.svar     # (None: millisecond stamps)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.bvar > 0, self.b / (self.y * self.interval ** 2) * sv, 0.0)

    @property
    def w(self) -> np.ndarray:
        """Request-steps of each window: B̃ × decode_log_interval (SGLang), the window's drafts
        where the log gives them (vLLM)."""
        if self.rs is not None:
            return self.rs
        if self._w is not None and self._w[0] is self.b:
            return self._w[1]
        # (made where it is read, not kept: every window's, 29 MB a GB of log, for the rest of
        # a summary; the fit keeps it while it runs, rate._keeping_w)
        return self.b * self.interval


def _col(df: pd.DataFrame, name: str, dtype=float, na=np.nan) -> np.ndarray:
    """A column as a writable array of its own."""
    if name not in df.columns:
        return np.full(len(df), na, dtype=dtype)
    col = df[name]
    out = col.to_numpy(dtype=dtype, na_value=na)
    # (a numpy-backed column's array may be the frame's own: copied; an extension column's —
    # integers with NA, booleans, text — is converted into a new array already)
    if is_numpy_backed(col) or out.dtype != dtype or not out.flags.writeable:
        out = np.array(out, dtype=dtype, copy=True)
    return out


def _view(df: pd.DataFrame, name: str) -> np.ndarray:
    """A column as floats to read, not write: the frame's own array where it is one (a copy
    of millions of rows for nothing otherwise)."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return df[name].to_numpy(dtype=float, na_value=np.nan)


def _any_finite(df: pd.DataFrame, name: str) -> bool:
    """Whether the frame has the column and a finite value in it."""
    return name in df.columns and bool(np.isfinite(_view(df, name)).any())


# the decode columns decode_windows reads once the series are known (line_no … iter, also in
# _clocks and _wrapper_jitter): a copy of the frame (sorted, filtered) takes these only
READS = ("line_no", "running_req", "accept_len", "gen_throughput", "gen_throughput_steps",
         "timestamp", "line_timestamp", "wrapper_time", "drafts", "prompt_throughput", "iter")


def _reads(df: pd.DataFrame, extra: tuple = ()) -> pd.DataFrame:
    """The frame's columns READS (and ``extra``): a gigabyte log's decode frame holds a dozen,
    and a sort or a filter copies every column it has."""
    return df[[c for c in df.columns if c in READS or c in extra]]


BLOCK = 1 << 16         # rows an elementwise pass over millions of windows takes at a time


def _blocks(n: int):
    """(lo, hi) of the blocks of BLOCK rows that cover range(n): an elementwise pass a block at
    a time makes no n-length temporaries (each one page faults before it is arithmetic)."""
    for lo in range(0, n, BLOCK):
        yield lo, min(lo + BLOCK, n)


def decode_windows(decode: pd.DataFrame, prefill: pd.DataFrame, interval: int,
                   dp_attention: bool = False, consume: bool = False) -> Windows:
    """The windows of ONE run's decode lines (one source and start-up).  ``consume``: the
    frame is handed over (a single-use log's, breakeven.run_windows), and the columns the
    windows have copied leave it as soon as they are read: not alive beside the windows."""
    d = decode
    if len(d) and not d["line_no"].is_monotonic_increasing:
        d = _reads(d, SERIES_TAGS + ("tp", "part", "engine")).sort_values("line_no")
    if not is_plain_range(d):
        d = d.reset_index(drop=True)      # (a frame of 0 … n − 1 already: read as it is)
    n = len(d)
    (key, pkey), labels = _series_codes([d, prefill])
    key = np.asarray(key)                       # dense codes 0 … k − 1 (_series_codes)
    pkey = np.asarray(pkey)
    if n and "tp" in d.columns and d["tp"].notna().any():
        # several TP ranks printing one series: keep the lowest (windows.py does the same)
        keep = _lowest_tp(d["tp"].to_numpy(dtype=np.int64, na_value=-1), key)
        if keep is not None:
            d, key, n = _reads(d)[keep].reset_index(drop=True), key[keep], int(keep.sum())
        del keep
    line = d["line_no"].to_numpy(dtype=np.int64) if n else np.empty(0, np.int64)
    r = _col(d, "running_req")
    a = _col(d, "accept_len")
    a[a < 1] = np.nan            # below 1 is no accept length (a window with no verify: 0.00)
    g = _view(d, "gen_throughput")
    steps = _col(d, "gen_throughput_steps", dtype=object, na=False).astype(bool) \
        if "gen_throughput_steps" in d.columns else np.zeros(n, dtype=bool)
    ts = None
    if "timestamp" in d.columns and n:
        ts = d["timestamp"].to_numpy(dtype="datetime64[us]").view(np.int64)
    if consume:
        # (copied above, never read of the frame again: millions of rows each)
        _drop(d, ("running_req", "accept_len", "gen_throughput_steps", "tp", "part",
                  "engine") + SERIES_TAGS)
    why = np.zeros(n, dtype=np.int8)
    b = r.copy()
    rp = np.full(n, np.nan, dtype=np.float32)      # batch sizes: exact in float32
    nin = np.zeros(n, dtype=np.float32)
    pline = prefill["line_no"].to_numpy(dtype=np.int64) if len(prefill) else np.empty(0, np.int64)
    ptok = _col(prefill, "new_token", na=0.0) if len(prefill) else np.empty(0)
    ptok[~np.isfinite(ptok)] = 0.0
    # a Prefill line printing #running-req: 0 found no decode batch running (SGLang:
    # running_bs = len(self.running_batch.reqs)): the server sat idle before it, waiting for
    # the request, for a time no line prints.  Its own regressor takes the mean of that idle
    pdrain = (_col(prefill, "running_req", na=-1.0) == 0).astype(float) if len(prefill) \
        else np.empty(0)
    pseq = _col(prefill, "new_seq", na=1.0) if len(prefill) else np.empty(0)
    pseq[~np.isfinite(pseq)] = 1.0
    # (a prefill into a drained batch refilled no slot of running iterations: the server
    # idled, no iteration ran at a smaller batch)
    pjoin = pseq * (1 - pdrain)
    present = _present(key)
    nseries = len(present)
    admitted = 0.0          # requests the series' own prefill lines admitted (drained or not)
    held = []               # each series' windows that hold prefill work: (rows, x there)
    for s, idx in _series_rows(key, present):
        # (idx: the series' rows, a slice where they are contiguous, as they are when one
        # scheduler printed them all: views, not copies of millions of rows; nxt and prv the
        # rows after its first and before its last)
        first, nxt, prv = _ends(idx)
        why[first] = FIRST
        rs = r[idx]
        rp[nxt] = rs[:-1]
        _trapezoid(b, why, idx, rs)
        # prefill lines of this series (or of every rank, with DP attention) between its
        # previous decode line and this one (pm a slice: every line, without a copy)
        pm = slice(None) if dp_attention or nseries == 1 else pkey == s
        pl = pline[pm]
        if len(pl):
            at = np.searchsorted(line[idx], pl)
            inside = at < len(rs)
            at = at[inside]
            own = (pkey[pm] == s)[inside] if dp_attention and nseries > 1 else None
            u, inv = _distinct_rows(at)
            rows, vals = _prefill_rows(u, inv, len(rs), interval, ptok[pm][inside],
                                       pdrain[pm][inside])
            u = u + idx.start if isinstance(idx, slice) else idx[u]
            held.append((rows + idx.start if isinstance(idx, slice) else idx[rows], vals))
            join, seq = pjoin[pm][inside], pseq[pm][inside]
            if own is not None:
                inv, join, seq = inv[own], join[own], seq[own]
            nin[u] = np.bincount(inv, weights=join, minlength=len(u))
            admitted += float(seq.sum())
            del at, inside, inv, rows, vals
    rs = None
    has_drafts = _any_finite(d, "drafts")
    has_prompt = _any_finite(d, "prompt_throughput")
    x = _prefill_work(n, held)
    del held
    if has_drafts or has_prompt:
        # (vLLM's drafts or prompt throughput rework the prefill work below: dense, a column
        # at a time; elsewhere it stays kept by the rows that hold any, as the fit takes it)
        x = x.dense()
    for s, idx in _series_rows(key, present) if ts is not None else ():
        # idle gaps, a series at a time (each series' own rows: the order of the series
        # changes nothing)
        t = ts[idx]
        if len(t) <= 2 or (t == NAT).any():
            continue
        _, nxt, _ = _ends(idx)
        gap = np.empty(len(t) - 1)
        np.subtract(t[1:], t[:-1], out=gap, dtype=np.int64)   # (µs, exact, then as floats)
        gap /= 1e6
        med = median(gap)
        if not med > 0:
            continue
        sub = why[nxt]                 # (a view where nxt is a slice: written through)
        for lo, hi, peer in _gap_median_blocks(gap, r[nxt], med):
            _mark_idle(sub[lo:hi], gap[lo:hi], peer, med)
        if not isinstance(nxt, slice):
            why[nxt] = sub
        del gap, sub
    spec = bool(np.isfinite(a).any())
    # wall time per iteration, ms: 1000 × tokens per iteration (accept len × b; 1 × b without
    # speculation or where the throughput counts sequence-steps) / gen throughput, in place
    # (y the only n-length array made)
    y = np.where(np.isfinite(a) & ~steps, a, 1.0)
    y *= b
    y *= 1000.0
    with np.errstate(divide="ignore", invalid="ignore"):
        y /= g
    bad = ~((g > 0) & (b > 0) & np.isfinite(y))
    y[bad] = np.nan
    why[bad & (why == USED)] = NO_THROUGHPUT
    if spec:
        # a speculative run's window without a readable accept len (a damaged value: warned
        # when parsed) has no tokens per iteration: its wall time is not known, and taking
        # one token (a = 1) made it 2–3× too short
        lost = ~np.isfinite(a) & ~steps & ~bad
        y[lost] = np.nan
        why[lost & (why == USED)] = NO_ACCEPT
        del lost
    del bad
    bvar = svar = None
    clock_notes: tuple[str, ...] = ()
    if ts is not None and n and not has_drafts and not has_prompt:
        said: dict[str, list] = {}             # what became of a wrapper's stamps: _said
        clocks = _clocks(d, ts, key, said)
        if any(c[3] == "wrapper" for c in clocks):
            clocks = _wrapper_jitter(clocks, d, prefill, pkey, nseries, said)
        bvar, svar = _measured_batch(key, clocks, r, a, g, steps, interval, b, y, why, rp, x,
                                     nin, said)
        clock_notes = _said(said, nseries)
        clocks = None             # (views of the frame's stamps: they go below)
    if has_drafts or has_prompt:
        drafts = _col(d, "drafts")
        prompt = _col(d, "prompt_throughput")
    if has_drafts and len(pline):
        # windows of seconds (metrics-derived SGLang rows): the prefill work per iteration is
        # over the window's iterations (printed, or drafts / batch), not decode_log_interval
        its = _col(d, "iter") if "iter" in d.columns else None
        iters = np.where(np.isfinite(drafts) & (b > 0), drafts / np.where(b > 0, b, 1), interval)
        if its is not None:
            iters = np.where(np.isfinite(its) & (its > 0), its, iters)
        x[:, [0, 1, 4]] *= (interval / np.maximum(iters, 1e-9))[:, None]
        for _, idx in _series_rows(key):
            _, nxt, prv = _ends(idx)
            x[nxt, 2:4] = x[prv, :2]
    if has_drafts or has_prompt:
        # vLLM windows are seconds: request-steps are the window's drafts (exact), and the
        # prefill work is the prompt throughput: prompt tokens per iteration = prompt tok/s ×
        # the iteration's time (y ms)
        rs = np.where(np.isfinite(drafts) & (drafts > 0), drafts, b * interval)
        if ts is not None:
            _timed_steps(rs, key, ts, g, a, steps, drafts, prompt)
        vp = np.isfinite(prompt) & np.isfinite(y)
        x[vp, 0] = prompt[vp] * y[vp] / 1000.0
        for _, idx in _series_rows(key):
            _, nxt, prv = _ends(idx)
            x[nxt, 2] = x[prv, 0]
    life = None
    if rs is None and admitted > 0:
        ok = np.isfinite(b) & (b > 0)
        life = picked_sum(b, ok) / admitted if ok.any() else None
    g = None
    if consume:
        # (the rest of what is read of the frame: each column goes before the next compact
        # copy is made, so that no two of them — 29 MB each a GB of log — are alive beside the
        # windows at once: this was the peak of a gigabyte log's summary)
        _drop(d, ("gen_throughput", "drafts", "prompt_throughput", "iter", "line_timestamp",
                  "wrapper_time"))
    if len(line) and -(1 << 31) <= int(line[0]) and int(line[-1]) < 1 << 31 and \
            line.dtype == np.int64:
        # (ascending: the first and last bound them.  Int32 where they fit, as every log's
        # line numbers below 2³¹ do: 4 bytes a window, and not a view that keeps the decode
        # table's own column alive after the table goes)
        line = line.astype(np.int32)
        if consume:
            _drop(d, ("line_no",))
    stamps = Stamps.of(ts)
    ts = None
    if consume:
        _drop(d, ("timestamp",))
    if not steps.any():
        # (no window counts sequence-steps: every SGLang and vLLM V1 log; one False for all,
        # read-only, not a byte a window)
        steps = np.broadcast_to(np.False_, (len(steps),))
    return Windows(interval, line, stamps, key, r, b, a, y, x, why, spec, steps, rs,
                   bvar, rp, nin, svar, clock_notes, tuple(labels), life)


def _drop(d: pd.DataFrame, names: tuple) -> None:
    """The columns ``names`` out of a frame handed over (decode_windows' ``consume``)."""
    for c in names:
        if c in d.columns:
            del d[c]


def _mark_idle(why: np.ndarray, gap: np.ndarray, peer: np.ndarray, med: float) -> None:
    """IDLE, in place, on the windows of a series (``why`` of its rows after the first) whose
    gap is far longer than the series' windows and longer than its own batch size's: gap >
    IDLE_FACTOR × med, ≥ med + IDLE_EXTRA_S, > IDLE_PEER_FACTOR × peer and ≥ peer +
    IDLE_EXTRA_S (``_gap_medians``), where no other reason but a batch size jump holds."""
    for lo, hi in _blocks(len(gap)):
        g, p, w = gap[lo:hi], peer[lo:hi], why[lo:hi]
        idle = g > IDLE_FACTOR * med
        idle &= g >= med + IDLE_EXTRA_S
        idle &= g > IDLE_PEER_FACTOR * p
        idle &= g >= p + IDLE_EXTRA_S
        idle &= (w == USED) | (w == JUMP)
        np.putmask(w, idle, IDLE)


def _lowest_tp(tp: np.ndarray, key: np.ndarray) -> np.ndarray | None:
    """The rows of each series' lowest TP rank (``tp``: −1 where none printed), or None when
    that is every row (one rank printing: no mask, no copy of the frame)."""
    if len(key) and int(key.min()) == int(key.max()):
        low = tp.min()          # (one series: no per-series minimum over millions of rows)
        if low == tp.max():
            return None
        return tp == low
    low = np.full(int(key.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(low, key, tp)
    keep = tp == low[key]
    return None if keep.all() else keep


def _trapezoid(b: np.ndarray, why: np.ndarray, idx, rs: np.ndarray) -> None:
    """For one series' rows ``idx`` (its printed #running-req ``rs``), in place: b the mean of
    the #running-req the window's two lines print (its first row keeps its own), and why JUMP
    where the batch size moved by JUMP_SHARE or more between them."""
    bs, ws = b[idx], why[idx]           # (views where idx is a slice: written through)
    for lo, hi in _blocks(len(rs) - 1):
        # the pairs (row j, row j + 1) of the block: prev and cur
        prev, cur = rs[lo:hi], rs[lo + 1:hi + 1]
        out = bs[lo + 1:hi + 1]
        np.add(cur, prev, out=out)
        out /= 2
        with np.errstate(invalid="ignore"):
            jump = np.abs(cur - prev) >= JUMP_SHARE * np.maximum(cur, prev)
        w = ws[lo + 1:hi + 1]
        jump &= w == USED
        np.putmask(w, jump, JUMP)       # (a random mask: putmask is 4× a masked copy's speed)
    if not isinstance(idx, slice):
        b[idx], why[idx] = bs, ws


def _distinct_rows(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(at, return_inverse=True): the decode rows the prefill lines come before,
    each once, and each line's place among them — by a pass over ``at`` where the lines are
    in line order (as a log's are: ``at`` is ascending), not a sort."""
    if len(at) and (at[1:] >= at[:-1]).all():
        new = np.empty(len(at), dtype=bool)
        new[0] = True
        np.not_equal(at[1:], at[:-1], out=new[1:])
        inv = np.cumsum(new)
        inv -= 1
        return at[new], inv
    return np.unique(at, return_inverse=True)


def _prefill_rows(u: np.ndarray, inv: np.ndarray, m: int, interval: int, tok: np.ndarray,
                  drain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prefill work of one series' m windows, by the rows that can hold any: ``u`` the
    rows prefill lines come before (ascending), ``inv`` each line's place in u, ``tok`` and
    ``drain`` the lines' #new-token and drained flag.  Columns 0, 1, 4 (tokens, batches,
    drained batches per iteration) are the window's own lines, columns 2–3 the window
    before's 0–1: the rows are u and the row after each.  As (those rows, their values,
    rows × N_X) — the rows of the dense matrix that is zero elsewhere, each sum the same
    additions in the same order as np.bincount over every row made."""
    cols = []
    for w in (tok, None, drain):
        v = np.bincount(inv, weights=w, minlength=len(u)).astype(float, copy=False)
        v /= interval
        cols.append(v)
    # u_j's row is followed by u_j + 1's: a row of its own, unless it is u_{j+1} (or past the
    # series' last row); so u_j's place among the rows is j + the rows of its own before it
    after = u < m - 1
    extra = after.copy()
    extra[:-1] &= u[1:] != u[:-1] + 1
    at = np.arange(len(u))
    at[1:] += np.cumsum(extra[:-1])
    rows = np.empty(len(u) + int(extra.sum()), dtype=np.intp)
    rows[at] = u
    rows[at[extra] + 1] = u[extra] + 1
    vals = np.zeros((len(rows), N_X))
    for c, v in zip((0, 1, 4), cols):           # (a column at a time: 2× whole rows' speed)
        vals[at, c] = v
    at = at[after] + 1
    vals[at, 2], vals[at, 3] = cols[0][after], cols[1][after]
    return rows, vals


def _prefill_work(n: int, held: list) -> "PrefillWork":
    """The run's PrefillWork from each series' (rows, values) (``_prefill_rows``): the rows in
    order, those all zero left out — what PrefillWork of the dense matrix keeps, without the
    n × N_X matrix (40 bytes a window)."""
    if not held:
        return PrefillWork.of_rows(n, np.empty(0, dtype=np.intp), np.zeros((0, N_X)))
    rows, vals = held[0]
    if len(held) > 1:                    # (series interleaved in line order)
        rows = np.concatenate([h[0] for h in held])
        vals = np.concatenate([h[1] for h in held])
        order = np.argsort(rows, kind="stable")
        rows, vals = rows[order], vals[order]
    # vals.any(axis=1), a column at a time (faster on 5 columns; a NaN counts as held: the
    # dense matrix's products carry it)
    keep = vals[:, 0] != 0
    for c in range(1, N_X):
        keep |= vals[:, c] != 0
    if not keep.all():
        rows, vals = rows[keep], vals[keep]
    return PrefillWork.of_rows(n, rows, vals)


SUPPRESSED = 1.5       # a vLLM window over this × its series' median length followed a line


def _timed_steps(rs, key, ts, g, a, steps, drafts, prompt) -> None:
    """Request-steps, in place, of the vLLM windows without a draft count (no spec line): the
    window's tokens, throughput × its seconds (the time since the series' line before), over
    the tokens one request-step gives (a; 1 without speculation or where the throughput counts
    sequence-steps, V0) — not a nominal decode_log_interval of iterations.  vLLM prints the
    throughput over the time since its previous log (vllm.md §3.3); a line after a gap of
    over SUPPRESSED × the series' median (the lines between demoted to DEBUG: two windows
    without tokens) covers one interval, the median; the first window of a series, whose
    start is unknown, too."""
    todo = np.isfinite(prompt) & ~(np.isfinite(drafts) & (drafts > 0))
    if not todo.any():
        return
    per = np.where(np.isfinite(a) & ~steps, a, 1.0)
    for _, idx in _series_rows(key):
        t = ts[idx]
        if len(t) < 2 or (t == NAT).any():
            continue
        dur = np.empty(len(t))
        dur[1:] = np.diff(t) / 1e6
        pos = dur[1:][dur[1:] > 0]
        if not len(pos):
            continue
        med = float(np.median(pos))
        dur[0] = med
        dur[(dur <= 0) | (dur > SUPPRESSED * med)] = med
        sub = rs[idx]
        v = g[idx] * dur / per[idx]
        m = todo[idx] & np.isfinite(v)
        sub[m] = v[m]
        rs[idx] = sub


def _present(key: np.ndarray) -> np.ndarray:
    """The series codes present in ``key`` (dense codes), ascending (one series, the usual
    log: no count of millions of rows)."""
    if not len(key):
        return np.empty(0, np.int64)
    lo = int(key.min())
    if lo == int(key.max()):
        return np.array([lo], dtype=np.int64)
    return np.flatnonzero(np.bincount(key))


def _series_rows(key: np.ndarray, present: np.ndarray | None = None):
    """(code, rows) of each series present in ``key`` (dense codes), in code order; rows a
    slice where the series' rows are contiguous, else their positions."""
    if present is None:
        present = _present(key)
    for s in present:
        if len(present) == 1:
            yield int(s), slice(0, len(key))
            continue
        idx = np.flatnonzero(key == s)
        run = contiguous(idx)
        yield int(s), idx if run is None else run


def _ends(idx):
    """(the first row, the rows after it, the rows before the last) of a series' rows."""
    if isinstance(idx, slice):
        return idx.start, slice(idx.start + 1, idx.stop), slice(idx.start, idx.stop - 1)
    return idx[0], idx[1:], idx[:-1]


def _gap_medians(gap: np.ndarray, r: np.ndarray, med: float) -> np.ndarray:
    """The wall time a window of its batch size usually takes: the median gap of the windows
    printing the same #running-req (at least IDLE_PEERS of them), else the series' median
    scaled by its batch over the median batch (at least 1×): a window's time grows with the
    cycle, and the cycle with the batch size — the series' median alone took every window of a
    slow high-batch level for an idle gap (a 7-step run at 2 → 8 → 16 requests lost its 16).
    ``med``: the series' median gap.  Where the gaps are whole seconds (SGLang's default
    stamps), the medians are counted from one histogram of (#running-req, gap)
    (``_peer_counts``): the same numbers, without sorting millions of windows by batch size."""
    out = np.empty(len(gap))
    for lo, hi, ob in _gap_median_blocks(gap, r, med):
        out[lo:hi] = ob
    return out


def _gap_median_blocks(gap: np.ndarray, r: np.ndarray, med: float):
    """_gap_medians a block of windows at a time: (lo, hi, the block's medians); where the
    medians come from the histogram (whole seconds), no array of every window's is made."""
    ok = np.isfinite(r) & (r > 0)
    fill = med if len(gap) else 0.0
    if not ok.any():
        for lo, hi in _blocks(len(gap)):
            yield lo, hi, np.full(hi - lo, fill)
        return
    counts = _peer_counts(gap, r, ok)
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

    def block(lo, hi):
        ob, okb, rb = np.full(hi - lo, fill), ok[lo:hi], r[lo:hi]
        # out × max(1, r / r_med) where ok, else out
        f = np.where(okb, rb, 1.0)
        f /= r_med
        np.maximum(1.0, f, out=f)
        np.multiply(ob, f, out=f)
        np.copyto(ob, f, where=okb)
        if peers is not None:
            p = peers[np.where(okb, rb, 0.0).astype(np.intp)]
            np.copyto(ob, p, where=~np.isnan(p))
        return ob
    if peers is not None:
        for lo, hi in _blocks(len(gap)):
            yield lo, hi, block(lo, hi)
        return
    # (the medians of each batch size's gaps by selection: every window's array it is)
    out = np.empty(len(gap))
    for lo, hi in _blocks(len(gap)):
        out[lo:hi] = block(lo, hi)
    for v, sel in _by_value(np.where(ok, r, -1.0)):
        if v > 0 and len(sel) >= IDLE_PEERS:
            out[sel] = median(gap[sel], scratch=True)
    for lo, hi in _blocks(len(gap)):
        yield lo, hi, out[lo:hi]


PEER_BINS = 1 << 22     # (#running-req, gap) counts _peer_counts makes at most (32 MiB)


def _peer_counts(gap: np.ndarray, r: np.ndarray, ok: np.ndarray) -> np.ndarray | None:
    """counts[v, s]: how many windows printing #running-req v (0: ``ok`` false) took a gap of
    s seconds — where every gap is a whole number of seconds and every batch size ok a whole
    number, in at most PEER_BINS counts; None otherwise."""
    if not small_ints(gap):
        return None
    top = 0.0
    for lo, hi in _blocks(len(r)):
        rb = np.where(ok[lo:hi], r[lo:hi], 0.0)
        if not (rb == np.floor(rb)).all():
            return None
        top = max(top, float(rb.max()))
    width = int(gap.max()) + 1
    if (top + 1) * width > PEER_BINS:
        return None

    def code(lo, hi):                   # v × width + s (exact: below PEER_BINS)
        cb = np.where(ok[lo:hi], r[lo:hi], 0.0)
        cb *= width
        cb += gap[lo:hi]
        return cb.astype(np.intp)
    return _bincount(code, len(gap), (int(top) + 1) * width).reshape(-1, width)


def _bincount(code, n: int, size: int) -> np.ndarray:
    """np.bincount(codes, minlength=size) of n rows' codes (``code(lo, hi)``: rows lo … hi − 1,
    each below size), a block at a time — each block at least as long as the counts, so that
    adding them up costs no more than counting: no n-length array of codes."""
    out = np.zeros(size, dtype=np.intp)
    step = max(BLOCK, size)
    for lo in range(0, n, step):
        out += np.bincount(code(lo, min(lo + step, n)), minlength=size)
    return out


def _counted_median(counts: np.ndarray) -> float:
    """The median of the values 0, 1, 2, … each occurring ``counts`` times (not all 0): the
    mean of the order statistics (n − 1) // 2 and n // 2, as np.median takes them."""
    cum = np.cumsum(counts)
    n = int(cum[-1])
    lo = int(np.searchsorted(cum, (n - 1) // 2, side="right"))
    hi = int(np.searchsorted(cum, n // 2, side="right"))
    return (lo + hi) / 2


def _by_value(k: np.ndarray):
    """(value, positions) of each distinct value of ``k``, ascending, the positions ascending:
    one stable sort, not a pass over every row per value (printed batch sizes and strata are
    small integers: as int16 the stable sort is a radix sort, one pass instead of a merge sort
    of millions of floats)."""
    if not len(k):
        return
    order = np.argsort(k.astype(np.int16) if small_ints(k, 32767, signed=True) else k,
                       kind="stable")
    ks = k[order]
    del k                   # (the keys and their sorted copy: millions of rows each)
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    vals, ends = ks[starts], np.r_[starts[1:], len(ks)]
    del ks
    for v, a_, b_ in zip(vals, starts, ends):
        yield v, order[a_:b_]


def _clocks(d: pd.DataFrame, ts: np.ndarray, key: np.ndarray, said: dict) -> list:
    """The finest clock each series' decode lines carry: the prefix's own where it prints
    milliseconds (SGLANG_LOG_MS=1, v0.5.6 →: 'ms'); where it prints whole seconds, the
    'timestamp:' field of v0.4.9.post1 – post2 (µs, SGLang's own clock: 'field'), else a
    wrapper's sub-second time in front of the prefix (docker logs --timestamps, a Kubernetes
    log file, a collector: 'wrapper'), when every line of the series has one.  As (series,
    rows, µs stamps, kind, the variance of the difference of two of its stamps in ms²: None
    for a wrapper's, still to be measured).  A series with none of these is left out (whole
    seconds)."""
    alts = []
    for name, kind in (("line_timestamp", "field"), ("wrapper_time", "wrapper")):
        if name in d.columns:
            alts.append((d[name].to_numpy(dtype="datetime64[us]").view(np.int64), kind))
    out = []
    for s, idx in _series_rows(key):
        t = ts[idx]
        if len(t) < 3:
            continue
        if _sub_second(t):
            out.append((s, idx, t, "ms", STAMP_VAR))
            continue
        for alt, kind in alts:
            t = alt[idx]
            if _sub_second(t):
                out.append((s, idx, t, kind, FIELD_VAR if kind == "field" else None))
                break
            if kind == "wrapper" and (t != NAT).any():
                said.setdefault("only some of the decode lines carry one", []).append(s)
    return out


def _sub_second(t: np.ndarray) -> bool:
    """Whether every line has its stamp (µs, NaT: NAT) and some stamp is not a whole second."""
    if (t == NAT).any():
        return False
    # (a block at a time, stopping at the first: no n-length remainders)
    return any((t[lo:hi] % 1_000_000).any() for lo, hi in _blocks(len(t)))


def _said(said: dict, nseries: int) -> tuple[str, ...]:
    """Notes of what became of a wrapper's stamps: where they timed the windows, how their
    delays were measured; where not, why (so that the whole-second note does not advise a
    clock the log has)."""
    def where(series):
        return "" if nseries == 1 else f" ({len(series)} of {nseries} series)"
    notes = []
    used = said.pop("", [])
    if used:
        how = "; ".join(sorted({h for _, h in used}))
        notes.append(f"a wrapper's stamps (docker or Kubernetes) timed each decode window, so "
                     f"its mean batch is measured{where(used)}: {how}")
    for why, series in said.items():
        notes.append(f"a wrapper's stamps (docker or Kubernetes) were not used for the mean "
                     f"batch{where(series)}: {why}")
    return tuple(notes)


def _spread(z: np.ndarray) -> float:
    """The variance of ``z`` about its median, gross outliers (over 10 robust σ and 1 ms from
    it: a stamp held up once) left out: a second moment, as the error model needs, not a
    robust scale (the difference of two exponential delays has a MAD-based σ² about half its
    variance)."""
    dev = z - np.median(z)
    mad = 1.4826 * float(np.median(np.abs(dev)))
    keep = np.abs(dev) <= max(10 * mad, 1.0)
    return float(np.mean(dev[keep] ** 2))


def _wrapper_jitter(clocks: list, d: pd.DataFrame, prefill: pd.DataFrame, pkey, nseries: int,
                    said: dict) -> list:
    """Each wrapper-stamped series' clock with the variance of the difference of two of its
    stamps (ms²), measured on its ``Prefill batch`` lines, or dropped when it cannot be.

    A wrapper stamps a line when the line reaches it, some time after SGLang wrote it; what
    matters is the variance of the difference of two such delays, which the decode windows'
    measured batch inherits (and the fit's errors-in-variables correction divides out: an
    assumed 2 ms² where the truth was 0.18 moved the simulated cycle by +0.24 %).  The prefill
    lines measure it: from v0.5.9 each prints `input throughput` = a batch's #new-token over
    the time SGLang's own clock (``time.perf_counter``) saw since the previous prefill line —
    the previous batch's tokens (``managers/scheduler_metrics_mixin.py`` ``log_prefill_stats``:
    ``last_input_throughput = last_prefill_tokens / gap_latency``, then ``last_prefill_tokens =
    adder.log_input_tokens``; v0.5.10's ``report_prefill_stats`` the same, docs/simulation.md
    §1), not this batch's as ../shared/formats/sglang.md §4.2 says; both are tried, and the one
    the stamps agree with is taken.  So the wrapper's gap between two prefill lines less that
    time is the difference of their two delays.  With no usable prefill lines (older releases
    print no throughput) the variance comes from the windows the lines pin
    (``_measured_batch``); with neither, the series keeps its whole-second trapezoid.  Stamps
    that go backwards in line order are not a wrapper's reading of the lines (logs merged or
    reordered; a pair swapped every 11 lines moved the cycle out of its interval): not used.
    What became of them is put in ``said`` (``_said``)."""
    have = "wrapper_time" in prefill.columns and "input_throughput" in prefill.columns and \
        len(prefill)
    if have:
        pw = prefill["wrapper_time"].to_numpy(dtype="datetime64[us]").view(np.int64)
        thr = _col(prefill, "input_throughput")
        tok = _col(prefill, "new_token")
    pl = prefill["line_no"].to_numpy(dtype=np.int64) if have else None
    dl = d["line_no"].to_numpy(dtype=np.int64)
    out = []
    for s, idx, t, kind, var in clocks:
        if kind == "wrapper":
            at = (np.flatnonzero(pkey == s) if nseries > 1 else np.arange(len(pw))) if have \
                else np.empty(0, np.int64)
            # a wrapper reads the lines in order: stamps that go backwards are not its own
            # (logs merged or reordered); a pair swapped moved the cycle out of its interval
            lines = np.concatenate([dl[idx], pl[at]]) if have else dl[idx]
            stamps = np.concatenate([t, pw[at]]) if have else t
            order = np.argsort(lines, kind="stable")
            seq, at_line = stamps[order], lines[order]
            known = seq != NAT
            seq, at_line = seq[known], at_line[known]
            back = np.flatnonzero(np.diff(seq) < 0)
            if len(back):
                said.setdefault(f"they go backwards ({len(back):,} time"
                                f"{'s' * (len(back) != 1)}, first at line "
                                f"{int(at_line[back[0] + 1]):,}), which a wrapper reading the "
                                "lines in order does not do", []).append(s)
                continue
            if have:
                var = _prefill_jitter(pw[at], thr[at], tok[at])
                if var is not None:
                    var = (var, f"their delays measured on {len(at):,} prefill lines against "
                                "SGLang's own clock (input throughput): σ of a difference "
                                f"{math.sqrt(var):.2f} ms")
        out.append((s, idx, t, kind, var))
    return out


def _prefill_jitter(pw: np.ndarray, thr: np.ndarray, tok: np.ndarray) -> float | None:
    """The variance (ms²) of wrapper stamp differences against SGLang's clock, from consecutive
    prefill lines (``_wrapper_jitter``); None with fewer than PINNED_LEAST pairs, or when
    neither reading of the throughput agrees with the stamps (median off by over 5 ms or a
    spread over 1 % of the gaps: the wrapper is not the lines' clock)."""
    ok = (pw[1:] != NAT) & (pw[:-1] != NAT) & (thr[1:] > 0) & np.isfinite(tok[1:]) & \
        np.isfinite(tok[:-1])
    if ok.sum() < PINNED_LEAST:
        return None
    W = (pw[1:] - pw[:-1])[ok].astype(float) / 1000.0         # ms
    th = thr[1:][ok]
    best = None
    for n in (tok[:-1][ok], tok[1:][ok]):
        G = 1000.0 * n / th
        z = W - G
        spread = _spread(z)
        v = max(spread - float(np.mean((G * PRINTED_STEP / th) ** 2 / 12)), 0.0)
        if abs(float(np.median(z))) <= 5.0 and spread <= (0.01 * float(np.median(G))) ** 2 and \
                (best is None or v < best):
            best = v
    return best


def _measured_batch(key, clocks, r, a, g, steps, interval, b, y, why, rp, x, nin, said):
    """Where a series' timestamps have sub-second resolution (``_clocks``: SGLang with
    SGLANG_LOG_MS=1, the 'timestamp:' field, a wrapper's stamps), the mean batch of each window is
    measured instead of approximated: the window's tokens are
    gen throughput × its wall time (the time between this line and the one before: SGLang
    resets the throughput's clock, ``last_decode_stats_tic``, when it prints a decode line),
    its request-steps are tokens / accept len (tokens without speculation), and the mean batch
    is request-steps / decode_log_interval.  Overwrites b and y (y = wall / interval) there.
    A series whose measured batches do not agree with the printed
    #running-req (median ratio off by over 3 %: a wrong decode_log_interval, a log whose
    clock is not the throughput's) keeps the trapezoid.

    The measured batch carries the rounding of what it is computed from: accept len and gen
    throughput to 2 decimals (uniform errors, variance 0.01² / 12) and the two stamps: two
    millisecond stamps that logging truncates (variance 2 / 12 ms², STAMP_VAR), two µs stamps
    (FIELD_VAR), or two wrapper stamps, taken when each line reached the wrapper: the variance
    the prefill lines measured (``_wrapper_jitter``) or the windows whose batch the lines pin
    (no prefill line in them or in the window before, the same #running-req at both ends: the
    mean batch is that number), the larger; a wrapper series with neither keeps the
    trapezoid.  Returns (that variance of b per window, the stamps' variance of Δt per window),
    0 where b stays the trapezoid, or (None, None) when no window was measured; the fit
    corrects its normal equations for them (``Windows.bycov``, ``_eiv``)."""
    if not clocks:
        return None, None
    bvar = np.zeros(len(key))
    svar = np.zeros(len(key))
    for s, idx, t, kind, var in clocks:
        dt = np.diff(t).astype(float) / 1000.0          # ms
        _, j, prv = _ends(idx)
        spec_tok = np.isfinite(a[j]) & ~steps[j]
        per_tok = np.where(spec_tok, a[j], 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            bm = g[j] * dt / 1000.0 / per_tok / interval
            lo = np.minimum(r[j], r[prv])
            hi = np.maximum(r[j], r[prv])
            ok = np.isfinite(bm) & (bm > 0) & (dt > 0) & (g[j] > 0) & \
                (bm >= 0.5 * lo) & (bm <= 1.5 * hi + 0.5)
        if ok.sum() < 3:
            if kind == "wrapper":
                said.setdefault("fewer than 3 windows could be timed", []).append(s)
            continue
        # the check against a wrong decode_log_interval or a clock that is not the
        # throughput's (factors, not per cents): on the windows the lines pin (the same
        # #running-req at both ends, no request admitted into the running batch), where the
        # trapezoid is the mean batch, within 3 %; without ten of them, on every window within
        # 10 % (a slot a think time keeps empty puts the mean batch below the trapezoid: four
        # clients thinking 30 ms, 0.970 at the median, and the trapezoid took the cycle 0.7 %
        # low)
        pin = ok & (r[j] == r[prv])
        if nin is not None:
            pin &= nin[j] == 0
        # (a wrapper's stamps keep 3 % on every window: a collector that stamps lines when it
        # flushes them is off by a few per cent, and its other checks come later)
        sel, tol = (pin, MEASURED_TOL) if pin.sum() >= 10 else \
            (ok, MEASURED_TOL if kind == "wrapper" else MEASURED_TOL_ALL)
        ratio = bm[sel] / np.where(b[j][sel] > 0, b[j][sel], np.nan)
        med = float(np.nanmedian(ratio))
        if not (1 - tol <= med <= 1 + tol):
            if kind == "wrapper":
                said.setdefault(f"the mean batches they give are {med - 1:+.1%} off the "
                                "printed #running-req (median): not the lines' clock",
                                []).append(s)
            continue
        with np.errstate(divide="ignore"):      # gen throughput 0.00: no ok window (g > 0)
            rounding = PRINTED_STEP ** 2 / 12 * ((1 / g[j]) ** 2 + np.where(
                spec_tok, 1 / per_tok, 0.0) ** 2)
        sv, how = var if isinstance(var, tuple) else (var, None)
        if kind == "wrapper":
            # windows whose batch the lines pin: the same #running-req at both ends and no
            # prefill line inside or in the window before (no request joined, so none
            # finished; an overlap scheduler's prefill printed before the line before cannot
            # have joined either): their mean batch is r, and (bm / r − 1) × Δt is the stamps'
            # error of Δt, plus the rounding's
            pinned = ok & (r[j] == rp[j]) & (_xcol(x, 1, j) == 0) & (_xcol(x, 3, j) == 0) & \
                (nin[j] == 0) & (r[j] > 0)
            if pinned.sum() >= PINNED_LEAST:
                z = (bm[pinned] / r[j][pinned] - 1) * dt[pinned]
                v = max(_spread(z) - float(np.mean(rounding[pinned] * dt[pinned] ** 2)), 0.0)
                if sv is None or v > sv:
                    sv, how = v, (f"their delays measured on {int(pinned.sum()):,} windows "
                                  "whose batch the lines pin: σ of a difference "
                                  f"{math.sqrt(v):.2f} ms")
            if sv is None:
                said.setdefault("their delays could not be measured (no prefill line prints "
                                "input throughput, v0.5.9 →, and fewer than "
                                f"{PINNED_LEAST} windows hold a batch the lines pin)",
                                []).append(s)
                continue
            limit = JITTER_LIMIT * float(np.median(dt[ok]))
            if sv > limit ** 2:
                # not a clock of the lines (a collector that stamps a batch of lines when it
                # flushes, a loaded daemon): the trapezoid stays
                said.setdefault(f"they time a window to ±{math.sqrt(sv) / limit * JITTER_LIMIT:.1%}"
                                f" (σ of a difference {math.sqrt(sv):.1f} ms), more than "
                                f"±{JITTER_LIMIT:.1%}", []).append(s)
                continue
            said.setdefault("", []).append((s, how))
        jj = np.flatnonzero(ok) + j.start if isinstance(j, slice) else j[ok]
        b[jj] = bm[ok]
        y[jj] = dt[ok] / interval
        bvar[jj] = bm[ok] ** 2 * (rounding[ok] + sv / dt[ok] ** 2)
        svar[jj] = sv
        sub = why[jj]
        sub[sub == JUMP] = USED          # the window's mean batch is known
        why[jj] = sub
    return (bvar, svar) if bvar.any() else (None, None)


def _xcol(x, c: int, rows) -> np.ndarray:
    """Column c of the prefill work ``x`` (dense, or a PrefillWork) at ``rows``."""
    return x.col(c, rows) if isinstance(x, PrefillWork) else x[rows, c]


def whole_seconds(win: Windows, rows: np.ndarray) -> bool:
    """Whether the SGLang decode lines of ``rows`` are stamped in whole seconds (SGLang's
    default; SGLANG_LOG_MS=1 adds milliseconds, v0.5.6 →)."""
    if win.ts is None or win.rs is not None or not rows.any():
        return False
    rows = np.asarray(rows)
    if isinstance(win.ts, Stamps):
        # (every stamp a whole second: whether any of these rows has one)
        sec = win.ts.sec
        if rows.dtype != bool:
            return bool((sec[rows] != Stamps.NONE).any())
        return any(bool((sec[s:s + (1 << 16)][rows[s:s + (1 << 16)]] != Stamps.NONE).any())
                   for s in range(0, win.n, 1 << 16))
    if rows.dtype != bool:                  # (positions)
        t = win.ts[rows]
        t = t[t != NAT]
        return bool(len(t)) and not (t % 1_000_000).any()
    seen = False
    for s in range(0, win.n, 1 << 16):      # (a block at a time: a sub-second stamp ends it)
        t = win.ts[s:s + (1 << 16)][rows[s:s + (1 << 16)]]
        t = t[t != NAT]
        if (t % 1_000_000).any():
            return False
        seen = seen or bool(len(t))
    return seen


def small_ints(v: np.ndarray, limit: int = 1 << 20, signed: bool = False) -> bool:
    """Whether every value of the (non-empty) array is an integer below ``limit`` and
    not negative (``signed``: at least −1, the stand-in for none): printed batch sizes, which
    counting (or a radix sort) handles in one pass where sorting millions of floats takes
    many."""
    if not (bool(len(v)) and v.min() >= (-1 if signed else 0) and v.max() < limit):
        return False
    for s in range(0, len(v), 1 << 16):        # (a block at a time: no n-length temporaries)
        c = v[s:s + (1 << 16)]
        if not (c == np.floor(c)).all():
            return False
    return True


SORT_MEDIAN = 2048      # a median of at most this many values by a sort (median)


def median(v: np.ndarray, scratch: bool = False) -> float:
    """np.median of finite values, the same number; of small non-negative integers (printed
    batch sizes) by counting them: a selection among millions of repeated values is slow.
    ``scratch``: ``v`` is the caller's own copy, which the selection may reorder."""
    n = len(v)
    if 0 < n <= SORT_MEDIAN:
        # a short series (a small log's windows): its middle one or two after a sort — what
        # np.median takes and averages, (a + b) / 2, without its machinery (~40 µs a call)
        s = np.sort(v)
        if not np.isnan(s[-1]):
            h = n // 2
            return float(s[h]) if n % 2 else float((s[h - 1] + s[h]) / 2)
    if not small_ints(v):
        return float(np.median(v, overwrite_input=scratch))
    return _counted_median(_bincount(lambda lo, hi: v[lo:hi].astype(np.intp), n,
                                     int(v.max()) + 1))


def distinct(v: np.ndarray, counts: bool = False):
    """np.unique(v) (with ``counts``: and how often each occurs) of finite values; printed
    batch sizes (small non-negative integers) by counting, not by sorting millions of them."""
    if small_ints(v):
        n = np.bincount(v.astype(np.int64))
        at = np.flatnonzero(n)
        return (at.astype(v.dtype), n[at]) if counts else at.astype(v.dtype)
    return np.unique(v, return_counts=counts)


MIN_VACANCY_PAIRS = 20   # joins beyond the rise a vacancy is measured from


MEASURED_TOL = 0.03      # measured / printed batch, median over pinned windows (_measured_batch)


MEASURED_TOL_ALL = 0.10  # … over every window, where fewer than ten are pinned
