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
        pos, line_no, c, _, _, _, bad = fs.scan(data, pos, line_no, 0)
        assert bad == b""
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
            "\x1b[32m[2026-01-20 10:00:00 TP0]\x1b[0m "]
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
    prefix = rng.choice(["", "", "[2026-01-20 10:00:00 TP0] ", "[2026-01-20 10:00:00] "])
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
