"""Every worker count from 1 to 8 gives the sequential scan's tables and diagnostics (issue 13).

CI has two cores, so the default worker count there merges two ranges: one Column.absorb per
column.  A workstation merges up to eight, and the second absorb once failed with MemoryError
(the column spanned two mappings after the first, and mremap moves one at a time).  The worker
count is set through EAGLELOG_WORKERS, as a user would; the scan runs in threads, so eight
workers run on two cores too.

- At the real sizes: one log of 1.1 million short decode lines (67 MB, generated once per
  session), where every range of eight holds more than 131,072 rows, so every absorb of its
  8-byte columns moves pages (Column.absorb's 1 MiB threshold) and the parse is the default one
  (no threshold lowered).
- On small logs that look like real ones (prefixes, prefill lines, access lines, profile blocks,
  a start-up line, request lines), with the parallel threshold and the absorb threshold lowered
  so that every column of every range takes the page-moving path.
- Diagnostics past MAX_KEPT of a kind: the same list, the same counts (overview, JSON overview,
  stderr) for every worker count.
- A line longer than sources.MAX_LINE (16 MiB): the sequential rule, whatever the worker count.
"""
import datetime as dt
import json
import random

import numpy as np
import pandas as pd
import pytest

import eaglelog
from eaglelog.io import parallel
from eaglelog.parsers import scan
from eaglelog.io.sources import MAX_LINE
from conftest import CANON, SAMPLES

WORKERS = range(2, 9)


def parse(path, monkeypatch, workers, **kw):
    monkeypatch.setenv("EAGLELOG_WORKERS", str(workers))
    return eaglelog.parse(path, **kw)


def assert_frames_equal(a, b, obj):
    """pandas.testing.assert_frame_equal(check_categorical=False), with categories compared by
    their codes over a common category list (pandas compares a million labels one by one)."""
    assert list(a.columns) == list(b.columns), obj
    pd.testing.assert_index_equal(a.index, b.index, obj=obj)
    for c in a.columns:
        x, y = a[c], b[c]
        if isinstance(x.dtype, pd.CategoricalDtype):
            assert isinstance(y.dtype, pd.CategoricalDtype), (obj, c)
            cats = x.cat.categories.union(y.cat.categories)
            np.testing.assert_array_equal(x.cat.set_categories(cats).cat.codes.to_numpy(),
                                          y.cat.set_categories(cats).cat.codes.to_numpy(),
                                          err_msg=f"{obj}.{c}")
        else:
            pd.testing.assert_series_equal(x, y, obj=f"{obj}.{c}")


def assert_same(a, b):
    for t in eaglelog.TABLES:
        assert_frames_equal(a.table(t), b.table(t), t)
    assert [(d.line_no, d.kind, d.message, d.severity, d.more) for d in a.diagnostics] == \
        [(d.line_no, d.kind, d.message, d.severity, d.more) for d in b.diagnostics]
    for x, y in zip(a.sources, b.sources):
        assert (x.lines, x.bytes, x.skipped, x.first_skipped, x.counts, x.engine) == \
            (y.lines, y.bytes, y.skipped, y.first_skipped, y.counts, y.engine)


def column_of(series):
    """The _fastscan.Column a table column is a view of (None when it was copied)."""
    a = series.array
    for _ in range(12):
        if hasattr(a, "mappings"):
            return a
        a = a.obj if isinstance(a, memoryview) else \
            getattr(a, "_data", None) if hasattr(a, "_mask") else \
            getattr(a, "_ndarray", None) if hasattr(a, "_ndarray") else getattr(a, "base", None)
        if a is None:
            return None
    return None


# ------------------------------------------------------------------ real sizes
ROWS = 1_100_000     # / 8 ranges = 137,500 rows each: 1.07 MiB per 8-byte column


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A 67 MB log of short decode lines and its sequential parse (EAGLELOG_WORKERS=1)."""
    path = tmp_path_factory.mktemp("workers") / "big.log"
    with open(path, "w") as f:
        for start in range(0, ROWS, 100_000):
            f.write("".join(f"Decode batch. #token: {i % 90_000}, accept len: "
                            f"{1 + i % 300 / 100:.2f}, #queue-req: {i % 3}\n"
                            for i in range(start, min(start + 100_000, ROWS))))
    mp = pytest.MonkeyPatch()
    mp.setenv("EAGLELOG_WORKERS", "1")
    try:
        seq = eaglelog.parse(path)
    finally:
        mp.undo()
    assert path.stat().st_size >= parallel.MIN_PARALLEL       # the default parallel path
    return path, seq


@pytest.mark.parametrize("workers", WORKERS)
def test_real_sizes_every_worker_count(big, monkeypatch, workers):
    path, seq = big
    par = parse(path, monkeypatch, workers)      # MemoryError at 3 workers and more, once
    assert_same(seq, par)
    assert column_of(seq.decode["line_no"]).mappings() == (0,)
    assert len(par.decode) == ROWS and par.decode["line_no"].iloc[-1] == ROWS
    assert par.decode["num_tokens"].iloc[123_456] == 123_456 % 90_000
    # each range's pages were moved onto the first's: one mapping per range, none copied
    for col in ("line_no", "num_tokens", "accept_len", "queue_req"):
        assert len(column_of(par.decode[col]).mappings()) == workers, col


# ------------------------------------------------------------------ small logs, every path
SERVER_ARGS = next(ln for ln in (SAMPLES / "eagle3_5step.log").read_text().splitlines(True)
                   if "server_args=" in ln)
FINISH = next(ln for ln in (SAMPLES / "eagle3_5step.log").read_text().splitlines(True)
              if "Finish: obj=" in ln)


def realistic_log(path, ticks: int, seed: int) -> None:
    """genlog.py's mix (decode, prefill, access lines, a profile block every 25 decode lines),
    with rank prefixes, a start-up line now and then, request lines and a block of two ranks."""
    rng = random.Random(seed)
    t = dt.datetime(2026, 1, 20, 10, 0, 0)
    out, n = [SERVER_ARGS], 0
    for i in range(ticks):
        t += dt.timedelta(milliseconds=rng.randint(100, 900))
        ts = t.strftime("%Y-%m-%d %H:%M:%S")
        if i == ticks // 2:
            out.append(SERVER_ARGS)          # a second start-up
        r = rng.random()
        if r < 0.08:
            out.append(f"[{ts} TP0] Prefill batch. #new-seq: 1, #new-token: "
                       f"{rng.randint(10, 4000)}, #cached-token: {rng.randint(0, 2000)}, token "
                       f"usage: 0.{rng.randint(0, 99):02d}, #running-req: {rng.randint(0, 8)}, "
                       "#queue-req: 0, \n")
        elif r < 0.30:
            out.append(f'[{ts}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST '
                       '/v1/chat/completions HTTP/1.1" 200 OK\n')
        elif r < 0.305:
            out.append(FINISH)
        else:
            al = rng.gauss(2.3, 0.3)
            rank = rng.choice(["TP0", "TP1", "DP1 TP0"])
            extra = f"#retracted-req: {rng.randint(0, 3)}, " if rng.random() < 0.05 else ""
            out.append(f"[{ts} {rank}] Decode batch. #running-req: {rng.randint(1, 8)}, #token: "
                       f"{rng.randint(100, 90000)}, token usage: 0.{rng.randint(0, 99):02d}, "
                       f"accept len: {al:.2f}, accept rate: {al / 6:.2f}, {extra}cuda graph: "
                       f"True, gen throughput (token/s): {rng.gauss(90, 8):.2f}, #queue-req: 0, \n")
            n += 1
            if n % 25 == 0:
                out.append(CANON + "\n")
            elif n % 397 == 0:        # two ranks' blocks, line by line; a line of each ends them
                out += [f"[{ts} {rk}] {ln}\n" for ln in CANON.splitlines() for rk in ("TP0", "TP1")]
                out += [f"[{ts} {rk}] Cache flushed.\n" for rk in ("TP0", "TP1")]
    path.write_text("".join(out))


@pytest.fixture
def small_absorbs(monkeypatch):
    """Parallel scans of small files, and absorbs that move pages from one byte on."""
    from eaglelog.parsers.scan import _fastscan
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    was = _fastscan.absorb_threshold(1)
    yield
    _fastscan.absorb_threshold(was)


@pytest.fixture(scope="module")
def realistic(tmp_path_factory):
    path = tmp_path_factory.mktemp("workers") / "realistic.log"
    realistic_log(path, 24_000, seed=13)
    mp = pytest.MonkeyPatch()
    mp.setenv("EAGLELOG_WORKERS", "1")
    try:
        seq = eaglelog.parse(path, chunk_size=1 << 16)
    finally:
        mp.undo()
    return path, seq


@pytest.mark.parametrize("workers", WORKERS)
def test_small_ranges_every_worker_count(realistic, monkeypatch, small_absorbs, workers):
    path, seq = realistic
    par = parse(path, monkeypatch, workers, chunk_size=1 << 16)
    assert_same(seq, par)
    assert len(parallel.ranges(str(path), workers)) == workers
    assert len(par.decode) > 15_000 and len(par.prof) > 700 and len(par.requests) > 100
    assert par.server_args["startup"].tolist() == [1, 2]
    assert par.decode["startup"].iloc[-1] == 2
    for col in ("line_no", "timestamp", "accept_len", "running_req", "num_tokens"):
        assert len(column_of(par.decode[col]).mappings()) == workers, col


@pytest.mark.parametrize("workers", [3, 8])
def test_ranges_of_the_python_parser_alone(tmp_path, monkeypatch, workers):
    """Without the accelerator the ranges are scanned by processes: the same tables."""
    path = tmp_path / "pure.log"
    realistic_log(path, 3000, seed=5)
    monkeypatch.setattr(scan, "_fastscan", None)
    seq = parse(path, monkeypatch, 1)
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    assert_same(seq, parse(path, monkeypatch, workers))


# ------------------------------------------------------------------ boundaries inside blocks
def boundaries_in_blocks(path, workers) -> int:
    """How many range boundaries fall on an indented line (inside a print() block)."""
    lines_at = path.read_bytes()
    return sum(lines_at[a:a + 1] == b" " for a, _ in parallel.ranges(str(path), workers)[1:])


def test_first_skipped_line_past_orphans(tmp_path, monkeypatch):
    """A range that starts inside a block skips the block's last lines (the range before reads
    them, finishing the block): the file's first line without a record is not one of them."""
    path = tmp_path / "orphans.log"
    dec = "Decode batch. #running-req: 3, #token: 900, accept len: 2.50, #queue-req: 0, \n"
    body = (CANON + "\n" + dec) * 400
    path.write_text(body + "a line without a record\n" + body)
    seq = parse(path, monkeypatch, 1)
    assert seq.sources[0].first_skipped == 400 * 10 + 1 and seq.sources[0].skipped == 1
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    inside = 0
    for workers in WORKERS:
        inside += boundaries_in_blocks(path, workers)
        assert_same(seq, parse(path, monkeypatch, workers))
    assert inside >= 10


def test_a_block_line_that_looks_like_a_record(tmp_path, monkeypatch):
    """A block line holding a record marker is a line of the block ('  Decode batch. …' is an
    unknown block line); a range starting inside the block has no block open there and would
    read it as a record: the file is scanned in one pass instead."""
    path = tmp_path / "marker.log"
    block = CANON.replace("  TOTAL:", "  Decode batch. #running-req: 3, #queue-req: 0\n  TOTAL:")
    path.write_text((block + "\n") * 300)
    seq = parse(path, monkeypatch, 1)
    assert len(seq.prof) == 300 and len(seq.decode) == 0
    assert {d.kind for d in seq.diagnostics} == {"block_line"}
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    inside = 0
    for workers in (2, 3, 5, 8):
        inside += boundaries_in_blocks(path, workers)
        assert_same(seq, parse(path, monkeypatch, workers))
    assert inside >= 6


# ------------------------------------------------------------------ diagnostics past MAX_KEPT
def noisy_log(path) -> dict:
    """Uneven runs of bad values, identity breaks and cut-short blocks: some ranges hold more
    than MAX_KEPT of a kind, some none.  Returns their counts."""
    good = ("[2026-01-20 10:00:00 TP0] Decode batch. #running-req: 3, #token: 900, token usage: "
            "0.10, accept len: 2.50, cuda graph: True, gen throughput (token/s): 80.00, "
            "#queue-req: 0, \n")
    bad = good.replace("accept len: 2.50", "accept len: inf")
    broken = CANON.replace("Eff tok/s:       41.8", "Eff tok/s:       40.0") + "\n"
    cut = "\n".join(CANON.splitlines()[:3]) + "\n\n"
    out, n = [], {"bad_value": 0, "identity": 0, "incomplete_block": 0}
    for i in range(10_000):
        # bad values early in runs of 50 (and one run of 30 later), broken blocks late, cut-short
        # blocks last (the Python parser reads those lines: a few runs of its rows among the C
        # accelerator's, not thousands, which tables.concat_frames merges slowly)
        if i < 4000 and (i // 50) % 2 == 0 or 5000 <= i < 5030:
            out.append(bad)
            n["bad_value"] += 1
        elif 6000 <= i < 8000 and i % 3:
            out.append(broken)
            n["identity"] += 1
        elif 8000 <= i and i % 3:
            out.append(cut)
            n["incomplete_block"] += 1
        else:
            out.append(good)
    path.write_text("".join(out))
    return n


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """The noisy log, its counts and its sequential parse."""
    path = tmp_path_factory.mktemp("workers") / "noisy.log"
    counts = noisy_log(path)
    assert all(v > scan.MAX_KEPT for v in counts.values())
    mp = pytest.MonkeyPatch()
    mp.setenv("EAGLELOG_WORKERS", "1")
    try:
        seq = eaglelog.parse(path)
    finally:
        mp.undo()
    return path, counts, seq


def test_diagnostic_counts_are_exact(noisy, monkeypatch, run):
    """The overview counts every diagnostic, kept or counted (Diagnostic.more), not the kept
    objects: 1,000 listed and one standing for the rest are not 1,001."""
    path, n, log = noisy
    from eaglelog.overview import overview, overview_rows, render_overview
    item = overview(log)[0]
    assert item["reported"] == n
    assert len(item["incomplete_blocks"]) == scan.MAX_KEPT
    assert overview_rows([item])[0]["incomplete_blocks"] == n["incomplete_block"]
    text = render_overview([item])
    assert f"{n['incomplete_block']:,} incomplete EAGLE3_PROF blocks (line " in text
    assert f"{n['bad_value']:,} unreadable value(s)" in text
    assert f"{n['identity']:,} identity break(s)" in text
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    r = run("parse", "-f", "json", path)
    assert json.loads(r.stdout)[0]["reported"] == n
    for kind in ("bad_value", "identity"):
        assert f"… and {n[kind] - 1:,} more like it in {path} (-v shows the first 1,000)" \
            in r.stderr, kind


@pytest.mark.parametrize("workers", WORKERS)
def test_diagnostics_past_max_kept_every_worker_count(noisy, monkeypatch, workers, run):
    """The same diagnostics listed (the file's first MAX_KEPT of a kind) and counted for
    every worker count: each range keeps its own first MAX_KEPT, the merge keeps the file's."""
    path, n, seq = noisy
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    par = parse(path, monkeypatch, workers)
    assert_same(seq, par)
    from eaglelog.overview import overview
    assert overview(par)[0]["reported"] == n
    kept = [d for d in par.diagnostics if d.kind == "bad_value" and not d.more]
    assert len(kept) == scan.MAX_KEPT
    assert [d.more for d in par.diagnostics if d.more] == \
        [n[k] - scan.MAX_KEPT for k in sorted(n)]
    if workers == 8:                  # the JSON overview and stderr, EAGLELOG_WORKERS=8
        r = run("parse", "-f", "json", path)
        assert json.loads(r.stdout)[0]["reported"] == n
        assert f"… and {n['identity'] - 1:,} more like it in {path} (-v shows the first " \
            "1,000)" in r.stderr


@pytest.mark.parametrize("workers", [2, 5])
def test_few_kept_per_kind(tmp_path, monkeypatch, workers):
    """With MAX_KEPT 5, kinds overflow in different ranges and in a different order than
    they first occur: listed, counted and ordered as by one scanner."""
    path = tmp_path / "few.log"
    good = ("Decode batch. #running-req: 3, #token: 900, accept len: 2.50, #queue-req: 0, \n")
    bad = good.replace("2.50", "nan")
    broken = CANON.replace("Eff tok/s:       41.8", "Eff tok/s:       40.0") + "\n"
    # identities break early and seldom, bad values late and often
    path.write_text(good * 50 + broken * 4 + good * 300 + bad * 3 + good * 300 + broken * 3
                    + good * 200 + bad * 20 + broken + good * 100)
    monkeypatch.setattr(scan, "MAX_KEPT", 5)
    seq = parse(path, monkeypatch, 1)
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    par = parse(path, monkeypatch, workers)
    assert_same(seq, par)
    assert [(d.kind, d.more) for d in par.diagnostics if d.more] == [("bad_value", 18),
                                                                       ("identity", 3)]


# ------------------------------------------------------------------ lines longer than MAX_LINE
def decode_lines(n: int, start: int = 0) -> bytes:
    return "".join(f"Decode batch. #token: {i}, accept len: 2.50, #queue-req: 0\n"
                   for i in range(start, start + n)).encode()


@pytest.mark.parametrize("where", ["middle", "end", "overrun"])
def test_a_line_longer_than_max_line(tmp_path, monkeypatch, where):
    """sources.iter_chunks drops a line longer than 16 MiB (an empty line, a long_line note);
    a parallel scan does the same, whatever the worker count: the range that holds it gives
    the file back to the sequential scan (also when the range before reads into it to finish
    a block)."""
    path = tmp_path / "long.log"
    long = b"x" * (MAX_LINE + 3 * (1 << 20)) + b"\n"
    if where == "middle":
        data = decode_lines(20_000) + long + decode_lines(20_000, 20_000)
    elif where == "end":
        data = decode_lines(30_000) + long.rstrip(b"\n")
    else:       # a block across the range boundary of two workers, the long line after it
        block = CANON.encode()
        # filler + block + long: the middle byte falls in the block's header line
        want = len(block) + len(long) - 10
        filler = decode_lines(want // 40)
        filler = filler[:filler.rindex(b"\n", 0, want - 100) + 1]
        filler += b"p" * (want - len(filler) - 1) + b"\n"
        data = filler + block + long
    path.write_bytes(data)
    if where == "overrun":
        (_, cut), _ = parallel.ranges(str(path), 2)
        start = data.index(b"EAGLE3_PROF")
        assert start < cut < start + len(CANON)          # the boundary falls in the block
    seq = parse(path, monkeypatch, 1)
    assert [d.kind for d in seq.diagnostics] == ["long_line"]
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    for workers in ((2,) if where == "overrun" else (2, 8)):
        par = parse(path, monkeypatch, workers)
        assert_same(seq, par)
    assert par.sources[0].bytes < len(data) - MAX_LINE          # the long line was dropped


def test_a_first_line_longer_than_max_line(tmp_path, monkeypatch):
    """A file that starts with such a line is not a log, with any worker count."""
    path = tmp_path / "binary.log"
    # (a line a little longer than MAX_LINE may be kept: sources.iter_chunks looks at whole
    # MiB reads; two more MiB are always too many)
    path.write_bytes(b"y" * (MAX_LINE + (2 << 20)) + b"\n" + decode_lines(10_000))
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    errors = set()
    for workers in (1, 2, 4):
        with pytest.raises(eaglelog.errors.InputError) as e:
            parse(path, monkeypatch, workers)
        errors.add(str(e.value))
    assert errors == {f"{path}:1: no line break in the first 16 MiB: binary data or not a "
                      "line-oriented log"}


def test_long_line_search():
    """parallel._has_long_line: a line of MAX_LINE bytes is not longer, one more byte is."""
    at = parallel._has_long_line
    assert not at(bytearray(b"a\n" * 10))
    assert not at(b"a" * MAX_LINE + b"\n" + b"b" * MAX_LINE)
    assert at(b"a" * 10 + b"\n" + b"b" * (MAX_LINE + 1) + b"\n")
    assert at(b"a" * (MAX_LINE + 1))
    assert not at(b"a\n" * (MAX_LINE // 2) + b"a" * MAX_LINE + b"\n")


@pytest.fixture(scope="module")
def many_logs(tmp_path_factory):
    """70 small logs (over library.PARALLEL_RUNS): copies of the 5-step and 2-step samples,
    and one whose decode lines print no accept length and no profile blocks (speculation
    cannot be analysed there: an error of its own for breakeven)."""
    d = tmp_path_factory.mktemp("many")
    five = (SAMPLES / "eagle3_5step.log").read_text(encoding="utf-8")
    two = (SAMPLES / "eagle3_2step.log").read_text(encoding="utf-8")
    paths = []
    for i in range(69):
        p = d / f"log{i:03d}.log"
        p.write_text(five if i % 2 else two, encoding="utf-8")
        paths.append(str(p))
    bad = d / "log999.log"
    bad.write_text((SAMPLES / "baseline.log").read_text(encoding="utf-8"), encoding="utf-8")
    return paths + [str(bad)]


@pytest.mark.parametrize("command", [["summary"], ["breakeven", "--baseline-toks", "90"],
                                     ["reconcile"]])
def test_many_runs_every_worker_count(many_logs, monkeypatch, run, command):
    """Issue 20: the runs of many inputs are analysed by forked processes (library.each_run);
    every worker count gives the same output and the same errors, in input order."""
    from eaglelog import library
    assert len(many_logs) > library.PARALLEL_RUNS
    outs = {}
    for w in ("1", "2", "3"):
        monkeypatch.setenv("EAGLELOG_WORKERS", w)
        r = run("--no-cache", *command, "-f", "json", *many_logs)
        outs[w] = (r.exit_code, r.stdout, r.stderr)
    assert outs["1"] == outs["2"] == outs["3"]
    code, out, err = outs["1"]
    d = json.loads(out)
    sources = [r["source"] for r in d["runs"]]
    assert sources == sorted(sources) and set(sources) >= set(many_logs[:-1])
    if command[0] == "summary":          # a run without speculation is summarised too
        assert code == 0 and sources == many_logs and not d["errors"]
    else:                                # … and is an error of its own for the others
        assert code == 1 and sources == many_logs[:-1]
        assert len(d["errors"]) == 1 and d["errors"][0].startswith(many_logs[-1] + ": ")
        assert "eaglelog: error: " + many_logs[-1] in err


def _summary_json(paths, workers):
    from eaglelog import library
    return json.dumps(library.summarize(paths, workers=workers).to_dict(), sort_keys=True,
                      default=str)


def test_many_runs_inside_a_daemonic_pool_worker(many_logs):
    """A caller's own multiprocessing pool: its workers are daemonic and may not start
    processes (multiprocessing's AssertionError, an internal error, found by the fuzzer's
    pool on 2026-12-07). library.summarize(workers=2) of more than PARALLEL_RUNS runs in such
    a worker analyses them there, one after another: the same answer as outside."""
    import multiprocessing as mp
    with mp.get_context("fork").Pool(1) as pool:
        inside = pool.apply(_summary_json, (many_logs, 2))
    assert inside == _summary_json(many_logs, 2) == _summary_json(many_logs, 1)
    assert len(json.loads(inside)["runs"]) == len(many_logs)



def _tables_json(path):
    from eaglelog import api
    log = api.parse(path, chunk_size=1 << 16)
    return {k: v.to_json(date_format="iso") for k, v in log.tables.items()}


def _pure_parallel_tables(path):
    """(in a forked pool worker: what it sets goes with it)"""
    import os
    from eaglelog.io import parallel
    from eaglelog.parsers import scan
    os.environ["EAGLELOG_WORKERS"] = "2"
    parallel.MIN_PARALLEL, scan._PURE, scan._fastscan = 1, True, None
    return _tables_json(path)


def test_a_pure_python_parallel_scan_inside_a_daemonic_pool_worker(monkeypatch):
    """Without the C accelerator a large log's ranges are scanned by processes, which a
    daemonic process may not start: there the log is scanned in one pass, the same tables."""
    import multiprocessing as mp
    from eaglelog.io import parallel
    from eaglelog.parsers import scan
    path = str(SAMPLES / "eagle3_5step.log")
    with mp.get_context("fork").Pool(1) as pool:
        inside = pool.apply(_pure_parallel_tables, (path,))
    monkeypatch.setenv("EAGLELOG_WORKERS", "2")
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    monkeypatch.setattr(scan, "_PURE", True)
    monkeypatch.setattr(scan, "_fastscan", None)
    ranges = []
    real = parallel.ranges
    monkeypatch.setattr(parallel, "ranges", lambda *a: ranges.append(a) or real(*a))
    outside = _tables_json(path)          # (this process: the ranges scanned by processes)
    assert ranges and inside == outside
    assert len(json.loads(inside["decode"])["line_no"]) > 100
