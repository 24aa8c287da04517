"""The C accelerator (eaglelog/parsers/_fastscan.c) gives the Python parser's records, to the row.

Every comparison parses the same bytes twice, once with the accelerator and once with
EAGLELOG_PURE_PYTHON's switch (scan._PURE), and compares every table, every diagnostic and the
line counts.  The inputs: every fixture, every sample, a log mixing all of them, and generated
lines with their layouts perturbed (odd numbers, spaces, keys, prefixes, cut-short blocks).
"""
import random

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import eaglelog
from eaglelog.parsers import scan
from conftest import CANON, FIXTURES, SAMPLES, mixed_log


def parse_both(path, monkeypatch, chunk_size=1 << 16):
    monkeypatch.setattr(scan, "_PURE", False)
    fast = eaglelog.parse(path, chunk_size=chunk_size, keep_going=True)
    monkeypatch.setattr(scan, "_PURE", True)
    slow = eaglelog.parse(path, chunk_size=chunk_size, keep_going=True)
    monkeypatch.setattr(scan, "_PURE", False)
    return fast, slow


def assert_same(fast, slow):
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(fast.table(t), slow.table(t), check_categorical=False,
                                      obj=t)
    assert [str(d) for d in fast.diagnostics] == [str(d) for d in slow.diagnostics]
    for a, b in zip(fast.sources, slow.sources):
        assert (a.lines, a.bytes, a.skipped, a.first_skipped, a.counts) == \
            (b.lines, b.bytes, b.skipped, b.first_skipped, b.counts)


def test_the_accelerator_is_built():
    # CI installs with a C compiler: a build that silently fell back to Python fails here
    assert scan.fast_available()


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/*.log")) + sorted(SAMPLES.glob("*.log")),
                         ids=lambda p: p.name)
def test_every_fixture_and_sample(path, monkeypatch):
    fast, slow = parse_both(path, monkeypatch)
    assert_same(fast, slow)


@pytest.mark.parametrize("chunk_size", [1 << 10, 1 << 16])
def test_a_log_mixing_every_variant(tmp_path, monkeypatch, chunk_size):
    path = mixed_log(tmp_path)
    fast, slow = parse_both(path, monkeypatch, chunk_size)
    assert_same(fast, slow)
    assert len(fast.decode) > 1000 and len(fast.prof) > 300


def test_it_reads_the_common_layouts_itself():
    """On a sample log the accelerator stops only for the server_args line and the request
    lines (left to Python); it reads every decode, prefill and profile line itself, so the
    equality tests above compare two parsers."""
    from eaglelog.parsers import sglang
    data = (SAMPLES / "eagle3_5step.log").read_bytes()
    fs = scan._fastscan.FastScanner(scan._key_spec(sglang.DECODE_KEYS),
                                    scan._key_spec(sglang.PREFILL_KEYS))
    pos, line_no, stops, consumed = 0, 1, [], 0
    while pos < len(data):
        pos, line_no, c, _, _, _, bad, whit, _, _ = fs.scan(data, pos, line_no, 0)
        assert bad == b"" and whit == -1          # (no watch set: no line reported)
        consumed += c
        if pos < len(data):
            stops.append(line_no)
            pos = data.index(b"\n", pos) + 1
            line_no += 1
    got = {}
    fs.take_into(got)
    got = {t: (d[""], d) for t, d in got.items()}
    lines = data.split(b"\n")
    assert [n for n in stops if b"server_args=" in lines[n - 1]] == [stops[0]]
    assert [n for n in stops if b"Finish: obj=" in lines[n - 1]] == stops[1:]
    assert len(stops) == 41
    assert got["decode"][0] == 106 and got["prof"][0] == 42 and got["prof_phases"][0] == 168
    assert consumed == 106 + got["prefill"][0] + 42 * 8     # a block is 8 lines


def test_blocks_that_break_identities_are_kept_and_counted(tmp_path, monkeypatch, run):
    """Every block breaks 'Eff tok/s = 1000*Accept len/TOTAL': all are records; the first
    MAX_KEPT warnings are kept, the rest counted, in both paths alike."""
    bad = CANON.replace("Eff tok/s:       41.8", "Eff tok/s:       40.0")
    rank = "".join(f"[2026-01-20 10:00:00 TP1] {ln}\n" for ln in bad.splitlines())
    path = tmp_path / "bad.log"
    path.write_text((bad + "\n") * 20 + rank * 7 + (bad + "\n") * 3)
    monkeypatch.setattr(scan, "MAX_KEPT", 5)
    fast, slow = parse_both(path, monkeypatch)
    assert_same(fast, slow)
    assert len(fast.prof) == 30 and fast.prof["complete"].all()
    ids = [d for d in fast.diagnostics if d.kind == "identity"]
    assert [d.line_no for d in ids[:5]] == [1, 10, 19, 28, 37]
    assert ids[5].more == 25 and ids[5].line_no is None
    r = run("parse", "-f", "csv", path)
    assert "… and 29 more like it in" in r.stderr and "-v shows the first 5" in r.stderr
    r = run("-v", "parse", "-f", "csv", path)
    assert r.stderr.count("breaks an identity: Eff tok/s 40.0 != 1000*1.14/27.28") == 5
    assert "… and 25 more like it in" in r.stderr and "(not kept)" in r.stderr


# ------------------------------------------------------------------ perturbed layouts
PREFIXES = ["", "[2026-01-20 10:00:00] ", "[2026-01-20 23:59:59 TP0] ", "[2026-01-20 10:00:00 TP0]",
            "[2026-01-20 10:00:00.123 DP1 TP3] ", "[2026-01-20 10:00:00,250 PP0 TP1 EP2] ",
            "[10:00:00 TP0] ", "[2026-01-20 10:00:00 TP0 TP1] ", "[2026-01-20 10:00:00 XY0] ",
            "  ", "x [2026-01-20 10:00:00 TP0] ", "[2026-01-20 10:00:00 TP0]  ",
            "\x1b[32m[2026-01-20 10:00:00 TP0]\x1b[0m ",
            # wrappers in front (sglang.md §1.3): docker logs --timestamps, a CRI log file (full
            # and partial lines), whole seconds, an offset, a date that names no instant, a
            # fraction of 10 digits, a wrapper without an SGLang bracket after it
            "2026-01-20T09:00:00.123456789Z [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00.5Z stdout F [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00.5Z stderr P [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00Z [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00.25+01:00 [2026-01-20 10:00:00] ",
            "2026-02-30T09:00:00.123Z [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00.1234567891Z [2026-01-20 10:00:00 TP0] ",
            "2026-01-20T09:00:00.123Z ", "2026-01-20 09:00:00.123 [2026-01-20 10:00:00 TP0] "]
HEADS = ["Decode batch. ", "Decode batch, ", "Decode batch [12], ", "Decode batch [3]. ",
         "Decode batch ", "Prefill batch. ", "Prefil batch, ", "Prefill batch [7], ",
         "Prefill batch(mixed #running-req: 3). ", "decode batch. "]
INTS = ["5", "0", "-3", "+5", "05", "1_000", "12345678901234567890", "4.0", "x", ""]
FLOATS = ["2.30", "0.05", "1.", ".5", "1e-05", "nan", "2.3%", "-0.0", "123456789.123456789",
          "0.1234567890123456789", "7"]
KEYS = [("#running-req", INTS), ("#token", INTS + ["full=5"]), ("token usage", FLOATS),
        ("accept len", FLOATS), ("accept rate", FLOATS), ("cuda graph", ["True", "False", "1"]),
        ("cpu graph", ["True"]), ("gen throughput (token/s)", FLOATS), ("#queue-req", INTS),
        ("#new-seq", INTS), ("#new-token", INTS), ("#cached-token", INTS),
        ("input throughput (token/s)", FLOATS), ("fwd occupancy", ["45.5%", "45.5", "x%"]),
        ("timestamp", ["2026-01-20T10:00:00.5"]), ("mystery", ["1"]), ("cap len", FLOATS)]
COMMON = [("#running-req", "5"), ("#token", "1200"), ("token usage", "0.05"),
          ("accept len", "2.30"), ("accept rate", "0.38"), ("cuda graph", "True"),
          ("gen throughput (token/s)", "88.10"), ("#queue-req", "0")]


def batch_line(rng: random.Random) -> str:
    segs = list(COMMON) if rng.random() < 0.5 else []
    for _ in range(rng.randint(0, 3) if segs else rng.randint(1, 9)):
        k, vals = rng.choice(KEYS)
        seg = (k, rng.choice(vals))
        if segs and rng.random() < 0.5:
            segs[rng.randrange(len(segs))] = seg
        else:
            segs.insert(rng.randint(0, len(segs)), seg)
    sep = ", " if rng.random() < 0.9 else rng.choice([",", ",  ", " , "])
    body = sep.join(f"{k}: {v}" for k, v in segs)
    tail = rng.choice(["", ",", ", ", " ", ",\r", "\r"])
    return rng.choice(PREFIXES) + rng.choice(HEADS) + body + tail


def block(rng: random.Random) -> str:
    lines = CANON.splitlines()
    prefix = rng.choice(["", "", "[2026-01-20 10:00:00 TP0] ", "[2026-01-20 10:00:00] ",
                         "2026-01-20T09:00:00.123456789Z ",
                         "2026-01-20T09:00:00.5Z stdout F [2026-01-20 10:00:00 TP0] "])
    edits = rng.randint(0, 2)
    for _ in range(edits):
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines[i] = lines[i].replace("  ", " \t", 1)
        elif op == 2:
            lines[i] = lines[i].replace("0", "9", 1)
        elif op == 3:
            lines[i] = lines[i].replace(".", "", 1)
        elif op == 4:
            lines.insert(i, rng.choice(["  Mystery:  1.00 ms/cyc", "  odd line", "", "   ",
                                        "  Accept len:  2.5", "EAGLE3_PROF (10 cycles, 20 tok)",
                                        "[2026-01-20 10:00:00 TP1]   TOTAL: 1.00 ms/cyc"]))
        else:
            lines[i] = lines[i] + rng.choice([" ", "  x", "\r"])
    end = rng.choice(["\n", "", "[2026-01-20 10:00:01 TP0] Decode batch. #running-req: 1, "
                      "#token: 5, token usage: 0.01, gen throughput (token/s): 9.00, "
                      "#queue-req: 0, \n", "tail text\n"])
    return "".join(prefix + ln + "\n" for ln in lines) + end


NOISE = ["", "   ", "\r", "INFO: 127.0.0.1 - \"POST /v1/x HTTP/1.1\" 200 OK",
         "[2026-01-20 10:00:00 TP0] Load weight end.", "server_args=nothing here",
         "a line mentioning Decode batch in passing", "#running-req: 3, #queue-req: 1",
         "[2026-01-20 10:00:00 TP0] Finish: obj=GenerateReqInput(), out={'meta_info': {}}"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([64, 512, 1 << 16]))
def test_perturbed_layouts(tmp_path_factory, monkeypatch, seed, chunk):
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randint(5, 40)):
        r = rng.random()
        parts.append(batch_line(rng) + "\n" if r < 0.6 else block(rng) if r < 0.8
                     else rng.choice(NOISE) + "\n")
    text = "".join(parts)
    if rng.random() < 0.2:
        text = text.rstrip("\n")          # a last line cut short
    path = tmp_path_factory.mktemp("perturbed") / "p.log"
    path.write_bytes(text.encode())
    got = []
    for pure in (False, True):
        monkeypatch.setattr(scan, "_PURE", pure)
        try:
            got.append(eaglelog.parse(path, chunk_size=chunk, keep_going=True))
        except eaglelog.errors.EaglelogError as e:      # no records at all: the same error
            got.append(str(e))
    monkeypatch.setattr(scan, "_PURE", False)
    if isinstance(got[0], str) or isinstance(got[1], str):
        assert got[0] == got[1]
    else:
        assert_same(*got)


def test_column_buffers():
    """Column: the C scanner's array handed over without a copy, viewed in place by numpy,
    grown by extend, refused growth while a view is alive."""
    import numpy as np
    from eaglelog.parsers.scan import _fastscan
    c = _fastscan.Column.na("q", 3)
    a = np.frombuffer(c, dtype=np.int64)
    assert (a == np.iinfo(np.int64).min).all() and len(c) == 24
    with pytest.raises(BufferError):
        c.extend(np.arange(2, dtype=np.int64))
    a[0] = 7            # a writable view of the same memory
    del a
    c.extend(np.arange(2, dtype=np.int64))
    assert np.frombuffer(c, dtype=np.int64).tolist()[:1] == [7]
    assert np.frombuffer(c, dtype=np.int64).tolist()[3:] == [0, 1]
    assert np.isnan(np.frombuffer(_fastscan.Column.na("d", 2), dtype=np.float64)).all()
    assert np.frombuffer(_fastscan.Column.na("i", 2), dtype=np.int32).tolist() == [-1, -1]
    assert len(_fastscan.Column.na("b", 0)) == 0
    with pytest.raises(ValueError):
        _fastscan.Column.na("z", 1)


@pytest.mark.parametrize("n1, n2, kind", [(300_001, 200_003, "q"), (512, 400_000, "q"),
                                          (262_144, 262_144, "q"), (1_234_567, 2_000_001, "b"),
                                          (0, 300_000, "d"), (5, 3, "i")])
def test_column_absorb(n1, n2, kind):
    """absorb appends another column's bytes (its pages moved where they are large and the
    system allows, copied otherwise) and empties it: the result is the two, in order."""
    import numpy as np
    from eaglelog.parsers.scan import _FAST_DTYPES, _fastscan
    dt = _FAST_DTYPES[kind]
    a, b = _fastscan.Column.na(kind, n1), _fastscan.Column.na(kind, n2)
    va, vb = np.frombuffer(a, dtype=dt), np.frombuffer(b, dtype=dt)
    va[:] = np.arange(n1) % 100
    vb[:] = (np.arange(n1, n1 + n2) % 100)
    with pytest.raises(BufferError):
        a.absorb(b)           # views alive
    del va, vb
    a.absorb(b)
    assert len(b) == 0 and len(a) == (n1 + n2) * np.dtype(dt).itemsize
    assert np.array_equal(np.frombuffer(a, dtype=dt), np.arange(n1 + n2) % 100)
    c = _fastscan.Column.na(kind, 2)
    c.absorb(a)           # and again, onto a small one
    assert np.array_equal(np.frombuffer(c, dtype=dt)[2:], np.arange(n1 + n2) % 100)


@pytest.mark.parametrize("n1, n2, kind", [(200_000, 200_000, "q"), (131_072, 140_000, "d")])
def test_absorbs_after_an_absorb(n1, n2, kind):
    """The second absorb of a column that absorbed one at the real threshold (1 MiB): the
    column then spans two mappings, and growing it once failed (mremap: EFAULT, MemoryError),
    so a parallel scan with three workers failed on every log of 105 MB or more."""
    import numpy as np
    from eaglelog.parsers.scan import _FAST_DTYPES, _fastscan
    dt = _FAST_DTYPES[kind]
    a, want = _fastscan.Column.na(kind, n1), [np.full(n1, np.nan if kind == "d" else -2**63)]
    for i in range(3):
        b = _fastscan.Column.na(kind, n2 + i)
        np.frombuffer(b, dtype=dt)[:] = np.arange(n2 + i) + 10**6 * i
        want.append(np.arange(n2 + i) + 10**6 * i)
        a.absorb(b)
        assert len(a.mappings()) == i + 2 and len(b) == 0
    np.testing.assert_array_equal(np.frombuffer(a, dtype=dt), np.concatenate(want))


def kernel_boundaries(col) -> set:
    """The offsets inside a Column's array where /proc/self/maps starts a mapping."""
    import numpy as np
    v = np.frombuffer(col, dtype=np.uint8)
    lo = v.__array_interface__["data"][0] if len(v) else 0
    hi = lo + len(v)
    del v
    out = set()
    with open("/proc/self/maps") as f:
        for line in f:
            a = int(line.split("-", 1)[0], 16)
            if lo < a < hi:
                out.add(a - lo)
    return out


@pytest.mark.parametrize("seed", [0, 1])     # even: absorb_threshold lowered to 1 byte
def test_many_absorbs_of_varied_sizes_and_types(seed):
    """A dozen absorbs and more per column, of sizes around the page and the threshold, of every
    element type, onto columns that absorbed before and from columns that did, mixed with
    extend(): the bytes are the concatenation, the absorbed column is left empty, and every
    mapping the kernel sees inside the array is one the column knows of (it grows by moving
    them one by one)."""
    import os
    import numpy as np
    from eaglelog.parsers.scan import _FAST_DTYPES, _fastscan
    rng = np.random.default_rng(seed)
    was = _fastscan.absorb_threshold(1 << 20 if seed % 2 else 1)     # real and lowered
    try:
        for kind in "qdilb":
            dt = np.dtype(_FAST_DTYPES[kind])
            sizes = [0, 1, 4095 // dt.itemsize, 4096 // dt.itemsize, 4097 // dt.itemsize,
                     (1 << 20) // dt.itemsize, (1 << 20) // dt.itemsize + 1, 3 << 18, 77, 5000,
                     int(rng.integers(1, 400_000)), int(rng.integers(1, 400_000))]
            rng.shuffle(sizes)
            a = _fastscan.Column.na(kind, int(rng.integers(0, 300_000)))
            np.frombuffer(a, dtype=dt)[:] = np.arange(len(a) // dt.itemsize) % 101
            want = [np.frombuffer(a, dtype=dt).copy()]
            for i, n in enumerate(sizes):
                b = _fastscan.Column.na(kind, n)
                np.frombuffer(b, dtype=dt)[:] = (np.arange(n) + i) % 97
                if i % 4 == 3:         # one that absorbed itself before
                    c = _fastscan.Column.na(kind, 300_000)
                    np.frombuffer(c, dtype=dt)[:] = 5
                    b.absorb(c)
                    n += 300_000
                want.append(np.frombuffer(b, dtype=dt).copy())
                a.absorb(b)
                assert len(b) == 0 and b.mappings() == (0,)
                if i % 3 == 2:
                    extra = np.full(1000 + i, 3, dtype=dt)
                    a.extend(extra)
                    want.append(extra)
                got = np.frombuffer(a, dtype=dt)
                np.testing.assert_array_equal(got, np.concatenate(want), err_msg=f"{kind} {i}")
                del got
                if os.path.exists("/proc/self/maps"):
                    assert kernel_boundaries(a) <= set(a.mappings()), (kind, i)
            if seed % 2 == 0:
                assert len(a.mappings()) > 5     # pages were moved, not copied
    finally:
        _fastscan.absorb_threshold(was)


def test_absorb_into_an_empty_column():
    """An empty column takes the other's storage as it is (no copy, no page moved)."""
    import numpy as np
    from eaglelog.parsers.scan import _fastscan
    a, b = _fastscan.Column.na("q", 0), _fastscan.Column.na("q", 300_000)
    np.frombuffer(b, dtype=np.int64)[:] = np.arange(300_000)
    a.absorb(b)
    assert len(b) == 0 and a.mappings() == (0,)
    np.testing.assert_array_equal(np.frombuffer(a, dtype=np.int64), np.arange(300_000))
    assert _fastscan.absorb_threshold() == 1 << 20
    with pytest.raises(ValueError):
        _fastscan.absorb_threshold(-1)


# ------------------------------------------------------------------ what each path accepts
DEC = ("[2026-01-20 10:00:00 TP0] Decode batch{it}. #running-req: {rr}, #token: {tok}, token "
       "usage: 0.05, accept len: {al}, accept rate: 0.38, cuda graph: True, gen throughput "
       "(token/s): 88.10, #queue-req: 0, \n")
GOOD = DEC.format(it="", rr="5", tok="1200", al="2.30")


def both_paths(tmp_path, monkeypatch, text):
    path = tmp_path / "x.log"
    path.write_text(GOOD + text + GOOD, encoding="utf-8")
    fast, slow = parse_both(path, monkeypatch)
    assert_same(fast, slow)
    return fast


@pytest.mark.parametrize("header", ["EAGLE3_PROF (-0 cycles, 114 tok, no sync)",
                                    "EAGLE3_PROF (100 cycles, -0 tok, no sync)",
                                    "EAGLE3_PROF (-100 cycles, 114 tok, no sync)"])
def test_signed_counts_in_a_header(tmp_path, monkeypatch, header):
    """A header's counts are unsigned (eagle3_prof.HEADER_RX: digits): '-0 cycles' is not a
    header, for the C accelerator too (it read it as 0 cycles and kept the block)."""
    block = CANON.replace("EAGLE3_PROF (100 cycles, 114 tok, no sync)", header)
    log = both_paths(tmp_path, monkeypatch, block + "\n")
    assert len(log.prof) == 0 and len(log.decode) == 2
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [(2, "malformed")]
    assert "EAGLE3_PROF header not understood" in log.diagnostics[0].message
    prefixed = "".join(f"[2026-01-20 10:00:00 TP0] {ln}\n" for ln in block.splitlines())
    log = both_paths(tmp_path, monkeypatch, prefixed)
    assert len(log.prof) == 0 and [d.kind for d in log.diagnostics] == ["malformed"]


@pytest.mark.parametrize("it", [" [-0],", " [-3],", " [+3],"])
def test_signed_iteration_in_a_header(tmp_path, monkeypatch, it):
    """'Decode batch [-0], …' is no iteration number (sglang.DECODE_HEAD_RX: digits): the line
    is reported as a damaged header, not skipped silently."""
    log = both_paths(tmp_path, monkeypatch,
                     DEC.format(it=it, rr="5", tok="1200", al="2.30").replace(",.", ","))
    assert len(log.decode) == 2 and log.sources[0].skipped == 0
    assert [(d.kind, d.message) for d in log.diagnostics] == [
        ("malformed", "decode line not parsed: header 'Decode batch [N]' with N not a number")]
    log = both_paths(tmp_path, monkeypatch,
                     GOOD.replace("Decode batch.", f"Prefill batch{it}").replace(",,", ","))
    assert len(log.prefill) == 0


BAD_NUMBERS = {"400 digits": "1" * 400, "41 digits": "1" * 41, "inf": "inf", "nan": "nan",
               "-inf": "-inf", "Infinity": "Infinity", "exponent overflow": "1e400",
               "Arabic-Indic": "\u0662.\u0663\u0660", "full-width": "\uff12.\uff13",
               "underscore": "1_000.5", "spaces": " 2.30", "plus": "+2.30"}


@pytest.mark.parametrize("text", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
def test_numbers_the_python_converters_refuse(tmp_path, monkeypatch, text):
    """What sglang._float and _pct refuse (non-ASCII digits, '1_000', inf, nan, a text that
    overflows to inf) the C accelerator never stores: it leaves the line to the Python
    parser (a number beyond 40 characters, any other character), which reports a bad value;
    a 41-digit number is finite but no measure (beyond 10^12, issue 36): a bad value in both."""
    log = both_paths(tmp_path, monkeypatch, DEC.format(it="", rr="5", tok="1200", al=text))
    import math
    got = log.decode["accept_len"].tolist()
    assert len(got) == 3 and got[0] == got[2] == 2.30
    if text in ("+2.30", " 2.30"):      # finite ASCII numbers (read by Python)
        assert got[1] == float(text) and not log.diagnostics
    else:
        assert math.isnan(got[1])
        assert [(d.line_no, d.kind) for d in log.diagnostics] == [(2, "bad_value")]
    log = both_paths(tmp_path, monkeypatch, DEC.format(it="", rr="5", tok=text.replace(".", ""),
                                                       al="2.30"))
    tokens = log.decode["num_tokens"].tolist()
    assert tokens[0] == tokens[2] == 1200
    assert all(isinstance(t, int) for t in tokens if t is not pd.NA)


def test_decimals_are_python_floats_to_the_bit(tmp_path, monkeypatch):
    """The C scan reads a key's decimal as it matches it (to_double's fast path: at most 15
    significant digits, 22 after the point; to_double past them): the value is float(text)
    to the bit, with leading and trailing zeros, at and past both limits, and '-0'; and the
    keys are found as the line before printed them or not (the guess of parse_segments)."""
    import struct
    rng = random.Random(3)
    texts = ["0", "0.0", "-0", "-0.0", "00.10", "0.000000000000000000001", "1" * 12,
             "0." + "0" * 21 + "7", "0." + "0" * 22 + "7", "0." + "1" * 22, "0." + "1" * 23,
             "9" * 15, "9" * 12 + ".999", "9" * 12 + ".9999", "1" * 16, "0.1" + "0" * 20,
             "123456789012.345", "999999999999.9999999", "1000000000000.0", "7." + "3" * 14,
             "7." + "3" * 15, "000000000000000000000000000001.5"]
    for _ in range(300):
        ip = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 13)))
        fp = "".join(rng.choice("0000123456789") for _ in range(rng.randrange(0, 26)))
        texts.append(ip + ("." + fp if fp else ""))
    lines = []
    for i, t in enumerate(texts):
        line = DEC.format(it="", rr="5", tok="1200", al=t)
        if i % 3 == 1:     # keys in another order, one left out: the guess misses
            line = line.replace("#token: 1200, token usage: 0.05, ", "token usage: 0.05, ")
        if i % 3 == 2:
            line = line.replace("accept len: " + t + ", accept rate: 0.38",
                                "accept rate: 0.38, accept len: " + t)
        lines.append(line)
    path = tmp_path / "x.log"
    path.write_text("".join(lines), encoding="utf-8")
    fast, slow = parse_both(path, monkeypatch)
    assert_same(fast, slow)
    got = fast.decode["accept_len"].tolist()
    assert len(got) == len(texts)
    for t, v in zip(texts, got):
        want = float(t)
        if 0 <= want <= 1e12 and len(t) <= 40:
            assert struct.pack("<d", v) == struct.pack("<d", want), t


@pytest.mark.parametrize("text", ["9223372036854775807", "9223372036854775808", "9" * 19,
                                  "1" * 400, "-9223372036854775809", "2147483648"])
def test_integers_past_their_columns(tmp_path, monkeypatch, text):
    """An integer beyond int64 (beyond int32 for #running-req) is a bad value in both paths
    (C reads up to 18 digits and leaves longer ones to Python, which reads 19 within int64)."""
    log = both_paths(tmp_path, monkeypatch, DEC.format(it="", rr=text, tok=text, al="2.30"))
    assert len(log.decode) == 3
    assert log.decode["running_req"].isna().tolist()[1]
    if -2**63 <= int(text) < 2**63:
        assert log.decode["num_tokens"].tolist()[1] == int(text)
    else:
        assert log.decode["num_tokens"].isna().tolist()[1]


@pytest.mark.parametrize("number", ["1" * 35, "1." + "1" * 35, "1" * 400, "1" * 31 + ".5",
                                    "nan", "inf", "\u0661.5", "1" * 30 + "." + "1" * 9])
def test_numbers_in_block_lines(tmp_path, monkeypatch, number):
    """Block numbers: eagle3_prof._NUM (30 digits before and after the point) and the C
    accelerator (40 characters at most) agree, and no infinity is stored."""
    import math
    for line, old in (("  Accept len:      {}", "  Accept len:      1.14"),
                      ("  Draft steps:        {} ms/cyc  (  3.4%)",
                       "  Draft steps:        0.93 ms/cyc  (  3.4%)")):
        block = CANON.replace(old, line.format(number))
        log = both_paths(tmp_path, monkeypatch, block + "\n")
        for t in ("prof", "prof_phases"):
            df = log.table(t)
            for c in df.select_dtypes("number").columns:
                assert not df[c].map(lambda v: isinstance(v, float) and math.isinf(v)).any(), c


@pytest.mark.parametrize("date", ["1500-01-01", "1677-12-31", "1678-01-01", "2261-12-31",
                                  "2262-01-01", "9999-12-31", "2100-02-29", "2024-02-29"])
def test_dates_the_timestamp_columns_hold(tmp_path, monkeypatch, date):
    """prefix.valid_datetime: dates datetime64[ns] holds (years 1678-2261) and exist; the C
    accelerator declined only impossible dates and read year 1500 as a timestamp."""
    text = GOOD.replace("2026-01-20", date) + "".join(
        f"[{date} 10:00:00 TP0] {ln}\n" for ln in CANON.splitlines())
    log = both_paths(tmp_path, monkeypatch, text)
    ok = date in ("1678-01-01", "2261-12-31", "2024-02-29")
    assert log.decode["timestamp"].notna().tolist() == [True, ok, True]
    assert log.prof["timestamp"].notna().tolist() == [ok]
    assert len([d for d in log.diagnostics if d.kind == "bad_value"]) == (0 if ok else 2)


def test_the_scan_reports_the_first_line_holding_a_watched_literal():
    """set_watch: scan() returns the offset and number of the first line of the call that holds
    a watched literal and no record or marker (the C scan's walk over such lines); decode lines
    and marker lines are never reported, and () turns the watch off."""
    from eaglelog.parsers import sglang
    fs = scan._fastscan.FastScanner(scan._key_spec(sglang.DECODE_KEYS),
                                    scan._key_spec(sglang.PREFILL_KEYS))
    dec = (b"[2026-01-20 10:00:00 TP0] Decode batch. #running-req: 8, #token: 53175, token "
           b"usage: 0.38, accept len: 2.10, accept rate: 0.35, cuda graph: True, gen throughput "
           b"(token/s): 92.96, #queue-req: 0, \n")
    text = dec + b"INFO: hello\n" + dec + b"num_drafts: 12\n" + b"x num_drafts: 3\n" + dec
    fs.set_watch((b"num_drafts:", b"accept len"))         # (in every decode line: not reported)
    out = fs.scan(text, 0, 1, 0)
    assert out[0] == len(text) and out[7:9] == (text.index(b"num_drafts"), 4)
    assert fs.scan(text, text.index(b"x num"), 5, 0)[7:9] == (text.index(b"x num"), 5)
    fs.set_watch(())
    assert fs.scan(text, 0, 1, 0)[7] == -1
    for bad in (("ab",), (b"",), tuple(b"n%02d" % i for i in range(65))):
        with pytest.raises((TypeError, ValueError)):
            fs.set_watch(bad)


def test_the_scan_finds_markers_and_watched_literals_as_a_find_per_literal_does():
    """The scan looks for the record markers and the watched literals in a line by one
    Wu–Manber walk (ls_find): the line where it stops (the first holding a marker) and the first
    line it reports as watched (no marker, a watched literal) are those a bytes.find per literal
    gives, wherever in the line the literals fall (its first or last bytes, overlapping, cut
    short at its end), for the markers alone, for watch sets of every size (literals that hold a
    marker or are one among them), and for watched literals of one byte (the byte walks)."""
    import random

    from eaglelog.parsers import WATCH_LITERALS, sglang
    rng = random.Random(5)
    markers = [m.encode() for m in ("EAGLE3_PROF", "Decode batch", "Prefil", "server_args=",
                                    "Finish: obj=", '"request.finished"', "new fill batch. ",
                                    "#running-req: ", "Adaptive spec params updated: ")]
    lits = [lit for v in WATCH_LITERALS.values() for lit in v]
    alpha = b"acdeimnprstuv_=:- #\"'PDEARF"
    keys = scan._key_spec(sglang.DECODE_KEYS), scan._key_spec(sglang.PREFILL_KEYS)

    def piece(pool):
        w = rng.choice(pool)
        r = rng.random()
        return w if r < 0.6 or len(w) < 2 else w[:rng.randrange(1, len(w))] if r < 0.8 else \
            w[rng.randrange(1, len(w)):]
    for case in range(1500):
        r = rng.random()
        watch = () if r < 0.2 else tuple(rng.sample(lits, rng.randrange(1, 50))) if r < 0.7 \
            else tuple({piece(lits + markers) for _ in range(rng.randrange(1, 8))})
        lines = []
        for _ in range(rng.randrange(1, 12)):
            line = b"x " + bytes(rng.choice(alpha) for _ in range(rng.randrange(0, 40)))
            for _ in range(rng.randrange(0, 3)):
                at = rng.randrange(len(line) + 1)
                pool = markers if rng.random() < 0.15 else lits + list(watch)
                line = line[:at] + piece(pool) + line[at:]
            lines.append(line.replace(b"\n", b" ").replace(b"\r", b" "))
        text = b"\n".join(lines) + b"\n"
        stop, hit, off = len(text), (-1, 0), 0
        for no, line in enumerate(lines, 1):
            if any(m in line for m in markers):
                stop = off
                break
            if hit[0] < 0 and any(w in line for w in watch):
                hit = (off, no)
            off += len(line) + 1
        fs = scan._fastscan.FastScanner(*keys)
        fs.set_watch(watch)
        out = fs.scan(text, 0, 1, 0)
        assert (out[0], out[7:9] if out[7] >= 0 else (-1, 0)) == (stop, hit), (case, watch, text)


def test_first_any_agrees_with_a_find_per_needle():
    """_fastscan.first_any (one Wu–Manber pass for every literal the watch looks for) gives the
    earliest offset at or after start and, there, the lowest index, as a find per needle does
    (parsers.first_any without the accelerator); on bytes and bytearrays."""
    import random

    from eaglelog.parsers import _fastscan as fs
    from eaglelog.parsers import WATCH_LITERALS
    rng = random.Random(11)
    lits = tuple(lit for v in WATCH_LITERALS.values() for lit in v)
    alpha = b"acdeimnpstuv_=:- #\n\"'"

    def want(buf, needles, start):
        best = (-1, -1)
        for i, n in enumerate(needles):
            j = buf.find(n, start)
            if j >= 0 and (best[0] < 0 or j < best[0]):
                best = (j, i)
        return best
    for _ in range(3000):
        text = bytes(rng.choice(alpha) for _ in range(rng.randrange(0, 200)))
        if rng.random() < 0.6:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(lits) + text[at:]
        needles = tuple(rng.sample(lits, rng.randrange(1, 40))) if rng.random() < 0.7 else \
            tuple({bytes(rng.choice(alpha) for _ in range(rng.randrange(2, 6)))
                   for _ in range(rng.randrange(1, 6))})
        start = rng.randrange(0, 30)
        for buf in (text, bytearray(text)):
            assert fs.first_any(buf, needles, start) == want(buf, needles, start)
    assert fs.first_any(b"xxabab", (b"ab", b"abab")) == (2, 0)      # a tie: the lower index
    assert fs.first_any(b"abc", ()) == (-1, -1) and fs.first_any(b"", (b"ab",)) == (-1, -1)
    for bad in (("ab",), (b"a",), tuple(b"n%02d" % i for i in range(65))):
        with pytest.raises((TypeError, ValueError)):
            fs.first_any(b"abc", bad)


def test_find_any_agrees_with_bytes_find():
    """_fastscan.find_any (the GIL-free watch for other servers' lines) names the first needle
    that bytes.find finds, on bytes and bytearrays, at either end and across needles."""
    import random

    from eaglelog.parsers import _fastscan as fs
    from eaglelog.parsers import holds_any
    rng = random.Random(7)
    needles = (b"SpecDecoding metrics: ", b"Avg prompt throughput: ", b"iter", b"x")
    for _ in range(300):
        text = bytes(rng.choice(b"abcSpecx :\n") for _ in range(rng.randrange(0, 60)))
        if rng.random() < 0.4:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(needles) + text[at:]
        for buf in (text, bytearray(text)):
            want = next((i for i, n in enumerate(needles) if n in buf), -1)
            assert fs.find_any(buf, needles) == want
            assert holds_any(buf, needles) == (want >= 0)
    assert fs.find_any(b"abc", ()) == -1 and fs.find_any(b"", (b"a",)) == -1
    with pytest.raises(TypeError):
        fs.find_any(b"abc", ("a",))


@pytest.mark.parametrize("wrap", ["docker", "cri"])
def test_a_wrapped_log_reads_the_same_both_ways(tmp_path, monkeypatch, wrap):
    """A simulated log read through `docker logs --timestamps` or from a Kubernetes (CRI) log
    file, EAGLE3_PROF blocks printed with print() among its lines: the accelerator reads its
    decode and prefill lines itself (with the wrapper's time), the Python parser the rest, and
    both give the same tables; the blocks are those of the same log unwrapped."""
    from simlab.simulate import SCENARIOS, simulate
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=60, prof_every=100), 3)
    lines = run.lines
    if wrap == "cri":
        lines = [ln.replace("Z ", "Z stdout F ", 1) for ln in lines]
    path = tmp_path / "wrapped.log"
    path.write_text("".join(lines))
    fast, slow = parse_both(path, monkeypatch)
    assert_same(fast, slow)
    assert fast.decode["wrapper_time"].notna().all() and len(fast.prof) >= 20
    plain = tmp_path / "plain.log"
    plain.write_text("".join(ln.split("Z ", 1)[1] if ln[:1].isdigit() else ln
                             for ln in run.lines))
    unwrapped = eaglelog.parse(plain)
    # the blocks, print()ed without SGLang's prefix, have no SGLang time either way: the
    # wrapper's stamp (UTC, its own clock) is not taken for one
    cols = ["line_no", "timestamp", "cycles", "tokens", "total_ms", "accept_len", "eff_tok_s",
            "complete"]
    pd.testing.assert_frame_equal(fast.prof[cols], unwrapped.prof[cols])
    pd.testing.assert_frame_equal(fast.decode.drop(columns=["source", "wrapper_time"]),
                                  unwrapped.decode.drop(columns="source"))
    assert [(d.line_no, d.kind) for d in fast.diagnostics] == \
        [(d.line_no, d.kind) for d in unwrapped.diagnostics]


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 14, 5000])
def test_a_range_scan_ends_its_chunks_before_a_header(tmp_path, monkeypatch, chunk):
    """parallel.scan_range ends a chunk before an EAGLE3_PROF header line that falls within
    HEADER_TAIL bytes of its end (the block is then the C accelerator's, from the next chunk):
    the tables, diagnostics and counts are those of one scan of the whole file, with blocks
    (print() and prefixed, some breaking an identity) at every distance from the chunks' ends."""
    from eaglelog.io import parallel
    rng = random.Random(chunk)
    bad = CANON.replace("Accept len:      1.14", "Accept len:      1.94")
    parts = []
    for i in range(400):
        parts.append(GOOD * rng.randrange(0, 6))
        block = rng.choice([CANON, bad])
        if rng.random() < 0.4:
            block = "".join(f"[2026-01-20 10:00:00 TP1] {ln}\n" for ln in block.splitlines())
            parts.append(block + GOOD)
        else:
            parts.append(block + "\n\n")
    path = tmp_path / "blocks.log"
    path.write_text("".join(parts), encoding="utf-8")
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    seq = eaglelog.parse(path, chunk_size=1 << 20)
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    for workers in (2, 3):
        monkeypatch.setenv("EAGLELOG_WORKERS", str(workers))
        par = eaglelog.parse(path, chunk_size=chunk)
        assert_same(par, seq)
        assert len(par.prof) == 400
    buf = bytearray(b"a\nb EAGLE3_PROF (1 cycles, 1 tok)\n  x\n")
    assert parallel._before_last_header(buf) == 2 and buf == b"a\n"
    buf = bytearray(b"EAGLE3_PROF (1 cycles, 1 tok)\n")       # (at the start: kept whole)
    assert parallel._before_last_header(buf) == len(buf)
    buf = bytearray(b"EAGLE3_PROF\n" + b"x" * parallel.HEADER_TAIL)
    assert parallel._before_last_header(buf) == len(buf)


def test_the_scan_counts_the_lines_it_walks_as_line_stats_does():
    """scan() passes the lines from pos to the pos it returns (as many as its line numbers
    advanced) and counts the blank ones ('' or a lone CR) among them: line_stats of the same
    bytes, so that Scanner.feed counts only the lines the Python parser walks.  Print() blocks
    ended by blank lines, whitespace lines, CRs, prefixed blocks, lines it leaves to Python."""
    from eaglelog.parsers import sglang
    from eaglelog.parsers import _fastscan as fs
    rng = random.Random(8)
    pieces = [GOOD, "\n", "\r\n", " \n", "\t\r\n", "INFO: hello\n", CANON + "\n", CANON + "\n\n",
              CANON + "\r\n", CANON.replace("\n", "\r\n") + "\n",
              "".join(f"[2026-01-20 10:00:00 TP0] {ln}\n" for ln in CANON.splitlines()),
              "Finish: obj=x\n", "\r", GOOD.replace("0.38", "x")]
    keys = scan._key_spec(sglang.DECODE_KEYS), scan._key_spec(sglang.PREFILL_KEYS)
    for _ in range(400):
        data = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30))).encode()
        scanner = fs.FastScanner(*keys)
        pos, line_no = 0, 1
        while True:
            out = scanner.scan(data, pos, line_no, 0)
            assert fs.line_stats(data, pos, out[0]) == (out[1] - line_no, out[9])
            assert fs.line_stats(data, pos, out[0]) == fs.line_stats(data[pos:out[0]])
            if out[0] >= len(data) or b"\n" not in data[out[0]:]:
                break
            pos = data.index(b"\n", out[0]) + 1           # (the line Python reads: passed)
            line_no = out[1] + 1
    assert fs.line_stats(b"a\n\nb\n", 2) == (2, 1) and fs.line_stats(b"a\n\nb\n", 0, 2) == (1, 0)
    assert fs.line_stats(b"a\n", 5, 9) == (0, 0) and fs.line_stats(b"\n\n", 1, 0) == (0, 0)
